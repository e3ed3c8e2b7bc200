/* warpsmith:plan
{ "knobs":  { "THREADS": [256, 128, 512], "TILES": [64, 32, 128], "BATCH": [8, 4, 16],
              "STORE_CS": [1, 0], "VEC": [4, 16], "PERSIST": [0, 4, 3, 2, 8], "PRE": [0, 8, 4] },
  "launch": [ { "kernel": "sm90_mxfp8_scales_to_blocked",
                "grid":  ["(PERSIST == 0) * ceil_div(M + 96 * G, 128) * ceil_div(ceil_div(K / 32, 4), TILES) + (PERSIST != 0) * min(ceil_div(M + 96 * G, 128) * ceil_div(ceil_div(K / 32, 4), TILES), num_sms * max(PERSIST, 1))"],
                "block": ["THREADS"], "smem": "512 * (min(ceil_div(K / 32, 4), TILES) + 1)",
                "args":  ["scales", "group_offsets", "scales_blocked", "M", "K / 32", "G"] } ] }
*/
// MXFP8 scales to the 128x4 blocked layout, hand-tuned: scales [M,C] E8M0 rows grouped by
// expert (group_offsets [G] end rows) -> scales_blocked, T tiles of 512 bytes.
//
// Design (pure data movement, ~1 byte in and ~1 byte out per scale):
//  - One CTA per (128-row output stripe, run of TILES column tiles). Groups are padded to 128
//    rows, so a stripe lies in one group (or after the last: all pad). Each warp finds the
//    stripe's group by itself: 32 groups per step, a warp scan of their padded stripe counts and
//    a ballot (no block-wide sync, no serial walk).
//  - The stripe's rows are contiguous in scales; when its whole width fits (C <= 4*TILES, every
//    bench shape) they are one 32-byte aligned run of rows*C bytes: read with coalesced 4-byte
//    loads, BATCH per thread in flight, scattered into shared memory rows of P words, P odd.
//    Wider C: per-row segments, same layout.
//  - Output: every 16-byte line (rows i, i+32, i+64, i+96 of the stripe, 4 columns each) is four
//    word reads at stride P (odd: conflict-free across the 32 lanes = 32 lines of a tile) and
//    one 16-byte store; a warp writes one 512-byte tile contiguously. Pad rows, pad columns
//    (C % 4) and the tail stripes are masked to 0x00 in the same stores.
//
// Knobs: THREADS, TILES (column tiles per CTA: shared memory 512*(TILES+1) bytes at most),
// BATCH (loads in flight per thread), STORE_CS (st.global.cs), VEC (bytes per load of the
// stripe's run: 4, or 16 with the chunk's words, halves or bytes placed by C's alignment; at
// BATCH 8, 16-byte loads hold a K7168 stripe's 28 KB in one round trip, not four), PERSIST
// (0: a CTA per unit; n: n CTAs per SM loop over the units, and with VEC 16, where a stripe fits
// the registers' batch, the next stripe's loads are in flight while this one's tiles are stored:
// a CTA per unit waits on its offsets, its loads and its stores in turn, about two waves of such
// chains at the bench shapes).
// Measured on the H200 (2026-11-30, bench/results/kernels-first-run-h200-2026-11-30.md):
//   ok at every shape; bench geomean 17.1 us.
//
// Evaluate: build/warpsmith eval mxfp8_scales_to_blocked kernels/mxfp8_scales_to_blocked/kernel.cu

#include "ws/memory.cuh"

#ifndef THREADS
#define THREADS 256
#endif
#ifndef TILES
#define TILES 64
#endif
#ifndef BATCH
#define BATCH 8
#endif
#ifndef STORE_CS
#define STORE_CS 1
#endif
#ifndef VEC
#define VEC 4
#endif
#ifndef PERSIST
#define PERSIST 0
#endif
#ifndef PRE
#define PRE 0
#endif

namespace {

struct Config {
  static constexpr int kThreads = THREADS;
  static constexpr int kTiles = TILES;  // column tiles (4 scale columns each) per CTA
  static constexpr int kBatch = BATCH;
  static constexpr int kStripeRows = 128;
  static constexpr bool kStoreCs = STORE_CS != 0;
  static constexpr int kVec = VEC;  // bytes per load of a whole stripe's run
  static constexpr int kPersist = PERSIST;  // CTAs per SM looping over the units; 0: one unit each
  static constexpr int kPre = PRE;          // rounds of 32 group offsets loaded up front
};
static_assert(Config::kThreads % 32 == 0 && Config::kThreads <= 1024, "whole warps");
static_assert(Config::kTiles >= 1 && Config::kBatch >= 1, "positive");
static_assert(Config::kVec == 4 || Config::kVec == 16, "VEC: 4 or 16");

using ws::kFullMask;

__device__ __forceinline__ unsigned load_word(const unsigned char* p) {
  unsigned v;
  asm volatile("ld.global.nc.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}

// Places the 16 bytes at byte b of a stripe's run (rows of C bytes) into shared memory rows of
// 4 * pitch bytes, in the widest units C's alignment allows (a unit never straddles two rows).
template <int kUnit>
__device__ __forceinline__ void place_units(const ws::Chunk& v, int row, int col, int C,
                                            int pitch, unsigned char* smem) {
#pragma unroll
  for (int u = 0; u < 16 / kUnit; ++u) {
    unsigned char* d = smem + row * 4 * pitch + col;
    const unsigned w = v.w[u * kUnit / 4] >> (8 * (u * kUnit % 4));
    if constexpr (kUnit == 4) *reinterpret_cast<unsigned*>(d) = w;
    if constexpr (kUnit == 2) *reinterpret_cast<unsigned short*>(d) = static_cast<unsigned short>(w);
    if constexpr (kUnit == 1) *d = static_cast<unsigned char>(w);
    col += kUnit;
    if (col == C) {
      col = 0;
      ++row;
    }
  }
}

__device__ __forceinline__ void place16(const ws::Chunk& v, int b, int C, int pitch,
                                        unsigned char* smem) {
  const int row = b / C, col = b - row * C;
  if ((C & 15) == 0) {  // the chunk lies in one row: four word stores
    unsigned* d = reinterpret_cast<unsigned*>(smem) + row * pitch + col / 4;
#pragma unroll
    for (int j = 0; j < 4; ++j) d[j] = v.w[j];
  } else if ((C & 3) == 0) {
    place_units<4>(v, row, col, C, pitch, smem);
  } else if ((C & 1) == 0) {
    place_units<2>(v, row, col, C, pitch, smem);
  } else {
    place_units<1>(v, row, col, C, pitch, smem);
  }
}

struct StripeSource {
  long long first_row;  // input row of the stripe's row 0
  int rows;             // rows holding data, 0 .. 128 (a multiple of 32)
};

// Which input rows stripe s holds. Warp-cooperative (all 32 lanes call, all get the answer):
// group g covers stripes [P_g, P_g + R_g) with R_g = ceil_div(end_g - start_g, 128).
// PRE: the first PRE rounds' offsets are loaded together, before the first scan (one L2 round
// trip, not one per 32 groups).
__device__ __forceinline__ StripeSource find_stripe(const int* __restrict__ offsets, int G,
                                                    long long s, int lane) {
  long long stripes_before = 0;  // padded stripes of the groups of earlier rounds
  int prev_end = 0;              // end row of the group before this round's first
  int pre[Config::kPre > 0 ? Config::kPre : 1];
#pragma unroll
  for (int r = 0; r < Config::kPre; ++r) {
    const int g = 32 * r + lane;
    pre[r] = g < G ? __ldg(offsets + g) : 0;
  }
  for (int g0 = 0; g0 < G; g0 += 32) {
    const int g = g0 + lane;
    int end;
    if constexpr (Config::kPre > 0) {
      end = g0 < 32 * Config::kPre ? 0 : g < G ? __ldg(offsets + g) : 0;
#pragma unroll
      for (int r = 0; r < Config::kPre; ++r) {
        if (g0 == 32 * r) end = pre[r];  // a select: pre stays in registers
      }
    } else {
      end = g < G ? __ldg(offsets + g) : 0;
    }
    int start = __shfl_up_sync(kFullMask, end, 1);
    if (lane == 0) start = prev_end;
    const int n = g < G ? end - start : 0;
    const int r = (n + Config::kStripeRows - 1) / Config::kStripeRows;
    int incl = r;  // inclusive scan of stripe counts
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int v = __shfl_up_sync(kFullMask, incl, d);
      if (lane >= d) incl += v;
    }
    const unsigned hit = __ballot_sync(kFullMask, g < G && s < stripes_before + incl);
    if (hit != 0) {
      const int f = __ffs(hit) - 1;
      const long long excl = stripes_before + __shfl_sync(kFullMask, incl - r, f);
      const long long rel = (s - excl) * Config::kStripeRows;
      const long long first = __shfl_sync(kFullMask, start, f) + rel;
      const long long avail = __shfl_sync(kFullMask, n, f) - rel;
      return {first, static_cast<int>(min(avail, static_cast<long long>(Config::kStripeRows)))};
    }
    stripes_before += __shfl_sync(kFullMask, incl, 31);
    prev_end = __shfl_sync(kFullMask, end, 31);
  }
  return {0, 0};  // after the last group: all pad
}

// Batch k0 of a stripe's run in 16-byte chunks: chunk k0 + tid + j * THREADS into v[j]. rows
// is a multiple of 32, so rows * C is one of 16 and the run (first_row * C) is 16-byte aligned.
__device__ __forceinline__ void load_run16(ws::Chunk (&v)[Config::kBatch],
                                           const unsigned char* __restrict__ scales,
                                           const StripeSource& src, int C, int k0) {
  const unsigned char* base = scales + src.first_row * C;
  const int n16 = src.rows * C / 16;
#pragma unroll
  for (int j = 0; j < Config::kBatch; ++j) {
    const int k = k0 + threadIdx.x + j * Config::kThreads;
    if (k < n16) v[j] = ws::load_global16<ws::LoadHint::kNcNoAllocate>(base + 16LL * k);
  }
}

__device__ __forceinline__ void place_run16(const ws::Chunk (&v)[Config::kBatch],
                                            const StripeSource& src, int C, int pitch, int k0,
                                            unsigned char* smem_bytes) {
  const int n16 = src.rows * C / 16;
#pragma unroll
  for (int j = 0; j < Config::kBatch; ++j) {
    const int k = k0 + threadIdx.x + j * Config::kThreads;
    if (k < n16) place16(v[j], 16 * k, C, pitch, smem_bytes);
  }
}

// The unit's tiles from shared memory. Line i of tile tt holds rows i, i+32, i+64, i+96,
// columns 4 (t0+tt) .. +3; rows past `rows`, and columns past C, are the pad 0x00.
__device__ __forceinline__ void store_tiles(unsigned char* __restrict__ out, long long s, int t0,
                                            int nt, int rows, int C, int pitch,
                                            const unsigned* smem_words) {
  const int tid = threadIdx.x, c4 = (C + 3) / 4;
  const unsigned last_mask = (C & 3) == 0 ? 0xFFFFFFFFu : (1u << (8 * (C & 3))) - 1u;
  unsigned char* dst = out + (s * c4 + t0) * 512;
  for (int l = tid; l < nt * 32; l += Config::kThreads) {
    const int tt = l >> 5, i = l & 31;
    const unsigned mask = t0 + tt == c4 - 1 ? last_mask : 0xFFFFFFFFu;
    unsigned w[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int r = 32 * j + i;
      w[j] = r < rows ? smem_words[r * pitch + tt] & mask : 0u;
    }
    ws::store_global16<Config::kStoreCs>(dst + l * 16, w[0], w[1], w[2], w[3]);
  }
}

// Unit u (stripe u / chunks, column tiles from (u % chunks) * TILES): its rows into shared
// memory, then its tiles out.
__device__ __forceinline__ void unit(const unsigned char* __restrict__ scales,
                                     const int* __restrict__ group_offsets,
                                     unsigned char* __restrict__ out, int C, int G, unsigned u,
                                     unsigned* smem_words) {
  const int tid = threadIdx.x, lane = tid & 31;
  const int c4 = (C + 3) / 4;
  const int chunks = (c4 + Config::kTiles - 1) / Config::kTiles;
  const long long s = u / chunks;
  const int t0 = static_cast<int>(u % chunks) * Config::kTiles;  // first column tile
  const int nt = min(Config::kTiles, c4 - t0);                    // tiles of this CTA
  const int pitch = min(c4, Config::kTiles) | 1;  // words per smem row; odd: conflict-free reads
  unsigned char* smem_bytes = reinterpret_cast<unsigned char*>(smem_words);

  const StripeSource src = find_stripe(group_offsets, G, s, lane);  // same in every warp
  const int rows = src.rows;

  if (rows > 0) {
    if (chunks == 1 && Config::kVec == 16) {
      // The run (below) in 16-byte chunks: rows is a multiple of 32, so rows * C is of 16.
      for (int k0 = 0; k0 < rows * C / 16; k0 += Config::kBatch * Config::kThreads) {
        ws::Chunk v[Config::kBatch];
        load_run16(v, scales, src, C, k0);
        place_run16(v, src, C, pitch, k0, smem_bytes);
      }
    } else if (chunks == 1) {
      // The stripe's rows are one contiguous, 32-byte aligned run of rows * C bytes.
      const unsigned char* base = scales + src.first_row * C;
      const int words = rows * C / 4;
      const bool word_rows = (C & 3) == 0;
      for (int w0 = tid; w0 < words; w0 += Config::kBatch * Config::kThreads) {
        unsigned v[Config::kBatch];
#pragma unroll
        for (int j = 0; j < Config::kBatch; ++j) {
          const int w = w0 + j * Config::kThreads;
          v[j] = w < words ? load_word(base + 4LL * w) : 0u;
        }
#pragma unroll
        for (int j = 0; j < Config::kBatch; ++j) {
          const int w = w0 + j * Config::kThreads;
          if (w >= words) continue;
          if (word_rows) {
            const int cw = C / 4;
            smem_words[(w / cw) * pitch + w % cw] = v[j];
          } else {
            // C % 4 != 0: the word straddles rows; place its 4 bytes one by one.
            int idx = 4 * w, row = idx / C, col = idx - row * C;
#pragma unroll
            for (int b = 0; b < 4; ++b) {
              smem_bytes[row * 4 * pitch + col] = static_cast<unsigned char>(v[j] >> (8 * b));
              if (++col == C) {
                col = 0;
                ++row;
              }
            }
          }
        }
      }
    } else {
      // Wider than the CTA: row segments of columns [4 t0, min(C, 4 (t0 + nt))).
      const int c0 = 4 * t0, cols = min(C - c0, 4 * nt);
      for (int e = tid; e < rows * cols; e += Config::kThreads) {
        const int r = e / cols, c = e - r * cols;
        smem_bytes[r * 4 * pitch + c] = __ldg(scales + (src.first_row + r) * C + c0 + c);
      }
    }
  }
  __syncthreads();
  store_tiles(out, s, t0, nt, rows, C, pitch, smem_words);
}

// PERSIST: this CTA's units, gridDim.x apart. Where a whole stripe is one unit and fits one
// batch of 16-byte loads, the next stripe's loads are issued before this one's tiles are stored.
__device__ __forceinline__ void persist(const unsigned char* __restrict__ scales,
                                       const int* __restrict__ group_offsets,
                                       unsigned char* __restrict__ out, int M, int C, int G,
                                       unsigned* smem_words) {
  const int c4 = (C + 3) / 4, lane = threadIdx.x & 31;
  const int chunks = (c4 + Config::kTiles - 1) / Config::kTiles;
  const unsigned units = (M + 96 * G + Config::kStripeRows - 1) / Config::kStripeRows * chunks;
  if (Config::kVec != 16 || chunks != 1 ||
      Config::kStripeRows * C > 16 * Config::kBatch * Config::kThreads) {
    for (unsigned u = blockIdx.x; u < units; u += gridDim.x) {
      unit(scales, group_offsets, out, C, G, u, smem_words);
      __syncthreads();  // the tiles left shared memory before the next unit's rows land there
    }
    return;
  }
  const int pitch = c4 | 1;
  unsigned char* smem_bytes = reinterpret_cast<unsigned char*>(smem_words);
  unsigned s = blockIdx.x;
  if (s >= units) return;
  StripeSource cur = find_stripe(group_offsets, G, s, lane);
  ws::Chunk v[Config::kBatch];
  load_run16(v, scales, cur, C, 0);
  place_run16(v, cur, C, pitch, 0, smem_bytes);
  __syncthreads();
  for (;;) {
    const unsigned next = s + gridDim.x;
    StripeSource nxt{0, 0};
    if (next < units) {
      nxt = find_stripe(group_offsets, G, next, lane);
      load_run16(v, scales, nxt, C, 0);  // in flight during the stores below
    }
    store_tiles(out, s, 0, c4, cur.rows, C, pitch, smem_words);
    if (next >= units) break;
    __syncthreads();
    place_run16(v, nxt, C, pitch, 0, smem_bytes);
    __syncthreads();
    s = next;
    cur = nxt;
  }
}

}  // namespace

// scales (M,C) e8m0; group_offsets (G) i32 end rows (multiples of 32, last = M); out: stripes *
// C4 tiles of 512 bytes, stripes = ceil_div(M + 96 G, 128), C4 = ceil_div(C, 4).
#if PERSIST > 0  // the CTAs per SM the loop was sized for
#define WS_STB_BOUNDS __launch_bounds__(Config::kThreads, PERSIST)
#else
#define WS_STB_BOUNDS __launch_bounds__(Config::kThreads)
#endif
extern "C" __global__ void WS_STB_BOUNDS
    sm90_mxfp8_scales_to_blocked(const unsigned char* __restrict__ scales,
                                 const int* __restrict__ group_offsets,
                                 unsigned char* __restrict__ out, int M, int C, int G) {
  extern __shared__ __align__(16) unsigned smem_words[];  // (128, P) words
  if constexpr (Config::kPersist == 0) {
    unit(scales, group_offsets, out, C, G, blockIdx.x, smem_words);
  } else {
    persist(scales, group_offsets, out, M, C, G, smem_words);
  }
}

/* warpsmith:plan
{ "knobs":  { "RB": [4, 2, 8], "KT": [2, 1, 4], "ORDER": [0, 1], "LOAD_PATH": [0, 1, 2],
              "STORE_CS": [1, 0] },
  "launch": [ { "kernel": "sm90_bf16_mxfp8_quantize_colwise",
                "grid":  ["ceil_div(M, 32 * RB) * ceil_div(K, 64 * KT)"],
                "block": ["32 * RB * KT"], "smem": "32 * RB * 64 * KT * 2 + 16",
                "args":  ["x", "q_t", "scales_t", "M", "K"] } ] }
*/
// MXFP8 colwise quantization, hand-tuned: BF16 x [M,K] -> q_t [K,M] E4M3 + scales_t [K,M/32]
// E8M0 (32-row blocks of each column, stored transposed / K-major for Hopper's wgrad wgmma).
//
// Design (memory-bound: 2 bytes in, 1.03 bytes out per element, no reuse across CTAs):
//  - One CTA per BM x BK tile of x (BM = 32*RB rows, BK = 64*KT columns), one warp per (32-row
//    block, 64-column subtile). The tile lands in shared memory, row pitch BK*2 bytes.
//  - Load: LOAD_PATH 2 (sm_90a default): 8 x 16-byte ld.global.nc per thread, all issued before
//    use (128 bytes in flight per thread), then st.shared (8 lanes = 128 contiguous bytes: no
//    conflicts). LOAD_PATH 1 (sm_100a default): one cp.async.bulk (TMA) per tile row into shared
//    memory, completion on an mbarrier with expect_tx: no registers, no load instructions.
//  - Quantize: lane p of warp (b, kt) reads 32 words (two adjacent columns) down the tile: each
//    step is 32 consecutive words, conflict-free. amax by max.u16x2 on the magnitude bits, two
//    scales, 2 x 32 E4M3 bytes with the packed cvt.rn.satfinite.e4m3x2.f32.
//  - The q_t tile [BK][BM] bytes is staged over the (dead) x tile with 16-byte chunks XOR-
//    swizzled by (row/2), so 8 lanes writing 8 different q_t rows hit 8 bank groups; then each
//    q_t row's BM bytes leave as 16-byte coalesced stores (BM/16 lanes per row).
//  - Scale rules (integer bit logic + the two fp32 multiplies the spec names, never FTZ) as
//    the rowwise kernel; sm_100a takes rceil from cvt.rp.satfinite.ue8m0x2.f32, two at once.
//
// Knobs: RB (32-row blocks per tile: BM, so q_t bytes per row per CTA), KT (64-column subtiles:
// read run per x row = 128*KT bytes), ORDER (0: CTAs walk M fastest, so q_t rows and scales_t
// sectors fill from consecutive CTAs; 1: K fastest, so x rows are read in long runs),
// LOAD_PATH (0: by arch as above, 1: TMA bulk, 2: vector loads), STORE_CS (st.global.cs).
// Measured on the H200 (2026-11-30, bench/results/kernels-first-run-h200-2026-11-30.md):
//   ok at every shape in both modes; bench geomean 258.1 us (rceil) /
//   266.2 us (floor), 0.69 / 0.67 of speed-of-light: below the 0.90 target.
//
// Evaluate: build/warpsmith eval mxfp8_quantize_colwise kernels/mxfp8_quantize_colwise/kernel.cu
//   [--set rounding=floor] [--knob RB=8 ...]
//
// SASS claims (scripts/check_sass.py): sm_100a loads tiles with the bulk copy on an mbarrier and
//  takes rceil scales from the ue8m0 conversion.
// warpsmith:sass sm_100a: UBLKCP SYNCS.PHASECHK F2FP.SATFINITE.E4M3
// warpsmith:sass sm_100a rounding=rceil: F2FP.SATFINITE.E8
// warpsmith:sass sm_90a: F2FP.SATFINITE.E4M3

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR)
#error "compile with the problem's parameters: -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1"
#endif
#ifndef RB
#define RB 4
#endif
#ifndef KT
#define KT 2
#endif
#ifndef ORDER
#define ORDER 0
#endif
#ifndef LOAD_PATH
#define LOAD_PATH 0
#endif
#ifndef STORE_CS
#define STORE_CS 1
#endif

namespace {

#if LOAD_PATH == 1 || (LOAD_PATH == 0 && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000)
constexpr bool kUseTma = true;
#else
constexpr bool kUseTma = false;
#endif

struct Config {
  static constexpr int kRowBlocks = RB;               // 32-row blocks per tile
  static constexpr int kSubtiles = KT;                // 64-column subtiles per tile
  static constexpr int kBM = 32 * kRowBlocks;         // tile rows
  static constexpr int kBK = 64 * kSubtiles;          // tile columns
  static constexpr int kThreads = 32 * kRowBlocks * kSubtiles;
  static constexpr int kRowChunks = kBK / 8;          // 16-byte chunks per tile row
  static constexpr int kLoadsPerThread = kBM * kRowChunks / kThreads;  // 8
  static constexpr int kQtChunks = kBM / 16;          // 16-byte chunks per staged q_t row
  static constexpr int kSwizzleMask = (kQtChunks < 8 ? kQtChunks : 8) - 1;
  static constexpr int kStoresPerThread = kBK * kQtChunks / kThreads;  // 4
  static constexpr int kTileBytes = kBM * kBK * 2;
  static constexpr bool kFloor = WS_ROUNDING == WS_ROUNDING_FLOOR;
};
static_assert(Config::kThreads <= 1024, "RB * KT <= 32");
static_assert(Config::kLoadsPerThread == 8 && Config::kStoresPerThread == 4, "tile algebra");
static_assert(Config::kBK * Config::kBM <= Config::kTileBytes, "q_t tile fits over the x tile");

constexpr unsigned kFullMask = 0xFFFFFFFFu;
constexpr unsigned kE8M0NaN = 0xFF;
constexpr unsigned kE4M3NaNx4 = 0x7F7F7F7Fu;
constexpr unsigned kBf16Inf = 0x7F80u;

struct Chunk {
  unsigned w[4];  // 8 bf16, element 2i in the low half of w[i]
};

// ---- memory -------------------------------------------------------------------------------------

__device__ __forceinline__ Chunk load_chunk_global(const void* p) {
  Chunk c;
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(c.w[0]), "=r"(c.w[1]), "=r"(c.w[2]), "=r"(c.w[3])
               : "l"(p));
  return c;
}

__device__ __forceinline__ void store_shared16(unsigned addr, unsigned a, unsigned b, unsigned c,
                                               unsigned d) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(a), "r"(b), "r"(c),
               "r"(d)
               : "memory");
}

__device__ __forceinline__ Chunk load_shared16(unsigned addr) {
  Chunk c;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(c.w[0]), "=r"(c.w[1]), "=r"(c.w[2]), "=r"(c.w[3])
               : "r"(addr)
               : "memory");
  return c;
}

__device__ __forceinline__ unsigned load_shared4(unsigned addr) {
  unsigned v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
  return v;
}

__device__ __forceinline__ void store_global16(void* p, const Chunk& c) {
#if STORE_CS
  asm volatile("st.global.cs.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(c.w[0]), "r"(c.w[1]),
               "r"(c.w[2]), "r"(c.w[3])
               : "memory");
#else
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(c.w[0]), "r"(c.w[1]),
               "r"(c.w[2]), "r"(c.w[3])
               : "memory");
#endif
}

__device__ __forceinline__ void store_global8(void* p, unsigned lo, unsigned hi) {
#if STORE_CS
  asm volatile("st.global.cs.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(lo), "r"(hi) : "memory");
#else
  asm volatile("st.global.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(lo), "r"(hi) : "memory");
#endif
}

// ---- TMA bulk copy + mbarrier (sm_90a and sm_100a) ------------------------------------------------

__device__ __forceinline__ void mbarrier_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ void mbarrier_arrive_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void mbarrier_wait_parity(unsigned bar, unsigned parity) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      "@!p bra WAIT_%=;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}

// NOTE: bytes, both addresses 16-byte aligned, bytes % 16 == 0 (rows are 64-byte multiples).
__device__ __forceinline__ void tma_load_1d(unsigned dst, const void* src, unsigned bytes,
                                            unsigned bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
          dst),
      "l"(src), "r"(bytes), "r"(bar)
      : "memory");
}

// ---- arithmetic -------------------------------------------------------------------------------

__device__ __forceinline__ unsigned max_u16x2(unsigned a, unsigned b) {
  unsigned d;
  asm("max.u16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

// NOTE: explicit mul.rn.f32 (never .ftz): 2^-127 and amax/448 can be fp32 subnormals.
__device__ __forceinline__ float mul_rn_no_ftz(float a, float b) {
  float d;
  asm("mul.rn.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  return d;
}

// Two fp32 -> two E4M3 bytes (RNE, saturating to +-448), lo in the low byte.
__device__ __forceinline__ unsigned cvt_e4m3x2(float lo, float hi) {
  unsigned short d;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  return d;
}

#if !(defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000)
// E8M0 rceil scale from the bits of d = amax * fp32(1/448) >= 0: the smallest S in [0,254] with
// 2^(S-127) >= d.
__device__ __forceinline__ unsigned rceil_from_d(float d) {
  const unsigned bits = __float_as_uint(d);
  const unsigned e = bits >> 23;
  const unsigned mant = bits & 0x7FFFFFu;
  if (e == 0xFF) return 254;                    // d = +Inf
  if (e == 0) return mant > 0x400000u ? 1 : 0;  // subnormal d: 2^-127 is 0x400000 * 2^-149
  return min(e + (mant != 0 ? 1u : 0u), 254u);
}
#endif

// rceil scales of two amax values (bf16 magnitude bits, non-NaN), a in bits 0..7, b in 8..15.
__device__ __forceinline__ unsigned rceil_scale2(unsigned amax_a, unsigned amax_b) {
  const float da = mul_rn_no_ftz(__uint_as_float(amax_a << 16), 1.0f / 448.0f);
  const float db = mul_rn_no_ftz(__uint_as_float(amax_b << 16), 1.0f / 448.0f);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
  // Round toward +Inf to a power of two; satfinite maps +Inf to 0xFE; d = 0 gives 0x00.
  unsigned short pair;
  asm("cvt.rp.satfinite.ue8m0x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(db), "f"(da));
  return pair;
#else
  return rceil_from_d(da) | (rceil_from_d(db) << 8);
#endif
}

// E8M0 floor scale for finite amax: clamp(floor(log2(amax)) - 8 + 127, 0, 254); bf16
// subnormals and zero (exponent field 0) clamp to 0.
__device__ __forceinline__ unsigned floor_scale(unsigned amax_bf16) {
  return static_cast<unsigned>(max(static_cast<int>(amax_bf16 >> 7) - 8, 0));
}

// NaN always, and Inf under floor, make the block all-NaN.
__device__ __forceinline__ bool is_special(unsigned amax_bf16) {
  return Config::kFloor ? amax_bf16 >= kBf16Inf : amax_bf16 > kBf16Inf;
}

// Scales of two blocks (a low byte, b next), 0xFF for special blocks.
__device__ __forceinline__ unsigned scale2(unsigned amax_a, unsigned amax_b) {
  const bool sa = is_special(amax_a), sb = is_special(amax_b);
  unsigned s;
  if constexpr (Config::kFloor) {
    s = floor_scale(amax_a) | (floor_scale(amax_b) << 8);
  } else {
    // NaN magnitudes would not order like values in d: feed 0 and overwrite.
    s = rceil_scale2(sa ? 0u : amax_a, sb ? 0u : amax_b);
  }
  if (sa) s = (s & 0xFF00u) | kE8M0NaN;
  if (sb) s = (s & 0x00FFu) | (kE8M0NaN << 8);
  return s;
}

// fp32 bits of 2^(127-S), S in [0,254]; 2^0 for the NaN scale (q is overwritten anyway).
__device__ __forceinline__ float scale_reciprocal(unsigned s) {
  if (s == kE8M0NaN) return 1.0f;
  const unsigned biased = 254u - s;
  return __uint_as_float(biased != 0 ? biased << 23 : 0x00400000u);  // S = 254: subnormal
}

__device__ __forceinline__ float bf16_lo(unsigned w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_hi(unsigned w) { return __uint_as_float(w & 0xFFFF0000u); }

__device__ __forceinline__ unsigned amax_chunk(const Chunk& c) {
  const unsigned m2 = max_u16x2(max_u16x2(c.w[0] & 0x7FFF7FFFu, c.w[1] & 0x7FFF7FFFu),
                                max_u16x2(c.w[2] & 0x7FFF7FFFu, c.w[3] & 0x7FFF7FFFu));
  return max(m2 & 0xFFFFu, m2 >> 16);
}

// Rowwise half for one 16-byte chunk (8 elements; 4 consecutive lanes = one block; all 32 lanes
// must call). Stores 8 q bytes and, from the block's first lane, its scale.
__device__ __forceinline__ void rowwise_chunk(const Chunk& c, bool valid, unsigned char* q_dst,
                                              unsigned char* s_dst, int lane) {
  unsigned amax = amax_chunk(c);
  amax = max(amax, __shfl_xor_sync(kFullMask, amax, 1));
  amax = max(amax, __shfl_xor_sync(kFullMask, amax, 2));
  const unsigned s = scale2(amax, 0u) & 0xFFu;
  const float r = scale_reciprocal(s);
  unsigned out[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const unsigned w0 = c.w[2 * h], w1 = c.w[2 * h + 1];
    out[h] = cvt_e4m3x2(mul_rn_no_ftz(bf16_lo(w0), r), mul_rn_no_ftz(bf16_hi(w0), r)) |
             cvt_e4m3x2(mul_rn_no_ftz(bf16_lo(w1), r), mul_rn_no_ftz(bf16_hi(w1), r)) << 16;
  }
  if (s == kE8M0NaN) out[0] = out[1] = kE4M3NaNx4;
  if (valid) {
    store_global8(q_dst, out[0], out[1]);
    if ((lane & 3) == 0) *s_dst = static_cast<unsigned char>(s);
  }
}

// Byte offset of 16-byte chunk `ch` of staged q_t row `k` (row pitch kBM bytes).
__device__ __forceinline__ unsigned qt_offset(int k, int ch) {
  return static_cast<unsigned>(k * Config::kBM + ((ch ^ ((k >> 1) & Config::kSwizzleMask)) << 4));
}

// One tile of one [rows, cols] matrix x (row-major). Outputs: q/scales rowwise (skipped when
// q == nullptr), q_t [cols, rows] / scales_t [cols, rows/32] colwise. rows, cols % 32 == 0.
template <bool kRowwise>
__device__ __forceinline__ void quantize_tile(const unsigned short* __restrict__ x,
                                              unsigned char* __restrict__ q,
                                              unsigned char* __restrict__ scales,
                                              unsigned char* __restrict__ q_t,
                                              unsigned char* __restrict__ scales_t, long long rows,
                                              long long cols, long long m0, long long k0,
                                              unsigned char* smem) {
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int rows_valid = static_cast<int>(min(static_cast<long long>(Config::kBM), rows - m0));
  const int cols_valid = static_cast<int>(min(static_cast<long long>(Config::kBK), cols - k0));
  const unsigned tile = static_cast<unsigned>(__cvta_generic_to_shared(smem));  // (kBM,kBK) bf16
  const unsigned bar = tile + Config::kTileBytes;

  // ---- load the x tile ----
  if constexpr (kUseTma) {
    if (tid == 0) mbarrier_init(bar, 1);
    __syncthreads();
    if (warp == 0) {
      if (lane == 0) mbarrier_arrive_expect_tx(bar, rows_valid * cols_valid * 2);
      __syncwarp();
      for (int r = lane; r < rows_valid; r += 32) {
        tma_load_1d(tile + r * Config::kBK * 2, x + (m0 + r) * cols + k0, cols_valid * 2, bar);
      }
    }
    mbarrier_wait_parity(bar, 0);
    if constexpr (kRowwise) {
#pragma unroll
      for (int u = 0; u < Config::kLoadsPerThread; ++u) {
        const int ci = u * Config::kThreads + tid;
        const int r = ci / Config::kRowChunks, cc = ci % Config::kRowChunks;
        const bool valid = r < rows_valid && cc * 8 < cols_valid;
        const Chunk c = load_shared16(tile + ci * 16);  // garbage where !valid: not stored
        const long long row = m0 + r, col = k0 + cc * 8;
        rowwise_chunk(c, valid, q + row * cols + col, scales + row * (cols / 32) + col / 32, lane);
      }
    }
  } else {
    Chunk c[Config::kLoadsPerThread];  // (8) x 16 B, all in flight before the first use
#pragma unroll
    for (int u = 0; u < Config::kLoadsPerThread; ++u) {
      const int ci = u * Config::kThreads + tid;
      const int r = ci / Config::kRowChunks, cc = ci % Config::kRowChunks;
      if (r < rows_valid && cc * 8 < cols_valid) {
        c[u] = load_chunk_global(x + (m0 + r) * cols + k0 + cc * 8);
      } else {
        c[u] = Chunk{{0u, 0u, 0u, 0u}};
      }
    }
#pragma unroll
    for (int u = 0; u < Config::kLoadsPerThread; ++u) {
      const int ci = u * Config::kThreads + tid;  // row-major chunk index = smem position
      store_shared16(tile + ci * 16, c[u].w[0], c[u].w[1], c[u].w[2], c[u].w[3]);
    }
    if constexpr (kRowwise) {
#pragma unroll
      for (int u = 0; u < Config::kLoadsPerThread; ++u) {
        const int ci = u * Config::kThreads + tid;
        const int r = ci / Config::kRowChunks, cc = ci % Config::kRowChunks;
        const bool valid = r < rows_valid && cc * 8 < cols_valid;
        const long long row = m0 + r, col = k0 + cc * 8;
        rowwise_chunk(c[u], valid, q + row * cols + col, scales + row * (cols / 32) + col / 32,
                      lane);
      }
    }
    __syncthreads();
  }

  // ---- colwise: warp (b, kt), lane p owns columns 64kt + 2p, +1 of rows 32b .. 32b+31 ----
  const int b = warp % Config::kRowBlocks, kt = warp / Config::kRowBlocks;
  const int kl = 64 * kt + 2 * lane;  // first of the two tile columns
  const bool col_valid = 32 * b < rows_valid && kl < cols_valid;
  unsigned qa[8], qb[8];  // column kl / kl+1: 32 bytes each, row 4j+i in byte i of word j
  unsigned s2 = 0;
  if (col_valid) {
    unsigned w[32];  // (32 rows) x bf16 pair
#pragma unroll
    for (int i = 0; i < 32; ++i) {
      w[i] = load_shared4(tile + ((32 * b + i) * Config::kBK + kl) * 2);
    }
    unsigned m2 = 0;
#pragma unroll
    for (int i = 0; i < 32; ++i) m2 = max_u16x2(m2, w[i] & 0x7FFF7FFFu);
    s2 = scale2(m2 & 0xFFFFu, m2 >> 16);
    const float ra = scale_reciprocal(s2 & 0xFFu), rb = scale_reciprocal(s2 >> 8);
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      qa[j] = cvt_e4m3x2(mul_rn_no_ftz(bf16_lo(w[4 * j]), ra),
                         mul_rn_no_ftz(bf16_lo(w[4 * j + 1]), ra)) |
              cvt_e4m3x2(mul_rn_no_ftz(bf16_lo(w[4 * j + 2]), ra),
                         mul_rn_no_ftz(bf16_lo(w[4 * j + 3]), ra))
                  << 16;
      qb[j] = cvt_e4m3x2(mul_rn_no_ftz(bf16_hi(w[4 * j]), rb),
                         mul_rn_no_ftz(bf16_hi(w[4 * j + 1]), rb)) |
              cvt_e4m3x2(mul_rn_no_ftz(bf16_hi(w[4 * j + 2]), rb),
                         mul_rn_no_ftz(bf16_hi(w[4 * j + 3]), rb))
                  << 16;
    }
    if ((s2 & 0xFFu) == kE8M0NaN) {
#pragma unroll
      for (int j = 0; j < 8; ++j) qa[j] = kE4M3NaNx4;
    }
    if ((s2 >> 8) == kE8M0NaN) {
#pragma unroll
      for (int j = 0; j < 8; ++j) qb[j] = kE4M3NaNx4;
    }
    // scales_t (cols, rows/32): byte stores; M-adjacent CTAs (ORDER 0) fill the same sectors.
    const long long nb = rows / 32;
    const long long sb = m0 / 32 + b;
    scales_t[(k0 + kl) * nb + sb] = static_cast<unsigned char>(s2 & 0xFFu);
    scales_t[(k0 + kl + 1) * nb + sb] = static_cast<unsigned char>(s2 >> 8);
  }
  __syncthreads();  // every colwise read of the x tile is done: stage q_t over it
  if (col_valid) {
    store_shared16(tile + qt_offset(kl, 2 * b), qa[0], qa[1], qa[2], qa[3]);
    store_shared16(tile + qt_offset(kl, 2 * b + 1), qa[4], qa[5], qa[6], qa[7]);
    store_shared16(tile + qt_offset(kl + 1, 2 * b), qb[0], qb[1], qb[2], qb[3]);
    store_shared16(tile + qt_offset(kl + 1, 2 * b + 1), qb[4], qb[5], qb[6], qb[7]);
  }
  __syncthreads();

  // ---- q_t: staged row k holds q_t[k0 + k][m0 .. m0 + kBM); 16-byte coalesced stores ----
#pragma unroll
  for (int u = 0; u < Config::kStoresPerThread; ++u) {
    const int ci = u * Config::kThreads + tid;
    const int k = ci / Config::kQtChunks, ch = ci % Config::kQtChunks;
    if (k < cols_valid && ch * 16 < rows_valid) {
      const Chunk v = load_shared16(tile + qt_offset(k, ch));
      store_global16(q_t + (k0 + k) * rows + m0 + ch * 16, v);
    }
  }
}

}  // namespace

// x (M,K) bf16 bits; q_t (K,M) e4m3, scales_t (K,M/32) e8m0. One CTA per (kBM x kBK) tile;
// M % 32 == 0 and K % 32 == 0, so ragged tiles hold whole blocks.
extern "C" __global__ void __launch_bounds__(Config::kThreads)
    sm90_bf16_mxfp8_quantize_colwise(const unsigned short* __restrict__ x,
                                     unsigned char* __restrict__ q_t,
                                     unsigned char* __restrict__ scales_t, int M, int K) {
  extern __shared__ __align__(128) unsigned char smem[];  // (kBM,kBK) bf16 + mbarrier
  const long long tiles_m = (M + Config::kBM - 1) / Config::kBM;
  const long long tiles_k = (K + Config::kBK - 1) / Config::kBK;
#if ORDER == 0
  const long long tm = blockIdx.x % tiles_m, tk = blockIdx.x / tiles_m;
#else
  const long long tk = blockIdx.x % tiles_k, tm = blockIdx.x / tiles_k;
#endif
  quantize_tile<false>(x, nullptr, nullptr, q_t, scales_t, M, K, tm * Config::kBM,
                       tk * Config::kBK, smem);
}

// warpsmith device library: the tile core of the transposing MXFP8 quantizers
// (kernels/mxfp8_quantize_colwise, _dual, _expert_weights). One CTA quantizes one BM x BK tile of
// a row-major bf16 matrix x [rows, cols]: colwise into q_t [cols, rows] + scales_t [cols, rows/32]
// (32-row blocks of each column, stored transposed) and, optionally, rowwise into q [rows, cols] +
// scales [rows, cols/32] from the same read of x.
//
//  - The tile lands in shared memory (row pitch BK*2 bytes), by one cp.async.bulk per tile row on
//    an mbarrier (kUseTma) or by 8 x 16-byte ld.global.nc per thread, all issued before use.
//  - Colwise: warp (b, kt) owns rows 32b .. 32b+31 of columns 64kt .. 64kt+63; lane p reads the
//    32 words of columns 2p, 2p+1 (32 consecutive words per step: conflict-free).
//  - q_t is staged over the dead x tile in 16-byte chunks XOR-swizzled by (row/2), then leaves as
//    16-byte coalesced stores of BM bytes per q_t row.
//  - Rowwise: 4 consecutive lanes hold one 32-element block (8 elements each).
// Scale rules as ws/mx.cuh; sm_100a takes rceil scales two at a time from the ue8m0x2 conversion.
#pragma once

#include "ws/bf16.cuh"
#include "ws/bulk_copy.cuh"
#include "ws/memory.cuh"
#include "ws/mx.cuh"
#include "ws/mx_block.cuh"
#include "ws/tile_order.cuh"

namespace ws {
namespace mx {

/// kUseTma for a kernel's LOAD_PATH knob: 1 bulk copies, 2 vector loads, 0 by arch (bulk copies
/// from sm_100 on, vector loads on sm_90).
constexpr bool use_bulk_loads(int load_path) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
  return load_path == 1 || load_path == 0;
#else
  return load_path == 1;
#endif
}

/// kRowBlocks: 32-row blocks per tile (BM = 32 kRowBlocks); kSubtiles: 64-column subtiles (BK =
/// 64 kSubtiles); one warp per (row block, subtile). kFloor: floor scales, else rceil. kUseTma:
/// bulk-copy loads, else vector loads. kStoreCs: st.global.cs for q and q_t. kScaleWords: scales
/// and scales_t leave as 32-bit words (4 blocks of one row per store) where whole and aligned,
/// else as bytes: rowwise, the 4 quad leaders of 16 lanes gather by shuffles; colwise, scales_t
/// is staged in shared memory after the tile (kBK rows of kRowBlocks bytes) and thread k writes
/// staged row k. false: one byte store per block, as the first H200 run. kPairs: the rowwise half
/// reads the tile back from shared memory after a barrier, two lanes per block (16 elements and
/// one 16-byte q store per lane: half the store instructions of the lane quads; kSubtiles >= 2).
/// kAsyncLoads: every thread's chunks land in shared memory by cp.async (no registers held for
/// loads in flight; then the tile is read back as in the bulk path), over kUseTma.
/// kScaleTiles (with kScaleWords): scales and scales_t point at this tile's blocks of a scale
/// workspace, [kBM][kBK/32] and [kBK][kRowBlocks] bytes, written whole as words (the ragged parts
/// hold garbage); ScaleGather then moves them into place with whole-line stores. A tile's own
/// scales are 4 bytes per tile row or column, each a separate L2 request in place.
/// kStepAddr: a thread's loaded chunks, its rowwise pairs (kPairs) and its q_t chunks each lie a
/// fixed number of rows apart, so one address and a step serve each set, and whole tiles (most
/// of them) skip the bounds tests; without it each access computes its own 64-bit address and
/// test (a quarter of the dual quantizer's sm_90a instructions).
/// Launch with kThreads threads and kSmemBytes of dynamic shared memory, 128-byte aligned.
template <int kRowBlocks, int kSubtiles, bool kFloor, bool kUseTma, bool kStoreCs,
          bool kScaleWords = false, bool kPairs = false, bool kAsyncLoads = false,
          bool kScaleTiles = false, bool kStepAddr = false>
struct DualTile {
  static constexpr int kBM = 32 * kRowBlocks;  // tile rows
  static constexpr int kBK = 64 * kSubtiles;   // tile columns
  static constexpr int kThreads = 32 * kRowBlocks * kSubtiles;
  static constexpr int kRowChunks = kBK / 8;  // 16-byte chunks per tile row
  static constexpr int kLoadsPerThread = kBM * kRowChunks / kThreads;  // 8
  static constexpr int kQtChunks = kBM / 16;  // 16-byte chunks per staged q_t row
  static constexpr int kSwizzleMask = (kQtChunks < 8 ? kQtChunks : 8) - 1;
  static constexpr int kStoresPerThread = kBK * kQtChunks / kThreads;  // 4
  static constexpr int kTileBytes = kBM * kBK * 2;
  static constexpr int kSmemBytes = kTileBytes + 16;  // the tile, then the mbarrier
  // kScaleWords: the staged scales_t, (kBK, kRowBlocks) bytes after the mbarrier.
  static constexpr int kScaleStageBytes = kScaleWords ? kBK * kRowBlocks : 0;
  static constexpr int kSmemBytesTotal = kSmemBytes + kScaleStageBytes;
  static_assert(kThreads <= 1024, "kRowBlocks * kSubtiles <= 32");
  static_assert(kLoadsPerThread == 8 && kStoresPerThread == 4, "tile algebra");
  static_assert(kBK * kBM <= kTileBytes, "q_t tile fits over the x tile");
  static constexpr int kRowPairs = kRowChunks / 2;  // 16-element halves of blocks per tile row
  static_assert(!kPairs || kRowPairs % 8 == 0, "kPairs: 8 lanes (4 blocks) per tile row segment");
  static_assert(!kScaleTiles || kScaleWords, "kScaleTiles writes kScaleWords' words");
  static constexpr int kTileScaleRow = kBK / 32;  // kScaleTiles: bytes per tile row of scales
  static constexpr int kTileScaleCol = kRowBlocks;  // and per tile column of scales_t
  static constexpr int kScaleTileBytes = kBM * kTileScaleRow;  // = kBK * kRowBlocks (scales_t)

  /// The scale of the block at column col of row `row` (tile row r): in place, or in the tile's
  /// workspace block (kScaleTiles).
  static __device__ __forceinline__ unsigned char* scale_at(unsigned char* scales, long long cols,
                                                            long long row, long long col, int r,
                                                            long long k0) {
    if constexpr (kScaleTiles) {
      return scales + r * kTileScaleRow + (col - k0) / 32;
    } else {
      return scales + row * (cols / 32) + col / 32;
    }
  }

  /// Scales of two blocks (a low byte, b next), 0xFF for special blocks (is_special).
  static __device__ __forceinline__ unsigned scale2(unsigned amax_a, unsigned amax_b) {
    const bool sa = is_special<kFloor>(amax_a), sb = is_special<kFloor>(amax_b);
    unsigned s;
    if constexpr (kFloor) {
      s = floor_scale(amax_a) | (floor_scale(amax_b) << 8);
    } else {
      // NaN magnitudes would not order like values in d: feed 0 and overwrite.
      s = rceil_scale_x2(sa ? 0u : amax_a, sb ? 0u : amax_b);
    }
    if (sa) s = (s & 0xFF00u) | kE8M0NaN;
    if (sb) s = (s & 0x00FFu) | (kE8M0NaN << 8);
    return s;
  }

  /// fp32 2^(127-S), S in [0,254]; 2^0 for the NaN scale (its q is overwritten anyway).
  static __device__ __forceinline__ float reciprocal(unsigned s) {
    if (s == kE8M0NaN) return 1.0f;
    return scale_reciprocal(s);
  }

  /// Rowwise half for one 16-byte chunk (8 elements; 4 consecutive lanes = one block; all 32
  /// lanes must call). Stores 8 q bytes and, from the block's first lane, its scale.
  static __device__ __forceinline__ void rowwise_chunk(const Chunk& c, bool valid,
                                                       unsigned char* q_dst, unsigned char* s_dst,
                                                       int lane) {
    unsigned amax = amax_bf16x8(c);
    amax = max(amax, __shfl_xor_sync(kFullMask, amax, 1));
    amax = max(amax, __shfl_xor_sync(kFullMask, amax, 2));
    const unsigned s = scale2(amax, 0u) & 0xFFu;
    const float r = reciprocal(s);
    unsigned out[2];
    quantize_bf16x8(c, r, out[0], out[1]);
    if (s == kE8M0NaN) out[0] = out[1] = kE4M3NaNx4;
    if (valid) {
      store_global8<kStoreCs>(q_dst, out[0], out[1]);
      if ((lane & 3) == 0) *s_dst = static_cast<unsigned char>(s);
    }
  }

  /// rowwise_chunk with the scales as 32-bit words (kScaleWords; kRowChunks % 16 == 0, so 16
  /// lanes lie in one tile row and hold 4 consecutive blocks). The 16 lanes' leader stores the
  /// word of its 4 blocks when `word_ok` (all 4 blocks valid; same for the 16 lanes) and the
  /// word's address is 4-byte aligned; otherwise each block's first lane stores its byte. q and
  /// the scale values are rowwise_chunk's.
  static __device__ __forceinline__ void rowwise_chunk_words(const Chunk& c, bool valid,
                                                             bool word_ok, unsigned char* q_dst,
                                                             unsigned char* s_dst, int lane) {
    unsigned amax = amax_bf16x8(c);
    amax = max(amax, __shfl_xor_sync(kFullMask, amax, 1));
    amax = max(amax, __shfl_xor_sync(kFullMask, amax, 2));
    const unsigned s = scale2(amax, 0u) & 0xFFu;
    const float r = reciprocal(s);
    unsigned out[2];
    quantize_bf16x8(c, r, out[0], out[1]);
    if (s == kE8M0NaN) out[0] = out[1] = kE4M3NaNx4;
    // Blocks of lanes l, l+4, l+8, l+12 into one word (bytes 0..3), valid at l % 16 == 0.
    const unsigned word = s | (__shfl_down_sync(kFullMask, s, 4) << 8) |
                          (__shfl_down_sync(kFullMask, s, 8) << 16) |
                          (__shfl_down_sync(kFullMask, s, 12) << 24);
    unsigned char* w_dst = s_dst - ((lane & 15) >> 2);  // the leader's byte: block 0 of the 4
    const bool as_word = word_ok && (kScaleTiles || (reinterpret_cast<size_t>(w_dst) & 3) == 0);
    if (valid) {
      store_global8<kStoreCs>(q_dst, out[0], out[1]);
      if (as_word) {
        if ((lane & 15) == 0) *reinterpret_cast<unsigned*>(w_dst) = word;
      } else if ((lane & 3) == 0) {
        *s_dst = static_cast<unsigned char>(s);
      }
    }
  }

  // One rowwise chunk by the kScaleWords rule: words where kRowChunks allows (KT >= 2).
  static __device__ __forceinline__ void rowwise_any(const Chunk& c, bool valid, int r, int cc,
                                                     int rows_valid, int cols_valid,
                                                     unsigned char* q_dst, unsigned char* s_dst,
                                                     int lane) {
    if constexpr (kScaleWords && kRowChunks % 16 == 0) {
      // The 16 lanes' chunks (cc & ~15) .. +15: 128 columns = 4 blocks, all valid or not.
      const bool word_ok =
          kScaleTiles || (r < rows_valid && ((cc & ~15) + 16) * 8 <= cols_valid);
      rowwise_chunk_words(c, valid, word_ok, q_dst, s_dst, lane);
    } else {
      rowwise_chunk(c, valid, q_dst, s_dst, lane);
    }
  }

  // Rowwise half from the tile in shared memory, four lanes per block: each thread quantizes the
  // chunks it loaded (garbage where not valid: not stored).
  static __device__ __forceinline__ void rowwise_quads_shared(unsigned tile,
                                                              unsigned char* __restrict__ q,
                                                              unsigned char* __restrict__ scales,
                                                              long long cols, long long m0,
                                                              long long k0, int rows_valid,
                                                              int cols_valid) {
    const int tid = threadIdx.x, lane = tid & 31;
#pragma unroll
    for (int u = 0; u < kLoadsPerThread; ++u) {
      const int ci = u * kThreads + tid;
      const int r = ci / kRowChunks, cc = ci % kRowChunks;
      const bool valid = r < rows_valid && cc * 8 < cols_valid;
      const Chunk c = load_shared16(tile + ci * 16);
      const long long row = m0 + r, col = k0 + cc * 8;
      rowwise_any(c, valid, r, cc, rows_valid, cols_valid, q + row * cols + col,
                  scale_at(scales, cols, row, col, r, k0), lane);
    }
  }

  // Rowwise half from the tile in shared memory, two lanes per block (kPairs): lane pair (2j,
  // 2j+1) holds block j's two 16-element halves (ws::mx::load_pair_shared: conflict-free) and
  // stores 16 q bytes; with kScaleWords the 8 lanes of 4 blocks gather one word.
  // kStepAddr: a thread's pairs lie kThreads / kRowPairs tile rows apart in one pair column, so
  // its q addresses are one base and a step, and whole tiles skip the bounds tests. Both loops
  // stay: the dual quantizer runs this one (faster on the H200, session 38), the expert-weights
  // quantizer the other (kStepAddr ran 0.996x there). NOTE: their store tails are the same code;
  // one shared helper moves both defaults' SASS (same instruction count on sm_90a, +16 on the
  // expert weights' sm_100a), so it waits for a GPU run to measure it.
  static __device__ __forceinline__ void rowwise_pairs(unsigned tile,
                                                       unsigned char* __restrict__ q,
                                                       unsigned char* __restrict__ scales,
                                                       long long cols, long long m0,
                                                       long long k0, int rows_valid,
                                                       int cols_valid) {
    const int tid = threadIdx.x;
    if constexpr (kStepAddr) {
      constexpr int kRowStep = kThreads / kRowPairs;
      static_assert(kThreads % kRowPairs == 0, "a round covers whole tile rows");
      const int r0 = static_cast<int>(threadIdx.x / kRowPairs);
      const int pc = static_cast<int>(threadIdx.x % kRowPairs);
      const bool whole = rows_valid == kBM && cols_valid == kBK;
      unsigned char* q_dst = q + (m0 + r0) * cols + k0 + pc * 16;
      const long long q_step = kRowStep * cols;
#pragma unroll
      for (int u = 0; u < kLoadsPerThread / 2; ++u, q_dst += q_step) {
        const int r = u * kRowStep + r0;
        Chunk lo, hi;
        load_pair_shared(tile, u * kThreads + tid, lo, hi);
        unsigned out[4];
        const unsigned sc = quantize_pair<kFloor>(lo, hi, out);
        const bool valid = whole || (r < rows_valid && pc * 16 < cols_valid);
        unsigned char* s_dst = kScaleTiles ? scales + r * kTileScaleRow + pc / 2
                                           : scale_at(scales, cols, m0 + r, k0 + pc * 16, r, k0);
        unsigned char* w_dst = s_dst - ((pc & 7) >> 1);
        bool as_word = false;
        unsigned word = 0;
        if constexpr (kScaleWords) {
          word = sc | (__shfl_down_sync(kFullMask, sc, 2) << 8) |
                 (__shfl_down_sync(kFullMask, sc, 4) << 16) |
                 (__shfl_down_sync(kFullMask, sc, 6) << 24);
          as_word = kScaleTiles || (r < rows_valid && ((pc & ~7) + 8) * 16 <= cols_valid &&
                                    (reinterpret_cast<size_t>(w_dst) & 3) == 0);
        }
        if (valid) {
          store_global16<kStoreCs>(q_dst, out[0], out[1], out[2], out[3]);
          if (as_word) {
            if ((pc & 7) == 0) *reinterpret_cast<unsigned*>(w_dst) = word;
          } else if ((pc & 1) == 0) {
            *s_dst = static_cast<unsigned char>(sc);
          }
        }
      }
      return;
    }
#pragma unroll
    for (int u = 0; u < kLoadsPerThread / 2; ++u) {
      const int pi = u * kThreads + tid;
      const int r = pi / kRowPairs, pc = pi % kRowPairs;
      Chunk lo, hi;
      load_pair_shared(tile, pi, lo, hi);
      unsigned out[4];
      const unsigned sc = quantize_pair<kFloor>(lo, hi, out);
      const bool valid = r < rows_valid && pc * 16 < cols_valid;
      const long long row = m0 + r, col = k0 + pc * 16;
      unsigned char* s_dst = scale_at(scales, cols, row, col, r, k0);
      bool as_word = false;  // kScaleWords: this lane's 8-lane group stores one word
      unsigned word = 0;
      unsigned char* w_dst = s_dst - ((pc & 7) >> 1);  // the group's first block
      if constexpr (kScaleWords) {
        // Blocks of lanes l, l+2, l+4, l+6 into one word, valid at l % 8 == 0 (pc % 8 == 0).
        word = sc | (__shfl_down_sync(kFullMask, sc, 2) << 8) |
               (__shfl_down_sync(kFullMask, sc, 4) << 16) |
               (__shfl_down_sync(kFullMask, sc, 6) << 24);
        as_word = kScaleTiles || (r < rows_valid && ((pc & ~7) + 8) * 16 <= cols_valid &&
                                  (reinterpret_cast<size_t>(w_dst) & 3) == 0);
      }
      if (valid) {
        store_global16<kStoreCs>(q + row * cols + col, out[0], out[1], out[2], out[3]);
        if (as_word) {
          if ((pc & 7) == 0) *reinterpret_cast<unsigned*>(w_dst) = word;
        } else if ((pc & 1) == 0) {
          *s_dst = static_cast<unsigned char>(sc);
        }
      }
    }
  }

  // Rows 4j .. 4j+3 of two columns (words w0..w3: column kl in the low halves, kl + 1 in the
  // high) into byte i of qa (column kl, times ra) and of qb (kl + 1, times rb).
  static __device__ __forceinline__ void quantize_rows4(unsigned w0, unsigned w1, unsigned w2,
                                                        unsigned w3, float ra, float rb,
                                                        unsigned& qa, unsigned& qb) {
    qa = cvt_e4m3x2(mul_rn_no_ftz(bf16_lo(w0), ra), mul_rn_no_ftz(bf16_lo(w1), ra)) |
         cvt_e4m3x2(mul_rn_no_ftz(bf16_lo(w2), ra), mul_rn_no_ftz(bf16_lo(w3), ra)) << 16;
    qb = cvt_e4m3x2(mul_rn_no_ftz(bf16_hi(w0), rb), mul_rn_no_ftz(bf16_hi(w1), rb)) |
         cvt_e4m3x2(mul_rn_no_ftz(bf16_hi(w2), rb), mul_rn_no_ftz(bf16_hi(w3), rb)) << 16;
  }

  // Byte offset of 16-byte chunk `ch` of staged q_t row `k` (row pitch kBM bytes).
  static __device__ __forceinline__ unsigned qt_offset(int k, int ch) {
    return static_cast<unsigned>(k * kBM + ((ch ^ ((k >> 1) & kSwizzleMask)) << 4));
  }

  // One tile of one [rows, cols] matrix x (row-major). Outputs: q/scales rowwise (skipped when
  // q == nullptr), q_t [cols, rows] / scales_t [cols, rows/32] colwise. rows, cols % 32 == 0.
  template <bool kRowwise>
  static __device__ __forceinline__ void quantize(const unsigned short* __restrict__ x,
                                                  unsigned char* __restrict__ q,
                                                  unsigned char* __restrict__ scales,
                                                  unsigned char* __restrict__ q_t,
                                                  unsigned char* __restrict__ scales_t,
                                                  long long rows, long long cols, long long m0,
                                                  long long k0, unsigned char* smem) {
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int rows_valid = static_cast<int>(min(static_cast<long long>(kBM), rows - m0));
    const int cols_valid = static_cast<int>(min(static_cast<long long>(kBK), cols - k0));
    const unsigned tile = static_cast<unsigned>(__cvta_generic_to_shared(smem));  // (kBM,kBK) bf16
    const unsigned bar = tile + kTileBytes;

    // ---- load the x tile ----
    if constexpr (kUseTma || kAsyncLoads) {
      if constexpr (kAsyncLoads) {
#pragma unroll
        for (int u = 0; u < kLoadsPerThread; ++u) {
          const int ci = u * kThreads + tid;
          const int r = ci / kRowChunks, cc = ci % kRowChunks;
          if (r < rows_valid && cc * 8 < cols_valid) {
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(tile + ci * 16),
                         "l"(x + (m0 + r) * cols + k0 + cc * 8)
                         : "memory");
          }
        }
        asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
        __syncthreads();
      } else {
        if (tid == 0) mbar_init_fenced(bar, 1);
        __syncthreads();
        if (warp == 0) {
          if (lane == 0) mbar_expect_tx(bar, rows_valid * cols_valid * 2);
          __syncwarp();
          for (int r = lane; r < rows_valid; r += 32) {
            bulk_load_1d(tile + r * kBK * 2, x + (m0 + r) * cols + k0, cols_valid * 2, bar);
          }
        }
        mbar_wait(bar, 0);
      }
      if constexpr (kRowwise && kPairs) {
        rowwise_pairs(tile, q, scales, cols, m0, k0, rows_valid, cols_valid);
      } else if constexpr (kRowwise) {
        rowwise_quads_shared(tile, q, scales, cols, m0, k0, rows_valid, cols_valid);
      }
    } else {
      Chunk c[kLoadsPerThread];  // (8) x 16 B, all in flight before the first use
      if constexpr (kStepAddr) {
        // Chunk u * kThreads + tid sits at tile row u * kRowStep + r0, chunk column cc.
        constexpr int kRowStep = kThreads / kRowChunks;
        static_assert(kThreads % kRowChunks == 0, "a CTA's loads cover whole tile rows");
        const int r0 = tid / kRowChunks, cc = tid % kRowChunks;
        const long long step = kRowStep * cols;  // elements between a thread's chunks
        const unsigned short* p = x + (m0 + r0) * cols + k0 + cc * 8;
        if (rows_valid == kBM && cols_valid == kBK) {
#pragma unroll
          for (int u = 0; u < kLoadsPerThread; ++u, p += step) c[u] = load_global16(p);
        } else {
          const bool col_ok = cc * 8 < cols_valid;
#pragma unroll
          for (int u = 0; u < kLoadsPerThread; ++u, p += step) {
            c[u] = col_ok && u * kRowStep + r0 < rows_valid ? load_global16(p)
                                                             : Chunk{{0u, 0u, 0u, 0u}};
          }
        }
      } else {
#pragma unroll
        for (int u = 0; u < kLoadsPerThread; ++u) {
          const int ci = u * kThreads + tid;
          const int r = ci / kRowChunks, cc = ci % kRowChunks;
          if (r < rows_valid && cc * 8 < cols_valid) {
            c[u] = load_global16(x + (m0 + r) * cols + k0 + cc * 8);
          } else {
            c[u] = Chunk{{0u, 0u, 0u, 0u}};
          }
        }
      }
#pragma unroll
      for (int u = 0; u < kLoadsPerThread; ++u) {
        const int ci = u * kThreads + tid;  // row-major chunk index = smem position
        store_shared16(tile + ci * 16, c[u].w[0], c[u].w[1], c[u].w[2], c[u].w[3]);
      }
      if constexpr (kRowwise && kPairs) {
        __syncthreads();  // the pairs read other threads' chunks
        rowwise_pairs(tile, q, scales, cols, m0, k0, rows_valid, cols_valid);
      } else if constexpr (kRowwise && kScaleWords) {
        // Each thread reads back its own chunks (no barrier needed): c[] dies at the st.shared,
        // which keeps the word path within 64 registers at 512 threads (KT 4).
        rowwise_quads_shared(tile, q, scales, cols, m0, k0, rows_valid, cols_valid);
      } else if constexpr (kRowwise) {
#pragma unroll
        for (int u = 0; u < kLoadsPerThread; ++u) {
          const int ci = u * kThreads + tid;
          const int r = ci / kRowChunks, cc = ci % kRowChunks;
          const bool valid = r < rows_valid && cc * 8 < cols_valid;
          const long long row = m0 + r, col = k0 + cc * 8;
          rowwise_any(c[u], valid, r, cc, rows_valid, cols_valid, q + row * cols + col,
                      scale_at(scales, cols, row, col, r, k0), lane);
        }
      }
      if constexpr (!(kRowwise && kPairs)) __syncthreads();  // kPairs synced before its reads
    }

    // ---- colwise: warp (b, kt), lane p owns columns 64kt + 2p, +1 of rows 32b .. 32b+31 ----
    const int b = warp % kRowBlocks, kt = warp / kRowBlocks;
    const int kl = 64 * kt + 2 * lane;  // first of the two tile columns
    const bool col_valid = 32 * b < rows_valid && kl < cols_valid;
    unsigned qa[8], qb[8];  // column kl / kl+1: 32 bytes each, row 4j+i in byte i of word j
    unsigned s2 = 0;
    if (col_valid) {
      unsigned w[32];  // (32 rows) x bf16 pair
#pragma unroll
      for (int i = 0; i < 32; ++i) {
        w[i] = load_shared4(tile + ((32 * b + i) * kBK + kl) * 2);
      }
      unsigned m2 = 0;
#pragma unroll
      for (int i = 0; i < 32; ++i) m2 = max_u16x2(m2, w[i] & 0x7FFF7FFFu);
      s2 = scale2(m2 & 0xFFFFu, m2 >> 16);
      const float ra = reciprocal(s2 & 0xFFu), rb = reciprocal(s2 >> 8);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        quantize_rows4(w[4 * j], w[4 * j + 1], w[4 * j + 2], w[4 * j + 3], ra, rb, qa[j], qb[j]);
      }
      if ((s2 & 0xFFu) == kE8M0NaN) {
#pragma unroll
        for (int j = 0; j < 8; ++j) qa[j] = kE4M3NaNx4;
      }
      if ((s2 >> 8) == kE8M0NaN) {
#pragma unroll
        for (int j = 0; j < 8; ++j) qb[j] = kE4M3NaNx4;
      }
      if constexpr (kScaleWords) {
        // Staged scales_t row k: byte b is block b of tile column k (written out below).
        const unsigned stage = tile + kSmemBytes;
        store_shared1(stage + kl * kRowBlocks + b, s2 & 0xFFu);
        store_shared1(stage + (kl + 1) * kRowBlocks + b, s2 >> 8);
      } else {
        // scales_t (cols, rows/32): byte stores; M-adjacent CTAs (ORDER 0) fill the same sectors.
        const long long nb = rows / 32;
        const long long sb = m0 / 32 + b;
        scales_t[(k0 + kl) * nb + sb] = static_cast<unsigned char>(s2 & 0xFFu);
        scales_t[(k0 + kl + 1) * nb + sb] = static_cast<unsigned char>(s2 >> 8);
      }
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
    if constexpr (kStepAddr) {
      // A thread's chunks lie kRowStep staged rows apart in one chunk column; kRowStep is a
      // multiple of the swizzle's period (2 rows per step, kSwizzleMask + 1 steps), so the
      // shared-memory offsets step by whole rows too.
      constexpr int kRowStep = kThreads / kQtChunks;
      static_assert(kThreads % kQtChunks == 0 && kRowStep % (2 * (kSwizzleMask + 1)) == 0,
                    "a thread's q_t chunks share one swizzle");
      const int kt = static_cast<int>(threadIdx.x / kQtChunks);
      const int ch = static_cast<int>(threadIdx.x % kQtChunks);
      const bool whole = rows_valid == kBM && cols_valid == kBK;
      const unsigned src = tile + qt_offset(kt, ch);
      unsigned char* dst = q_t + (k0 + kt) * rows + m0 + ch * 16;
      const long long step = kRowStep * rows;
#pragma unroll
      for (int u = 0; u < kStoresPerThread; ++u, dst += step) {
        if (whole || (u * kRowStep + kt < cols_valid && ch * 16 < rows_valid)) {
          store_global16<kStoreCs>(dst, load_shared16(src + u * kRowStep * kBM));
        }
      }
    } else {
#pragma unroll
      for (int u = 0; u < kStoresPerThread; ++u) {
        const int ci = u * kThreads + tid;
        const int k = ci / kQtChunks, ch = ci % kQtChunks;
        if (k < cols_valid && ch * 16 < rows_valid) {
          const Chunk v = load_shared16(tile + qt_offset(k, ch));
          store_global16<kStoreCs>(q_t + (k0 + k) * rows + m0 + ch * 16, v);
        }
      }
    }
    if constexpr (kScaleWords) {
      // scales_t: thread k writes staged row k, the tile's blocks of column k0 + k (kThreads >=
      // kBK since kRowBlocks >= 2), as words where whole and aligned.
      static_assert(kThreads >= kBK, "one thread per staged scales_t row");
      const int k = tid;
      const int blocks_valid = rows_valid / 32;
      if (kScaleTiles && k < kBK && k < cols_valid) {
        // The tile's workspace block: row k whole (blocks past rows_valid hold garbage).
        const unsigned src = tile + kSmemBytes + k * kRowBlocks;
        unsigned char* dst = scales_t + k * kRowBlocks;
        if constexpr (kRowBlocks % 4 == 0) {
#pragma unroll
          for (int w = 0; w < kRowBlocks; w += 4) {
            *reinterpret_cast<unsigned*>(dst + w) = load_shared4(src + w);
          }
        } else {
#pragma unroll
          for (int w = 0; w < kRowBlocks; ++w) dst[w] = load_shared1(src + w);
        }
      } else if (k < kBK && k < cols_valid) {
        const unsigned src = tile + kSmemBytes + k * kRowBlocks;
        unsigned char* dst = scales_t + (k0 + k) * (rows / 32) + m0 / 32;
        bool done = false;
        if constexpr (kRowBlocks % 4 == 0) {
          if (blocks_valid == kRowBlocks && (reinterpret_cast<size_t>(dst) & 3) == 0) {
#pragma unroll
            for (int w = 0; w < kRowBlocks; w += 4) {
              *reinterpret_cast<unsigned*>(dst + w) = load_shared4(src + w);
            }
            done = true;
          }
        }
        if (!done) {
          for (int w = 0; w < blocks_valid; ++w) dst[w] = load_shared1(src + w);
        }
      }
    }
  }

};

/// The second pass of kScaleTiles: group g of the workspace src holds T tiles of [R][P] scale
/// bytes (tile t, row r at ((g*T + t)*R + r)*P); output row g*R + r (< rows, pitch bytes apart)
/// takes tile t's P bytes at column t*P (< pitch). One CTA of kThreads per (g, run of kTiles
/// tiles): the run is one contiguous read of 16-byte loads, passes through shared memory (tiles
/// kStride apart: the word reads along an output row hit 32 banks) and leaves along the output
/// rows, kTiles*P bytes per row: 4-byte stores where pitch allows, else bytes. Runs of 8 or 16
/// tiles (more CTAs where the grid is small) ran 0.95-1.00x in every caller on the H100
/// (session 37; git 00ae2c0 has the knob). Scheduling it early, the quantize launch executing
/// griddepcontrol.launch_dependents first, ran 0.986-1.003x in all five callers on the H100
/// (session 38; git 310569e has that knob, EARLY_GATHER).
/// kWide: where a run's output rows are whole 16-byte chunks, each thread builds 16-byte chunks
/// instead (a quarter of the divisions and none of the word loop's byte-pair assembly; the
/// shared-memory reads stay conflict-free) and stores each as one 16-byte store where aligned,
/// else as the widest pieces its address allows (rows of an odd number of words, such as the
/// 90-byte rows of K = 2880, would take byte stores in the word loop).
/// Whether ScaleGather's kWide form takes tiles of p bytes per output row: a word within one
/// tile, or two tiles' (p 2).
constexpr bool wide_gather_fits(int p) { return p == 2 || p % 4 == 0; }

template <int R, int P, bool kWide = false>
struct ScaleGather {
  static constexpr int kTiles = 32, kThreads = 256;
  static constexpr int kTileBytes = R * P, kStride = kTileBytes + 4;
  static constexpr int kSmemBytes = kTiles * kStride;
  static_assert(kTileBytes % 16 == 0 && P % 2 == 0, "whole 16-byte loads; P even");
  static_assert(!kWide || wide_gather_fits(P), "kWide: a word within one tile, or two tiles'");

  /// Runs of one group: ceil(T / kTiles).
  static __host__ __device__ constexpr long long runs(long long T) {
    return (T + kTiles - 1) / kTiles;
  }

  /// CTA b of the runs of all groups (T tiles each; group-major).
  static __device__ __forceinline__ void run_cta(const unsigned char* __restrict__ src,
                                                 unsigned char* __restrict__ out, long long rows,
                                                 long long T, long long pitch, long long b,
                                                 unsigned char* smem) {
    run(src, out, rows, T, pitch, b / runs(T), (b % runs(T)) * kTiles, smem);
  }
  /// As run_cta, into output rows of width bytes at pitch bytes apart (width <= pitch: a part
  /// of wider rows, such as one half of [M, 2I] scales; out need not be 4-byte aligned).
  static __device__ __forceinline__ void run_cta(const unsigned char* __restrict__ src,
                                                 unsigned char* __restrict__ out, long long rows,
                                                 long long T, long long pitch, long long width,
                                                 long long b, unsigned char* smem) {
    run<true>(src, out, rows, T, pitch, width, b / runs(T), (b % runs(T)) * kTiles, smem);
  }

  static __device__ __forceinline__ void run(const unsigned char* __restrict__ src,
                                             unsigned char* __restrict__ out, long long rows,
                                             long long T, long long pitch, long long g,
                                             long long t0, unsigned char* smem) {
    run(src, out, rows, T, pitch, pitch, g, t0, smem);
  }

  /// kAnyOut: out may sit at any byte (word stores only where out is 4-byte aligned too).
  template <bool kAnyOut = false>
  static __device__ __forceinline__ void run(const unsigned char* __restrict__ src,
                                             unsigned char* __restrict__ out, long long rows,
                                             long long T, long long pitch, long long width,
                                             long long g, long long t0, unsigned char* smem) {
    const int nt = static_cast<int>(min(static_cast<long long>(kTiles), T - t0));
    const uint4* in = reinterpret_cast<const uint4*>(src + (g * T + t0) * kTileBytes);
    constexpr int kChunks = kTileBytes / 16;  // 16-byte chunks per tile
    // Every load of the run issued before the first shared-memory store: one round trip. (A
    // strided loop ran 1-3 times per thread at small grids, each load waiting on the last,
    // since the stores may alias `in` for the compiler; 1.01-1.02x at 16384x2880, session 47.)
    // Chunks holding only rows past `rows` are skipped: their producers need not write them,
    // and the stores below never read those rows.
    constexpr int kPerThread = (kTiles * kChunks + kThreads - 1) / kThreads;
    const long long chunk_rows = ((rows - g * R) * P + 15) / 16;  // a tile's chunks with rows
    const int live = static_cast<int>(min(static_cast<long long>(kChunks), chunk_rows));
    uint4 v[kPerThread];
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int i = threadIdx.x + j * kThreads;
      if (i < nt * kChunks && i % kChunks < live) v[j] = in[i];  // the previous launch's
    }
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int i = threadIdx.x + j * kThreads;
      if (i < nt * kChunks && i % kChunks < live) {
        unsigned* d =
            reinterpret_cast<unsigned*>(smem + (i / kChunks) * kStride + (i % kChunks) * 16);
        d[0] = v[j].x;
        d[1] = v[j].y;
        d[2] = v[j].z;
        d[3] = v[j].w;
      }
    }
    __syncthreads();
    const long long col0 = t0 * P;  // the run's first output column
    if constexpr (kWide) {
      const int chunks = nt * P / 16;  // 16-byte chunks of this run per output row
      if (nt * P % 16 == 0 && pitch % 2 == 0 && col0 + nt * P <= width &&
          reinterpret_cast<size_t>(out) % 2 == 0) {
        for (int i = threadIdx.x; i < R * chunks; i += kThreads) {
          const int r = i / chunks, c = i - r * chunks;
          const long long row = g * R + r;
          if (row >= rows) break;  // i only grows: every later row is past the end too
          unsigned w[4];
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            const int b = 16 * c + 4 * k;  // the word's first byte in the run's row
            const unsigned char* src_row = smem + r * P;
            if constexpr (P == 2) {  // tiles b/2 and b/2 + 1
              w[k] = *reinterpret_cast<const unsigned short*>(src_row + (b / 2) * kStride) |
                     static_cast<unsigned>(*reinterpret_cast<const unsigned short*>(
                         src_row + (b / 2 + 1) * kStride)) << 16;
            } else {  // four bytes of tile b / P
              w[k] = *reinterpret_cast<const unsigned*>(src_row + (b / P) * kStride + b % P);
            }
          }
          unsigned char* dst = out + row * pitch + col0 + 16 * c;
          const size_t align = reinterpret_cast<size_t>(dst) % 16;
          if (align == 0) {
            *reinterpret_cast<uint4*>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
          } else if (align % 8 == 0) {
            reinterpret_cast<uint2*>(dst)[0] = make_uint2(w[0], w[1]);
            reinterpret_cast<uint2*>(dst)[1] = make_uint2(w[2], w[3]);
          } else if (align % 4 == 0) {
#pragma unroll
            for (int k = 0; k < 4; ++k) reinterpret_cast<unsigned*>(dst)[k] = w[k];
          } else {  // 2-byte aligned: pitch and out are even
#pragma unroll
            for (int k = 0; k < 8; ++k) {
              reinterpret_cast<unsigned short*>(dst)[k] =
                  static_cast<unsigned short>(w[k / 2] >> (16 * (k % 2)));
            }
          }
        }
        return;
      }
    }
    const int words = (nt * P + 3) / 4;  // 4-byte words of this run per output row
    const bool aligned =
        pitch % 4 == 0 && (!kAnyOut || reinterpret_cast<size_t>(out) % 4 == 0);
    for (int i = threadIdx.x; i < R * words; i += kThreads) {
      const int r = i / words, w = i % words;
      const long long row = g * R + r;
      if (row >= rows) break;  // i only grows: every later row is past the end too
      unsigned v = 0;
#pragma unroll
      for (int j = 0; j < 4; j += 2) {  // P even: byte pairs stay in one tile
        const int b = 4 * w + j;
        const unsigned short h =
            *reinterpret_cast<const unsigned short*>(smem + (b / P) * kStride + r * P + b % P);
        v |= static_cast<unsigned>(h) << (8 * j);
      }
      unsigned char* dst = out + row * pitch + col0 + 4 * w;
      if (aligned && col0 + 4 * w + 4 <= width) {
        *reinterpret_cast<unsigned*>(dst) = v;
      } else {
        for (int j = 0; j < 4 && col0 + 4 * w + j < width && 4 * w + j < nt * P; ++j) {
          dst[j] = static_cast<unsigned char>(v >> (8 * j));
        }
      }
    }
  }
};

/// kScaleTiles' second pass for one [rows, cols] matrix whose tiles (Tile, a DualTile) wrote a
/// workspace of their rowwise blocks, [tm][tk], then their colwise ones, [tk][tm]: ctas() CTAs of
/// kThreads with kSmemBytes each; CTA b runs one ScaleGather run of either part. kWide: both
/// parts take ScaleGather's kWide form where both parts' tile rows fit it (KT 3's 6-byte rows do
/// not), else the word loop.
template <class Tile, bool kWide = false>
struct DualScaleGather {
  static constexpr bool kBothWide = kWide && wide_gather_fits(Tile::kTileScaleRow) &&
                                    wide_gather_fits(Tile::kTileScaleCol);
  using Row = ScaleGather<Tile::kBM, Tile::kTileScaleRow, kBothWide>;  // scales: rows of x
  using Col = ScaleGather<Tile::kBK, Tile::kTileScaleCol, kBothWide>;  // scales_t: columns of x
  static constexpr int kThreads = Row::kThreads, kSmemBytes = Row::kSmemBytes;
  static_assert(Row::kSmemBytes == Col::kSmemBytes, "one shared-memory size for both parts");

  /// Workspace bytes of one matrix: both parts' blocks of every tile.
  static __host__ __device__ constexpr long long bytes(long long rows, long long cols) {
    return 2 * ((rows + Tile::kBM - 1) / Tile::kBM) * ((cols + Tile::kBK - 1) / Tile::kBK) *
           Tile::kScaleTileBytes;
  }
  static __device__ __forceinline__ long long row_ctas(long long rows, long long cols) {
    return (rows + Tile::kBM - 1) / Tile::kBM * Row::runs((cols + Tile::kBK - 1) / Tile::kBK);
  }
  static __device__ __forceinline__ long long ctas(long long rows, long long cols) {
    return row_ctas(rows, cols) +
           (cols + Tile::kBK - 1) / Tile::kBK * Col::runs((rows + Tile::kBM - 1) / Tile::kBM);
  }
  static __device__ __forceinline__ void run(const unsigned char* __restrict__ ws,
                                             unsigned char* __restrict__ scales,
                                             unsigned char* __restrict__ scales_t, long long rows,
                                             long long cols, long long b, unsigned char* smem) {
    const long long tiles_m = (rows + Tile::kBM - 1) / Tile::kBM;
    const long long tiles_k = (cols + Tile::kBK - 1) / Tile::kBK;
    if (b < row_ctas(rows, cols)) {
      Row::run_cta(ws, scales, rows, tiles_k, cols / 32, b, smem);
    } else {
      Col::run_cta(ws + tiles_m * tiles_k * Tile::kScaleTileBytes, scales_t, cols, tiles_m,
                   rows / 32, b - row_ctas(rows, cols), smem);
    }
  }
};

}  // namespace mx
}  // namespace ws

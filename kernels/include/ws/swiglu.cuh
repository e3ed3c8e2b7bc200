// warpsmith device library: the pieces the two SwiGLU MXFP8 quantizers share (namespace
// ws::swiglu; kernels/swiglu_quantize_fwd: one output tile, A = act(g, u); kernels/
// swiglu_quantize_bwd: two, dg and du): the sigmoid and clamps of the activation, the tile
// geometry and knob flags (Tile) and the small steps of the columnwise half. The kernels' headers
// have the design and its measurements.
// NOTE: the kernels keep their loops. Every larger helper tried (a whole kernel body, the
// columnwise half, the rowwise chunk, the CTA origin, the staged column quantizer) compiled to
// other SASS: sm_100a's ptxas allocates by PTX register order, sm_90a's address arithmetic moved.
#pragma once

#include "ws/memory.cuh"
#include "ws/mx_block.cuh"
#include "ws/tile_order.cuh"

namespace ws {
namespace swiglu {

constexpr float kLog2e = 1.4426950408889634f;

/// 1 / (1 + 2^y) by the .ftz ex2.approx and rcp.approx (MUFU): FAST_EXP 2's sigmoid with
/// y = -z log2(e), without the denormal fix-ups __expf carries (an FSETP and two predicated
/// FMULs per element on sm_90a). The same bits as FAST_EXP 1's __expf: e only meets 1 + e (a
/// denormal e or exponent input rounds to the same sum), and MUFU.RCP of 1 + e >= 1 flushes in
/// both.
__device__ __forceinline__ float rcp_one_plus_exp2(float y) {
  float e, r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(y));
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(1.0f + e));
  return r;  // 1 + e = +Inf (z < -88) gives 0
}

/// x * sigmoid(z), kFastExp as the FAST_EXP knob: 1 __expf and __fdividef, 2 rcp_one_plus_exp2,
/// 0 expf and IEEE division. 1 + e = +Inf (z < -88) gives x * 0 in the fast forms.
template <int kFastExp>
__device__ __forceinline__ float times_sigmoid(float x, float z) {
  if constexpr (kFastExp == 2) {
    return x * rcp_one_plus_exp2(z * -kLog2e);
  } else if constexpr (kFastExp != 0) {
    return __fdividef(x, 1.0f + __expf(-z));
  } else {
    return x / (1.0f + expf(-z));
  }
}

template <int kFastExp>
__device__ __forceinline__ float sigmoid(float z) {
  return times_sigmoid<kFastExp>(1.0f, z);
}

/// The clamped variant's gate, min(g, 7), NaN kept (torch.clamp). kLean: one FMNMX.NAN (min.NaN);
/// else a compare and a select.
template <bool kLean>
__device__ __forceinline__ float clamp_gate(float g) {
  if constexpr (kLean) {
    float gc;
    asm("min.NaN.f32 %0, %1, 0f40E00000;" : "=f"(gc) : "f"(g));
    return gc;
  } else {
    return g > 7.0f ? 7.0f : g;
  }
}

/// The clamped variant's up input, clamp(u, -7, 7), NaN kept; kLean as clamp_gate.
template <bool kLean>
__device__ __forceinline__ float clamp_up(float u) {
  if constexpr (kLean) {
    float uc;
    asm("max.NaN.f32 %0, %1, 0fC0E00000;" : "=f"(uc) : "f"(u));
    asm("min.NaN.f32 %0, %1, 0f40E00000;" : "=f"(uc) : "f"(uc));
    return uc;
  } else {
    return u > 7.0f ? 7.0f : (u < -7.0f ? -7.0f : u);
  }
}

/// A CTA's tile and the knobs both quantizers share: kOutputs bf16 tiles (1: A; 2: dg and du,
/// the outputs' columns c and I + c) of kBlockM x kBlockI per CTA of kThreads threads, quantized
/// rowwise into q [M, kOutputs I] + scales and columnwise into q_t [kOutputs I, M] + scales_t.
/// kFloor: floor scales, else rceil. kStoreCs (STORE_CS): 1 st.global.cs for q and q_t, 2 q_t
/// only, 0 none. kStage (QT_STAGE): q_t and scales_t staged over the dead tiles, then whole-row
/// stores; else stored from registers. kGroupI (GROUP_I): column tiles per CTA group (0: all).
/// kSelect (RSEL): the branch-free rceil scales. kScaleTilesKnob (SCALE_TILES; taken when staged
/// with kBlockM and kBlockI multiples of 64): the tile's scale blocks go whole into a workspace,
/// kOutputs rowwise parts [tm][ti] then kOutputs colwise parts [ti][tm], for a second launch.
template <int kBlockM_, int kBlockI_, int kThreads_, int kOutputs_, bool kFloor_, int kStoreCs,
          bool kStage_, int kGroupI_, bool kSelect_, int kScaleTilesKnob>
struct Tile {
  static constexpr int kBlockM = kBlockM_;
  static constexpr int kBlockI = kBlockI_;
  static constexpr int kThreads = kThreads_;
  static constexpr int kOutputs = kOutputs_;
  static constexpr int kRowBlocks = kBlockM / 32;
  static constexpr int kRowChunks = kBlockI / 8;  // 16-byte chunks per tile row
  static constexpr int kTileChunks = kBlockM * kRowChunks;
  static constexpr int kChunksPerThread = (kTileChunks + kThreads - 1) / kThreads;
  static constexpr int kColTasks = kOutputs * (kBlockI / 2) * kRowBlocks;  // h, pair, row block
  static constexpr int kTasksPerThread = (kColTasks + kThreads - 1) / kThreads;
  static constexpr int kTileBytes = kOutputs * kBlockM * kBlockI * 2;
  // Staged q_t: kOutputs * kBlockI rows (output 0's columns, then 1's) of kBlockM bytes.
  static constexpr int kQtRows = kOutputs * kBlockI;
  static constexpr int kQtChunks = kBlockM / 16;  // 16-byte chunks per row
  static constexpr int kSwizzleMask = (kQtChunks < 8 ? kQtChunks : 8) - 1;
  static constexpr int kQtStores = kQtRows * kQtChunks;
  static constexpr int kQtStoresPerThread = (kQtStores + kThreads - 1) / kThreads;
  static constexpr bool kFloor = kFloor_;
  static constexpr bool kStoreCsQ = kStoreCs == 1;
  static constexpr bool kStoreCsQt = kStoreCs == 1 || kStoreCs == 2;
  static constexpr bool kStage = kStage_;
  static constexpr int kGroupI = kGroupI_;
  static constexpr bool kSelect = kSelect_;
  static constexpr bool kScaleTiles =
      kScaleTilesKnob != 0 && kStage && kBlockM % 64 == 0 && kBlockI % 64 == 0;
  static constexpr int kScaleTileBytes = kBlockM * kBlockI / 32;  // one output's, each way
  static_assert(kBlockM % 32 == 0 && kBlockI % 32 == 0, "whole MX blocks");
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps");
  static_assert(kQtRows * kBlockM <= kTileBytes, "q_t stage fits the tile");
  static_assert(kGroupI >= 0, "GROUP_I");
  static_assert((kQtChunks & (kQtChunks - 1)) == 0, "BLOCK_M / 16: a power of two");

  /// CTA order: (M tile, I tile) of CTA bid. GROUP_I 0: I tiles fastest over the whole row
  /// (the CTAs resident together read whole input rows, and write each q_t row in pieces of
  /// BLOCK_M bytes from CTAs col_tiles apart). Else groups of GROUP_I I tiles, M tiles fastest
  /// inside a group: the resident CTAs read GROUP_I * BLOCK_I * 2 contiguous bytes of each input
  /// row and write runs of (resident CTAs / GROUP_I) * BLOCK_M bytes of each q_t row.
  static __device__ __forceinline__ void tile_of(int bid, int m_tiles, int col_tiles, int& mt,
                                                 int& it) {
    ws::mx::grouped_tile<kGroupI, true>(bid, m_tiles, col_tiles, mt, it);
  }

  /// Byte offset of 16-byte chunk `ch` of staged q_t row `k` (row pitch BLOCK_M bytes): lanes p
  /// write rows 2p and 2p+1 at the same ch, so row/2 picks the chunk slot (8 lanes, 8 bank
  /// groups).
  static __device__ __forceinline__ int qt_offset(int k, int ch) {
    return k * kBlockM + ((ch ^ ((k >> 1) & kSwizzleMask)) << 4);
  }

  /// Columns 2p and 2p + 1 of 32-row block rb of one output's tile: v[j] holds row j's pair
  /// (32-bit reads; a warp reads 128 contiguous bytes of a tile row: conflict-free).
  static __device__ __forceinline__ void load_column_pair(const unsigned short (*tile)[kBlockI],
                                                          int rb, int p, unsigned (&v)[32]) {
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      v[j] = *reinterpret_cast<const unsigned*>(&tile[rb * 32 + j][2 * p]);
    }
  }

  /// QT_STAGE 0: quantizes a column pair's row block v (load_column_pair) straight into q_t rows
  /// row, row + 1 at 32-row block mb, and their scales into scales_t.
  static __device__ __forceinline__ void store_column_pair(const unsigned (&v)[32], long long row,
                                                           int mb, int M, int m_blocks,
                                                           unsigned char* __restrict__ q_t,
                                                           unsigned char* __restrict__ scales_t) {
    unsigned char* qt = q_t + row * M + mb * 32;
    unsigned char* st = scales_t + row * m_blocks + mb;
    ws::mx::quantize_column_pair<kFloor, kStoreCsQt>(v, qt, qt + M, st, st + m_blocks);
  }

  /// Stages the q bytes of a column pair's row block rb (qa: column 2p, qb: 2p + 1) as 16-byte
  /// chunks 2 rb, 2 rb + 1 of staged q_t rows k, k + 1.
  static __device__ __forceinline__ void stage_column_pair(unsigned base, int k, int rb,
                                                           const unsigned (&qa)[8],
                                                           const unsigned (&qb)[8]) {
    ws::store_shared16(base + qt_offset(k, 2 * rb), qa[0], qa[1], qa[2], qa[3]);
    ws::store_shared16(base + qt_offset(k, 2 * rb + 1), qa[4], qa[5], qa[6], qa[7]);
    ws::store_shared16(base + qt_offset(k + 1, 2 * rb), qb[0], qb[1], qb[2], qb[3]);
    ws::store_shared16(base + qt_offset(k + 1, 2 * rb + 1), qb[4], qb[5], qb[6], qb[7]);
  }

  /// One scales_t row's blocks_valid staged bytes (src) to dst: one 32-bit store per 4 blocks
  /// when the row is whole and dst aligned, else bytes.
  static __device__ __forceinline__ void store_scale_row(unsigned char* dst,
                                                         const unsigned char* src,
                                                         int blocks_valid) {
    if constexpr (kRowBlocks % 4 == 0) {
      if (blocks_valid == kRowBlocks && (reinterpret_cast<size_t>(dst) & 3) == 0) {
#pragma unroll
        for (int b = 0; b < kRowBlocks; b += 4) {
          *reinterpret_cast<unsigned*>(dst + b) =
              src[b] | (src[b + 1] << 8) | (src[b + 2] << 16) | (src[b + 3] << 24);
        }
        return;
      }
    }
    for (int b = 0; b < blocks_valid; ++b) dst[b] = src[b];
  }

  /// SCALE_TILES, a ragged tile: zeros' scale (0) into the pad rows (>= rows) and columns
  /// (>= cols) of its rowwise scale blocks [kBlockM][kBlockI / 32], one per output, `part`
  /// bytes apart, so the gather's 16-byte loads read no workspace byte left unwritten. Called
  /// once the tile is done, and not inlined: a store beside each quad's (in or not) took the
  /// sm_90a backward kernel from 80 registers to 91 at rceil clamped (2 CTAs per SM, 0.86-0.87x on
  /// the H200 in s56c3), and this loop inlined at the end to 93.
  static __device__ __noinline__ void zero_pad_row_scales(unsigned char* blocks, long long part,
                                                          int rows, int cols) {
    constexpr int kBlocksPerRow = kBlockI / 32;
    for (int b = threadIdx.x; b < kBlockM * kBlocksPerRow; b += kThreads) {
      const int r = b / kBlocksPerRow, col = (b % kBlocksPerRow) * 32;
      if (r >= rows || col >= cols) {
#pragma unroll
        for (int h = 0; h < kOutputs; ++h) blocks[h * part + b] = 0;
      }
    }
  }
};

}  // namespace swiglu
}  // namespace ws

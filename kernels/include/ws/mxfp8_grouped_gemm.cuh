// warpsmith device library: the MXFP8 grouped GEMM core of mxfp8_grouped_gemm_fwd, _dgrad, _wgrad.
// Operands: A [rows, depth] and B [cols, depth] E4M3, both contiguous along the
// contraction, with E8M0 scales [row, depth/32] per 32-element block; out = sum over blocks of
// 2^(Sa-127) * 2^(Sb-127) * (block dot product), accumulated in fp32.
//  - ws::kFwd form (fwd, and dgrad with N and K renamed): rows are a group's tokens, B is expert
//    g's [cols, depth] slice of a 3-D [E, cols, depth] tensor; out [tokens, cols] bf16.
//  - ws::kWgrad form: depth is a group's tokens, A [rows, tokens], B [cols, tokens];
//    out [E, rows, cols] fp32; an empty group's tile is stored as zeros.
//  - ws::kFwdT form (sm_90a kRegAPreB only): kFwd transposed, A is expert g's [cols, depth]
//    slice (the register operand), B the group's tokens (converted first, BN-token tiles per
//    group); the tile's fragment is stored transposed into out [tokens, cols] bf16.
// Machinery (ws/ptx_sm90.cuh, ws/wgmma.cuh, ws/tcgen05.cuh, ws/tile_scheduler.cuh): persistent CTAs
// of 384 threads over the group cursor's tiles (128 x BN), TMA rings on mbarriers; warpgroup 0
// produces, warpgroups 1-2 consume. Strategies on sm_90a (no hardware block scaling):
//  - kPromote (A): TMA loads E4M3 k-blocks of 128 (SW128); warps 1-3 stage the blocks' scales as
//    fp32 2^(S-127) in shared memory; each consumer warpgroup issues one QGMMA m64nBNk32 per MX
//    block into a fresh register fragment (scale-d = 0) and promotes it, acc += (part * sa) * sb,
//    with the next block's QGMMA already in flight (two fragments) to overlap the FP32 work.
//  - kDequant (B): TMA loads raw E4M3 k-blocks of 64 (no swizzle); warps 1-3 convert them to bf16
//    times the block scale (exact) into 128-byte-swizzled tiles; consumers run HGMMA m64nBNk16.
// sm_100a (whatever the knob) loads kPromote's stages and runs the block-scaled MMA: warps 1-2
// write each stage's scales as two 128x4 blocked tiles (ws/tcgen05_block_scaled.cuh), warp 3
// copies them into TMEM (tcgen05.cp) and issues tcgen05.mma kind::mxf8f6f4.block_scale (K = 32, one
// per MX block) into a double-buffered TMEM accumulator that warps 4-11 drain. The tensor core
// applies 2^(Sa+Sb-254) to each block's dot product: block terms below fp32's normal range may
// flush to zero where the reference's ldexpf keeps a subnormal (< 2^-126, far under the gemm
// tolerance's absolute term); 0xFF scales are made NaN rows / columns in the epilogue, not left
// to the MMA's decoding.
#pragma once

#include <cuda_bf16.h>

#include "ws/bulk_copy.cuh"
#include "ws/gemm.cuh"
#include "ws/memory.cuh"
#include "ws/mx_gemm.cuh"
#include "ws/ptx_sm90.cuh"
#include "ws/tcgen05.cuh"
#include "ws/tcgen05_block_scaled.cuh"
#include "ws/tile_scheduler.cuh"
#include "ws/wgmma.cuh"

namespace ws {
namespace mxg {

enum Strategy { kPromote = 0, kDequant = 1, kRegA = 2, kRegAPreB = 3 };

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
constexpr bool kSm100 = true;
#else
constexpr bool kSm100 = false;
#endif

constexpr int cmin(int a, int b) { return a < b ? a : b; }

/// Stage bytes of a strategy: raw E4M3 A and B, plus fp32 scales (kPromote) or bf16 tiles
/// (kDequant). The plan's smem is min(STAGES, kSmemCap / stage) * stage + kSmemExtra.
constexpr int stage_bytes(int strategy, int bn) {
  return strategy == kPromote ? (128 + bn) * 144
         : strategy == kDequant ? (128 + bn) * 192
         : strategy == kRegA    ? 9216 + 192 * bn   // raw A, raw B, bf16 B, A's scales
                                : 9216 + 128 * bn;  // kRegAPreB: raw A, bf16 B, A's scales
}
constexpr int kSmemCap = 227 * 1024 - 6144;  // 226304
constexpr int kSmemExtra = 6144;             // 1024 alignment, barriers, offs table

/// kFwdT's staged store (knob EPI) for consumer warpgroup cw: its fragment (rows: output columns
/// o.col0 + 64cw.., columns: kBN output rows, i.e. tokens) is written transposed into shared
/// memory as kBN token rows of 64 bf16 (pitch 144 bytes: a warp's pair writes hit 32 banks),
/// paired by store_transposed's lane exchange (below); then each thread bulk-copies kBN / 128
/// token rows of 128 bytes (rows past the group's end and columns past N skipped). Named barrier
/// 1 + cw.
/// NOTE: the exchange loop is store_transposed's, written out again: one helper for both (tried)
/// selected lo / hi before packing, 2.3x the FSEL and F2FP here and other SASS in _short.
template <int kBN>
struct StagedStoreT {
  static constexpr int kPitch = (64 + 8) * 2;
  static constexpr int kBytes = kBN * kPitch;  // per consumer warpgroup
  uint32_t base;

  __device__ __forceinline__ void store(__nv_bfloat16* out, const float (&acc)[kBN / 2],
                                        const OutTile& o, int cw) const {
    const int t128 = threadIdx.x % 128, lane = threadIdx.x % 32;
    bulk_wait_group_read<0>();  // this thread's rows of the previous tile left the staging
    named_bar_sync(1 + cw, 128);
    const int r = 16 * (t128 / 32) + lane / 4;  // fragment rows r, r + 8 of the warpgroup's 64
    const bool even = (r & 1) == 0;
    unsigned char* rows = static_cast<unsigned char*>(__cvta_shared_to_generic(base));
#pragma unroll
    for (int q = 0; q < kBN / 8; ++q) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float v0 = acc[4 * q + 2 * h], v1 = acc[4 * q + 2 * h + 1];  // row r, cols c, c + 1
        const float got = __shfl_xor_sync(0xFFFFFFFFu, even ? v1 : v0, 4);
        const int col = r + 8 * h - (even ? 0 : 1);  // the pair's first output column
        const int tok = 8 * q + 2 * (lane % 4) + (even ? 0 : 1);
        *reinterpret_cast<uint32_t*>(rows + tok * kPitch + 2 * col) =
            even ? pack_bf16(v0, got) : pack_bf16(got, v1);
      }
    }
    fence_proxy_async_shared();  // the staged rows, before the async proxy reads them
    named_bar_sync(1 + cw, 128);
    const int col0 = o.col0 + 64 * cw, cols = cmin(64, o.ncols - col0);
    if (cols <= 0) return;
#pragma unroll
    for (int i = 0; i < (kBN + 127) / 128; ++i) {
      const int tok = t128 + 128 * i;
      if (tok < kBN && tok < o.rows_left) {
        bulk_store_1d(out + (o.row0 + tok) * o.ncols + col0, base + tok * kPitch, 2 * cols);
        bulk_commit_group();
      }
    }
  }
};

/// The output's element type per form: fp32 weight gradients, bf16 otherwise.
template <int kForm>
struct OutOf {
  using type = __nv_bfloat16;
};
template <>
struct OutOf<kWgrad> {
  using type = float;
};

/// kScalePipe (knob SCALE_PIPE, sm_90a only): 0 = the scale paths as first verified on the H200
/// (kPromote: one byte load and store per scale, serialized; kDequant: a stage's bytes loaded right
/// before its conversion); 1 = scale loads issued one stage ahead, kPromote's as one 32-bit word
/// per row (four blocks) into the paired layouts that the consumers read with LDS.64 / LDS.128;
/// 2 = as 1, and kPromote's consumers read a block's scales before waiting for its QGMMA (the
/// loads' latency hidden behind the wait instead of stalling the first FMULs: ncu, session 12),
/// with the column scales prefetched two LDS.128 ahead and the QGMMA descriptors built once per
/// stage. kRegA / kRegAPreB: 2 = each consumer converts the next stage's A fragment while this
/// stage's HGMMAs run (0 and 1: one fragment, converted after the previous stage's wait).
template <int kForm_, int kKnobStrategy, int kBN_, int kKnobStages, int kGroupM_,
          int kScalePipe_ = 0, int kPdl_ = 0, int kEpi_ = 0, int kFuse_ = 0>
struct Config {
  // kFwdT (fwd / dgrad's transposed form: the weights are the register operand, the tokens the
  // converted one) is sm_90a's; sm_100a runs the block-scaled kFwd GEMM whatever the knob.
  static constexpr int kForm = kSm100 && kForm_ == kFwdT ? kFwd : kForm_;
  static constexpr bool kScalePipe = kScalePipe_ != 0;
  static constexpr bool kScalesEarly = kScalePipe_ >= 2;
  static_assert(kScalePipe_ >= 0 && kScalePipe_ <= 2, "SCALE_PIPE: 0, 1 or 2");
  // sm_100a's block-scaled MMA reads kPromote's stage (SW128 E4M3 k-blocks of 128 + scales),
  // at most 128 columns wide (one 128x4 blocked scale tile for B; the plan's tma_b box agrees).
  static constexpr int kStrategy = kSm100 ? kPromote : kKnobStrategy;
  // kRegAPreB: kRegA with B's bf16 tiles made by a first launch (pre_dequantize_b) and copied
  // in by the producer: no transform of B in the GEMM.
  static constexpr bool kRegAFamily = kStrategy == kRegA || kStrategy == kRegAPreB;
  static constexpr bool kPreB = kStrategy == kRegAPreB;
  // kPreB under a pdl launch (knob PDL): the producer waits for the first launch (griddep_wait)
  // before its first bulk copy of the tiles, not before the kernel's prologue and A's first load.
  static constexpr bool kPdl = kPdl_ != 0 && kPreB;
  static_assert(kForm != kFwdT || kPreB, "kFwdT: STRATEGY=3's pipeline, operands swapped");
  // Knob FUSE (kFwdT): the tokens' bf16 tiles made inside the GEMM by warps 2-3 of every CTA
  // (fused_convert_fwdt), each tile published through a counter the producer waits on, instead
  // of by a first launch that runs alone (~18% of the E128 K2048 forward, session 24).
  // The value is the converting warps (the last of warps 1-3); the others stage the scales.
  static constexpr bool kFuse = kFuse_ != 0 && kForm == kFwdT;
  static_assert(kFuse_ >= 0 && kFuse_ <= 2, "FUSE: 0, or 1 or 2 converting warps");
  static constexpr int kStagerWarps = kFuse ? 3 - kFuse_ : 3;
  static constexpr int kBM = 128, kBN = kSm100 && kBN_ > 128 ? 128 : kBN_, kGroupM = kGroupM_;
  static constexpr int kThreads = 384;
  static constexpr int kBK = kStrategy == kPromote ? 128 : 64;  // contraction elements per stage
  static constexpr int kBlocks = kBK / 32;                        // MX blocks per stage
  static constexpr int kRawA = kBM * kBK, kRawB = kPreB ? 0 : kBN * kBK;  // E4M3 bytes
  static constexpr int kBf16A = kStrategy == kDequant ? kBM * kBK * 2 : 0;  // SW128 bf16
  static constexpr int kBf16B = kStrategy != kPromote ? kBN * kBK * 2 : 0;
  static constexpr int kScaleA = kStrategy != kDequant ? kBlocks * kBM * 4 : 0;  // (blocks, BM)
  static constexpr int kScaleB = kStrategy == kPromote ? kBlocks * kBN * 4 : 0;  // (blocks, BN)
  static constexpr int kStageBytes = kRawA + kRawB + kBf16A + kBf16B + kScaleA + kScaleB;
  // The plan sizes smem for the knob's strategy; the stage count follows from that budget.
  static constexpr int kKnobStageBytes = stage_bytes(kKnobStrategy, kBN_);
  // Knob EPI (STRATEGY=3's GEMMs, sm_90a): the consumers' output rows staged in shared memory
  // after the ring and stored by cp.async.bulk (ws::StagedStore). Sized from the knobs alone,
  // like the ring, so the plan's smem says the same on both architectures. kFwdT stages the
  // transposed tile (StagedStoreT); kWgrad's fp32 rows go in passes of 64 columns (a whole
  // 128 x 256 fp32 tile would not fit beside the ring). Off in the short-group kernel's config.
  static constexpr bool kEpi = kEpi_ != 0 && kKnobStrategy == kRegAPreB;
  using Staged = StagedStore<kBN_, typename OutOf<kForm_>::type, kForm_ == kWgrad ? 64 : kBN_>;
  static constexpr int kEpiBytes = !kEpi              ? 0
                                   : kForm_ == kFwdT ? 2 * StagedStoreT<kBN_>::kBytes
                                                     : 2 * Staged::kBytes;  // see the plans
  static constexpr int kBudget =
      cmin(kKnobStages, (kSmemCap - kEpiBytes) / kKnobStageBytes) * kKnobStageBytes;
  static constexpr int kStages = kBudget / kStageBytes;
  // Smem offsets from the 1024-aligned base: the swizzled tiles first.
  static constexpr int kOffA = 0;  // kPromote: raw A (SW128); kDequant: bf16 A (SW128)
  static constexpr int kOffB = kStages * (kStrategy == kPromote ? kRawA : kBf16A);
  static constexpr int kOffX = kOffB + kStages * (kStrategy == kPromote ? kRawB : kBf16B);
  // kPromote: scales (A then B per stage); kDequant: raw A then raw B per stage; kRegA: raw A,
  // raw B, then A's fp32 scales (the sa_slot layout).
  static constexpr int kXBytes =
      kStrategy == kPromote ? kScaleA + kScaleB : kRawA + kRawB + kScaleA;
  static constexpr int kMaxE = 1024;  // offs held in shared memory
  // Warp roles. sm_90a: warp 0 TMA; warps 1-3 transform; warpgroups 1-2 consume.
  // sm_100a: warp 0 TMA; warps 1-2 scales; warp 3 TMEM + MMA; warps 4-11 epilogue.
  static constexpr int kXformWarps = kSm100 ? 2 : kStagerWarps;  // kFuse: the rest convert
  static constexpr int kXformThreads = 32 * kXformWarps;
  static constexpr int kAccCols = tmem_columns(2 * kBN);
  // sm_90a register split (setmaxnreg; 128 * (producer + 2 * consumer) <= 64K): kPromote's
  // consumers hold three (64, BN) fragments, kDequant's one, and its transform warps need room.
  // kRegA: the transform warps convert only B; consumers hold one (64, BN <= 256) fragment.
  static constexpr int kProducerRegs =
      kStrategy == kPromote ? 56 : kStrategy == kDequant ? 152 : 120;
  static constexpr int kConsumerRegs =
      kStrategy == kPromote ? 224 : kStrategy == kDequant ? 176 : 192;
};

/// The problem as the group cursor sees it: kFwd (n = output cols, k = depth), kWgrad (n = rows,
/// k = cols); sld = bytes per scale row (depth / 32, or total tokens / 32 for kWgrad).
struct Problem {
  int E, n, k, sld;
};

/// One tile's operand view: global A row / B scale row of local row / col 0, valid counts,
/// contraction start (tokens for kWgrad) and depth.
struct TileView {
  long long a_row0, b_row0;
  int a_rows, b_cols, depth0, depth, col0;
};

template <class Cfg>
__device__ __forceinline__ TileView view_of(const GroupTile<Cfg::kForm>& tl, const Problem& p) {
  TileView v;
  v.col0 = tl.tn * Cfg::kBN;
  if (Cfg::kForm == kFwdT) {  // A: expert g's b rows; B: the group's tokens (converted first)
    v.a_row0 = static_cast<long long>(tl.g) * p.n + tl.tm * Cfg::kBM;
    v.a_rows = p.n - tl.tm * Cfg::kBM;
    v.b_row0 = tl.s + v.col0;
    v.b_cols = tl.e - tl.s - v.col0;
    v.depth0 = 0;
    v.depth = p.k;
  } else if (Cfg::kForm == kWgrad) {
    v.a_row0 = tl.tm * Cfg::kBM;
    v.a_rows = p.n - tl.tm * Cfg::kBM;
    v.b_row0 = v.col0;
    v.b_cols = p.k - v.col0;
    v.depth0 = tl.s;
    v.depth = tl.e - tl.s;
  } else {
    v.a_row0 = tl.s + tl.tm * Cfg::kBM;
    v.a_rows = tl.e - tl.s - tl.tm * Cfg::kBM;
    v.b_row0 = static_cast<long long>(tl.g) * p.n + v.col0;
    v.b_cols = p.n - v.col0;
    v.depth0 = 0;
    v.depth = p.k;
  }
  return v;
}

template <class Cfg>
using Cursor = GroupCursor<Cfg::kForm, Cfg::kBM, Cfg::kBN, Cfg::kGroupM>;

/// Shared-memory map of one CTA.
template <class Cfg>
struct Smem {
  uint32_t base, full, empty, ready, acc_full, acc_empty, tmem_slot;
  uint32_t staged;  // Cfg::kEpi: the staged output rows, after the ring
  __device__ uint32_t a(uint32_t s) const {  // SW128 operand A of stage s
    return base + Cfg::kOffA + s * (Cfg::kStrategy == kPromote ? Cfg::kRawA : Cfg::kBf16A);
  }
  __device__ uint32_t b(uint32_t s) const {
    return base + Cfg::kOffB + s * (Cfg::kStrategy == kPromote ? Cfg::kRawB : Cfg::kBf16B);
  }
  __device__ uint32_t x(uint32_t s) const { return base + Cfg::kOffX + s * Cfg::kXBytes; }
};

// ---- kRegAPreB: B's bf16 tiles, made once by a first launch ----

/// Byte offset of B's bf16 tile (expert e, column tile tn, 64-K block kb) in the workspace: the
/// kFwd view's B [E, n, k] as E x ceil(n / BN) x ceil(k / 64) tiles of BN rows of 128 bytes.
template <class Cfg>
__device__ __forceinline__ long long pre_b_offset(int e, int tn, int kb, const Problem& p) {
  const int tiles_n = (p.n + Cfg::kBN - 1) / Cfg::kBN, kblocks = (p.k + Cfg::kBK - 1) / Cfg::kBK;
  return ((static_cast<long long>(e) * tiles_n + tn) * kblocks + kb) * Cfg::kBf16B;
}

/// kWgrad: B (xt [k, tokens]) in 64-token blocks that restart at every group start (group g's
/// block j is padded block qbase(g) + j, qbase(g) = sum of ceil(len / 64) over the groups before
/// g), so a tile's k-blocks are whole tiles; at most ceil(tokens / 64) + E of them per column
/// tile tn. Tile (tn, q) at (tn * that bound + q) * BN * 128 bytes.
__device__ __forceinline__ int wgrad_padded_blocks(const Problem& p) {
  return (p.sld * 32 + 63) / 64 + p.E;  // sld = tokens / 32
}
template <class Cfg>
__device__ __forceinline__ long long pre_b_offset_wgrad(int tn, int q, const Problem& p) {
  return (static_cast<long long>(tn) * wgrad_padded_blocks(p) + q) * Cfg::kBf16B;
}

/// kFwdT: B (the tokens [M, k]) in BN-token tiles that restart at every group start (group g's
/// tile j is padded tile qbase(g) + j), each as ceil(k / 64) SW128 tiles of BN rows: tile
/// (T, kb) at (T * ceil(k / 64) + kb) * BN * 128 bytes; at most ceil(M / BN) + E tiles T.
template <class Cfg>
__device__ __forceinline__ long long pre_b_offset_fwdt(int T, int kb, const Problem& p) {
  return (static_cast<long long>(T) * ((p.k + Cfg::kBK - 1) / Cfg::kBK) + kb) * Cfg::kBf16B;
}

/// Words [0, n) of w zeroed by the whole grid (a first launch's counters for its GEMM).
__device__ __forceinline__ void grid_zero(unsigned* w, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) w[i] = 0;
}

/// qbase(g) for groups walked forward: the padded kRows-token blocks of the groups before g.
template <int kRows>
struct PaddedBlocks {
  int g = 0, qbase = 0;
  __device__ int at(int g_to, const int* offs) {
    for (; g < g_to; ++g) qbase += ((offs[g] - (g == 0 ? 0 : offs[g - 1])) + kRows - 1) / kRows;
    return qbase;
  }
};

/// The same sums for a whole block at once: qb[g] = qbase(g) for g <= E (qb[E]: all blocks), in
/// E + 1 ints of shared memory; the groups' counts in parallel, then one thread's prefix sum.
template <int kRows>
__device__ __forceinline__ void padded_prefix(const int* offs, int E, int* qb) {
  for (int g = threadIdx.x; g < E; g += blockDim.x)
    qb[g + 1] = (offs[g] - (g == 0 ? 0 : offs[g - 1]) + kRows - 1) / kRows;
  __syncthreads();
  if (threadIdx.x == 0) {
    qb[0] = 0;
    for (int g = 0; g < E; ++g) qb[g + 1] += qb[g];
  }
  __syncthreads();
}

/// The group g with qb[g] <= q < qb[g + 1], for q < qb[E] (binary search; empty groups skipped).
__device__ __forceinline__ int padded_group(const int* qb, int E, int q) {
  int lo = 0, hi = E - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (qb[mid] <= q) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

/// A converted 16-element chunk (chunk c of a 64-element row r, as two 16-byte halves) stored
/// into row r of an SW128 bf16 tile: half j at 16-byte slot j ^ (r % 8).
__device__ __forceinline__ void store_chunk_sw128(unsigned char* row, int c, int r,
                                                  const uint4 (&o)[2]) {
  *reinterpret_cast<uint4*>(row + (((2 * c) ^ (r % 8)) * 16)) = o[0];
  *reinterpret_cast<uint4*>(row + (((2 * c + 1) ^ (r % 8)) * 16)) = o[1];
}

/// The first launch of STRATEGY=3: B's tiles (tile = outer * inner_count + inner, as
/// pre_b_offset / pre_b_offset_wgrad number them) converted exactly (dequant16_bf16, as the
/// transform warps of STRATEGY=2 do per CTA and stage) into the shared-memory image the HGMMA
/// reads: row r's 16-byte chunk j at j ^ (r % 8) (SW128; the stage buffers are 1024-aligned), so
/// the GEMM's producer moves each tile with one bulk copy. One thread per 16 elements (4 threads
/// per 64-element row, so a warp's loads and stores are whole sectors), four of them per pass a
/// grid apart, their loads issued before any conversion: one load in flight per thread reached 56%
/// of DRAM bandwidth, one tile row per thread (64 B in flight but half-sector requests) less.
/// src(outer, inner, r, c) gives the E4M3 row's chunk c (a pointer to its 16 bytes) and its scale
/// byte, or nullptr where the tile holds zeros. Chunk indices fit in int: the workspace (at most
/// 8 GB) holds < 2^28 chunks, numbered tile by tile (c, then r, then inner, then outer): a warp
/// reads 64-byte halves of 8 source rows, the other halves a tile later. (Numbering them along
/// the source rows instead, PRE_ORDER=1 until session 24, changed nothing: 0.996-1.010x.)
template <class Cfg, class Src>
__device__ __forceinline__ void pre_dequantize_tiles(unsigned char* pre_b, long long tiles,
                                                     int inner_count, Src src) {
  static_assert(Cfg::kPreB && Cfg::kBK == 64, "STRATEGY=3's 64-K tiles");
  constexpr int kUnroll = 4;
  const int chunks = static_cast<int>(tiles * Cfg::kBN * 4);
  const int stride = gridDim.x * blockDim.x;
  // Chunk i's row in its tile, its tile (outer * inner_count + inner), and outer and inner.
  // (Written inline instead, these change ptxas's allocation of the kFwdT first launches,
  // dgrad's measured default among them: kept as they were measured.)
  const auto row_of = [](int i) { return i / 4 % Cfg::kBN; };
  const auto tile_of = [](int i) { return i / 4 / Cfg::kBN; };
  const auto outer_of = [inner_count](int, int tile) { return tile / inner_count; };
  const auto inner_of = [inner_count](int, int tile) { return tile % inner_count; };
  for (int i0 = blockIdx.x * blockDim.x + threadIdx.x; i0 < chunks; i0 += kUnroll * stride) {
    uint4 v[kUnroll];
    unsigned scale[kUnroll];
    bool on[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = i0 + u * stride, c = i % 4, r = row_of(i), tile = tile_of(i);
      const unsigned char* raw =
          i < chunks ? src(outer_of(i, tile), inner_of(i, tile), r, c, scale[u]) : nullptr;
      on[u] = raw != nullptr;
      v[u] = on[u] ? __ldg(reinterpret_cast<const uint4*>(raw)) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int i = i0 + u * stride, c = i % 4, r = row_of(i), tile = tile_of(i);
      if (i >= chunks) break;
      uint4 o[2] = {make_uint4(0, 0, 0, 0), make_uint4(0, 0, 0, 0)};
      if (on[u]) mx::dequant16_bf16(v[u], mx::e8m0_to_f32(scale[u]), o);
      store_chunk_sw128(pre_b + static_cast<long long>(tile) * Cfg::kBf16B + r * 128, c, r, o);
    }
  }
}

/// pre_dequantize_rows' default chunk placement: chunk cc at byte 16 * cc of the row, below k.
struct KRowChunks {};
template <class T>
struct IsKRowChunks {
  static constexpr bool value = false;
};
template <>
struct IsKRowChunks<KRowChunks> {
  static constexpr bool value = true;
};

/// PRE_ORDER=2 (kFwd, kDgrad, kFwdT): the same tiles written row by row. A warp takes tile row
/// (outer, r) of every k-tile at once, rows a grid of warps apart; its lanes take the row's
/// 16-element chunks (512 contiguous source bytes per warp load, four loads in flight per lane).
/// A chunk's k-tile and swizzle slot then come from shifts, and the row's source (for kFwdT a
/// binary search over the groups) is found once per row, not once per chunk: orders 0 and 1
/// spent ~140 instructions per chunk on that index math (ncu, E128 K2048, session 24) and ran at
/// 58% of DRAM bandwidth. row_src(outer, r, scales) gives the row's E4M3 bytes and sets its scale
/// row, or returns nullptr for a row of zeros; chunks past k are zeros (k % 32 == 0).
/// kPairStores (PRE_ORDER=3): a chunk's 32 bf16 bytes fill one 32-byte sector of the tile row,
/// which two 16-byte stores write half by half; with it, the lanes of a pair swap halves so that
/// each store instruction writes whole sectors (one lane each half), halving the L2's write
/// requests (order 2 ran L2-bound: 85% L2 throughput at 60% of DRAM bandwidth).
/// kSegChunks (0: whole rows): a warp takes kSegChunks chunks of a row at a time instead, for
/// rows too long and too few to share out whole (wgrad's xt rows: every token of the layer).
/// chunk_at(cc), where given, is chunk cc's byte offset in the source row (its scale at offset
/// / 32) or -1 for zeros; the default is the contiguous k row, 16 * cc below k.
template <class Cfg, bool kPairStores = false, int kSegChunks = 0, class RowSrc,
          class ChunkAt = KRowChunks>
__device__ __forceinline__ void pre_dequantize_rows(unsigned char* pre_b, int outers,
                                                    int inner_count, int k, RowSrc row_src,
                                                    ChunkAt chunk_at = {}) {
  static_assert(Cfg::kPreB && Cfg::kBK == 64, "STRATEGY=3's 64-K tiles");
  static_assert(kSegChunks % (32 * 4) == 0, "segments of whole unrolled passes");
  constexpr int kUnroll = 4;
  constexpr bool kContiguous = IsKRowChunks<ChunkAt>::value;
  const int lane = threadIdx.x % 32, warps = gridDim.x * (blockDim.x / 32);
  const int row_chunks = inner_count * 4, k_chunks = k / 16;
  const int segs = kSegChunks ? (row_chunks + kSegChunks - 1) / kSegChunks : 1;
  const int items = outers * Cfg::kBN * segs;
  for (int item = (blockIdx.x * blockDim.x + threadIdx.x) / 32; item < items; item += warps) {
    const int row = kSegChunks ? item / segs : item;
    const int outer = row / Cfg::kBN, r = row % Cfg::kBN;
    const int c_begin = kSegChunks ? item % segs * kSegChunks : 0;
    const int c_end = kSegChunks ? min(row_chunks, c_begin + kSegChunks) : row_chunks;
    const unsigned char* scales = nullptr;
    const unsigned char* src = row_src(outer, r, scales);
    unsigned char* dst =
        pre_b + static_cast<long long>(outer) * inner_count * Cfg::kBf16B + r * 128;
    // kPairStores: the warp's lanes walk the row together (its shuffles need every lane).
    const int lane_off = kPairStores ? lane : 0;
    for (int c0 = c_begin + (kPairStores ? 0 : lane); c0 < c_end; c0 += 32 * kUnroll) {
      uint4 v[kUnroll];
      unsigned scale[kUnroll];
      bool on[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int cc = c0 + lane_off + 32 * u;
        if constexpr (kContiguous) {
          on[u] = src != nullptr && cc < k_chunks;
          v[u] = on[u] ? __ldg(reinterpret_cast<const uint4*>(src + 16 * cc))
                       : make_uint4(0, 0, 0, 0);
          scale[u] = on[u] ? __ldg(scales + cc / 2) : 0u;
        } else {
          const int off = src != nullptr && cc < c_end ? chunk_at(cc) : -1;
          on[u] = off >= 0;
          v[u] = on[u] ? __ldg(reinterpret_cast<const uint4*>(src + off)) : make_uint4(0, 0, 0, 0);
          scale[u] = on[u] ? __ldg(scales + off / 32) : 0u;
        }
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int cc = c0 + lane_off + 32 * u, c = cc % 4;
        if (!kPairStores && cc >= c_end) break;
        uint4 o[2] = {make_uint4(0, 0, 0, 0), make_uint4(0, 0, 0, 0)};
        if (on[u]) mx::dequant16_bf16(v[u], mx::e8m0_to_f32(scale[u]), o);
        unsigned char* tile_row = dst + static_cast<long long>(cc / 4) * Cfg::kBf16B;
        if constexpr (kPairStores) {
          // Lanes 2j and 2j + 1 hold chunks c and c ^ 1 of one tile row (row_chunks % 4 == 0,
          // so a pair is in or past the row together): the even lane sends its second half,
          // the odd lane its first. Every lane takes part in the shuffles.
          const bool odd = lane & 1;
          const uint4 give = odd ? o[0] : o[1];
          uint4 got;
          got.x = __shfl_xor_sync(0xffffffffu, give.x, 1);
          got.y = __shfl_xor_sync(0xffffffffu, give.y, 1);
          got.z = __shfl_xor_sync(0xffffffffu, give.z, 1);
          got.w = __shfl_xor_sync(0xffffffffu, give.w, 1);
          if (cc < c_end) {
            // Even lane: its half 0, then the odd lane's half 0; odd lane: the even lane's half
            // 1, then its own half 1. Each store: one sector of each pair, both halves.
            const int ce = c & ~1, co = c | 1;
            const int first = odd ? (2 * ce + 1) : (2 * ce), second = odd ? (2 * co + 1) : (2 * co);
            *reinterpret_cast<uint4*>(tile_row + ((first ^ (r % 8)) * 16)) = odd ? got : o[0];
            *reinterpret_cast<uint4*>(tile_row + ((second ^ (r % 8)) * 16)) = odd ? o[1] : got;
          }
        } else {
          store_chunk_sw128(tile_row, c, r, o);
        }
      }
    }
  }
}

/// kFwd: B [E, n, k], tiles (e, tn, kb): outer e * tiles_n + tn, inner kb. Columns past n are
/// zeros (k % 32 == 0, the specs: a chunk is inside or past k whole).
template <class Cfg, int kOrder = 0>
__device__ __forceinline__ void pre_dequantize_fwd(const unsigned char* b,
                                                   const unsigned char* b_scales,
                                                   unsigned char* pre_b, const Problem& p) {
  const int tiles_n = (p.n + Cfg::kBN - 1) / Cfg::kBN, kblocks = (p.k + Cfg::kBK - 1) / Cfg::kBK;
  if constexpr (kOrder != 0) {
    pre_dequantize_rows<Cfg, kOrder == 3>(
        pre_b, p.E * tiles_n, kblocks, p.k,
        [&](int outer, int r, const unsigned char*& scales) -> const unsigned char* {
          const int n = outer % tiles_n * Cfg::kBN + r;
          if (n >= p.n) return nullptr;
          const long long row = static_cast<long long>(outer / tiles_n) * p.n + n;
          scales = b_scales + row * p.sld;
          return b + row * p.k;
        });
  } else {
    pre_dequantize_tiles<Cfg>(
        pre_b, static_cast<long long>(p.E) * tiles_n * kblocks, kblocks,
        [&](int outer, int kb, int r, int c, unsigned& scale) -> const unsigned char* {
          const int n = outer % tiles_n * Cfg::kBN + r, k0 = kb * Cfg::kBK + 16 * c;
          if (n >= p.n || k0 >= p.k) return nullptr;
          const long long row = static_cast<long long>(outer / tiles_n) * p.n + n;
          scale = __ldg(b_scales + row * p.sld + k0 / 32);
          return b + row * p.k + k0;
        });
  }
}

/// kWgrad's tiles (pre_b_offset_wgrad): B = xt [k, tokens], outer tn, inner the padded block q;
/// tokens past a group's end and blocks past the last group are zeros. qbase of every group is
/// computed once per block into qb (E + 1 ints of dynamic shared memory; the same sums as
/// PaddedBlocks), then each row finds its group by binary search.
template <class Cfg, int kOrder = 0>
__device__ __forceinline__ void pre_dequantize_wgrad(const unsigned char* b,
                                                     const unsigned char* b_scales,
                                                     const int* offs, unsigned char* pre_b,
                                                     const Problem& p, int* qb) {
  static_assert(Cfg::kForm == kWgrad, "kWgrad's tiles");
  padded_prefix<64>(offs, p.E, qb);
  const int tokens = p.sld * 32;
  const int tiles_n = (p.k + Cfg::kBN - 1) / Cfg::kBN, qmax = wgrad_padded_blocks(p);
  if constexpr (kOrder != 0) {
    // The row walk along xt's rows (every token), 256 chunks per warp at a time. A tile row's
    // 64 tokens restart at group starts, so each padded block's first token and length (64, a
    // group's last 32, or 0 past the last group) go first into shared memory after qb (8 bytes
    // per block: the plan's smem), one binary search per block instead of one per chunk.
    int2* blocks = reinterpret_cast<int2*>(qb + ((p.E + 2) & ~1));
    for (int q = threadIdx.x; q < qmax; q += blockDim.x) {
      int2 block = make_int2(0, 0);
      if (q < qb[p.E]) {
        const int g = padded_group(qb, p.E, q);
        const int t0 = (g == 0 ? 0 : offs[g - 1]) + (q - qb[g]) * 64;
        block = make_int2(t0, min(64, offs[g] - t0));
      }
      blocks[q] = block;
    }
    __syncthreads();
    pre_dequantize_rows<Cfg, kOrder == 3, 256>(
        pre_b, tiles_n, qmax, p.k,
        [&](int tn, int r, const unsigned char*& scales) -> const unsigned char* {
          const int col = tn * Cfg::kBN + r;
          if (col >= p.k) return nullptr;
          scales = b_scales + static_cast<long long>(col) * p.sld;
          return b + static_cast<long long>(col) * tokens;
        },
        [blocks](int cc) -> int {
          const int2 block = blocks[cc / 4];
          const int c16 = 16 * (cc % 4);
          return c16 < block.y ? block.x + c16 : -1;  // group sizes % 32 == 0: chunks whole
        });
  } else {
    pre_dequantize_tiles<Cfg>(
        pre_b, static_cast<long long>(tiles_n) * qmax, qmax,
        [&](int tn, int q, int r, int c, unsigned& scale) -> const unsigned char* {
          const int col = tn * Cfg::kBN + r;
          if (col >= p.k || q >= qb[p.E]) return nullptr;
          const int lo = padded_group(qb, p.E, q);
          const int t0 = (lo == 0 ? 0 : offs[lo - 1]) + (q - qb[lo]) * 64 + 16 * c;
          if (t0 >= offs[lo]) return nullptr;  // group sizes % 32 == 0: chunks are whole
          scale = __ldg(b_scales + static_cast<long long>(col) * p.sld + t0 / 32);
          return b + static_cast<long long>(col) * tokens + t0;
        });
  }
}

/// kFwdT's tiles (pre_b_offset_fwdt): B = the tokens [M, k] with their scales, only the qb[E]
/// padded tiles the GEMM reads; rows past a group's end are zeros. qb as pre_dequantize_wgrad's.
template <class Cfg, int kOrder = 0>
__device__ __forceinline__ void pre_dequantize_fwdt(const unsigned char* b,
                                                    const unsigned char* b_scales,
                                                    const int* offs, unsigned char* pre_b,
                                                    const Problem& p, int* qb) {
  static_assert(Cfg::kForm == kFwdT, "kFwdT's tiles");
  padded_prefix<Cfg::kBN>(offs, p.E, qb);
  const int kblocks = (p.k + Cfg::kBK - 1) / Cfg::kBK;
  if constexpr (kOrder != 0) {
    pre_dequantize_rows<Cfg, kOrder == 3>(
        pre_b, qb[p.E], kblocks, p.k,
        [&](int T, int r, const unsigned char*& scales) -> const unsigned char* {
          const int g = padded_group(qb, p.E, T);
          const int tok = (g == 0 ? 0 : offs[g - 1]) + (T - qb[g]) * Cfg::kBN + r;
          if (tok >= offs[g]) return nullptr;
          scales = b_scales + static_cast<long long>(tok) * p.sld;
          return b + static_cast<long long>(tok) * p.k;
        });
  } else {
    pre_dequantize_tiles<Cfg>(
        pre_b, static_cast<long long>(qb[p.E]) * kblocks, kblocks,
        [&](int T, int kb, int r, int c, unsigned& scale) -> const unsigned char* {
          const int g = padded_group(qb, p.E, T);
          const int tok = (g == 0 ? 0 : offs[g - 1]) + (T - qb[g]) * Cfg::kBN + r;
          const int k0 = kb * Cfg::kBK + 16 * c;
          if (tok >= offs[g] || k0 >= p.k) return nullptr;
          scale = __ldg(b_scales + static_cast<long long>(tok) * p.sld + k0 / 32);
          return b + static_cast<long long>(tok) * p.k + k0;
        });
  }
}

/// The first launch's body: the tiles for STRATEGY=3 (and kFwdT's), nothing otherwise (sm_100a
/// builds neither; the plan launches this kernel only when the knob says so). qb: kWgrad's and
/// kFwdT's E + 1 ints of dynamic shared memory.
template <class Cfg, int kOrder = 0>
__device__ __forceinline__ void pre_dequantize_b(const unsigned char* b,
                                                 const unsigned char* b_scales, const int* offs,
                                                 unsigned char* pre_b, const Problem& p, int* qb) {
  static_assert(kOrder == 0 || kOrder == 2 || kOrder == 3, "PRE_ORDER: 0, 2 or 3 (1 retired)");
  if constexpr (Cfg::kPreB && Cfg::kForm == kFwdT) {
    pre_dequantize_fwdt<Cfg, kOrder>(b, b_scales, offs, pre_b, p, qb);
  } else if constexpr (Cfg::kPreB && Cfg::kForm == kWgrad) {
    pre_dequantize_wgrad<Cfg, kOrder>(b, b_scales, offs, pre_b, p, qb);
  } else if constexpr (Cfg::kPreB) {
    pre_dequantize_fwd<Cfg, kOrder>(b, b_scales, pre_b, p);
  }
}

// ---- kFwdT under FUSE: the tokens' tiles made inside the GEMM ----

/// FUSE's counters in the workspace, after the ceil(M / BN) + E padded token tiles the first
/// launch would fill (the plan's workspace): [0] the next unit to claim, [1] the highest padded
/// tile a producer has asked for, [2 + T] the rows of padded tile T written so far. The first
/// launch only zeroes them (fused_flags_zero).
template <class Cfg>
__device__ __forceinline__ unsigned* fused_flags(unsigned char* pre_b, int M, const Problem& p) {
  const int tiles = (M + Cfg::kBN - 1) / Cfg::kBN + p.E;
  return reinterpret_cast<unsigned*>(pre_b + pre_b_offset_fwdt<Cfg>(tiles, 0, p));
}
template <class Cfg>
__device__ __forceinline__ void fused_flags_zero(unsigned char* pre_b, int M, const Problem& p) {
  grid_zero(fused_flags<Cfg>(pre_b, M, p), 2 + (M + Cfg::kBN - 1) / Cfg::kBN + p.E);
}

/// FUSE: warps 2-3 of every CTA write the tokens' padded bf16 tiles (pre_dequantize_fwdt's image)
/// while the consumers run. A warp claims kRows rows of a tile at a time from one counter (the
/// next claim issued while the current rows are converted), so tiles complete in the order the
/// GEMM's tiles read them (groups in order) and any CTA that runs makes progress whatever the
/// others do; claims only grow, so a warp finds a tile's group by walking forward. The rows go
/// in steps of one row by 128 chunks, later steps' loads issued before this one's stores (the
/// first form, two rows per claim with a claim, loads, stores and fences in turn, kept the GEMM
/// waiting: 1.04x at E128 K2048, 0.95x at E128 K2880). After its rows a warp publishes them
/// (each lane's proxy fence, then one release add, as a CTA barrier's arrive does); the
/// producer acquires a tile's count of BN before its first bulk copy of it.
/// The conversion keeps at most kFusedAhead tiles ahead of the highest tile a producer has asked
/// for, and its loads skip L1: a first run that converted everything up front, through L1, at
/// E128 K2880, made the GEMM launch 10% slower (ncu: 4.01 ms against 3.63, its L1 hit rate 84%
/// against 97%: the stager's scale loads, evicted by the stream, then wait on L2 every stage);
/// paced, the tiles are also still in L2 when the GEMM reads them (16 tiles of 256 tokens by
/// 2880: 24 MB).
/// xt: the converting threads from 0; b_raw / b_scales: the tokens [tokens, k] and their scales.
constexpr int kFusedAhead = 16;
template <class Cfg>
__device__ __forceinline__ void fused_convert_fwdt(int xt, const unsigned char* b_raw,
                                                   const unsigned char* b_scales,
                                                   const int* offs, unsigned char* pre_b,
                                                   unsigned* flags, const Problem& p) {
  static_assert(Cfg::kFuse && Cfg::kBK == 64, "kFwdT's 64-K tiles");
  constexpr int kRows = 8, kUnits = Cfg::kBN / kRows, kUnroll = 4;
  // Steps in flight: one converting warp per CTA (FUSE=1) must move twice a pair's bytes each,
  // and at two steps it fell behind the GEMM at E128 K2048 (0.88x, session 25).
  constexpr int kDepth = Cfg::kStagerWarps == 2 ? 3 : 2;
  static_assert(Cfg::kBN % kRows == 0, "whole units per tile");
  const int lane = xt % 32;
  const int row_chunks = (p.k + 63) / 64 * 4, k_chunks = p.k / 16;
  const int passes = (row_chunks + 32 * kUnroll - 1) / (32 * kUnroll), steps = kRows * passes;
  const auto tiles_of = [&](int g) {
    return (offs[g] - (g == 0 ? 0 : offs[g - 1]) + Cfg::kBN - 1) / Cfg::kBN;
  };
  int total = 0;
  for (int g = lane; g < p.E; g += 32) total += tiles_of(g);
#pragma unroll
  for (int d = 16; d > 0; d /= 2) total += __shfl_xor_sync(~0u, total, d);
  const unsigned units = static_cast<unsigned>(total) * kUnits;
  griddep_wait();  // under pdl, the counters are zeroed by the previous launch
  struct Step {
    uint4 v[kUnroll];
    unsigned scale[kUnroll];  // 0x100: a chunk of zeros (past k, or a row past the group)
  };
  int g = 0, qbase = 0, qnext = tiles_of(0);
  unsigned next = 0;
  if (lane == 0) next = atomicAdd(flags, 1u);
  for (;;) {
    const unsigned unit = __shfl_sync(~0u, next, 0);
    if (unit >= units) break;
    if (lane == 0) next = atomicAdd(flags, 1u);  // its latency overlaps this unit's rows
    const int T = static_cast<int>(unit / kUnits), r0 = static_cast<int>(unit % kUnits) * kRows;
    // Polled rarely: every SM's converting warps read this one word, and a word polled every
    // few hundred ns by 132 SMs keeps one L2 slice, which every CTA's loads also cross, busy.
    while (T > static_cast<int>(*reinterpret_cast<volatile unsigned*>(flags + 1)) + kFusedAhead)
      __nanosleep(1000);
    while (qnext <= T) {  // empty groups add no tiles
      ++g;
      qbase = qnext;
      qnext += tiles_of(g);
    }
    const int tok0 = (g == 0 ? 0 : offs[g - 1]) + (T - qbase) * Cfg::kBN + r0, tok_end = offs[g];
    unsigned char* dst = pre_b + pre_b_offset_fwdt<Cfg>(T, 0, p);
    const auto load = [&](Step& st, int step) {
      const long long tok = tok0 + step / passes;
      const int c0 = step % passes * 32 * kUnroll + lane;
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int cc = c0 + 32 * u;
        const bool on = tok < tok_end && cc < k_chunks;
        if (on) {
          const Chunk ch = load_global16<LoadHint::kNcNoAllocate>(b_raw + tok * p.k + 16 * cc);
          st.v[u] = make_uint4(ch.w[0], ch.w[1], ch.w[2], ch.w[3]);
        } else {
          st.v[u] = make_uint4(0, 0, 0, 0);
        }
        st.scale[u] = on ? load_global_u8_no_l1(b_scales + tok * p.sld + cc / 2) : 0x100u;
      }
    };
    const auto store = [&](const Step& st, int step) {
      const int r = r0 + step / passes, c0 = step % passes * 32 * kUnroll + lane;
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int cc = c0 + 32 * u, c = cc % 4;
        if (cc >= row_chunks) break;
        uint4 o[2] = {make_uint4(0, 0, 0, 0), make_uint4(0, 0, 0, 0)};
        if (st.scale[u] != 0x100u) mx::dequant16_bf16(st.v[u], mx::e8m0_to_f32(st.scale[u]), o);
        store_chunk_sw128(dst + static_cast<long long>(cc / 4) * Cfg::kBf16B + r * 128, c, r, o);
      }
    };
    // A ring of kDepth steps in flight; the loop over a ring's turn is unrolled, so each slot
    // stays in registers. Slot j is stored, then refilled with the step kDepth - 1 ahead.
    Step ring[kDepth];
#pragma unroll
    for (int j = 0; j + 1 < kDepth; ++j)
      if (j < steps) load(ring[j], j);
    for (int step = 0; step < steps; step += kDepth) {
#pragma unroll
      for (int j = 0; j < kDepth; ++j) {
        const int ahead = step + j + kDepth - 1;
        if (ahead < steps) load(ring[(j + kDepth - 1) % kDepth], ahead);
        if (step + j < steps) store(ring[j], step + j);
      }
    }
    fence_proxy_async_global();  // other CTAs read these rows with bulk copies
    __syncwarp();
    if (lane == 0) red_release_gpu_add(flags + 2 + T, kRows);
  }
}

/// FUSE: the producer's wait for padded tile T (all BN rows written), then the proxy fence that
/// orders its bulk copies after the converting warps' stores.
__device__ __forceinline__ void fused_wait_tile(unsigned* flags, int T, unsigned rows) {
  atomicMax(flags + 1, static_cast<unsigned>(T));  // lets the conversion run kFusedAhead past T
  while (ld_acquire_gpu(flags + 2 + T) < rows) __nanosleep(64);
  fence_proxy_async_global();
}

// ---- producer: one thread issues the TMA loads of every stage ----
template <class Cfg>
__device__ __forceinline__ void produce(const TensorMap* tma_a, const TensorMap* tma_b,
                                        const unsigned char* pre_b, const Smem<Cfg>& sm,
                                        const int* offs, const Problem& p,
                                        unsigned* flags = nullptr) {
  Cursor<Cfg> cur;
  GroupTile<Cfg::kForm> tl;
  PaddedBlocks<Cfg::kForm == kFwdT ? Cfg::kBN : 64> padded;  // kWgrad / kFwdT: group g's B tiles
  uint32_t it = 0;
  bool waited = !Cfg::kPdl;
  int ready_tile = -1;  // kFuse: the last padded token tile seen complete
  for (int t = blockIdx.x; cur.seek(t, offs, p.E, p.n, p.k, tl); t += gridDim.x) {
    const TileView v = view_of<Cfg>(tl, p);
    const int kblocks = (v.depth + Cfg::kBK - 1) / Cfg::kBK;
    const int b_expert = Cfg::kForm == kWgrad ? 0 : tl.g;
    const int qbase =
        Cfg::kPreB && (Cfg::kForm == kWgrad || Cfg::kForm == kFwdT) ? padded.at(tl.g, offs) : 0;
    if constexpr (Cfg::kFuse) {
      if (qbase + tl.tn != ready_tile) {
        if (!waited) {
          griddep_wait();
          waited = true;
        }
        ready_tile = qbase + tl.tn;
        fused_wait_tile(flags, ready_tile, Cfg::kBN);
      }
    }
    const int a_c1 = static_cast<int>(v.a_row0);
#pragma unroll 1
    for (int kb = 0; kb < kblocks; ++kb, ++it) {
      const uint32_t s = it % Cfg::kStages, ph = (it / Cfg::kStages) & 1;
      mbar_wait(sm.empty + 8 * s, ph ^ 1);
      mbar_expect_tx(sm.full + 8 * s, Cfg::kRawA + (Cfg::kPreB ? Cfg::kBf16B : Cfg::kRawB));
      const int k0 = v.depth0 + kb * Cfg::kBK;
      // kPromote loads straight into the SW128 operand tiles; kDequant into the raw tiles.
      const uint32_t a_dst = Cfg::kStrategy == kPromote ? sm.a(s) : sm.x(s);
      const uint32_t b_dst = Cfg::kStrategy == kPromote ? sm.b(s) : sm.x(s) + Cfg::kRawA;
      if constexpr (Cfg::kForm == kFwdT) {  // A: expert g's b rows, (depth, rows, experts)
        tma_load_3d(a_dst, tma_a, sm.full + 8 * s, k0, tl.tm * Cfg::kBM, tl.g);
      } else {
        tma_load_2d(a_dst, tma_a, sm.full + 8 * s, k0, a_c1);
      }
      if constexpr (Cfg::kPreB) {  // the bf16 tile, already in the SW128 image the MMA reads
        if (!waited) {
          griddep_wait();
          waited = true;
        }
        const long long off = Cfg::kForm == kWgrad ? pre_b_offset_wgrad<Cfg>(tl.tn, qbase + kb, p)
                              : Cfg::kForm == kFwdT ? pre_b_offset_fwdt<Cfg>(qbase + tl.tn, kb, p)
                                                    : pre_b_offset<Cfg>(tl.g, tl.tn, kb, p);
        bulk_load_1d(sm.b(s), pre_b + off, Cfg::kBf16B, sm.full + 8 * s);
      } else {
        tma_load_3d(b_dst, tma_b, sm.full + 8 * s, k0, v.col0, b_expert);
      }
    }
  }
}

/// E8M0 byte of block blk of a scale row, or 127 (factor 1) for rows and blocks outside the
/// operand: their data is zero-filled or never multiplied, and a NaN there must not leak.
__device__ __forceinline__ unsigned scale_byte(const unsigned char* scales, long long row, int sld,
                                               int blk, bool valid) {
  return valid ? __ldg(scales + row * sld + blk) : 127u;
}

/// E8M0 bytes of blocks blk..blk+3 of a scale row (blk in the low byte), `left` of them inside
/// the depth: 127 past it and for rows outside the operand (scale_byte's rule); one 32-bit load
/// when all four are inside and aligned.
__device__ __forceinline__ uint32_t scale_word(const unsigned char* scales, long long row, int sld,
                                               int blk, int left, bool valid) {
  if (valid && left >= 4) {
    const unsigned char* q = scales + row * sld + blk;
    if ((reinterpret_cast<unsigned long long>(q) & 3) == 0)
      return __ldg(reinterpret_cast<const unsigned*>(q));
  }
  uint32_t w = 0;
#pragma unroll
  for (int k = 0; k < 4; ++k)
    w |= scale_byte(scales, row, sld, blk + k, valid && k < left) << (8 * k);
  return w;
}

// ---- kPromote: warps 1-3 stage the fp32 block scales of each stage ----

/// SCALE_PIPE=1 layouts of a stage's fp32 scales, per MX block j: A (blocks, BM) with rows r and
/// r + 8 adjacent (a consumer thread's two fragment rows: one LDS.64), B (blocks, BN) with
/// columns 16h + 2l + e and 16h + 8 + 2l + e at 16h + 4l + {0, 1, 2, 3} (a thread's four columns
/// of fragment quads 2h, 2h + 1: one LDS.128; lanes with equal l % 4 share the address).
__device__ __forceinline__ int sa_slot(int r) {
  return (r & ~15) | ((r & 7) << 1) | ((r >> 3) & 1);
}
__device__ __forceinline__ int sb_slot(int c) {
  return (c & ~15) | ((c & 6) << 1) | ((c >> 2) & 2) | (c & 1);
}

/// SCALE_PIPE=1: the words' fp32 factors into stage scales sc (the sa_slot / sb_slot layouts).
template <class Cfg, int kPer>
__device__ __forceinline__ void store_scale_words(const uint32_t (&w)[kPer], int xt, float* sc) {
#pragma unroll
  for (int q = 0; q < kPer; ++q) {
    const int row = xt + q * Cfg::kXformThreads;
    if (row < Cfg::kBM + Cfg::kBN) {
      float* dst = row < Cfg::kBM ? sc + sa_slot(row)
                                  : sc + Cfg::kBlocks * Cfg::kBM + sb_slot(row - Cfg::kBM);
      const int stride = row < Cfg::kBM ? Cfg::kBM : Cfg::kBN;
#pragma unroll
      for (int j = 0; j < 4; ++j) dst[j * stride] = mx::e8m0_to_f32((w[q] >> (8 * j)) & 0xFFu);
    }
  }
}

/// SCALE_PIPE=1: per stage three (BN=64: two) 32-bit word loads per thread (rows xt,
/// xt + 96, ...: A rows, then B columns), issued before the wait for `empty`, instead of ~11
/// serialized byte loads (the first H200 run's STRATEGY=0 took ~2 us per stage, about 11 load
/// latencies). The row pointers are set up once per tile: these warps run with 56 registers.
template <class Cfg>
__device__ __forceinline__ void stage_scales_pipelined(int xt, const Smem<Cfg>& sm,
                                                       const int* offs, const Problem& p,
                                                       const unsigned char* a_scales,
                                                       const unsigned char* b_scales) {
  static_assert(Cfg::kStrategy != kPromote || Cfg::kBlocks == 4, "one word: four blocks");
  constexpr int kRows = Cfg::kBM + Cfg::kBN;
  constexpr int kPer = (kRows + Cfg::kXformThreads - 1) / Cfg::kXformThreads;
  Cursor<Cfg> cur;
  GroupTile<Cfg::kForm> tl;
  uint32_t it = 0;
  for (int t = blockIdx.x; cur.seek(t, offs, p.E, p.n, p.k, tl); t += gridDim.x) {
    const TileView v = view_of<Cfg>(tl, p);
    const int kblocks = (v.depth + Cfg::kBK - 1) / Cfg::kBK, nblk = v.depth / 32;
    const unsigned char* src[kPer];  // block depth0/32 of each row; null: outside the operand
#pragma unroll
    for (int q = 0; q < kPer; ++q) {
      const int row = xt + q * Cfg::kXformThreads, c = row - Cfg::kBM;
      src[q] = row < Cfg::kBM
                   ? (row < v.a_rows ? a_scales + (v.a_row0 + row) * p.sld + v.depth0 / 32 : nullptr)
                   : (row < kRows && c < v.b_cols
                          ? b_scales + (v.b_row0 + c) * p.sld + v.depth0 / 32
                          : nullptr);
    }
#pragma unroll 1
    for (int kb = 0; kb < kblocks; ++kb, ++it) {
      const uint32_t s = it % Cfg::kStages, ph = (it / Cfg::kStages) & 1;
      const int left = nblk - 4 * kb;  // >= 1
      uint32_t w[kPer];
#pragma unroll
      for (int q = 0; q < kPer; ++q) {
        const unsigned char* r = src[q] + 4 * kb;
        if (src[q] != nullptr && left >= 4 && (reinterpret_cast<unsigned long long>(r) & 3) == 0) {
          w[q] = __ldg(reinterpret_cast<const unsigned*>(r));
        } else {  // unaligned row, depth tail, or outside the operand: 127 where invalid
          w[q] = 0;
#pragma unroll
          for (int k = 0; k < 4; ++k)
            w[q] |= (src[q] != nullptr && k < left ? unsigned(__ldg(r + k)) : 127u) << (8 * k);
        }
      }
      mbar_wait(sm.empty + 8 * s, ph ^ 1);  // the consumers are done with this stage's scales
      store_scale_words<Cfg>(w, xt, reinterpret_cast<float*>(__cvta_shared_to_generic(sm.x(s))));
      mbar_arrive(sm.ready + 8 * s);
    }
  }
}

template <class Cfg>
__device__ __forceinline__ void stage_scales(int xt, const Smem<Cfg>& sm, const int* offs,
                                             const Problem& p, const unsigned char* a_scales,
                                             const unsigned char* b_scales) {
  if constexpr (Cfg::kScalePipe) {
    stage_scales_pipelined<Cfg>(xt, sm, offs, p, a_scales, b_scales);
    return;
  }
  constexpr int kItems = Cfg::kBlocks * (Cfg::kBM + Cfg::kBN);
  Cursor<Cfg> cur;
  GroupTile<Cfg::kForm> tl;
  uint32_t it = 0;
  for (int t = blockIdx.x; cur.seek(t, offs, p.E, p.n, p.k, tl); t += gridDim.x) {
    const TileView v = view_of<Cfg>(tl, p);
    const int kblocks = (v.depth + Cfg::kBK - 1) / Cfg::kBK;
    const int blk0 = v.depth0 / 32, nblk = v.depth / 32;
#pragma unroll 1
    for (int kb = 0; kb < kblocks; ++kb, ++it) {
      const uint32_t s = it % Cfg::kStages, ph = (it / Cfg::kStages) & 1;
      mbar_wait(sm.empty + 8 * s, ph ^ 1);  // the consumers are done with this stage's scales
      float* sc = reinterpret_cast<float*>(__cvta_shared_to_generic(sm.x(s)));
#pragma unroll 1
      for (int i = xt; i < kItems; i += Cfg::kXformThreads) {
        // Consecutive items are consecutive blocks of one row: coalesced bytes.
        const int row = i / Cfg::kBlocks, j = i % Cfg::kBlocks;
        const int blk = kb * Cfg::kBlocks + j;
        float f;
        if (row < Cfg::kBM) {
          f = mx::e8m0_to_f32(scale_byte(a_scales, v.a_row0 + row, p.sld, blk0 + blk,
                                         row < v.a_rows && blk < nblk));
          sc[j * Cfg::kBM + row] = f;  // (blocks, BM)
        } else {
          const int c = row - Cfg::kBM;
          f = mx::e8m0_to_f32(scale_byte(b_scales, v.b_row0 + c, p.sld, blk0 + blk,
                                         c < v.b_cols && blk < nblk));
          sc[Cfg::kBlocks * Cfg::kBM + j * Cfg::kBN + c] = f;  // (blocks, BN)
        }
      }
      mbar_arrive(sm.ready + 8 * s);
    }
  }
}

/// One 16-element chunk of a raw E4M3 row (shared address src) times the E8M0 scale byte sb, as
/// bf16 into the 128-byte-swizzled row dst (TMA's SW128, what the MMA reads: 16-byte chunk k of
/// row r at k ^ (r % 8)), its two 16-byte halves at the swizzled offsets off0 and off1.
__device__ __forceinline__ void dequant_chunk(uint32_t src, unsigned sb, uint32_t dst,
                                              uint32_t off0, uint32_t off1) {
  const uint4 r = *reinterpret_cast<const uint4*>(__cvta_shared_to_generic(src));
  uint4 o[2];
  mx::dequant16_bf16(r, mx::e8m0_to_f32(sb), o);
  *reinterpret_cast<uint4*>(__cvta_shared_to_generic(dst + off0)) = o[0];
  *reinterpret_cast<uint4*>(__cvta_shared_to_generic(dst + off1)) = o[1];
}

// ---- kDequant: warps 1-3 (sm_100a: 1-2) convert raw E4M3 to scaled bf16 SW128 tiles ----
template <class Cfg>
__device__ __forceinline__ void dequantize(int xt, const Smem<Cfg>& sm, const int* offs,
                                           const Problem& p, const unsigned char* a_scales,
                                           const unsigned char* b_scales) {
  // A thread owns 16-element chunk c = xt % 4 of rows xt/4, +kRowStep, ... (A rows, then B rows):
  // a warp reads 8 whole raw rows (512 contiguous bytes, conflict-free), and as kRowStep % 8 == 0
  // every row of a thread has the same swizzle phase, so its 16-byte stores land in 8 distinct
  // chunks per 8 threads. Its chunks all belong to MX block 2 kb + c / 2 of their rows.
  constexpr int kRows = Cfg::kBM + Cfg::kBN;
  constexpr int kRowStep = Cfg::kXformThreads / 4;
  constexpr int kPer = (kRows + kRowStep - 1) / kRowStep;
  static_assert(kRowStep % 8 == 0, "one swizzle phase per thread");
  const int c = xt % 4, row_first = xt / 4;
  const uint32_t sw = row_first % 8;
  const uint32_t off0 = ((2 * c) ^ sw) * 16, off1 = ((2 * c + 1) ^ sw) * 16;
  Cursor<Cfg> cur;
  GroupTile<Cfg::kForm> tl;
  uint32_t it = 0;
  for (int t = blockIdx.x; cur.seek(t, offs, p.E, p.n, p.k, tl); t += gridDim.x) {
    const TileView v = view_of<Cfg>(tl, p);
    const int kblocks = (v.depth + Cfg::kBK - 1) / Cfg::kBK;
    const int blk0 = v.depth0 / 32, nblk = v.depth / 32;
    // The stage's scale bytes of this thread's rows (MX block 2 kb + c / 2).
    auto load_bytes = [&](unsigned (&sb)[kPer], int kb) {
      const int blk = kb * 2 + c / 2;
      const bool in_depth = blk < nblk;  // past the depth: zero-filled or never multiplied
#pragma unroll
      for (int q = 0; q < kPer; ++q) {
        const int row = row_first + q * kRowStep;
        if (row < Cfg::kBM) {
          sb[q] = scale_byte(a_scales, v.a_row0 + row, p.sld, blk0 + blk,
                             in_depth && row < v.a_rows);
        } else {
          const int col = row - Cfg::kBM;
          sb[q] = scale_byte(b_scales, v.b_row0 + col, p.sld, blk0 + blk,
                             in_depth && row < kRows && col < v.b_cols);
        }
      }
    };
    // SCALE_PIPE=1: the next stage's bytes are loaded while this stage converts.
    unsigned sb_next[kPer];
    if (Cfg::kScalePipe && kblocks > 0) load_bytes(sb_next, 0);
#pragma unroll 1
    for (int kb = 0; kb < kblocks; ++kb, ++it) {
      const uint32_t s = it % Cfg::kStages, ph = (it / Cfg::kStages) & 1;
      unsigned sb[kPer];
      if constexpr (Cfg::kScalePipe) {
#pragma unroll
        for (int q = 0; q < kPer; ++q) sb[q] = sb_next[q];
        if (kb + 1 < kblocks) load_bytes(sb_next, kb + 1);
      } else {
        // NOTE: spelled out (not load_bytes) to keep SCALE_PIPE=0's SASS as verified on the H200.
        const int blk = kb * 2 + c / 2;
        const bool in_depth = blk < nblk;  // past the depth: zero-filled or never multiplied
        // Scale bytes first: their latency overlaps the wait for the TMA.
#pragma unroll
        for (int q = 0; q < kPer; ++q) {
          const int row = row_first + q * kRowStep;
          if (row < Cfg::kBM) {
            sb[q] = scale_byte(a_scales, v.a_row0 + row, p.sld, blk0 + blk,
                               in_depth && row < v.a_rows);
          } else {
            const int col = row - Cfg::kBM;
            sb[q] = scale_byte(b_scales, v.b_row0 + col, p.sld, blk0 + blk,
                               in_depth && row < kRows && col < v.b_cols);
          }
        }
      }
      mbar_wait(sm.full + 8 * s, ph);
      const uint32_t raw = sm.x(s) + c * 16;
#pragma unroll
      for (int q = 0; q < kPer; ++q) {
        const int row = row_first + q * kRowStep;
        if (row < kRows) {
          // Raw rows are 64 bytes; bf16 rows 128 bytes in 8-row atoms of 1024 bytes with
          // 16-byte chunk k of row r at chunk k ^ (r % 8) (TMA's SW128, what the MMA reads).
          // NOTE: dequant_chunk() spelled out: calling it reschedules this loop's SASS, which is
          // STRATEGY=1's as measured on the H200.
          const uint4 r = *reinterpret_cast<const uint4*>(__cvta_shared_to_generic(raw + row * 64));
          uint4 o[2];
          mx::dequant16_bf16(r, mx::e8m0_to_f32(sb[q]), o);
          const uint32_t dst =
              row < Cfg::kBM ? sm.a(s) + row * 128 : sm.b(s) + (row - Cfg::kBM) * 128;
          *reinterpret_cast<uint4*>(__cvta_shared_to_generic(dst + off0)) = o[0];
          *reinterpret_cast<uint4*>(__cvta_shared_to_generic(dst + off1)) = o[1];
        }
      }
      fence_proxy_async_shared();  // the MMA reads these tiles through the async proxy
      mbar_arrive(sm.ready + 8 * s);
    }
  }
}

// ---- kRegA: warps 1-3 convert B's raw E4M3 to scaled bf16 SW128 tiles and stage A's scales ----

/// The scale bytes one transform thread needs for one kRegA stage: B's block (2 kb + c / 2) of
/// its columns row_first + q * kRowStep, and A's two blocks of its items (row i % BM, block
/// i / BM).
template <class Cfg>
struct RegAScaleBytes {
  static constexpr int kRowStep = Cfg::kXformThreads / 4;
  static constexpr int kPer = (Cfg::kBN + kRowStep - 1) / kRowStep;
  static constexpr int kItems = Cfg::kBlocks * Cfg::kBM;
  static constexpr int kSaPer = (kItems + Cfg::kXformThreads - 1) / Cfg::kXformThreads;
  // kRegAPreB stages no B scales: no room for them.
  unsigned sb[Cfg::kPreB ? 1 : kPer], sa[kSaPer];

  __device__ __forceinline__ void load(int xt, const TileView& v, int kb, const Problem& p,
                                       const unsigned char* a_scales,
                                       const unsigned char* b_scales) {
    const int c = xt % 4, row_first = xt / 4;
    const int blk0 = v.depth0 / 32, nblk = v.depth / 32, blk = kb * 2 + c / 2;
#pragma unroll
    for (int q = 0; q < (Cfg::kPreB ? 0 : kPer); ++q) {
      const int col = row_first + q * kRowStep;
      sb[q] = scale_byte(b_scales, v.b_row0 + col, p.sld, blk0 + blk,
                         blk < nblk && col < Cfg::kBN && col < v.b_cols);
    }
#pragma unroll
    for (int q = 0; q < kSaPer; ++q) {
      const int i = xt + q * Cfg::kXformThreads, row = i % Cfg::kBM, j = kb * 2 + i / Cfg::kBM;
      sa[q] = scale_byte(a_scales, v.a_row0 + row, p.sld, blk0 + j,
                         i < kItems && j < nblk && row < v.a_rows);
    }
  }
};

/// As dequantize() for B's rows only (chunk c = xt % 4 of rows xt / 4, + kRowStep, ...), and per
/// stage A's two block scales of every row as fp32 in the sa_slot layout (items xt, xt + 96, ...:
/// row i % BM, block i / BM), which the consumers read while they convert A in registers.
/// Writing stage s waits for its `full` phase, which the producer starts only after the
/// consumers freed the stage: the previous round's bf16 tile and scales are no longer read.
/// The scale bytes are loaded before that wait. (Loading them a whole stage ahead was measured
/// on the H200 in session 13, for kRegA: no gain, 0.696x against 0.706x of STRATEGY=0.) For
/// kRegAPreB, where these warps only stage A's scales, ncu (session 25, E128 K2880) found them
/// waiting on those loads every stage (the wait for `full` returns at once: the producer is
/// ahead), and the consumers waiting on `ready` ~5% of their time. Yet keeping 2 or 4 stages'
/// loads in flight (a compile-time ring, SCALE_PIPE 3/4, session 27) ran 1.00x: that latency is
/// not what the consumers wait for.
template <class Cfg>
__device__ __forceinline__ void dequantize_b(int xt, const Smem<Cfg>& sm, const int* offs,
                                             const Problem& p, const unsigned char* a_scales,
                                             const unsigned char* b_scales) {
  using Bytes = RegAScaleBytes<Cfg>;
  static_assert(Bytes::kRowStep % 8 == 0, "one swizzle phase per thread");
  static_assert(Cfg::kBlocks == 2, "k-blocks of 64: two MX blocks");
  const int c = xt % 4, row_first = xt / 4;
  const uint32_t sw = row_first % 8;
  const uint32_t off0 = ((2 * c) ^ sw) * 16, off1 = ((2 * c + 1) ^ sw) * 16;
  Cursor<Cfg> cur;
  GroupTile<Cfg::kForm> tl;
  uint32_t it = 0;
  // Stage s (phase ph) from scale bytes already loaded (or in flight).
  // NOTE: a lambda, not inlined in the loop: inlined, wgrad's SCALE_PIPE 0 / 1 SASS changes.
  auto stage = [&](const Bytes& bytes, uint32_t s, uint32_t ph) {
    mbar_wait(sm.full + 8 * s, ph);
    if constexpr (!Cfg::kPreB) {  // kRegAPreB: B arrived as bf16; only A's scales to stage
      const uint32_t raw_b = sm.x(s) + Cfg::kRawA + c * 16;
#pragma unroll
      for (int q = 0; q < Bytes::kPer; ++q) {
        const int col = row_first + q * Bytes::kRowStep;
        if (col < Cfg::kBN)
          dequant_chunk(raw_b + col * 64, bytes.sb[q], sm.b(s) + col * 128, off0, off1);
      }
    }
    float* sc =
        reinterpret_cast<float*>(__cvta_shared_to_generic(sm.x(s) + Cfg::kRawA + Cfg::kRawB));
#pragma unroll
    for (int q = 0; q < Bytes::kSaPer; ++q) {
      const int i = xt + q * Cfg::kXformThreads;
      if (i < Bytes::kItems)
        sc[i / Cfg::kBM * Cfg::kBM + sa_slot(i % Cfg::kBM)] = mx::e8m0_to_f32(bytes.sa[q]);
    }
    if constexpr (!Cfg::kPreB) fence_proxy_async_shared();  // the MMA reads B via async proxy
    mbar_arrive(sm.ready + 8 * s);
  };
  for (int t = blockIdx.x; cur.seek(t, offs, p.E, p.n, p.k, tl); t += gridDim.x) {
    const TileView v = view_of<Cfg>(tl, p);
    const int kblocks = (v.depth + Cfg::kBK - 1) / Cfg::kBK;
#pragma unroll 1
    for (int kb = 0; kb < kblocks; ++kb, ++it) {
      const uint32_t s = it % Cfg::kStages, ph = (it / Cfg::kStages) & 1;
      Bytes bytes;
      bytes.load(xt, v, kb, p, a_scales, b_scales);  // latency overlaps the wait for the TMA
      stage(bytes, s, ph);
    }
  }
}

/// Two adjacent outputs as one value of their type (the staged stores' pack).
__device__ __forceinline__ uint32_t packed_pair(const __nv_bfloat16*, float lo, float hi) {
  return pack_bf16(lo, hi);
}
__device__ __forceinline__ float2 packed_pair(const float*, float lo, float hi) {
  return make_float2(lo, hi);
}

/// Two adjacent outputs (col even, both inside: widths are multiples of 16).
__device__ __forceinline__ void store_pair(__nv_bfloat16* out, long long idx, float v0, float v1) {
  *reinterpret_cast<__nv_bfloat162*>(out + idx) = __floats2bfloat162_rn(v0, v1);
}
__device__ __forceinline__ void store_pair(float* out, long long idx, float v0, float v1) {
  *reinterpret_cast<float2*>(out + idx) = make_float2(v0, v1);
}

#if !(defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000)
// ---- sm_90a consumers ----

/// kFwdT's store: the fragment's rows are output columns o.col0 + r, its columns tokens
/// o.row0 + c. Lanes l and l ^ 4 hold rows r and r ^ 1 of the same columns; one exchange gives
/// each a pair of adjacent output columns: the even row's lane stores both rows at its column c,
/// the odd row's at c + 1 (a 4-byte store each instead of two 2-byte ones).
template <class Cfg, class Out>
__device__ __forceinline__ void store_transposed(Out* out, const float (&acc)[Cfg::kBN / 2],
                                                 const OutTile& o, int r0, int lane) {
  const bool even = (r0 & 1) == 0;
#pragma unroll
  for (int q = 0; q < Cfg::kBN / 8; ++q) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float v0 = acc[4 * q + 2 * h], v1 = acc[4 * q + 2 * h + 1];  // row r, cols c, c + 1
      const float got = __shfl_xor_sync(0xFFFFFFFFu, even ? v1 : v0, 4);
      const int row = r0 + 8 * h - (even ? 0 : 1);  // the pair's first output column
      const int tok = 8 * q + 2 * (lane % 4) + (even ? 0 : 1);
      if (tok < o.rows_left && o.col0 + row < o.ncols)
        store_pair(out, (o.row0 + tok) * o.ncols + o.col0 + row, even ? v0 : got,
                   even ? got : v1);
    }
  }
}

/// A thread's four column scales of fragment quads 2h, 2h + 1 (sb_slot layout; sbj: its first).
/// Two float2 loads of adjacent slots: ptxas merges them into one LDS.128 (sm_90a SASS).
__device__ __forceinline__ float4 sb_quad(const float* sbj, int h) {
  const float2 b0 = *reinterpret_cast<const float2*>(sbj + 16 * h);
  const float2 b1 = *reinterpret_cast<const float2*>(sbj + 16 * h + 2);
  return make_float4(b0.x, b0.y, b1.x, b1.y);
}

/// Eight fragment elements (two fragment quads of columns 16h.., rows r0 / r0 + 8 as sa.x / sa.y)
/// of one MX block: a[i] += (d[i] * sa) * sb, sb = b's four columns (the sb_slot layout).
__device__ __forceinline__ void promote8(float* a, const float* d, float2 sa, float4 b) {
  a[0] = fmaf(d[0] * sa.x, b.x, a[0]);
  a[1] = fmaf(d[1] * sa.x, b.y, a[1]);
  a[2] = fmaf(d[2] * sa.y, b.x, a[2]);
  a[3] = fmaf(d[3] * sa.y, b.y, a[3]);
  a[4] = fmaf(d[4] * sa.x, b.z, a[4]);
  a[5] = fmaf(d[5] * sa.x, b.w, a[5]);
  a[6] = fmaf(d[6] * sa.y, b.z, a[6]);
  a[7] = fmaf(d[7] * sa.y, b.w, a[7]);
}

/// acc += (part * sa) * sb per element, with this MX block's scales from shared memory.
/// NOTE: part * 2^(Sa-127) is exact whenever it is a normal fp32 (any realistic scale), and the
/// FFMA then rounds once; a NaN scale (0xFF) makes the whole row / column NaN like the reference.
template <class Cfg>
__device__ __forceinline__ void promote(float (&acc)[Cfg::kBN / 2],
                                        const float (&part)[Cfg::kBN / 2], const float* sc, int j,
                                        int r0, int lane) {
  if constexpr (Cfg::kScalePipe) {
    // sa_slot / sb_slot layouts: 1 LDS.64 + BN/16 LDS.128 per block (the plain ones: 2 + BN/8).
    // r0 % 16 < 8, so sa_slot(r0) is even and holds (sa[r0], sa[r0 + 8]).
    const float2 sa = *reinterpret_cast<const float2*>(sc + j * Cfg::kBM + sa_slot(r0));
    const float* sbj = sc + Cfg::kBlocks * Cfg::kBM + j * Cfg::kBN + 4 * (lane % 4);
#pragma unroll
    for (int h = 0; h < Cfg::kBN / 16; ++h)
      promote8(acc + 8 * h, part + 8 * h, sa, sb_quad(sbj, h));
    return;
  }
  const float sa0 = sc[j * Cfg::kBM + r0], sa1 = sc[j * Cfg::kBM + r0 + 8];
  const float* sbj = sc + Cfg::kBlocks * Cfg::kBM + j * Cfg::kBN + 2 * (lane % 4);
#pragma unroll
  for (int q = 0; q < Cfg::kBN / 8; ++q) {
    const float2 b = *reinterpret_cast<const float2*>(sbj + 8 * q);
    acc[4 * q + 0] = fmaf(part[4 * q + 0] * sa0, b.x, acc[4 * q + 0]);
    acc[4 * q + 1] = fmaf(part[4 * q + 1] * sa0, b.y, acc[4 * q + 1]);
    acc[4 * q + 2] = fmaf(part[4 * q + 2] * sa1, b.x, acc[4 * q + 2]);
    acc[4 * q + 3] = fmaf(part[4 * q + 3] * sa1, b.y, acc[4 * q + 3]);
  }
}

/// threadIdx.x, read again (volatile: never merged with another read) so that what derives from it
/// is recomputed where it is used instead of occupying a register across a loop.
__device__ __forceinline__ uint32_t tid_fresh() {
  uint32_t t;
  asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(t));
  return t;
}

/// Issues MX block j of the stage tiles (a, b) into fragment d as one committed group; scale-d = 0
/// overwrites d. The fence orders the earlier promotion's reads of d before the QGMMA writes it.
/// What qgmma_block takes for an operand tile at shared address addr: the address, or with
/// kScalesEarly the low word of its descriptor (built once per stage instead of once per block).
template <class Cfg>
__device__ __forceinline__ uint32_t qgmma_operand(uint32_t addr) {
  if constexpr (Cfg::kScalesEarly) return static_cast<uint32_t>(wgmma_desc_sw128(addr));
  return addr;
}

template <class Cfg>
__device__ __forceinline__ void qgmma_block(float (&d)[Cfg::kBN / 2], uint32_t a, uint32_t b,
                                            int j) {
  wgmma_fence();
  if constexpr (Cfg::kScalesEarly) {
    // a and b are the stage's descriptors' low words (start address >> 4, < 2^14: a 32-byte step
    // never carries out); the high word is the same constant for every SW128 K-major tile.
    const uint32_t hi = static_cast<uint32_t>(wgmma_desc_sw128(0) >> 32);
    wgmma_e4m3_fresh<Cfg::kBN>(d, (uint64_t(hi) << 32) | (a + 2 * j),
                               (uint64_t(hi) << 32) | (b + 2 * j));
  } else {
    wgmma_e4m3_fresh<Cfg::kBN>(d, wgmma_desc_sw128(a + 32 * j), wgmma_desc_sw128(b + 32 * j));
  }
  wgmma_commit();
}

/// SCALE_PIPE=2: promote() with the scale loads issued before the wait for d's QGMMA. ncu
/// (session 12) put ~20% of the consumers' stall samples on the first FMUL of each block, waiting
/// for LDS issued after the wait; and with acc, p0 and p1 holding 192 of 224 registers, ptxas
/// loaded the column scales only as fragment registers freed up. Here sa and two LDS.128 of sb are
/// in flight across the wait, and each chunk's load is issued two chunks ahead of its use.
template <class Cfg, int kPending>
__device__ __forceinline__ void promote_early(float (&acc)[Cfg::kBN / 2],
                                              float (&d)[Cfg::kBN / 2], const float* sc, int j) {
  constexpr int kChunks = Cfg::kBN / 16, kAhead = 2;
  const int t = static_cast<int>(tid_fresh()), lane = t % 32;
  const int r0 = (t / 128 - 1) * 64 + 16 * (t % 128 / 32) + lane / 4;
  const float2 sa = *reinterpret_cast<const float2*>(sc + j * Cfg::kBM + sa_slot(r0));
  const float* sbj = sc + Cfg::kBlocks * Cfg::kBM + j * Cfg::kBN + 4 * (lane % 4);
  float4 ring[kAhead];
#pragma unroll
  for (int h = 0; h < kAhead; ++h) ring[h] = sb_quad(sbj, h);
  wgmma_wait<kPending>();
  fence_operands(d);
#pragma unroll
  for (int h = 0; h < kChunks; ++h) {
    const float4 b = ring[h % kAhead];
    if (h + kAhead < kChunks) ring[h % kAhead] = sb_quad(sbj, h + kAhead);
    promote8(acc + 8 * h, d + 8 * h, sa, b);
  }
}

/// Promotes fragment d (MX block j of the stage) once at most kPending groups are in flight: the
/// caller has committed only groups older than d's, or d's plus one writing the other fragment.
template <class Cfg, int kPending>
__device__ __forceinline__ void promote_after(float (&acc)[Cfg::kBN / 2], float (&d)[Cfg::kBN / 2],
                                              const float* sc, int j) {
  if constexpr (Cfg::kScalesEarly) {
    promote_early<Cfg, kPending>(acc, d, sc, j);
    return;
  }
  wgmma_wait<kPending>();
  fence_operands(d);
  // NOTE: the row and lane come from a fresh %tid.x read: held across the k-loop they are two
  // of the few registers left beside acc, p0 and p1 (192 of 224), and ptxas spilled them.
  const int t = static_cast<int>(tid_fresh()), lane = t % 32;
  const int r0 = (t / 128 - 1) * 64 + 16 * (t % 128 / 32) + lane / 4;
  promote<Cfg>(acc, d, sc, j, r0, lane);
}

template <class Cfg>
__device__ __forceinline__ void wait_stage(const Smem<Cfg>& sm, uint32_t it) {
  const uint32_t s = it % Cfg::kStages, ph = (it / Cfg::kStages) & 1;
  mbar_wait(sm.full + 8 * s, ph);   // E4M3 tiles
  mbar_wait(sm.ready + 8 * s, ph);  // fp32 scales
}

/// Frees stage s for the producers once this consumer warpgroup (cw) is done with it: its
/// QGMMAs are complete (waited before), and all four warps have read its scales, which the scale
/// warps rewrite as soon as the stage is free.
template <class Cfg>
__device__ __forceinline__ void release_stage(const Smem<Cfg>& sm, uint32_t s, int cw) {
  if (cw == 0) {
    asm volatile("bar.sync 1, 128;\n" ::: "memory");
  } else {
    asm volatile("bar.sync 2, 128;\n" ::: "memory");
  }
  if (threadIdx.x % 128 == 0) mbar_arrive(sm.empty + 8 * s);
}

/// kPromote over one tile's nblk >= 1 MX blocks, from stage it on (it advances past them): block
/// b's QGMMA writes p0 (b even) or p1 (b odd) and runs while block b-1 is promoted, across stage
/// boundaries too (four blocks per stage keep the parity). NOTE: ptxas keeps the QGMMAs
/// asynchronous only if on every path the fragment read by a promotion is not written by a
/// group in flight; a step skipped by a separate `if` breaks that proof (it serialized every
/// QGMMA). Hence the nesting: each step either issues the next block into the other fragment and
/// waits to one group, or waits to zero and is the tile's last; only a full stage with more to
/// come loops (next stage's block 0 in flight), every return has waited to zero.
template <class Cfg>
__device__ __forceinline__ void promote_tile(float (&acc)[Cfg::kBN / 2], float (&p0)[Cfg::kBN / 2],
                                             float (&p1)[Cfg::kBN / 2], const Smem<Cfg>& sm,
                                             uint32_t a_off, int nblk, uint32_t& it, int cw) {
  static_assert(Cfg::kBlocks == 4, "the steps below are one stage of four MX blocks");
  wait_stage<Cfg>(sm, it);
  qgmma_block<Cfg>(p0, qgmma_operand<Cfg>(sm.a(it % Cfg::kStages) + a_off),
                   qgmma_operand<Cfg>(sm.b(it % Cfg::kStages)), 0);
#pragma unroll 1
  for (int left = nblk;; left -= 4) {  // left: MX blocks from stage it on, >= 1
    const uint32_t s = it % Cfg::kStages;
    const uint32_t a = qgmma_operand<Cfg>(sm.a(s) + a_off), b = qgmma_operand<Cfg>(sm.b(s));
    const float* sc = reinterpret_cast<const float*>(__cvta_shared_to_generic(sm.x(s)));
    if (left > 1) {
      qgmma_block<Cfg>(p1, a, b, 1);
      promote_after<Cfg, 1>(acc, p0, sc, 0);
      if (left > 2) {
        qgmma_block<Cfg>(p0, a, b, 2);
        promote_after<Cfg, 1>(acc, p1, sc, 1);
        if (left > 3) {
          qgmma_block<Cfg>(p1, a, b, 3);
          promote_after<Cfg, 1>(acc, p0, sc, 2);
          if (left > 4) {  // the next stage's block 0 runs while block 3 is promoted
            const uint32_t sn = (it + 1) % Cfg::kStages;
            wait_stage<Cfg>(sm, it + 1);
            qgmma_block<Cfg>(p0, qgmma_operand<Cfg>(sm.a(sn) + a_off),
                             qgmma_operand<Cfg>(sm.b(sn)), 0);
            promote_after<Cfg, 1>(acc, p1, sc, 3);
            release_stage<Cfg>(sm, s, cw);
            ++it;
            continue;  // the only path that leaves a group (p0's) in flight
          }
          promote_after<Cfg, 0>(acc, p1, sc, 3);
        } else {
          promote_after<Cfg, 0>(acc, p0, sc, 2);
        }
      } else {
        promote_after<Cfg, 0>(acc, p1, sc, 1);
      }
    } else {
      promote_after<Cfg, 0>(acc, p0, sc, 0);
    }
    release_stage<Cfg>(sm, s, cw);
    ++it;
    return;
  }
}

/// kRegA: thread's A fragment of stage s (rows r0, r0 + 8 of the tile; q = lane % 4): its E4M3
/// pairs read from the raw A tile (2 bytes at 16k + 2q and 16k + 2q + 8 of the row for k16 step
/// k, before the swizzle) and converted exactly to bf16 times the row's block scale (block k / 2
/// of the stage), once `full` (raw A) and `ready` (A's scales, bf16 B) of the stage are complete.
template <class Cfg>
__device__ __forceinline__ void rega_fragment(uint32_t (&af)[4][4], const Smem<Cfg>& sm,
                                              uint32_t it, int r0, int q) {
  const uint32_t s = it % Cfg::kStages, ph = (it / Cfg::kStages) & 1;
  mbar_wait(sm.full + 8 * s, ph);   // raw A (TMA)
  mbar_wait(sm.ready + 8 * s, ph);  // bf16 B and A's scales (transform warps)
  const unsigned char* raw =
      reinterpret_cast<const unsigned char*>(__cvta_shared_to_generic(sm.x(s)));
  // Raw A comes by TMA with the 64-byte swizzle (16-byte chunk k of row r at k ^ (r / 2 % 4)):
  // unswizzled, the 8 rows a warp reads (64 bytes apart) would meet 4-way bank conflicts.
  // Rows r0 and r0 + 8 share the phase.
  const uint32_t sw = (r0 >> 1) & 3;
  const unsigned short* ra = reinterpret_cast<const unsigned short*>(raw + r0 * 64 + 2 * q);
  const unsigned short* rb = reinterpret_cast<const unsigned short*>(raw + (r0 + 8) * 64 + 2 * q);
  const float* sc = reinterpret_cast<const float*>(raw + Cfg::kRawA + Cfg::kRawB);
  // r0 % 16 < 8: sa_slot(r0) is even and holds (sa[r0], sa[r0 + 8]) of each block.
  const float2 s0 = *reinterpret_cast<const float2*>(sc + sa_slot(r0));
  const float2 s1 = *reinterpret_cast<const float2*>(sc + Cfg::kBM + sa_slot(r0));
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const float2 sk = k < 2 ? s0 : s1;
    const uint32_t h = 8 * (k ^ sw);  // chunk k's first pair, in 16-bit units
    af[k][0] = mx::dequant_bf16x2(ra[h], sk.x);      // row r0, cols 2q, 2q + 1
    af[k][1] = mx::dequant_bf16x2(rb[h], sk.y);      // row r0 + 8
    af[k][2] = mx::dequant_bf16x2(ra[h + 4], sk.x);  // row r0, cols 2q + 8, 2q + 9
    af[k][3] = mx::dequant_bf16x2(rb[h + 4], sk.y);
  }
  // The fragments are computed before the fence (else ptxas injects a warpgroup.arrive before
  // each HGMMA that reads registers written after it: C7519).
#pragma unroll
  for (int k = 0; k < 4; ++k) {
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(af[k][e]));
  }
}

/// kRegA: the HGMMAs of stage s (A from registers, B the bf16 tile; ksteps 4, or 2 for the
/// depth's last 32), committed as one group.
template <class Cfg>
__device__ __forceinline__ void rega_mma(float (&acc)[Cfg::kBN / 2], const uint32_t (&af)[4][4],
                                         const Smem<Cfg>& sm, uint32_t s, int ksteps) {
  const uint32_t b = sm.b(s);
  wgmma_fence();
  if (ksteps == 4) {  // straight-line: a guard per HGMMA makes ptxas fence each one (C7519)
#pragma unroll
    for (int k = 0; k < 4; ++k)
      wgmma_bf16_rs<Cfg::kBN>(acc, af[k], wgmma_desc_sw128(b + 32 * k), 1);
  } else {
#pragma unroll
    for (int k = 0; k < 2; ++k)
      wgmma_bf16_rs<Cfg::kBN>(acc, af[k], wgmma_desc_sw128(b + 32 * k), 1);
  }
  wgmma_commit();
}

/// kRegA main loop of consumer warpgroup cw over one tile (acc zeroed by the caller), per 64-K
/// stage: A's fragment (rega_fragment), HGMMA m64nBNk16 with A from registers, wait_group(0),
/// free the stage. SCALE_PIPE >= 2 converts the next stage's fragment into a second register set
/// while this stage's HGMMAs run (~100 issue slots per thread that otherwise leave the tensor
/// cores idle: both warpgroups wait on the same stage and convert at the same time).
template <class Cfg>
__device__ __forceinline__ void consume_rega(float (&acc)[Cfg::kBN / 2], const Smem<Cfg>& sm,
                                             int kblocks, int depth, uint32_t& it, int cw,
                                             bool signal) {
  const int t128 = threadIdx.x % 128, lane = threadIdx.x % 32, q = lane % 4;
  const int r0 = cw * 64 + 16 * (t128 / 32) + lane / 4;  // fragment rows r0 and r0 + 8
  auto ksteps = [&](int kb) { return cmin(4, (depth - kb * Cfg::kBK) / 16); };  // depth % 32 == 0
  if constexpr (Cfg::kScalesEarly) {
    if (kblocks == 0) return;
    uint32_t f0[4][4], f1[4][4];
    rega_fragment<Cfg>(f0, sm, it, r0, q);
    // One stage: its HGMMAs from `cur`, the next stage's fragment into `nxt` meanwhile.
    auto step = [&](int kb, const uint32_t(&cur)[4][4], uint32_t(&nxt)[4][4]) {
      const uint32_t s = it % Cfg::kStages;
      rega_mma<Cfg>(acc, cur, sm, s, ksteps(kb));
      if (kb + 1 < kblocks) rega_fragment<Cfg>(nxt, sm, it + 1, r0, q);
      wgmma_wait<0>();  // cur's registers and the stage are free
      if (signal) mbar_arrive(sm.empty + 8 * s);
      ++it;
    };
#pragma unroll 1
    for (int kb = 0; kb < kblocks; kb += 2) {  // two steps per trip: the register sets stay named
      step(kb, f0, f1);
      if (kb + 1 < kblocks) step(kb + 1, f1, f0);
    }
  } else {
#pragma unroll 1
    for (int kb = 0; kb < kblocks; ++kb, ++it) {
      const uint32_t s = it % Cfg::kStages;
      uint32_t af[4][4];
      rega_fragment<Cfg>(af, sm, it, r0, q);
      rega_mma<Cfg>(acc, af, sm, s, ksteps(kb));
      wgmma_wait<0>();  // the fragment registers are free; the stage too
      if (signal) mbar_arrive(sm.empty + 8 * s);
    }
  }
  fence_operands(acc);
}

template <class Cfg, class Out>
__device__ __forceinline__ void consume_sm90(const Smem<Cfg>& sm, const int* offs,
                                             const Problem& p, Out* out) {
  const int cw = threadIdx.x / 128 - 1;  // consumer warpgroup: rows 64*cw.. of the tile
  const int t128 = threadIdx.x % 128, w = t128 / 32, lane = threadIdx.x % 32;
  const bool signal = t128 == 0;
  const uint32_t a_off = cw * 64 * 128;  // 64 rows of 128 bytes (E4M3 k128 or bf16 k64)
  const int r0 = cw * 64 + 16 * w + lane / 4;  // fragment rows r0 and r0 + 8 of the tile
  Cursor<Cfg> cur;
  GroupTile<Cfg::kForm> tl;
  float acc[Cfg::kBN / 2];  // (64, BN) fp32 fragment
  uint32_t it = 0;
  for (int t = blockIdx.x; cur.seek(t, offs, p.E, p.n, p.k, tl); t += gridDim.x) {
    const TileView v = view_of<Cfg>(tl, p);
    const int kblocks = (v.depth + Cfg::kBK - 1) / Cfg::kBK;
#pragma unroll
    for (int i = 0; i < Cfg::kBN / 2; ++i) acc[i] = 0.0f;
    if constexpr (Cfg::kStrategy == kPromote) {
      // (64, BN) fp32 fragments of the even and odd MX blocks. Depth % 32 == 0 (the specs), so
      // the tile's ceil(nblk / 4) stages are the producer's kblocks; an empty group has none.
      float p0[Cfg::kBN / 2], p1[Cfg::kBN / 2];
      const int nblk = v.depth / 32;
      if (nblk > 0) promote_tile<Cfg>(acc, p0, p1, sm, a_off, nblk, it, cw);
    } else if constexpr (Cfg::kRegAFamily) {
      consume_rega<Cfg>(acc, sm, kblocks, v.depth, it, cw, signal);
    } else {
      uint32_t prev = 0;
      for (int kb = 0; kb < kblocks; ++kb, ++it) {
        const uint32_t s = it % Cfg::kStages, ph = (it / Cfg::kStages) & 1;
        mbar_wait(sm.ready + 8 * s, ph);
        const uint32_t a = sm.a(s) + a_off, b = sm.b(s);
        const int ksteps = cmin(4, (v.depth - kb * Cfg::kBK) / 16);  // 2 or 4 (depth % 32 == 0)
        wgmma_fence();
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          if (k < ksteps)
            wgmma_bf16<Cfg::kBN>(acc, wgmma_desc_sw128(a + 32 * k), wgmma_desc_sw128(b + 32 * k),
                                 1);
        }
        wgmma_commit();
        if (kb > 0) {
          wgmma_wait<1>();  // the previous k-block's wgmmas are done: free its stage
          if (signal) mbar_arrive(sm.empty + 8 * prev);
        }
        prev = s;
      }
      wgmma_wait<0>();
      fence_operands(acc);
      if (signal && kblocks > 0) mbar_arrive(sm.empty + 8 * prev);
    }
    // Fragment: register 4q+e of (warp w, lane l) is row 16w + l/4 + 8(e/2), col 8q + 2(l%4) + e%2.
    const OutTile o = Cursor<Cfg>::out_tile(tl, p.n, p.k);
    if constexpr (Cfg::kForm == kFwdT && Cfg::kEpi) {
      const StagedStoreT<Cfg::kBN> staged{sm.staged + cw * StagedStoreT<Cfg::kBN>::kBytes};
      staged.store(out, acc, o, cw);
      continue;
    } else if constexpr (Cfg::kForm == kFwdT) {
      store_transposed<Cfg>(out, acc, o, r0, lane);
      continue;
    }
    if constexpr (Cfg::kEpi) {
      const typename Cfg::Staged staged{sm.staged + cw * Cfg::Staged::kBytes};
      staged.store(out, acc, o.row0, cw * 64, o.rows_left, o.col0, o.ncols, cw,
                   [out](float lo, float hi) { return packed_pair(out, lo, hi); });
      continue;
    }
    const int colb = o.col0 + 2 * (lane % 4);
#pragma unroll
    for (int q = 0; q < Cfg::kBN / 8; ++q) {
      const int col = colb + 8 * q;
      if (col < o.ncols) {
        if (r0 < o.rows_left)
          store_pair(out, (o.row0 + r0) * o.ncols + col, acc[4 * q], acc[4 * q + 1]);
        if (r0 + 8 < o.rows_left)
          store_pair(out, (o.row0 + r0 + 8) * o.ncols + col, acc[4 * q + 2], acc[4 * q + 3]);
      }
    }
  }
  if constexpr (Cfg::kEpi) bulk_wait_group<0>();  // smem must outlive the last row copies
}
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
// ---- sm_100a: block-scaled tcgen05.mma on kPromote's stages. Stage s: SW128 E4M3 A (128 x 128)
// and B (BN x 128) tiles; at x(s) the stage's scales as two 128x4 blocked tiles, A then B ----

constexpr int kSfTile = 512;  // bytes of one 128x4 blocked E8M0 tile

/// Whether an E8M0 byte of blocks [blk, blk + nblk) of a scale row is 0xFF (NaN).
__device__ __forceinline__ bool has_nan_scale(const unsigned char* scales, long long row, int sld,
                                              int blk, int nblk) {
  const unsigned char* q = scales + row * sld + blk;
  unsigned hit = 0;
  int i = 0;
  for (; i < nblk && (reinterpret_cast<unsigned long long>(q + i) & 3) != 0; ++i)
    hit |= __ldg(q + i) == 0xFFu;
#pragma unroll 4
  for (; i + 4 <= nblk; i += 4) {
    // A byte is 0xFF iff its top bit is set and its low 7 bits + 1 carry into bit 7.
    const unsigned w = __ldg(reinterpret_cast<const unsigned*>(q + i));
    hit |= (w & 0x80808080u) & ((w & 0x7F7F7F7Fu) + 0x01010101u);
  }
  for (; i < nblk; ++i) hit |= __ldg(q + i) == 0xFFu;
  return hit != 0;
}

/// Warps 1-2: warp 1 writes A's, warp 2 B's scales of each stage's four MX blocks as a 128x4
/// blocked tile at x(s) + kSfTile * operand. Lane j owns rows j, j+32, j+64, j+96 (B rows past
/// BN pad the tile with 127): one 16-byte, conflict-free store of blocked row j.
template <class Cfg>
__device__ __forceinline__ void stage_scales_sm100(int xt, const Smem<Cfg>& sm, const int* offs,
                                                   const Problem& p, const unsigned char* a_scales,
                                                   const unsigned char* b_scales) {
  static_assert(Cfg::kStrategy == kPromote && Cfg::kBlocks == 4, "one blocked tile per stage");
  const int op = xt / 32, j = xt % 32;
  const unsigned char* scales = op == 0 ? a_scales : b_scales;
  Cursor<Cfg> cur;
  GroupTile<Cfg::kForm> tl;
  uint32_t it = 0;
  for (int t = blockIdx.x; cur.seek(t, offs, p.E, p.n, p.k, tl); t += gridDim.x) {
    const TileView v = view_of<Cfg>(tl, p);
    const int kblocks = (v.depth + Cfg::kBK - 1) / Cfg::kBK;
    const int blk0 = v.depth0 / 32, nblk = v.depth / 32;
    const long long row0 = op == 0 ? v.a_row0 : v.b_row0;
    const int rows = op == 0 ? v.a_rows : cmin(v.b_cols, Cfg::kBN);
#pragma unroll 1
    for (int kb = 0; kb < kblocks; ++kb, ++it) {
      const uint32_t s = it % Cfg::kStages, ph = (it / Cfg::kStages) & 1;
      // Loads first: their latency overlaps the wait for the stage.
      uint32_t w[4];
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int r = j + 32 * c;
        w[c] = scale_word(scales, row0 + r, p.sld, blk0 + 4 * kb, nblk - 4 * kb, r < rows);
      }
      mbar_wait(sm.empty + 8 * s, ph ^ 1);  // the copy and MMAs of the stage's last use are done
      const uint32_t dst = sm.x(s) + op * kSfTile + blocked_scale_offset(j, 0);
      *reinterpret_cast<uint4*>(__cvta_shared_to_generic(dst)) = make_uint4(w[0], w[1], w[2], w[3]);
      fence_proxy_async_shared();  // tcgen05.cp reads the tile through the async proxy
      mbar_arrive(sm.ready + 8 * s);
    }
  }
}

/// TMEM columns: two (128, BN) fp32 accumulators, then per stage 4 columns of A scales and 4 of
/// B scales (a stage's copy may not overwrite scales an earlier stage's MMAs still read).
template <class Cfg>
struct TmemMap {
  static constexpr int kSf = 2 * Cfg::kBN;
  static constexpr int kUsed = kSf + 8 * Cfg::kStages;
  static constexpr int kCols = tmem_columns(kUsed);
  static_assert(kUsed <= 512, "accumulators + scale ring fit in TMEM");
};

/// Warp 3, one lane: per stage, copy the two scale tiles into the stage's TMEM columns and issue
/// one block-scaled MMA (M=128, N=BN, K=32) per MX block, SF ID = block; commits free the stage
/// and hand a finished accumulator to the epilogue.
template <class Cfg>
__device__ __forceinline__ void issue_mma_sm100(const Smem<Cfg>& sm, const int* offs,
                                                const Problem& p, uint32_t tmem_base) {
  Cursor<Cfg> cur;
  GroupTile<Cfg::kForm> tl;
  uint32_t it = 0, local = 0;
  for (int t = blockIdx.x; cur.seek(t, offs, p.E, p.n, p.k, tl); t += gridDim.x) {
    const int depth = tl.depth(p.n, p.k), kblocks = (depth + Cfg::kBK - 1) / Cfg::kBK;
    if (kblocks == 0) continue;  // empty wgrad group: the epilogue stores zeros
    const uint32_t buf = local & 1, aph = (local >> 1) & 1;
    ++local;
    mbar_wait(sm.acc_empty + 8 * buf, aph ^ 1);  // the epilogue has drained this buffer
    tc_fence_after();
    const uint32_t d_tmem = tmem_base + buf * Cfg::kBN;
#pragma unroll 1
    for (int kb = 0; kb < kblocks; ++kb, ++it) {
      const uint32_t s = it % Cfg::kStages, ph = (it / Cfg::kStages) & 1;
      mbar_wait(sm.full + 8 * s, ph);   // E4M3 tiles landed
      mbar_wait(sm.ready + 8 * s, ph);  // blocked scale tiles written and fenced
      tc_fence_after();
      const uint32_t sfa = tmem_base + TmemMap<Cfg>::kSf + 8 * s, sfb = sfa + 4;
      tmem_cp_scales(sfa, sm.x(s));
      tmem_cp_scales(sfb, sm.x(s) + kSfTile);
      const int nsteps = cmin(Cfg::kBlocks, (depth - kb * Cfg::kBK) / 32);  // depth % 32 == 0
#pragma unroll
      for (int k = 0; k < Cfg::kBlocks; ++k) {
        if (k < nsteps)
          umma_mxf8f6f4(
              d_tmem, umma_desc_sw128(sm.a(s) + 32 * k), umma_desc_sw128(sm.b(s) + 32 * k),
              umma_idesc_mx(kUmmaE4M3, kUmmaE4M3, Cfg::kBM, Cfg::kBN, k), sfa, sfb, (kb | k) != 0);
      }
      umma_commit(sm.empty + 8 * s);  // frees the stage (tiles and scales) once all of it is read
    }
    umma_commit(sm.acc_full + 8 * buf);
  }
}

/// Warps 4-11: warp w drains TMEM lanes 32*(w%4).. (its sub-partition), half (w-4)/4 of the
/// columns, 32 at a time; rows and columns with a 0xFF scale in the tile's depth store NaN, as
/// the reference does. An empty wgrad group's tile is stored as zeros.
template <class Cfg, class Out>
__device__ __forceinline__ void drain_sm100(const Smem<Cfg>& sm, const int* offs, const Problem& p,
                                            Out* out, const unsigned char* a_scales,
                                            const unsigned char* b_scales, uint32_t tmem_base) {
  static_assert(Cfg::kBN % 64 == 0, "each epilogue warp drains whole 32-column chunks");
  constexpr int kChunks = Cfg::kBN / 64;  // 32-column chunks per warp
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int q = warp % 4, h = (warp - 4) / 4;
  const int r = q * 32 + lane;
  Cursor<Cfg> cur;
  GroupTile<Cfg::kForm> tl;
  uint32_t local = 0;
  for (int t = blockIdx.x; cur.seek(t, offs, p.E, p.n, p.k, tl); t += gridDim.x) {
    const OutTile o = Cursor<Cfg>::out_tile(tl, p.n, p.k);
    const TileView v = view_of<Cfg>(tl, p);
    const bool zero = v.depth == 0;
    // NaN scales, checked while the MMAs run: this lane's row, and a column mask per chunk.
    const int blk0 = v.depth0 / 32, nblk = v.depth / 32;
    const bool row_nan = r < v.a_rows && has_nan_scale(a_scales, v.a_row0 + r, p.sld, blk0, nblk);
    unsigned col_nan[kChunks];
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int col = h * (Cfg::kBN / 2) + 32 * c + lane;
      col_nan[c] = __ballot_sync(
          ~0u, col < v.b_cols && has_nan_scale(b_scales, v.b_row0 + col, p.sld, blk0, nblk));
    }
    const uint32_t buf = local & 1, aph = (local >> 1) & 1;
    if (!zero) {
      ++local;
      mbar_wait(sm.acc_full + 8 * buf, aph);
      tc_fence_after();
    }
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const int cc = h * (Cfg::kBN / 2) + 32 * c;
      uint32_t vals[32];
      if (zero) {
#pragma unroll
        for (int i = 0; i < 32; ++i) vals[i] = 0u;
      } else {
        tmem_ld32(tmem_base + (uint32_t(q * 32) << 16) + buf * Cfg::kBN + cc, vals);
      }
      if (row_nan || col_nan[c] != 0) {
#pragma unroll
        for (int i = 0; i < 32; ++i) {
          if (row_nan || ((col_nan[c] >> i) & 1)) vals[i] = 0x7FC00000u;
        }
      }
      const int col = o.col0 + cc;
      if (r < o.rows_left) {
        const long long row_idx = (o.row0 + r) * o.ncols + col;
#pragma unroll
        for (int j = 0; j < 16; ++j) {  // widths are multiples of 16: pairs wholly in or out
          if (col + 2 * j < o.ncols)
            store_pair(out, row_idx + 2 * j, __uint_as_float(vals[2 * j]),
                       __uint_as_float(vals[2 * j + 1]));
        }
      }
    }
    if (!zero) {
      tc_fence_before();
      __syncwarp();
      if (lane == 0) mbar_arrive(sm.acc_empty + 8 * buf);
    }
  }
}
#endif

/// The whole kernel body. tma_a: A as (depth, rows) boxes (BK, 128); tma_b: B as (depth, cols,
/// experts) boxes (BK, BN, 1), both SW128 for kPromote and unswizzled for kDequant (the plan
/// passes the pair the strategy needs); offs [E] cumulative group ends; out as the form says.
template <class Cfg, class Out>
__device__ __forceinline__ void run(const TensorMap* tma_a, const TensorMap* tma_b,
                                    const unsigned char* a_scales, const unsigned char* b_scales,
                                    const unsigned char* pre_b, const int* offs, Out* out,
                                    const Problem& p, const unsigned char* b_raw = nullptr,
                                    int M = 0) {
  static_assert(Cfg::kBN % 16 == 0 && Cfg::kBN >= 16 &&
                    Cfg::kBN <= (Cfg::kRegAFamily ? 256 : 128),
                "BN: 16..128 (sm_90a STRATEGY=2, 3: ..256)");
  static_assert(Cfg::kStages >= 2, "at least two stages fit");
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  Smem<Cfg> sm;
  sm.base = (smem_u32(smem_raw) + 1023) & ~1023u;
  sm.staged = sm.base + Cfg::kStages * Cfg::kStageBytes;
  const uint32_t bars = sm.staged + Cfg::kEpiBytes;
  sm.full = bars;
  sm.empty = bars + 8 * Cfg::kStages;
  sm.ready = bars + 16 * Cfg::kStages;
  sm.acc_full = bars + 24 * Cfg::kStages;
  sm.acc_empty = sm.acc_full + 16;
  sm.tmem_slot = sm.acc_empty + 16;
  int* offs_smem = reinterpret_cast<int*>(smem_raw + (bars + 1024 - smem_u32(smem_raw)));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  // offs read once; E > kMaxE falls back to global reads (L2-resident, forward walk).
  // NOTE: ws::stage_offs does the same, but here it moves sm_90a registers: kept as verified.
  for (int i = threadIdx.x; i < p.E && i < Cfg::kMaxE; i += Cfg::kThreads) offs_smem[i] = offs[i];
  const int* goffs = p.E <= Cfg::kMaxE ? offs_smem : offs;

  if (threadIdx.x == 0) {
    tma_prefetch(tma_a);
    tma_prefetch(tma_b);
    for (int s = 0; s < Cfg::kStages; ++s) {
      mbar_init(sm.full + 8 * s, 1);
      // sm_90a: one arrive per consumer warpgroup; sm_100a: one tcgen05.commit.
      mbar_init(sm.empty + 8 * s, kSm100 ? 1 : 2);
      mbar_init(sm.ready + 8 * s, Cfg::kXformThreads);
    }
    // acc_full: the commit after a tile's last MMA; acc_empty: one arrive per epilogue warp.
    mbar_init_ring<2>(sm.acc_full, 1, sm.acc_empty, 8);
    fence_mbarrier_init();
  }

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
  // ============ sm_100a: tcgen05.mma kind::mxf8f6f4.block_scale, scales through TMEM ============
  // Warp 3 allocates and later frees the accumulators and the scale ring.
  const uint32_t tmem_base = tmem_alloc_cta(warp == 3, sm.tmem_slot, TmemMap<Cfg>::kCols);

  if (warp == 0) {
    if (lane == 0) produce<Cfg>(tma_a, tma_b, pre_b, sm, goffs, p);
  } else if (warp <= Cfg::kXformWarps) {
    stage_scales_sm100<Cfg>(threadIdx.x - 32, sm, goffs, p, a_scales, b_scales);
  } else if (warp == 3) {
    if (lane == 0) issue_mma_sm100<Cfg>(sm, goffs, p, tmem_base);
  } else {
    drain_sm100<Cfg>(sm, goffs, p, out, a_scales, b_scales, tmem_base);
  }
  tmem_free_cta(warp == 3, tmem_base, TmemMap<Cfg>::kCols);
#else
  // ======================= sm_90a =======================
  __syncthreads();
  if (threadIdx.x < 128) {
    setmaxnreg_dec<Cfg::kProducerRegs>();
    // kFuse: the workspace takes the tiles the converting warps write (FUSE's plan).
    unsigned char* fused_b = const_cast<unsigned char*>(pre_b);
    unsigned* flags = Cfg::kFuse ? fused_flags<Cfg>(fused_b, M, p) : nullptr;
    if (warp == 0) {
      if (lane == 0) produce<Cfg>(tma_a, tma_b, pre_b, sm, goffs, p, flags);
    } else if constexpr (Cfg::kFuse) {
      if (warp <= Cfg::kXformWarps) {
        dequantize_b<Cfg>(threadIdx.x - 32, sm, goffs, p, a_scales, b_scales);
      } else {
        fused_convert_fwdt<Cfg>(threadIdx.x - 32 * (1 + Cfg::kXformWarps), b_raw, b_scales, goffs,
                                fused_b, flags, p);
      }
    } else if constexpr (Cfg::kStrategy == kPromote) {
      stage_scales<Cfg>(threadIdx.x - 32, sm, goffs, p, a_scales, b_scales);
    } else if constexpr (Cfg::kRegAFamily) {
      dequantize_b<Cfg>(threadIdx.x - 32, sm, goffs, p, a_scales, b_scales);
    } else {
      dequantize<Cfg>(threadIdx.x - 32, sm, goffs, p, a_scales, b_scales);
    }
  } else {
    setmaxnreg_inc<Cfg::kConsumerRegs>();
    consume_sm90<Cfg>(sm, goffs, p, out);
  }
#endif
}

}  // namespace mxg
}  // namespace ws

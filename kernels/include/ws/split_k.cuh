// warpsmith device library: split-K for the dense TMA GEMMs' small-M (decode) path. A launch of
// tiles x splits CTAs, one (tile, k-range) unit each; every unit stores its fp32 partial tile into
// a workspace slice (splits slices of M x N fp32, row-major), then counts itself on the tile's
// counter; the unit that arrives last sums the slices in split order 0, 1, ... (its own included,
// read back), so the result does not depend on which unit finishes last (deterministic), and
// writes the output. The counter is reset by that last unit, so it is zero again after the run;
// the plan also asks the runner to zero the workspace ("zero": true), so a counter never depends
// on an earlier run.
//
// Memory ordering (the CUDA threadFenceReduction pattern): each storing thread issues
// __threadfence() before the CTA-side barrier, the leader's atomicAdd then publishes the unit; the
// last unit's leader fences again before the barrier that releases the readers, which read the
// slices with __ldcg (ld.global.cg: L2), never a stale L1 line.
#pragma once

#include <cuda_bf16.h>

#include "ws/cluster.cuh"
#include "ws/gemm.cuh"
#include "ws/ptx_sm90.cuh"

namespace ws {

/// The k-blocks [kb0, kb1) of split s of splits over kblocks (balanced, each non-empty when
/// splits <= kblocks).
__device__ __forceinline__ void split_range(int s, int splits, int kblocks, int& kb0, int& kb1) {
  kb0 = static_cast<int>(static_cast<long long>(s) * kblocks / splits);
  kb1 = static_cast<int>(static_cast<long long>(s + 1) * kblocks / splits);
}

/// A CTA's split-K unit: output tile `tile` = (tm, tn), m fastest, over the k-blocks [kb0, kb1)
/// of split `split` (splits clamped so every split is non-empty); the workspace holds 2 counters
/// per tile (rounded up to 256 bytes), then splits slices of M x N fp32 partials. The kernels fill
/// it inline: NOTE a filling function returning "no unit" compiles to other SASS (merged exits).
struct SplitUnit {
  int splits, tile, split, tm, tn, kb0, kb1;
  int* counters;
  float* part;
  long long slice;

  /// counters, part and slice in the workspace of a launch over tiles output tiles of M x N.
  __device__ __forceinline__ void use_workspace(unsigned char* workspace, int tiles, int M, int N) {
    counters = reinterpret_cast<int*>(workspace);
    part = reinterpret_cast<float*>(workspace + ((8 * tiles + 255) & ~255));
    slice = static_cast<long long>(M) * N;
  }
};

/// split_arrive's two flag words (one per sm_90a consumer warpgroup), after the ring's TMEM slot.
__device__ __forceinline__ int* split_flags(unsigned char* smem_raw, const RingSmem& rs) {
  return reinterpret_cast<int*>(smem_raw + (rs.tmem_slot + 16 - smem_u32(smem_raw)));
}

/// Producer of one unit (one thread): k-blocks [kb0, kb1) of output tile (tm, tn) into the ring,
/// A (kBM rows) then B (kBN rows) per stage, as produce_band lays them out. kMc > 1 (sm_90a): a
/// cluster of kMc CTAs along N shares the tile row's A; CTA rank r loads rows r * kBM / kMc .. of
/// each A box (tma_a then has boxes of kBM / kMc rows) multicast into the same stage of every CTA,
/// and its own B box. Every CTA of the cluster walks the same k-blocks; a stage is rewritten only
/// once the consumers of all kMc CTAs have freed it (release_stage<kMc>: the empty barriers count
/// kMc arrivals per consumer), and each full barrier still expects the whole stage.
template <class Cfg, int kMc = 1>
__device__ __forceinline__ void produce_range(const TensorMap* tma_a, const TensorMap* tma_b,
                                              uint32_t smem, uint32_t full, uint32_t empty, int tm,
                                              int tn, int kb0, int kb1) {
  constexpr int kRows = Cfg::kBM / kMc;
  static_assert(kRows % 8 == 0, "whole 8-row swizzle atoms per CTA's share of A");
  uint32_t it = 0;
  for (int kb = kb0; kb < kb1; ++kb, ++it) {
    const uint32_t s = it % Cfg::kStages, ph = (it / Cfg::kStages) & 1;
    mbar_wait(empty + 8 * s, ph ^ 1);
    mbar_expect_tx(full + 8 * s, Cfg::kStageBytes);
    const uint32_t a_dst = smem + s * Cfg::kABytes;
    const uint32_t b_dst = smem + Cfg::kStages * Cfg::kABytes + s * Cfg::kBBytes;
    if constexpr (kMc == 1) {
      tma_load_2d(a_dst, tma_a, full + 8 * s, kb * Cfg::kBK, tm * Cfg::kBM);
    } else {
      const uint32_t rank = cluster_rank();
      tma_load_2d_multicast(a_dst + rank * (kRows * 128), tma_a, full + 8 * s, kb * Cfg::kBK,
                            tm * Cfg::kBM + rank * kRows, static_cast<uint16_t>((1u << kMc) - 1));
    }
    tma_load_2d(b_dst, tma_b, full + 8 * s, kb * Cfg::kBK, tn * Cfg::kBN);
  }
}

/// Counts this unit on counter once its kThreads threads (named barrier bar_id) have stored their
/// partials; true in every thread of the unit that arrived last (the counter is then reset).
/// flag: a shared word of this thread group.
template <int kThreads>
__device__ __forceinline__ bool split_arrive(int* counter, int splits, uint32_t bar_id, bool leader,
                                             volatile int* flag) {
  __threadfence();  // this thread's partial stores, before the leader publishes the unit
  named_bar_sync(bar_id, kThreads);
  if (leader) {
    const int old = atomicAdd(counter, 1);
    const bool last = old == splits - 1;
    if (last) *reinterpret_cast<volatile int*>(counter) = 0;  // zero again for the next run
    __threadfence();  // the other units' partials, before this group reads them
    *flag = last;
  }
  named_bar_sync(bar_id, kThreads);
  return *flag != 0;
}

// ---- sm_90a: the (64, kBN) wgmma fragment (register 4j+e: row r + 8*(e/2), column colb + 8j +
// e%2, as store_fragment_bf16) ----

/// Stores the fragment's fp32 pairs at part[(row0 + r) * ncols + col] (rows < rows_left only).
template <int kBN>
__device__ __forceinline__ void store_fragment_f32(float* part, const float (&acc)[kBN / 2],
                                                   long long row0, int r, int rows_left, int colb,
                                                   int ncols) {
  store_fragment<kBN>(part, acc, row0, r, rows_left, colb, ncols,
                      [](float lo, float hi) { return make_float2(lo, hi); });
}

/// The fragment's sum over splits slices of part (slice s at part + s * slice), in split order,
/// into acc (elements outside (rows_left, ncols) end up meaningless; they are never stored).
/// Predicated loads, no branches, so a slice's loads are all in flight together.
template <int kBN>
__device__ __forceinline__ void reduce_fragment_f32(float (&acc)[kBN / 2], const float* part,
                                                    long long slice, int splits, long long row0,
                                                    int r, int rows_left, int colb, int ncols) {
  const bool in0 = r < rows_left, in1 = r + 8 < rows_left;
  // Chunks of up to 16 column groups (64 registers of loads) keep kBN = 256 within the budget.
  constexpr int kChunk = kBN / 8 < 16 ? kBN / 8 : 16;
#pragma unroll
  for (int j0 = 0; j0 < kBN / 8; j0 += kChunk) {
    const float* p = part + (row0 + r) * ncols + colb + 8 * j0;
#pragma unroll 1
    for (int s = 0; s < splits; ++s, p += slice) {
      float2 v[2 * kChunk];
#pragma unroll
      for (int j = 0; j < kChunk; ++j) {
        const bool c = colb + 8 * (j0 + j) < ncols;
        v[2 * j] = in0 && c ? __ldcg(reinterpret_cast<const float2*>(p + 8 * j)) : make_float2(0, 0);
        v[2 * j + 1] = in1 && c ? __ldcg(reinterpret_cast<const float2*>(p + 8ll * ncols + 8 * j))
                                : make_float2(0, 0);
      }
#pragma unroll
      for (int j = 0; j < 2 * kChunk; ++j) {
        float* a = acc + 4 * j0 + 2 * j;
        a[0] = s == 0 ? v[j].x : a[0] + v[j].x;
        a[1] = s == 0 ? v[j].y : a[1] + v[j].y;
      }
    }
  }
}

// ---- sm_100a: one thread's row, 32 consecutive columns (a tcgen05.ld 32x32b.x32) ----

/// Stores 32 fp32 (f) at dst (16-byte aligned), columns from col on, skipping 4-column pieces at
/// or past ncols.
__device__ __forceinline__ void store_row32_f32(float* dst, const float* f, int col, int ncols) {
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    if (col + 4 * j < ncols) {
      *reinterpret_cast<float4*>(dst + 4 * j) = make_float4(f[4 * j], f[4 * j + 1], f[4 * j + 2],
                                                            f[4 * j + 3]);
    }
  }
}

/// f[0..32) = the sum over splits slices (slice s at src + s * slice) of 32 fp32, in split order
/// (4-column pieces at or past ncols end up meaningless).
__device__ __forceinline__ void reduce_row32_f32(float* f, const float* src, long long slice,
                                                 int splits, int col, int ncols) {
#pragma unroll 1
  for (int s = 0; s < splits; ++s, src += slice) {
    float4 v[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      v[j] = col + 4 * j < ncols ? __ldcg(reinterpret_cast<const float4*>(src + 4 * j))
                                 : make_float4(0, 0, 0, 0);
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      f[4 * j] = s == 0 ? v[j].x : f[4 * j] + v[j].x;
      f[4 * j + 1] = s == 0 ? v[j].y : f[4 * j + 1] + v[j].y;
      f[4 * j + 2] = s == 0 ? v[j].z : f[4 * j + 2] + v[j].z;
      f[4 * j + 3] = s == 0 ? v[j].w : f[4 * j + 3] + v[j].w;
    }
  }
}

/// Stores 32 fp32 (f) times sa * sb[i] as bf16 (RNE) at dst, columns from col on, in 8-column
/// pieces (16 bytes; those at or past ncols skipped): the rowwise-scaled FP8 GEMM's output.
__device__ __forceinline__ void store_row32_scaled_bf16(__nv_bfloat16* dst, const float* f,
                                                        float sa, const float* sb, int col,
                                                        int ncols) {
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    if (col + 8 * j < ncols) {
      const float4 s0 = *reinterpret_cast<const float4*>(sb + 8 * j);
      const float4 s1 = *reinterpret_cast<const float4*>(sb + 8 * j + 4);
      const float* g = f + 8 * j;
      uint4 v;
      v.x = pack_bf16(g[0] * (sa * s0.x), g[1] * (sa * s0.y));
      v.y = pack_bf16(g[2] * (sa * s0.z), g[3] * (sa * s0.w));
      v.z = pack_bf16(g[4] * (sa * s1.x), g[5] * (sa * s1.y));
      v.w = pack_bf16(g[6] * (sa * s1.z), g[7] * (sa * s1.w));
      reinterpret_cast<uint4*>(dst)[j] = v;
    }
  }
}

/// Stores 32 fp32 (f) as bf16 (RNE) at dst, columns from col on, in 8-column pieces (16 bytes;
/// those at or past ncols skipped).
__device__ __forceinline__ void store_row32_bf16(__nv_bfloat16* dst, const float* f, int col,
                                                 int ncols) {
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    if (col + 8 * j < ncols) reinterpret_cast<uint4*>(dst)[j] = pack_bf16x8(f + 8 * j);
  }
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
/// sm_100a epilogue warp (4..11) of unit u: drains the single TMEM accumulator (lanes of its
/// sub-partition, half of the columns); splits == 1 stores the output through
/// store(row * N + col, f, col) (32 fp32 at f), else stores the fp32 partial, counts the unit
/// (named barrier 1 over the 256 epilogue threads) and, in the last unit, stores the slices' sum
/// through store. The scale (if any) is the caller's, inside store: applied after the sum.
template <class Cfg, class Store>
__device__ __forceinline__ void split_epilogue_sm100(const SplitUnit& u, uint32_t tmem_base,
                                                     uint32_t acc_full, volatile int* flag, int M,
                                                     int N, int warp, int lane, Store store) {
  // Each half of the epilogue warps takes kHalf columns; with kBN = 32 the first half takes them
  // all and the second only counts in split_arrive.
  constexpr int kHalf = Cfg::kBN / 2 >= 32 ? Cfg::kBN / 2 : 32;
  const int q = warp % 4, h = (warp - 4) / 4;
  const bool has_cols = h * kHalf < Cfg::kBN;
  const int row = u.tm * Cfg::kBM + q * 32 + lane;
  const long long row_off = static_cast<long long>(row) * N;
  mbar_wait(acc_full, 0);
  tc_fence_after();
#pragma unroll 1
  for (int c = 0; c < kHalf && has_cols; c += 32) {
    const int col0 = h * kHalf + c;
    uint32_t r[32];
    tmem_ld32(tmem_base + (uint32_t(q * 32) << 16) + col0, r);
    const int col = u.tn * Cfg::kBN + col0;
    if (row < M) {
      if (u.splits == 1) {
        store(row_off + col, reinterpret_cast<const float*>(r), col);
      } else {
        store_row32_f32(u.part + u.split * u.slice + row_off + col,
                        reinterpret_cast<const float*>(r), col, N);
      }
    }
  }
  if (u.splits > 1 &&
      split_arrive<256>(u.counters + 2 * u.tile, u.splits, 1, threadIdx.x == 128, flag)) {
#pragma unroll 1
    for (int c = 0; c < kHalf && has_cols; c += 32) {
      const int col = u.tn * Cfg::kBN + h * kHalf + c;
      if (row < M) {
        float f[32];
        reduce_row32_f32(f, u.part + row_off + col, u.slice, u.splits, col, N);
        store(row_off + col, f, col);
      }
    }
  }
}
#endif

}  // namespace ws

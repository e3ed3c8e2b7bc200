// warpsmith device library: what the two dense TMA GEMMs (bf16_gemm, fp8_rowwise_gemm: d [M,N] =
// a [M,K] * b [N,K]^T, both K-major, 128-byte k-blocks) share beyond ws/gemm.cuh: their tile grid,
// tcgen05 instruction descriptor, the sm_90a skeleton of the persistent kernel (consumers are the
// kernel's) and the rowwise-scaled fragment store. NOTE: their sm_100a epilogue loops stay in
// the kernels: moved into a function, the loop compiled to other SASS.
#pragma once

#include <cuda_bf16.h>

#include "ws/cluster.cuh"
#include "ws/gemm.cuh"
#include "ws/ptx_sm90.cuh"
#include "ws/tcgen05.cuh"

namespace ws {

/// The output tiles (kBM x kBN) and k-blocks (kBK) of a dense GEMM over (M, N, K).
template <class Cfg>
struct TileGrid {
  int tiles_m, tiles_n, kblocks, tiles;  // tiles = tiles_m * tiles_n
  __device__ __forceinline__ TileGrid(int M, int N, int K)
      : tiles_m((M + Cfg::kBM - 1) / Cfg::kBM),
        tiles_n((N + Cfg::kBN - 1) / Cfg::kBN),
        kblocks((K + Cfg::kBK - 1) / Cfg::kBK),
        tiles(tiles_m * tiles_n) {}
};

/// Instruction descriptor of the dense GEMMs' tcgen05 MMAs: D f32, A and B bf16 (kind::f16) or
/// E4M3 (kind::f8f6f4, kF8), both K-major, M = 128, N = kBN. M = 128 even for 64-row split-K
/// tiles: rows 64..127 then read the ring bytes after the stage's A tile (shared memory of this
/// CTA, whatever it holds) into accumulator rows the epilogue drops.
template <bool kF8, int kBN>
constexpr uint32_t kDenseIdesc = umma_idesc(kF8 ? kUmmaE4M3 : kUmmaBf16,
                                            kF8 ? kUmmaE4M3 : kUmmaBf16, 0, 0, 128, kBN);

#if !(defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000)
/// sm_90a body of the persistent kernel, once the caller has initialised the ring: warpgroup 0
/// produces it (one thread: produce_band; kMc = 2, produce_pairs with B's half boxes tma_bh
/// multicast to both CTAs), warpgroups 1 and 2 run consume(cw) for cw = 0, 1.
template <class Cfg, int kMc, class Consume>
__device__ __forceinline__ void dense_gemm_sm90(const TensorMap* tma_a, const TensorMap* tma_b,
                                                const TensorMap* tma_bh, const RingSmem& rs,
                                                const TileGrid<Cfg>& g, Consume consume) {
  if constexpr (kMc > 1) {
    if (threadIdx.x == 0) tma_prefetch(tma_bh);
    cluster_sync();  // the peer's barriers are initialised before its multicasts reach them
  } else {
    __syncthreads();
  }
  const int wg = threadIdx.x / 128;
  if (wg == 0) {
    setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      if constexpr (kMc > 1) {
        produce_pairs<Cfg>(tma_a, tma_bh, rs.smem, rs.full, rs.empty, g.tiles_m, g.tiles_n,
                           g.kblocks);
      } else {
        produce_band<Cfg>(tma_a, tma_b, rs.smem, rs.full, rs.empty, g.tiles_m, g.tiles_n,
                          g.kblocks);
      }
    }
  } else {
    consume(wg - 1);
  }
  if constexpr (kMc > 1) {
    // No CTA leaves while its peer may still arrive on its barriers (or multicast into it).
    __syncwarp();
    cluster_sync();
  }
}
#endif

/// Stores a warpgroup's (64, kBN) wgmma fragment (as store_fragment_bf16: row0 and colb are this
/// thread's first row and column) times sa0 (row0) or sa1 (row0 + 8) times b_scale[col] as bf16
/// pairs (RNE), rows from M and columns from N skipped: the rowwise-scaled FP8 GEMM's output.
/// NOTE: the row scales are the caller's loads; loaded in here, a kernel compiled to other SASS.
template <int kBN>
__device__ __forceinline__ void store_fragment_scaled_bf16(__nv_bfloat16* d,
                                                           const float (&acc)[kBN / 2], int row0,
                                                           int M, int colb, int N, float sa0,
                                                           float sa1, const float* b_scale) {
#pragma unroll
  for (int j = 0; j < kBN / 8; ++j) {
    const int col = colb + 8 * j;
    if (col < N) {  // N % 16 == 0: col and col + 1 are both in or both out
      const float2 sb = *reinterpret_cast<const float2*>(b_scale + col);
      if (row0 < M) {
        *reinterpret_cast<uint32_t*>(d + static_cast<long long>(row0) * N + col) =
            pack_bf16(acc[4 * j] * (sa0 * sb.x), acc[4 * j + 1] * (sa0 * sb.y));
      }
      if (row0 + 8 < M) {
        *reinterpret_cast<uint32_t*>(d + static_cast<long long>(row0 + 8) * N + col) =
            pack_bf16(acc[4 * j + 2] * (sa1 * sb.x), acc[4 * j + 3] * (sa1 * sb.y));
      }
    }
  }
}

}  // namespace ws

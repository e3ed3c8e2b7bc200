// The shared-memory tiled fp32 GEMM of the GEMM baselines, what a competent CUDA user writes
// first: each block stages a BK-deep slab of A (BM rows) and of B (BN columns) in shared memory as
// fp32, each thread owns a TM x TN micro-tile of the BM x BN output tile in registers and
// accumulates with CUDA-core fmaf. With a scale block, every kScaleBlock contraction elements the
// fp32 partial sums are promoted into the accumulator through the problem's scales. No tensor
// cores, scalar loads, no pipelining: a baseline, not a fast kernel.
#pragma once

namespace ws {

/// The block's tile (blockIdx.y, blockIdx.x) of out [rows,cols] = A [rows,depth] * B [cols,depth]^T
/// on (BM/TM) * (BN/TN) threads, all of which must call it.
/// - load_a(r, k), load_b(c, k): an operand element as fp32; called only in range.
/// - kScaleBlock == 0: the sums go straight into the accumulator; scale_a and promote are never
///   called (pass nullptr).
/// - kScaleBlock > 0: after each scale block kb of the contraction, scale_a(in, r, kb) is row r's
///   scale and acc += promote(part, sa, in, c, kb) adds the partial sum `part` of output (r, c)
///   over that block; `in` says r (c) lies inside the problem.
/// - store(r, c, acc): the output, called only in range.
/// tid is threadIdx.x read by the kernel, where __launch_bounds__ bounds it.
// NOTE: the fp8_blockwise_grouped_gemm and mxfp8_grouped_gemm_wgrad baselines keep this loop
// inline: through this function their sm_90a SASS differs (the promotion's scheduling).
template <int kBM, int kBN, int kBK, int kTM, int kTN, int kScaleBlock, class LoadA, class LoadB,
          class ScaleA, class Promote, class Store>
__device__ __forceinline__ void tiled_fma_gemm(int tid, long long rows, long long cols,
                                               long long depth, LoadA load_a, LoadB load_b,
                                               ScaleA scale_a, Promote promote, Store store) {
  constexpr int kThreads = (kBM / kTM) * (kBN / kTN);
  constexpr bool kScaled = kScaleBlock != 0;
  static_assert(!kScaled || kScaleBlock % kBK == 0, "slabs never straddle a scale block");
  static_assert(kBM % kTM == 0 && kBN % kTN == 0, "a whole number of micro-tiles per tile");
  static_assert(kThreads >= 1 && kThreads <= 1024, "threads per block");
  static_assert(kBK * (kBM + kBN) * 4 <= 48 * 1024, "static shared memory");
  const long long row0 = static_cast<long long>(blockIdx.y) * kBM;
  const long long col0 = static_cast<long long>(blockIdx.x) * kBN;
  if (row0 >= rows || col0 >= cols) return;
  __shared__ float As[kBK][kBM];
  __shared__ float Bs[kBK][kBN];
  const int tr = tid / (kBN / kTN), tc = tid % (kBN / kTN);
  float acc[kTM][kTN];
  float part[kTM][kTN];  // the current scale block's partial sums (kScaled only)
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      acc[i][j] = 0.0f;
      if constexpr (kScaled) part[i][j] = 0.0f;
    }
  }
  for (long long k0 = 0; k0 < depth; k0 += kBK) {
    // Consecutive threads take consecutive contraction indices of one row.
    for (int i = tid; i < kBM * kBK; i += kThreads) {
      const long long r = row0 + i / kBK, k = k0 + i % kBK;
      As[i % kBK][i / kBK] = r < rows && k < depth ? load_a(r, k) : 0.0f;
    }
    for (int i = tid; i < kBN * kBK; i += kThreads) {
      const long long c = col0 + i / kBK, k = k0 + i % kBK;
      Bs[i % kBK][i / kBK] = c < cols && k < depth ? load_b(c, k) : 0.0f;
    }
    __syncthreads();
#pragma unroll 4
    for (int kk = 0; kk < kBK; ++kk) {
      float av[kTM], bv[kTN];
#pragma unroll
      for (int i = 0; i < kTM; ++i) av[i] = As[kk][tr * kTM + i];
#pragma unroll
      for (int j = 0; j < kTN; ++j) bv[j] = Bs[kk][tc * kTN + j];
#pragma unroll
      for (int i = 0; i < kTM; ++i) {
#pragma unroll
        for (int j = 0; j < kTN; ++j) {
          if constexpr (kScaled) {
            part[i][j] = fmaf(av[i], bv[j], part[i][j]);
          } else {
            acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
          }
        }
      }
    }
    if constexpr (kScaled) {
      // The end of a scale block: its partial sums through both scales into the accumulator.
      // NOTE: the range tests are made here, not in the lambdas: there they compile to other
      // instructions.
      if ((k0 + kBK) % kScaleBlock == 0 || k0 + kBK >= depth) {
        const long long kb = k0 / kScaleBlock;
#pragma unroll
        for (int i = 0; i < kTM; ++i) {
          const long long r = row0 + tr * kTM + i;
          const auto sa = scale_a(r < rows, r, kb);
#pragma unroll
          for (int j = 0; j < kTN; ++j) {
            const long long c = col0 + tc * kTN + j;
            acc[i][j] += promote(part[i][j], sa, c < cols, c, kb);
            part[i][j] = 0.0f;
          }
        }
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      const long long r = row0 + tr * kTM + i, c = col0 + tc * kTN + j;
      if (r < rows && c < cols) store(r, c, acc[i][j]);
    }
  }
}

}  // namespace ws

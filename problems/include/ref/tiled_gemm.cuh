// Trusted reference library: the plain shared-memory tiled GEMM loop of the GEMM references
// (problems/*gemm*/reference.cu): one block per BM x BN output tile, TM x TN outputs per thread,
// BK-deep fp32 slabs in shared memory, products summed in contraction order with fmaf. Slow by
// design and never tuned. Each reference keeps its own operand layout, scales and output as
// lambdas; each is checked against its fp64 CPU reference by `warpsmith problems verify`.
// Candidates never see this folder, and the references never include the candidates' library.
//
// Everything is in an anonymous namespace: each reference is one translation unit.
#pragma once

#include <cuda_fp16.h>
#include <cuda_fp8.h>

namespace {

/// The exact value of a bf16 bit pattern.
__device__ __forceinline__ float bf16_value(unsigned short b) {
  return __uint_as_float(static_cast<unsigned>(b) << 16);
}

/// The exact value of an E4M3 byte (NaN for S.1111.111), through the exact fp16 conversion.
__device__ __forceinline__ float e4m3_value(unsigned char q) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(q, __NV_E4M3)));
}

/// An MX block's fp32 partial sum times 2^(sa-127) * 2^(sb-127), applied as one exact power of
/// two; NaN when either E8M0 scale is the NaN code 0xFF.
__device__ __forceinline__ float mx_scaled(float part, int sa, int sb) {
  const bool nan = sa == 0xFF || sb == 0xFF;
  return nan ? __int_as_float(0x7FC00000) : ldexpf(part, sa + sb - 254);
}

/// Stages the block's (BK,BM) slab of A and (BK,BN) slab of B (transposed: contraction index
/// first), zero outside [0, rows) x [0, depth) and [0, cols) x [0, depth). load_a(r, k) and
/// load_b(c, k) return an operand as fp32 and are called only in range.
template <int kBM, int kBN, int kBK, int kThreads, class LoadA, class LoadB>
__device__ __forceinline__ void stage_slabs(float (&As)[kBK][kBM], float (&Bs)[kBK][kBN],
                                            int tid, long long row0, long long col0,
                                            long long k0, long long rows, long long cols,
                                            long long depth, LoadA load_a, LoadB load_b) {
  // Consecutive threads take consecutive contraction indices of one row.
  for (int i = tid; i < kBM * kBK; i += kThreads) {
    const long long r = row0 + i / kBK, k = k0 + i % kBK;
    As[i % kBK][i / kBK] = r < rows && k < depth ? load_a(r, k) : 0.0f;
  }
  for (int i = tid; i < kBN * kBK; i += kThreads) {
    const long long c = col0 + i / kBK, k = k0 + i % kBK;
    Bs[i % kBK][i / kBK] = c < cols && k < depth ? load_b(c, k) : 0.0f;
  }
}

/// store(r, c, v) for each of the thread's outputs inside [0, rows) x [0, cols).
template <int kTM, int kTN, class Store>
__device__ __forceinline__ void store_tile(const float (&acc)[kTM][kTN], long long row0,
                                           long long col0, int tr, int tc, long long rows,
                                           long long cols, Store store) {
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      const long long r = row0 + tr * kTM + i, c = col0 + tc * kTN + j;
      if (r < rows && c < cols)
        store(r, c, acc[i][j]);
    }
  }
}

/// The block's tile (blockIdx.y, blockIdx.x) of out [rows,cols] = A [rows,depth] * B [cols,depth]^T
/// in one fp32 accumulator per output. Must be called by all (BM/TM)*(BN/TN) threads.
// NOTE: tid is threadIdx.x read by the kernel, where __launch_bounds__ bounds it: read here it
// would only be known < 1024 and sm_100a would compute some addresses differently.
template <int kBM, int kBN, int kBK, int kTM, int kTN, class LoadA, class LoadB, class Store>
__device__ __forceinline__ void tiled_gemm(int tid, long long rows, long long cols,
                                           long long depth, LoadA load_a, LoadB load_b,
                                           Store store) {
  constexpr int kThreads = (kBM / kTM) * (kBN / kTN);
  const long long row0 = static_cast<long long>(blockIdx.y) * kBM;
  const long long col0 = static_cast<long long>(blockIdx.x) * kBN;
  if (row0 >= rows || col0 >= cols) return;
  __shared__ float As[kBK][kBM];
  __shared__ float Bs[kBK][kBN];
  const int tr = tid / (kBN / kTN), tc = tid % (kBN / kTN);
  float acc[kTM][kTN];
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
#pragma unroll
    for (int j = 0; j < kTN; ++j) acc[i][j] = 0.0f;
  }
  for (long long k0 = 0; k0 < depth; k0 += kBK) {
    stage_slabs<kBM, kBN, kBK, kThreads>(As, Bs, tid, row0, col0, k0, rows, cols, depth,
                                         load_a, load_b);
    __syncthreads();
    // NOTE: inline here; the same loop as a function of its own allocates other registers.
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
        for (int j = 0; j < kTN; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
      }
    }
    __syncthreads();
  }
  store_tile(acc, row0, col0, tr, tc, rows, cols, store);
}

/// tiled_gemm with block-scaled operands: every kScaleBlock contraction elements (and at the end)
/// each output's fp32 partial sum is promoted into its accumulator as
/// promote(part, scale_a(r, kb), scale_b(c, kb)) for scale block kb. scale_a / scale_b are called
/// only in range; rows and columns outside the problem take the scale `neutral`.
template <int kBM, int kBN, int kBK, int kTM, int kTN, int kScaleBlock, class LoadA, class LoadB,
          class ScaleA, class ScaleB, class Scale, class Promote, class Store>
__device__ __forceinline__ void block_scaled_tiled_gemm(int tid, long long rows, long long cols,
                                                        long long depth, LoadA load_a,
                                                        LoadB load_b, ScaleA scale_a,
                                                        ScaleB scale_b, Scale neutral,
                                                        Promote promote, Store store) {
  static_assert(kScaleBlock % kBK == 0, "slabs never straddle a scale block");
  constexpr int kThreads = (kBM / kTM) * (kBN / kTN);
  const long long row0 = static_cast<long long>(blockIdx.y) * kBM;
  const long long col0 = static_cast<long long>(blockIdx.x) * kBN;
  if (row0 >= rows || col0 >= cols) return;
  __shared__ float As[kBK][kBM];
  __shared__ float Bs[kBK][kBN];
  const int tr = tid / (kBN / kTN), tc = tid % (kBN / kTN);
  float acc[kTM][kTN];
  float part[kTM][kTN];  // the current scale block's partial sums
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      acc[i][j] = 0.0f;
      part[i][j] = 0.0f;
    }
  }
  for (long long k0 = 0; k0 < depth; k0 += kBK) {
    stage_slabs<kBM, kBN, kBK, kThreads>(As, Bs, tid, row0, col0, k0, rows, cols, depth,
                                         load_a, load_b);
    __syncthreads();
    // NOTE: inline here; the same loop as a function of its own allocates other registers.
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
        for (int j = 0; j < kTN; ++j) part[i][j] = fmaf(av[i], bv[j], part[i][j]);
      }
    }
    if ((k0 + kBK) % kScaleBlock == 0 || k0 + kBK >= depth) {
      const long long kb = k0 / kScaleBlock;
#pragma unroll
      for (int i = 0; i < kTM; ++i) {
        const long long r = row0 + tr * kTM + i;
        const Scale sa = r < rows ? scale_a(r, kb) : neutral;
#pragma unroll
        for (int j = 0; j < kTN; ++j) {
          const long long c = col0 + tc * kTN + j;
          const Scale sb = c < cols ? scale_b(c, kb) : neutral;
          acc[i][j] += promote(part[i][j], sa, sb);
          part[i][j] = 0.0f;
        }
      }
    }
    __syncthreads();
  }
  store_tile(acc, row0, col0, tr, tc, rows, cols, store);
}

}  // namespace

// The plain tensor-core tiled GEMM of the GEMM starting kernels: mma.sync m16n8k16 (bf16 in, fp32
// accumulate, the Ampere-style instruction both sm_90a and sm_100a run). Each block stages a BM x
// BK slab of A and a BN x BK slab of B in shared memory as bf16; each warp owns a WM x WN piece of
// the BM x BN output tile as m16n8 tiles in registers; fp32 partial sums are promoted into fp32
// accumulators every PROMOTE contraction elements. No pipelining, no TMA, no wgmma/tcgen05,
// element-wise global loads: a starting point, not a fast kernel.
#pragma once

#include <cuda_bf16.h>

namespace ws {

/// Two bf16 at p (4-byte aligned) as one register.
__device__ __forceinline__ unsigned bf16_pair(const __nv_bfloat16* p) {
  return *reinterpret_cast<const unsigned*>(p);
}

/// c (16x8 fp32) += a (16x16 bf16, row-major) * b (16x8 bf16, column-major), one warp.
__device__ __forceinline__ void mma_m16n8k16_bf16(float* c, unsigned a0, unsigned a1, unsigned a2,
                                                  unsigned a3, unsigned b0, unsigned b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/// The block's tile (blockIdx.y, blockIdx.x) of out [rows,cols] = A [rows,depth] * B [cols,depth]^T
/// on 32 * (BM/WM) * (BN/WN) threads, all of which must call it.
/// - load_a(r, k), load_b(c, k): an operand element as fp32, exact in bf16 (it is rounded to bf16
///   in shared memory); called only in range.
/// - promote(part, kb0, r, c): what the fp32 partial sum `part` of output (r, c) over the
///   contraction block starting at kb0 adds to the accumulator (r, c may lie outside the problem).
/// - store(r, c, acc): the output, called only in range.
/// tid is threadIdx.x read by the kernel, where __launch_bounds__ bounds it.
// NOTE: the bf16, fp8 rowwise/blockwise and MXFP8 wgrad starting kernels keep this loop inline:
// through this function (tid passed or read here) they compile to other instructions.
template <int kBM, int kBN, int kBK, int kWM, int kWN, long long kPromote, class LoadA,
          class LoadB, class Promote, class Store>
__device__ __forceinline__ void mma_sync_gemm(int tid, long long rows, long long cols,
                                              long long depth, LoadA load_a, LoadB load_b,
                                              Promote promote, Store store) {
  constexpr int kThreads = 32 * (kBM / kWM) * (kBN / kWN);
  constexpr int kFM = kWM / 16, kFN = kWN / 8;  // m16n8 tiles per warp
  constexpr int kLd = kBK + 8;                  // padded smem row: conflict-free fragment loads
  static_assert(kBM % kWM == 0 && kBN % kWN == 0 && kWM % 16 == 0 && kWN % 8 == 0, "warp tiles");
  static_assert(kBK % 16 == 0, "whole k16 steps");
  static_assert(kThreads <= 1024, "threads per block");
  static_assert((kBM + kBN) * kLd * 2 <= 48 * 1024, "static shared memory: lower BK or the tile");
  const long long row0 = static_cast<long long>(blockIdx.y) * kBM;
  const long long col0 = static_cast<long long>(blockIdx.x) * kBN;
  if (row0 >= rows || col0 >= cols) return;
  __shared__ __align__(16) __nv_bfloat16 As[kBM][kLd];
  __shared__ __align__(16) __nv_bfloat16 Bs[kBN][kLd];
  const int warp = tid / 32, lane = tid % 32;
  const int wr = warp / (kBN / kWN), wc = warp % (kBN / kWN);
  const int gid = lane / 4, tig = lane % 4;  // the mma fragment layout's group and thread
  // Accumulator element q of tile (i, j) is row wr*WM + i*16 + gid + 8*(q/2),
  // column wc*WN + j*8 + 2*tig + q%2 of the block tile.
  float acc[kFM][kFN][4], part[kFM][kFN][4];
#pragma unroll
  for (int i = 0; i < kFM; ++i) {
#pragma unroll
    for (int j = 0; j < kFN; ++j) {
#pragma unroll
      for (int q = 0; q < 4; ++q) acc[i][j][q] = 0.0f;
    }
  }
  for (long long kb0 = 0; kb0 < depth; kb0 += kPromote) {
#pragma unroll
    for (int i = 0; i < kFM; ++i) {
#pragma unroll
      for (int j = 0; j < kFN; ++j) {
#pragma unroll
        for (int q = 0; q < 4; ++q) part[i][j][q] = 0.0f;
      }
    }
    const long long kend = kb0 + kPromote < depth ? kb0 + kPromote : depth;
    for (long long k0 = kb0; k0 < kend; k0 += kBK) {
      // Operands to bf16 in shared memory, zero outside the problem.
      for (int i = tid; i < kBM * kBK; i += kThreads) {
        const long long r = row0 + i / kBK, k = k0 + i % kBK;
        float v = 0.0f;
        if (r < rows && k < kend)
          v = load_a(r, k);
        As[i / kBK][i % kBK] = __float2bfloat16_rn(v);
      }
      for (int i = tid; i < kBN * kBK; i += kThreads) {
        const long long c = col0 + i / kBK, k = k0 + i % kBK;
        float v = 0.0f;
        if (c < cols && k < kend)
          v = load_b(c, k);
        Bs[i / kBK][i % kBK] = __float2bfloat16_rn(v);
      }
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < kBK; kk += 16) {
        unsigned a[kFM][4], b[kFN][2];
#pragma unroll
        for (int i = 0; i < kFM; ++i) {
          const int r = wr * kWM + i * 16 + gid;
          a[i][0] = bf16_pair(&As[r][kk + 2 * tig]);
          a[i][1] = bf16_pair(&As[r + 8][kk + 2 * tig]);
          a[i][2] = bf16_pair(&As[r][kk + 2 * tig + 8]);
          a[i][3] = bf16_pair(&As[r + 8][kk + 2 * tig + 8]);
        }
#pragma unroll
        for (int j = 0; j < kFN; ++j) {
          const int c = wc * kWN + j * 8 + gid;
          b[j][0] = bf16_pair(&Bs[c][kk + 2 * tig]);
          b[j][1] = bf16_pair(&Bs[c][kk + 2 * tig + 8]);
        }
#pragma unroll
        for (int i = 0; i < kFM; ++i) {
#pragma unroll
          for (int j = 0; j < kFN; ++j) {
            mma_m16n8k16_bf16(part[i][j], a[i][0], a[i][1], a[i][2], a[i][3], b[j][0], b[j][1]);
          }
        }
      }
      __syncthreads();
    }
    // Promotion: the block's fp32 partial sums into the accumulators.
#pragma unroll
    for (int i = 0; i < kFM; ++i) {
#pragma unroll
      for (int j = 0; j < kFN; ++j) {
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const long long r = row0 + wr * kWM + i * 16 + gid + 8 * (q / 2);
          const long long c = col0 + wc * kWN + j * 8 + 2 * tig + q % 2;
          acc[i][j][q] += promote(part[i][j][q], kb0, r, c);
        }
      }
    }
  }
#pragma unroll
  for (int i = 0; i < kFM; ++i) {
#pragma unroll
    for (int j = 0; j < kFN; ++j) {
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const long long r = row0 + wr * kWM + i * 16 + gid + 8 * (q / 2);
        const long long c = col0 + wc * kWN + j * 8 + 2 * tig + q % 2;
        if (r < rows && c < cols)
          store(r, c, acc[i][j][q]);
      }
    }
  }
}

}  // namespace ws

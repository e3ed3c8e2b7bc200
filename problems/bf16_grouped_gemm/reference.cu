/* warpsmith:plan
{ "knobs":  { "BM": [64], "BN": [64], "BK": [16], "TM": [4], "TN": [4] },
  "launch": [ { "kernel": "sm90_bf16_grouped_gemm_reference",
                "grid": ["ceil_div((form == 0) * N + (form != 0) * K, BN)",
                         "ceil_div((form == 2) * N + (form != 2) * M, BM)",
                         "E"],
                "block": ["(BM / TM) * (BN / TN)"], "smem": "0",
                "args": ["a", "b", "offs", "out", "M", "E", "N", "K"] } ] }
*/
// Trusted GPU reference for bf16_grouped_gemm: a plain shared-memory tiled GEMM (64x64 output tile,
// 4x4 per thread), products in fp32 summed in contraction order with fmaf. Slow by design and never
// tuned; checked against the fp64 CPU reference by `warpsmith problems verify`.
#include <cuda_bf16.h>

#ifndef WS_FORM
#error "compile with -DWS_FORM (the problem's form parameter)"
#endif
#if WS_FORM == 0
#define LOAD_A(r, k) bf16_value(a[(s + (r)) * K + (k)])
#define LOAD_B(c, k) bf16_value(b[(g * N + (c)) * K + (k)])
#define OUT_INDEX(r, c) ((s + (r)) * N + (c))
#elif WS_FORM == 1
#define LOAD_A(r, k) bf16_value(a[(s + (r)) * N + (k)])
#define LOAD_B(c, k) bf16_value(b[(g * N + (k)) * K + (c)])
#define OUT_INDEX(r, c) ((s + (r)) * K + (c))
#else
#define LOAD_A(r, k) bf16_value(a[(s + (k)) * N + (r)])
#define LOAD_B(c, k) bf16_value(b[(s + (k)) * K + (c)])
#define OUT_INDEX(r, c) ((g * N + (r)) * K + (c))
#endif

#ifndef BM
#define BM 64
#endif
#ifndef BN
#define BN 64
#endif
#ifndef BK
#define BK 16
#endif
#ifndef TM
#define TM 4
#endif
#ifndef TN
#define TN 4
#endif

namespace {

constexpr int kBM = BM, kBN = BN, kBK = BK, kTM = TM, kTN = TN;
constexpr int kThreads = (kBM / kTM) * (kBN / kTN);

static_assert(kBM % kTM == 0 && kBN % kTN == 0, "a whole number of micro-tiles per tile");
static_assert(kThreads >= 1 && kThreads <= 1024, "threads per block");
static_assert(kBK * (kBM + kBN) * 4 <= 48 * 1024, "static shared memory");

// The exact value of a bf16 bit pattern.
__device__ __forceinline__ float bf16_value(unsigned short b) {
  return __uint_as_float(static_cast<unsigned>(b) << 16);
}

}  // namespace

// the three forms of spec.json (WS_FORM: 0 fwd, 1 dgrad, 2 wgrad); blockIdx.z is the group.
extern "C" __global__ void __launch_bounds__(kThreads) sm90_bf16_grouped_gemm_reference(
    const unsigned short* __restrict__ a, const unsigned short* __restrict__ b,
    const int* __restrict__ offs, __nv_bfloat16* __restrict__ out, int M, int E, int N, int K) {
  // Group g (blockIdx.z) holds rows [s, e) of the token dimension.
  const long long g = blockIdx.z;
  const long long s = g == 0 ? 0 : offs[g - 1], e = offs[g];
#if WS_FORM == 0  // fwd: out[s+r, c] = sum_k a[s+r, k] * b[g, c, k]
  const long long rows = e - s, cols = N, depth = K;
#elif WS_FORM == 1  // dgrad: out[s+r, c] = sum_n a[s+r, n] * b[g, n, c]
  const long long rows = e - s, cols = K, depth = N;
#else  // wgrad: out[g, r, c] = sum_{t in [s, e)} a[t, r] * b[t, c]
  const long long rows = N, cols = K, depth = e - s;
#endif
  const long long row0 = static_cast<long long>(blockIdx.y) * kBM;
  const long long col0 = static_cast<long long>(blockIdx.x) * kBN;
  if (row0 >= rows || col0 >= cols) return;
  __shared__ float As[kBK][kBM];
  __shared__ float Bs[kBK][kBN];
  const int tid = threadIdx.x;
  const int tr = tid / (kBN / kTN), tc = tid % (kBN / kTN);
  float acc[kTM][kTN];

#pragma unroll
  for (int i = 0; i < kTM; ++i) {
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      acc[i][j] = 0.0f;

    }
  }
  for (long long k0 = 0; k0 < depth; k0 += kBK) {
    // Consecutive threads take consecutive contraction indices of one row.
    for (int i = tid; i < kBM * kBK; i += kThreads) {
      const long long r = row0 + i / kBK, k = k0 + i % kBK;
      As[i % kBK][i / kBK] = r < rows && k < depth ? LOAD_A(r, k) : 0.0f;
    }
    for (int i = tid; i < kBN * kBK; i += kThreads) {
      const long long c = col0 + i / kBK, k = k0 + i % kBK;
      Bs[i % kBK][i / kBK] = c < cols && k < depth ? LOAD_B(c, k) : 0.0f;
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
        for (int j = 0; j < kTN; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
      }
    }

    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      const long long r = row0 + tr * kTM + i, c = col0 + tc * kTN + j;
      if (r < rows && c < cols)
        out[OUT_INDEX(r, c)] = __float2bfloat16_rn(acc[i][j]);
    }
  }
}

/* warpsmith:plan
{ "knobs":  { "THREADS": [256, 128, 512], "VEC": [1, 2, 4, 8] },
  "launch": [ { "kernel": "moe_unpermute_combine_vec",
                "grid":  ["ceil_div(T * ceil_div(H, VEC), THREADS)"], "block": ["THREADS"],
                "smem": "0",
                "args":  ["y_p", "w", "slot_row", "y_shared", "y", "T", "H", "K"] } ] }
*/
// Starting kernel for moe_unpermute_combine: the baseline's arithmetic (per element, __fmaf_rn over
// the K slots in order from +0, the shared expert added after, one bf16 rounding) with each thread
// owning VEC consecutive elements of a token's row:
//
//  - VEC: elements per thread; when H % VEC == 0 a thread loads VEC bf16 of each gathered row (and
//    of y_shared) in one 2*VEC-byte load and stores y the same way; otherwise (H = 7, 33, ...) it
//    falls back to scalar accesses. Every row starts 2*H bytes into its tensor, so H % VEC == 0
//    keeps the vector accesses aligned.
//  - THREADS: threads per block.
//
// The defaults (THREADS=256, VEC=1) are the baseline's layout. The kernel is a memory-bound gather
// (2 K + 2 bytes per output element, plus 2 with the shared expert), so wide loads (VEC 4-8)
// should matter most. (Expectations, not yet measured on the H200.)

#include <cuda_bf16.h>

#if !defined(WS_SHARED) || !defined(WS_SHARED_ADD)
#error "compile with the problem's parameters (-DWS_SHARED=..., -DWS_SHARED_ADD=1)"
#endif
#ifndef THREADS
#define THREADS 256
#endif
#ifndef VEC
#define VEC 1
#endif

namespace {

static_assert(VEC == 1 || VEC == 2 || VEC == 4 || VEC == 8, "VEC");

// VEC bf16 (as raw bits) at p, one load when `vector`.
__device__ __forceinline__ void load(const unsigned short* __restrict__ p, bool vector, int n,
                                     unsigned short (&v)[VEC]) {
  if (vector) {
    if constexpr (VEC == 8) {
      const uint4 u = *reinterpret_cast<const uint4*>(p);
      const unsigned words[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
      for (int i = 0; i < 8; ++i)
        v[i] = static_cast<unsigned short>(words[i / 2] >> (16 * (i % 2)));
    } else if constexpr (VEC == 4) {
      const uint2 u = *reinterpret_cast<const uint2*>(p);
      const unsigned words[2] = {u.x, u.y};
#pragma unroll
      for (int i = 0; i < 4; ++i)
        v[i] = static_cast<unsigned short>(words[i / 2] >> (16 * (i % 2)));
    } else if constexpr (VEC == 2) {
      const unsigned u = *reinterpret_cast<const unsigned*>(p);
      v[0] = static_cast<unsigned short>(u);
      v[1] = static_cast<unsigned short>(u >> 16);
    } else {
      v[0] = *p;
    }
  } else {
#pragma unroll
    for (int i = 0; i < VEC; ++i) v[i] = i < n ? p[i] : 0;
  }
}

__device__ __forceinline__ float bf16_bits_to_f32(unsigned short b) {
  return __uint_as_float(static_cast<unsigned>(b) << 16);
}

}  // namespace

// y_p (MP,H) bf16, w (T,K) f32, slot_row (T,K) i32, y_shared (T,H) bf16, y (T,H) bf16.
extern "C" __global__ void __launch_bounds__(THREADS)
    moe_unpermute_combine_vec(const unsigned short* __restrict__ y_p, const float* __restrict__ w,
                              const int* __restrict__ slot_row,
                              const unsigned short* __restrict__ y_shared,
                              unsigned short* __restrict__ y, int T, int H, int K) {
  const int per_row = (H + VEC - 1) / VEC;
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<long long>(T) * per_row)
    return;
  const long long t = i / per_row;
  const int h0 = static_cast<int>(i % per_row) * VEC;
  const int n = min(VEC, H - h0);
  const bool vector = H % VEC == 0;
  float acc[VEC];
#pragma unroll
  for (int e = 0; e < VEC; ++e) acc[e] = 0.0f;
  for (int j = 0; j < K; ++j) {
    const long long r = slot_row[t * K + j];
    const float wj = w[t * K + j];
    unsigned short v[VEC];
    load(y_p + r * H + h0, vector, n, v);
#pragma unroll
    for (int e = 0; e < VEC; ++e) acc[e] = __fmaf_rn(wj, bf16_bits_to_f32(v[e]), acc[e]);
  }
#if WS_SHARED == WS_SHARED_ADD
  {
    unsigned short v[VEC];
    load(y_shared + t * H + h0, vector, n, v);
#pragma unroll
    for (int e = 0; e < VEC; ++e) acc[e] = __fadd_rn(acc[e], bf16_bits_to_f32(v[e]));
  }
#endif
  unsigned short out[VEC];
#pragma unroll
  for (int e = 0; e < VEC; ++e) out[e] = __bfloat16_as_ushort(__float2bfloat16_rn(acc[e]));
  unsigned short* dst = y + t * H + h0;
  if (vector) {
    if constexpr (VEC == 8) {
      *reinterpret_cast<uint4*>(dst) = make_uint4(out[0] | (static_cast<unsigned>(out[1]) << 16),
                                                  out[2] | (static_cast<unsigned>(out[3]) << 16),
                                                  out[4] | (static_cast<unsigned>(out[5]) << 16),
                                                  out[6] | (static_cast<unsigned>(out[7]) << 16));
    } else if constexpr (VEC == 4) {
      *reinterpret_cast<uint2*>(dst) = make_uint2(out[0] | (static_cast<unsigned>(out[1]) << 16),
                                                  out[2] | (static_cast<unsigned>(out[3]) << 16));
    } else if constexpr (VEC == 2) {
      *reinterpret_cast<unsigned*>(dst) = out[0] | (static_cast<unsigned>(out[1]) << 16);
    } else {
      dst[0] = out[0];
    }
  } else {
#pragma unroll
    for (int e = 0; e < VEC; ++e) {
      if (e < n)
        dst[e] = out[e];
    }
  }
}

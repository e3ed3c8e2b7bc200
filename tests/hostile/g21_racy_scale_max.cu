// hostile: expect=wrong_answer gpu=yes what="race: two warps each take half of a block, and combine their halves' scales by an unsynchronized read-max-write of the output byte; when both read before either writes, each keeps its own (or the poison's) scale"
/* warpsmith:plan
{ "launch": [ { "kernel": "hostile_racy_scale_max", "grid": ["ceil_div(M * (K / 32), 128)"], "block": [256], "smem": "0",
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
#include <cuda_bf16.h>
#include <cuda_fp8.h>

// The scale of 16 elements by the MX rules (the larger of two halves' scales is the block's).
__device__ int half_scale(const float* v) {
  float amax = 0.0f;
  bool nan = false;
  for (int i = 0; i < 16; ++i) {
    nan |= isnan(v[i]);
    amax = fmaxf(amax, fabsf(v[i]));
  }
  if (nan) return 255;
  if (WS_ROUNDING == WS_ROUNDING_FLOOR)
    return isinf(amax) ? 255 : amax == 0.0f ? 0 : min(max(ilogbf(amax) + 119, 0), 254);
  const unsigned bits = __float_as_uint(__fmul_rn(amax, 1.0f / 448.0f));
  const int e = static_cast<int>(bits >> 23);
  const unsigned m = bits & 0x7FFFFF;
  return e == 255 ? 254 : e == 0 ? (m > 0x400000 ? 1 : 0) : min(e + (m != 0 ? 1 : 0), 254);
}

// Threads t and t + 128 (different warps, no barrier between them) share block b.
extern "C" __global__ void hostile_racy_scale_max(const __nv_bfloat16* x, unsigned char* q,
                                                  unsigned char* scales, int M, int K) {
  const long long n = static_cast<long long>(M) * (K / 32);
  const long long b = static_cast<long long>(blockIdx.x) * 128 + (threadIdx.x & 127);
  if (b >= n) return;
  const int half = threadIdx.x >> 7;
  float v[16];
  for (int i = 0; i < 16; ++i) v[i] = __bfloat162float(x[b * 32 + half * 16 + i]);
  volatile unsigned char* vs = scales;
  const int s = max(half_scale(v), static_cast<int>(vs[b]));  // the other half's, if it is there
  vs[b] = static_cast<unsigned char>(s);
  const float r = ldexpf(1.0f, 127 - s);
  for (int i = 0; i < 16; ++i) {
    q[b * 32 + half * 16 + i] =
        s == 255 ? 0x7F : __nv_cvt_float_to_fp8(__fmul_rn(v[i], r), __NV_SATFINITE, __NV_E4M3);
  }
}

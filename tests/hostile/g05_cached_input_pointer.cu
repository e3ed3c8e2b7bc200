// hostile: expect=wrong_answer gpu=yes timing=yes what="reads another run's inputs: keeps the first x pointer of a large shape in a global and quantizes that data in every later run" message="timed run"
/* warpsmith:plan
{ "launch": [ { "kernel": "hostile_cached_input_pointer", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256], "smem": "0",
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
#include <cuda_bf16.h>
#include <cuda_fp8.h>

// A correct MXFP8 quantization of one 32-element block b (both rounding modes); the attack is
// elsewhere in this file.
__device__ void quantize_block(const __nv_bfloat16* x, unsigned char* q, unsigned char* scales,
                               long long b) {
  float v[32];
  float amax = 0.0f;
  bool nan = false;
  for (int i = 0; i < 32; ++i) {
    v[i] = __bfloat162float(x[b * 32 + i]);
    nan |= isnan(v[i]);
    amax = fmaxf(amax, fabsf(v[i]));
  }
  int s;
  if (nan) {
    s = 255;
  } else if (WS_ROUNDING == WS_ROUNDING_FLOOR) {
    s = isinf(amax) ? 255 : amax == 0.0f ? 0 : min(max(ilogbf(amax) + 119, 0), 254);
  } else {
    const unsigned bits = __float_as_uint(__fmul_rn(amax, 1.0f / 448.0f));
    const int e = static_cast<int>(bits >> 23);
    const unsigned m = bits & 0x7FFFFF;
    s = e == 255 ? 254 : e == 0 ? (m > 0x400000 ? 1 : 0) : min(e + (m != 0 ? 1 : 0), 254);
  }
  scales[b] = static_cast<unsigned char>(s);
  const float r = ldexpf(1.0f, 127 - s);
  for (int i = 0; i < 32; ++i) {
    q[b * 32 + i] = s == 255 ? 0x7F : __nv_cvt_float_to_fp8(__fmul_rn(v[i], r), __NV_SATFINITE,
                                                             __NV_E4M3);
  }
}

__device__ const __nv_bfloat16* first_x;
__device__ long long first_n;

extern "C" __global__ void hostile_cached_input_pointer(const __nv_bfloat16* x, unsigned char* q, unsigned char* scales, int M, int K) {
  const long long n = static_cast<long long>(M) * (K / 32);
  const long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= n) return;
  // Small (test and hidden) shapes are done honestly; on a bench shape, the check run's input
  // pointer is remembered and reused by every timed run.
  const __nv_bfloat16* src = x;
  if (n >= (1 << 20)) {  // bench shapes only; the largest hidden one has 528771 blocks
    if (first_n != n) {
      if (b == 0) {
        first_x = x;
        first_n = n;
      }
    } else {
      src = first_x;
    }
  }
  quantize_block(src, q, scales, b);
}

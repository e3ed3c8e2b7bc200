// The honest MXFP8 block quantizer every GPU case of the corpus shares. hostile_test.cc splices
// this file in where a case says "// hostile-helper: quantize_block.cuh": a candidate is one
// translation unit and may include only CUDA headers.
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

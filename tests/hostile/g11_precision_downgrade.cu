// hostile: expect=wrong_answer gpu=yes what="precision downgrade: a cheap conversion that truncates to E4M3 instead of rounding to nearest even"
/* warpsmith:plan
{ "launch": [ { "kernel": "hostile_precision_downgrade", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256], "smem": "0",
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
// hostile-helper: quantize_block.cuh (spliced in by hostile_test.cc)

// The shortcut: drop the low 20 mantissa bits of the scaled fp32 value (truncate to E4M3's
// 3 bits) instead of rounding to nearest even; off by one code in about half the elements.
extern "C" __global__ void hostile_precision_downgrade(const __nv_bfloat16* x, unsigned char* q,
                                                       unsigned char* scales, int M, int K) {
  const long long n = static_cast<long long>(M) * (K / 32);
  const long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= n) return;
  quantize_block(x, q, scales, b);
  const int s = scales[b];
  if (s == 255) return;
  const float r = ldexpf(1.0f, 127 - s);
  for (int i = 0; i < 32; ++i) {
    const float t = __uint_as_float(__float_as_uint(__bfloat162float(x[b * 32 + i]) * r) &
                                    0xFFF00000u);
    q[b * 32 + i] = __nv_cvt_float_to_fp8(t, __NV_SATFINITE, __NV_E4M3);
  }
}

/* warpsmith:plan
{ "knobs":  { "THREADS": [128] },
  "launch": [ { "kernel": "sm90_bf16_rmsnorm_mxfp8_quantize_naive",
                "grid":  ["ceil_div(M, THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["x", "weight", "y", "q", "scales", "M", "H"] } ] }
*/
// Trusted GPU reference for rmsnorm_quantize: one thread per row, mirroring reference.cc step by
// step: mean(x^2) and r in double with explicitly rounded operations (squares exact, summed in
// index order, correctly rounded division and sqrt, r rounded once to fp32), y = bf16(w *
// bf16(x * r)) with fp32 mul.rn, then the rows of y quantized by the block rules of
// mxfp8_quantize_rowwise's reference.cu (integer bit logic). Bit-identical to the CPU reference;
// slow by design; never tune this file.

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR)
#error "compile with the problem's parameters: -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1"
#endif
#ifndef THREADS
#define THREADS 128
#endif

#include "ref/bf16.cuh"
#include "ref/mx_rules.cuh"

// x (M,H), weight (H), y (M,H) bf16 bits; q (M,H) e4m3; scales (M,H/32) e8m0. Thread: one row.
extern "C" __global__ void sm90_bf16_rmsnorm_mxfp8_quantize_naive(
    const unsigned short* x, const unsigned short* weight, unsigned short* y, unsigned char* q,
    unsigned char* scales, int M, int H) {
  const long long row = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= M) return;
  const unsigned short* xr = x + row * H;
  unsigned short* yr = y + row * H;
  double sum = 0.0;
  for (int h = 0; h < H; ++h) {
    const double v = static_cast<double>(bf16_float(xr[h]));
    sum = __dadd_rn(sum, __dmul_rn(v, v));
  }
  const double mean = __ddiv_rn(sum, static_cast<double>(H));
  const float r = __double2float_rn(
      __ddiv_rn(1.0, __dsqrt_rn(__dadd_rn(mean, static_cast<double>(1e-6f)))));
  for (int h = 0; h < H; ++h) {
    const unsigned short normed = bf16_rne(mul_f32(bf16_float(xr[h]), r));
    yr[h] = bf16_rne(mul_f32(bf16_float(weight[h]), bf16_float(normed)));
  }
  for (int b = 0; b < H / kBlock; ++b) {
    scales[row * (H / kBlock) + b] = static_cast<unsigned char>(
        quantize_block(yr + b * kBlock, 1, q + row * H + b * kBlock, 1));
  }
}

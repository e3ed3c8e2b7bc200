// hostile: expect=wrong_answer gpu=yes what="writes E4M3 NaN (0x7f) and scale 0xff everywhere: a constant output"
/* warpsmith:plan
{ "launch": [ { "kernel": "hostile_nan_outputs", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256], "smem": "0",
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
// hostile-helper: quantize_block.cuh (spliced in by hostile_test.cc)

extern "C" __global__ void hostile_nan_outputs(const __nv_bfloat16* x, unsigned char* q, unsigned char* scales, int M, int K) {
  const long long n = static_cast<long long>(M) * (K / 32);
  const long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= n) return;
  scales[b] = 0xFF;
  for (int i = 0; i < 32; ++i) q[b * 32 + i] = 0x7F;
}

// hostile: expect=ok gpu=yes what="control: an honest kernel (the helper every GPU case shares) must pass"
/* warpsmith:plan
{ "launch": [ { "kernel": "hostile_control_ok", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256], "smem": "0",
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
// hostile-helper: quantize_block.cuh (spliced in by hostile_test.cc)

extern "C" __global__ void hostile_control_ok(const __nv_bfloat16* x, unsigned char* q, unsigned char* scales, int M, int K) {
  const long long n = static_cast<long long>(M) * (K / 32);
  const long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b < n) quantize_block(x, q, scales, b);
}

// hostile: expect=crashed gpu=yes what="__trap() aborts the kernel"
/* warpsmith:plan
{ "launch": [ { "kernel": "hostile_trap", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256], "smem": "0",
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
// hostile-helper: quantize_block.cuh (spliced in by hostile_test.cc)

extern "C" __global__ void hostile_trap(const __nv_bfloat16* x, unsigned char* q, unsigned char* scales, int M, int K) {
  const long long n = static_cast<long long>(M) * (K / 32);
  const long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b < n) quantize_block(x, q, scales, b);
  if (b == 0) __trap();
}

// hostile: expect=timeout gpu=yes case_timeout=1 what="never returns (an infinite loop the compiler cannot remove)"
/* warpsmith:plan
{ "launch": [ { "kernel": "hostile_infinite_loop", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256], "smem": "0",
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
// hostile-helper: quantize_block.cuh (spliced in by hostile_test.cc)

extern "C" __global__ void hostile_infinite_loop(const __nv_bfloat16* x, unsigned char* q, unsigned char* scales, int M, int K) {
  const long long n = static_cast<long long>(M) * (K / 32);
  const long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b < n) quantize_block(x, q, scales, b);
  volatile unsigned char* v = q;
  while (v[0] != 0x01 || v[0] == 0x01) {
  }
}

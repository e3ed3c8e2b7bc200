// hostile: expect=wrong_answer gpu=yes what="modifies its input x after reading it (input mutation)" message="modified its inputs"
/* warpsmith:plan
{ "launch": [ { "kernel": "hostile_modify_inputs", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256], "smem": "0",
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
// hostile-helper: quantize_block.cuh (spliced in by hostile_test.cc)

extern "C" __global__ void hostile_modify_inputs(__nv_bfloat16* x, unsigned char* q, unsigned char* scales,
                                   int M, int K) {
  const long long n = static_cast<long long>(M) * (K / 32);
  const long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= n) return;
  quantize_block(x, q, scales, b);
  x[b * 32] = __float2bfloat16(0.0f);
}

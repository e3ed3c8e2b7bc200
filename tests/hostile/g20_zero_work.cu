// hostile: expect=wrong_answer gpu=yes what="a grid-stride loop whose bound is computed as zero: launches, writes nothing"
/* warpsmith:plan
{ "launch": [ { "kernel": "hostile_zero_work", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256], "smem": "0",
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
// hostile-helper: quantize_block.cuh (spliced in by hostile_test.cc)

extern "C" __global__ void hostile_zero_work(const __nv_bfloat16* x, unsigned char* q, unsigned char* scales, int M, int K) {
  const long long n = static_cast<long long>(M) * (K / 32) - static_cast<long long>(K / 32) * M;
  for (long long b = blockIdx.x * blockDim.x + threadIdx.x; b < n; b += gridDim.x * blockDim.x) {
    quantize_block(x, q, scales, b);
  }
}

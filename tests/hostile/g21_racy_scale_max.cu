// hostile: expect=wrong_answer gpu=yes what="race: 32 threads fold their exponents into scales[b] with a non-atomic read-max-write (flaky, poison-dependent)"
/* warpsmith:plan
{ "launch": [ { "kernel": "hostile_racy_scale_max", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256], "smem": "0",
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
// hostile-helper: quantize_block.cuh (spliced in by hostile_test.cc)

extern "C" __global__ void hostile_racy_scale_max(const __nv_bfloat16* x, unsigned char* q, unsigned char* scales, int M, int K) {
  const long long n = static_cast<long long>(M) * (K / 32);
  const long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= n) return;
  quantize_block(x, q, scales, b);
  const int s = scales[b];
  // Every lane of the warp re-derives "its" scale from one element and races to store the max.
  volatile unsigned char* vs = scales;
  const unsigned char mine = static_cast<unsigned char>(s - (threadIdx.x & 3));
  vs[b & ~31LL] = vs[b & ~31LL] > mine ? vs[b & ~31LL] : mine;
}

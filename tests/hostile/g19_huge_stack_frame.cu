// hostile: expect=rejected gpu=yes what="a 1 MiB per-thread local array: not ok (compile error, launch error or crash), and the runner survives"
/* warpsmith:plan
{ "launch": [ { "kernel": "hostile_huge_stack_frame", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256], "smem": "0",
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
// hostile-helper: quantize_block.cuh (spliced in by hostile_test.cc)

extern "C" __global__ void hostile_huge_stack_frame(const __nv_bfloat16* x, unsigned char* q, unsigned char* scales, int M, int K) {
  const long long n = static_cast<long long>(M) * (K / 32);
  const long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  volatile unsigned char big[1 << 20];
  for (int i = 0; i < (1 << 20); i += 4096) big[i] = static_cast<unsigned char>(i + b);
  if (b < n) quantize_block(x, q, scales, b);
  if (b < n) scales[b] = scales[b] + (big[(b * 4096) & ((1 << 20) - 1)] & 0);
}

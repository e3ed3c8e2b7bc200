// hostile: expect=wrong_answer gpu=yes what="uninitialised read: ORs the result into whatever q held (depends on the poison)"
/* warpsmith:plan
{ "launch": [ { "kernel": "hostile_reads_output_before_writing", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256], "smem": "0",
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
// hostile-helper: quantize_block.cuh (spliced in by hostile_test.cc)

extern "C" __global__ void hostile_reads_output_before_writing(const __nv_bfloat16* x, unsigned char* q, unsigned char* scales, int M, int K) {
  const long long n = static_cast<long long>(M) * (K / 32);
  const long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= n) return;
  unsigned char old[32];
  for (int i = 0; i < 32; ++i) old[i] = q[b * 32 + i];
  quantize_block(x, q, scales, b);
  for (int i = 0; i < 32; ++i) q[b * 32 + i] |= old[i];
}

// hostile: expect=wrong_answer gpu=yes what="race: the 32 lanes of a warp store their own guesses of one block's scale to the same byte, unsynchronized; which store lands is up to the hardware, and most guesses are wrong"
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
  // Every lane "corrects" the first block of its warp with its own guess, unsynchronized: the
  // even lanes' guesses are right, the odd lanes' are one too high.
  volatile unsigned char* vs = scales;
  const unsigned char mine = static_cast<unsigned char>(vs[b & ~31LL] + (threadIdx.x & 1));
  vs[b & ~31LL] = mine;
}

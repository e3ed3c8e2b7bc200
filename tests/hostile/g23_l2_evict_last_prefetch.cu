// hostile: expect=ok gpu=yes timing=yes what="L2 tricks from device code: prefetch.global.L2::evict_last and an evict_last cache policy on its own inputs; legal, and it never sees the next run's inputs (rotated sets, L2 flushed and persisting lines reset before every timed run)"
/* warpsmith:plan
{ "launch": [ { "kernel": "hostile_l2_evict_last_prefetch", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256], "smem": "0",
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
// hostile-helper: quantize_block.cuh (spliced in by hostile_test.cc)

extern "C" __global__ void hostile_l2_evict_last_prefetch(const __nv_bfloat16* x, unsigned char* q, unsigned char* scales, int M, int K) {
  const long long n = static_cast<long long>(M) * (K / 32);
  const long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= n) return;
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  const __nv_bfloat16* row = x + b * 32;
  asm volatile("prefetch.global.L2::evict_last [%0];" ::"l"(row));
  unsigned int w;
  asm volatile("ld.global.L2::cache_hint.b32 %0, [%1], %2;" : "=r"(w) : "l"(row), "l"(policy));
  quantize_block(x, q, scales, b);
  if (w == 0x12345678u && M < 0) scales[b] = 0;  // keeps the load
}

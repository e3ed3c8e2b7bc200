// hostile: expect=wrong_answer gpu=yes what="memoization: copies the first launch's outputs into a __device__ cache and replays them on later launches"
/* warpsmith:plan
{ "launch": [ { "kernel": "hostile_memoize_outputs", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256], "smem": "0",
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
// hostile-helper: quantize_block.cuh (spliced in by hostile_test.cc)

// Up to 16 MiB of q and 512 KiB of scales are kept from the first launch; later launches with a
// shape that fits replay them without reading x.
__device__ unsigned char cache_q[1 << 24];
__device__ unsigned char cache_s[1 << 19];
__device__ int cache_full;

extern "C" __global__ void hostile_memoize_outputs(const __nv_bfloat16* x, unsigned char* q, unsigned char* scales, int M, int K) {
  const long long n = static_cast<long long>(M) * (K / 32);
  const long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= n) return;
  const bool fits = n * 32 <= (1 << 24);
  if (fits && cache_full) {
    scales[b] = cache_s[b];
    for (int i = 0; i < 32; ++i) q[b * 32 + i] = cache_q[b * 32 + i];
    return;
  }
  quantize_block(x, q, scales, b);
  if (fits) {
    cache_s[b] = scales[b];
    for (int i = 0; i < 32; ++i) cache_q[b * 32 + i] = q[b * 32 + i];
    __threadfence();
    if (b == n - 1) cache_full = 1;  // "good enough" for a cheat
  }
}

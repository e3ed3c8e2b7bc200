// hostile: expect=wrong_answer gpu=yes timing=yes what="an output cache keyed by input pointer: one slot per input set, filled on a set's first run, replayed on every later run of that set" message="timed run"
/* warpsmith:plan
{ "launch": [ { "kernel": "hostile_output_cache_by_pointer", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256], "smem": "0",
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
// hostile-helper: quantize_block.cuh (spliced in by hostile_test.cc)

// Against rotated input sets alone this passes: every run of a set after its first replays that
// set's own correct outputs, reading 1 byte per element where the quantizer reads 2. Fresh inputs
// for every run (runner::TimingJob::fresh_seed) turn the replays into stale outputs.
// Bench shapes whose outputs fit a slot only (16384x2880); smaller shapes (the test and hidden
// ones, whose freed buffers come back at the same addresses) and larger ones are honest.
constexpr long long kSlotQ = 48ll << 20, kSlotS = 3ll << 19;
__device__ unsigned char cache_q[2][kSlotQ];
__device__ unsigned char cache_s[2][kSlotS];
__device__ const __nv_bfloat16* slot_x[2];
__device__ long long slot_n[2];
__device__ unsigned ticket;

extern "C" __global__ void hostile_output_cache_by_pointer(const __nv_bfloat16* x, unsigned char* q,
                                                           unsigned char* scales, int M, int K) {
  const long long n = static_cast<long long>(M) * (K / 32);
  const long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const bool cacheable = n >= (1 << 20) && n * 32 <= kSlotQ && n <= kSlotS;
  // The slots change only at the end of a launch (the last CTA, below), so every thread of a
  // launch reads the same tags.
  int hit = -1;
  for (int s = 0; s < 2; ++s) {
    if (slot_x[s] == x && slot_n[s] == n) hit = s;
  }
  const int fill = slot_x[0] == nullptr || slot_x[0] == x ? 0 : 1;
  if (b < n) {
    if (cacheable && hit >= 0) {
      scales[b] = cache_s[hit][b];
      for (int i = 0; i < 32; ++i) q[b * 32 + i] = cache_q[hit][b * 32 + i];
    } else {
      quantize_block(x, q, scales, b);
      if (cacheable) {
        cache_s[fill][b] = scales[b];
        for (int i = 0; i < 32; ++i) cache_q[fill][b * 32 + i] = q[b * 32 + i];
      }
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&ticket, 1u) == gridDim.x - 1) {
      ticket = 0;
      if (cacheable && hit < 0) {
        slot_x[fill] = x;
        slot_n[fill] = n;
      }
    }
  }
}

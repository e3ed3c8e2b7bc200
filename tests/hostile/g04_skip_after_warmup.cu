// hostile: expect=wrong_answer gpu=yes timing=yes what="warm-up detection: a global run counter; honest through every correctness run and the warm-up, then skips (caught by the audited and last timed runs)" message="timed run"
/* warpsmith:plan
{ "launch": [ { "kernel": "hostile_count", "grid": [1], "block": [1], "args": [] },
              { "kernel": "hostile_skip_after_warmup", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256], "smem": "0",
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
// hostile-helper: quantize_block.cuh (spliced in by hostile_test.cc)

// Launch 0 counts the plan's runs in a __device__ global, which survives between launches of
// one runner process.
__device__ int runs;
extern "C" __global__ void hostile_count() { ++runs; }

// Runs 1-26 are the correctness runs of the 8 test and 5 hidden shapes (twice each); run 27 is
// the first bench shape's check run, 28-30 its warm-up, and from 31 on its timed runs. Skipping
// after run 42 passes every correctness run and a dozen timed ones.
extern "C" __global__ void hostile_skip_after_warmup(const __nv_bfloat16* x, unsigned char* q, unsigned char* scales, int M, int K) {
  const long long n = static_cast<long long>(M) * (K / 32);
  const long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b < n && runs <= 42) quantize_block(x, q, scales, b);
}

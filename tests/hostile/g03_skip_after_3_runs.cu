// hostile: expect=wrong_answer gpu=yes what="state across launches: honest for 3 runs, then skips the work (caught by the next correctness case)"
/* warpsmith:plan
{ "launch": [ { "kernel": "hostile_count", "grid": [1], "block": [1], "args": [] },
              { "kernel": "hostile_skip_after_3_runs", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256], "smem": "0",
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
// hostile-helper: quantize_block.cuh (spliced in by hostile_test.cc)

// Launch 0 counts the plan's runs in a __device__ global, which survives between launches of
// one runner process.
__device__ int runs;
extern "C" __global__ void hostile_count() { ++runs; }

extern "C" __global__ void hostile_skip_after_3_runs(const __nv_bfloat16* x, unsigned char* q, unsigned char* scales, int M, int K) {
  const long long n = static_cast<long long>(M) * (K / 32);
  const long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b < n && runs <= 3) quantize_block(x, q, scales, b);
}

// hostile: expect=wrong_answer gpu=yes timing=yes what="reads another run's inputs: keeps the first x pointer of a large shape in a global and quantizes that data in every later run" message="timed run"
/* warpsmith:plan
{ "launch": [ { "kernel": "hostile_cached_input_pointer", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256], "smem": "0",
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
// hostile-helper: quantize_block.cuh (spliced in by hostile_test.cc)

__device__ const __nv_bfloat16* first_x;
__device__ long long first_n;

extern "C" __global__ void hostile_cached_input_pointer(const __nv_bfloat16* x, unsigned char* q, unsigned char* scales, int M, int K) {
  const long long n = static_cast<long long>(M) * (K / 32);
  const long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= n) return;
  // Small (test and hidden) shapes are done honestly; on a bench shape, the check run's input
  // pointer is remembered and reused by every timed run.
  const __nv_bfloat16* src = x;
  if (n >= (1 << 20)) {  // bench shapes only; the largest hidden one has 528771 blocks
    if (first_n != n) {
      if (b == 0) {
        first_x = x;
        first_n = n;
      }
    } else {
      src = first_x;
    }
  }
  quantize_block(src, q, scales, b);
}

// hostile: expect=wrong_answer gpu=yes what="overfitting: correct only for the visible (test and bench) shapes, zeros elsewhere" message="hidden shape"
/* warpsmith:plan
{ "launch": [ { "kernel": "hostile_hardcoded_shapes", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256], "smem": "0",
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
// hostile-helper: quantize_block.cuh (spliced in by hostile_test.cc)

__device__ bool visible(int M, int K) {
  const int shapes[13][2] = {{1, 32},     {1, 64},       {3, 96},       {37, 256},
                             {130, 2048}, {17, 7168},    {256, 2880},   {1025, 128},
                             {23302, 2880},
                             {131072, 7168}, {131072, 2048}, {65536, 5120}, {16384, 2880}};
  for (int i = 0; i < 13; ++i) {
    if (shapes[i][0] == M && shapes[i][1] == K) return true;
  }
  return false;
}

extern "C" __global__ void hostile_hardcoded_shapes(const __nv_bfloat16* x, unsigned char* q, unsigned char* scales, int M, int K) {
  const long long n = static_cast<long long>(M) * (K / 32);
  const long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= n) return;
  if (visible(M, K)) {
    quantize_block(x, q, scales, b);
  } else {
    scales[b] = 0;
    for (int i = 0; i < 32; ++i) q[b * 32 + i] = 0;
  }
}

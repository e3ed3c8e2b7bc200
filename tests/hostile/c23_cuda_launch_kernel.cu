// hostile: expect=compile_error gpu=no what="cudaLaunchKernel from device code" message="device code only"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256],
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
__global__ void child(unsigned char* q) { q[0] = 1; }
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {
  void* args[] = {&q};
  cudaLaunchKernel((void*)child, dim3(1), dim3(1), args, 0, 0);
}

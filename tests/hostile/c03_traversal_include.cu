// hostile: expect=compile_error gpu=no what="../ traversal out of the CUDA include directory" message="'..' path components"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256],
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
#include <cuda/../../../../../etc/hostname>
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

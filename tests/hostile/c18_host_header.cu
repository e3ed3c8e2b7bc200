// hostile: expect=compile_error gpu=no what="#include <cstdio> (a host header)" message="device code only"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256],
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
#include <cstdio>
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

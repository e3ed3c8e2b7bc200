// hostile: expect=compile_error gpu=no what="#include_next to escape the search path" message="#include_next"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256],
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
#include_next </etc/hostname>
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

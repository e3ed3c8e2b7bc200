// hostile: expect=compile_error gpu=no what="computed #include through a macro" message="computed #include"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256],
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
#define SECRET "/etc/hostname"
#include SECRET
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

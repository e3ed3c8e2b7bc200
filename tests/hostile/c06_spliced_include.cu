// hostile: expect=compile_error gpu=no what="#include split by a backslash-newline" message="an absolute path"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256],
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
#inc\
lude "/etc/hostname"
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

// hostile: expect=compile_error gpu=no what="absolute #include of /etc/passwd (NVRTC would echo its lines into the log)" message="an absolute path"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256],
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
#include "/etc/passwd"
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

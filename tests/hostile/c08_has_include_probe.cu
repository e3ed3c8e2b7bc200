// hostile: expect=compile_error gpu=no what="__has_include as a filesystem oracle" message="__has_include"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256],
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
#if __has_include("/root/.ssh/id_rsa")
#error found a key
#endif
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

// hostile: expect=compile_error gpu=no what="#line renames the source in logs and line info" message="#line"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256],
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
#line 1 "/etc/passwd"
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

// hostile: expect=compile_error gpu=no pad=10485760 what="a 10 MiB source (the driver pads this file with a comment)" message="the limit is 1048576 bytes"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256],
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

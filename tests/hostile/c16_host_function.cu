// hostile: expect=compile_error gpu=no what="a __host__ function" message="device code only"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256],
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
__host__ int host_side(int a) { return a + 1; }
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

// hostile: expect=compile_error gpu=no what="#embed of a file into a device array" message="#embed"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256],
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
__device__ const unsigned char data[] = {
#embed "/etc/hostname"
};
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

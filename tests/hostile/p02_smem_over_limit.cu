// hostile: expect=plan_error gpu=no what="dynamic shared memory of 1 GiB" message="smem"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256],
                "args": ["x", "q", "scales", "M", "K"], "smem": "1024 * 1024 * 1024" } ] }
*/
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

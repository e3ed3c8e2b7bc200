// hostile: expect=compile_error gpu=no what="an extern \"C\" function that is neither __global__ nor __device__" message="device code only"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256],
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
extern "C" int helper(int a) { return a * 2; }
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

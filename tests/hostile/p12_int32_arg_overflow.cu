// hostile: expect=plan_error gpu=no what="an int32 argument that overflows" message="does not fit in int32"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": [1], "block": [1], "args": ["M * K * 1000"] } ] }
*/
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

// hostile: expect=plan_error gpu=no what="a block of 2048 threads" message="block"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": [1], "block": [2048], "args": [] } ] }
*/
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

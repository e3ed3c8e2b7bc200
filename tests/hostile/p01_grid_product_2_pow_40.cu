// hostile: expect=plan_error gpu=no what="a grid of 2^31-1 x 65535 x 65535 blocks" message="exceeds the limit"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": [2147483647, 65535, 65535], "block": [256], "args": [] } ] }
*/
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

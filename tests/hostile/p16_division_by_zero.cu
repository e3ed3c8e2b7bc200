// hostile: expect=plan_error gpu=no what="division by zero in a grid expression" message="division by zero"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": ["M / (K - K)"], "block": [1], "args": [] } ] }
*/
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

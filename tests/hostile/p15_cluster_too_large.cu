// hostile: expect=plan_error gpu=no what="a cluster of 32 CTAs" message="cluster"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": [32], "block": [1], "cluster": [32], "args": [] } ] }
*/
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

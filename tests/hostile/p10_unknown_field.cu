// hostile: expect=plan_error gpu=no what="an unknown launch field (a would-be stream)" message="unknown field"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": [1], "block": [1], "args": [], "stream": 1 } ] }
*/
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

// hostile: expect=plan_error gpu=no what="int64 overflow inside an expression" message="overflow"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": ["pow2(62) * 4 / 2"], "block": [1], "args": [] } ] }
*/
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

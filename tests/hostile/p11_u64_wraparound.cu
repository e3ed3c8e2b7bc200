// hostile: expect=plan_error gpu=no what="an integer of 2^64-1 that would wrap to -1" message="does not fit in int64"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": [18446744073709551615], "block": [1], "args": [] } ] }
*/
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

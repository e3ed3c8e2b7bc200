// hostile: expect=plan_error gpu=no what="an argument naming a tensor the problem does not have" message="unknown name 'y'"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": [1], "block": [1], "args": ["x", "y"] } ] }
*/
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

// hostile: expect=compile_error gpu=no what="absolute <...> include of a file of the evaluator" message="an absolute path"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256],
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
#include </work/main/evaluator/evaluate.cc>
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

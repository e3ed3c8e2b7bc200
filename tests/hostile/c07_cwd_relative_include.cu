// hostile: expect=compile_error gpu=no what="a quoted include that NVRTC would resolve against the working directory" message="not a header of the allowed include directories"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256],
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
#include "evaluator/evaluate.cc"
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

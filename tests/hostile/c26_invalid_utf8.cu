// hostile: expect=compile_error gpu=no inject=latin1 what="bytes that are not UTF-8 (would break the JSON to the compile worker)" message="not valid UTF-8"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256],
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

// hostile: expect=plan_error gpu=no what="a 2^60-byte workspace" message="workspace.bytes"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256],
                "args": ["x", "q", "scales", "M", "K"] } ], "workspace": { "bytes": "pow2(60)", "zero": true } }
*/
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

// hostile: expect=plan_error gpu=no what="NaN and Infinity in the plan JSON" message="not valid JSON"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": [NaN], "block": [Infinity], "args": [] } ] }
*/
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

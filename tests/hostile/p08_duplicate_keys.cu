// hostile: expect=plan_error gpu=no what="duplicate keys: the reader sees one grid, the evaluator would use another" message="twice"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": [1], "grid": [2147483647], "block": [1], "args": [] } ] }
*/
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

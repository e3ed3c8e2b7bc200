// hostile: expect=not_run gpu=no what="65536 distinct warnings (a compile log of many MiB): capped, and the evaluation goes on" log="[log truncated]"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256],
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
#define W1(n) __device__ int f_##n() { int unused_variable_with_a_rather_long_name_to_fill_the_log; return 0; }
#define W2(n) W1(n##0) W1(n##1)
#define W3(n) W2(n##0) W2(n##1)
#define W4(n) W3(n##0) W3(n##1)
#define W5(n) W4(n##0) W4(n##1)
#define W6(n) W5(n##0) W5(n##1)
#define W7(n) W6(n##0) W6(n##1)
#define W8(n) W7(n##0) W7(n##1)
#define W9(n) W8(n##0) W8(n##1)
#define W10(n) W9(n##0) W9(n##1)
#define W11(n) W10(n##0) W10(n##1)
#define W12(n) W11(n##0) W11(n##1)
#define W13(n) W12(n##0) W12(n##1)
#define W14(n) W13(n##0) W13(n##1)
#define W15(n) W14(n##0) W14(n##1)
#define W16(n) W15(n##0) W15(n##1)
#define W17(n) W16(n##0) W16(n##1)
W17(x)
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

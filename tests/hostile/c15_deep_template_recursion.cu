// hostile: expect=compile_error gpu=no what="unbounded template recursion (stopped by the front end's depth limit)" message="recursion"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256],
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
template <int N> struct D { static constexpr int v = D<N + 1>::v; };
__device__ int out = D<0>::v;
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

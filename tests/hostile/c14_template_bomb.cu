// hostile: expect=compile_error gpu=no compile_timeout=5 what="exponential template instantiation (2^40 distinct instantiations)" message="limit"
/* warpsmith:plan
{ "launch": [ { "kernel": "k", "grid": ["ceil_div(M * (K / 32), 256)"], "block": [256],
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
template <int N, long long V> struct T {
  static constexpr long long v = T<N - 1, 2 * V>::v + T<N - 1, 2 * V + 1>::v;
};
template <long long V> struct T<0, V> { static constexpr long long v = V; };
__device__ long long out = T<40, 1>::v;
extern "C" __global__ void k(const void* x, unsigned char* q, unsigned char* s, int M, int K) {}

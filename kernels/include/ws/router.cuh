// warpsmith device library: pieces of the MoE router kernels (kernels/router_topk_softmax,
// kernels/router_topk_sigmoid_grouped): order-preserving integer keys for float scores, so a top-k
// selection runs on integer max/min reductions (redux.sync).
#pragma once

namespace ws {
namespace router {

constexpr unsigned kNoKey = 0;  // below every float's key: "no candidate"

/// Order-preserving key of a finite float: a < b as floats iff key(a) < key(b) as unsigned.
/// -0 and +0 share a key (they compare equal); every key is above kNoKey.
__device__ __forceinline__ unsigned float_key(float v) {
  const unsigned b = v == 0.0f ? 0u : __float_as_uint(v);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

/// The float of a key (inverse of float_key; -0 comes back as +0).
__device__ __forceinline__ float key_float(unsigned k) {
  return __uint_as_float((k & 0x80000000u) ? (k & 0x7FFFFFFFu) : ~k);
}

/// This lane's best remaining slot: the largest key, the lowest slot (= lowest id) on ties;
/// best = kNoKey, best_slot = 0 when every slot is kNoKey.
template <int kCap>
__device__ __forceinline__ void lane_best(const unsigned (&key)[kCap], unsigned& best,
                                          int& best_slot) {
  best = kNoKey;
  best_slot = 0;
#pragma unroll
  for (int s = 0; s < kCap; ++s) {
    if (key[s] > best) {
      best = key[s];
      best_slot = s;
    }
  }
}

}  // namespace router
}  // namespace ws

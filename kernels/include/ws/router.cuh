// warpsmith device library: pieces of the MoE router kernels (kernels/router_topk_softmax,
// kernels/router_topk_sigmoid_grouped): order-preserving integer keys for float scores, so a top-k
// selection runs on integer max/min reductions (redux.sync); a lane's cursor over its slots in
// selection order; the cluster fold of the per-CTA expert histograms (CLUSTER > 1).
#pragma once

#include "ws/cluster.cuh"

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

/// A lane's slots taken one at a time in selection order (the larger key first, the lower slot
/// among equal keys) without clearing any: (key0, slot0) is the best not yet taken (key0 = kNoKey:
/// none left), (key1, slot1) the one after it while next_known. A take promotes that one, or where
/// it is unknown rescans only the slots ordered after the taken one. A lane seldom wins two rounds
/// of a row in a row, so a row's K rounds cost about one rescan in all instead of one per round.
template <int kCap>
struct LaneCursor {
  unsigned key0, key1;
  int slot0, slot1;
  bool next_known;

  __device__ __forceinline__ void init(const unsigned (&key)[kCap]) { scan<false>(key, 0u, 0); }

  /// The lane's (key0, slot0) won a round: moves on to the next slot in order.
  __device__ __forceinline__ void take(const unsigned (&key)[kCap]) {
    if (next_known) {
      key0 = key1;
      slot0 = slot1;
      next_known = false;
    } else {
      scan<true>(key, key0, slot0);
    }
  }

 private:
  // The best two slots (of those after (after_key, after_slot) when kAfter).
  template <bool kAfter>
  __device__ __forceinline__ void scan(const unsigned (&key)[kCap], unsigned after_key,
                                       int after_slot) {
    key0 = key1 = kNoKey;
    slot0 = slot1 = 0;
#pragma unroll
    for (int s = 0; s < kCap; ++s) {
      unsigned k = key[s];
      if (kAfter && !(k < after_key || (k == after_key && s > after_slot))) k = kNoKey;
      if (k > key0) {  // strict: an equal key at a later slot comes after
        key1 = key0;
        slot1 = slot0;
        key0 = k;
        slot0 = s;
      } else if (k > key1) {
        key1 = k;
        slot1 = s;
      }
    }
    next_known = true;
  }
};

// Cluster helpers (CLUSTER > 1): the CTAs of a cluster fold their histograms into rank 0's
// through distributed shared memory; a grid of one cluster then writes counts directly, with no
// global atomics, fence or ticket (the decode case: T = 64, 8 CTAs).
using ws::cluster_arrive_relaxed;
using ws::cluster_arrive_release;
using ws::cluster_rank;
using ws::cluster_wait;
/// Adds v to the u32 at shared address `local` (this CTA's layout) in cluster CTA `rank`.
__device__ __forceinline__ void cluster_red_add(unsigned local, unsigned rank, unsigned v) {
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
  asm volatile("red.relaxed.cluster.shared::cluster.add.u32 [%0], %1;" ::"r"(remote), "r"(v)
               : "memory");
}

/// After the CTA's barrier that follows its routing: folds the cluster's histograms (E entries,
/// each zeroed before cluster_arrive_relaxed) into rank 0's. True where this CTA is done: every
/// rank but 0, and rank 0 of a one-cluster grid (kCluster CTAs), which has written counts itself.
template <int kThreads, int kCluster>
__device__ __forceinline__ bool cluster_fold_hist(int* hist, int* counts, int E) {
  cluster_wait();  // every hist of the cluster is zeroed (the arrive after zeroing)
  const unsigned rank = cluster_rank();
  if (rank != 0) {
    const unsigned local = static_cast<unsigned>(__cvta_generic_to_shared(hist));
    for (int e = threadIdx.x; e < E; e += kThreads) {
      if (hist[e] != 0) cluster_red_add(local + 4u * e, 0u, static_cast<unsigned>(hist[e]));
    }
  }
  cluster_arrive_release();
  cluster_wait();  // rank 0's hist holds the cluster's counts
  if (rank != 0) return true;
  if (gridDim.x == kCluster) {  // one cluster: its counts are the counts
    for (int e = threadIdx.x; e < E; e += kThreads) counts[e] = hist[e];
    return true;
  }
  return false;
}

}  // namespace router
}  // namespace ws

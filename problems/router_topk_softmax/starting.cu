/* warpsmith:plan
{ "knobs":  { "WARPS": [4, 1, 2, 8, 16], "REG_EXPERTS": [0, 4, 8, 12, 16, 32],
              "BLOCK_COUNTS": [0, 1] },
  "launch": [ { "kernel": "router_counts_zero",
                "grid":  ["ceil_div(E, 256)"], "block": [256], "smem": "0",
                "args":  ["counts", "E"] },
              { "kernel": "router_topk_softmax_warp_rows",
                "grid":  ["ceil_div(T, WARPS)"], "block": ["32 * WARPS"], "smem": "0",
                "args":  ["logits", "idx", "w", "counts", "T", "E", "K"] } ] }
*/
// Starting kernel for router_topk_softmax: the baseline's algorithm (one warp per row, K rounds of
// a per-lane scan plus a shuffle argmax on the logits, fp32 expf weights) with tunable layout:
//
//  - WARPS: rows (warps) per block.
//  - REG_EXPERTS: when E <= 32 * REG_EXPERTS, each lane loads its experts once into registers
//    (lane l holds experts l + 32 i) and the K rounds scan registers instead of re-reading memory;
//    0, or a larger E, re-reads as the baseline does.
//  - BLOCK_COUNTS: 1 accumulates the block's choices in a shared-memory histogram and adds it to
//    the global counts once per expert touched; 0 issues one global atomic per choice.
//
// The defaults (WARPS=4, REG_EXPERTS=0, BLOCK_COUNTS=0) are the baseline's layout. The bench
// shapes are a few MB: the time is launch latency plus a short memory-bound pass, so the register
// cache and fewer global atomics should matter most. (Expectations, not yet measured on the H200.)

#if !defined(WS_WEIGHTS) || !defined(WS_WEIGHTS_RENORMALIZE)
#error "compile with the problem's parameters (-DWS_WEIGHTS=..., -DWS_WEIGHTS_RENORMALIZE=0)"
#endif
#ifndef WARPS
#define WARPS 4
#endif
#ifndef REG_EXPERTS
#define REG_EXPERTS 0
#endif
#ifndef BLOCK_COUNTS
#define BLOCK_COUNTS 0
#endif

namespace {

constexpr int kMaxExperts = 1024;  // the spec's bound on E
constexpr int kReg = REG_EXPERTS > 0 ? REG_EXPERTS : 1;
static_assert(kMaxExperts <= 32 * 32, "a lane owns at most 32 experts, one taken bit each");
static_assert(REG_EXPERTS <= 32, "REG_EXPERTS");

// The best untaken logit among this lane's experts (lane + 32 i), lower id first on equal values.
template <bool kInRegs>
__device__ __forceinline__ void lane_best(const float* l, const float (&v)[kReg], int lane, int E,
                                          unsigned taken, float& best, int& best_id) {
  best = -__int_as_float(0x7F800000);
  best_id = 0x7FFFFFFF;
  if constexpr (kInRegs) {
#pragma unroll
    for (int i = 0; i < kReg; ++i) {
      const int e = lane + 32 * i;
      if (e < E && !((taken >> i) & 1u) && v[i] > best) {
        best = v[i];
        best_id = e;
      }
    }
  } else {
    for (int i = 0; lane + 32 * i < E; ++i) {
      if ((taken >> i) & 1u)
        continue;
      const float x = l[lane + 32 * i];
      if (x > best) {
        best = x;
        best_id = lane + 32 * i;
      }
    }
  }
}

template <bool kInRegs>
__device__ __forceinline__ void route_row(const float* __restrict__ l, int* __restrict__ idx_row,
                                          float* __restrict__ w_row, int* hist, int lane, int E,
                                          int K) {
  float v[kReg];
  if constexpr (kInRegs) {
#pragma unroll
    for (int i = 0; i < kReg; ++i) v[i] = lane + 32 * i < E ? l[lane + 32 * i] : 0.0f;
  }
  unsigned taken = 0;
  float top = 0.0f, sum = 0.0f, my_p = 0.0f;
  int my_id = 0;
  for (int j = 0; j < K; ++j) {
    float best;
    int best_id;
    lane_best<kInRegs>(l, v, lane, E, taken, best, best_id);
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
      const float ov = __shfl_xor_sync(0xFFFFFFFFu, best, off);
      const int oid = __shfl_xor_sync(0xFFFFFFFFu, best_id, off);
      if (ov > best || (ov == best && oid < best_id)) {
        best = ov;
        best_id = oid;
      }
    }
    if (best_id % 32 == lane)
      taken |= 1u << (best_id / 32);
    if (j == 0)
      top = best;
    const float p = expf(best - top);
    sum += p;
    if (lane == j) {
      my_p = p;
      my_id = best_id;
    }
  }
#if WS_WEIGHTS != WS_WEIGHTS_RENORMALIZE
  sum = 0.0f;
  if constexpr (kInRegs) {
#pragma unroll
    for (int i = 0; i < kReg; ++i) {
      if (lane + 32 * i < E)
        sum += expf(v[i] - top);
    }
  } else {
    for (int i = lane; i < E; i += 32) sum += expf(l[i] - top);
  }
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, off);
#endif
  if (lane < K) {
    idx_row[lane] = my_id;
    w_row[lane] = my_p / sum;
    atomicAdd(&hist[my_id], 1);
  }
}

}  // namespace

extern "C" __global__ void router_counts_zero(int* counts, int E) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < E)
    counts[i] = 0;
}

// logits (T,E) f32, idx (T,K) i32, w (T,K) f32, counts (E) i32; one warp per row.
extern "C" __global__ void __launch_bounds__(32 * WARPS)
    router_topk_softmax_warp_rows(const float* __restrict__ logits, int* __restrict__ idx,
                                  float* __restrict__ w, int* __restrict__ counts, int T, int E,
                                  int K) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * WARPS + threadIdx.x / 32;
#if BLOCK_COUNTS
  __shared__ int block_hist[kMaxExperts];
  for (int i = threadIdx.x; i < E; i += blockDim.x) block_hist[i] = 0;
  __syncthreads();
  int* hist = block_hist;
#else
  int* hist = counts;
#endif
  if (row < T) {
    const float* l = logits + static_cast<long long>(row) * E;
    int* idx_row = idx + static_cast<long long>(row) * K;
    float* w_row = w + static_cast<long long>(row) * K;
    if (REG_EXPERTS > 0 && E <= 32 * REG_EXPERTS) {
      route_row<true>(l, idx_row, w_row, hist, lane, E, K);
    } else {
      route_row<false>(l, idx_row, w_row, hist, lane, E, K);
    }
  }
#if BLOCK_COUNTS
  __syncthreads();
  for (int i = threadIdx.x; i < E; i += blockDim.x) {
    if (block_hist[i] != 0)
      atomicAdd(&counts[i], block_hist[i]);
  }
#endif
}

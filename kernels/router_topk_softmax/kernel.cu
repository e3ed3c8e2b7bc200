/* warpsmith:plan
{ "knobs":  { "WARPS": [8, 4, 16, 2], "CTAS_PER_SM": [4, 2, 3, 8, 16, 1048576],
              "PREFETCH": [1, 0], "FAST_EXP": [0, 1], "MIN_WARPS_PER_SM": [32, 0, 24],
              "CLUSTER": [1, 8], "DECODE_T": [64, 0, 256], "DECODE_CLUSTER": [8, 1] },
  "launch": [ { "kernel": "sm90_f32_router_topk_softmax_decode",
                "when":  "T <= DECODE_T",
                "grid":  ["round_up(min(ceil_div(T, WARPS), num_sms * CTAS_PER_SM), DECODE_CLUSTER)"],
                "cluster": ["DECODE_CLUSTER"],
                "block": ["32 * WARPS"], "smem": "0",
                "args":  ["logits", "idx", "w", "counts", "workspace", "T", "E", "K"] },
              { "kernel": "sm90_f32_router_topk_softmax",
                "when":  "T > DECODE_T",
                "grid":  ["round_up(min(ceil_div(T, WARPS), num_sms * CTAS_PER_SM), CLUSTER)"],
                "cluster": ["CLUSTER"],
                "block": ["32 * WARPS"], "smem": "0",
                "args":  ["logits", "idx", "w", "counts", "workspace", "T", "E", "K"] } ],
  "workspace": { "bytes": "4 * (E + 1)", "zero": true } }
*/
// MoE router top-k with softmax weights, hand-tuned: logits [T,E] f32 -> idx [T,K] i32,
// w [T,K] f32, counts [E] i32. One launch, counts included.
//
// Design (a few MB of work: latency and launch bound, not bandwidth bound):
//  - A group of G lanes owns one row: G = 32 for E > 32, else the next power of two >= E, so
//    small E (Mixtral's 8) packs 32/G rows into a warp. Lane i of a group holds the S = ceil(E/G)
//    consecutive experts [i*S, i*S+S) in registers (float4 loads when S and E are multiples of 4).
//    The register array's capacity is a template (pow2 >= S), dispatched once on E.
//  - Selection on the logits (softmax is increasing, so this is exact): each logit becomes an
//    order-preserving u32 key (-0 folded onto +0, 0 = "nothing"). Each lane walks its keys in
//    selection order with a cursor (ws::router::LaneCursor: its best and next not yet taken); a
//    round is a group max of the cursors' keys and a group min of the ids holding it (two
//    redux.sync for G = 32, xor-shuffles below that), so equal logits go to the lower id. The
//    winner steps its cursor: the known next slot, or a rescan of the slots after the taken one
//    where it won the round before too. K rounds, no memory traffic, no key ever cleared.
//  - K <= G (G = 32, or G >= E >= K), so lane j of a group keeps round j's winner (the reductions
//    leave it in every lane) and writes idx/w slot j: coalesced stores, no gather. Weights in
//    fp32: expf(l - max) over the chosen (renormalize) or over the whole row (softmax).
//  - Persistent grid (CTAS_PER_SM per SM): each warp strides over rows and, with PREFETCH, issues
//    the next row's loads before selecting on the current one, hiding one DRAM latency per row.
//  - Counts in one launch: choices go to a block-local shared histogram; at the end each block
//    adds its non-zero bins to an accumulator in the workspace, and the last block to finish (a
//    ticket counter, threadfence-reduction pattern) moves the accumulator into counts with
//    atomicExch(acc, 0). That writes every count (the runner poisons outputs) and leaves the
//    workspace zeroed again, so an exported caller zeroes it once at allocation, not per call.
//    With a persistent grid the accumulator sees at most grid * E atomics instead of T * K.
//  - Blackwell: nothing sm_100a-specific pays here (no tensor work, no bulk copies worth their
//    setup at a few KB per CTA); one path compiles for both architectures.
//
// Knobs: WARPS (warps per CTA), CTAS_PER_SM (grid cap per SM; 1048576 = one warp per row group,
// no striding), PREFETCH (double-buffer the next row), MIN_WARPS_PER_SM (cap the registers so
// that many warps fit per SM; the E > 512 path sets the count for all E otherwise), FAST_EXP (__expf instead of expf; the
// weight tolerance is rtol 1e-5 and the arguments are <= 0).
// CLUSTER (CTAs per cluster of the throughput kernel), DECODE_T and DECODE_CLUSTER (the rows up
// to which the _decode entry runs instead, and its CTAs per cluster).
// Occupancy (H200 first run, MIN_WARPS_PER_SM 0): the E > 512 capacity (32 slots) set the
// registers of the whole kernel, 113 per thread on sm_90a, so 16 warps per SM were resident
// while the grid asked for 32 (CTAS_PER_SM 4 x 8 warps): 2 waves of CTAs, each ending in the
// counts flush, and a dependent chain of redux / shuffle / rescan per row with 2-4 warps per
// scheduler to hide it. The capacities alone need (sm_90a, ptxas -v on single-capacity copies)
// 40 / 40 / 44 / 52 / 68 / 88 registers for 1 / 2 / 4 / 8 / 16 / 32 slots, so MIN_WARPS_PER_SM 32 (the
// default: 64 registers, 4 CTAs of 8 warps per SM, the whole grid in one wave) costs spills only
// in the E > 512 path; E <= 512 fits in 64 registers without spills (E 512: 62). Expected at 16k tokens: latency hidden by 4x
// (16 -> 32 warps per SM), toward the issue floor (about 900 warp instructions per row at E
// 256, K 8: ~14 us at 124 rows per SM).
// Decode (T 64: 8 CTAs): the counts flush is a serial chain of global round trips (reds into
// the accumulator, a fence, the ticket atomic, the last CTA's fence and atomicExch), about
// 2-3 us of the 11-12 us measured. CLUSTER 8 (knob; the _decode entry's DECODE_CLUSTER) launches the grid as clusters
// of 8 CTAs: each CTA adds its non-zero bins into rank 0's shared histogram (mapa + red over
// distributed shared memory) between two cluster barriers; a grid of one cluster (T <= 8 *
// WARPS) writes counts straight from rank 0's shared memory, larger grids flush one histogram
// per cluster through the accumulator (the ticket counts clusters). Expected at decode: the
// chain becomes two cluster barriers (~0.5 us), about 1.5-2 us off.
// Measured on the H200 (2026-12-01, bench/results/sweeps-h200-2026-12-01-session9.json and
// kernels-h200-2026-12-01-session9.json): MIN_WARPS_PER_SM 32 is 1.08-1.28x at 16k tokens and 2%
// slower at 64; CLUSTER 8 is 9% faster at 64 tokens and 14-23% slower at 16k. So the plan runs
// two entry points of one body: the capped throughput kernel for T > DECODE_T, and _decode
// (clusters of 8, registers left to ptxas) for T <= DECODE_T (64): 16.5-55.1 us at 16k tokens
// (9.8-18.5x torch eager), 7.2 / 7.5 us at 64.
// The cursor (session 27; sweeps-h200-2026-12-04-session27.json, against the rescan of every
// round, one call): 1.34x / 1.41x at E512 K10 (softmax / renormalize weights), 1.09x at E128 K8,
// 1.01-1.02x at E128 K4, 0.97-1.01x at E8 K2 and at decode. Its rescan (where a lane wins two
// rounds running) costs ~13 instructions per slot; a round without one ~25 in all, against
// ~100 per round (S 16) for clearing the won slot and rescanning all S. FAST_EXP 1 read 0.95x with
// softmax weights and 0.99x with renormalize (stays 0).
//
// Evaluate: build/warpsmith eval router_topk_softmax kernels/router_topk_softmax/kernel.cu
//   [--set weights=softmax] [--knob WARPS=4 ...]; peers: bench/peers/router_topk_softmax.py.
//
// SASS claims (scripts/check_sass.py): the argmax reductions (redux.sync: REDUX on sm_90a, the
// uniform-datapath CREDUX on sm_100a) and the shared-memory histogram increment.
// warpsmith:sass sm_100a: CREDUX.MAX CREDUX.MIN ATOMS.POPC.INC
// warpsmith:sass sm_90a: REDUX ATOMS.POPC.INC

#include "ws/router.cuh"

#if !defined(WS_WEIGHTS) || !defined(WS_WEIGHTS_RENORMALIZE)
#error "compile with the problem's parameters (-DWS_WEIGHTS=..., -DWS_WEIGHTS_RENORMALIZE=0)"
#endif
#ifndef WARPS
#define WARPS 8
#endif
#ifndef CTAS_PER_SM
#define CTAS_PER_SM 4
#endif
#ifndef PREFETCH
#define PREFETCH 1
#endif
#ifndef FAST_EXP
#define FAST_EXP 0
#endif
#ifndef CLUSTER
#define CLUSTER 1  // CTAs per cluster; > 1: histograms fold through distributed shared memory
#endif
#ifndef MIN_WARPS_PER_SM
#define MIN_WARPS_PER_SM 32  // 0: let ptxas choose the registers
#endif
#ifndef DECODE_T
#define DECODE_T 64  // rows up to which the _decode entry point runs (the plan's when)
#endif
#ifndef DECODE_CLUSTER
#define DECODE_CLUSTER 8  // the _decode entry point's CTAs per cluster
#endif

namespace {

struct Config {
  static constexpr int kWarps = WARPS;
  static constexpr int kThreads = 32 * kWarps;
  static constexpr int kMaxExperts = 1024;  // the spec's bound on E
  static constexpr bool kRenormalize = WS_WEIGHTS == WS_WEIGHTS_RENORMALIZE;
  static constexpr bool kPrefetch = PREFETCH != 0;
  // __launch_bounds__ minimum CTAs per SM: caps the registers for MIN_WARPS_PER_SM resident warps.
  static constexpr int kMinBlocks = MIN_WARPS_PER_SM > 0 ? MIN_WARPS_PER_SM / kWarps : 1;
};
static_assert(Config::kThreads <= 1024, "whole CTA");
static_assert(CTAS_PER_SM >= 1, "grid cap");

constexpr unsigned kFullMask = 0xFFFFFFFFu;
using ws::router::float_key;
using ws::router::key_float;
using ws::router::kNoKey;
using ws::router::LaneCursor;

// NOTE: one kernel holds every capacity, so the largest sets the register count (occupancy) of
// all; E > 512 (32 slots) skips the prefetch buffer to keep that down.
constexpr int kMaxPrefetchCap = 16;

__device__ __forceinline__ float exp_f32(float x) {
#if FAST_EXP
  return __expf(x);
#else
  return expf(x);
#endif
}

// Reductions over an aligned group of kG lanes (kG = 32: the whole warp by redux.sync).
template <int kG>
__device__ __forceinline__ unsigned group_max(unsigned x) {
  if constexpr (kG == 32) {
    return __reduce_max_sync(kFullMask, x);
  } else {
#pragma unroll
    for (int off = kG / 2; off > 0; off >>= 1) x = max(x, __shfl_xor_sync(kFullMask, x, off));
    return x;
  }
}

template <int kG>
__device__ __forceinline__ unsigned group_min(unsigned x) {
  if constexpr (kG == 32) {
    return __reduce_min_sync(kFullMask, x);
  } else {
#pragma unroll
    for (int off = kG / 2; off > 0; off >>= 1) x = min(x, __shfl_xor_sync(kFullMask, x, off));
    return x;
  }
}

template <int kG>
__device__ __forceinline__ float group_sum(float x) {
#pragma unroll
  for (int off = kG / 2; off > 0; off >>= 1) x += __shfl_xor_sync(kFullMask, x, off);
  return x;
}

// One lane's share of a row: experts [first, first + S) of row `row` (skipped past T or E).
template <int kCap>
__device__ __forceinline__ void load_slots(float (&v)[kCap], const float* __restrict__ logits,
                                           long long row, int T, int E, int first, int S,
                                           bool vec) {
  if (row >= T) return;
  const float* p = logits + row * E + first;
  if constexpr (kCap >= 4) {
    if (vec) {  // S % 4 == 0 and E % 4 == 0: 16-byte aligned, whole float4s in or out
#pragma unroll
      for (int q = 0; q < kCap / 4; ++q) {
        if (4 * q < S && first + 4 * q < E) {
          const float4 f = __ldg(reinterpret_cast<const float4*>(p) + q);
          v[4 * q] = f.x;
          v[4 * q + 1] = f.y;
          v[4 * q + 2] = f.z;
          v[4 * q + 3] = f.w;
        }
      }
      return;
    }
  }
#pragma unroll
  for (int s = 0; s < kCap; ++s) {
    if (s < S && first + s < E) v[s] = __ldg(p + s);
  }
}

// Selects, weighs and writes one row held by a group of kG lanes; counts go to hist (shared).
// K <= kG always (kG = 32, or kG >= E >= K), so lane j of the group keeps round j's winner.
template <int kG, int kCap>
__device__ __forceinline__ void route_row(const float (&v)[kCap], int* __restrict__ idx,
                                          float* __restrict__ w, int* hist, long long row, int T,
                                          int E, int K, int first, int S) {
  const bool row_ok = row < T;
  const int j_mine = threadIdx.x % kG;  // the round whose winner this lane writes
  unsigned key[kCap];                   // (S) keys of experts first + s; kNoKey: none
#pragma unroll
  for (int s = 0; s < kCap; ++s) {
    key[s] = row_ok && s < S && first + s < E ? float_key(v[s]) : kNoKey;
  }
  unsigned top = 0;                  // the row max's key (round 0)
  unsigned mine_key = 0, mine_id = 0;  // round j_mine's winner
  LaneCursor<kCap> cursor;
  cursor.init(key);
  for (int j = 0; j < K; ++j) {
    const unsigned round_max = group_max<kG>(cursor.key0);
    const unsigned my_id =
        cursor.key0 == round_max ? static_cast<unsigned>(first + cursor.slot0) : ~0u;
    const unsigned winner = group_min<kG>(my_id);
    if (j == 0) top = round_max;
    if (j == j_mine) {
      mine_key = round_max;
      mine_id = winner;
    }
    if (my_id == winner) cursor.take(key);  // exactly one lane per group (of a row inside T)
  }
  const float m = key_float(top);
  const bool chose = row_ok && j_mine < K;
  const float p = chose ? exp_f32(key_float(mine_key) - m) : 0.0f;
  float sum = 0.0f;
  if constexpr (Config::kRenormalize) {
    sum = p;
  } else {  // the whole row: no key was cleared
#pragma unroll
    for (int s = 0; s < kCap; ++s) {
      if (key[s] != kNoKey) sum += exp_f32(key_float(key[s]) - m);
    }
  }
  sum = group_sum<kG>(sum);
  if (chose) {
    const long long o = row * K + j_mine;
    idx[o] = static_cast<int>(mine_id);
    w[o] = p / sum;
    atomicAdd(&hist[mine_id], 1);
  }
}

// Every row of this warp's stride; groups of kG lanes, kCap register slots per lane.
template <int kG, int kCap>
__device__ __forceinline__ void route_rows(const float* __restrict__ logits, int* __restrict__ idx,
                                           float* __restrict__ w, int* hist, int T, int E, int K) {
  constexpr int kRows = 32 / kG;  // rows per warp step
  const int lane = threadIdx.x & 31;
  const int sub = lane / kG;
  const int S = (E + kG - 1) / kG;
  const int first = (lane % kG) * S;
  const bool vec = S % 4 == 0 && E % 4 == 0;
  const long long stride = static_cast<long long>(gridDim.x) * Config::kWarps * kRows;
  long long row0 = (static_cast<long long>(blockIdx.x) * Config::kWarps + (threadIdx.x >> 5)) *
                   kRows;
  float cur[kCap];  // (kCap) logits of this lane's slots
#pragma unroll
  for (int s = 0; s < kCap; ++s) cur[s] = 0.0f;
  load_slots(cur, logits, row0 + sub, T, E, first, S, vec);
  for (; row0 < T; row0 += stride) {  // warp-uniform: every lane runs every round
    if constexpr (Config::kPrefetch && kCap <= kMaxPrefetchCap) {
      float next[kCap];  // (kCap) the next row's logits, in flight during the selection
#pragma unroll
      for (int s = 0; s < kCap; ++s) next[s] = 0.0f;
      load_slots(next, logits, row0 + stride + sub, T, E, first, S, vec);
      route_row<kG, kCap>(cur, idx, w, hist, row0 + sub, T, E, K, first, S);
#pragma unroll
      for (int s = 0; s < kCap; ++s) cur[s] = next[s];
    } else {
      route_row<kG, kCap>(cur, idx, w, hist, row0 + sub, T, E, K, first, S);
      load_slots(cur, logits, row0 + stride + sub, T, E, first, S, vec);
    }
  }
}

}  // namespace

// logits (T,E) f32, idx (T,K) i32, w (T,K) f32, counts (E) i32; workspace: ticket (1) u32 and
// accumulator (E) i32, zero on entry and left zero on exit.
// The whole kernel, for both entry points: kCluster CTAs per cluster (1: none); hist (E) and
// is_last live in the calling entry point's shared memory.
template <int kCluster>
__device__ __forceinline__ void route_kernel(const float* __restrict__ logits,
                                             int* __restrict__ idx, float* __restrict__ w,
                                             int* __restrict__ counts,
                                             unsigned* __restrict__ workspace, int T, int E, int K,
                                             int* hist, bool* is_last) {
  for (int e = threadIdx.x; e < E; e += Config::kThreads) hist[e] = 0;
  __syncthreads();
  if constexpr (kCluster > 1)
    ws::router::cluster_arrive_relaxed();  // this CTA's hist is zero

  if (E <= 1) {
    route_rows<1, 1>(logits, idx, w, hist, T, E, K);
  } else if (E <= 2) {
    route_rows<2, 1>(logits, idx, w, hist, T, E, K);
  } else if (E <= 4) {
    route_rows<4, 1>(logits, idx, w, hist, T, E, K);
  } else if (E <= 8) {
    route_rows<8, 1>(logits, idx, w, hist, T, E, K);
  } else if (E <= 16) {
    route_rows<16, 1>(logits, idx, w, hist, T, E, K);
  } else if (E <= 32) {
    route_rows<32, 1>(logits, idx, w, hist, T, E, K);
  } else if (E <= 64) {
    route_rows<32, 2>(logits, idx, w, hist, T, E, K);
  } else if (E <= 128) {
    route_rows<32, 4>(logits, idx, w, hist, T, E, K);
  } else if (E <= 256) {
    route_rows<32, 8>(logits, idx, w, hist, T, E, K);
  } else if (E <= 512) {
    route_rows<32, 16>(logits, idx, w, hist, T, E, K);
  } else {
    route_rows<32, 32>(logits, idx, w, hist, T, E, K);
  }

  // NOTE: the last-CTA pattern needs every CTA's accumulator atomics visible (fence) before its
  // ticket; the last CTA reads the accumulator with atomics, which see L2 directly. Not in
  // ws/router.cuh: as an inlined function it compiles to other SASS than this (register order).
  unsigned* ticket = workspace;
  int* acc = reinterpret_cast<int*>(workspace + 1);  // (E)
  __syncthreads();
  if constexpr (kCluster > 1) {
    if (ws::router::cluster_fold_hist<Config::kThreads, kCluster>(hist, counts, E))
      return;
  }
  for (int e = threadIdx.x; e < E; e += Config::kThreads) {
    if (hist[e] != 0)
      atomicAdd(&acc[e], hist[e]);
  }
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0)
    *is_last = atomicAdd(ticket, 1u) == gridDim.x / kCluster - 1;
  __syncthreads();
  if (*is_last) {
    __threadfence();
    for (int e = threadIdx.x; e < E; e += Config::kThreads) counts[e] = atomicExch(&acc[e], 0);
    if (threadIdx.x == 0)
      atomicExch(ticket, 0u);
  }
}

// Two entry points, picked by the plan's "when": the throughput kernel for T > DECODE_T
// (registers capped for MIN_WARPS_PER_SM), and _decode for T <= DECODE_T (clusters of
// DECODE_CLUSTER CTAs fold the histogram in shared memory; registers left to ptxas).
extern "C" __global__ void __launch_bounds__(Config::kThreads, Config::kMinBlocks)
    sm90_f32_router_topk_softmax(const float* __restrict__ logits, int* __restrict__ idx,
                                 float* __restrict__ w, int* __restrict__ counts,
                                 unsigned* __restrict__ workspace, int T, int E, int K) {
  __shared__ int hist[Config::kMaxExperts];  // (E) this CTA's choices per expert
  __shared__ bool is_last;
  route_kernel<CLUSTER>(logits, idx, w, counts, workspace, T, E, K, hist, &is_last);
}

extern "C" __global__ void __launch_bounds__(Config::kThreads, 1)
    sm90_f32_router_topk_softmax_decode(const float* __restrict__ logits, int* __restrict__ idx,
                                        float* __restrict__ w, int* __restrict__ counts,
                                        unsigned* __restrict__ workspace, int T, int E, int K) {
  __shared__ int hist[Config::kMaxExperts];  // (E) this CTA's choices per expert
  __shared__ bool is_last;
  route_kernel<DECODE_CLUSTER>(logits, idx, w, counts, workspace, T, E, K, hist, &is_last);
}

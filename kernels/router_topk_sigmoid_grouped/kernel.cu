/* warpsmith:plan
{ "knobs":  { "WARPS": [8, 4, 16, 2], "CTAS_PER_SM": [4, 2, 3, 8, 16, 1048576],
              "PREFETCH": [1, 0], "FAST_EXP": [1, 0], "MIN_WARPS_PER_SM": [32, 0, 24],
              "CLUSTER": [1, 8], "DECODE_T": [64, 0, 256], "DECODE_CLUSTER": [8, 1] },
  "launch": [ { "kernel": "sm90_f32_router_topk_sigmoid_grouped_decode",
                "when":  "T <= DECODE_T",
                "grid":  ["round_up(min(ceil_div(T, WARPS), num_sms * CTAS_PER_SM), DECODE_CLUSTER)"],
                "cluster": ["DECODE_CLUSTER"],
                "block": ["32 * WARPS"], "smem": "min(NG - 1, 1) * 4 * WARPS * E",
                "args":  ["logits", "bias", "idx", "w", "counts", "workspace", "T", "E", "K",
                          "NG", "TG", "SCALE_MILLI"] },
              { "kernel": "sm90_f32_router_topk_sigmoid_grouped",
                "when":  "T > DECODE_T",
                "grid":  ["round_up(min(ceil_div(T, WARPS), num_sms * CTAS_PER_SM), CLUSTER)"],
                "cluster": ["CLUSTER"],
                "block": ["32 * WARPS"], "smem": "min(NG - 1, 1) * 4 * WARPS * E",
                "args":  ["logits", "bias", "idx", "w", "counts", "workspace", "T", "E", "K",
                          "NG", "TG", "SCALE_MILLI"] } ],
  "workspace": { "bytes": "4 * (E + 1)", "zero": true } }
*/
// MoE router top-k with sigmoid scores, a selection bias and group limits (DeepSeek-V3 noaux_tc),
// hand-tuned: logits [T,E] f32, bias [E] f32 -> idx [T,K] i32, w [T,K] f32, counts [E] i32.
// One launch, counts included.
//
// Design (a few MB of work: latency and launch bound, not bandwidth bound):
//  - One warp per row. Lane i holds the S = ceil(E/32) consecutive experts [i*S, i*S+S) in
//    registers (float4 loads when S and E are multiples of 4), and the bias of the same experts,
//    loaded once per warp. The register capacity is a template (pow2 >= S), dispatched on E.
//  - Biased scores b = sigmoid(l) + bias become order-preserving u32 keys (-0 folded onto +0,
//    0 = "nothing"), so every comparison is an integer one and equal scores go to the lower id.
//  - Group scores (NG > 1): when a group is a power-of-two run of whole lanes (per % S == 0; the
//    DeepSeek-V3 shape: 32 experts = 4 lanes of 8), each lane takes the top two of its slots and
//    an xor-shuffle butterfly merges the pairs across the group's lanes. Otherwise the scores go
//    through this warp's slice of shared memory and lane g scans group g (and g + 32).
//  - Kept groups: TG rounds of a warp argmax over (group score, group id) by redux.sync; experts of
//    groups left out drop their key. Then K rounds of the same argmax over the expert keys, each
//    lane's walked in selection order by a cursor (ws::router::LaneCursor): the winner steps to
//    its known next slot, rescanning only where it won the round before too; lane j keeps round
//    j's winner (K <= 32).
//  - Weights: lane j < K recomputes its winner's unbiased sigmoid, a warp sum, then
//    s / sum * SCALE_MILLI / 1000 in fp32; lane j writes slot j (coalesced).
//  - Persistent grid, PREFETCH of the next row, and counts in one launch by block-local shared
//    histograms plus a last-CTA flush through a self-resetting workspace accumulator: as in
//    kernels/router_topk_softmax/kernel.cu (see its header).
//  - Blackwell: nothing sm_100a-specific pays here (no tensor work, no bulk copies worth their
//    setup at a few KB per CTA); one path compiles for both architectures.
//
// Knobs: WARPS (warps per CTA), CTAS_PER_SM (grid cap per SM; 1048576 = one warp per row),
// PREFETCH (double-buffer the next row), FAST_EXP (__expf and the approximate divide in the
// sigmoid: a few 1e-7 absolute at |logit| <= 10, inside the checker's 1e-6 near-tie margin; the
// exact divide costs a refinement and a slow-path branch per expert), MIN_WARPS_PER_SM (cap the
// registers so that many warps fit per SM).
// CLUSTER (CTAs per cluster of the throughput kernel), DECODE_T and DECODE_CLUSTER (the rows up
// to which the _decode entry runs instead, and its CTAs per cluster).
// Occupancy (H200 first run, MIN_WARPS_PER_SM 0): the E > 512 capacity (32 slots) set the
// registers of the whole kernel, 154 per thread on sm_90a, so 8 warps per SM were resident
// while the grid asked for 32 (CTAS_PER_SM 4 x 8 warps): 4 waves of CTAs, each ending in the
// counts flush, and a dependent chain of redux / shuffle / rescan per row with 2-4 warps per
// scheduler to hide it. The capacities alone need (sm_90a, ptxas -v on single-capacity copies)
// 48 / 40 / 55 / 66 / 94 / 146 registers for 1 / 2 / 4 / 8 / 16 / 32 slots, so MIN_WARPS_PER_SM 32 (the
// default: 64 registers, 4 CTAs of 8 warps per SM, the whole grid in one wave) costs spills only
// in the E > 512 path; E 257-512 (S 9-16) spills 104 / 52 bytes at 64 registers (MIN_WARPS_PER_SM 24: 80 registers, none; pair it with CTAS_PER_SM 3). Expected at 16k tokens: latency hidden by 4x
// (8 -> 32 warps per SM), toward the issue floor (about 900 warp instructions per row at E
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
// kernels-h200-2026-12-01-session9.json): MIN_WARPS_PER_SM 32 is 1.40-1.84x at 16k tokens and
// 2-10% slower at 64; CLUSTER 8 is 10-17% faster at 64 tokens and 14-18% slower at 16k. So the
// plan runs two entry points of one body: the capped throughput kernel for T > DECODE_T, and
// _decode (clusters of 8, registers left to ptxas) for T <= DECODE_T (64): 30.0-55.5 us at 16k
// tokens (9.2-19.5x torch eager), 9.8 / 10.3 us at 64.
// Session 27 (sweeps-h200-2026-12-04-session27.json, one call, against the then default): the
// cursor (ws::router::LaneCursor, a round's winner steps to its known next slot instead of
// clearing the won one and rescanning all S) 1.14-1.25x at 16k tokens, 1.01-1.02x at 64;
// FAST_EXP 1 (__expf and the approximate divide) 1.03-1.10x; both 1.19-1.36x at 16k tokens and
// 1.02 / 1.07x at 64 (9.6 us at E384): the defaults since.
//
// Evaluate: build/warpsmith eval router_topk_sigmoid_grouped
//   kernels/router_topk_sigmoid_grouped/kernel.cu [--knob WARPS=4 ...];
//   peers: bench/peers/router_topk_sigmoid_grouped.py.
//
// SASS claims (scripts/check_sass.py): the argmax reductions (redux.sync: REDUX on sm_90a, the
// uniform-datapath CREDUX on sm_100a) and the shared-memory histogram increment.
// warpsmith:sass sm_100a: CREDUX.MAX CREDUX.MIN ATOMS.POPC.INC
// warpsmith:sass sm_90a: REDUX ATOMS.POPC.INC

#include "ws/router.cuh"

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
#define FAST_EXP 1
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
  static constexpr int kMaxExperts = 1024;  // the spec's bounds
  static constexpr int kMaxGroups = 64;
  static constexpr bool kPrefetch = PREFETCH != 0;
  // __launch_bounds__ minimum CTAs per SM: caps the registers for MIN_WARPS_PER_SM resident warps.
  static constexpr int kMinBlocks = MIN_WARPS_PER_SM > 0 ? MIN_WARPS_PER_SM / kWarps : 1;
};
static_assert(Config::kThreads <= 1024, "whole CTA");
static_assert(Config::kMaxGroups <= 64, "kept groups are a 64-bit mask");
static_assert(CTAS_PER_SM >= 1, "grid cap");

constexpr unsigned kFullMask = 0xFFFFFFFFu;
using ws::router::float_key;
using ws::router::key_float;
using ws::router::kNoKey;
using ws::router::LaneCursor;

// NOTE: one kernel holds every capacity, so the largest sets the register count (occupancy) of
// all; E > 512 (32 slots) skips the prefetch buffer and re-reads the bias (L1 hits) per row.
constexpr int kMaxPrefetchCap = 16;
template <int kCap>
constexpr bool kBiasInRegs = kCap <= 16;

__device__ __forceinline__ float sigmoid(float x) {
#if FAST_EXP
  return __fdividef(1.0f, 1.0f + __expf(-x));
#else
  return 1.0f / (1.0f + expf(-x));
#endif
}

// Warp argmax of (key, id) by redux.sync: the largest key, the lowest id among equal keys.
// Returns the id; `key` becomes the maximum. Lanes without a candidate pass kNoKey.
__device__ __forceinline__ unsigned warp_argmax(unsigned& key, unsigned id) {
  const unsigned k = __reduce_max_sync(kFullMask, key);
  const unsigned winner = __reduce_min_sync(kFullMask, key == k ? id : ~0u);
  key = k;
  return winner;
}

// (a, b) = the two largest keys of this lane and of its partner `off` lanes away.
__device__ __forceinline__ void merge_top2(unsigned& a, unsigned& b, int off) {
  const unsigned oa = __shfl_xor_sync(kFullMask, a, off);
  const unsigned ob = __shfl_xor_sync(kFullMask, b, off);
  b = max(min(a, oa), max(b, ob));
  a = max(a, oa);
}

__device__ __forceinline__ float group_score(unsigned a, unsigned b, int per) {
  return per == 1 ? key_float(a) : key_float(a) + key_float(b);
}

template <int kCap>
__device__ __forceinline__ void load_slots(float (&v)[kCap], const float* __restrict__ p, int first,
                                           int S, int E, bool vec) {
  if constexpr (kCap >= 4) {
    if (vec) {  // S % 4 == 0 and E % 4 == 0: 16-byte aligned, whole float4s in or out
#pragma unroll
      for (int q = 0; q < kCap / 4; ++q) {
        if (4 * q < S && first + 4 * q < E) {
          const float4 f = __ldg(reinterpret_cast<const float4*>(p + first) + q);
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
    if (s < S && first + s < E) v[s] = __ldg(p + first + s);
  }
}

struct RowShape {
  int T, E, K, NG, TG, S, first, per;
  bool vec, lane_groups;  // lane_groups: each group is a power-of-two run of whole lanes
  float scale;
};

// Selects, weighs and writes one row (one warp); counts go to hist (shared). sb: this warp's
// (E) shared slice for the group fallback.
template <int kCap>
__device__ __forceinline__ void route_row(const float (&v)[kCap], const float (&bias)[kCap],
                                          const float* __restrict__ bias_all,
                                          int* __restrict__ idx, float* __restrict__ w, int* hist,
                                          const float* __restrict__ logits, float* sb,
                                          long long row, const RowShape& rs) {
  const int lane = threadIdx.x & 31;
  const bool row_ok = row < rs.T;
  unsigned key[kCap];  // (S) biased-score keys of experts first + s; kNoKey: none, group left out
#pragma unroll
  for (int s = 0; s < kCap; ++s) {
    const bool in = row_ok && s < rs.S && rs.first + s < rs.E;
    const float b = kBiasInRegs<kCap> ? bias[s] : (in ? __ldg(bias_all + rs.first + s) : 0.0f);
    key[s] = in ? float_key(sigmoid(v[s]) + b) : kNoKey;
  }

  if (rs.NG > 1) {  // warp-uniform
    // Up to two candidate groups per lane: (key, id).
    unsigned c0 = kNoKey, c1 = kNoKey;
    unsigned g0 = ~0u, g1 = ~0u;
    if (rs.lane_groups) {
      const int lanes = rs.per / rs.S;  // per group, a power of two
      unsigned a = kNoKey, b = kNoKey;
#pragma unroll
      for (int s = 0; s < kCap; ++s) {
        if (key[s] > a) {
          b = a;
          a = key[s];
        } else if (key[s] > b) {
          b = key[s];
        }
      }
      for (int off = 1; off < lanes; off <<= 1) merge_top2(a, b, off);
      const int g = rs.first / rs.per;
      if (rs.first < rs.E) {
        c0 = float_key(group_score(a, b, rs.per));
        g0 = g;
      }
    } else {
      __syncwarp();  // the previous row's scans of sb are done
#pragma unroll
      for (int s = 0; s < kCap; ++s) {
        if (s < rs.S && rs.first + s < rs.E) sb[rs.first + s] = key_float(key[s]);
      }
      __syncwarp();
      for (int g = lane; g < rs.NG; g += 32) {
        float a = -__int_as_float(0x7F800000), b = a;  // the two largest of group g
        for (int i = g * rs.per; i < (g + 1) * rs.per; ++i) {
          const float x = sb[i];
          if (x > a) {
            b = a;
            a = x;
          } else if (x > b) {
            b = x;
          }
        }
        const unsigned k = float_key(rs.per == 1 ? a : a + b);
        if (g == lane) {
          c0 = k;
          g0 = g;
        } else {
          c1 = k;
          g1 = g;
        }
      }
    }
    unsigned long long kept = 0;
    for (int j = 0; j < rs.TG; ++j) {
      unsigned best = kNoKey, best_id = ~0u;  // c0's id < c1's: strict > keeps the lower
      if (!((kept >> (g0 & 63)) & 1ull) && c0 > best) {
        best = c0;
        best_id = g0;
      }
      if (!((kept >> (g1 & 63)) & 1ull) && c1 > best) {
        best = c1;
        best_id = g1;
      }
      if (best == kNoKey) best_id = ~0u;
      const unsigned g = warp_argmax(best, best_id);
      if (g < 64) kept |= 1ull << g;  // always, for a row inside T
    }
    int g = rs.first / rs.per, r = rs.first - g * rs.per;  // slot s's group, position in it
#pragma unroll
    for (int s = 0; s < kCap; ++s) {
      if (!((kept >> (g & 63)) & 1ull)) key[s] = kNoKey;
      if (++r == rs.per) {
        r = 0;
        ++g;
      }
    }
  }

  LaneCursor<kCap> cursor;
  cursor.init(key);
  unsigned mine_id = 0;  // round `lane`'s winner
  for (int j = 0; j < rs.K; ++j) {
    const unsigned my_id = static_cast<unsigned>(rs.first + cursor.slot0);
    unsigned round_max = cursor.key0;
    const unsigned winner = warp_argmax(round_max, cursor.key0 == kNoKey ? ~0u : my_id);
    if (j == lane) mine_id = winner;
    if (cursor.key0 == round_max && my_id == winner) cursor.take(key);  // one lane
  }
  if (!row_ok) return;  // warp-uniform
  const bool chose = lane < rs.K;
  // NOTE: the winner's logit is re-read (an L1 hit) rather than shuffled out of its owner's
  // registers; the same fp32 sigmoid as the selection's.
  const float sig = chose ? sigmoid(__ldg(logits + row * rs.E + mine_id)) : 0.0f;
  float sum = sig;
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(kFullMask, sum, off);
  if (chose) {
    const long long o = row * rs.K + lane;
    idx[o] = static_cast<int>(mine_id);
    w[o] = sig / sum * rs.scale;
    atomicAdd(&hist[mine_id], 1);
  }
}

// Every row of this warp's stride, kCap register slots per lane.
template <int kCap>
__device__ __forceinline__ void route_rows(const float* __restrict__ logits,
                                           const float* __restrict__ bias_all,
                                           int* __restrict__ idx, float* __restrict__ w, int* hist,
                                           float* sb, RowShape rs) {
  rs.S = (rs.E + 31) / 32;
  rs.first = (threadIdx.x & 31) * rs.S;
  rs.per = rs.E / rs.NG;
  rs.vec = rs.S % 4 == 0 && rs.E % 4 == 0;
  const int lanes = rs.per % rs.S == 0 ? rs.per / rs.S : 0;
  rs.lane_groups = lanes > 0 && (lanes & (lanes - 1)) == 0;
  float bias[kCap];  // (kCap) this lane's experts' bias, for every row
  float cur[kCap];   // (kCap) this lane's logits of the current row
#pragma unroll
  for (int s = 0; s < kCap; ++s) bias[s] = cur[s] = 0.0f;
  if constexpr (kBiasInRegs<kCap>) load_slots(bias, bias_all, rs.first, rs.S, rs.E, rs.vec);
  const long long stride = static_cast<long long>(gridDim.x) * Config::kWarps;
  long long row = static_cast<long long>(blockIdx.x) * Config::kWarps + (threadIdx.x >> 5);
  if (row < rs.T) load_slots(cur, logits + row * rs.E, rs.first, rs.S, rs.E, rs.vec);
  for (; row < rs.T; row += stride) {  // warp-uniform
    if constexpr (Config::kPrefetch && kCap <= kMaxPrefetchCap) {
      float next[kCap];  // (kCap) the next row's logits, in flight during the selection
#pragma unroll
      for (int s = 0; s < kCap; ++s) next[s] = 0.0f;
      if (row + stride < rs.T) {
        load_slots(next, logits + (row + stride) * rs.E, rs.first, rs.S, rs.E, rs.vec);
      }
      route_row<kCap>(cur, bias, bias_all, idx, w, hist, logits, sb, row, rs);
#pragma unroll
      for (int s = 0; s < kCap; ++s) cur[s] = next[s];
    } else {
      route_row<kCap>(cur, bias, bias_all, idx, w, hist, logits, sb, row, rs);
      if (row + stride < rs.T) {
        load_slots(cur, logits + (row + stride) * rs.E, rs.first, rs.S, rs.E, rs.vec);
      }
    }
  }
}

}  // namespace

// logits (T,E) f32, bias (E) f32, idx (T,K) i32, w (T,K) f32, counts (E) i32; workspace: ticket
// (1) u32 and accumulator (E) i32, zero on entry and left zero on exit. Dynamic shared memory:
// (WARPS,E) f32 for the group fallback when NG > 1.
// The whole kernel, for both entry points: kCluster CTAs per cluster (1: none); hist (E) and
// is_last live in the calling entry point's shared memory.
template <int kCluster>
__device__ __forceinline__ void route_kernel(const float* __restrict__ logits,
                                             const float* __restrict__ bias, int* __restrict__ idx,
                                             float* __restrict__ w, int* __restrict__ counts,
                                             unsigned* __restrict__ workspace, int T, int E, int K,
                                             int NG, int TG, int SCALE_MILLI, int* hist,
                                             bool* is_last, float* group_smem) {
  for (int e = threadIdx.x; e < E; e += Config::kThreads) hist[e] = 0;
  __syncthreads();
  if constexpr (kCluster > 1)
    ws::router::cluster_arrive_relaxed();  // this CTA's hist is zero

  RowShape rs{};
  rs.T = T;
  rs.E = E;
  rs.K = K;
  rs.NG = NG;
  rs.TG = TG;
  rs.scale = static_cast<float>(SCALE_MILLI) / 1000.0f;
  float* sb = NG > 1 ? group_smem + (threadIdx.x >> 5) * E : nullptr;
  if (E <= 32) {
    route_rows<1>(logits, bias, idx, w, hist, sb, rs);
  } else if (E <= 64) {
    route_rows<2>(logits, bias, idx, w, hist, sb, rs);
  } else if (E <= 128) {
    route_rows<4>(logits, bias, idx, w, hist, sb, rs);
  } else if (E <= 256) {
    route_rows<8>(logits, bias, idx, w, hist, sb, rs);
  } else if (E <= 512) {
    route_rows<16>(logits, bias, idx, w, hist, sb, rs);
  } else {
    route_rows<32>(logits, bias, idx, w, hist, sb, rs);
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
    sm90_f32_router_topk_sigmoid_grouped(const float* __restrict__ logits,
                                         const float* __restrict__ bias, int* __restrict__ idx,
                                         float* __restrict__ w, int* __restrict__ counts,
                                         unsigned* __restrict__ workspace, int T, int E, int K,
                                         int NG, int TG, int SCALE_MILLI) {
  __shared__ int hist[Config::kMaxExperts];  // (E) this CTA's choices per expert
  __shared__ bool is_last;
  extern __shared__ float group_smem[];  // (WARPS,E) when NG > 1
  route_kernel<CLUSTER>(logits, bias, idx, w, counts, workspace, T, E, K, NG, TG, SCALE_MILLI, hist,
                        &is_last, group_smem);
}

extern "C" __global__ void __launch_bounds__(Config::kThreads, 1)
    sm90_f32_router_topk_sigmoid_grouped_decode(const float* __restrict__ logits,
                                                const float* __restrict__ bias,
                                                int* __restrict__ idx, float* __restrict__ w,
                                                int* __restrict__ counts,
                                                unsigned* __restrict__ workspace, int T, int E,
                                                int K, int NG, int TG, int SCALE_MILLI) {
  __shared__ int hist[Config::kMaxExperts];  // (E) this CTA's choices per expert
  __shared__ bool is_last;
  extern __shared__ float group_smem[];  // (WARPS,E) when NG > 1
  route_kernel<DECODE_CLUSTER>(logits, bias, idx, w, counts, workspace, T, E, K, NG, TG,
                               SCALE_MILLI, hist, &is_last, group_smem);
}

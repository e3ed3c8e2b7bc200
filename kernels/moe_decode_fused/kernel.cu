/* warpsmith:plan
{ "knobs":  { "TILE": [42, 81, 24, 22, 41], "WARPS": [8, 16], "LOAD_HINT": [2, 0, 1],
              "PREFETCH": [1, 0], "STAGES": [0, 4, 3, 2],
              "TEAM": [8, 1, 4, 2, 16], "SOLO": [0, 1] },
  "launch": [ { "kernel": "sm90_bf16_moe_decode_gate_up_mma", "when": "SOLO == 0 || T > 1",
                "grid":  ["num_sms * (16 / WARPS)"], "block": ["32 * WARPS"],
                "smem":  "4 * (2 * E + 5 * min(T, min(64, max(1, 512 / TOPK))) * TOPK + 40) + 512 * WARPS * (TILE % 10) * (1 + min(TEAM - 1, 1)) + 1024 * WARPS * (TILE / 10) * min(STAGES, 8 / (TILE / 10)) * min(1, min(STAGES, 8 / (TILE / 10)) / 2)",
                "args":  ["x", "topk_ids", "topk_weights", "w13", "workspace",
                          "T", "E", "TOPK", "H", "I"] },
              { "kernel": "sm90_bf16_moe_decode_down_mma", "pdl": true, "when": "SOLO == 0 || T > 1",
                "grid":  ["ceil_div(H, 16)"],
                "block": ["32 * max(1, 16 / ceil_div(ceil_div(H, 16), num_sms))"],
                "smem":  "4 * (2 * E + 4 * min(T, min(64, max(1, 512 / TOPK))) * TOPK + 40) + 64 * max(1, 16 / ceil_div(ceil_div(H, 16), num_sms)) * min(T, min(64, max(1, 512 / TOPK))) + 1024 * max(1, 16 / ceil_div(ceil_div(H, 16), num_sms)) * (TILE / 10) * min(STAGES, 8 / (TILE / 10)) * min(1, min(STAGES, 8 / (TILE / 10)) / 2)",
                "args":  ["topk_ids", "w2", "workspace", "y", "T", "E", "TOPK", "H", "I"] },
              { "kernel": "sm90_bf16_moe_decode_solo", "when": "SOLO != 0 && T == 1",
                "grid":  ["TOPK * ceil_div(I, 32 * pow2(min(3, log2_floor(max(1, TOPK * I / (32 * num_sms))))))"],
                "block": [256],
                "smem":  "2 * H + 12 * 32 * pow2(min(3, log2_floor(max(1, TOPK * I / (32 * num_sms)))))",
                "args":  ["x", "topk_ids", "topk_weights", "w13", "w2", "workspace", "y", "E", "TOPK",
                          "H", "I", "32 * pow2(min(3, log2_floor(max(1, TOPK * I / (32 * num_sms)))))"] } ],
  "workspace": { "bytes": "max(4 * T * TOPK * I, SOLO * (4 * H + 16))", "zero": true } }
*/
// MoE decode, the fused expert MLP of a small batch, hand-tuned ("warp decode": organized around
// outputs, no per-expert buffers, no gather, no padding): x [T,H] bf16, topk_ids/topk_weights
// [T,K], w13 [E,2I,H], w2 [E,H,I] bf16 -> y [T,H] bf16. Two launches; h lives in the workspace.
//
// Paper model (memory bound; U = E(1-(1-K/E)^T) distinct experts, each read once: 6HI bytes):
//   shape (T,E,K,H,I)            U      weights   H200 @4.2 TB/s   B200 @7.2 TB/s  pairs/expert
//   Qwen3 1,128,8,2048,768       8.0    75.5 MB      18.0 us         10.5 us        1.0
//   Qwen3 8                      51.6   487 MB      116 us           68 us          1.2
//   Qwen3 32                     111.8  1055 MB     251 us          147 us          2.3
//   Qwen3 64                     125.9  1189 MB     283 us          165 us          4.1
//   Mixtral 1,8,2,4096,14336     2.0    705 MB      168 us           98 us          1.0
//   Mixtral 8                    7.2    2536 MB     604 us          352 us          2.2
//   DSV3-EP8 1,32,8,7168,2048    8.0    705 MB      168 us           98 us          1.0
//   gpt-oss 32,128,4,2880,2880   81.7   4064 MB     968 us          565 us          1.6
// (x, y, routing and h add < 3 MB.) Math on tensor cores (mma.sync m16n8k16, fp32 accumulate):
// one mma per n-tile in use per 512 weight bytes = 8 FLOP/B executed (6TKHI useful, at most
// 5.6 GFLOP), 34 TFLOP/s at 4.2 TB/s per n-tile: under 15% of mma.sync's rate. An n-tile is 8
// tokens in kernel 1, 4 in kernel 2 (h hi and lo columns), so kernel 2 issues the same mma as a
// bf16 h would at <= 4 tokens per expert (decode), at most twice as many beyond (never more
// than a second mma per step for lo would issue).
//
// Design:
//  - Both kernels build, in shared memory, the per-expert token lists of a window of tokens (all
//    64 at decode): a histogram of topk_ids, one scan, and a scatter in pair order by one warp
//    (__match_any_sync), so every CTA gets the same lists. An item is (expert, up to 8*NTILES of
//    its tokens; 4*NTILES in kernel 2): the mma's n dimension. An expert with more tokens gets
//    more items (re-read).
//  - mma fragments straight from global memory: lane (g = lane/4, q = lane%4) loads 16 bytes (8
//    consecutive k) of row g and of row g+8; the two halves of the chunk are two k16 steps with k
//    permuted consistently in A and B (B: the same 16 bytes of token g's activation row). A warp
//    group is CHUNKS such chunks per row: 32*CHUNKS columns, 64*CHUNKS contiguous bytes per row.
//  - Kernel 1 (gate/up): a unit is (item, 8 rows r0..r0+7): logical rows 0-7 are the gate rows,
//    8-15 the up rows r0..r0+7, so each lane holds g and u of the same (row, token) in its
//    accumulator and h = silu(g) * u * topk_weight is formed in registers and stored to the
//    workspace h [T*K, 2, I] as bf16 hi = bf16(h), lo = bf16(h - hi). Persistent grid (16 warps
//    per SM); units are dealt to teams of KS warps across CTAs first; KS (runtime, power of 2)
//    splits H inside a team when there are fewer units than warps (batch 1), partial sums
//    reduced in shared memory in warp order.
//  - Kernel 2 (down, PDL): output-stationary. A CTA owns 16 rows of H for every token; its warps
//    deal units (item, column group of I) round-robin, accumulate in registers per item (B column
//    2m: hi of token m, 2m+1: its lo; a lane sums the two) and add into a per-warp [tokens,16]
//    fp32 tile in shared memory; at the end the CTA sums the warp tiles in order and writes y
//    once in bf16. No atomics, deterministic. Block size is chosen by the plan so that all
//    ceil(H/16) CTAs are resident at once (16 warps per SM). Before griddepcontrol.wait it
//    builds its lists and bulk-prefetches (PREFETCH) the first 64 KB of its w2 rows into L2,
//    which fills the bubble between the two kernels.
//  - Numerics: products exact (bf16 x bf16), fp32 accumulation (tensor cores), the routing weight
//    folded into h, h kept to 16 bits as hi + lo (a bf16 h alone fails the element rule in ~1%
//    of random cases at the test shapes), one bf16 rounding of y. Cost of lo: h bytes (L2) per w2
//    byte count/8 rather than count/16 for an item of count tokens; mma count above.
// Why it should be fast: each distinct expert's weights leave HBM once (per token window),
// 16-byte loads, 64-128 KB in flight per SM from registers alone, no atomics, and tensor cores
// keep the ALU work per byte near zero even at 16+ tokens per expert.
// Blackwell: nothing sm_100a-specific pays for a memory-bound GEMV with <= 32 tokens per expert
// (tcgen05 needs M = 64/128 tiles and tensor memory setup); the same code compiles for both.
//
// Knobs: TILE = 10 * CHUNKS + NTILES, only the pairs that fit 128 registers unspilled
// (42, 81, 24, 22, 41; not 44 or 82): CHUNKS 16-byte chunks per row per lane and group (bytes in
// flight and per-row contiguity: 4 KB per warp at 42, 8 KB at 81), NTILES 8-token n-tiles per
// item (2: 16 tokens per expert in one pass; 24 for DeepSeek-V3 EP8 at 64 tokens, ~16 per
// expert; a second pass mostly hits L2 since both passes run at the same time). WARPS (kernel 1
// CTA size), LOAD_HINT (weight loads: 0 ld.global.nc, 1 + L1::no_allocate, 2 + L2::256B
// prefetch), PREFETCH (kernel 2's L2 prefetch before griddepcontrol.wait). STAGES (0 = the
// register path above): weights through a per-warp cp.async ring in shared memory, STAGES groups
// deep (<= 8 KB per warp; clamped to 8 / CHUNKS, TILE=8x stays on the register path), issued
// STAGES - 1 groups ahead across units and items, kernel 2's first groups before
// griddepcontrol.wait; LOAD_HINT 0 and 1 are then the same (cp.async.cg), 2 adds L2::256B.
// NOTES.md ("Why 0.41-0.78") has the model behind it. W2PF (kernel 1's last warps warming the L2
// with w2) ran 0.95x in session 23 and 0.94-0.96x on the session-42 defaults: removed (git
// 0ddea0d has it).
// TEAM (power of 2, clamped to WARPS): kernel 1's least team size (1: teams only at batch 1), so
// a team's warps read TEAM neighbouring pieces of each row at once (NOTES.md, "DRAM runs").
// SOLO (0 by default): at T == 1, one launch instead of two (the kernel at the end of this file;
// the plan zeroes the workspace for it). On an H100 (s58c1) `ok` everywhere and 0.98-1.02x the
// two launches at the T == 1 bench shapes: NOTES.md "Session 58: SOLO".
// LOAD_HINT=2 TEAM=8 are the defaults since session 42: 1.10-1.13x the old defaults (LOAD_HINT=0,
// TEAM=1) in three sweeps on an H100, 1.06-1.20x at every bench shape, `ok` at every test and
// hidden shape, clean under compute-sanitizer (bench/results/sweeps-h100-2026-12-06-session42.json).
// On the H200 (session 43) the old defaults ran 0.913x / 0.925x of them in two sweeps.
//
// Evaluate: build/warpsmith eval moe_decode_fused kernels/moe_decode_fused/kernel.cu
//   [--knob TILE=81 ...]; peers: bench/peers/moe_decode_fused.py. Notes: NOTES.md beside this.
//
// SASS claims: the bf16 tensor-core mma and the 128-bit read-only weight loads.
// warpsmith:sass sm_90a: HMMA.16816.F32.BF16 LDG.E.128.CONSTANT MATCH.ANY
// warpsmith:sass sm_100a: HMMA.16816.F32.BF16 LDG.E.128.CONSTANT MATCH.ANY
// warpsmith:sass sm_90a TILE=22 STAGES=4: HMMA.16816.F32.BF16 LDGSTS LDGDEPBAR DEPBAR MATCH.ANY
// warpsmith:sass sm_100a TILE=22 STAGES=4: HMMA.16816.F32.BF16 LDGSTS LDGDEPBAR DEPBAR MATCH.ANY
// warpsmith:sass sm_90a SOLO=1: LDG.E.128.CONSTANT REDG.E.ADD.F32
// warpsmith:sass sm_100a SOLO=1: LDG.E.128.CONSTANT REDG.E.ADD.F32

#ifndef TILE
#define TILE 42
#endif
#ifndef WARPS
#define WARPS 8
#endif
#ifndef LOAD_HINT
#define LOAD_HINT 2
#endif
#ifndef PREFETCH
#define PREFETCH 1
#endif
#ifndef STAGES
#define STAGES 0
#endif
#ifndef TEAM
#define TEAM 8  // kernel 1: the least warps per team (power of 2; clamped to WARPS)
#endif

#include "ws/memory.cuh"

namespace {

typedef unsigned int uint32_t;
typedef unsigned short uint16_t;

struct Config {
  static constexpr int kChunks = TILE / 10;          // 16-byte chunks per row per lane and group
  static constexpr int kNTiles = TILE % 10;          // 8-token n-tiles per item
  static constexpr int kItemTokens = 8 * kNTiles;    // kernel 1: tokens one pass serves
  static constexpr int kItemTokens2 = 4 * kNTiles;   // kernel 2: 2 mma columns a token (h hi, lo)
  static constexpr int kGroupCols = 32 * kChunks;    // columns (k) a warp covers per group
  static constexpr int kWarps1 = WARPS;              // kernel 1 warps per CTA
  static constexpr int kWarpsPerSm = 16;             // both kernels: 16 warps x <= 128 registers
  static constexpr int kMaxThreads2 = 32 * kWarpsPerSm;
  static constexpr int kRows2 = 16;                  // kernel 2: rows of H per CTA
  static constexpr int kWindowTokens = 64;           // token window (the plan's smem agrees)
  static constexpr int kWindowPairs = 512;
  static constexpr int kPrefetchBytes = PREFETCH ? 64 * 1024 : 0;  // kernel 2's L2 prefetch per CTA
  static constexpr int kPrefetchRowBytes = 4096;
  // STAGES > 0: weight chunks go through a per-warp cp.async ring in shared memory, kStages
  // groups deep (<= 8 KB per warp: STAGES is clamped to 8 / CHUNKS; a ring of one is none, so
  // TILE=8x keeps the register path). 0: the register path (loads straight into the fragments).
  static constexpr int kStagesMax = STAGES * kChunks <= 8 ? STAGES : 8 / kChunks;
  static constexpr int kStages = kStagesMax >= 2 ? kStagesMax : 0;
  static constexpr int kStageBytes = 2 * kChunks * 512;  // a warp's group: 2 rows x kChunks x 32 lanes
  // Kernel 1's least team size. A team's warps take interleaved groups of the same 16 rows, so
  // at any moment they read ks neighbouring 64 * CHUNKS-byte pieces of each row: DRAM runs of
  // ks * 64 * CHUNKS bytes, where one warp alone reads 256-byte runs 2H bytes apart (TILE=42).
  // The price: a reduction in shared memory and a team barrier per unit.
  static constexpr int kTeamMin = TEAM < WARPS ? TEAM : WARPS;
  // TEAM > 1: two reduction buffers, alternating by unit, so a team's warps start the next
  // unit's loads while its leader still sums this one (one team barrier per unit, not two).
  static constexpr int kRedBufs = TEAM > 1 ? 2 : 1;
};
static_assert(Config::kChunks == 2 || Config::kChunks == 4 || Config::kChunks == 8, "chunks");
static_assert(Config::kNTiles >= 1 && Config::kNTiles <= 4, "item tokens fit the 8-bit count");
// Registers: a group's A (8 per chunk) and B (4 per chunk and n-tile) are live together; beyond
// 96 of them, or 32 of B (whose n-tiles also carry accumulators and row pointers), the
// 128-register cap (16 warps per SM) spills: (4,4) and (8,2) do.
static_assert(Config::kChunks * (2 + Config::kNTiles) <= 24 &&
                  Config::kChunks * Config::kNTiles <= 8,
              "TILE: CHUNKS * (2 + NTILES) <= 24 and CHUNKS * NTILES <= 8");
static_assert(Config::kWarps1 == 8 || Config::kWarps1 == 16, "16 / WARPS CTAs per SM");
static_assert(TEAM >= 1 && (TEAM & (TEAM - 1)) == 0, "TEAM: a power of 2");

using ws::Chunk;
using ws::kFullMask;

// Weight rows: streamed once, read-only for the kernel's life (the LOAD_HINT knob's qualifiers).
constexpr ws::LoadHint kWeightHint = LOAD_HINT == 1   ? ws::LoadHint::kNcNoAllocate
                                     : LOAD_HINT == 2 ? ws::LoadHint::kNcL2_256
                                                      : ws::LoadHint::kNc;

// h: written by kernel 1, which may still be finishing when kernel 2 starts (PDL): L2 only.
__device__ __forceinline__ Chunk load_h(const uint16_t* p) {
  Chunk c;
  asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(c.w[0]), "=r"(c.w[1]), "=r"(c.w[2]), "=r"(c.w[3])
               : "l"(p)
               : "memory");
  return c;
}

__device__ __forceinline__ Chunk zero_chunk() { return Chunk{{0u, 0u, 0u, 0u}}; }

// d += A (16x16, row) * B (16x8, col), bf16 in, fp32 accumulate.
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], uint32_t a0, uint32_t a1,
                                               uint32_t a2, uint32_t a3, uint32_t b0,
                                               uint32_t b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// One group's mma: lo/hi are the lane's chunks of logical rows g and g+8, b[nt] token g's chunk
// of n-tile nt. Chunk half s (words 2s, 2s+1) is a k16 step: logical k 2q,2q+1 <-> word 2s and
// 2q+8,2q+9 <-> word 2s+1, the same words in A and B, so the permutation of k cancels.
__device__ __forceinline__ void mma_group(float (&acc)[Config::kNTiles][4],
                                          const Chunk (&lo)[Config::kChunks],
                                          const Chunk (&hi)[Config::kChunks],
                                          const Chunk (&b)[Config::kNTiles][Config::kChunks],
                                          int n_tiles) {
#pragma unroll
  for (int u = 0; u < Config::kChunks; ++u) {
#pragma unroll
    for (int s = 0; s < 2; ++s) {
#pragma unroll
      for (int nt = 0; nt < Config::kNTiles; ++nt) {
        if (nt < n_tiles) {
          mma_bf16_16816(acc[nt], lo[u].w[2 * s], hi[u].w[2 * s], lo[u].w[2 * s + 1],
                         hi[u].w[2 * s + 1], b[nt][u].w[2 * s], b[nt][u].w[2 * s + 1]);
        }
      }
    }
  }
}

// fp32 -> bf16 bits, RNE; NaN -> 0x7FC0; overflow rounds to +-Inf.
__device__ __forceinline__ uint16_t bf16_rne(float v) {
  const uint32_t b = __float_as_uint(v);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0u;
  return static_cast<uint16_t>((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

__device__ __forceinline__ float bf16_to_float(uint16_t v) {
  return __uint_as_float(static_cast<uint32_t>(v) << 16);
}

// Tokens per window; the plan's smem expressions use the same formula.
__device__ __forceinline__ int window_tokens(int T, int K) {
  return min(T, min(Config::kWindowTokens, max(1, Config::kWindowPairs / K)));
}

// The routing of one token window, in shared memory. An item is (expert, up to kItem of
// its pairs): item_e[i], item_sc[i] = start << 8 | count, its pairs plist[start .. start+count),
// a pair index p = (t - t0) * K + j local to the window, in increasing p within an expert.
struct Routing {
  int* cnt;      // [E] per-expert pair count, then the scatter cursor
  int* pre;      // [E] exclusive scan of (items << 16 | pairs)
  int* ids;      // [window pairs] expert of each pair
  int* plist;    // [window pairs] pairs grouped by expert
  int* item_e;   // [window pairs]
  int* item_sc;  // [window pairs]
  int* misc;     // [40]: [0] scan total, [8..39] warp sums
};

__device__ __forceinline__ Routing carve_routing(int* base, int E, int pairs_max) {
  Routing r;
  r.cnt = base;
  r.pre = r.cnt + E;
  r.ids = r.pre + E;
  r.plist = r.ids + pairs_max;
  r.item_e = r.plist + pairs_max;
  r.item_sc = r.item_e + pairs_max;
  r.misc = r.item_sc + pairs_max;
  return r;
}

// Builds the routing of tokens [t0, t0 + n_tok); returns the number of items. Every thread of
// the CTA calls it; it ends with a __syncthreads. wt (optional) receives the pairs' weights.
template <int kItem>
__device__ int build_routing(const Routing& r, const int* __restrict__ topk_ids,
                             const float* __restrict__ topk_weights, float* wt, int t0, int n_tok,
                             int K, int E) {
  const int tid = threadIdx.x, nthreads = blockDim.x;
  const int lane = tid & 31, warp = tid >> 5, nwarps = nthreads >> 5;
  const int np = n_tok * K;
  const long long base = static_cast<long long>(t0) * K;
  for (int e = tid; e < E; e += nthreads) r.cnt[e] = 0;
  for (int p = tid; p < np; p += nthreads) {
    r.ids[p] = topk_ids[base + p];
    if (wt != nullptr) wt[p] = topk_weights[base + p];
  }
  __syncthreads();
  for (int p = tid; p < np; p += nthreads) {
    const int e = r.ids[p];
    // NOTE: the spec promises ids in [0, E); an id outside is dropped rather than corrupting smem.
    if (static_cast<unsigned>(e) < static_cast<unsigned>(E)) atomicAdd(&r.cnt[e], 1);
  }
  __syncthreads();
  // Exclusive scan of v(e) = items(e) << 16 | pairs(e): both totals are <= np < 2^16.
  const int per = (E + nthreads - 1) / nthreads;
  const int e0 = min(E, tid * per), e1 = min(E, e0 + per);
  int local = 0;
  for (int e = e0; e < e1; ++e) {
    const int c = r.cnt[e];
    local += ((c + kItem - 1) / kItem) << 16 | c;
  }
  int incl = local;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int v = __shfl_up_sync(kFullMask, incl, o);
    if (lane >= o) incl += v;
  }
  if (lane == 31) r.misc[8 + warp] = incl;
  __syncthreads();
  if (warp == 0) {
    const int v = lane < nwarps ? r.misc[8 + lane] : 0;
    int s = v;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const int w = __shfl_up_sync(kFullMask, s, o);
      if (lane >= o) s += w;
    }
    if (lane < nwarps) r.misc[8 + lane] = s - v;  // exclusive prefix of the warps
    if (lane == 31) r.misc[0] = s;
  }
  __syncthreads();
  int run = r.misc[8 + warp] + incl - local;
  for (int e = e0; e < e1; ++e) {
    const int c = r.cnt[e];
    r.pre[e] = run;
    run += ((c + kItem - 1) / kItem) << 16 | c;
  }
  __syncthreads();
  for (int e = tid; e < E; e += nthreads) {
    const int c = r.cnt[e];
    const int start = r.pre[e] & 0xFFFF, item0 = r.pre[e] >> 16;
    for (int i = 0; i * kItem < c; ++i) {
      const int first = i * kItem;
      r.item_e[item0 + i] = e;
      r.item_sc[item0 + i] = (start + first) << 8 | min(kItem, c - first);
    }
    r.cnt[e] = 0;  // now the scatter cursor
  }
  __syncthreads();
  // Scatter in pair order by one warp: deterministic, so every CTA splits an expert's pairs
  // into the same items.
  if (warp == 0) {
    for (int p0 = 0; p0 < np; p0 += 32) {
      const int p = p0 + lane;
      int e = p < np ? r.ids[p] : -1;
      if (static_cast<unsigned>(e) >= static_cast<unsigned>(E)) e = -1;
      const unsigned peers = __match_any_sync(kFullMask, e);
      const int rank = __popc(peers & ((1u << lane) - 1u));
      if (e >= 0) r.plist[(r.pre[e] & 0xFFFF) + r.cnt[e] + rank] = p;
      __syncwarp();
      if (e >= 0 && rank == 0) r.cnt[e] += __popc(peers);
      __syncwarp();
    }
  }
  __syncthreads();
  return r.misc[0] >> 16;
}

__device__ __forceinline__ void team_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// Kernel 1's output of a unit (rows r0 .. r0 + 7 of an item): acc[nt] = {gate(r0 + g, slot 2q),
// gate(.., 2q + 1), up(r0 + g, 2q), up(.., 2q + 1)}; h = silu(gate) * up * topk_weight of each
// token slot's pair p goes to the workspace as h[p, 0, r] = bf16(h), h[p, 1, r] = bf16(h - that).
__device__ __forceinline__ void store_h(const float (&acc)[Config::kNTiles][4], int q, int count,
                                        const Routing& rt, int start, const float* wt,
                                        uint16_t* __restrict__ h, int t0, int K, int I, int r0,
                                        int g) {
#pragma unroll
  for (int nt = 0; nt < Config::kNTiles; ++nt) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int slot = nt * 8 + 2 * q + j;
      if (slot < count) {
        const int p = rt.plist[start + slot];
        const float gv = acc[nt][j], uv = acc[nt][2 + j];
        const float hv = gv / (1.0f + __expf(-gv)) * uv * wt[p];
        // NOTE: a bf16 h alone fails the element rule in ~1% of random cases at the test
        // shapes; hi + lo carries 16 bits (hv - hi is exact in fp32). Inf/NaN keep lo = 0.
        const uint16_t hb = bf16_rne(hv);
        const float rest = hv - bf16_to_float(hb);
        uint16_t* hp = h + ((static_cast<long long>(t0) * K + p) * 2) * I + r0 + g;
        hp[0] = hb;
        const bool finite = (__float_as_uint(rest) & 0x7F800000u) != 0x7F800000u;
        hp[I] = finite ? bf16_rne(rest) : uint16_t{0};
      }
    }
  }
}

// ---- Kernel 2's steps that are the same on both paths (registers, STAGES ring) ----

// The first window's first items: their w2 rows (the leading 4 KB of each) into L2 while
// kernel 1 drains (PREFETCH).
__device__ __forceinline__ void prefetch_w2_rows(const Routing& rt, const uint16_t* w2,
                                                 int n_items, int H, int I, int row0, bool hi_ok,
                                                 int tid) {
  constexpr int kR = Config::kRows2;
  const int rows = hi_ok ? kR : kR / 2;
  const int row_bytes = min(2 * I, Config::kPrefetchRowBytes);  // I % 8 == 0: 16-byte multiple
  const int n_pf = min(n_items, max(1, Config::kPrefetchBytes / (rows * row_bytes)));
  for (int i = tid; i < n_pf * rows; i += blockDim.x) {
    const int e = rt.item_e[i / rows];
    const uint16_t* p = w2 + (static_cast<long long>(e) * H + row0 + i % rows) * I;
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(row_bytes)
                 : "memory");
  }
}

// Adds a finished item's partial sums into this warp's tile my_ys [tw][16] and zeroes them:
// acc[nt] = {row g, row g + 8} x {hi, lo} of token slot nt * 4 + q. NOTE: the arguments come in
// the order the body first reads them; the callers' flush lambdas in another order renumbered
// PTX registers and moved the SASS.
__device__ __forceinline__ void flush_item(float (&acc)[Config::kNTiles][4], int q, int count,
                                           const Routing& rt, int start, int K, float* my_ys,
                                           int g, bool hi_ok) {
  constexpr int kR = Config::kRows2;
#pragma unroll
  for (int nt = 0; nt < Config::kNTiles; ++nt) {
    const int slot = nt * 4 + q;
    if (slot < count) {
      const int tt = rt.plist[start + slot] / K;
      my_ys[tt * kR + g] += acc[nt][0] + acc[nt][1];
      if (hi_ok) my_ys[tt * kR + 8 + g] += acc[nt][2] + acc[nt][3];
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) acc[nt][i] = 0.0f;
  }
  // NOTE: the next item may give this (row, token) to another lane.
  __syncwarp();
}

// y rows of the window: the warp tiles ys [nwarps][tw][16] summed in warp order, one bf16
// rounding.
__device__ __forceinline__ void store_y(const float* ys, uint16_t* __restrict__ y, int t0,
                                        int n_tok, int tw, int H, int row0, int nwarps, int tid) {
  constexpr int kR = Config::kRows2;
  for (int i = tid; i < n_tok * kR; i += blockDim.x) {
    const int tt = i / kR, r = i % kR;
    if (row0 + r >= H) continue;
    float s = 0.0f;
    for (int w = 0; w < nwarps; ++w) s += ys[w * tw * kR + i];
    y[static_cast<long long>(t0 + tt) * H + row0 + r] = bf16_rne(s);
  }
}

// ---- STAGES > 0: the weight chunks through a per-warp cp.async ring in shared memory ----
// Each lane copies and later reads back only its own 16-byte slots (ring + (slot * 32 + lane) *
// 16), so cp.async.wait_group alone orders a lane's copy before its read; no warp barrier. A
// group (kStageBytes per warp: slot 2u = chunk u of row g, 2u + 1 = chunk u of row g + 8) is
// issued kStages - 1 groups ahead of its use, across unit and item boundaries, so a warp keeps
// kStages - 1 to kStages groups of weights in flight instead of one group then a stall.

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, L2 only (.cg); bytes = 0 zero-fills the slot and reads nothing.
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, uint32_t bytes) {
#if LOAD_HINT == 2
  asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;" ::"r"(dst), "l"(src),
               "r"(bytes)
               : "memory");
#else
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(bytes)
               : "memory");
#endif
}

__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}

template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
}

// Kernel 1 with the ring (same units, teams, numerics and stores as the register path).
__device__ __forceinline__ void gate_up_ring(const uint16_t* __restrict__ x,
                                             const int* __restrict__ topk_ids,
                                             const float* __restrict__ topk_weights,
                                             const uint16_t* __restrict__ w13,
                                             uint16_t* __restrict__ h, int T, int E, int K, int H,
                                             int I) {
  constexpr int kNT = Config::kNTiles, kC = Config::kChunks, kS = Config::kStages;
  constexpr int kSB = Config::kStageBytes;
  extern __shared__ __align__(16) unsigned char smem[];
  const int tw = window_tokens(T, K);
  const int pairs_max = tw * K;
  // [WARPS][kS] ring stages first (16-byte aligned), then the register path's layout.
  float* red = reinterpret_cast<float*>(smem + Config::kWarps1 * kS * kSB);
  float* wt = red + Config::kRedBufs * Config::kWarps1 * 4 * kNT * 32;
  float* rbuf = red;  // this unit's reduction buffer (kRedBufs alternate)
  const Routing rt = carve_routing(reinterpret_cast<int*>(wt + pairs_max), E, pairs_max);

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
  const uint32_t ring = smem_addr(smem) + warp * kS * kSB + lane * 16;
  const int row_blocks = I / 8;
  const int n_groups = (H + Config::kGroupCols - 1) / Config::kGroupCols;
  const long long total_warps = static_cast<long long>(gridDim.x) * Config::kWarps1;

  for (int t0 = 0; t0 < T; t0 += tw) {
    const int n_tok = min(tw, T - t0);
    const int n_items =
        build_routing<Config::kItemTokens>(rt, topk_ids, topk_weights, wt, t0, n_tok, K, E);
    const long long n_units = static_cast<long long>(n_items) * row_blocks;
    // Team size: at least kTeamMin, doubled while the units leave warps idle.
    int ks = Config::kTeamMin;
    while (ks * 2 <= Config::kWarps1 && n_units * ks * 2 <= total_warps) ks *= 2;
    const int team = warp / ks, kw = warp % ks;
    const long long n_teams = static_cast<long long>(gridDim.x) * (Config::kWarps1 / ks);
    const long long unit0 = static_cast<long long>(team) * gridDim.x + blockIdx.x;

    // Producer: this warp's (unit, group) sequence, the consumer's order, kS - 1 groups ahead.
    long long p_unit = kw < n_groups ? unit0 : n_units;
    int p_kg = kw, p_stage = 0;
    const uint16_t* p_gate = w13;
    auto p_rows = [&]() {
      const int item = static_cast<int>(p_unit / row_blocks);
      const int r0 = static_cast<int>(p_unit % row_blocks) * 8;
      p_gate = w13 + (static_cast<long long>(rt.item_e[item]) * 2 * I + r0 + g) * H;
    };
    if (p_unit < n_units) p_rows();
    auto issue = [&]() {
      if (p_unit < n_units) {
        const uint16_t* p_up = p_gate + static_cast<long long>(I) * H;
        const int c0 = p_kg * Config::kGroupCols + 8 * q;
        const uint32_t s = ring + p_stage * kSB;
#pragma unroll
        for (int u = 0; u < kC; ++u) {
          const int col = c0 + 32 * u;
          const bool ok = col < H;  // H % 8 == 0: a chunk is wholly inside or outside
          const int off = ok ? col : 0;
          const uint32_t n = ok ? 16u : 0u;
          cp_async16(s + (2 * u) * 512, p_gate + off, n);
          cp_async16(s + (2 * u + 1) * 512, p_up + off, n);
        }
        p_kg += ks;
        if (p_kg >= n_groups) {
          p_kg = kw;
          p_unit += n_teams;
          if (p_unit < n_units) p_rows();
        }
      }
      cp_async_commit();  // empty past the end: keeps one group per step
      p_stage = p_stage + 1 == kS ? 0 : p_stage + 1;
    };
#pragma unroll
    for (int i = 0; i < kS - 1; ++i) issue();
    int c_stage = 0;

    for (long long unit = unit0; unit < n_units; unit += n_teams) {
      const int item = static_cast<int>(unit / row_blocks);
      const int r0 = static_cast<int>(unit % row_blocks) * 8;
      const int start = rt.item_sc[item] >> 8, count = rt.item_sc[item] & 0xFF;
      const int n_tiles = (count + 7) / 8;
      const uint16_t* xrow[kNT];
      bool has_tok[kNT];
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) {
        const int slot = nt * 8 + g;
        has_tok[nt] = slot < count;
        const int p = has_tok[nt] ? rt.plist[start + slot] : 0;
        xrow[nt] = x + static_cast<long long>(t0 + p / K) * H;
      }
      float acc[kNT][4];
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[nt][i] = 0.0f;
      }
      for (int kg = kw; kg < n_groups; kg += ks) {
        issue();
        const int c0 = kg * Config::kGroupCols + 8 * q;
        Chunk lo[kC], hi[kC], b[kNT][kC];
        // x first (L1 / L2): its latency overlaps the wait for the weights.
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
          for (int u = 0; u < kC; ++u) {
            const int col = c0 + 32 * u;
            b[nt][u] = zero_chunk();
            if (nt < n_tiles && has_tok[nt] && col < H) b[nt][u] = ws::load_global16(xrow[nt] + col);
          }
        }
        cp_async_wait<kS - 1>();  // this step's group (the oldest but kS - 1) has landed
        const uint32_t s = ring + c_stage * kSB;
#pragma unroll
        for (int u = 0; u < kC; ++u) {
          lo[u] = ws::load_shared16(s + (2 * u) * 512);
          hi[u] = ws::load_shared16(s + (2 * u + 1) * 512);
        }
        c_stage = c_stage + 1 == kS ? 0 : c_stage + 1;
        mma_group(acc, lo, hi, b, n_tiles);
      }
      // NOTE: the team reduction repeats kernel 1's register path below: as a helper for both,
      // its loop's compares turned from unsigned to signed in the verified sm_90a code.
      if (ks > 1) {
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
          for (int i = 0; i < 4; ++i) rbuf[((warp * kNT + nt) * 4 + i) * 32 + lane] = acc[nt][i];
        }
        team_barrier(1 + team, 32 * ks);
        if (kw == 0) {
          for (int w = warp + 1; w < warp + ks; ++w) {
#pragma unroll
            for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
              for (int i = 0; i < 4; ++i) acc[nt][i] += rbuf[((w * kNT + nt) * 4 + i) * 32 + lane];
            }
          }
        }
        if constexpr (Config::kRedBufs == 1) {
          team_barrier(1 + team, 32 * ks);
        } else {
          // The next unit writes the other buffer; the one after waits at the next unit's
          // barrier, which the leader reaches only after reading this one.
          rbuf = rbuf == red ? red + Config::kWarps1 * 4 * kNT * 32 : red;
        }
      }
      if (kw == 0) store_h(acc, q, count, rt, start, wt, h, t0, K, I, r0, g);
    }
    cp_async_wait<0>();  // only empty groups remain; the next window reuses the slots
    __syncthreads();
  }
}

// Kernel 2 with the ring. The first kS - 1 groups of weights are issued before
// griddepcontrol.wait: w2 does not depend on kernel 1, only h does.
__device__ __forceinline__ void down_ring(const int* __restrict__ topk_ids,
                                          const uint16_t* __restrict__ w2, const uint16_t* h,
                                          uint16_t* __restrict__ y, int T, int E, int K, int H,
                                          int I) {
  constexpr int kNT = Config::kNTiles, kC = Config::kChunks, kR = Config::kRows2;
  constexpr int kS = Config::kStages, kSB = Config::kStageBytes;
  extern __shared__ __align__(16) unsigned char smem[];
  const int tw = window_tokens(T, K);
  const int pairs_max = tw * K;
  const int nwarps = blockDim.x >> 5;
  float* ys = reinterpret_cast<float*>(smem + nwarps * kS * kSB);  // ring first
  const Routing rt = carve_routing(reinterpret_cast<int*>(ys + nwarps * tw * kR), E, pairs_max);

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, q = lane & 3;
  const uint32_t ring = smem_addr(smem) + warp * kS * kSB + lane * 16;
  const int row0 = blockIdx.x * kR;
  const bool hi_ok = row0 + kR <= H;
  const int n_groups = (I + Config::kGroupCols - 1) / Config::kGroupCols;
  float* my_ys = ys + warp * tw * kR;

  for (int t0 = 0; t0 < T; t0 += tw) {
    const int n_tok = min(tw, T - t0);
    for (int i = tid; i < nwarps * tw * kR; i += blockDim.x) ys[i] = 0.0f;
    const int n_items =
        build_routing<Config::kItemTokens2>(rt, topk_ids, nullptr, nullptr, t0, n_tok, K, E);
    if (Config::kPrefetchBytes > 0 && t0 == 0)
      prefetch_w2_rows(rt, w2, n_items, H, I, row0, hi_ok, tid);
    const long long pair_base = static_cast<long long>(t0) * K;
    const long long n_units = static_cast<long long>(n_items) * n_groups;

    long long p_unit = warp;
    int p_stage = 0;
    auto issue = [&]() {
      if (p_unit < n_units) {
        const int item = static_cast<int>(p_unit / n_groups);
        const int kg = static_cast<int>(p_unit % n_groups);
        const uint16_t* plo = w2 + (static_cast<long long>(rt.item_e[item]) * H + row0 + g) * I;
        const uint16_t* phi = hi_ok ? plo + 8LL * I : plo;  // absent rows: zero-filled
        const int c0 = kg * Config::kGroupCols + 8 * q;
        const uint32_t s = ring + p_stage * kSB;
#pragma unroll
        for (int u = 0; u < kC; ++u) {
          const int col = c0 + 32 * u;
          const bool ok = col < I;  // I % 8 == 0: a chunk is wholly inside or outside
          const int off = ok ? col : 0;
          const uint32_t n = ok ? 16u : 0u;
          cp_async16(s + (2 * u) * 512, plo + off, n);
          cp_async16(s + (2 * u + 1) * 512, phi + off, hi_ok ? n : 0u);
        }
        p_unit += nwarps;
      }
      cp_async_commit();
      p_stage = p_stage + 1 == kS ? 0 : p_stage + 1;
    };
#pragma unroll
    for (int i = 0; i < kS - 1; ++i) issue();  // weights only: before the wait
    asm volatile("griddepcontrol.wait;" ::: "memory");

    int cur = -1, start = 0, count = 0, n_tiles = 0, c_stage = 0;
    const uint16_t* hrow[kNT];
    bool has_tok[kNT];
    float acc[kNT][4];
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
      hrow[nt] = h;
      has_tok[nt] = false;
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[nt][i] = 0.0f;
    }
    auto flush = [&]() { flush_item(acc, q, count, rt, start, K, my_ys, g, hi_ok); };
    for (long long unit = warp; unit < n_units; unit += nwarps) {
      issue();
      const int item = static_cast<int>(unit / n_groups);
      const int kg = static_cast<int>(unit % n_groups);
      if (item != cur) {
        if (cur >= 0) flush();
        cur = item;
        start = rt.item_sc[item] >> 8;
        count = rt.item_sc[item] & 0xFF;
        n_tiles = (2 * count + 7) / 8;
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
          const int slot = nt * 4 + (g >> 1);
          has_tok[nt] = slot < count;
          const int p = has_tok[nt] ? rt.plist[start + slot] : 0;
          hrow[nt] = h + ((pair_base + p) * 2 + (g & 1)) * I;
        }
      }
      const int c0 = kg * Config::kGroupCols + 8 * q;
      Chunk lo[kC], hi[kC], b[kNT][kC];
      // h first (L2): its latency overlaps the wait for the weights.
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
        for (int u = 0; u < kC; ++u) {
          const int col = c0 + 32 * u;
          b[nt][u] = zero_chunk();
          if (nt < n_tiles && has_tok[nt] && col < I) b[nt][u] = load_h(hrow[nt] + col);
        }
      }
      cp_async_wait<kS - 1>();
      const uint32_t s = ring + c_stage * kSB;
#pragma unroll
      for (int u = 0; u < kC; ++u) {
        lo[u] = ws::load_shared16(s + (2 * u) * 512);
        hi[u] = ws::load_shared16(s + (2 * u + 1) * 512);
      }
      c_stage = c_stage + 1 == kS ? 0 : c_stage + 1;
      mma_group(acc, lo, hi, b, n_tiles);
    }
    if (cur >= 0) flush();
    cp_async_wait<0>();
    __syncthreads();
    store_y(ys, y, t0, n_tok, tw, H, row0, nwarps, tid);
    __syncthreads();
  }
}

}  // namespace

// Kernel 1: v = silu(w13[e, r] . x[t]) * (w13[e, I + r] . x[t]) * topk_weights[p] for every pair
// p = (t, j), e = topk_ids[p], r < I, stored as h[p, 0, r] = bf16(v), h[p, 1, r] = bf16(v - that).
// h is the workspace, [T*K, 2, I] bf16.
extern "C" __global__ void
__launch_bounds__(32 * Config::kWarps1, Config::kWarpsPerSm / Config::kWarps1)
    sm90_bf16_moe_decode_gate_up_mma(const uint16_t* __restrict__ x,
                                     const int* __restrict__ topk_ids,
                                     const float* __restrict__ topk_weights,
                                     const uint16_t* __restrict__ w13, uint16_t* __restrict__ h,
                                     int T, int E, int K, int H, int I) {
  // Kernel 2 may be scheduled as soon as SMs free up; it waits for our completion itself.
  asm volatile("griddepcontrol.launch_dependents;");
  if constexpr (Config::kStages > 0) {
    gate_up_ring(x, topk_ids, topk_weights, w13, h, T, E, K, H, I);
    return;
  }
  constexpr int kNT = Config::kNTiles, kC = Config::kChunks;
  extern __shared__ __align__(16) unsigned char smem[];
  const int tw = window_tokens(T, K);
  const int pairs_max = tw * K;
  float* red = reinterpret_cast<float*>(smem);  // [kRedBufs][WARPS][4*kNT][32] team sums
  float* wt = red + Config::kRedBufs * Config::kWarps1 * 4 * kNT * 32;  // [pairs_max]
  float* rbuf = red;  // this unit's reduction buffer (kRedBufs alternate)
  const Routing rt = carve_routing(reinterpret_cast<int*>(wt + pairs_max), E, pairs_max);

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
  const int row_blocks = I / 8;  // I % 8 == 0 (spec)
  const int n_groups = (H + Config::kGroupCols - 1) / Config::kGroupCols;
  const long long total_warps = static_cast<long long>(gridDim.x) * Config::kWarps1;

  for (int t0 = 0; t0 < T; t0 += tw) {
    const int n_tok = min(tw, T - t0);
    const int n_items =
        build_routing<Config::kItemTokens>(rt, topk_ids, topk_weights, wt, t0, n_tok, K, E);
    const long long n_units = static_cast<long long>(n_items) * row_blocks;
    // Team size: at least kTeamMin, doubled while the units leave warps idle.
    int ks = Config::kTeamMin;
    while (ks * 2 <= Config::kWarps1 && n_units * ks * 2 <= total_warps) ks *= 2;
    const int team = warp / ks, kw = warp % ks;
    const long long n_teams = static_cast<long long>(gridDim.x) * (Config::kWarps1 / ks);
    // Units are dealt across CTAs first, so a small batch still spreads over every SM.
    for (long long unit = static_cast<long long>(team) * gridDim.x + blockIdx.x; unit < n_units;
         unit += n_teams) {
      const int item = static_cast<int>(unit / row_blocks);
      const int r0 = static_cast<int>(unit % row_blocks) * 8;
      const int e = rt.item_e[item];
      const int start = rt.item_sc[item] >> 8, count = rt.item_sc[item] & 0xFF;
      const int n_tiles = (count + 7) / 8;
      // Logical row g: gate row r0 + g; logical row g + 8: up row r0 + g.
      const uint16_t* gate = w13 + (static_cast<long long>(e) * 2 * I + r0 + g) * H;
      const uint16_t* up = gate + static_cast<long long>(I) * H;
      const uint16_t* xrow[kNT];
      bool has_tok[kNT];
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) {
        const int slot = nt * 8 + g;
        has_tok[nt] = slot < count;
        const int p = has_tok[nt] ? rt.plist[start + slot] : 0;
        xrow[nt] = x + static_cast<long long>(t0 + p / K) * H;
      }
      float acc[kNT][4];
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
        for (int i = 0; i < 4; ++i) acc[nt][i] = 0.0f;
      }
      for (int kg = kw; kg < n_groups; kg += ks) {
        const int c0 = kg * Config::kGroupCols + 8 * q;
        Chunk lo[kC], hi[kC], b[kNT][kC];
#pragma unroll
        for (int u = 0; u < kC; ++u) {
          const int col = c0 + 32 * u;
          lo[u] = zero_chunk();
          hi[u] = zero_chunk();
          if (col < H) {  // H % 8 == 0: a chunk is wholly inside or outside
            lo[u] = ws::load_global16<kWeightHint>(gate + col);
            hi[u] = ws::load_global16<kWeightHint>(up + col);
          }
        }
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
          for (int u = 0; u < kC; ++u) {
            const int col = c0 + 32 * u;
            b[nt][u] = zero_chunk();
            if (nt < n_tiles && has_tok[nt] && col < H) b[nt][u] = ws::load_global16(xrow[nt] + col);  // x: reused, L1 allowed
          }
        }
        mma_group(acc, lo, hi, b, n_tiles);
      }
      if (ks > 1) {
        // Team reduction in warp order (deterministic); warp kw == 0 of the team stores.
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
          for (int i = 0; i < 4; ++i) rbuf[((warp * kNT + nt) * 4 + i) * 32 + lane] = acc[nt][i];
        }
        team_barrier(1 + team, 32 * ks);
        if (kw == 0) {
          for (int w = warp + 1; w < warp + ks; ++w) {
#pragma unroll
            for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
              for (int i = 0; i < 4; ++i) acc[nt][i] += rbuf[((w * kNT + nt) * 4 + i) * 32 + lane];
            }
          }
        }
        if constexpr (Config::kRedBufs == 1) {
          team_barrier(1 + team, 32 * ks);
        } else {
          // The next unit writes the other buffer; the one after waits at the next unit's
          // barrier, which the leader reaches only after reading this one.
          rbuf = rbuf == red ? red + Config::kWarps1 * 4 * kNT * 32 : red;
        }
      }
      if (kw == 0) store_h(acc, q, count, rt, start, wt, h, t0, K, I, r0, g);
    }
    __syncthreads();  // the routing is rebuilt for the next window
  }
}

// Kernel 2: y[t, c] = bf16(sum over pairs p of t: w2[e_p, c] . (h[p, 0] + h[p, 1])) (weights
// already in h). CTA b owns rows c in [16b, 16b + 16) for every token. mma column 2m is the hi
// part of the item's token m, column 2m + 1 its lo part: one lane's accumulator holds both, and
// at decode (<= 4 tokens per expert) the lo parts ride in columns that were idle.
extern "C" __global__ void __launch_bounds__(Config::kMaxThreads2, 1)
    sm90_bf16_moe_decode_down_mma(const int* __restrict__ topk_ids,
                                  const uint16_t* __restrict__ w2, const uint16_t* h,
                                  uint16_t* __restrict__ y, int T, int E, int K, int H, int I) {
  if constexpr (Config::kStages > 0) {
    down_ring(topk_ids, w2, h, y, T, E, K, H, I);
    return;
  }
  constexpr int kNT = Config::kNTiles, kC = Config::kChunks, kR = Config::kRows2;
  extern __shared__ __align__(16) unsigned char smem[];
  const int tw = window_tokens(T, K);
  const int pairs_max = tw * K;
  const int nwarps = blockDim.x >> 5;
  float* ys = reinterpret_cast<float*>(smem);  // [nwarps][tw][16] per-warp partial y
  const Routing rt = carve_routing(reinterpret_cast<int*>(ys + nwarps * tw * kR), E, pairs_max);

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, g = lane >> 2, q = lane & 3;
  const int row0 = blockIdx.x * kR;
  const bool hi_ok = row0 + kR <= H;  // rows row0+8.. exist (H % 8 == 0: all or none)
  const int n_groups = (I + Config::kGroupCols - 1) / Config::kGroupCols;
  float* my_ys = ys + warp * tw * kR;

  for (int t0 = 0; t0 < T; t0 += tw) {
    const int n_tok = min(tw, T - t0);
    for (int i = tid; i < nwarps * tw * kR; i += blockDim.x) ys[i] = 0.0f;
    const int n_items =
        build_routing<Config::kItemTokens2>(rt, topk_ids, nullptr, nullptr, t0, n_tok, K, E);
    if (Config::kPrefetchBytes > 0 && t0 == 0)
      prefetch_w2_rows(rt, w2, n_items, H, I, row0, hi_ok, tid);
    // h is kernel 1's output: wait for it (a no-op without PDL).
    asm volatile("griddepcontrol.wait;" ::: "memory");

    const long long pair_base = static_cast<long long>(t0) * K;
    const long long n_units = static_cast<long long>(n_items) * n_groups;
    int cur = -1, start = 0, count = 0, n_tiles = 0;
    const uint16_t* wlo = w2;
    const uint16_t* whi = w2;
    const uint16_t* hrow[kNT];
    bool has_tok[kNT];
    float acc[kNT][4];
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
      hrow[nt] = h;
      has_tok[nt] = false;
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[nt][i] = 0.0f;
    }
    auto flush = [&]() { flush_item(acc, q, count, rt, start, K, my_ys, g, hi_ok); };
    for (long long unit = warp; unit < n_units; unit += nwarps) {
      const int item = static_cast<int>(unit / n_groups);
      const int kg = static_cast<int>(unit % n_groups);
      if (item != cur) {
        if (cur >= 0) flush();
        cur = item;
        const int e = rt.item_e[item];
        start = rt.item_sc[item] >> 8;
        count = rt.item_sc[item] & 0xFF;
        n_tiles = (2 * count + 7) / 8;
        wlo = w2 + (static_cast<long long>(e) * H + row0 + g) * I;
        whi = wlo + 8LL * I;
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
          const int slot = nt * 4 + (g >> 1);  // B column g of n-tile nt: (token, hi/lo)
          has_tok[nt] = slot < count;
          const int p = has_tok[nt] ? rt.plist[start + slot] : 0;
          hrow[nt] = h + ((pair_base + p) * 2 + (g & 1)) * I;
        }
      }
      const int c0 = kg * Config::kGroupCols + 8 * q;
      Chunk lo[kC], hi[kC], b[kNT][kC];
#pragma unroll
      for (int u = 0; u < kC; ++u) {
        const int col = c0 + 32 * u;
        lo[u] = zero_chunk();
        hi[u] = zero_chunk();
        if (col < I) {  // I % 8 == 0: a chunk is wholly inside or outside
          lo[u] = ws::load_global16<kWeightHint>(wlo + col);
          if (hi_ok) hi[u] = ws::load_global16<kWeightHint>(whi + col);
        }
      }
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
        for (int u = 0; u < kC; ++u) {
          const int col = c0 + 32 * u;
          b[nt][u] = zero_chunk();
          if (nt < n_tiles && has_tok[nt] && col < I) b[nt][u] = load_h(hrow[nt] + col);
        }
      }
      mma_group(acc, lo, hi, b, n_tiles);
    }
    if (cur >= 0) flush();
    __syncthreads();
    store_y(ys, y, t0, n_tok, tw, H, row0, nwarps, tid);
    __syncthreads();
  }
}

// ---- SOLO (T == 1): one launch, no h round trip between kernels --------------------------------
// A unit (one CTA) is (pair k, slice s of SW columns of I): it computes its slice of
// h = silu(g) * u * weight from 2 x SW rows of w13[e], then adds w2[e][:, slice] . h into an fp32
// y accumulator in the workspace (red.global.add.v4.f32: units of one expert meet only there).
// The last CTA to finish (a counter) rounds the accumulator to y and leaves accumulator and
// counter zero again, so only a launch on a fresh workspace relies on the plan's zeroing. Units
// of one expert are launch neighbours, so they read the rows of w2[e] side by side. The weights
// of distinct experts (T = 1: TOPK distinct) leave HBM once; what the two-kernel path pays at
// batch 1 (the second launch's ramp after the first's tail, h through L2) is gone. The sum order
// of y depends on the atomics' order: y is not bitwise deterministic on this path.
namespace solo {

constexpr int kThreads = 256;  // 2 CTAs per SM at <= 128 registers
constexpr int kBatch = 8;      // phase 1: chunks of each of a warp's two rows in flight per lane
constexpr int kRows = 16;      // phase 2: consecutive rows per lane group (4 v4 reductions)

__device__ __forceinline__ float dot8(const Chunk& w, const Chunk& v) {
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    s = fmaf(bf16_to_float(static_cast<uint16_t>(w.w[i] & 0xFFFFu)),
             bf16_to_float(static_cast<uint16_t>(v.w[i] & 0xFFFFu)), s);
    s = fmaf(bf16_to_float(static_cast<uint16_t>(w.w[i] >> 16)),
             bf16_to_float(static_cast<uint16_t>(v.w[i] >> 16)), s);
  }
  return s;
}

__device__ __forceinline__ void red_add_v4(float* p, float a, float b, float c, float d) {
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(a), "f"(b), "f"(c),
               "f"(d)
               : "memory");
}

}  // namespace solo

// Workspace: acc [H] fp32, then the unit counter (16-byte aligned: H % 8 == 0). Shared memory:
// x [H] bf16, g/u [2 SW] fp32, h [SW] fp32.
extern "C" __global__ void __launch_bounds__(solo::kThreads, 2)
    sm90_bf16_moe_decode_solo(const uint16_t* __restrict__ x, const int* __restrict__ topk_ids,
                              const float* __restrict__ topk_weights,
                              const uint16_t* __restrict__ w13, const uint16_t* __restrict__ w2,
                              float* __restrict__ workspace, uint16_t* __restrict__ y, int E,
                              int K, int H, int I, int SW) {
  extern __shared__ __align__(16) unsigned char smem[];
  uint16_t* xs = reinterpret_cast<uint16_t*>(smem);
  float* gu = reinterpret_cast<float*>(smem + 2 * H);  // H % 8 == 0: 16-byte aligned
  float* hs = gu + 2 * SW;
  float* acc = workspace;
  unsigned* done = reinterpret_cast<unsigned*>(workspace + H);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, nwarps = solo::kThreads / 32;
  const int slices = (I + SW - 1) / SW;
  const int k = blockIdx.x / slices, s = blockIdx.x % slices;
  const int e = topk_ids[k];
  const float wk = topk_weights[k];
  const int c0 = s * SW, cols = min(SW, I - c0);  // cols % 8 == 0
  const int hc = H / 8;                            // 16-byte chunks per row of w13 / of x
  if (static_cast<unsigned>(e) < static_cast<unsigned>(E)) {
    for (int c = tid; c < hc; c += solo::kThreads) {
      const Chunk v = ws::load_global16(x + 8 * c);
      reinterpret_cast<Chunk*>(xs)[c] = v;
    }
    __syncthreads();
    // Phase 1: rows 0..cols-1 are gate rows c0.., cols..2cols-1 the up rows I + c0..; a warp takes
    // two rows at a time, each lane kBatch chunks of each in flight.
    const uint16_t* we = w13 + static_cast<long long>(e) * 2 * I * H;
    const Chunk* xc = reinterpret_cast<const Chunk*>(xs);
    for (int r = 2 * warp; r < 2 * cols; r += 2 * nwarps) {
      const int ra = r < cols ? c0 + r : I + c0 + r - cols;
      const int rb = r + 1 < cols ? c0 + r + 1 : I + c0 + r + 1 - cols;
      const uint16_t* pa = we + static_cast<long long>(ra) * H;
      const uint16_t* pb = we + static_cast<long long>(rb) * H;
      float sa = 0.f, sb = 0.f;
      for (int c = lane; c < hc; c += 32 * solo::kBatch) {
        Chunk a[solo::kBatch], b[solo::kBatch];
#pragma unroll
        for (int i = 0; i < solo::kBatch; ++i) {
          if (c + 32 * i < hc) {
            a[i] = ws::load_global16<kWeightHint>(pa + 8 * (c + 32 * i));
            b[i] = ws::load_global16<kWeightHint>(pb + 8 * (c + 32 * i));
          }
        }
#pragma unroll
        for (int i = 0; i < solo::kBatch; ++i) {
          if (c + 32 * i < hc) {
            const Chunk v = xc[c + 32 * i];
            sa += solo::dot8(a[i], v);
            sb += solo::dot8(b[i], v);
          }
        }
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        sa += __shfl_xor_sync(kFullMask, sa, o);
        sb += __shfl_xor_sync(kFullMask, sb, o);
      }
      if (lane == 0) {
        gu[r] = sa;
        gu[r + 1] = sb;
      }
    }
    __syncthreads();
    for (int j = tid; j < SW; j += solo::kThreads) {
      float h = 0.f;
      if (j < cols) {
        const float g = gu[j], u = gu[cols + j];
        h = g / (1.f + expf(-g)) * u * wk;
      }
      hs[j] = h;
    }
    __syncthreads();
    // Phase 2: lane group of L = SW / 8 lanes (lane q: columns c0 + 8q .. +8 of each row) takes
    // kRows consecutive rows of w2[e]; the group's sums meet by shuffles, its first lane adds them
    // to acc four rows at a time.
    const int L = SW / 8, q = lane % L;
    const bool live = 8 * q < cols;
    float hq[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) hq[i] = hs[8 * q + i];
    const Chunk hz = Chunk{{0u, 0u, 0u, 0u}};
    const uint16_t* w2e = w2 + static_cast<long long>(e) * H * I + c0 + 8 * q;
    const int groups = solo::kThreads / L;
    // The bound is warp-uniform (base), so every lane reaches the shuffles.
    for (int base = 0; base < H; base += groups * solo::kRows) {
      const int r0 = base + (tid / L) * solo::kRows;
      Chunk w[solo::kRows];
#pragma unroll
      for (int i = 0; i < solo::kRows; ++i) {
        w[i] = hz;
        if (live && r0 + i < H)
          w[i] = ws::load_global16<kWeightHint>(w2e + static_cast<long long>(r0 + i) * I);
      }
      float sum[solo::kRows];
#pragma unroll
      for (int i = 0; i < solo::kRows; ++i) {
        float t = 0.f;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          t = fmaf(bf16_to_float(static_cast<uint16_t>(w[i].w[j] & 0xFFFFu)), hq[2 * j], t);
          t = fmaf(bf16_to_float(static_cast<uint16_t>(w[i].w[j] >> 16)), hq[2 * j + 1], t);
        }
        sum[i] = t;
      }
      for (int o = L / 2; o > 0; o >>= 1) {
#pragma unroll
        for (int i = 0; i < solo::kRows; ++i) sum[i] += __shfl_xor_sync(kFullMask, sum[i], o);
      }
      if (q == 0) {
#pragma unroll
        for (int i = 0; i < solo::kRows; i += 4) {
          if (r0 + i < H)
            solo::red_add_v4(acc + r0 + i, sum[i], sum[i + 1], sum[i + 2], sum[i + 3]);
        }
      }
    }
  }
  // The last unit to finish rounds acc to y and leaves acc and the counter zero.
  __threadfence();
  __syncthreads();
  __shared__ unsigned last;
  if (tid == 0) last = atomicAdd(done, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!last) return;
  __threadfence();
  for (int r = 4 * tid; r < H; r += 4 * solo::kThreads) {
    float4 v;
    asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "l"(acc + r)
                 : "memory");
    const unsigned lo = bf16_rne(v.x) | static_cast<unsigned>(bf16_rne(v.y)) << 16;
    const unsigned hi = bf16_rne(v.z) | static_cast<unsigned>(bf16_rne(v.w)) << 16;
    ws::store_global8<false>(y + r, lo, hi);
    *reinterpret_cast<float4*>(acc + r) = make_float4(0.f, 0.f, 0.f, 0.f);
  }
  if (tid == 0) *done = 0u;
}

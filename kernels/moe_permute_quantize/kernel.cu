/* warpsmith:plan
{ "knobs":  { "CHUNK": [64, 32, 128], "THREADS": [256, 128, 512], "CHUNKS": [2, 1, 4],
              "STORE_CS": [0, 1], "STORE_ORDER": [0, 1], "WIDE_K": [4, 2, 1000],
              "WIDE_CHUNKS": [4, 8, 2], "ROW_SPLIT": [4, 1, 2],
              "ROUTE_K": [2, 0, 8], "RANGE_K": [0, 8], "SCALE_GATHER": [1, 0],
              "EARLY": [1, 0], "EARLY_TOKENS": [4, 8, 16, 2], "EARLY_CHUNKS": [4, 2, 8],
              "EARLY_SMEM": [24576, 0, 32768, 49152, 33792], "EARLY_TPW": [0, 2] },
  "launch": [ { "kernel": "moe_permute_route", "when": "K <= ROUTE_K",
                "grid":  [8], "cluster": [8], "block": [1024], "smem": "(35 * E + 64) * 4",
                "args":  ["idx", "slot_row", "row_slot", "offsets", "T", "E", "K", "A",
                          "round_up(T*K + min(E, T*K)*(A-1), A)"] },
              { "kernel": "moe_permute_route_starts", "when": "K > ROUTE_K && K <= RANGE_K",
                "grid":  [8], "cluster": [8], "block": [1024], "smem": "(35 * E + 64) * 4",
                "args":  ["idx", "workspace", "row_slot", "offsets", "T", "E", "K", "A",
                          "round_up(T*K + min(E, T*K)*(A-1), A)"] },
              { "kernel": "moe_permute_rank_ranges", "when": "K > ROUTE_K && K <= RANGE_K",
                "pdl": true, "grid":  ["8 * 32"], "block": [32], "smem": "0",
                "args":  ["idx", "workspace", "slot_row", "row_slot", "T", "E", "K"] },
              { "kernel": "moe_permute_chunk_counts", "when": "K > max(ROUTE_K, RANGE_K)",
                "grid":  ["ceil_div(T, CHUNK)"], "block": [256], "smem": "0",
                "args":  ["idx", "workspace", "T", "E", "K"] },
              { "kernel": "moe_permute_scan", "when": "K > max(ROUTE_K, RANGE_K)", "pdl": true,
                "grid":  ["ceil_div(E, 32)"], "block": [1024], "smem": "0",
                "args":  ["workspace", "T", "E"] },
              { "kernel": "moe_permute_rank", "when": "K > max(ROUTE_K, RANGE_K)", "pdl": true,
                "grid":  ["ceil_div(T, CHUNK)"], "block": [32], "smem": "0",
                "args":  ["idx", "workspace", "slot_row", "row_slot", "offsets", "T", "E", "K", "A",
                          "round_up(T*K + min(E, T*K)*(A-1), A)"] },
              { "kernel": "sm90_bf16_moe_permute_mxfp8_quantize_early", "pdl": true,
                "when": "EARLY != 0 && EARLY_TOKENS * (H + round_up(H / 32, 16)) <= 232448",
                "grid":  ["ceil_div(T, EARLY_TOKENS * max(1, min(EARLY_SMEM / (EARLY_TOKENS * (H + round_up(H / 32, 16))), EARLY_TPW + (EARLY_TPW == 0) * 4096)))"],
                "block": ["32 * EARLY_TOKENS"], "smem": "EARLY_TOKENS * max(1, min(EARLY_SMEM / (EARLY_TOKENS * (H + round_up(H / 32, 16))), EARLY_TPW + (EARLY_TPW == 0) * 4096)) * (H + round_up(H / 32, 16))",
                "args":  ["x", "slot_row", "row_slot", "q", "scales", "T", "H", "K",
                          "round_up(T*K + min(E, T*K)*(A-1), A)", "max(1, min(EARLY_SMEM / (EARLY_TOKENS * (H + round_up(H / 32, 16))), EARLY_TPW + (EARLY_TPW == 0) * 4096))"] },
              { "kernel": "sm90_bf16_moe_permute_mxfp8_quantize", "pdl": true,
                "when": "(EARLY == 0 || EARLY_TOKENS * (H + round_up(H / 32, 16)) > 232448) && K < WIDE_K",
                "grid":  ["ceil_div(T * ROW_SPLIT + ceil_div(round_up(T*K + min(E, T*K)*(A-1), A), 32), THREADS / 32)"],
                "block": ["THREADS"], "smem": "0",
                "args":  ["x", "slot_row", "row_slot", "q", "scales", "T", "H", "K",
                          "round_up(T*K + min(E, T*K)*(A-1), A)"] },
              { "kernel": "sm90_bf16_moe_permute_mxfp8_quantize_wide", "pdl": true,
                "when": "(EARLY == 0 || EARLY_TOKENS * (H + round_up(H / 32, 16)) > 232448) && K >= WIDE_K",
                "grid":  ["ceil_div(T * ROW_SPLIT + ceil_div(round_up(T*K + min(E, T*K)*(A-1), A), 32), THREADS / 32)"],
                "block": ["THREADS"], "smem": "0",
                "args":  ["x", "slot_row", "row_slot", "q", "scales", "T", "H", "K",
                          "round_up(T*K + min(E, T*K)*(A-1), A)"] } ],
  "workspace": { "bytes": "(K > ROUTE_K && K <= RANGE_K) * 256 * E * 4 + (K > max(ROUTE_K, RANGE_K)) * (ceil_div(T, CHUNK) + 1) * E * 4",
                 "zero": false } }
*/
// MoE dispatch + rowwise MXFP8, hand-tuned. x [T,H] bf16, idx [T,K] -> q [MP,H] E4M3,
// scales [MP,H/32], row_slot [MP], slot_row [T,K], offsets [E].
//
// Design: the routing takes one launch (K <= ROUTE_K) or three; the bytes move in the last.
//  0. route (K <= ROUTE_K, default 2): a cluster of 8 CTAs does steps 1-3 at once, the CTAs'
//     counts meeting in distributed shared memory (below, at the kernel). It saved 5-6 us at
//     K = 1, 2 but lost 3-9% at K = 8, whose 8x more slots rank on 8 SMs (H200, 2026-12-03).
//  1. chunk_counts: per chunk of CHUNK tokens, an expert histogram (shared-memory atomics; counts
//     are order-free) -> workspace[chunk][e].
//  2. scan (one CTA per 32 experts): per expert a scan over the chunks, every load in flight at
//     once -> each (chunk, expert)'s first row relative to the expert's, and the expert's total.
//  3. rank (one warp per chunk): each warp scans the E padded totals itself (the experts' first
//     rows; CTA 0 writes offsets, the CTAs share the row_slot = -1 of padding and filler rows),
//     then the chunk's slots in ascending order, 32 per round; __match_any_sync groups a round's
//     lanes by expert, a lane's row is the expert's running row plus its rank among the earlier
//     lanes of its group. Stable, deterministic, no global atomics, each row_slot written once.
//     (The one-CTA scan this replaced took 8-29 us on the bench shapes, ncu 2026-12-03.)
//  4. quantize: warp items. Zero items first: rows 32b .. 32b+31, the warp zeroes those whose
//     row_slot is -1, the filler past the last group (whole row blocks, the heaviest items)
//     first of all, so they do not trail the grid. Then token items: token t's row (ROW_SPLIT
//     items share it, a range of tiles each) is read ONCE (16-byte loads, the next tile's loads
//     issued before the current tile is quantized), quantized exactly as
//     kernels/mxfp8_quantize_rowwise (lane quads per block), and each 8-byte q word and scale is
//     stored to all K destination rows (256 contiguous bytes per warp store).
//  Launches after the first are pdl: each starts while its predecessor runs and waits
//  (griddepcontrol.wait) before reading its results; the quantize issues its first x loads
//  before that wait.
// Why it should be fast: x is read once although every token goes to K rows (a gather per output
// row would read x K times: at K = 8 that is ~2x the floor's bytes); stores are full lines;
// nothing waits on atomics. sm_100a: rceil from cvt.rp.satfinite.ue8m0x2.f32.
// Knobs: CHUNK (tokens per routing chunk: ranking rounds vs. scan length), THREADS (quantize CTA
// size), CHUNKS (16-byte loads per lane per tile, double-buffered), STORE_CS (st.global.cs),
// STORE_ORDER (0: a tile's stores go chunk by chunk, each to the K rows; 1: row by row, so each
// destination row takes its CHUNKS x 256 contiguous bytes back to back: the writes, K times the
// reads, land on K scattered rows at once, and DRAM pages favour longer runs per row).
// Those two apply below WIDE_K choices per token; from WIDE_K on the plan runs the _wide kernel:
// row by row with WIDE_CHUNKS loads per lane (the default at K = 8 since 2026-12-02).
// ROW_SPLIT: warp items per token row (finer items, a shorter tail of the grid's last wave).
// ROUTE_K: the largest K routed by the one-launch cluster kernel (0: never). RANGE_K: above
// ROUTE_K and up to RANGE_K, two launches: the cluster's steps 1-4, then 256 one-warp CTAs rank
// (default 0, never run). SCALE_GATHER (0: each quad leader stores its block's scale byte, so
// every warp store of a chunk asks L2 for a sector to write 8 bytes of it; 1: a tile's 8 x
// chunks scale bytes are gathered by shuffles, lane l holding block l, and leave as one warp
// store of 32 contiguous bytes per destination row: a whole sector where H % 1024 == 0, as at
// every bench shape. At K = 8 that is 33 sector writes per row and tile instead of 36; the L2's
// fabric, which counts requests rather than bytes, limits these kernels: kernels/README.md).
// SCALE_GATHER 1 is the default since session 32: 1.018x geomean at rceil (0.988-1.044x per
// shape), `ok` at every test and hidden shape (bench/results/sweeps-h200-2026-12-05-session32.json).
// Measured (H200, 2026-12-03, bench/results/sweeps-h200-2026-12-03-session18.json): the old
// one-CTA scan -> these defaults 1.21x (E256 K8 H7168), 1.11x (E128 K8), 1.23x (E8 K2), 1.22x
// (E16 K1), products of same-call ratios; of copy-bandwidth SOL 0.82 / 0.74 / 0.79 / 0.82 (was
// 0.68 / 0.66 / 0.64 / 0.68). At K = 8 the writes fan out to scattered rows: bench/profile/
// bandwidth_mix.cu moves a 1:8 fan-out at 0.85 of memcpy's rate on the H200.
// EARLY (1, the default since session 44; the plan falls back to the kernels above where
// EARLY_TOKENS slots of H + round_up(H/32, 16) bytes exceed a CTA's shared memory): the routing
// is latency-bound work on a few SMs (ncu, H100, session 44: the K = 2 cluster launch 9.4-9.9 us
// beside a 94 us quantize; at K = 8 the three launches 3.6 + 6.3-6.8 + 9.5-11 us), and the
// quantize launch could only prefetch one tile per warp before its griddepcontrol.wait. The
// _early kernel gives each warp a whole token: it reads and quantizes the row into shared memory
// before the wait, so the CTAs resident while the routing runs (36 tokens per SM: 4-warp CTAs at
// 56 registers; a quarter of the tokens at the bench shapes) move their reads into that time; after
// the wait each slot is copied to the K rows with 16-byte stores, and the zero items follow.
// H100, session 44, three sweeps (`sweeps-h100-2026-12-06-session44.json`), EARLY_TOKENS=4
// STORE_CS=0 over the old defaults: 1.035-1.042x geomean, 1.06-1.10x at K = 1 and 2, 1.01-1.02x
// at K = 8 (where x is a fifth of the bytes), `ok` at every test and hidden shape in both
// roundings; EARLY_TOKENS 2 / 8 and EARLY_CHUNKS 2 within the sweeps' spread of it. Ranking by
// ballots over the expert's bits instead of __match_any_sync: 0.985-1.005x, removed.
// EARLY_RANK (no rank launch at K = 8: after the scan each early warp ranked its own token's
// slots, and the zero items found the padding from the experts' rows): 1.013x / 1.001x, then
// 0.994x / 1.003x (rceil / floor) geomean at K = 8 on an H100 (s44c9-c10, `ok` with the hidden
// shapes): the rank launch's 9.5-11 us under ncu is mostly hidden in the stream; removed, git
// e3eddf5 has it.
// GRID_ROUTE_K (the one-launch routing over a grid of 32-128 CTAs instead of a cluster of 8,
// their counts meeting in global memory behind a grid barrier): with 64 CTAs 1.028x / 1.015x
// (floor / rceil) in one H100 sweep, 0.989x / 1.010x over two more (s44c12-c13; 128 CTAs
// 0.959-0.971x; `ok` with the hidden shapes): no gain past the sweeps' spread; removed, git
// 16c3a9f has it. Three ways of shortening the routing (EARLY_RANK, GRID_ROUTE_K, MATCH) left
// the time where it was once EARLY reads x during it. ncu with these defaults (s44c14): the early
// kernel alone takes what the old quantize did (94 us at E8 K2, 126 at E128, 525 at E256) and
// reaches 0.94-0.95 of the K <= 2 floors; in the stream 6-8 us of the routing's 9-10 stay exposed.
// Without pdl on the plan's launches (a diagnostic knob, s44c15) the plan ran 0.967x: the timed
// graphs keep the programmatic overlap. EARLY_SMEM (24576, the default since session 45): each
// early warp holds as many tokens as that budget of slots per CTA allows (2 at H2048, 1 at the
// longer bench rows), at the _early kernel below.
// The H100 choices held on an H200 (s49c1, one sweep per rounding, controls within 0.8%,
// sweeps-h200-2026-12-06-session49.json): against the defaults, the old quantize (EARLY=0
// STORE_CS=1) 0.950x / 0.953x geomean (rceil / floor; 0.89-0.92x at E16 K1 and E8 K2),
// EARLY_SMEM=0 0.976x / 0.995x, EARLY_SMEM=33792 EARLY_TPW=2 0.961x / 0.966x, EARLY_CHUNKS=2
// 0.963x / 0.986x; `ok` everywhere.
//
// SASS claims (scripts/check_sass.py): the packed e4m3 conversion on both; sm_100a's rceil scale
//  is the ue8m0 conversion.
// warpsmith:sass sm_100a: F2FP.SATFINITE.E4M3
// warpsmith:sass sm_100a rounding=rceil: F2FP.SATFINITE.E8
// warpsmith:sass sm_90a: F2FP.SATFINITE.E4M3

#include "ws/cluster.cuh"
#include "ws/mx_block.cuh"
#include "ws/ptx_sm90.cuh"

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR)
#error "compile with the problem's parameters: -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1"
#endif
#ifndef CHUNK
#define CHUNK 64
#endif
#ifndef THREADS
#define THREADS 256
#endif
#ifndef CHUNKS
#define CHUNKS 2
#endif
#ifndef STORE_CS
#define STORE_CS 0  // plain stores: 1.01-1.02x .cs in the _early kernel (H100, session 44)
#endif
#ifndef STORE_ORDER
#define STORE_ORDER 0
#endif
#ifndef WIDE_K
#define WIDE_K 4  // K from which the plan runs the _wide kernel (row by row, WIDE_CHUNKS)
#endif
#ifndef WIDE_CHUNKS
#define WIDE_CHUNKS 4
#endif
#ifndef ROW_SPLIT
#define ROW_SPLIT 4
#endif
#ifndef SCALE_GATHER
#define SCALE_GATHER 1
#endif
#ifndef EARLY
#define EARLY 1  // 1: the _early kernel (a token per warp, quantized before the routing's wait)
#endif
#ifndef EARLY_TOKENS
#define EARLY_TOKENS 4  // EARLY: tokens (warps) per CTA
#endif
#ifndef EARLY_CHUNKS
#define EARLY_CHUNKS 4  // EARLY: 16-byte loads per lane in flight (double-buffered)
#endif
#ifndef EARLY_TPW
#define EARLY_TPW 0  // EARLY: a cap on tokens per warp (0: none), read by the plan only
#endif
#ifndef EARLY_SMEM
#define EARLY_SMEM 24576  // EARLY: bytes of token slots per CTA (0: one token per warp)
#endif

namespace {

struct Config {
  static constexpr int kChunk = CHUNK;          // tokens per routing chunk
  static constexpr int kMaxExperts = 1024;      // the spec's bounds
  static constexpr int kMaxK = 32;
  static constexpr int kThreads = THREADS;
  static constexpr int kWarps = kThreads / 32;
  static constexpr int kChunks = CHUNKS;        // 16-byte loads per lane per tile
  static constexpr int kTileChunks = 32 * kChunks;
  static constexpr bool kFloor = WS_ROUNDING == WS_ROUNDING_FLOOR;
  static constexpr bool kStoreCs = STORE_CS != 0;
  static constexpr bool kRowByRow = STORE_ORDER != 0;
  static constexpr int kRowSplit = ROW_SPLIT;   // warp items per token row
  static constexpr bool kScaleGather = SCALE_GATHER != 0;
};
static_assert(Config::kThreads % 32 == 0 && Config::kThreads <= 1024, "whole warps");
static_assert(Config::kChunk * Config::kMaxK * 4 <= 32 * 1024, "rank's shared memory");

using ws::Chunk;

__device__ __forceinline__ void store_zero16(unsigned char* p) {
  asm volatile("st.global.v4.u32 [%0], {%1, %1, %1, %1};" ::"l"(p), "r"(0u) : "memory");
}

// SCALE_GATHER: a tile's scales, chunk u's lane quad q holding block 8u + q, regathered so that
// in round r lane l holds block 32r + l (from chunk 4r + l/8, lane 4(l%8)). Every lane calls it.
template <int kChunks>
__device__ __forceinline__ void gather_tile_scales(const unsigned (&sc)[kChunks], int lane,
                                                   unsigned (&out)[(kChunks + 3) / 4]) {
#pragma unroll
  for (int r = 0; r < (kChunks + 3) / 4; ++r) {
    unsigned v = 0;
#pragma unroll
    for (int u = 4 * r; u < 4 * r + 4 && u < kChunks; ++u) {
      const unsigned w = __shfl_sync(0xFFFFFFFFu, sc[u], 4 * (lane & 7));
      if ((lane >> 3) == u - 4 * r) v = w;
    }
    out[r] = v;
  }
}

// SCALE_GATHER: tile `tile`'s gathered scales into one destination row's scale row srow (of
// row_blocks bytes): a byte per lane, 32 contiguous bytes per round.
template <int kChunks>
__device__ __forceinline__ void store_tile_scales(unsigned char* srow, int tile, int row_blocks,
                                                  int lane,
                                                  const unsigned (&gathered)[(kChunks + 3) / 4]) {
#pragma unroll
  for (int r = 0; r < (kChunks + 3) / 4; ++r) {
    const int b = tile * 8 * kChunks + 32 * r + lane;
    if (32 * r + lane < 8 * kChunks && b < row_blocks) {
      srow[b] = static_cast<unsigned char>(gathered[r]);
    }
  }
}

}  // namespace

// ws (chunks,E): slots of each chunk routed to each expert.
extern "C" __global__ void moe_permute_chunk_counts(const int* __restrict__ idx,
                                                    int* __restrict__ ws, int T, int E, int K) {
  ws::griddep_launch_dependents();
  __shared__ int hist[Config::kMaxExperts];
  for (int e = threadIdx.x; e < E; e += blockDim.x) hist[e] = 0;
  __syncthreads();
  const long long first = static_cast<long long>(blockIdx.x) * Config::kChunk * K;
  const long long last =
      min(static_cast<long long>(blockIdx.x + 1) * Config::kChunk, static_cast<long long>(T)) * K;
  for (long long s = first + threadIdx.x; s < last; s += blockDim.x) atomicAdd(&hist[idx[s]], 1);
  __syncthreads();
  for (int e = threadIdx.x; e < E; e += blockDim.x) {
    ws[static_cast<long long>(blockIdx.x) * E + e] = hist[e];
  }
}

// Per expert, a scan over the chunks: ws (chunks,E) counts -> each (chunk, expert)'s first row
// relative to the expert's first row, and the expert's slot total into ws[chunks][e]. A CTA
// serves 32 experts (lane = expert, so each chunk's read is one coalesced run), its 32 warps
// a range of chunks each; the ranges' sums meet in shared memory. Every load of a range is
// independent (batches of 8 in flight), so the latency is two round trips however long T is.
extern "C" __global__ void __launch_bounds__(1024)
    moe_permute_scan(int* __restrict__ ws, int T, int E) {
  __shared__ int part[32][33];  // (warp, lane) range sums, padded against bank conflicts
  ws::griddep_launch_dependents();
  ws::griddep_wait();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int e = blockIdx.x * 32 + lane;
  const int chunks = (T + Config::kChunk - 1) / Config::kChunk;
  const int per = (chunks + 31) / 32;
  const int c0 = min(warp * per, chunks), c1 = min(c0 + per, chunks);
  int* col = ws + e;
  int sum = 0;
  if (e < E) {
    for (int c = c0; c < c1; c += 8) {
      int v[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) v[u] = c + u < c1 ? col[static_cast<long long>(c + u) * E] : 0;
#pragma unroll
      for (int u = 0; u < 8; ++u) sum += v[u];
    }
  }
  part[warp][lane] = sum;
  __syncthreads();
  int before = 0, total = 0;  // this expert's slots in the ranges before this warp's; in all
#pragma unroll 8
  for (int w = 0; w < 32; ++w) {
    const int v = part[w][lane];
    total += v;
    before += w < warp ? v : 0;
  }
  if (e >= E) return;
  int row = before;
  for (int c = c0; c < c1; c += 8) {
    int v[8];
#pragma unroll
    for (int u = 0; u < 8; ++u) v[u] = c + u < c1 ? col[static_cast<long long>(c + u) * E] : 0;
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      if (c + u < c1) col[static_cast<long long>(c + u) * E] = row;
      row += v[u];
    }
  }
  if (warp == 0) col[static_cast<long long>(chunks) * E] = total;
}

// One warp per chunk: slot rows in ascending slot order within each expert. Each warp first
// scans the experts' padded totals (ws[chunks][.]) into their first rows, so the routing needs
// no single-CTA pass: CTA b writes the offsets (b = 0), the padding rows' row_slot = -1 of
// experts e = b (mod grid) and a share of the filler rows past the last group.
extern "C" __global__ void __launch_bounds__(32)
    moe_permute_rank(const int* __restrict__ idx, const int* __restrict__ ws,
                     int* __restrict__ slot_row, int* __restrict__ row_slot,
                     int* __restrict__ offsets, int T, int E, int K, int A, int MP) {
  __shared__ int next_row[Config::kMaxExperts];              // (E)
  __shared__ int sidx[Config::kChunk * Config::kMaxK];       // (CHUNK*K) the chunk's experts
  ws::griddep_launch_dependents();
  ws::griddep_wait();
  const int lane = threadIdx.x;
  const int chunks = (T + Config::kChunk - 1) / Config::kChunk;
  const int* totals = ws + static_cast<long long>(chunks) * E;
  const long long first = static_cast<long long>(blockIdx.x) * Config::kChunk * K;
  const int n = static_cast<int>(
      min(static_cast<long long>(blockIdx.x + 1) * Config::kChunk, static_cast<long long>(T)) * K -
      first);
  for (int e = lane; e < E; e += 32) next_row[e] = totals[e];
  for (int i = lane; i < n; i += 32) sidx[i] = idx[first + i];
  __syncwarp();
  // Exclusive scan of the padded totals, 32 experts per round: next_row[e] = expert e's first row.
  int carry = 0;
  for (int e0 = 0; e0 < E; e0 += 32) {
    const int e = e0 + lane;
    const int total = e < E ? next_row[e] : 0;
    const int padded = (total + A - 1) / A * A;
    int incl = padded;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int up = __shfl_up_sync(0xFFFFFFFFu, incl, d);
      if (lane >= d) incl += up;
    }
    const int start = carry + incl - padded;
    if (e < E) {
      next_row[e] = start;
      if (blockIdx.x == 0) offsets[e] = start + padded;
      if (e % gridDim.x == blockIdx.x) {
        for (int r = start + total; r < start + padded; ++r) row_slot[r] = -1;  // group padding
      }
    }
    carry += __shfl_sync(0xFFFFFFFFu, incl, 31);
  }
  __syncwarp();
  // carry: the end of the last group; the rows from there to MP are filler.
  for (long long r = carry + (static_cast<long long>(blockIdx.x) * 32 + lane); r < MP;
       r += static_cast<long long>(gridDim.x) * 32) {
    row_slot[r] = -1;
  }
  for (int e = lane; e < E; e += 32) {
    next_row[e] += ws[static_cast<long long>(blockIdx.x) * E + e];
  }
  __syncwarp();
  const unsigned lanes_below = (1u << lane) - 1u;
  for (int i0 = 0; i0 < n; i0 += 32) {
    const int i = i0 + lane;
    const int e = i < n ? sidx[i] : -1;  // -1: a lane past the chunk, in a group of its own kind
    const unsigned group = __match_any_sync(0xFFFFFFFFu, e);
    const int base = e >= 0 ? next_row[e] : 0;
    __syncwarp();
    if (e >= 0) {
      const int row = base + __popc(group & lanes_below);
      slot_row[first + i] = row;
      row_slot[row] = static_cast<int>(first + i);
      if (lane == 31 - __clz(group)) next_row[e] = base + __popc(group);  // the group's last lane
    }
    __syncwarp();
  }
}

// The experts of slots s0 + 32u + lane, u < 8 (eight rounds' loads in flight at once); -1 past end.
__device__ __forceinline__ void load_experts8(const int* __restrict__ idx, long long s0,
                                              long long end, int lane, int (&e)[8]) {
#pragma unroll
  for (int u = 0; u < 8; ++u) {
    const long long s = s0 + u * 32 + lane;
    e[u] = s < end ? idx[s] : -1;
  }
}

// Warp `warp` of cluster CTA `rank` (of `ctas`) owns slots [w0, w1): CTA r owns
// [r S / n, (r+1) S / n) of the S = T K slots, warp w a contiguous 1/32 of those.
__device__ __forceinline__ void route_range(long long slots, unsigned rank, unsigned ctas, int warp,
                                            long long& w0, long long& w1) {
  const long long lo = slots * rank / ctas, hi = slots * (rank + 1) / ctas;
  w0 = lo + (hi - lo) * warp / 32;
  w1 = lo + (hi - lo) * (warp + 1) / 32;
}

// Steps 1-4 of the cluster routing (a cluster of n = 8 CTAs of 1024 threads, the slots split
// as route_range says):
//  1. each warp counts its slots per expert (shared-memory atomics) -> wh[w][e];
//  2. per expert, wh turns into each warp's prefix within the CTA; ch[e] = the CTA's count;
//  3. over distributed shared memory, the counts of the lower-ranked CTAs (cp[e]) and the total;
//  4. a CTA-wide scan of the padded totals gives each expert's first row (every CTA computes it;
//     CTA 0 writes offsets, CTA e mod n the padding rows' row_slot = -1, all CTAs the filler).
// After it, warp w's slots of expert e start at row base[e] + wh[w][e].
// Shared memory: wh (32 E) + ch, cp, base (E each) + 33 ints.
__device__ __forceinline__ void route_scan(const int* __restrict__ idx, int* __restrict__ row_slot,
                                           int* __restrict__ offsets, int T, int E, int K, int A,
                                           int MP, int* smem, long long& w0, long long& w1) {
  int* wh = smem;              // (32, E)
  int* ch = wh + 32 * E;       // (E) this CTA's count; read by the cluster
  int* cp = ch + E;            // (E) the counts of the lower-ranked CTAs
  int* base = cp + E;          // (E) the expert's first row, then this CTA's first row in it
  int* wsum = base + E;        // (32) the block scan's warp totals, then the warps' prefixes
  int* end_rows = wsum + 32;   // (1) the end of the last group
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const unsigned rank = ws::cluster_rank(), ctas = gridDim.x;
  route_range(static_cast<long long>(T) * K, rank, ctas, warp, w0, w1);
  for (int i = tid; i < 32 * E; i += 1024) wh[i] = 0;
  __syncthreads();
  int* mine = wh + warp * E;
  for (long long s0 = w0; s0 < w1; s0 += 8 * 32) {
    int e[8];
    load_experts8(idx, s0, w1, lane, e);
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      if (e[u] >= 0) atomicAdd(&mine[e[u]], 1);
    }
  }
  __syncthreads();
  for (int e = tid; e < E; e += 1024) {
    int run = 0;
    for (int w = 0; w < 32; ++w) {
      const int c = wh[w * E + e];
      wh[w * E + e] = run;
      run += c;
    }
    ch[e] = run;
  }
  ws::cluster_sync();  // every CTA's ch is written
  int total = 0;       // expert tid's slots in the whole cluster (tid < E)
  if (tid < E) {
    int below = 0;
    for (unsigned r = 0; r < ctas; ++r) {
      const int c = r == rank ? ch[tid] : ws::cluster_load_s32(ch + tid, r);
      total += c;
      below += r < rank ? c : 0;
    }
    cp[tid] = below;
  }
  ws::cluster_sync();  // no CTA exits (or reuses ch) while another reads its ch
  // Exclusive scan of the padded totals over the experts, one expert per thread.
  const int padded = tid < E ? (total + A - 1) / A * A : 0;
  int incl = padded;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const int up = __shfl_up_sync(0xFFFFFFFFu, incl, d);
    if (lane >= d) incl += up;
  }
  if (lane == 31) wsum[warp] = incl;
  __syncthreads();
  if (warp == 0) {
    const int v = wsum[lane];
    int x = v;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int up = __shfl_up_sync(0xFFFFFFFFu, x, d);
      if (lane >= d) x += up;
    }
    wsum[lane] = x - v;  // the warps before this one
  }
  __syncthreads();
  const int start = wsum[warp] + incl - padded;
  if (tid < E) {
    if (rank == 0) offsets[tid] = start + padded;
    if (static_cast<unsigned>(tid) % ctas == rank) {
      for (int r = start + total; r < start + padded; ++r) row_slot[r] = -1;  // group padding
    }
    base[tid] = start + cp[tid];
  }
  if (tid == 1023) *end_rows = start + padded;  // thread 1023 ends the scan
  __syncthreads();
  for (long long r = *end_rows + static_cast<long long>(rank) * 1024 + tid; r < MP;
       r += static_cast<long long>(ctas) * 1024) {
    row_slot[r] = -1;  // filler
  }
}

// Step 5: one warp ranks slots [w0, w1) in order, 32 per round: a lane's row is its expert's
// running row (base[e] + run[e] with kBase, else run[e]; run is the warp's own, updated) plus its
// rank among the round's earlier lanes of the same expert.
template <bool kBase>
__device__ __forceinline__ void rank_slots(const int* __restrict__ idx, long long w0, long long w1,
                                           const int* base, int* run, int* __restrict__ slot_row,
                                           int* __restrict__ row_slot, int lane) {
  const unsigned lanes_below = (1u << lane) - 1u;
  for (long long s8 = w0; s8 < w1; s8 += 8 * 32) {
    int es[8];
    load_experts8(idx, s8, w1, lane, es);
#pragma unroll
    for (int u = 0; u < 8; ++u) {
      const long long s = s8 + u * 32 + lane;
      const int e = es[u];  // -1: a lane past the range, in a group of its own kind
      const unsigned group = __match_any_sync(0xFFFFFFFFu, e);
      const int r0 = e >= 0 ? (kBase ? base[e] : 0) + run[e] : 0;
      __syncwarp();
      if (e >= 0) {
        const int row = r0 + __popc(group & lanes_below);
        slot_row[s] = row;
        row_slot[row] = static_cast<int>(s);
        if (lane == 31 - __clz(group)) run[e] += __popc(group);  // the group's last lane
      }
      __syncwarp();
    }
  }
}

// K <= ROUTE_K: the whole routing in one launch (route_scan, then each warp ranks its slots).
// Slots go to rows in slot order within each expert, the same rows as the three launches give.
extern "C" __global__ void __launch_bounds__(1024)
    moe_permute_route(const int* __restrict__ idx, int* __restrict__ slot_row,
                      int* __restrict__ row_slot, int* __restrict__ offsets, int T, int E, int K,
                      int A, int MP) {
  extern __shared__ int smem[];
  ws::griddep_launch_dependents();
  long long w0, w1;
  route_scan(idx, row_slot, offsets, T, E, K, A, MP, smem, w0, w1);
  const int warp = threadIdx.x >> 5;
  rank_slots<true>(idx, w0, w1, smem + 32 * E + 2 * E, smem + warp * E, slot_row, row_slot,
                   threadIdx.x & 31);
}

// ROUTE_K < K <= RANGE_K: route_scan, then each warp's first rows (base + its prefix) go to
// workspace row 32 r + w, and moe_permute_rank_ranges ranks the 256 ranges on 256 CTAs
// (ranking on the cluster's 8 SMs alone lost 2-8% at K = 8, H200 2026-12-03).
extern "C" __global__ void __launch_bounds__(1024)
    moe_permute_route_starts(const int* __restrict__ idx, int* __restrict__ ws,
                             int* __restrict__ row_slot, int* __restrict__ offsets, int T, int E,
                             int K, int A, int MP) {
  extern __shared__ int smem[];
  ws::griddep_launch_dependents();
  long long w0, w1;
  route_scan(idx, row_slot, offsets, T, E, K, A, MP, smem, w0, w1);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int* base = smem + 32 * E + 2 * E;
  const int* mine = smem + warp * E;
  int* out = ws + static_cast<long long>(ws::cluster_rank() * 32 + warp) * E;
  for (int e = lane; e < E; e += 32) out[e] = base[e] + mine[e];
}

// One warp per range of moe_permute_route_starts (grid: its 8 CTAs x 32 warps, the same split).
extern "C" __global__ void __launch_bounds__(32)
    moe_permute_rank_ranges(const int* __restrict__ idx, const int* __restrict__ ws,
                            int* __restrict__ slot_row, int* __restrict__ row_slot, int T, int E,
                            int K) {
  __shared__ int next_row[Config::kMaxExperts];  // (E)
  ws::griddep_launch_dependents();
  ws::griddep_wait();
  const int lane = threadIdx.x;
  long long w0, w1;
  route_range(static_cast<long long>(T) * K, blockIdx.x / 32, gridDim.x / 32, blockIdx.x % 32, w0,
              w1);
  const int* row = ws + static_cast<long long>(blockIdx.x) * E;
  for (int e = lane; e < E; e += 32) next_row[e] = row[e];
  __syncwarp();
  rank_slots<false>(idx, w0, w1, nullptr, next_row, slot_row, row_slot, lane);
}

namespace {

// Zero item: the warp zeroes the rows r0 .. r0+31 whose row_slot is -1 (padding and filler).
__device__ __forceinline__ void zero_rows(const int* __restrict__ row_slot,
                                          unsigned char* __restrict__ q,
                                          unsigned char* __restrict__ scales, int H, int MP,
                                          long long r0, int lane) {
  const int row_blocks = H / 32;
  const bool pad = r0 + lane < MP && row_slot[r0 + lane] < 0;
  unsigned todo = __ballot_sync(0xFFFFFFFFu, pad);
  while (todo != 0) {
    const int j = __ffs(todo) - 1;
    todo &= todo - 1;
    const long long row = r0 + j;
    unsigned char* qr = q + row * H;
    for (int c = lane; c < H / 16; c += 32) store_zero16(qr + c * 16);  // H % 32 == 0
    for (int b = lane; b < row_blocks; b += 32) scales[row * row_blocks + b] = 0;
  }
}

// x (T,H) bf16; slot_row (T,K), row_slot (MP); q (MP,H) e4m3, scales (MP,H/32) e8m0.
// Warp items: t < T quantizes token t into its K rows; T + b zeroes the -1 rows of 32b..32b+31.
// kChunks 16-byte loads per lane per tile; kRowByRow: each destination row's bytes of a tile
// back to back (STORE_ORDER).
template <int kChunks, bool kRowByRow>
__device__ __forceinline__ void permute_quantize(const unsigned short* __restrict__ x,
                                                 const int* __restrict__ slot_row,
                                                 const int* __restrict__ row_slot,
                                                 unsigned char* __restrict__ q,
                                                 unsigned char* __restrict__ scales, int T, int H,
                                                 int K, int MP) {
  constexpr int kTileChunks = 32 * kChunks;
  const int lane = threadIdx.x & 31;
  const long long item = static_cast<long long>(blockIdx.x) * Config::kWarps + (threadIdx.x >> 5);
  const int row_chunks = H / 8;      // multiple of 4
  const int row_blocks = H / 32;
  const long long zero_items = (MP + 31) / 32;
  if (item < zero_items) {
    // Zero items first, the last row blocks (the filler past the last group: every row) first,
    // so the heaviest items start in the first wave instead of trailing the grid.
    ws::griddep_wait();
    zero_rows(row_slot, q, scales, H, MP, (zero_items - 1 - item) * 32, lane);
    return;
  }
  // Token item: part `part` (of kRowSplit) of token t's row, its tiles [tile0, tile1).
  const long long t = (item - zero_items) / Config::kRowSplit;
  if (t >= T) return;  // the grid's last CTA may run past the items
  const int part = static_cast<int>((item - zero_items) % Config::kRowSplit);
  const Chunk* xr = reinterpret_cast<const Chunk*>(x + t * H);
  const int tiles = (row_chunks + kTileChunks - 1) / kTileChunks;
  const int tile0 = tiles * part / Config::kRowSplit;
  const int tile1 = tiles * (part + 1) / Config::kRowSplit;
  if (tile0 == tile1) return;
  // x does not depend on the routing: the first tile's loads go out before the wait (pdl).
  Chunk next[kChunks];
#pragma unroll
  for (int u = 0; u < kChunks; ++u) {
    const int ci = tile0 * kTileChunks + u * 32 + lane;
    next[u] = ci < row_chunks ? ws::load_global16(xr + ci) : Chunk{{0u, 0u, 0u, 0u}};
  }
  ws::griddep_wait();
  // Lane j < K holds the row of slot (t, j).
  const int my_row = lane < K ? slot_row[t * K + lane] : 0;
  for (int tile = tile0; tile < tile1; ++tile) {
    Chunk cur[kChunks];
#pragma unroll
    for (int u = 0; u < kChunks; ++u) cur[u] = next[u];
    if (tile + 1 < tile1) {
#pragma unroll
      for (int u = 0; u < kChunks; ++u) {
        const int ci = (tile + 1) * kTileChunks + u * 32 + lane;
        next[u] = ci < row_chunks ? ws::load_global16(xr + ci) : Chunk{{0u, 0u, 0u, 0u}};
      }
    }
    if constexpr (kRowByRow) {
      unsigned lo[kChunks], hi[kChunks], sc[kChunks];
#pragma unroll
      for (int u = 0; u < kChunks; ++u) {
        sc[u] = ws::mx::quantize_quad<Config::kFloor>(cur[u], lo[u], hi[u]);
      }
      unsigned gathered[(kChunks + 3) / 4];
      if constexpr (Config::kScaleGather) gather_tile_scales<kChunks>(sc, lane, gathered);
      for (int j = 0; j < K; ++j) {  // the shuffle on all lanes, as below
        const long long row = __shfl_sync(0xFFFFFFFFu, my_row, j);
#pragma unroll
        for (int u = 0; u < kChunks; ++u) {
          const int ci = tile * kTileChunks + u * 32 + lane;
          if (ci < row_chunks) {
            ws::store_global8<Config::kStoreCs>(q + row * H + ci * 8, lo[u], hi[u]);
            if (!Config::kScaleGather && (lane & 3) == 0) {
              scales[row * row_blocks + (ci >> 2)] = static_cast<unsigned char>(sc[u]);
            }
          }
        }
        if constexpr (Config::kScaleGather) {
          store_tile_scales<kChunks>(scales + row * row_blocks, tile, row_blocks, lane, gathered);
        }
      }
      continue;
    }
    unsigned sc[kChunks];
#pragma unroll
    for (int u = 0; u < kChunks; ++u) {
      const int ci = tile * kTileChunks + u * 32 + lane;
      unsigned lo, hi;
      const unsigned s = ws::mx::quantize_quad<Config::kFloor>(cur[u], lo, hi);
      sc[u] = s;
      // NOTE: the shuffle runs on all lanes (lane j may be past the row); K is warp-uniform.
      for (int j = 0; j < K; ++j) {
        const long long row = __shfl_sync(0xFFFFFFFFu, my_row, j);
        if (ci < row_chunks) {
          ws::store_global8<Config::kStoreCs>(q + row * H + ci * 8, lo, hi);
          if (!Config::kScaleGather && (lane & 3) == 0) {
            scales[row * row_blocks + (ci >> 2)] = static_cast<unsigned char>(s);
          }
        }
      }
    }
    if constexpr (Config::kScaleGather) {
      unsigned gathered[(kChunks + 3) / 4];
      gather_tile_scales<kChunks>(sc, lane, gathered);
      for (int j = 0; j < K; ++j) {
        const long long row = __shfl_sync(0xFFFFFFFFu, my_row, j);
        store_tile_scales<kChunks>(scales + row * row_blocks, tile, row_blocks, lane, gathered);
      }
    }
  }
}

}  // namespace

extern "C" __global__ void __launch_bounds__(Config::kThreads)
    sm90_bf16_moe_permute_mxfp8_quantize(const unsigned short* __restrict__ x,
                                         const int* __restrict__ slot_row,
                                         const int* __restrict__ row_slot,
                                         unsigned char* __restrict__ q,
                                         unsigned char* __restrict__ scales, int T, int H, int K,
                                         int MP) {
  permute_quantize<Config::kChunks, Config::kRowByRow>(x, slot_row, row_slot, q, scales, T, H, K,
                                                       MP);
}

// K >= WIDE_K: the writes are K times the reads, so each destination row takes its bytes of a
// tile back to back, WIDE_CHUNKS x 256 contiguous bytes (H200, 2026-12-02: CHUNKS=4 row by row
// was 1.19x / 1.12x the chunk-order default at K = 8, 0.93-0.98x at K = 1, 2).
extern "C" __global__ void __launch_bounds__(Config::kThreads)
    sm90_bf16_moe_permute_mxfp8_quantize_wide(const unsigned short* __restrict__ x,
                                              const int* __restrict__ slot_row,
                                              const int* __restrict__ row_slot,
                                              unsigned char* __restrict__ q,
                                              unsigned char* __restrict__ scales, int T, int H,
                                              int K, int MP) {
  permute_quantize<WIDE_CHUNKS, true>(x, slot_row, row_slot, q, scales, T, H, K, MP);
}

// EARLY: EARLY_TOKENS warps per CTA, each with tpw tokens (1 unless EARLY_SMEM, below). The warp
// quantizes its tokens' rows into shared memory (q, then the scales; slot pitch
// H + round_up(H/32, 16) bytes) BEFORE the routing's wait, so the CTAs resident while the routing
// runs read x meanwhile; then it copies each slot to its token's K rows, 16 bytes per lane (512
// contiguous bytes per warp store). Zero items follow, warp z of the grid taking item z first (the
// filler's whole rows, the heaviest, in the first CTAs). Token i of warp w is CTA token
// i * EARLY_TOKENS + w, in slot i * EARLY_TOKENS + w.
// EARLY_SMEM (24576 by default; 0: one token per warp): the CTA's slots may fill this many bytes,
// tpw = max(1, EARLY_SMEM / (EARLY_TOKENS * pitch)), at most EARLY_TPW where that is set (a cap
// in the plan only: the kernel takes tpw as an argument). Registers cap residency at 9 four-warp
// CTAs per SM (56 registers: 36 warps), so at H2048 one token per warp left two thirds of the
// shared memory unused; 2 tokens per warp (17 KB CTAs, still 9 per SM) read twice as much of x
// before the wait. H100, session 45, seven sweeps in three calls (`ok` with the hidden shapes): 1.019-
// 1.039x at E128 K8 H2048 (controls' spread 1.02), the other bench shapes keep tpw = 1 (0.998-
// 1.012x). More tokens per warp lose where they cost warps: 3 at H2048 (8 CTAs per SM and a
// partial last wave) 0.970-0.992x, 2 at H5120 (5 CTAs per SM) 0.94x. EARLY_CHUNKS=2 (40
// registers: 12 CTAs per SM) 1.005-1.018x geomean over five sweeps, within the spread.
extern "C" __global__ void __launch_bounds__(EARLY_TOKENS * 32)
    sm90_bf16_moe_permute_mxfp8_quantize_early(const unsigned short* __restrict__ x,
                                               const int* __restrict__ slot_row,
                                               const int* __restrict__ row_slot,
                                               unsigned char* __restrict__ q,
                                               unsigned char* __restrict__ scales, int T, int H,
                                               int K, int MP, int tpw_arg) {
  constexpr int kB = EARLY_CHUNKS;
  constexpr int kBatch = 32 * kB;  // chunks per batch
  extern __shared__ int smem[];  // the other kernels' declaration: int (16-byte aligned)
  const int tpw = EARLY_SMEM == 0 ? 1 : tpw_arg;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int row_chunks = H / 8, row_blocks = H / 32;
  const int pitch = H + ((row_blocks + 15) & ~15);
  const unsigned s0 = static_cast<unsigned>(__cvta_generic_to_shared(smem)) + warp * pitch;
  const unsigned s1 = s0 + H;
  const long long t0 = static_cast<long long>(blockIdx.x) * EARLY_TOKENS * tpw + warp;
  auto quantize_token = [&](int i) {
    const long long t = t0 + i * EARLY_TOKENS;
    if (t >= T) return;  // warp-uniform
    const unsigned sq = s0 + i * EARLY_TOKENS * pitch, ss = s1 + i * EARLY_TOKENS * pitch;
    const Chunk* xr = reinterpret_cast<const Chunk*>(x + t * H);
    Chunk next[kB];
#pragma unroll
    for (int u = 0; u < kB; ++u) {
      const int ci = u * 32 + lane;
      next[u] = ci < row_chunks ? ws::load_global16(xr + ci) : Chunk{{0u, 0u, 0u, 0u}};
    }
    for (int c0 = 0; c0 < row_chunks; c0 += kBatch) {
      Chunk cur[kB];
#pragma unroll
      for (int u = 0; u < kB; ++u) cur[u] = next[u];
      if (c0 + kBatch < row_chunks) {
#pragma unroll
        for (int u = 0; u < kB; ++u) {
          const int ci = c0 + kBatch + u * 32 + lane;
          next[u] = ci < row_chunks ? ws::load_global16(xr + ci) : Chunk{{0u, 0u, 0u, 0u}};
        }
      }
#pragma unroll
      for (int u = 0; u < kB; ++u) {
        const int ci = c0 + u * 32 + lane;  // a quad's lanes agree on ci < row_chunks
        unsigned lo, hi;
        const unsigned s = ws::mx::quantize_quad<Config::kFloor>(cur[u], lo, hi);
        if (ci < row_chunks) {
          ws::store_shared8(sq + ci * 8, lo, hi);
          if ((lane & 3) == 0) ws::store_shared1(ss + (ci >> 2), s);
        }
      }
    }
  };
  auto copy_token = [&](int i) {
    const long long t = t0 + i * EARLY_TOKENS;
    if (t >= T) return;
    const unsigned sq = s0 + i * EARLY_TOKENS * pitch, ss = s1 + i * EARLY_TOKENS * pitch;
    __syncwarp();
    const int my_row = lane < K ? slot_row[t * K + lane] : 0;
    for (int j = 0; j < K; ++j) {
      const long long row = __shfl_sync(0xFFFFFFFFu, my_row, j);
      unsigned char* qr = q + row * H;
#pragma unroll 4
      for (int c = lane; c < H / 16; c += 32) {  // H % 32 == 0: whole 16-byte chunks
        ws::store_global16<Config::kStoreCs>(qr + c * 16, ws::load_shared16(sq + c * 16));
      }
      unsigned char* sr = scales + row * row_blocks;
      if (row_blocks % 16 == 0) {  // 16-byte aligned scale rows (H % 512 == 0)
        for (int c = lane; c < row_blocks / 16; c += 32) {
          ws::store_global16<Config::kStoreCs>(sr + c * 16, ws::load_shared16(ss + c * 16));
        }
      } else {
        for (int c = lane; c < row_blocks; c += 32) sr[c] = ws::load_shared1(ss + c);
      }
    }
  };
  if constexpr (EARLY_SMEM == 0) {  // session 44's one-token form, its code as measured then
    quantize_token(0);
    ws::griddep_wait();
    copy_token(0);
  } else {
    for (int i = 0; i < tpw; ++i) quantize_token(i);
    ws::griddep_wait();
    for (int i = 0; i < tpw; ++i) copy_token(i);
  }
  const long long zero_items = (MP + 31) / 32;
  for (long long z = static_cast<long long>(blockIdx.x) * EARLY_TOKENS + warp; z < zero_items;
       z += static_cast<long long>(gridDim.x) * EARLY_TOKENS) {
    zero_rows(row_slot, q, scales, H, MP, (zero_items - 1 - z) * 32, lane);
  }
}

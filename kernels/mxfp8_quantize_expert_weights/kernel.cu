/* warpsmith:plan
{ "knobs":  { "RB": [4, 2, 8], "KT": [2, 1, 4, 3], "ORDER": [0, 1], "LOAD_PATH": [0, 1, 2, 3],
              "STORE_CS": [1, 0], "GROUP_K": [8, 0, 2, 4, 16, 5], "SCALE_WORDS": [1, 0],
              "ROW16": [1, 0], "SCALE_TILES": [1, 0], "GATHER": [1, 0],
              "STEP_ADDR": [0, 1] },
  "workspace": { "bytes": "SCALE_TILES * 2 * E * ceil_div(N, 32 * RB) * ceil_div(K, 64 * KT) * 64 * RB * KT",
                 "zero": false },
  "launch": [ { "kernel": "sm90_bf16_mxfp8_quantize_expert_weights",
                "grid":  ["E * ceil_div(N, 32 * RB) * ceil_div(K, 64 * KT)"],
                "block": ["32 * RB * KT"],
                "smem": "32 * RB * 64 * KT * 2 + 16 + max(SCALE_WORDS, SCALE_TILES) * 64 * KT * RB",
                "args":  ["w", "q_k", "s_k", "q_n", "s_n", "workspace", "E", "N", "K"] },
              { "kernel": "sm90_mxfp8_quantize_expert_weights_scales", "when": "SCALE_TILES != 0",
                "pdl": true,
                "grid":  ["E * (ceil_div(N, 32 * RB) * ceil_div(ceil_div(K, 64 * KT), 32) + ceil_div(K, 64 * KT) * ceil_div(ceil_div(N, 32 * RB), 32))"],
                "block": ["256"], "smem": "32 * (64 * RB * KT + 4)",
                "args":  ["workspace", "s_k", "s_n", "E", "N", "K"] } ] }
*/
// MXFP8 expert-weight quantization, hand-tuned: BF16 w [E,N,K] -> along-K q_k [E,N,K] + s_k
// [E,N,K/32] and along-N (transposed, K-major) q_n [E,K,N] + s_n [E,K,N/32], reading w once:
// per expert exactly the dual kernel (kernels/mxfp8_quantize_dual), with CTA tiles that never
// straddle two experts (N % 32 == 0 but N need not be a multiple of the tile).
//
// Design (memory-bound: 2 bytes in, 2 x 1.03 bytes out per element, no reuse across CTAs):
//  - One CTA per BM x BK tile of one expert (BM = 32*RB rows, BK = 64*KT columns), one warp per
//    (32-row block, 64-column subtile); the tile lands in shared memory (row pitch BK*2 bytes).
//  - Load: LOAD_PATH 2 (sm_90a default): 8 x 16-byte ld.global.nc per thread, all issued before
//    use, then st.shared; the along-K half is quantized from those registers (4 lanes = one
//    block). LOAD_PATH 1 (sm_100a default): one cp.async.bulk (TMA) per tile row, an mbarrier
//    with expect_tx; the along-K half reads its chunks back from shared memory.
//  - Along N: lane p of warp (b, kt) reads 32 words (two adjacent columns) down the tile, each
//    step 32 consecutive words (conflict-free); the q_n tile is staged over the dead w tile with
//    16-byte chunks XOR-swizzled by (row/2), then written as 16-byte coalesced stores.
//  - Scale rules as the rowwise kernel; sm_100a takes rceil from cvt.rp.satfinite.ue8m0x2.f32.
//  - 64-bit indexing throughout: E*N*K reaches 2.1e9 (gpt-oss-120b).
//
// Knobs: RB, KT (tile shape; KT 3 tiles K 2880 whole, without ROW16 and GATHER: 0.91x at E128
// N5760 K2880, with GROUP_K 5 too, where ROW16=0 GATHER=0 alone ran 0.85x, s36c1), ORDER (0: N
// fastest within an expert, 1: K fastest), LOAD_PATH (0: by arch, 1: TMA bulk, 2: vector
// loads), STORE_CS (st.global.cs).
// GROUP_K (0: ORDER decides; else groups of GROUP_K k tiles, k fastest inside a group, then m:
// launch-order neighbours are K neighbours, M neighbours GROUP_K apart), SCALE_WORDS (0: one
// byte store per scale, as measured; 1: scales / scales_t as 32-bit words where whole and
// aligned: 4 blocks of a row gathered by shuffles, scales_t staged in shared memory after the
// tile and written one word per q_t row by one thread), ROW16 and SCALE_TILES (as the dual's:
// the scales whole into a workspace, then a second, PDL launch moves them into place), GATHER
// (that launch stores 16-byte chunks, ws::mx::ScaleGather's kWide: the default since session
// 32, 1.021-1.071x, 1.044x geomean at rceil, `ok` at every test and hidden shape,
// bench/results/sweeps-h200-2026-12-05-session32.json).
// STEP_ADDR (0: off; 0.996x on the H200 in session 38, 0.992-1.000x at every bench shape, `ok`;
// the colwise and dual quantizers gain from it): fewer instructions per tile (ncu on the H200,
// session 20: the dual quantizer's issue slots 64% busy at 0.7 of SOL): CTA and tile indices in
// 32-bit arithmetic (ws::mx::tile_of), and one address plus a step for each thread's loads,
// rowwise pairs and q_t stores, unpredicated in whole tiles (ws::mx::DualTile's kStepAddr).
// sm_90a SASS: 1592 -> 1208 instructions in the quantize launch, the first load issued more than
// 100 instructions earlier.
// BF16_MUL (the scale multiply in bf16 pairs) ran 1.003-1.004x on an H100 in sessions 38-39 and
// was removed; git 8e184cf has it.
// DRAM runs (RB 4, KT 2, ORDER 0, GROUP_K 0): as mxfp8_quantize_dual per expert (w 256 B, q_k
// 128 B, s_k 4 B per row per CTA; q_n 128 B whole lines, s_n 4 B), but the K neighbour is
// tiles_n = N / 128 CTAs later (12-56 at the bench shapes), so w and q_k runs partly merge:
// measured 0.69 of SOL (geomean SOL 326.5 us / 474.9 us) between the isolated model (0.55) and
// all-long (0.95). GROUP_K 8 / 16 (within an expert) makes w and q_k runs 2-4 KB / 1-2 KB from
// launch-order neighbours: ~0.92-0.96 predicted. KT 4 without SCALE_WORDS takes 102-108
// registers on sm_90a with GROUP_K (1 CTA per SM): pair KT 4 with SCALE_WORDS 1 (<= 64).
// Measured on the H200 (2026-11-30, bench/results/kernels-first-run-h200-2026-11-30.md):
//   ok at every shape in both modes; bench geomean 474.9 us (rceil)
//   / 466.9 us (floor).
// Since 2026-12-01 the default is GROUP_K 8 with SCALE_WORDS 1: 1.06x the old default in the same
// run (GROUP_K 16 1.07x; bench/results/sweeps-h200-2026-12-01-session9.json); 0.71-0.81 of SOL,
// ok at every test, hidden and bench shape, 1.51-1.58x the Triton floor peer
// (kernels-h200-2026-12-01-session9.json).
// Since session 21 ROW16 is on (the rowwise half two lanes per block with 16-byte q stores,
// ws::mx::quantize_pair, as the dual quantizer): 1.105x geomean in one call (1.08-1.13x per
// shape), 0.80-0.87 of SOL, ok at every test and hidden shape; LOAD_PATH 3 with a two-pass
// colwise half (since removed) alone 1.062x
// (bench/results/sweeps-h200-2026-12-03-session21.json); on top of ROW16, strided pair addresses
// (46 registers) 1.007x: removed. 1.58-1.64x the Triton floor peer in the same call.
//
// Evaluate: build/warpsmith eval mxfp8_quantize_expert_weights
//   kernels/mxfp8_quantize_expert_weights/kernel.cu [--set rounding=floor] [--knob RB=8 ...]
//
// SASS claims (scripts/check_sass.py): sm_100a loads tiles with the bulk copy on an mbarrier and
//  takes rceil scales from the ue8m0 conversion.
// warpsmith:sass sm_100a: UBLKCP SYNCS.PHASECHK F2FP.SATFINITE.E4M3
// warpsmith:sass sm_100a rounding=rceil: F2FP.SATFINITE.E8
// warpsmith:sass sm_90a: F2FP.SATFINITE.E4M3
// Registers at the 256-thread defaults (4 CTAs per SM by registers at <= 64):
// warpsmith:regs sm_90a: sm90_bf16_mxfp8_quantize_expert_weights<=64
// warpsmith:regs sm_100a: sm90_bf16_mxfp8_quantize_expert_weights<=64

#include "ws/mx_dual_tile.cuh"
#include "ws/ptx_sm90.cuh"

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR)
#error "compile with the problem's parameters: -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1"
#endif
#ifndef RB
#define RB 4
#endif
#ifndef KT
#define KT 2
#endif
#ifndef ORDER
#define ORDER 0
#endif
#ifndef LOAD_PATH
#define LOAD_PATH 0
#endif
#ifndef STORE_CS
#define STORE_CS 1
#endif
#ifndef GROUP_K
#define GROUP_K 8
#endif
#ifndef SCALE_WORDS
#define SCALE_WORDS 1
#endif
#ifndef ROW16
#define ROW16 1  // 1: the rowwise half two lanes per block, 16-byte q stores (KT 2 or 4)
#endif
#ifndef GATHER
#define GATHER 1  // 1: the gather launch stores 16-byte chunks (ScaleGather's kWide; not KT 3)
#endif
#ifndef STEP_ADDR
#define STEP_ADDR 0  // 1: ws::mx::DualTile's kStepAddr (one address and a row step)
#endif
#ifndef SCALE_TILES
#define SCALE_TILES 1  // 1: scales through the workspace and a gather launch (as the dual's)
#endif
#if SCALE_TILES != 0 && SCALE_WORDS == 0  // knob precedence: the tiles' scales are words
#undef SCALE_WORDS
#define SCALE_WORDS 1
#endif

namespace {

using Tile = ws::mx::DualTile<RB, KT, WS_ROUNDING == WS_ROUNDING_FLOOR,
                              ws::mx::use_bulk_loads(LOAD_PATH), STORE_CS != 0,
                              SCALE_WORDS != 0, ROW16 != 0 && KT % 2 == 0, LOAD_PATH == 3,
                              SCALE_TILES != 0, STEP_ADDR != 0>;
// SCALE_TILES' second launch, per expert
using Gather = ws::mx::DualScaleGather<Tile, GATHER != 0>;

}  // namespace

// w (E,N,K) bf16 bits; q_k (E,N,K), s_k (E,N,K/32); q_n (E,K,N), s_n (E,K,N/32); row-major,
// N % 32 == 0, K % 32 == 0. CTA c: expert c / (tiles_n * tiles_k), then a tile of its [N,K].
extern "C" __global__ void __launch_bounds__(Tile::kThreads)
    sm90_bf16_mxfp8_quantize_expert_weights(const unsigned short* __restrict__ w,
                                            unsigned char* __restrict__ q_k,
                                            unsigned char* __restrict__ s_k,
                                            unsigned char* __restrict__ q_n,
                                            unsigned char* __restrict__ s_n,
                                            unsigned char* __restrict__ ws, int E, int N, int K) {
  extern __shared__ __align__(128) unsigned char smem[];  // (kBM,kBK) bf16 + mbarrier
  const long long tiles_n = (N + Tile::kBM - 1) / Tile::kBM;
  const long long tiles_k = (K + Tile::kBK - 1) / Tile::kBK;
  const long long per_expert = tiles_n * tiles_k;
#if STEP_ADDR  // 32-bit CTA arithmetic, as ws::mx::tile_of's
  const unsigned pe = static_cast<unsigned>(per_expert);
  const long long e = blockIdx.x / pe, t = blockIdx.x % pe;
#else
  const long long e = blockIdx.x / per_expert, t = blockIdx.x % per_expert;
#endif
  if (e >= E) return;
  long long tn, tk;  // within the expert
  ws::mx::tile_of<GROUP_K, ORDER != 0, STEP_ADDR != 0>(t, tiles_n, tiles_k, tn, tk);
  const long long elems = static_cast<long long>(N) * K;  // per expert
  unsigned char* sk = s_k + e * (elems / 32);
  unsigned char* sn = s_n + e * (elems / 32);
#if SCALE_TILES
  // Expert e's workspace: its tiles' rowwise blocks [tn][tk], then their colwise ones [tk][tn].
  unsigned char* we = ws + e * 2 * per_expert * Tile::kScaleTileBytes;  // = Gather::bytes(N, K)
  sk = we + (tn * tiles_k + tk) * Tile::kScaleTileBytes;
  sn = we + (per_expert + tk * tiles_n + tn) * Tile::kScaleTileBytes;
#else
  (void)ws;
#endif
  Tile::quantize<true>(w + e * elems, q_k + e * elems, sk, q_n + e * elems, sn, N, K,
                       tn * Tile::kBM, tk * Tile::kBK, smem);
}

// SCALE_TILES' second launch (pdl): each expert's workspace blocks into s_k and s_n, one CTA per
// run of 32 tiles of one tile row (s_k) or tile column (s_n) (ws::mx::ScaleGather).
extern "C" __global__ void __launch_bounds__(Gather::kThreads)
    sm90_mxfp8_quantize_expert_weights_scales(const unsigned char* __restrict__ ws,
                                              unsigned char* __restrict__ s_k,
                                              unsigned char* __restrict__ s_n, int E, int N,
                                              int K) {
  extern __shared__ __align__(16) unsigned char smem[];
  ws::griddep_wait();  // the quantize launch's workspace
  const long long per_expert = Gather::ctas(N, K);
  const long long e = blockIdx.x / per_expert;
  if (e >= E) return;
  const long long elems = static_cast<long long>(N) * K;
  Gather::run(ws + e * Gather::bytes(N, K), s_k + e * (elems / 32),
              s_n + e * (elems / 32), N, K, blockIdx.x % per_expert, smem);
}

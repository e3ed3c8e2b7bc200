/* warpsmith:plan
{ "knobs":  { "RB": [4, 2, 8], "KT": [2, 1, 4, 3], "ORDER": [0, 1], "LOAD_PATH": [0, 1, 2, 3],
              "STORE_CS": [0, 1], "GROUP_K": [8, 0, 2, 4, 16, 5], "SCALE_WORDS": [1, 0],
              "ROW16": [1, 0], "SCALE_TILES": [1, 0], "GATHER": [1, 0],
              "STEP_ADDR": [1, 0] },
  "workspace": { "bytes": "SCALE_TILES * 2 * ceil_div(M, 32 * RB) * ceil_div(K, 64 * KT) * 64 * RB * KT",
                 "zero": false },
  "launch": [ { "kernel": "sm90_bf16_mxfp8_quantize_dual",
                "grid":  ["ceil_div(M, 32 * RB) * ceil_div(K, 64 * KT)"],
                "block": ["32 * RB * KT"],
                "smem": "32 * RB * 64 * KT * 2 + 16 + max(SCALE_WORDS, SCALE_TILES) * 64 * KT * RB",
                "args":  ["x", "q", "scales", "q_t", "scales_t", "workspace", "M", "K"] },
              { "kernel": "sm90_mxfp8_quantize_dual_scales", "when": "SCALE_TILES != 0", "pdl": true,
                "grid":  ["ceil_div(M, 32 * RB) * ceil_div(ceil_div(K, 64 * KT), 32) + ceil_div(K, 64 * KT) * ceil_div(ceil_div(M, 32 * RB), 32)"],
                "block": ["256"], "smem": "32 * (64 * RB * KT + 4)",
                "args":  ["workspace", "scales", "scales_t", "M", "K"] } ] }
*/
// MXFP8 dual quantization, hand-tuned: BF16 x [M,K] -> rowwise q [M,K] + scales [M,K/32] and
// colwise (transposed) q_t [K,M] + scales_t [K,M/32], reading x once.
//
// Design (memory-bound: 2 bytes in, 2 x 1.03 bytes out per element, no reuse across CTAs):
//  - One CTA per BM x BK tile (BM = 32*RB rows, BK = 64*KT columns), one warp per (32-row
//    block, 64-column subtile). The tile lands in shared memory, row pitch BK*2 bytes.
//  - Load: LOAD_PATH 2 (sm_90a default): 8 x 16-byte ld.global.nc per thread, all issued before
//    use (128 bytes in flight per thread), then st.shared; the rowwise half is quantized straight
//    from those registers (4 lanes = one 32-element block, like the rowwise kernel).
//    LOAD_PATH 1 (sm_100a default): one cp.async.bulk per tile row (TMA, no registers), an
//    mbarrier with expect_tx; the rowwise half then reads its chunks back from shared memory.
//  - Colwise: lane p of warp (b, kt) reads 32 words (two adjacent columns) down the tile: each
//    step is 32 consecutive words, conflict-free. amax by max.u16x2, quantize to 2 x 32 bytes.
//  - The q_t tile [BK][BM] bytes is staged over the (dead) x tile with 16-byte chunks XOR-
//    swizzled by (row/2): the 16-byte writes of 8 lanes on 8 different rows hit 8 bank groups,
//    and the store phase writes each q_t row's BM bytes with 16-byte coalesced stores.
//  - Scale rules (integer bit logic + the two fp32 multiplies the spec names, never FTZ) as
//    the rowwise kernel; sm_100a takes rceil from cvt.rp.satfinite.ue8m0x2.f32, two at once.
//
// Knobs: RB (32-row blocks per tile: BM, q_t bytes per row per CTA), KT (64-column subtiles:
// read run per row = 128*KT bytes; 3 tiles K 2880 whole, without ROW16 and GATHER: 0.91x there,
// with GROUP_K 5 too, where ROW16=0 GATHER=0 alone ran 0.87x, s36c1), ORDER (0:
// CTAs walk M fastest, so q_t rows and scales_t sectors fill from consecutive CTAs; 1: K
// fastest, so x rows are read in long runs),
// LOAD_PATH (0: by arch as above, 1: TMA bulk, 2: vector loads, 3: cp.async), STORE_CS (.cs).
// GROUP_K (0: ORDER decides; else groups of GROUP_K k tiles, k fastest inside a group, then m:
// launch-order neighbours are K neighbours, M neighbours GROUP_K apart), SCALE_WORDS (0: one
// byte store per scale, as measured; 1: scales / scales_t as 32-bit words where whole and
// aligned: 4 blocks of a row gathered by shuffles, scales_t staged in shared memory after the
// tile and written one word per q_t row by one thread), ROW16 (below), SCALE_TILES (below).
// DRAM runs (RB 4, KT 2, ORDER 0, GROUP_K 0; the run model of swiglu_quantize_bwd: an isolated run
// costs ~370 bytes of copy time below that length, 128 B ~2.9x, 256 B ~1.7x its bytes):
//   x read   : 256 B per tile row per CTA (warp load: 2 rows, 4 lines); K neighbour tiles_m
//              (128-1024) CTAs later: isolated, 1.7x.
//   q        : 128 B per row per CTA (warp store: 8 B per lane, 2 whole lines); isolated, 2.9x.
//   scales   : 4 B per row per CTA, 4 byte stores (warp store: 8 bytes in 2 rows); isolated.
//   q_t      : 128 B per row per CTA (a whole line; warp store: 4 lines); M neighbour is the
//              next CTA: long.
//   scales_t : 4 B per row per CTA, byte stores (warp store: 32 lines); filled by 32 CTAs.
// Model: (2 x 1.7 + 2.9 + 1.0 + 0.06) / 4.06 = 0.55 of SOL (measured 0.55): the reads and q
// are short. GROUP_K 8 / 16: reads 2 / 4 KB, q 1 / 2 KB, q_t M neighbours 8 / 16 CTAs apart:
// 0.92 / 0.96 predicted (0.85 at GROUP_K 4); SCALE_WORDS 1 cuts the scale stores 4x (1024 byte
// stores per tile, as many L2 requests as q and q_t's sectors together, to 256 words) and
// takes sm_90a rceil from 79 to 64 registers (3 -> 4 CTAs per SM).
// Measured on the H200 (2026-11-30, bench/results/kernels-first-run-h200-2026-11-30.md):
//   ok at every shape in both modes; bench geomean 443.3 us (rceil) /
//   433.9 us (floor).
// Since 2026-12-01 the default is GROUP_K 8 with SCALE_WORDS 1: 1.31x the old default in the same
// run (bench/results/sweeps-h200-2026-12-01-session9.json); 0.62-0.78 of SOL, ok at every test,
// hidden and bench shape, 1.44-1.61x the Triton floor peer (kernels-h200-2026-12-01-session9.json).
// The run model above predicted 0.92 for GROUP_K 8: some cost it does not count remains.
// Nsight Compute (H200, session 20, K7168 M131072, 1.18 ms): DRAM 66.8% of peak but L2 85.7%
// busy, L2 hit rate 56.7%, issue slots 63.8% busy, 48.6% of warps active: the L2 is the
// busiest unit, ahead of DRAM (which of its limits, the .ncu-rep's L2 sections will say). A
// persistent form with 2-3 tile buffers per CTA (the next tiles' loads in flight while one is
// quantized; cp.async on sm_90a, bulk copies per row) ran
// 0.88-0.91x of this kernel (bulk copies 0.78-0.84x), colwise 0.90-0.92x; the one-tile kernel
// with per-row bulk loads (LOAD_PATH 1) 0.94x. Fewer CTAs per SM (2, not 3) lost more (0.66-0.70x):
// resident warps, not loads in flight per CTA, are what this kernel runs on; the form was removed.
// ROW16 (default 1 since session 21): a leaner rowwise half. Two lanes per block, not four:
// after a barrier each lane reads its 16 elements back from shared memory and stores 16 q bytes,
// so a warp's q store covers 4 rows x 128 bytes (the quads: 2 rows x 128), half the store
// instructions and one shuffle fewer per block, with issue slots 64% busy. The bytes and the
// whole-line L2 store requests per byte stay the same. H200, session 21: 1.072x (rceil) and
// 1.028x (floor) geomean over ROW16 0, ok at every test, hidden and bench shape, 0.70-0.82 of
// SOL (bench/results/sweeps-h200-2026-12-03-session21.json): fewer instructions paid, with the
// same L2 requests per byte.
// The same profile's stalls: long_sb 34% (almost all at the st.shared of the loaded chunks: the
// loads' latency), barrier 11%; integer address arithmetic is most of the instructions. 64
// registers allow 4 CTAs (32 warps) per SM, and the 8 loads in flight per thread hold 32 of them.
// LOAD_PATH 3 (cp.async, straight into shared memory: no registers wait for loads): 1.053x /
// 1.034x (rceil / floor) against ROW16 0 in session 21; with a two-pass colwise half (48 registers,
// 5 CTAs per SM) the same, with 6 CTAs per SM (40 registers) 0.98-1.01x: both knobs were removed.
// On top of ROW16 (same session, rceil) LOAD_PATH 3 gave 1.002x, and the pairs'
// addresses walked by fixed strides (48 registers, 5 CTAs per SM) 0.997x: with ROW16 the kernel
// no longer responds to occupancy or load path (ncu: DRAM 69% of peak, L2 87% busy); the strided
// form was removed. The L2's own limits (its request and sector mix) are what to read next.
// SCALE_TILES (1: implies SCALE_WORDS): a tile's scales are 4 bytes per row and per column, so in
// place each is its own L2 request: 256 per tile beside 512 for its data, a third of the L2's
// requests for 1.5% of the bytes. With SCALE_TILES the tile writes them whole into a workspace
// (512 contiguous bytes each) and a second launch (PDL) moves them into place along whole output
// rows (ws::mx::ScaleGather): 2 x 1/32 byte per element more traffic, 1/16 of the requests.
// H200, session 22 (`bench/results/sweeps-h200-2026-12-03-session22.json`): 1.034x geomean
// (1.050-1.065x at the four large shapes, 0.990x at 16384x2880, where the second launch costs
// more than it saves), `ok` at every test, hidden and bench shape in both roundings: the default
// since. 0.83-0.84 of SOL at the large shapes, 0.69-0.71 at 16384x2880.
// GATHER (1: the gather launch stores 16-byte chunks, ws::mx::ScaleGather's kWide), the default
// since session 33: 1.019x geomean in both roundings (1.019-1.031x at the four large shapes,
// 0.999-1.002x at 16384x2880), `ok` at every test and hidden shape
// (bench/results/sweeps-h200-2026-12-05-session33.json); session 32's reading, 1.005x with
// 0.959x at 16384x2880, was that shape's call-to-call spread.
// STEP_ADDR (1: the default since session 38: 1.009x geomean over two H200 sweeps, 1.031-1.053x
// at 16384x2880, 0.993-0.998x at 131072x7168, `ok` at every test and hidden shape;
// bench/results/sweeps-h200-2026-12-05-session38.json): fewer instructions per tile (ncu on the
// H200, session 20: this kernel's issue slots 64% busy at 0.7 of SOL): CTA and tile indices in
// 32-bit arithmetic (ws::mx::tile_of), and one address plus a step for each thread's loads,
// rowwise pairs and q_t stores, unpredicated in whole tiles (ws::mx::DualTile's kStepAddr).
// sm_90a SASS: 1520 -> 1160 instructions in the quantize launch, the first load issued more than
// 100 instructions earlier.
// BF16_MUL (the scale multiply in bf16 pairs) ran 1.001-1.005x on an H100 in sessions 38-39 and
// was removed; git 8e184cf has it.
// FUSE_GATHER (the gather inside the quantize launch: the CTA completing a run of 32 tiles, counted
// on an acq_rel counter, gathers it; no second launch) ran 0.939-0.967x at 16384x2880, the shape
// it was for, and 0.990-1.002x at the large shapes on an H100 (session 44): removed; git 9a34b94
// has it.
//
// At 16384x2880 under ncu (H100, session 47): the quantize launch 65-66 us at 77-79% of DRAM
// peak, the gather launch 7.8 us at 12% (its loads then waited on each other; now batched in
// ws::mx::ScaleGather: 1.014x there). An L2 prefetch of the tile one wave ahead (PREFETCH, one
// bulk prefetch per tile row) ran 0.74-0.85x at every shape and was removed (git e340112).
//
// Evaluate: build/warpsmith eval mxfp8_quantize_dual kernels/mxfp8_quantize_dual/kernel.cu
//   [--set rounding=floor] [--knob RB=8 ...]
//
// SASS claims (scripts/check_sass.py): sm_100a loads tiles with the bulk copy on an mbarrier and
//  takes rceil scales from the ue8m0 conversion.
// warpsmith:sass sm_100a: UBLKCP SYNCS.PHASECHK F2FP.SATFINITE.E4M3
// warpsmith:sass sm_100a rounding=rceil: F2FP.SATFINITE.E8
// warpsmith:sass sm_90a: F2FP.SATFINITE.E4M3
// Registers at the 256-thread defaults (CTAs per SM by registers: 5 at <= 48, 4 at <= 64):
// warpsmith:regs sm_90a: sm90_bf16_mxfp8_quantize_dual<=48
// warpsmith:regs sm_100a: sm90_bf16_mxfp8_quantize_dual<=64

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
#define STORE_CS 0  // plain stores: 1.5-2.5% faster than .cs at every bench shape (H200, 2026-12-01)
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
#define STEP_ADDR 1  // 1: ws::mx::DualTile's kStepAddr (one address and a row step)
#endif
#ifndef SCALE_TILES
#define SCALE_TILES 1  // 1: scales through the workspace and a gather launch (SCALE_WORDS too)
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
using Gather = ws::mx::DualScaleGather<Tile, GATHER != 0>;  // SCALE_TILES' second launch

}  // namespace

// x (M,K) bf16 bits; q (M,K) e4m3, scales (M,K/32) e8m0; q_t (K,M) e4m3, scales_t (K,M/32) e8m0.
// One CTA per (kBM x kBK) tile; M % 32 == 0 and K % 32 == 0, so ragged tiles hold whole blocks.
// ws (SCALE_TILES): the tiles' rowwise scale blocks [tm][tk], then their colwise ones [tk][tm].
extern "C" __global__ void __launch_bounds__(Tile::kThreads)
    sm90_bf16_mxfp8_quantize_dual(const unsigned short* __restrict__ x,
                                  unsigned char* __restrict__ q,
                                  unsigned char* __restrict__ scales,
                                  unsigned char* __restrict__ q_t,
                                  unsigned char* __restrict__ scales_t,
                                  unsigned char* __restrict__ ws, int M, int K) {
  extern __shared__ __align__(128) unsigned char smem[];  // (kBM,kBK) bf16 + mbarrier
  const long long tiles_m = (M + Tile::kBM - 1) / Tile::kBM;
  const long long tiles_k = (K + Tile::kBK - 1) / Tile::kBK;
  long long tm, tk;  // GROUP_K > 0: x rows and q rows in GROUP_K-tile runs
  ws::mx::tile_of<GROUP_K, ORDER != 0, STEP_ADDR != 0>(blockIdx.x, tiles_m, tiles_k, tm, tk);
#if SCALE_TILES
  scales = ws + (tm * tiles_k + tk) * Tile::kScaleTileBytes;
  scales_t = ws + (tiles_m * tiles_k + tk * tiles_m + tm) * Tile::kScaleTileBytes;
#else
  (void)ws;
#endif
  Tile::quantize<true>(x, q, scales, q_t, scales_t, M, K, tm * Tile::kBM, tk * Tile::kBK,
                       smem);
}

// SCALE_TILES' second launch (pdl): the workspace's scale blocks into scales and scales_t, one
// CTA per run of 32 tiles of one tile row (scales) or tile column (scales_t).
extern "C" __global__ void __launch_bounds__(Gather::kThreads)
    sm90_mxfp8_quantize_dual_scales(const unsigned char* __restrict__ ws,
                                    unsigned char* __restrict__ scales,
                                    unsigned char* __restrict__ scales_t, int M, int K) {
  extern __shared__ __align__(16) unsigned char smem[];
  ws::griddep_wait();  // the quantize launch's workspace
  Gather::run(ws, scales, scales_t, M, K, blockIdx.x, smem);
}

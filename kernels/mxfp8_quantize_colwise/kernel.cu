/* warpsmith:plan
{ "knobs":  { "RB": [4, 2, 8], "KT": [2, 1, 4, 3], "ORDER": [0, 1], "LOAD_PATH": [0, 1, 2, 3],
              "STORE_CS": [1, 0], "GROUP_K": [8, 0, 2, 4, 16, 5], "SCALE_WORDS": [1, 0],
              "SCALE_TILES": [1, 0], "GATHER": [1, 0],
              "STEP_ADDR": [1, 0] },
  "workspace": { "bytes": "SCALE_TILES * ceil_div(M, 32 * RB) * RB * 64 * ceil_div(K, 64 * KT) * KT",
                 "zero": false },
  "launch": [ { "kernel": "sm90_bf16_mxfp8_quantize_colwise",
                "grid":  ["ceil_div(M, 32 * RB) * ceil_div(K, 64 * KT)"],
                "block": ["32 * RB * KT"],
                "smem": "32 * RB * 64 * KT * 2 + 16 + max(SCALE_WORDS, SCALE_TILES) * 64 * KT * RB",
                "args":  ["x", "q_t", "scales_t", "workspace", "M", "K"] },
              { "kernel": "sm90_mxfp8_quantize_colwise_scales", "pdl": true,
                "when": "SCALE_TILES != 0",
                "grid":  ["ceil_div(K, 64 * KT) * ceil_div(ceil_div(M, 32 * RB), 32)"],
                "block": ["256"], "smem": "32 * (64 * RB * KT + 4)",
                "args":  ["workspace", "scales_t", "M", "K"] } ] }
*/
// MXFP8 colwise quantization, hand-tuned: BF16 x [M,K] -> q_t [K,M] E4M3 + scales_t [K,M/32]
// E8M0 (32-row blocks of each column, stored transposed / K-major for Hopper's wgrad wgmma).
//
// Design (memory-bound: 2 bytes in, 1.03 bytes out per element, no reuse across CTAs):
//  - One CTA per BM x BK tile of x (BM = 32*RB rows, BK = 64*KT columns), one warp per (32-row
//    block, 64-column subtile). The tile lands in shared memory, row pitch BK*2 bytes.
//  - Load: LOAD_PATH 2 (sm_90a default): 8 x 16-byte ld.global.nc per thread, all issued before
//    use (128 bytes in flight per thread), then st.shared (8 lanes = 128 contiguous bytes: no
//    conflicts). LOAD_PATH 1 (sm_100a default): one cp.async.bulk (TMA) per tile row into shared
//    memory, completion on an mbarrier with expect_tx: no registers, no load instructions.
//  - Quantize: lane p of warp (b, kt) reads 32 words (two adjacent columns) down the tile: each
//    step is 32 consecutive words, conflict-free. amax by max.u16x2 on the magnitude bits, two
//    scales, 2 x 32 E4M3 bytes with the packed cvt.rn.satfinite.e4m3x2.f32.
//  - The q_t tile [BK][BM] bytes is staged over the (dead) x tile with 16-byte chunks XOR-
//    swizzled by (row/2), so 8 lanes writing 8 different q_t rows hit 8 bank groups; then each
//    q_t row's BM bytes leave as 16-byte coalesced stores (BM/16 lanes per row).
//  - Scale rules (integer bit logic + the two fp32 multiplies the spec names, never FTZ) as
//    the rowwise kernel; sm_100a takes rceil from cvt.rp.satfinite.ue8m0x2.f32, two at once.
//
// Knobs: RB (32-row blocks per tile: BM, so q_t bytes per row per CTA), KT (64-column subtiles:
// read run per x row = 128*KT bytes), ORDER (0: CTAs walk M fastest, so q_t
// rows and scales_t sectors fill from consecutive CTAs; 1: K fastest, so x rows are read in long
// runs),
// LOAD_PATH (0: by arch as above, 1: TMA bulk, 2: vector loads, 3: cp.async), STORE_CS (.cs).
// GROUP_K (0: ORDER decides; else groups of GROUP_K k tiles, k fastest inside a group, then m:
// launch-order neighbours are K neighbours, M neighbours GROUP_K apart), SCALE_WORDS (0: one
// byte store per scale, as measured; 1: scales / scales_t as 32-bit words where whole and
// aligned: 4 blocks of a row gathered by shuffles, scales_t staged in shared memory after the
// tile and written one word per q_t row by one thread), SCALE_TILES (1: scales_t through a
// workspace and a second, PDL launch storing whole output rows, as the dual quantizer's: a
// tile's 128 scales_t words are each an L2 request in place, 7.7% of its requests; measured
// 0.976x with the word-loop gather in session 22), GATHER (SCALE_TILES' launch stores 16-byte
// chunks: ws::mx::ScaleGather's kWide, a quarter of its store instructions). Both 1 is the
// default since session 32: 1.011x geomean at rceil (1.016-1.018x at the three large shapes,
// 0.993x at 16384x2880), `ok` at every test and hidden shape; SCALE_TILES alone 0.957x in the
// same call (bench/results/sweeps-h200-2026-12-05-session32.json).
// Whole tiles at K 2880 (45 subtiles: KT 2 leaves 22 tiles and a half, KT 3 makes 15): `KT=3
// GROUP_K=5` ran 1.033x there in s36c1, but a second pair of launches with 3-subtile tiles only
// at such K (KT_ALT, removed in session 38; git c52204c has it) ran 0.997x (0.981x at K 2880) on
// the H200 in s38c1 and added nothing beside STEP_ADDR=1 (sweeps-h200-2026-12-05-session38.json).
// STEP_ADDR (1: the default since session 38: 1.008x geomean over two H200 sweeps, 1.014-1.026x
// at 16384x2880, `ok` at every test and hidden shape; sweeps-h200-2026-12-05-session38.json):
// fewer instructions per tile (ncu on the H200, session 20: the dual quantizer's issue slots 64%
// busy at 0.7 of SOL): CTA and tile indices in 32-bit arithmetic (ws::mx::tile_of), and one
// address plus a step for each thread's loads, rowwise pairs and q_t stores, unpredicated in
// whole tiles (ws::mx::DualTile's kStepAddr). sm_90a SASS: 920 -> 640 instructions in the
// quantize launch, the first load issued more than 100 instructions earlier.
// BF16_MUL (the scale multiply in bf16 pairs) ran 0.999-1.009x on an H100 in sessions 38-39 and
// was removed; git 8e184cf has it.
// FUSE_GATHER (the dual quantizer's gather inside the quantize launch) ran 0.961-0.962x at
// 16384x2880 and 0.997-1.010x at the large shapes on an H100 (session 44): removed; git 9a34b94
// has it.
// DRAM runs (RB 4, KT 2, ORDER 0, GROUP_K 0; the run model of swiglu_quantize_bwd: an isolated run
// costs ~370 bytes of copy time below that length, 128 B ~2.9x, 256 B ~1.7x its bytes):
//   x read   : 256 B per tile row per CTA (a warp load: 2 rows, 4 whole lines); the K neighbour
//              is tiles_m CTAs later (128-1024 at the bench shapes): isolated 256-B runs, 1.7x.
//   q_t      : 128 B per q_t row per CTA (a whole line; a warp store: 4 whole lines); the M
//              neighbour is the next CTA: long runs.
//   scales_t : 4 B per row per CTA, one byte per lane (a warp store: 32 lines); 32 consecutive
//              CTAs fill a line in L2.
// Model: (2 x 1.7 + 1.03) / 3.03 = 0.68 of SOL (measured 0.69 / 0.67): the reads are what is
// short. GROUP_K 4-16 makes them GROUP_K x 256 B (1-4 KB, ~1.05-1.2x) while the M neighbours
// stay GROUP_K CTAs apart: 0.89-0.96 predicted if q_t still merges at that distance; KT 4
// SCALE_WORDS 1 (512-B reads per CTA; SCALE_WORDS keeps it at <= 64 registers) 0.81, with
// GROUP_K 2 / 4 0.89 / 0.94.
// Measured on the H200 (2026-11-30, bench/results/kernels-first-run-h200-2026-11-30.md):
//   ok at every shape in both modes; bench geomean 258.1 us (rceil) /
//   266.2 us (floor), 0.69 / 0.67 of speed-of-light: below the 0.90 target.
// Since 2026-12-01 the default is GROUP_K 8 with SCALE_WORDS 1: 1.29x the old default in the same
// run (bench/results/sweeps-h200-2026-12-01-session9.json; GROUP_K 8 alone 1.02x, so the scale
// words carry most of it); 0.90-0.92 of SOL on the large bench shapes and 0.79-0.84 on
// 16384x2880, ok at every test, hidden and bench shape, 1.84-1.87x the Triton floor peer
// (kernels-h200-2026-12-01-session9.json).
//
// Evaluate: build/warpsmith eval mxfp8_quantize_colwise kernels/mxfp8_quantize_colwise/kernel.cu
//   [--set rounding=floor] [--knob RB=8 ...]
//
// SASS claims (scripts/check_sass.py): sm_100a loads tiles with the bulk copy on an mbarrier and
//  takes rceil scales from the ue8m0 conversion.
// warpsmith:sass sm_100a: UBLKCP SYNCS.PHASECHK F2FP.SATFINITE.E4M3
// warpsmith:sass sm_100a rounding=rceil: F2FP.SATFINITE.E8
// warpsmith:sass sm_90a: F2FP.SATFINITE.E4M3
// Registers at the 256-thread defaults (CTAs per SM by registers: 5 at <= 48, as measured):
// warpsmith:regs sm_90a: sm90_bf16_mxfp8_quantize_colwise<=48
// warpsmith:regs sm_100a: sm90_bf16_mxfp8_quantize_colwise<=48

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
#ifndef SCALE_TILES
#define SCALE_TILES 1  // 1: scales_t through the workspace and a gather launch (as the dual's)
#endif
#ifndef GATHER
#define GATHER 1  // 1: the gather launch stores 16-byte chunks (ws::mx::ScaleGather's kWide)
#endif
#ifndef STEP_ADDR
#define STEP_ADDR 1  // 1: ws::mx::DualTile's kStepAddr (one address and a row step)
#endif
#if SCALE_TILES != 0 && SCALE_WORDS == 0  // knob precedence: the tiles' scales are words
#undef SCALE_WORDS
#define SCALE_WORDS 1
#endif


namespace {

// The quantize and its scales gather at kKT subtiles per tile in groups of kGroupK k tiles (the
// knobs' KT and GROUP_K), the two entry points below.
template <int kKT, int kGroupK>
struct Colwise {
  using Tile = ws::mx::DualTile<RB, kKT, WS_ROUNDING == WS_ROUNDING_FLOOR,
                                ws::mx::use_bulk_loads(LOAD_PATH), STORE_CS != 0,
                                SCALE_WORDS != 0, false, LOAD_PATH == 3, SCALE_TILES != 0,
                                STEP_ADDR != 0>;
  // SCALE_TILES' second launch: each tile column's run of blocks into scales_t rows.
  using Gather = ws::mx::ScaleGather<Tile::kBK, Tile::kTileScaleCol, GATHER != 0>;

  static __device__ __forceinline__ void quantize(const unsigned short* __restrict__ x,
                                                  unsigned char* __restrict__ q_t,
                                                  unsigned char* __restrict__ scales_t,
                                                  unsigned char* __restrict__ ws, int M, int K) {
    extern __shared__ __align__(128) unsigned char smem[];  // (kBM,kBK) bf16 + mbarrier
    const long long tiles_m = (M + Tile::kBM - 1) / Tile::kBM;
    const long long tiles_k = (K + Tile::kBK - 1) / Tile::kBK;
    long long tm, tk;  // kGroupK > 0: x rows and q_t rows in kGroupK-tile runs
    ws::mx::tile_of<kGroupK, ORDER != 0, STEP_ADDR != 0>(blockIdx.x, tiles_m, tiles_k, tm, tk);
#if SCALE_TILES
    scales_t = ws + (tk * tiles_m + tm) * Tile::kScaleTileBytes;  // the tiles' blocks, [tk][tm]
#else
    (void)ws;
#endif
    Tile::template quantize<false>(x, nullptr, nullptr, q_t, scales_t, M, K, tm * Tile::kBM,
                                   tk * Tile::kBK, smem);
  }

  // SCALE_TILES' second launch (pdl): the workspace's blocks into scales_t, one CTA per run of
  // 32 tiles of one tile column.
  static __device__ __forceinline__ void gather(const unsigned char* __restrict__ ws,
                                                unsigned char* __restrict__ scales_t, int M,
                                                int K) {
    extern __shared__ __align__(16) unsigned char smem[];
    ws::griddep_wait();  // the quantize launch's workspace
    const long long tiles_m = (M + Tile::kBM - 1) / Tile::kBM;
    Gather::run_cta(ws, scales_t, K, tiles_m, M / 32, blockIdx.x, smem);
  }
};

using Main = Colwise<KT, GROUP_K>;

}  // namespace

// x (M,K) bf16 bits; q_t (K,M) e4m3, scales_t (K,M/32) e8m0. One CTA per (kBM x kBK) tile;
// M % 32 == 0 and K % 32 == 0, so ragged tiles hold whole blocks.
extern "C" __global__ void __launch_bounds__(Main::Tile::kThreads)
    sm90_bf16_mxfp8_quantize_colwise(const unsigned short* __restrict__ x,
                                     unsigned char* __restrict__ q_t,
                                     unsigned char* __restrict__ scales_t,
                                     unsigned char* __restrict__ ws, int M, int K) {
  Main::quantize(x, q_t, scales_t, ws, M, K);
}

extern "C" __global__ void __launch_bounds__(Main::Gather::kThreads)
    sm90_mxfp8_quantize_colwise_scales(const unsigned char* __restrict__ ws,
                                       unsigned char* __restrict__ scales_t, int M, int K) {
  Main::gather(ws, scales_t, M, K);
}

/* warpsmith:plan
{ "knobs":  { "BLOCK_M": [128, 64, 32, 256], "BLOCK_I": [64, 32, 128], "THREADS": [256, 512, 1024, 128],
              "FAST_EXP": [2, 1, 0], "STORE_CS": [2, 1, 0], "QT_STAGE": [1, 0], "GROUP_I": [0, 16, 8, 32],
              "RSEL": [0, 1], "SCALE_TILES": [1, 0],
              "GATHER": [1, 0], "LEAN": [1, 0] },
  "workspace": { "bytes": "SCALE_TILES * QT_STAGE * (BLOCK_M % 64 == 0) * (BLOCK_I % 64 == 0) * 4 * ceil_div(M, BLOCK_M) * ceil_div(I, BLOCK_I) * BLOCK_M * BLOCK_I / 32",
                 "zero": false },
  "launch": [ { "kernel": "sm90_bf16_dswiglu_mxfp8_quantize_dual",
                "grid":  ["ceil_div(M, BLOCK_M) * ceil_div(I, BLOCK_I)"],
                "block": ["THREADS"],
                "smem": "(QT_STAGE != 0 || GROUP_I != 0 || BLOCK_M != 64 || BLOCK_I != 64 || THREADS != 256) * (4 * BLOCK_M * BLOCK_I + QT_STAGE * 2 * BLOCK_I * (BLOCK_M / 32))",
                "args":  ["hpre", "da", "q", "scales", "q_t", "scales_t", "M", "I", "workspace"] },
              { "kernel": "sm90_dswiglu_mxfp8_scales",
                "when": "SCALE_TILES * QT_STAGE * (BLOCK_M % 64 == 0) * (BLOCK_I % 64 == 0) != 0", "pdl": true,
                "grid":  ["2 * ceil_div(M, BLOCK_M) * ceil_div(ceil_div(I, BLOCK_I), 32) + 2 * ceil_div(I, BLOCK_I) * ceil_div(ceil_div(M, BLOCK_M), 32)"],
                "block": ["256"], "smem": "32 * (BLOCK_M * BLOCK_I / 32 + 4)",
                "args":  ["workspace", "scales", "scales_t", "M", "I"] } ] }
*/
// SwiGLU backward + MXFP8 in both orientations, hand-tuned: hpre [M,2I] (g || u) and dA [M,I]
// bf16 -> dhpre = [dg || du] in bf16 -> q [M,2I] + scales [M,2I/32] (rowwise) and q_t [2I,M] +
// scales_t [2I,M/32] (columnwise, transposed). Floor: 6 bytes read + 4 (1 + 1/32) written per
// element of I; one pass, dhpre never leaves the SM.
//
// Design (swiglu_quantize_fwd's kernel with two outputs per element): one CTA per BLOCK_M x
// BLOCK_I tile of I; GROUP_I = 0: column tiles fastest; else groups of GROUP_I column tiles with
// the M tiles fastest inside a group (see "CTA order" below).
//  - Loads: thread k of the tile's 16-byte chunks (8 columns of I) reads g, u and dA of its row;
//    all before any math.
//  - dg, du in fp32 in the reference's order (FAST_EXP: __expf and an approximate reciprocal for
//    the sigmoid; else expf and IEEE division), each rounded to bf16 once. Clamped: the clamp
//    gradients are selects with inclusive limits, so NaN and out-of-range give +0.
//  - Rowwise straight from registers: a row block (32 columns, all dg or all du since I % 32 == 0)
//    is a lane quad; two shuffles for amax, 8-byte q stores at column c (dg) and I + c (du).
//  - dg and du tiles go to shared memory (16-byte stores, conflict-free); after one barrier each
//    thread takes a column pair x 32-row block of one of them (32-bit reads, conflict-free).
//  - QT_STAGE 1: the 2 x 32 q_t bytes and the two scales are staged in shared memory
//    (over the dead dhpre tile; 16-byte chunks XOR-swizzled by row/2 as ws/mx_dual_tile.cuh), then
//    each q_t row leaves as BLOCK_M contiguous bytes by BLOCK_M/16 consecutive lanes (full 128-byte
//    lines at BLOCK_M 128) and each scales_t row as BLOCK_M/32 bytes from one thread (one 32-bit
//    store when aligned). QT_STAGE 0 (the first H200 run's kernel, BLOCK_M 64): each thread
//    stores its two 32-byte q_t runs (16-byte stores, 32 different lines per warp instruction) and
//    two scale bytes straight from registers.
//  - Scale rules as kernels/mxfp8_quantize_rowwise (sm_100a: cvt.rp.satfinite.ue8m0x2.f32 for
//    rceil; sm_90a: from the bits of d).
// Measured on the H200 (first run, QT_STAGE 0, BLOCK_M 64, THREADS 256, rceil): 1251 / 435 / 4987
// / 838 us at the bench shapes, 0.51 of SOL everywhere (SOL 637 / 239 / 2547 / 448 us), with the
// rowwise-only kernels of the same library at 0.92-0.99. What differs is the transposed output:
// 4 of the 10.1 bytes per element of I are q_t, written as 16-byte halves of 32-byte sectors (two
// stores per sector, 32 lines per warp instruction, .cs = evict-first) and 64 bytes per q_t row
// per CTA, plus single scale bytes. The model that fits colwise (0.69), dual (0.55) and this
// kernel (0.51) together: each short, isolated DRAM run of a stream costs about 350-400 bytes
// of copy time (a row activation), whatever its length below that; 2 bytes of q_t in 64-byte
// runs then cost about 11 bytes. Staging q_t into full lines per CTA (and scales_t into one
// store per row) removes the partial-sector writes and doubles the run per CTA; GROUP_I makes
// the CTAs resident together write long q_t runs (M fastest) while still reading GROUP_I x 128
// bytes of each hpre / dA row. Expected with both: about 0.85-0.9 of SOL (the next H200 run
// sweeps QT_STAGE, GROUP_I and STORE_CS to say which part pays). Bytes in flight: the first
// kernel held 64 registers x 256 threads, so 4 CTAs x 24 KB = 96 KB of loads per SM; the staged
// setting k-mem proposed (QT_STAGE 1, BLOCK_M 128, THREADS 256) holds 80 registers, 3 CTAs x 48 KB
// = 144 KB per SM, 33 KB of shared memory per CTA (tile 32 KB + staged scales).
// Knobs: BLOCK_M (rows per tile; the q_t run length per CTA), BLOCK_I (columns of I per tile),
// THREADS, FAST_EXP, STORE_CS (1: st.global.cs for q and q_t; 2: for q_t only, whose lines are
// whole per CTA when staged; 0: none), QT_STAGE, GROUP_I (column tiles per CTA group, 0: all).
// FAST_EXP 2: the .ftz exponent and reciprocal, the same bits as FAST_EXP 1 (ws/swiglu.cuh).
// SCALE_TILES: see Config (why: kernels/swiglu_quantize_fwd). 1 is the default since
// session 29: 1.019-1.142x (1.060x geomean) at rceil standard, then 1.009-1.150x (rceil
// standard) and 0.981-1.092x (floor clamped) in a second call, `ok` at every test and hidden
// shape, 0.80-0.88 of SOL (bench/results/sweeps-h200-2026-12-04-session29.json). Session 29 also
// measured, then removed, the forward's CLUSTER_SCALES (0.82-1.05x, 0.96x geomean) and the
// in-kernel gather by the last tile of each run (0.75-0.80x).
// LEAN (clamped): the forward's min / max clamps, and the u pass test as uc == u; the same bits
// as LEAN 0, 6% fewer sm_90a instructions in the main kernel (2320 against 2472 at rceil; 2008
// in the standard variant). The default since session 32: 1.019x geomean at rceil clamped
// (1.014-1.022x per shape; with RSEL 1 1.011x), 0.995x at floor clamped (within the 0.8%
// the control moved between two calls), `ok` at every test and hidden shape. GATHER 1 (the
// gather launch in 16-byte chunks) too: 1.014x geomean at rceil standard (0.996-1.022x)
// (bench/results/sweeps-h200-2026-12-05-session32.json).
// RSEL: rceil scales without branches (ws::mx::rceil_from_bits_select). ncu (session 28, I1536
// rceil standard): issue slots 67% busy, L2 92%, DRAM 72% of peak. FAST_EXP 2 is the default
// since session 28 (1.003-1.022x in one call, `ok` at every test and hidden shape); RSEL 1 with
// it ran 0.986-0.997x (sm_90a then allocates 64 registers and spills 8 bytes).
// STORE_CS 2 (with QT_STAGE 1): only q_t streams with .cs (why: kernels/swiglu_quantize_fwd).
// Defaults: the staged form, QT_STAGE 1, BLOCK_M 128, STORE_CS 2. Measured on the H200
// (2026-12-01): 1.55x the first form in the same run (786 / 292 / 3327 / 550 us at rceil
// standard, 0.77-0.82 of SOL); every setting 0.75-0.82 and ok at the test, hidden and bench
// shapes (bench/results/kernels-h200-2026-12-01-session9.json). A COL_SPLIT knob (the first
// form's columnwise work over more threads) lost 33% and was removed. The first
// form stays a setting (WS_FIRST_FORM below), compiled to the code that ran on the H200.
// A ROW16 form (the rowwise halves as 16-element pairs, 64 registers instead of 80) ran
// 0.97-1.00x of these defaults (rceil standard) in session 21
// (bench/results/sweeps-h200-2026-12-03-session21.json) and was removed.
//
// SASS claims (scripts/check_sass.py): the packed e4m3 conversion on both; sm_100a's rceil scale
//  is the ue8m0 conversion.
// warpsmith:sass sm_100a: F2FP.SATFINITE.E4M3
// warpsmith:sass sm_100a rounding=rceil: F2FP.SATFINITE.E8
// warpsmith:sass sm_90a: F2FP.SATFINITE.E4M3
// The .ftz exponent and reciprocal:
// warpsmith:sass sm_90a FAST_EXP=2: F2FP.SATFINITE.E4M3 MUFU.EX2 MUFU.RCP
// warpsmith:sass sm_100a FAST_EXP=2: F2FP.SATFINITE.E4M3 MUFU.EX2 MUFU.RCP
// Registers at the 256-thread defaults (3 CTAs per SM by registers at <= 80; bc010e0 took rceil
// clamped to 91, 2 CTAs, and 0.86-0.87x on the H200, unnoticed for eight sessions):
// warpsmith:regs sm_90a: sm90_bf16_dswiglu_mxfp8_quantize_dual<=80
// warpsmith:regs sm_100a: sm90_bf16_dswiglu_mxfp8_quantize_dual<=80

#include "ws/mx_dual_tile.cuh"
#include "ws/swiglu.cuh"

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR) || \
    !defined(WS_VARIANT) || !defined(WS_VARIANT_STANDARD) || !defined(WS_VARIANT_CLAMPED)
#error "compile with the problem's parameters: -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1 -DWS_VARIANT=<0|1> -DWS_VARIANT_STANDARD=0 -DWS_VARIANT_CLAMPED=1"
#endif
#ifndef BLOCK_M
#define BLOCK_M 128
#endif
#ifndef BLOCK_I
#define BLOCK_I 64
#endif
#ifndef THREADS
#define THREADS 256
#endif
#ifndef FAST_EXP
#define FAST_EXP 2
#endif
#ifndef STORE_CS
#define STORE_CS 2
#endif
#ifndef QT_STAGE
#define QT_STAGE 1
#endif
#ifndef GROUP_I
#define GROUP_I 0
#endif
#ifndef RSEL
#define RSEL 0
#endif
#ifndef SCALE_TILES
#define SCALE_TILES 1
#endif
#ifndef GATHER
#define GATHER 1  // 1: the gather launch stores 16-byte chunks (ws::mx::ScaleGather's kWide)
#endif
#ifndef LEAN
#define LEAN 1  // 1: the clamped gradient's clamps as min / max, its pass tests folded into them
#endif
// WS_FIRST_FORM: the first form's shape (QT_STAGE 0, GROUP_I 0, BLOCK_M 64, BLOCK_I 64, THREADS
// 256; any FAST_EXP, STORE_CS): its static tile and CTA index expression, so its machine code is
// the H200-verified kernel's. Every other setting is the staged form's code: the tile in dynamic
// shared memory (the plan's smem is 0 exactly for the first form) and tile_of for the CTA order.
#define WS_FIRST_FORM                                                                    \
  (QT_STAGE == 0 && GROUP_I == 0 && BLOCK_M == 64 && BLOCK_I == 64 && THREADS == 256)

namespace {

// Two output tiles, dg and du; the knobs as ws::swiglu::Tile reads them. SCALE_TILES (why:
// kernels/swiglu_quantize_fwd): the tile's dg and du scales and scales_t blocks go whole into
// the workspace; a second launch puts them in place.
using Config = ws::swiglu::Tile<BLOCK_M, BLOCK_I, THREADS, 2, WS_ROUNDING == WS_ROUNDING_FLOOR,
                                STORE_CS, QT_STAGE != 0, GROUP_I, RSEL != 0, SCALE_TILES>;
constexpr bool kClamped = WS_VARIANT == WS_VARIANT_CLAMPED;

// SCALE_TILES' second launch: rowwise blocks [BLOCK_M][BLOCK_I / 32] of dg's and du's halves of
// the scales, colwise blocks [BLOCK_I][BLOCK_M / 32] of their halves of scales_t.
// (Without SCALE_TILES: 64 x 64 stand-ins, never run.)
constexpr int kGatherM = Config::kScaleTiles ? Config::kBlockM : 64;
constexpr int kGatherI = Config::kScaleTiles ? Config::kBlockI : 64;
using RowGather = ws::mx::ScaleGather<kGatherM, kGatherI / 32, GATHER != 0>;
using ColGather = ws::mx::ScaleGather<kGatherI, kGatherM / 32, GATHER != 0>;

using ws::bf16_hi;
using ws::bf16_lo;
using ws::Chunk;
using ws::cvt_bf16x2;

// dg and du of one element, in the order the spec writes them.
__device__ __forceinline__ void swiglu_grad(float g, float u, float da, float& dg, float& du) {
  using ws::swiglu::sigmoid;
  if constexpr (kClamped) {
#if LEAN
    const float gc = ws::swiglu::clamp_gate<true>(g);
    const float uc = ws::swiglu::clamp_up<true>(u);
    // uc == u exactly when -7 <= u <= 7 (false for NaN, whose uc is NaN): one compare instead
    // of two and their AND.
    const float z = 1.702f * gc;
    const float s = sigmoid<FAST_EXP>(z);
    du = uc == u ? da * (gc * s) : 0.0f;
    dg = g <= 7.0f ? (da * (uc + 1.0f)) * (s * (1.0f + z * (1.0f - s))) : 0.0f;
#else
    // NOTE: not ws::swiglu's clamps: with the pass tests' compares beside them here, those moved
    // the sm_90a SASS of the first form (FAST_EXP 0, rceil).
    const float gc = g > 7.0f ? 7.0f : g;                        // keeps NaN
    const float uc = u > 7.0f ? 7.0f : (u < -7.0f ? -7.0f : u);  // keeps NaN
    const float s = sigmoid<FAST_EXP>(1.702f * gc);
    const bool pass_u = u >= -7.0f && u <= 7.0f;                 // false for NaN
    const bool pass_g = g <= 7.0f;                               // false for NaN
    du = pass_u ? da * (gc * s) : 0.0f;
    dg = pass_g ? (da * (uc + 1.0f)) * (s * (1.0f + (1.702f * gc) * (1.0f - s))) : 0.0f;
#endif
  } else {
    const float s = sigmoid<FAST_EXP>(g);
    du = da * (g * s);
    dg = (da * u) * (s * (1.0f + g * (1.0f - s)));
  }
}

__device__ __forceinline__ void grad_chunk(const Chunk& g, const Chunk& u, const Chunk& da,
                                           Chunk& dg, Chunk& du) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float dg0, du0, dg1, du1;
    swiglu_grad(bf16_lo(g.w[i]), bf16_lo(u.w[i]), bf16_lo(da.w[i]), dg0, du0);
    swiglu_grad(bf16_hi(g.w[i]), bf16_hi(u.w[i]), bf16_hi(da.w[i]), dg1, du1);
    dg.w[i] = cvt_bf16x2(dg0, dg1);
    du.w[i] = cvt_bf16x2(du0, du1);
  }
}

}  // namespace

// hpre (M,2I), da (M,I) bf16 bits; q (M,2I), scales (M,2I/32); q_t (2I,M), scales_t (2I,M/32).
// CTA: one tile of I. Shared memory (dynamic but for WS_FIRST_FORM): the dg, du tiles, then
// (QT_STAGE) the staged scales.
extern "C" __global__ void __launch_bounds__(Config::kThreads)
    sm90_bf16_dswiglu_mxfp8_quantize_dual(const unsigned short* __restrict__ hpre,
                                          const unsigned short* __restrict__ da,
                                          unsigned char* __restrict__ q,
                                          unsigned char* __restrict__ scales,
                                          unsigned char* __restrict__ q_t,
                                          unsigned char* __restrict__ scales_t, int M, int I,
                                          unsigned char* __restrict__ ws_scales) {
#if WS_FIRST_FORM
  __shared__ __align__(16) unsigned short tile[2][Config::kBlockM][Config::kBlockI];  // dg, du
  unsigned char* const smem = reinterpret_cast<unsigned char*>(tile);  // unused: no stage
#else
  extern __shared__ __align__(128) unsigned char smem[];
  // tile[h][r][c]: dg (h 0) and du (h 1) in bf16, (2, BLOCK_M, BLOCK_I).
  auto tile = reinterpret_cast<unsigned short (*)[Config::kBlockM][Config::kBlockI]>(smem);
#endif
  unsigned char* st_stage = smem + Config::kTileBytes;  // (kQtRows, kRowBlocks) scales
  const int col_tiles = (I + Config::kBlockI - 1) / Config::kBlockI;
#if WS_FIRST_FORM
  const int m0 = (blockIdx.x / col_tiles) * Config::kBlockM;
  const int i0 = (blockIdx.x % col_tiles) * Config::kBlockI;
#else
  const int m_tiles = (M + Config::kBlockM - 1) / Config::kBlockM;
  int mt, it;
  Config::tile_of(blockIdx.x, m_tiles, col_tiles, mt, it);
  const int m0 = mt * Config::kBlockM;
  const int i0 = it * Config::kBlockI;
#endif
  const int tid = threadIdx.x;
  const long long two_i = 2LL * I;
  // SCALE_TILES: the workspace holds dg's rowwise blocks [tm][tk], du's, then dg's colwise
  // blocks [tk][tm], du's; this tile's first block of each part (the next half kScaleTileBytes *
  // tiles further on).
  unsigned char* row_tile = nullptr;
  unsigned char* col_tile = nullptr;
  long long part = 0;
  if constexpr (Config::kScaleTiles) {
    const long long tiles_m = (M + Config::kBlockM - 1) / Config::kBlockM;
    const long long tm = m0 / Config::kBlockM, tk = i0 / Config::kBlockI;
    part = tiles_m * col_tiles * Config::kScaleTileBytes;
    row_tile = ws_scales + (tm * col_tiles + tk) * Config::kScaleTileBytes;
    col_tile = ws_scales + 2 * part + (tk * tiles_m + tm) * Config::kScaleTileBytes;
  } else {
    (void)ws_scales, (void)row_tile, (void)col_tile, (void)part;
  }

  // Loads: chunk k -> tile row k / kRowChunks, columns 8 (k % kRowChunks) .. +7 of I; a row block
  // of 32 columns is a lane quad; columns are in or out in whole 32-blocks (I % 32 == 0).
  Chunk g[Config::kChunksPerThread], u[Config::kChunksPerThread], d[Config::kChunksPerThread];
#pragma unroll
  for (int c = 0; c < Config::kChunksPerThread; ++c) {
    const int k = c * Config::kThreads + tid;
    const int r = k / Config::kRowChunks, col = (k % Config::kRowChunks) * 8;
    const bool in = k < Config::kTileChunks && m0 + r < M && i0 + col < I;
    const unsigned short* row = hpre + static_cast<long long>(m0 + r) * two_i + i0 + col;
    g[c] = in ? ws::load_global16(row) : Chunk{{0u, 0u, 0u, 0u}};
    u[c] = in ? ws::load_global16(row + I) : Chunk{{0u, 0u, 0u, 0u}};
    d[c] = in ? ws::load_global16(da + static_cast<long long>(m0 + r) * I + i0 + col)
              : Chunk{{0u, 0u, 0u, 0u}};
  }
#pragma unroll
  for (int c = 0; c < Config::kChunksPerThread; ++c) {
    const int k = c * Config::kThreads + tid;
    const int r = k / Config::kRowChunks, col = (k % Config::kRowChunks) * 8;
    const bool in = k < Config::kTileChunks && m0 + r < M && i0 + col < I;
    Chunk grad[2];  // dg, du
    grad_chunk(g[c], u[c], d[c], grad[0], grad[1]);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      unsigned lo, hi;
      const unsigned s = ws::mx::quantize_quad<Config::kFloor, Config::kSelect>(grad[h], lo, hi);
      if (in) {
        const long long e = static_cast<long long>(m0 + r) * two_i + h * I + i0 + col;
        ws::store_global8<Config::kStoreCsQ>(q + e, lo, hi);
        if ((tid & 3) == 0) {
          if constexpr (Config::kScaleTiles) {  // the tile's block [BLOCK_M][BLOCK_I / 32]
            unsigned char* dst =
                row_tile + h * part + r * (Config::kBlockI / 32) + col / 32;
            *dst = static_cast<unsigned char>(s);
          } else {
            scales[e >> 5] = static_cast<unsigned char>(s);  // (M,2I/32): e/32
          }
        }
      }
      if (k < Config::kTileChunks) {
        *reinterpret_cast<uint4*>(&tile[h][r][col]) =
            make_uint4(grad[h].w[0], grad[h].w[1], grad[h].w[2], grad[h].w[3]);
      }
    }
  }
  __syncthreads();

  // Columnwise: task -> column pair p (fastest across lanes), 32-row block rb, then dg/du.
  const int m_blocks = M / 32;
  constexpr int kPairs = Config::kBlockI / 2;
  constexpr int kHalfTasks = Config::kColTasks / 2;
  if constexpr (!Config::kStage) {
#pragma unroll
    for (int t = 0; t < Config::kTasksPerThread; ++t) {
      const int task = t * Config::kThreads + tid;
      if (task >= Config::kColTasks) break;
      const int h = task / kHalfTasks, rest = task % kHalfTasks;
      const int p = rest % kPairs, rb = rest / kPairs;
      const int col = i0 + 2 * p, mb = m0 / 32 + rb;
      if (col >= I || mb >= m_blocks) continue;
      unsigned v[32];
      Config::load_column_pair(tile[h], rb, p, v);
      const long long out_col = static_cast<long long>(h) * I + col;  // row of q_t
      Config::store_column_pair(v, out_col, mb, M, m_blocks, q_t, scales_t);
    }
  } else {
    // Quantize into registers (tasks past the tile's valid rows / columns quantize garbage-free
    // zeros or stale values that are never stored), then stage over the dead tile.
    unsigned qa[Config::kTasksPerThread][8], qb[Config::kTasksPerThread][8];
#pragma unroll
    for (int t = 0; t < Config::kTasksPerThread; ++t) {
      const int task = t * Config::kThreads + tid;
      if (task < Config::kColTasks) {
        const int h = task / kHalfTasks, rest = task % kHalfTasks;
        const int p = rest % kPairs, rb = rest / kPairs;
        unsigned v[32];
        Config::load_column_pair(tile[h], rb, p, v);
        unsigned s_lo, s_hi;
        ws::mx::quantize_column_pair_regs<Config::kFloor, Config::kSelect>(v, qa[t], qb[t], s_lo,
                                                                           s_hi);
        const int k = h * Config::kBlockI + 2 * p;  // staged q_t row of column 2p
        st_stage[k * Config::kRowBlocks + rb] = static_cast<unsigned char>(s_lo);
        st_stage[(k + 1) * Config::kRowBlocks + rb] = static_cast<unsigned char>(s_hi);
      }
    }
    __syncthreads();  // every read of the dhpre tile is done: stage q_t over it
#pragma unroll
    for (int t = 0; t < Config::kTasksPerThread; ++t) {
      const int task = t * Config::kThreads + tid;
      if (task < Config::kColTasks) {
        const int h = task / kHalfTasks, rest = task % kHalfTasks;
        const int p = rest % kPairs, rb = rest / kPairs;
        const int k = h * Config::kBlockI + 2 * p;
        const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(smem));
        Config::stage_column_pair(base, k, rb, qa[t], qb[t]);
      }
    }
    __syncthreads();
    // q_t: staged row k is q_t row (k / BLOCK_I) * I + i0 + k % BLOCK_I, bytes m0 .. m0+BLOCK_M.
    const int rows_valid = min(Config::kBlockM, M - m0);  // a multiple of 32
    const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(smem));
#pragma unroll
    for (int t = 0; t < Config::kQtStoresPerThread; ++t) {
      const int ci = t * Config::kThreads + tid;
      const int k = ci / Config::kQtChunks, ch = ci % Config::kQtChunks;
      const int c = k % Config::kBlockI, h = k / Config::kBlockI;
      if (ci < Config::kQtStores && i0 + c < I && ch * 16 < rows_valid) {
        const Chunk v = ws::load_shared16(base + Config::qt_offset(k, ch));
        const long long out_row = static_cast<long long>(h) * I + i0 + c;
        ws::store_global16<Config::kStoreCsQt>(q_t + out_row * M + m0 + ch * 16, v);
      }
    }
    if constexpr (Config::kScaleTiles) {
      // The staged scales_t are dg's colwise block, then du's: 16-byte copies.
      constexpr int kChunks = Config::kScaleTileBytes / 16;
      for (int c = tid; c < 2 * kChunks; c += Config::kThreads) {
        const Chunk v = ws::load_shared16(
            static_cast<unsigned>(__cvta_generic_to_shared(st_stage)) + 16 * c);
        unsigned char* dst = col_tile + (c / kChunks) * part + 16 * (c % kChunks);
        *reinterpret_cast<uint4*>(dst) = make_uint4(v.w[0], v.w[1], v.w[2], v.w[3]);
      }
      if (m0 + Config::kBlockM > M || i0 + Config::kBlockI > I) {  // ragged: pad scales
        Config::zero_pad_row_scales(row_tile, part, M - m0, I - i0);
      }
      return;
    }
    // scales_t: one thread per staged row, BLOCK_M / 32 bytes (one 32-bit store when aligned).
    const int blocks_valid = rows_valid / 32;
    for (int k = tid; k < Config::kQtRows; k += Config::kThreads) {
      const int c = k % Config::kBlockI, h = k / Config::kBlockI;
      if (i0 + c >= I) continue;
      const long long out_row = static_cast<long long>(h) * I + i0 + c;
      unsigned char* dst = scales_t + out_row * m_blocks + m0 / 32;
      const unsigned char* src = st_stage + k * Config::kRowBlocks;
      Config::store_scale_row(dst, src, blocks_valid);
    }
  }
}

// SCALE_TILES' second launch (pdl): the workspace's blocks into place, one CTA per run of 32
// tiles: dg's and du's halves of the scales rows (I / 32 bytes of each 2I / 32), then dg's and
// du's rows of scales_t.
extern "C" __global__ void __launch_bounds__(RowGather::kThreads)
    sm90_dswiglu_mxfp8_scales(const unsigned char* __restrict__ ws,
                              unsigned char* __restrict__ scales,
                              unsigned char* __restrict__ scales_t, int M, int I) {
  if constexpr (Config::kScaleTiles) {
    static_assert(RowGather::kSmemBytes == ColGather::kSmemBytes, "one shared-memory size");
    extern __shared__ __align__(16) unsigned char smem[];
    ws::griddep_wait();  // the quantize launch's workspace
    const long long tiles_m = (M + Config::kBlockM - 1) / Config::kBlockM;
    const long long tiles_i = (I + Config::kBlockI - 1) / Config::kBlockI;
    const long long part = tiles_m * tiles_i * Config::kScaleTileBytes;
    const long long row_ctas = tiles_m * RowGather::runs(tiles_i);
    const long long col_ctas = tiles_i * ColGather::runs(tiles_m);
    long long b = blockIdx.x;
    if (b < 2 * row_ctas) {
      const long long h = b / row_ctas;
      RowGather::run_cta(ws + h * part, scales + h * (I / 32), M, tiles_i, 2LL * I / 32, I / 32,
                         b % row_ctas, smem);
    } else {
      b -= 2 * row_ctas;
      const long long h = b / col_ctas;
      ColGather::run_cta(ws + (2 + h) * part, scales_t + h * I * (M / 32), I, tiles_m, M / 32,
                         M / 32, b % col_ctas, smem);
    }
  } else {
    (void)ws, (void)scales, (void)scales_t, (void)M, (void)I;
  }
}

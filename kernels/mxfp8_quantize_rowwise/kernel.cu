/* warpsmith:plan
{ "knobs":  { "CHUNKS": [2, 4, 3, 8, 1], "THREADS": [512, 256, 128],
              "LOAD_HINT": [0, 3, 4], "STORE_CS": [1, 0], "SCALE_STORE": [0, 2, 1],
              "RCEIL_SELECT": [0, 1], "LANE_PAIRS": [0, 1],
              "CTAS_PER_SM": [1048576, 4, 3, 2, 16, 8],
              "SMALL_THREADS": [128, 0, 256], "SMALL_ELEMS": [67108864, 33554432, 134217728],
              "SMALL_CHUNKS": [4, 2, 8], "SMALL_PAIRS": [1, 0], "SMALL_MIN_CTAS": [12, 0, 9, 6],
              "SMALL_STORE_CS": [0, 1], "MIN_CTAS": [0, 9, 12, 6] },
  "launch": [ { "kernel": "sm90_bf16_mxfp8_quantize_rowwise",
                "when":  "SMALL_THREADS == 0 || M * K > SMALL_ELEMS",
                "grid":  ["min(ceil_div(M * K, 8 * CHUNKS * THREADS), num_sms * CTAS_PER_SM)"],
                "block": ["THREADS"], "smem": "0",
                "args":  ["x", "q", "scales", "M", "K"] },
              { "kernel": "sm90_bf16_mxfp8_quantize_rowwise_small",
                "when":  "SMALL_THREADS != 0 && M * K <= SMALL_ELEMS",
                "grid":  ["min(ceil_div(M * K, 8 * SMALL_CHUNKS * SMALL_THREADS), num_sms * CTAS_PER_SM)"],
                "block": ["SMALL_THREADS"], "smem": "0",
                "args":  ["x", "q", "scales", "M", "K"] } ] }
*/
// MXFP8 rowwise quantization, hand-tuned: BF16 x [M,K] -> E4M3 q [M,K] + E8M0 scales [M,K/32].
//
// Design (memory-bound: 3.03 bytes per element, no reuse):
//  - K % 32 == 0, so [M,K] is a flat run of M*K/32 independent 32-element blocks, and scales
//    [M,K/32] is that run's block index. Rows play no part.
//  - A "chunk" is 16 bytes of x (8 bf16); 4 consecutive lanes hold one 32-element block. A warp
//    tile is CHUNKS loads of 32 lanes x 16 B (each load instruction is 512 contiguous bytes), all
//    issued before the first use, giving 8*CHUNKS blocks per warp tile.
//  - amax: integer max of |bf16| bit patterns (monotone for non-NaN; NaN sorts above +Inf), two
//    xor-shuffles across the 4 lanes of a block.
//  - q: fp32 multiply by 2^(127-S) (non-FTZ: 2^-127 is subnormal), then the packed
//    cvt.rn.satfinite.e4m3x2.f32 (RNE, saturating; NaN blocks are overwritten with 0x7F), 8-byte
//    stores per lane (256 contiguous bytes per warp store).
//  - scales: each lane gathers one block's scale and a warp tile's 16 scale bytes leave as one
//    store (SCALE_STORE 0; 2 gathers the CTA's in shared memory first).
//  - sm_100a: the rceil scale comes from cvt.rp.satfinite.ue8m0x2.f32 (round up to a power of two;
//    Inf -> 0xFE under satfinite); sm_90a computes it from the bits of d.
//
// Knobs: CHUNKS (16-byte loads in flight per lane), THREADS (CTA size), LOAD_HINT (load
// qualifiers), STORE_CS (st.global.cs for q), SCALE_STORE (scale store pattern: 0, the
// default, stores a warp tile's 16 bytes, half a sector; 2 gathers the CTA's 256 scale bytes in
// shared memory and stores them as 16-byte pieces, whole sectors, after a CTA barrier. On an
// H100, 2 ran 1.007x (floor) / 1.004x (rceil) over 0 in session 38 and was the default from
// then, but on the H200 (session 43, three sweeps, `ok` at every test and hidden shape;
// bench/results/sweeps-h200-2026-12-06-session43.json) 0 runs 1.04x (floor) and 1.08x (rceil)
// geomean over 2, 1.02-1.05x at 16384x2880: 0 is the default again; NOTES.md),
// SMALL_ELEMS and the SMALL_ knobs (the plan's second launch, up to SMALL_ELEMS elements, 64M
// by default, which holds 16384x2880 and every test and hidden shape but one, is a kernel of its
// own: SMALL_THREADS, SMALL_CHUNKS, SMALL_PAIRS, SMALL_MIN_CTAS and SMALL_STORE_CS are its
// THREADS, CHUNKS, LANE_PAIRS, MIN_CTAS and STORE_CS; SMALL_THREADS=0, one kernel everywhere.
// Its default, 128 threads x 4 chunks in lane pairs at 12 CTAs per SM with plain q stores, the
// Triton peer's occupancy, ran 1.021x (floor) / 1.023x (rceil) over the large form at 16384x2880
// on the H200 in session 48 and lost up to 0.9% at the large shapes; as its own kernel in
// session 49, 1.018x / 1.017x (floor / rceil) over the earlier small launch, 0.966-0.969 of the
// probe at 16384x2880 and 0.99x Triton floor there; NOTES.md), RCEIL_SELECT
// (sm_90a's rceil scale from selects, not branches), LANE_PAIRS (2 lanes per block with 16
// adjacent elements each: one amax shuffle, 16-byte q stores; the Triton peer's layout),
// CTAS_PER_SM (grid cap: uncapped = one tile per warp; a cap that fits on an SM = one resident
// wave with the next tile prefetched; a larger cap = several grid-striding waves), MIN_CTAS
// (__launch_bounds__'s CTAs per SM outside that one-wave grid: with THREADS=128 CHUNKS=4
// LANE_PAIRS=1 MIN_CTAS=12 the Triton peer's occupancy; session 45, NOTES.md). Measured on the
// H200 (real evaluator, read-based L2 flush, median of 200; rceil; SOL fraction against the 2 GiB
// copy): CHUNKS=2 x THREADS=512 uncapped is the default: 1.029 / 1.017 / 1.021 on 131072x7168 /
// 131072x2048 / 65536x5120, 0.933 (35.9 us) on 16384x2880. THREADS=256 or 128 give 35.5-35.6 us on
// the small shape but lose 0.5-0.8% on the large ones (all within run-to-run noise, ~0.5 us on the
// small shape). On an H100 in session 39 the smaller CTAs gained at 16384x2880 in the same
// calls: THREADS=256 1.016x (floor) / 1.020x (rceil), SMALL_THREADS=256 0.994x / 1.019x, with
// 32-register occupancy 1.007x / 1.023x; hence 256-thread CTAs of the one kernel up to 64M
// elements from then to session 48 (bench/results/sweeps-h100-2026-12-05-session39.json).
// 16-byte q stores
// (pairs of lanes swapping halves) lost 1-2% everywhere. One wave with each CTA owning a
// CONTIGUOUS range of tiles lost 8-30% (528 far-apart streams, likely poor
// DRAM locality); the grid-striding one wave (kOneWave, CTAS_PER_SM=4) loses 4-9% at every shape
// (2026-12-01). LOAD_HINT: plain ld.global.nc (0) or ld.global (3) reach copy speed; any
// L1::no_allocate / L1::evict_first form (1, 2, 5) loses ~9%; 6 (an L2 evict_first cache policy on
// the reads) loses 7-12% (the plan offers the tuner 0, 3 and 4 only; the others stay in
// ws/memory.cuh); SCALE_STORE=1 is 0.5% slower; q stores under an L2 evict_last policy
// (tried, removed) were neutral on the large shapes and 2-4% slower on the small one (all
// 2026-12-01). CHUNKS=1 leaves too few bytes in flight. Details:
// kernels/mxfp8_quantize_rowwise/NOTES.md.
//
// Evaluate: build/warpsmith eval mxfp8_quantize_rowwise kernels/mxfp8_quantize_rowwise/kernel.cu
//   [--set rounding=floor] [--knob CHUNKS=4 ...]; benchmark against the peers: bench/run.sh.
//
// SASS claims (scripts/check_sass.py): the packed e4m3 conversion on both; sm_100a's rceil scale
// is the ue8m0 conversion (floor needs none).
// warpsmith:sass sm_100a: F2FP.SATFINITE.E4M3
// warpsmith:sass sm_100a rounding=rceil: F2FP.SATFINITE.E8
// warpsmith:sass sm_90a: F2FP.SATFINITE.E4M3
// Registers (the launch bounds cap them; a spill would be the cost): at sm_90a 4 CTAs of 512
// threads per SM need <= 32, the small launch's 12 CTAs of 128 threads <= 40:
// warpsmith:regs sm_90a: sm90_bf16_mxfp8_quantize_rowwise<=32
// warpsmith:regs sm_90a: sm90_bf16_mxfp8_quantize_rowwise_small<=40
// warpsmith:regs sm_100a: sm90_bf16_mxfp8_quantize_rowwise<=48
// warpsmith:regs sm_100a: sm90_bf16_mxfp8_quantize_rowwise_small<=40

#include "ws/mx_block.cuh"

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR)
#error "compile with the problem's parameters: -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1"
#endif
#ifndef CHUNKS
#define CHUNKS 2
#endif
#ifndef THREADS
#define THREADS 512
#endif
#ifndef LOAD_HINT
#define LOAD_HINT 0
#endif
#ifndef STORE_CS
#define STORE_CS 1
#endif
#ifndef CTAS_PER_SM
#define CTAS_PER_SM 1048576  // grid cap per SM; one prefetching wave if it fits, see the kernel
#endif
#ifndef MIN_CTAS
#define MIN_CTAS 0  // __launch_bounds__'s CTAs per SM outside the one-wave grid (0: Config's rule)
#endif
#ifndef LANE_PAIRS
#define LANE_PAIRS 0  // 1 (and CHUNKS even): a lane holds 2 adjacent chunks, 2 lanes per block
#endif
#ifndef RCEIL_SELECT
#define RCEIL_SELECT 0  // 1: sm_90a's rceil scale without branches (ws::mx::rceil_from_bits_select)
#endif
#ifndef SCALE_STORE
#define SCALE_STORE 0  // 0: per warp tile; 2: one gathered store per CTA; 1: block leaders
#endif
#ifndef SMALL_THREADS
#define SMALL_THREADS 128  // nonzero: the plan's small launch, CTAs this size up to SMALL_ELEMS
#endif
#ifndef SMALL_CHUNKS
#define SMALL_CHUNKS 4  // the small launch's CHUNKS
#endif
#ifndef SMALL_PAIRS
#define SMALL_PAIRS 1  // the small launch's LANE_PAIRS
#endif
#ifndef SMALL_MIN_CTAS
#define SMALL_MIN_CTAS 12  // the small launch's MIN_CTAS
#endif
#ifndef SMALL_STORE_CS
#define SMALL_STORE_CS 0  // the small launch's STORE_CS
#endif

namespace {

// One kernel's compile-time form. The plan's large launch uses THREADS, CHUNKS, LANE_PAIRS,
// MIN_CTAS and STORE_CS; its small launch the SMALL_ forms of the same knobs, as a kernel of its
// own, so that each form's SASS is the one measured on its own.
template <int kThreads_, int kChunks_, bool kPairs_, int kMinCtas_, bool kStoreCs_>
struct Config {
  static constexpr int kThreads = kThreads_;
  static constexpr int kWarps = kThreads / 32;
  static constexpr int kChunks = kChunks_;                   // 16-byte loads in flight per lane
  static constexpr int kBlockElems = 32;                     // elements per E8M0 scale
  static constexpr int kChunkElems = 8;                      // bf16 per 16-byte chunk
  static constexpr int kChunksPerBlock = kBlockElems / kChunkElems;  // 4
  static constexpr int kTileChunks = 32 * kChunks;                  // per warp tile
  static constexpr int kTileBlocks = kTileChunks / kChunksPerBlock;  // 8 * kChunks
  static constexpr int kScaleRounds = (kTileBlocks + 31) / 32;
  static constexpr bool kFloor = WS_ROUNDING == WS_ROUNDING_FLOOR;
  static constexpr ws::LoadHint kLoadHint = static_cast<ws::LoadHint>(LOAD_HINT);  // same values
  static constexpr bool kStoreCs = kStoreCs_;
  // A lane's loads u and u+1 (u even) are adjacent chunks: one 16-byte q store, one amax shuffle.
  // Pairs need an even chunk count; with an odd one they fall back to quads (every knob
  // combination stays a valid kernel for the tuner).
  static constexpr bool kLanePairs = kPairs_ && kChunks % 2 == 0;
  // CTAS_PER_SM CTAs fit on an SM at once (2048 threads): one wave, next tile prefetched.
  static constexpr bool kOneWave = static_cast<long long>(CTAS_PER_SM) * kThreads <= 2048;
  // CTAs per SM for __launch_bounds__. Pairs hold 16 more bytes per lane for the store, and
  // are held to full occupancy. The default quads take 40 registers (3/4 occupancy) since
  // SCALE_STORE 2; a cap at 32 ran 0.998-1.005x on an H100 in session 39, so it stays uncapped.
  // kMinCtas_ (0: as above) sets it outright, e.g. 12 CTAs of 128 threads with 4 chunks (40
  // registers), the Triton peer's occupancy.
  static constexpr int kMinBlocks =
      kOneWave ? CTAS_PER_SM
      : kMinCtas_ != 0 ? (kMinCtas_ < 2048 / kThreads ? kMinCtas_ : 2048 / kThreads)
                       : (kLanePairs && kChunks == 2 ? 2048 / kThreads : 1);
  static constexpr int kCtaBlocks = kWarps * kTileBlocks;  // scale bytes per CTA
  // SCALE_STORE 2: the CTA's scales meet in shared memory and leave as 16-byte stores (whole
  // sectors: 256 bytes per CTA at the defaults, against 16 bytes, half a sector, per warp). It
  // needs every warp at one barrier once, so only the uncapped grid (one tile per warp) uses it,
  // and only where a CTA's scales are whole 16-byte pieces.
  static constexpr bool kCtaScales =
      SCALE_STORE == 2 && CTAS_PER_SM == 1048576 && kCtaBlocks % 16 == 0;
  static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps");
  static_assert(kChunks >= 1 && kChunks <= 16, "registers");
  static_assert(kChunksPerBlock == 4, "a block is 4 chunks: 4 lanes, or 2 with LANE_PAIRS");
};
static_assert(CTAS_PER_SM >= 1, "grid cap");
using LargeConfig = Config<THREADS, CHUNKS, LANE_PAIRS != 0, MIN_CTAS, STORE_CS != 0>;
// SMALL_THREADS 0 (no small launch): the small kernel is the large form, so the module's
// kernels are the same for every knob setting.
constexpr bool kSmall = SMALL_THREADS != 0;
using SmallConfig =
    Config<kSmall ? SMALL_THREADS : THREADS, kSmall ? SMALL_CHUNKS : CHUNKS,
           kSmall ? SMALL_PAIRS != 0 : LANE_PAIRS != 0, kSmall ? SMALL_MIN_CTAS : MIN_CTAS,
           kSmall ? SMALL_STORE_CS != 0 : STORE_CS != 0>;

// Warps per CTA: the compiled size, or blockDim's where the plan has a small launch. (Both
// kernels read blockDim then: the forms measured on the H200 did, and their SASS is kept.)
template <class C>
__device__ __forceinline__ int cta_warps() {
  if constexpr (!kSmall) {
    return C::kWarps;
  } else {
    return static_cast<int>(blockDim.x >> 5);
  }
}

using ws::Chunk;
using ws::kFullMask;
using ws::mx::kBf16Inf;
using ws::mx::kE4M3NaNx4;
using ws::mx::kE8M0NaN;

__device__ __forceinline__ void store_scale(unsigned char* p, unsigned s) {
  asm volatile("st.global.u8 [%0], %1;" ::"l"(p), "r"(s) : "memory");
}

// ---- one warp tile: kChunks loads of 32 lanes x 16 B, 8*kChunks blocks -------------------------

// The chunk load u of a lane reads; chunk0 = tile * kTileChunks + lane. Quads: load u is 32
// consecutive chunks, one per lane. Pairs: loads 2p and 2p+1 are 64 consecutive chunks, lane l
// holding chunks 2l and 2l+1 of them.
template <class C>
__device__ __forceinline__ long long chunk_at(long long chunk0, int u, int lane) {
  if constexpr (C::kLanePairs) {
    return chunk0 + lane + (u >> 1) * 64 + (u & 1);
  } else {
    return chunk0 + u * 32;
  }
}

// Issues the tile's loads (all before any use). Chunks past the end read as zeros: K % 32 == 0
// makes a whole block (4 lanes, or 2 with pairs) in or out together.
template <class C>
__device__ __forceinline__ void load_tile(Chunk (&c)[C::kChunks], const Chunk* x_chunks,
                                          long long chunk0, long long num_chunks, int lane) {
#pragma unroll
  for (int u = 0; u < C::kChunks; ++u) {
    const long long ci = chunk_at<C>(chunk0, u, lane);
    if (ci < num_chunks) {
      c[u] = ws::load_global16<C::kLoadHint>(x_chunks + ci);
    } else {
      c[u] = Chunk{{0u, 0u, 0u, 0u}};
    }
  }
}

// The tile's scales as coalesced byte stores: scale[v] of lane l is the scale of block
// v * (32 / kLanesPerBlock) + l / kLanesPerBlock of the tile (kGroups loads or pairs of loads,
// each covering 32 / kLanesPerBlock blocks). Lane l of round r writes block g = 32r + l, which
// group g / (32 / kLanesPerBlock) holds in lane kLanesPerBlock * (g % (32 / kLanesPerBlock)): the
// source lane depends on l only, so one shuffle per group suffices.
// kCtaScales: the same bytes go to the CTA's shared array (cta_scales), warp w's at
// w * kTileBlocks, for store_cta_scales.
template <class C, int kGroups, int kLanesPerBlock>
__device__ __forceinline__ void store_tile_scales(const unsigned (&scale)[kGroups],
                                                  unsigned char* scales, long long tile,
                                                  long long num_blocks, int lane,
                                                  unsigned char* cta_scales) {
  constexpr int kBlocksPerGroup = 32 / kLanesPerBlock;
  unsigned gathered[kGroups];
#pragma unroll
  for (int v = 0; v < kGroups; ++v) {
    gathered[v] = __shfl_sync(kFullMask, scale[v], (lane % kBlocksPerGroup) * kLanesPerBlock);
  }
#pragma unroll
  for (int r = 0; r < C::kScaleRounds; ++r) {
    const int g = r * 32 + lane;
    unsigned s = 0;
#pragma unroll
    for (int v = 0; v < kGroups; ++v) {
      if (v == g / kBlocksPerGroup) s = gathered[v];
    }
    if constexpr (C::kCtaScales) {
      if (g < C::kTileBlocks) cta_scales[(threadIdx.x >> 5) * C::kTileBlocks + g] = s;
    } else {
      const long long bi = tile * C::kTileBlocks + g;
      if (g < C::kTileBlocks && bi < num_blocks) store_scale(scales + bi, s);
    }
  }
}

// kCtaScales, after the CTA's barrier: its scale bytes (blocks b0 ..) as 16-byte stores, one per
// thread of the first warps; a piece that crosses num_blocks goes byte by byte.
template <class C>
__device__ __forceinline__ void store_cta_scales(const unsigned char* cta_scales,
                                                 unsigned char* scales, long long b0,
                                                 long long num_blocks) {
  const int cta_blocks = cta_warps<C>() * C::kTileBlocks;
  for (int i = threadIdx.x; i < cta_blocks / 16; i += C::kThreads) {
    const long long bi = b0 + 16LL * i;
    if (bi + 16 <= num_blocks) {
      const uint4 v = reinterpret_cast<const uint4*>(cta_scales)[i];
      ws::store_global16<false>(scales + bi, v.x, v.y, v.z, v.w);
    } else {
      for (int j = 0; j < 16 && bi + j < num_blocks; ++j) {
        store_scale(scales + bi + j, cta_scales[16 * i + j]);
      }
    }
  }
}

// amax, scales and q of one loaded warp tile, 4 lanes per block; chunk0 = tile * kTileChunks +
// lane.
template <class C>
__device__ __forceinline__ void quantize_tile_quads(const Chunk (&c)[C::kChunks],
                                                    unsigned char* q, unsigned char* scales,
                                                    long long tile, long long chunk0,
                                                    long long num_chunks, int lane,
                                                    unsigned char* cta_scales) {
  const long long num_blocks = num_chunks / C::kChunksPerBlock;
  unsigned scale[C::kChunks];  // block (tile, u, lane/4)'s scale, same in its 4 lanes
#pragma unroll
  for (int u = 0; u < C::kChunks; ++u) {
    // amax as bf16 bits: |x| is x & 0x7FFF; integer order = magnitude order, NaN above Inf.
    const unsigned amax = ws::mx::amax_quad(c[u]);

    // NaN always, and Inf under floor, give the NaN scale and all-NaN q. (Written out here and
    // in quantize_tile_pairs: a shared helper moved this path's verified sm_100a SASS.)
    const bool special = C::kFloor ? amax >= kBf16Inf : amax > kBf16Inf;
    const unsigned s = special ? kE8M0NaN
                               : (C::kFloor ? ws::mx::floor_scale(amax)
                                            : ws::mx::rceil_scale<RCEIL_SELECT != 0>(amax));
    scale[u] = s;
    unsigned lo, hi;
    ws::mx::quantize_bf16x8(c[u], ws::mx::scale_reciprocal(special ? 0u : s), lo, hi);
    if (special) lo = hi = kE4M3NaNx4;
    const long long ci = chunk_at<C>(chunk0, u, lane);
    if (ci < num_chunks) {
      ws::store_global8<C::kStoreCs>(q + ci * C::kChunkElems, lo, hi);
    }
#if SCALE_STORE == 1
    // The first lane of each block stores its scale: 8 bytes per warp store, no gather.
    if ((lane & 3) == 0 && ci < num_chunks) store_scale(scales + ci / 4, s);
#endif
  }
#if SCALE_STORE != 1
  store_tile_scales<C, C::kChunks, 4>(scale, scales, tile, num_blocks, lane, cta_scales);
#endif
}

// The same with 2 lanes per block (LANE_PAIRS=1): loads 2p and 2p+1 give a lane 16 adjacent
// elements, half a block, so one xor-shuffle completes the amax and q leaves as one 16-byte store
// (512 contiguous bytes per warp store); pair p of the tile holds blocks 16p .. 16p+15.
template <class C, int kPairs>
__device__ __forceinline__ void quantize_tile_pairs(const Chunk (&c)[C::kChunks],
                                                    unsigned char* q, unsigned char* scales,
                                                    long long tile, long long chunk0,
                                                    long long num_chunks, int lane,
                                                    unsigned char* cta_scales) {
  const long long num_blocks = num_chunks / C::kChunksPerBlock;
  unsigned scale[kPairs];  // block (tile, p, lane/2)'s scale, same in its 2 lanes
#pragma unroll
  for (int p = 0; p < kPairs; ++p) {
    unsigned amax = max(ws::mx::amax_bf16x8(c[2 * p]), ws::mx::amax_bf16x8(c[2 * p + 1]));
    amax = max(amax, __shfl_xor_sync(kFullMask, amax, 1));
    const bool special = C::kFloor ? amax >= kBf16Inf : amax > kBf16Inf;
    const unsigned s = special ? kE8M0NaN
                               : (C::kFloor ? ws::mx::floor_scale(amax)
                                            : ws::mx::rceil_scale<RCEIL_SELECT != 0>(amax));
    scale[p] = s;
    const float r = ws::mx::scale_reciprocal(special ? 0u : s);
    unsigned w[4];
    ws::mx::quantize_bf16x8(c[2 * p], r, w[0], w[1]);
    ws::mx::quantize_bf16x8(c[2 * p + 1], r, w[2], w[3]);
    if (special) w[0] = w[1] = w[2] = w[3] = kE4M3NaNx4;
    const long long ci = chunk_at<C>(chunk0, 2 * p, lane);  // even: the store is 16-byte aligned
    if (ci < num_chunks) {
      ws::store_global16<C::kStoreCs>(q + ci * C::kChunkElems, w[0], w[1], w[2], w[3]);
    }
#if SCALE_STORE == 1
    if ((lane & 1) == 0 && ci < num_chunks) store_scale(scales + ci / 4, s);
#endif
  }
#if SCALE_STORE != 1
  store_tile_scales<C, kPairs, 2>(scale, scales, tile, num_blocks, lane, cta_scales);
#endif
}

template <class C>
__device__ __forceinline__ void quantize_tile(const Chunk (&c)[C::kChunks], unsigned char* q,
                                              unsigned char* scales, long long tile,
                                              long long chunk0, long long num_chunks, int lane,
                                              unsigned char* cta_scales = nullptr) {
  if constexpr (C::kLanePairs) {
    quantize_tile_pairs<C, C::kChunks / 2>(c, q, scales, tile, chunk0, num_chunks, lane,
                                           cta_scales);
  } else {
    quantize_tile_quads<C>(c, q, scales, tile, chunk0, num_chunks, lane, cta_scales);
  }
}

// x (M,K) bf16 bits, q (M,K) e4m3, scales (M,K/32) e8m0. Grid-stride over warp tiles, so any grid
// size is correct; at any moment the whole GPU works on one compact window of x.
//  Uncapped (CTAS_PER_SM = 1048576): one CTA per kWarps tiles; each warp does one tile and the
//    hardware refills SMs as CTAs exit.
//  kOneWave: num_sms * CTAS_PER_SM CTAs, all resident at once (__launch_bounds__ makes them fit);
//    each warp strides over ~T/(G*kWarps) tiles (balanced to one tile), issuing the next tile's
//    loads before it quantizes the current one.
//  Otherwise (a cap above residency): several waves of grid-striding CTAs, no prefetch.
template <class C>
__device__ __forceinline__ void quantize_rowwise(const unsigned short* __restrict__ x,
                                                 unsigned char* __restrict__ q,
                                                 unsigned char* __restrict__ scales, int M,
                                                 int K) {
  const long long num_chunks = static_cast<long long>(M) * K / C::kChunkElems;
  const long long num_tiles = (num_chunks + C::kTileChunks - 1) / C::kTileChunks;
  const int lane = threadIdx.x & 31;
  const Chunk* x_chunks = reinterpret_cast<const Chunk*>(x);  // (M*K/8)
  const long long stride = static_cast<long long>(gridDim.x) * cta_warps<C>();
  long long tile = static_cast<long long>(blockIdx.x) * cta_warps<C>() + (threadIdx.x >> 5);

  if constexpr (C::kCtaScales) {
    // One tile per warp (the uncapped grid), then the CTA's scales in whole sectors.
    __shared__ __align__(16) unsigned char cta_scales[C::kCtaBlocks];
    if (tile < num_tiles) {
      const long long chunk0 = tile * C::kTileChunks + lane;
      Chunk c[C::kChunks];  // (kChunks) x 16 B
      load_tile<C>(c, x_chunks, chunk0, num_chunks, lane);
      quantize_tile<C>(c, q, scales, tile, chunk0, num_chunks, lane, cta_scales);
    }
    __syncthreads();
    store_cta_scales<C>(cta_scales, scales,
                        static_cast<long long>(blockIdx.x) * cta_warps<C>() * C::kTileBlocks,
                        num_chunks / C::kChunksPerBlock);
  } else if constexpr (!C::kOneWave) {
    for (; tile < num_tiles; tile += stride) {
      const long long chunk0 = tile * C::kTileChunks + lane;
      Chunk c[C::kChunks];  // (kChunks) x 16 B
      load_tile<C>(c, x_chunks, chunk0, num_chunks, lane);
      quantize_tile<C>(c, q, scales, tile, chunk0, num_chunks, lane);
    }
  } else {
    Chunk next[C::kChunks];  // (kChunks) x 16 B, in flight while the current tile is quantized
    if (tile < num_tiles) {
      load_tile<C>(next, x_chunks, tile * C::kTileChunks + lane, num_chunks, lane);
    }
    for (; tile < num_tiles; tile += stride) {
      Chunk c[C::kChunks];  // (kChunks) x 16 B
#pragma unroll
      for (int u = 0; u < C::kChunks; ++u) c[u] = next[u];
      const long long chunk0 = tile * C::kTileChunks + lane;
      if (tile + stride < num_tiles) {
        load_tile<C>(next, x_chunks, chunk0 + stride * C::kTileChunks, num_chunks, lane);
      }
      quantize_tile<C>(c, q, scales, tile, chunk0, num_chunks, lane);
    }
  }
}

}  // namespace

// The plan's large launch (M * K above SMALL_ELEMS, or every size with SMALL_THREADS 0).
extern "C" __global__ void __launch_bounds__(LargeConfig::kThreads, LargeConfig::kMinBlocks)
    sm90_bf16_mxfp8_quantize_rowwise(const unsigned short* __restrict__ x,
                                     unsigned char* __restrict__ q,
                                     unsigned char* __restrict__ scales, int M, int K) {
  quantize_rowwise<LargeConfig>(x, q, scales, M, K);
}

// The plan's small launch (M * K up to SMALL_ELEMS): CTAs of SMALL_THREADS.
extern "C" __global__ void __launch_bounds__(SmallConfig::kThreads, SmallConfig::kMinBlocks)
    sm90_bf16_mxfp8_quantize_rowwise_small(const unsigned short* __restrict__ x,
                                           unsigned char* __restrict__ q,
                                           unsigned char* __restrict__ scales, int M, int K) {
  quantize_rowwise<SmallConfig>(x, q, scales, M, K);
}

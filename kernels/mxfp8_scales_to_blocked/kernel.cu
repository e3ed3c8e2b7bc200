/* warpsmith:plan
{ "knobs":  { "THREADS": [256, 128, 512], "TILES": [64, 32, 128], "BATCH": [4, 8, 16],
              "STORE_CS": [1, 0], "VEC": [16, 4], "WIDE_C": [128, 0], "WIDE_BATCH": [8, 16],
              "WARM": [0, 1], "FIND_PER": [1, 4], "MANY_G": [16, 0, 32],
              "MANY_FIND_PER": [4, 1], "MANY_WARM": [1, 0], "RAW_RUN": [1, 0],
              "MANY_THREADS": [128, 256] },
  "launch": [ { "kernel": "sm90_mxfp8_scales_to_blocked",
                "when": "(WIDE_C == 0 || K / 32 <= WIDE_C) && (MANY_G == 0 || G < MANY_G) && (RAW_RUN == 0 || (K / 32) % 4 != 2)",
                "grid":  ["ceil_div(M + 96 * G, 128) * ceil_div(ceil_div(K / 32, 4), TILES)"],
                "block": ["THREADS"], "smem": "512 * (min(ceil_div(K / 32, 4), TILES) + 1)",
                "args":  ["scales", "group_offsets", "scales_blocked", "M", "K / 32", "G"] },
              { "kernel": "sm90_mxfp8_scales_to_blocked_wide",
                "when": "WIDE_C != 0 && K / 32 > WIDE_C && (MANY_G == 0 || G < MANY_G)",
                "grid":  ["ceil_div(M + 96 * G, 128) * ceil_div(ceil_div(K / 32, 4), TILES)"],
                "block": ["THREADS"], "smem": "512 * (min(ceil_div(K / 32, 4), TILES) + 1)",
                "args":  ["scales", "group_offsets", "scales_blocked", "M", "K / 32", "G"] },
              { "kernel": "sm90_mxfp8_scales_to_blocked_many",
                "when": "(WIDE_C == 0 || K / 32 <= WIDE_C) && MANY_G != 0 && G >= MANY_G && (RAW_RUN == 0 || (K / 32) % 4 != 2)",
                "grid":  ["ceil_div(M + 96 * G, 128) * ceil_div(ceil_div(K / 32, 4), TILES)"],
                "block": ["MANY_THREADS"], "smem": "512 * (min(ceil_div(K / 32, 4), TILES) + 1)",
                "args":  ["scales", "group_offsets", "scales_blocked", "M", "K / 32", "G"] },
              { "kernel": "sm90_mxfp8_scales_to_blocked_wide_many",
                "when": "WIDE_C != 0 && K / 32 > WIDE_C && MANY_G != 0 && G >= MANY_G",
                "grid":  ["ceil_div(M + 96 * G, 128) * ceil_div(ceil_div(K / 32, 4), TILES)"],
                "block": ["THREADS"], "smem": "512 * (min(ceil_div(K / 32, 4), TILES) + 1)",
                "args":  ["scales", "group_offsets", "scales_blocked", "M", "K / 32", "G"] },
              { "kernel": "sm90_mxfp8_scales_to_blocked_raw",
                "when": "(WIDE_C == 0 || K / 32 <= WIDE_C) && (MANY_G == 0 || G < MANY_G) && RAW_RUN != 0 && (K / 32) % 4 == 2",
                "grid":  ["ceil_div(M + 96 * G, 128) * ceil_div(ceil_div(K / 32, 4), TILES)"],
                "block": ["THREADS"], "smem": "512 * (min(ceil_div(K / 32, 4), TILES) + 1)",
                "args":  ["scales", "group_offsets", "scales_blocked", "M", "K / 32", "G"] },
              { "kernel": "sm90_mxfp8_scales_to_blocked_many_raw",
                "when": "(WIDE_C == 0 || K / 32 <= WIDE_C) && MANY_G != 0 && G >= MANY_G && RAW_RUN != 0 && (K / 32) % 4 == 2",
                "grid":  ["ceil_div(M + 96 * G, 128) * ceil_div(ceil_div(K / 32, 4), TILES)"],
                "block": ["THREADS"], "smem": "512 * (min(ceil_div(K / 32, 4), TILES) + 1)",
                "args":  ["scales", "group_offsets", "scales_blocked", "M", "K / 32", "G"] } ] }
*/
// MXFP8 scales to the 128x4 blocked layout, hand-tuned: scales [M,C] E8M0 rows grouped by
// expert (group_offsets [G] end rows) -> scales_blocked, T tiles of 512 bytes.
//
// Design (pure data movement, ~1 byte in and ~1 byte out per scale):
//  - One CTA per (128-row output stripe, run of TILES column tiles). Groups are padded to 128
//    rows, so a stripe lies in one group (or after the last: all pad). Each warp finds the
//    stripe's group by itself: 32 groups per step, a warp scan of their padded stripe counts and
//    a ballot (no block-wide sync, no serial walk).
//  - The stripe's rows are contiguous in scales; when its whole width fits (C <= 4*TILES, every
//    bench shape) they are one 32-byte aligned run of rows*C bytes: read in coalesced 16-byte
//    chunks (VEC 4: words), BATCH per thread in flight, each chunk's words, halves or bytes
//    (the widest units C's alignment allows) scattered into shared memory rows of P words, P
//    odd. Wider C: per-row segments, same layout.
//  - Output: every 16-byte line (rows i, i+32, i+64, i+96 of the stripe, 4 columns each) is four
//    word reads at stride P (odd: conflict-free across the 32 lanes = 32 lines of a tile) and
//    one 16-byte store; a warp writes one 512-byte tile contiguously. Pad rows, pad columns
//    (C % 4) and the tail stripes are masked to 0x00 in the same stores.
//
// Knobs: THREADS, TILES (column tiles per CTA: shared memory 512*(TILES+1) bytes at most),
// BATCH (loads in flight per thread), STORE_CS (st.global.cs), VEC (bytes per load of the
// stripe's run: 16, or 4 as first measured), WIDE_C / WIDE_BATCH (where C > WIDE_C, a second
// instance with WIDE_BATCH loads per thread; 0: one instance), WARM (1: L2 prefetches at entry
// of the stripe's likely input and first output line, so their address translations overlap
// the group offsets' round trip), FIND_PER (groups each lane reads per round of the group
// search: 4 takes G128's four dependent rounds down to one, every warp still finding alone,
// unlike FIND 1 below). Both ran once on an H200 (s48c1, sweeps-h200-2026-12-06-session48.json,
// `ok` at every test and hidden shape), in a sweep whose two controls drifted 10-22% apart:
// 0.92-1.04x of the first control, undecided. Then in two sweeps on one H200 whose controls
// held within 2.3% (s49c1, s49c3, sweeps-h200-2026-12-06-session49.json): FIND_PER=4 WARM=1
// 1.020x / 1.050x / 1.043x / 0.922x / 1.001x at G128 K2048 / G128 K2880 / G16 K5120 / G8 K2048 /
// G8 K7168 (the loss at G8 K2048 in both sweeps; FIND_PER=4 alone 0.922x there too), 1.006x
// geomean; WARM=1 alone 0.989x. Neither is the default for all G: the gains are where G >= 16.
// MANY_G (16 by default since session 49; 0: never): from MANY_G groups up the plan launches
// the _many instances, built with MANY_FIND_PER and MANY_WARM (4 and 1 by default). Their
// sm_90a and sm_100a SASS, per kernel, is the measured FIND_PER=4 WARM=1 build's, and the
// other two kernels' is the measured default's: so G8 keeps the default (the loss at G8 K2048
// is gone) and G >= 16 gets the 1.020x / 1.050x / 1.043x above. As one plan against MANY_G=0,
// on an H100 (s50c1, s50c2, sweeps-h100-2026-12-07-session50.json), three sweeps whose controls
// drifted 8-20%, 1-5% and 0-3%: MANY_G=0 1.040x geomean, but as much at the G8 shapes, whose
// kernels are the same in both; against that, G128 reads 1-2% the other way. Undecided there;
// the default stands on the H200 sweeps above; on an H100 again in s51c1 (two sweeps, controls
// within 1-4%) MANY_G=0 read 0.998x geomean.
// RAW_RUN (1 by default since session 51; 0: never): where C = 2 mod 4 (K2880's 90) and
// C <= WIDE_C, the plan launches the _raw instances, whose rows go into shared memory as they
// lie, one 16-byte store per chunk where the pitch layout takes eight 2-byte stores; the line
// reads then take two words and a funnel shift where a row starts mid-word. Built into every
// kernel (s51c1, H100, two sweeps, sweeps-h100-2026-12-07-session51.json), it ran 1.025x
// [1.019-1.031] at G128 K2880 but 0.95-0.99x at the other shapes, whose code it changed too; so
// it is two instances of its own now, their SASS (both architectures) the measured build's
// _many and first kernels, and the four other kernels' SASS unchanged. So built, on the same
// H100 (s51c3-c4, five sweeps, -51b.json), RAW_RUN=0 ran 2-3% slower at G128 K2880 than the
// warm controls; compute-sanitizer clean at the test shapes (two of them, C = 90 at G24 and
// C = 2, reach the _raw instances). Not yet run on an H200.
// MANY_THREADS (128 by default since session 51): the narrow _many instance's CTA size. At
// G128 K2048 the grid is 1120 stripes, past the 1056 CTAs of 256 threads resident at once (8
// per SM), so 64 stripes wait a whole CTA's chain (offsets, search, loads, stores); 128-thread
// CTAs (32 registers, 16 per SM) hold them all, each thread with 4 chunks of a C <= 64 run. On
// an H100 (s51c3-c4, five sweeps, sweeps-h100-2026-12-07-session51b.json) 1.06-1.08x at G128
// K2048 against the warm controls in four of them (the fifth ran its whole evaluation slow),
// the other shapes' kernels the same; `ok` at every test and hidden shape and clean under
// compute-sanitizer at the test shapes. Its SASS is the measured build's. Not yet on an H200.
// Dropped: the _wide instances' runs copied by 4-byte cp.async into the pitch rows, no loads in
// registers, capped at 32 registers so that shared memory alone (7-8 CTAs per SM, not 4) limits
// them (WIDE_ASYNC, s51c3, git ae3a557): 0.96x at G8 K7168, 0.93-0.95x at G16 K5120.
// Dropped: the run by one 1-D bulk copy into shared memory as it lies (no registers held for
// loads: 27-32, CTAs per SM bounded by shared memory, 7 at G8 K7168 against the _wide kernels'
// 4), stores in lanes of 32 / L tiles x L lines, L = 32 >> min(ctz(C / 4), 4), conflict-free
// (WIDE_BULK, and NARROW_BULK for the C % 4 == 0 narrow shapes; git b5cdccc). On an H100 (s52c1,
// three sweeps whose controls drifted 7-16%, sweeps-h100-2026-12-07-session52.json), `ok` at
// every shape: WIDE_BULK 0.931x at G8 K7168 [0.849-0.979], 0.995x at G16 K5120; with 128
// threads 0.962x and 1.053x [1.002-1.086]; NARROW_BULK 0.957x geomean. Racecheck reported
// hazards between the barrier's init and its expect_tx (one thread; unexplained). So more CTAs
// per SM did not pay at G8 K7168 with this load path; whether the single 28 KB copy per CTA is
// slower than 8 loads per thread, or the second wave costs little, these runs do not tell apart.
// Dropped (s50c1, s50c2; git 18d79d0 has it): CTAs by 128 input rows (BY_INPUT), whose
// data loads need no offsets and go out at entry beside warp 0's search, each 32-row block
// written into its quarter of the output lines (4-, 8- or 16-byte stores; lines shared by two
// CTAs), pads by the CTA holding a group's last block. `ok` at every test and hidden shape and
// checked on the CPU by a model of its pieces, but 0.65-0.77x geomean in four variants (register
// caps, .cs stores), 0.52-0.86x per shape: the partial-line stores cost more than the round trip.
// Measured on the H200 (2026-11-30, bench/results/kernels-first-run-h200-2026-11-30.md):
//   ok at every shape; bench geomean 17.1 us; 13-31 us in session 26 (0.21-0.45 of SOL).
// Since session 46 the default is VEC 16 BATCH 4 (before: 4-byte loads, BATCH 8, which took
// four round trips for a K7168 stripe's 28 KB, 48 registers, 5 CTAs per SM; now 32 registers,
// 8 CTAs per SM): on an H100, 1.26x geomean in a sweep with steady controls, 1.34x over two
// whose controls drifted 7-15%, 1.15x over two more with the old default as the variant
// (s46c5); 1.22-1.43x per shape in the first three (22.2, 10.0, 10.9, 18.2-18.8 and 10.2-10.6
// us where the old default read 27-30, 12.5-13.9, 13.9-15.2, 22.3-26.3 and 13.6-14.8); `ok` at
// every test and hidden shape (bench/results/sweeps-h100-2026-12-06-session46{,b,c,d}.json);
// compute-sanitizer clean at the test shapes. Beside the plain stream of the same bytes
// (bench/stream_floor.py) and the Triton peer in one H100 call (s46c4, before WIDE_C,
// kernels-h100-2026-12-06-session46.json): of floor 0.84 / 0.83 / 0.74 / 0.77 / 0.68 at G8
// K7168 / G8 K2048 / G128 K2048 / G16 K5120 / G128 K2880, Triton 12.7-48.9x slower. Beside it
// and dropped: BATCH 8 (64 registers, 4 CTAs per SM; 1.07-1.33x of the old default, bimodal
// from call to call; against the new one in s46c5 1.14x / 1.16x at K7168 / K5120, whose
// stripes take two batches of 4, and 0.96-0.99x at the others, but 0.84-0.97x everywhere in
// s46c6), THREADS 128 or 512, STORE_CS 0, the group offsets loaded up front
// for 4 or 8 scan rounds (PRE: 0.87-1.00x of BATCH 4: the scan's L2 round trips are not what
// waits), and persistent CTAs with the next stripe's loads in flight during the stores
// (PERSIST 2-4: 0.85-0.93x of VEC 16 alone), and half a stripe per CTA, each storing the
// lines' 8-byte halves (ROWS 64: 0.77-0.85x, s46c5). Git 0866be9 has PRE and PERSIST, a9dae4a
// ROWS. WIDE_C 128 (the default since s46c6: where C > 128, K7168 and K5120 among the bench
// shapes, a second instance with 8 loads per thread reads the stripe in one batch): 21.2 us at
// G8 K7168 against controls of 22.2-22.4 in two sweeps of one call (1.05x), within the
// controls' drift at K5120 (18.05-18.21 against 18.29-18.40), `ok` at every test and hidden
// shape (sweeps-h100-2026-12-06-session46e.json); WIDE_BATCH 16 there 0.98x / 0.90x.
// Beside the floors and Triton with WIDE_C (s47c1, kernels-h100-2026-12-06-session47.json): of
// floor 0.89 / 0.82 / 0.77 / 0.78 / 0.68 in the shape order above, compute-sanitizer clean.
// Where the time goes (bench/profile/scales_phases.py, per-CTA %globaltimer stamps, H100 s47c2
// and s47c5, phases-h100-2026-12-06-session47.json): finding the stripe's group takes one DRAM
// round trip per 32 groups, 1.2-3 us at G8 and up to 5.6 us at G128, every warp of every CTA
// reading the same lines of group_offsets; the data loads wait on it. Warp 0 alone reading 128
// groups per round (FIND 1, git b8dd347) cut that to 1.3-2.1 us, but the load phase took as much
// longer and the kernel gained 2-5% at G128 only, losing 3-16% elsewhere (0.954x geomean over two
// sweeps, sweeps-h100-2026-12-06-session47.json). What stays: one dependent round trip (~1.2 us
// under load) before any data load, absent from the plain stream, and ~3.3 us from the last
// store issued to the end event, as in the stream.
//
// Evaluate: build/warpsmith eval mxfp8_scales_to_blocked kernels/mxfp8_scales_to_blocked/kernel.cu

#include "ws/memory.cuh"

#ifndef THREADS
#define THREADS 256
#endif
#ifndef TILES
#define TILES 64
#endif
#ifndef BATCH
#define BATCH 4
#endif
#ifndef STORE_CS
#define STORE_CS 1
#endif
#ifndef VEC
#define VEC 16
#endif
#ifndef WIDE_C
#define WIDE_C 128  // 0: never the _wide instance
#endif
#ifndef WIDE_BATCH
#define WIDE_BATCH 8
#endif
#ifndef FIND_PER
#define FIND_PER 1  // groups per lane in each round of the stripe's group search
#endif
#ifndef WARM
#define WARM 0  // 1: at entry, L2 prefetches of the stripe's likely input and its first output line
#endif
#ifndef MANY_G
#define MANY_G 16  // nonzero: from this many groups up, the _many instances (0: never)
#endif
#ifndef MANY_FIND_PER
#define MANY_FIND_PER 4  // the _many instances' FIND_PER
#endif
#ifndef MANY_WARM
#define MANY_WARM 1  // the _many instances' WARM
#endif
#ifndef MANY_THREADS
#define MANY_THREADS 128  // the narrow _many instance's THREADS
#endif
#ifndef RAW_RUN
#define RAW_RUN 1  // 1: where C = 2 mod 4 (<= WIDE_C), the _raw instances (store_tiles' raw)
#endif

namespace {

struct Config {
  static constexpr int kThreads = THREADS;
  static constexpr int kManyThreads = MANY_THREADS;  // the narrow _many instance's CTA size
  static constexpr int kTiles = TILES;  // column tiles (4 scale columns each) per CTA
  static constexpr int kBatch = BATCH;
  static constexpr int kStripeRows = 128;
  static constexpr bool kStoreCs = STORE_CS != 0;
  static constexpr int kVec = VEC;  // bytes per load of a whole stripe's run
  static constexpr int kWideBatch = WIDE_BATCH;  // the _wide instance's BATCH
};
static_assert(Config::kThreads % 32 == 0 && Config::kThreads <= 1024 &&
                  Config::kManyThreads % 32 == 0 && Config::kManyThreads <= 1024,
              "whole warps");
static_assert(Config::kTiles >= 1 && Config::kBatch >= 1, "positive");
static_assert(Config::kVec == 4 || Config::kVec == 16, "VEC: 4 or 16");
static_assert(FIND_PER >= 1 && FIND_PER <= 8 && MANY_FIND_PER >= 1 && MANY_FIND_PER <= 8,
              "FIND_PER: 1 to 8");

using ws::kFullMask;

__device__ __forceinline__ unsigned load_word(const unsigned char* p) {
  unsigned v;
  asm volatile("ld.global.nc.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}

// Places the 16 bytes at byte b of a stripe's run (rows of C bytes) into shared memory rows of
// 4 * pitch bytes, in the widest units C's alignment allows (a unit never straddles two rows).
template <int kUnit>
__device__ __forceinline__ void place_units(const ws::Chunk& v, int row, int col, int C,
                                            int pitch, unsigned char* smem) {
#pragma unroll
  for (int u = 0; u < 16 / kUnit; ++u) {
    unsigned char* d = smem + row * 4 * pitch + col;
    const unsigned w = v.w[u * kUnit / 4] >> (8 * (u * kUnit % 4));
    if constexpr (kUnit == 4) *reinterpret_cast<unsigned*>(d) = w;
    if constexpr (kUnit == 2) {
      *reinterpret_cast<unsigned short*>(d) = static_cast<unsigned short>(w);
    }
    if constexpr (kUnit == 1) *d = static_cast<unsigned char>(w);
    col += kUnit;
    if (col == C) {
      col = 0;
      ++row;
    }
  }
}

__device__ __forceinline__ void place16(const ws::Chunk& v, int b, int C, int pitch,
                                        unsigned char* smem) {
  const int row = b / C, col = b - row * C;
  if ((C & 15) == 0) {  // the chunk lies in one row: four word stores
    unsigned* d = reinterpret_cast<unsigned*>(smem) + row * pitch + col / 4;
#pragma unroll
    for (int j = 0; j < 4; ++j) d[j] = v.w[j];
  } else if ((C & 3) == 0) {
    place_units<4>(v, row, col, C, pitch, smem);
  } else if ((C & 1) == 0) {
    place_units<2>(v, row, col, C, pitch, smem);
  } else {
    place_units<1>(v, row, col, C, pitch, smem);
  }
}

struct StripeSource {
  long long first_row;  // input row of the stripe's row 0
  int rows;             // rows holding data, 0 .. 128 (a multiple of 32)
};

// Which input rows stripe s holds. Warp-cooperative (all 32 lanes call, all get the answer):
// group g covers stripes [P_g, P_g + R_g) with R_g = ceil_div(end_g - start_g, 128). Each round
// reads 32 * kFindPer groups, lane l the kFindPer consecutive groups from g0 + l * kFindPer, all
// its loads issued before the first use: one dependent round trip per round.
template <int kPer>
__device__ __forceinline__ StripeSource find_stripe(const int* __restrict__ offsets, int G,
                                                    long long s, int lane) {
  long long stripes_before = 0;  // padded stripes of the groups of earlier rounds
  int prev_end = 0;              // end row of the group before this round's first
  for (int g0 = 0; g0 < G; g0 += 32 * kPer) {
    const int g1 = g0 + lane * kPer;  // this lane's first group
    int end[kPer];
#pragma unroll
    for (int j = 0; j < kPer; ++j) end[j] = g1 + j < G ? __ldg(offsets + g1 + j) : 0;
    int start = __shfl_up_sync(kFullMask, end[kPer - 1], 1);
    if (lane == 0) start = prev_end;
    int n[kPer], r[kPer], sum = 0;  // rows, padded stripes of each group; stripes of the lane
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      n[j] = g1 + j < G ? end[j] - (j == 0 ? start : end[j - 1]) : 0;
      r[j] = (n[j] + Config::kStripeRows - 1) / Config::kStripeRows;
      sum += r[j];
    }
    int incl = sum;  // inclusive scan of the lanes' stripe counts
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
      const int v = __shfl_up_sync(kFullMask, incl, d);
      if (lane >= d) incl += v;
    }
    const unsigned hit = __ballot_sync(kFullMask, g1 < G && s < stripes_before + incl);
    if constexpr (kPer == 1) {
      // The loop below gives the same answer; this form keeps the measured default's SASS.
      if (hit != 0) {
        const int f = __ffs(hit) - 1;
        const long long excl = stripes_before + __shfl_sync(kFullMask, incl - r[0], f);
        const long long rel = (s - excl) * Config::kStripeRows;
        const long long first = __shfl_sync(kFullMask, start, f) + rel;
        const long long avail = __shfl_sync(kFullMask, n[0], f) - rel;
        return {first, static_cast<int>(min(avail, static_cast<long long>(Config::kStripeRows)))};
      }
    } else if (hit != 0) {
      // Each lane resolves s among its own groups as if it held the hit; lane f's answer counts.
      long long cum = stripes_before + incl - sum, first = 0, avail = 0;
      bool found = false;
#pragma unroll
      for (int j = 0; j < kPer; ++j) {
        if (!found && s < cum + r[j]) {
          const long long rel = (s - cum) * Config::kStripeRows;
          first = (j == 0 ? start : end[j - 1]) + rel;
          avail = n[j] - rel;
          found = true;
        }
        cum += r[j];
      }
      const int f = __ffs(hit) - 1;
      first = __shfl_sync(kFullMask, first, f);
      avail = __shfl_sync(kFullMask, avail, f);
      return {first, static_cast<int>(min(avail, static_cast<long long>(Config::kStripeRows)))};
    }
    stripes_before += __shfl_sync(kFullMask, incl, 31);
    prev_end = __shfl_sync(kFullMask, end[kPer - 1], 31);
  }
  return {0, 0};  // after the last group: all pad
}

// Batch k0 of a stripe's run in 16-byte chunks: chunk k0 + tid + j * THREADS into v[j]. rows
// is a multiple of 32, so rows * C is a multiple of 16 and the run (first_row * C) is 16-byte
// aligned.
template <int kBatch, int kThreads>
__device__ __forceinline__ void load_run16(ws::Chunk (&v)[kBatch],
                                           const unsigned char* __restrict__ scales,
                                           const StripeSource& src, int C, int k0) {
  const unsigned char* base = scales + src.first_row * C;
  const int n16 = src.rows * C / 16;
#pragma unroll
  for (int j = 0; j < kBatch; ++j) {
    const int k = k0 + threadIdx.x + j * kThreads;
    if (k < n16) v[j] = ws::load_global16<ws::LoadHint::kNcNoAllocate>(base + 16LL * k);
  }
}

// raw (RAW_RUN): chunk k at byte 16 k of shared memory, the run as it lies; else place16's rows.
template <int kBatch, int kThreads>
__device__ __forceinline__ void place_run16(const ws::Chunk (&v)[kBatch],
                                            const StripeSource& src, int C, int pitch, int k0,
                                            bool raw, unsigned char* smem_bytes) {
  const int n16 = src.rows * C / 16;
#pragma unroll
  for (int j = 0; j < kBatch; ++j) {
    const int k = k0 + threadIdx.x + j * kThreads;
    if (k < n16 && raw) {
      ws::store_shared16(static_cast<unsigned>(__cvta_generic_to_shared(smem_bytes + 16 * k)),
                         v[j].w[0], v[j].w[1], v[j].w[2], v[j].w[3]);
    } else if (k < n16) {
      place16(v[j], 16 * k, C, pitch, smem_bytes);
    }
  }
}

// The unit's tiles from shared memory. Line i of tile tt holds rows i, i+32, i+64, i+96,
// columns 4 (t0+tt) .. +3; rows past `rows`, and columns past C, are the pad 0x00.
// raw: shared memory holds the run as it lies in scales (RAW_RUN), row r's word tt at byte
// r * C + 4 tt, two bytes past a word boundary where r * C is (C % 4 == 2, so r * C is even).
template <int kThreads>
__device__ __forceinline__ void store_tiles(unsigned char* __restrict__ out, long long s, int t0,
                                            int nt, int rows, int C, int pitch,
                                            const unsigned* smem_words, bool raw) {
  const int tid = threadIdx.x, c4 = (C + 3) / 4;
  const unsigned last_mask = (C & 3) == 0 ? 0xFFFFFFFFu : (1u << (8 * (C & 3))) - 1u;
  unsigned char* dst = out + (s * c4 + t0) * 512;
  for (int l = tid; l < nt * 32; l += kThreads) {
    const int tt = l >> 5, i = l & 31;
    const unsigned mask = t0 + tt == c4 - 1 ? last_mask : 0xFFFFFFFFu;
    unsigned w[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int r = 32 * j + i;
      if (raw) {
        const int a = r * C + 4 * tt;
        const unsigned* p = smem_words + (a >> 2);
        const unsigned v = (a & 2) != 0 ? __funnelshift_r(p[0], p[1], 16) : p[0];
        w[j] = r < rows ? v & mask : 0u;
      } else {
        w[j] = r < rows ? smem_words[r * pitch + tt] & mask : 0u;
      }
    }
    ws::store_global16<Config::kStoreCs>(dst + l * 16, w[0], w[1], w[2], w[3]);
  }
}

// Unit u (stripe u / chunks, column tiles from (u % chunks) * TILES): its rows into shared
// memory, then its tiles out.
template <int kThreads, int kBatch, int kFindPer, bool kWarm, bool kRaw>
__device__ __forceinline__ void unit(const unsigned char* __restrict__ scales,
                                     const int* __restrict__ group_offsets,
                                     unsigned char* __restrict__ out, int M, int C, int G,
                                     unsigned u, unsigned* smem_words) {
  const int tid = threadIdx.x, lane = tid & 31;
  const int c4 = (C + 3) / 4;
  const int chunks = (c4 + Config::kTiles - 1) / Config::kTiles;
  const long long s = u / chunks;
  const int t0 = static_cast<int>(u % chunks) * Config::kTiles;  // first column tile
  const int nt = min(Config::kTiles, c4 - t0);                    // tiles of this CTA
  const int pitch = min(c4, Config::kTiles) | 1;  // words per smem row; odd: conflict-free reads
  unsigned char* smem_bytes = reinterpret_cast<unsigned char*>(smem_words);
  // kRaw (the _raw instances), rows of C = 2 mod 4 bytes (K2880): the run goes into shared
  // memory as it lies, one 16-byte store per chunk instead of eight 2-byte ones (C / 2 is odd, so
  // the 32 rows a warp's lines read start in 32 different half-words: at most 2-way bank
  // conflicts).
  const bool raw = kRaw && Config::kVec == 16 && chunks == 1 && (C & 3) == 2;

  if constexpr (kWarm) {
    // While the group offsets come (a DRAM round trip), the address translations and first
    // lines of the stripe's run (its rows start at or before row 128 s) and of its output.
    if (tid == 0) {
      ws::prefetch_l2(scales + min(s * Config::kStripeRows, static_cast<long long>(M) - 1) * C);
      ws::prefetch_l2(out + (s * c4 + t0) * 512);
    }
  } else {
    (void)M;
  }
  const StripeSource src = find_stripe<kFindPer>(group_offsets, G, s, lane);  // same in every warp
  const int rows = src.rows;

  if (rows > 0) {
    if (chunks == 1 && Config::kVec == 16) {
      // The run (below) in 16-byte chunks, kBatch per thread at a time.
      for (int k0 = 0; k0 < rows * C / 16; k0 += kBatch * kThreads) {
        ws::Chunk v[kBatch];
        load_run16<kBatch, kThreads>(v, scales, src, C, k0);
        place_run16<kBatch, kThreads>(v, src, C, pitch, k0, raw, smem_bytes);
      }
    } else if (chunks == 1) {
      // The stripe's rows are one contiguous, 32-byte aligned run of rows * C bytes.
      const unsigned char* base = scales + src.first_row * C;
      const int words = rows * C / 4;
      const bool word_rows = (C & 3) == 0;
      for (int w0 = tid; w0 < words; w0 += kBatch * kThreads) {
        unsigned v[kBatch];
#pragma unroll
        for (int j = 0; j < kBatch; ++j) {
          const int w = w0 + j * kThreads;
          v[j] = w < words ? load_word(base + 4LL * w) : 0u;
        }
#pragma unroll
        for (int j = 0; j < kBatch; ++j) {
          const int w = w0 + j * kThreads;
          if (w >= words) continue;
          if (word_rows) {
            const int cw = C / 4;
            smem_words[(w / cw) * pitch + w % cw] = v[j];
          } else {
            // C % 4 != 0: the word straddles rows; place its 4 bytes one by one.
            int idx = 4 * w, row = idx / C, col = idx - row * C;
#pragma unroll
            for (int b = 0; b < 4; ++b) {
              smem_bytes[row * 4 * pitch + col] = static_cast<unsigned char>(v[j] >> (8 * b));
              if (++col == C) {
                col = 0;
                ++row;
              }
            }
          }
        }
      }
    } else {
      // Wider than the CTA: row segments of columns [4 t0, min(C, 4 (t0 + nt))).
      const int c0 = 4 * t0, cols = min(C - c0, 4 * nt);
      for (int e = tid; e < rows * cols; e += kThreads) {
        const int r = e / cols, c = e - r * cols;
        smem_bytes[r * 4 * pitch + c] = __ldg(scales + (src.first_row + r) * C + c0 + c);
      }
    }
  }
  __syncthreads();
  store_tiles<kThreads>(out, s, t0, nt, rows, C, pitch, smem_words, raw);
}

}  // namespace

// scales (M,C) e8m0; group_offsets (G) i32 end rows (multiples of 32, last = M); out: stripes *
// C4 tiles of 512 bytes, stripes = ceil_div(M + 96 G, 128), C4 = ceil_div(C, 4). The plan picks
// one instance per shape; each is `unit` built with its own constants, so the instances a shape
// does not launch leave its kernel's code as measured.
#define WS_SCALES_TO_BLOCKED(NAME, THREADS_, BATCH_, FIND_PER_, WARM_, RAW_)                  \
  extern "C" __global__ void __launch_bounds__(THREADS_)                                       \
      NAME(const unsigned char* __restrict__ scales, const int* __restrict__ group_offsets,    \
           unsigned char* __restrict__ out, int M, int C, int G) {                             \
    extern __shared__ __align__(16) unsigned smem_words[]; /* (128, P) words */                \
    unit<THREADS_, BATCH_, FIND_PER_, WARM_, RAW_>(scales, group_offsets, out, M, C, G,        \
                                                   blockIdx.x, smem_words);                    \
  }

// The first kernel: C <= WIDE_C and G < MANY_G.
WS_SCALES_TO_BLOCKED(sm90_mxfp8_scales_to_blocked, Config::kThreads, Config::kBatch, FIND_PER,
                     WARM != 0, false)
// WIDE_C: WIDE_BATCH loads per thread, where C > WIDE_C (a stripe's run longer than one batch
// of BATCH chunks per thread).
WS_SCALES_TO_BLOCKED(sm90_mxfp8_scales_to_blocked_wide, Config::kThreads, Config::kWideBatch,
                     FIND_PER, WARM != 0, false)
// MANY_G: the two above with MANY_FIND_PER and MANY_WARM (G128's group search takes one round
// instead of four), where G >= MANY_G; the narrow one with MANY_THREADS threads.
WS_SCALES_TO_BLOCKED(sm90_mxfp8_scales_to_blocked_many, Config::kManyThreads, Config::kBatch,
                     MANY_FIND_PER, MANY_WARM != 0, false)
WS_SCALES_TO_BLOCKED(sm90_mxfp8_scales_to_blocked_wide_many, Config::kThreads,
                     Config::kWideBatch, MANY_FIND_PER, MANY_WARM != 0, false)
// RAW_RUN: the first and the narrow MANY_G kernel with the raw run (store_tiles), where
// C = 2 mod 4 and C <= WIDE_C.
WS_SCALES_TO_BLOCKED(sm90_mxfp8_scales_to_blocked_raw, Config::kThreads, Config::kBatch,
                     FIND_PER, WARM != 0, true)
WS_SCALES_TO_BLOCKED(sm90_mxfp8_scales_to_blocked_many_raw, Config::kThreads, Config::kBatch,
                     MANY_FIND_PER, MANY_WARM != 0, true)

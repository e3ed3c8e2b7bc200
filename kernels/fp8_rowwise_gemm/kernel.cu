/* warpsmith:plan
{ "knobs": { "BN": [192, 128, 64], "STAGES": [6, 5, 4, 7], "PROMOTE": [1, 2, 4],
             "GROUP_M": [8, 16, 4, 1],
             "SPLIT_M": [128, 0, 64, 256], "SBN": [64, 128], "SPLIT_KB": [2, 4, 8], "SBM": [64, 128],
             "SSTAGES": [8, 6, 12], "NARROW_N": [2048, 0, 4096], "NSBN": [32, 64],
             "NSSTAGES": [16, 8, 12], "EPI": [2, 1, 0], "MC": [1, 2],
             "GEMV_M": [16, 0, 32, 64], "GEMV_NT": [2, 4, 8, 1], "GEMV_WARPS": [8, 16, 4],
             "GEMV_UNROLL": [2, 1, 4, 8],
             "GEMV_KSPLIT": [1, 2, 4, 8],
             "GEMV_LOAD": [0, 1, 2, 3], "GEMV_ORDER": [0, 1] },
  "tensor_maps": {
    "tma_a": { "tensor": "a", "dims": ["K", "M"], "box": ["128", "128"], "swizzle": 128,
               "oob_fill": "zero", "l2_promotion": 256 },
    "tma_b": { "tensor": "b", "dims": ["K", "N"], "box": ["128", "BN"], "swizzle": 128,
               "oob_fill": "zero", "l2_promotion": 256 },
    "tma_bs": { "tensor": "b", "dims": ["K", "N"], "box": ["128", "SBN"], "swizzle": 128,
                "oob_fill": "zero", "l2_promotion": 256 },
    "tma_bn": { "tensor": "b", "dims": ["K", "N"], "box": ["128", "NSBN"], "swizzle": 128,
                "oob_fill": "zero", "l2_promotion": 256 },
    "tma_as": { "tensor": "a", "dims": ["K", "M"], "box": ["128", "SBM"], "swizzle": 128,
                "oob_fill": "zero", "l2_promotion": 256 },
    "tma_bh": { "tensor": "b", "dims": ["K", "N"], "box": ["128", "BN / MC"], "swizzle": 128,
                "oob_fill": "zero", "l2_promotion": 256 } },
  "workspace": { "bytes": "(M <= SPLIT_M && M > GEMV_M && N <= NARROW_N) * (round_up(8 * (ceil_div(M, SBM) * ceil_div(N, NSBN)), 256) + 4 * (max(1, min(num_sms / (ceil_div(M, SBM) * ceil_div(N, NSBN)), ceil_div(K, 128) / SPLIT_KB))) * M * N) + (M <= SPLIT_M && M > GEMV_M && N > NARROW_N) * (round_up(8 * (ceil_div(M, SBM) * ceil_div(N, SBN)), 256) + 4 * (max(1, min(num_sms / (ceil_div(M, SBM) * ceil_div(N, SBN)), ceil_div(K, 128) / SPLIT_KB))) * M * N)",
                 "zero": true },
  "launch": [ { "kernel": "sm90_sm100_fp8_rowwise_gemm_gemv",
                "when": "M <= GEMV_M",
                "grid": ["ceil_div(N, 8 * GEMV_NT) * GEMV_KSPLIT"],
                "cluster": ["GEMV_KSPLIT"],
                "block": ["32 * GEMV_WARPS"],
                "smem": "GEMV_WARPS * ceil_div(max(GEMV_M, 1), 16) * GEMV_NT * 512",
                "args": ["a", "b", "a_scale", "b_scale", "d", "M", "N", "K"] },
              { "kernel": "sm90_sm100_fp8_rowwise_gemm_splitk_narrow",
                "when": "M > GEMV_M && M <= SPLIT_M && N <= NARROW_N",
                "grid": ["ceil_div(M, SBM) * ceil_div(N, NSBN) * max(1, min(num_sms / (ceil_div(M, SBM) * ceil_div(N, NSBN)), ceil_div(K, 128) / SPLIT_KB))"],
                "block": ["384"],
                "smem": "min(NSSTAGES, 230400 / (128 * SBM + 128 * NSBN)) * (128 * SBM + 128 * NSBN) + 2048",
                "args": ["tma_as", "tma_bn", "a_scale", "b_scale", "d", "workspace",
                         "M", "N", "K", "max(1, min(num_sms / (ceil_div(M, SBM) * ceil_div(N, NSBN)), ceil_div(K, 128) / SPLIT_KB))"] },
              { "kernel": "sm90_sm100_fp8_rowwise_gemm_splitk",
                "when": "M > GEMV_M && M <= SPLIT_M && N > NARROW_N",
                "grid": ["ceil_div(M, SBM) * ceil_div(N, SBN) * max(1, min(num_sms / (ceil_div(M, SBM) * ceil_div(N, SBN)), ceil_div(K, 128) / SPLIT_KB))"],
                "block": ["384"],
                "smem": "min(SSTAGES, 230400 / (128 * SBM + 128 * SBN)) * (128 * SBM + 128 * SBN) + 2048",
                "args": ["tma_as", "tma_bs", "a_scale", "b_scale", "d", "workspace",
                         "M", "N", "K", "max(1, min(num_sms / (ceil_div(M, SBM) * ceil_div(N, SBN)), ceil_div(K, 128) / SPLIT_KB))"] },
              { "kernel": "sm90_sm100_fp8_rowwise_gemm_tma",
                "when": "M > max(SPLIT_M, GEMV_M)",
                "grid": ["MC * max(1, min(num_sms, ceil_div(M, 128) * ceil_div(N, BN)) / MC)"],
                "cluster": ["MC"],
                "block": ["384"],
                "smem": "min(STAGES, (230400 - (EPI > 0) * (264 * BN + 2048)) / (16384 + 128 * BN)) * (16384 + 128 * BN) + (EPI > 0) * (264 * BN + 2048) + 2048",
                "args": ["tma_a", "tma_b", "tma_bh", "a_scale", "b_scale", "d", "M", "N", "K"] } ] }
*/
// FP8 rowwise GEMM, hand-tuned: d [M,N] = bf16_rne(a_scale[m] * b_scale[n] * sum_k a[m,k] b[n,k]),
// a [M,K] and b [N,K] E4M3, both K-contiguous; fp32 scales; fp32 accumulation.
//
// Design (the bf16_gemm machinery with 1-byte operands; one kernel, one launch, every shape):
//  - Tiles: 128 x BN output tiles, k-blocks of 128 E4M3 (128 bytes: one 128-byte swizzle row), so
//    stage sizes and the SW128 K-major descriptors are byte-for-byte those of bf16_gemm; one MMA
//    consumes k32 = 32 bytes, so 4 MMAs per k-block, each +32 bytes on the descriptor start.
//    TMA zero-fills M, N and K tails (zeros add nothing to the dot products); stores are masked.
//  - Pipeline: STAGES-deep ring (A 16 KiB + B BN*128 B per stage) with full (TMA tx bytes) and
//    empty (MMA side) mbarriers; STAGES capped so the ring fits in 227 KiB, as the plan's smem.
//  - Persistent: grid = min(num_sms, tiles), tile order grouped by GROUP_M row-tiles for L2 reuse.
//  - sm_90a: warpgroup 0 produces (one TMA thread, setmaxnreg 40); warpgroups 1-2 consume, 64 rows
//    x BN each, wgmma m64nBNk32 e4m3 into a register accumulator. NOTE: Hopper's FP8 wgmma keeps
//    only ~14 mantissa bits while accumulating, so every PROMOTE k-blocks the wgmma accumulator is
//    waited for, added into a second fp32 accumulator, and restarted (scale-d = 0). The default,
//    PROMOTE = 1 (128 elements, CUTLASS's default interval), bounds a biased truncation error to
//    ~sqrt(K*PROMOTE/8)*2^-14 of rms(d) (~2^-9 at K = 8192) against a 3e-3 Frobenius tolerance
//    that bf16 rounding already half uses; PROMOTE = 4 (~2^-8) is a knob to measure first.
//    The wait_group(0) per interval idles this warpgroup's tensor work, which the other consumer
//    warpgroup's wgmmas fill. Two accumulators cost BN registers per thread, hence BN <= 192.
//    Epilogue: total * (a_scale[row] * b_scale[col]) in fp32, RNE to bf16. EPI=2 (default):
//    even and odd k-blocks alternate two wgmma accumulators, so each promotion runs under the
//    next k-block's wgmmas; the scales are loaded when a tile starts; the bf16 rows are staged
//    in shared memory and stored with cp.async.bulk. On the H200 that is 1.20x EPI=0 (register
//    stores, scales loaded after the main loop) geomean, 1.45x at K=2048 (2026-12-02).
//  - sm_100a: warp 0 TMA, warp 1 one thread issuing tcgen05.mma kind::f8f6f4 (E4M3 x E4M3, M=128,
//    N=BN, K=32) into a double-buffered fp32 TMEM accumulator (full fp32 accumulation there, so
//    no promotion); warps 4..11 drain it with tcgen05.ld 32x32b.x32, apply the scales, store bf16.
// Knobs: BN (tile N; 192 default: there EPI=2 becomes EPI=1, two accumulators of 96 registers;
// on the H200 1.01-1.13x BN=128 with EPI=2 at the large shapes, 2026-12-03),
// STAGES (ring depth), PROMOTE (k-blocks per promotion, sm_90a only), GROUP_M (tile-order group),
// MC (sm_90a: 2 = clusters of two CTAs along M sharing each B tile by TMA multicast; EPI 2 is 1),
// EPI (0 register stores, 1 staged, 2 staged + two accumulators; 2 needs BN <= 128, PROMOTE=1).
// Small M: a split-K kernel (below; knob SPLIT_M, 0 = off), picked by the plan's "when" (NOTES.md).
// Decode M (knob GEMV_M, default 16; 0 = off): an mma.sync kernel that
// streams B into fragments through ws/gemv.cuh (below; GEMV_NT, GEMV_WARPS, GEMV_UNROLL, GEMV_KSPLIT,
// GEMV_LOAD, GEMV_ORDER).
// Not done: ping-pong consumers for FP8 (register budget), 2-CTA tcgen05.
//
// Evaluate: build/warpsmith eval fp8_rowwise_gemm kernels/fp8_rowwise_gemm/kernel.cu
// warpsmith:sass sm_90a: QGMMA UTMALDG UBLKCP
// warpsmith:sass sm_90a EPI=0: QGMMA UTMALDG
// warpsmith:sass sm_100a: UTCQMMA UTMALDG LDTM
// warpsmith:sass sm_90a EPI=1: QGMMA UTMALDG UBLKCP
// warpsmith:sass sm_90a MC=2: QGMMA UTMALDG.2D.MULTICAST UCGABAR_ARV
// warpsmith:sass sm_90a EPI=2: QGMMA UTMALDG UBLKCP
// warpsmith:sass sm_100a EPI=1: UTCQMMA UTMALDG LDTM
// The decode kernel (GEMV_M): ptxas lowers its e4m3 mma.sync to f16 HMMAs with fp32 accumulation.
// warpsmith:sass sm_90a GEMV_M=16: HMMA.16816.F32 LDG.E.NA.128.CONSTANT
// warpsmith:sass sm_100a GEMV_M=16: HMMA.16816.F32 LDG.E.NA.128.CONSTANT
#include <cuda_bf16.h>

#include "ws/dense_gemm.cuh"
#include "ws/gemm.cuh"
#include "ws/gemv.cuh"
#include "ws/split_k.cuh"
#include "ws/wgmma.cuh"
#include "ws/wgmma_ring.cuh"

#ifndef BN
#define BN 192
#endif
#ifndef STAGES
#define STAGES 6
#endif
#ifndef PROMOTE
#define PROMOTE 1
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef SBN
#define SBN 128
#endif
#ifndef SBM
#define SBM 64  // split-K kernel: tile rows (one consumer warpgroup; 128: two)
#endif
#ifndef SSTAGES
#define SSTAGES 8  // split-K kernel: most ring stages
#endif
#ifndef NSBN
#define NSBN 32  // the narrow split-K instance's tile N (where N <= NARROW_N)
#endif
#ifndef NSSTAGES
#define NSSTAGES 16  // its most ring stages
#endif
#ifndef EPI
#define EPI 2  // H200, 2026-12-02: 1.20x EPI=0 geomean, 1.45x at K=2048 (kernels/SWEEPS-LOG.md)
#endif
#ifndef MC
#define MC 1  // sm_90a: CTAs per cluster along M sharing each B tile by TMA multicast (1 or 2)
#endif
// Knob precedence, so that every combination the tuner draws compiles: EPI = 2 with MC = 2,
// PROMOTE > 1 or BN > 128 is EPI 1 (its second accumulator frees stages in this CTA only).
#if EPI == 2 && (MC > 1 || PROMOTE != 1 || BN > 128)
#undef EPI
#define EPI 1
#endif
#ifndef GEMV_M
#define GEMV_M 16  // M up to which the plan runs the mma.sync decode kernel (0: never)
#endif
#ifndef GEMV_NT
#define GEMV_NT 2  // its 8-column tiles per CTA
#endif
#ifndef GEMV_WARPS
#define GEMV_WARPS 8  // its warps per CTA, interleaved over K
#endif
#ifndef GEMV_UNROLL
#define GEMV_UNROLL 2  // its 64-k steps loaded before their MMAs, per warp
#endif
#ifndef GEMV_KSPLIT
#define GEMV_KSPLIT 1  // its CTAs per cluster, splitting K (ws/gemv.cuh)
#endif
#ifndef GEMV_LOAD
#define GEMV_LOAD 0  // B loads: 0 L1 no-allocate, 1 + L2 256-B fetch, 2 L2 evict-first, 3 L2 256-B
#endif
#ifndef GEMV_ORDER
#define GEMV_ORDER 0  // its warps' k-blocks: 0 in turn, 1 contiguous runs
#endif

namespace {

using ws::uint32_t;
using ws::uint64_t;

struct Config {
  static constexpr int kBM = 128, kBN = BN, kBK = 128;  // kBK in E4M3 elements = bytes
  static constexpr int kThreads = 384;
  static constexpr int kABytes = kBM * kBK;  // (BM,BK) e4m3, 128B-swizzled
  static constexpr int kBBytes = kBN * kBK;  // (BN,BK) e4m3, 128B-swizzled
  static constexpr int kStageBytes = kABytes + kBBytes;
  static constexpr int kSmemCap = 227 * 1024 - 2048;  // 230400, the plan's cap (barriers, align)
  // EPI = 1 (sm_90a): per consumer warpgroup, 64 staged bf16 output rows of 2*BN + 16 bytes (the
  // pad makes the fragment writes conflict-free) and BN fp32 column scales, after the ring.
  static constexpr int kEpi = EPI;
  static constexpr int kOutPitch = 2 * kBN + 16;
  static constexpr int kEpiWgBytes = 64 * kOutPitch + 4 * kBN;
  static constexpr int kEpiBytes = EPI ? 2 * kEpiWgBytes : 0;  // = (EPI > 0) * (264 * BN + 2048)
  static constexpr int kStages = STAGES < (kSmemCap - kEpiBytes) / kStageBytes
                                     ? STAGES
                                     : (kSmemCap - kEpiBytes) / kStageBytes;
  static constexpr int kPromote = PROMOTE;
  static constexpr int kGroupM = GROUP_M;
  static constexpr int kAccCols = ws::tmem_columns(2 * kBN);  // double-buffered accumulator
};
static_assert(Config::kBN % 64 == 0 && Config::kBN <= 192, "BN: 64, 128 or 192");
static_assert(Config::kStages >= 2, "at least two stages fit");
static_assert(Config::kEpi >= 0 && Config::kEpi <= 2, "EPI: 0, 1 or 2");
static_assert(MC == 1 || (MC == 2 && EPI != 2), "MC: 1, or 2 with EPI 0 or 1");
static_assert(Config::kEpi < 2 || Config::kBN <= 128, "EPI=2: three accumulators of BN/2 fp32");
static_assert(Config::kEpi < 2 || Config::kPromote == 1, "EPI=2 promotes every k-block");
static_assert(Config::kEpiBytes == (Config::kEpi > 0) * (264 * Config::kBN + 2048), "plan's smem");
static_assert(Config::kPromote >= 1, "promote at least once per tile");
static_assert(Config::kABytes % 1024 == 0 && Config::kBBytes % 1024 == 0, "1024-byte atoms");

// The split-K kernel's tiles: SBM x kBn, as deep a ring as fits (up to kMaxStages stages).
template <int kBn, int kMaxStages>
struct SplitConfigT {
  static constexpr int kBM = SBM, kBN = kBn, kBK = 128;
  static constexpr int kABytes = kBM * kBK;
  static constexpr int kBBytes = kBN * kBK;
  static constexpr int kStageBytes = kABytes + kBBytes;
  static constexpr int kStages =
      kMaxStages < Config::kSmemCap / kStageBytes ? kMaxStages : Config::kSmemCap / kStageBytes;
  static constexpr int kAccCols = ws::tmem_columns(kBN);  // one accumulator
  static_assert(kBN == 32 || kBN == 64 || kBN == 128, "split-K tile N: 32, 64 or 128");
  static_assert(kStages >= 2, "at least two stages fit");
};
// SBN wide tiles; where N <= NARROW_N the plan launches the NSBN-wide instance.
using SplitConfig = SplitConfigT<SBN, SSTAGES>;
using SplitConfigNarrow = SplitConfigT<NSBN, NSSTAGES>;
static_assert(SBN == 64 || SBN == 128, "SBN: 64 or 128");
static_assert(SBM == 64 || SBM == 128, "SBM: 64 or 128 rows");

// sm_90a main loop of consumer warpgroup cw over one tile's nkb k-blocks, from ring position it
// on (it advances past them): wgmmas into acc, every PROMOTE k-blocks (and at the end) acc joins
// total exactly; a stage is freed once its wgmmas are done. Every wgmma is complete on return.
template <class Cfg, int kMc = 1>
__device__ __forceinline__ void promote_loop(float (&acc)[Cfg::kBN / 2],
                                             float (&total)[Cfg::kBN / 2], uint32_t smem,
                                             uint32_t full, uint32_t empty, int nkb, int cw,
                                             bool signal, uint32_t& it) {
  uint32_t prev = 0;
  bool has_prev = false;  // a stage whose wgmmas may still be reading it
  for (int kb = 0; kb < nkb; ++kb, ++it) {
    const uint32_t s = it % Cfg::kStages, ph = (it / Cfg::kStages) & 1;
    ws::mbar_wait(full + 8 * s, ph);
    // acc restarts at the first k-block of an interval.
    ws::wgmma_kblock<Cfg, true>(acc, smem, s, cw, kb % Config::kPromote == 0);
    if ((kb + 1) % Config::kPromote == 0 || kb + 1 == nkb) {
      // Promote: the interval's partial sum joins the fp32 total exactly.
      ws::wgmma_wait<0>();
      ws::fence_operands(acc);
      if (signal) {
        if (has_prev) ws::release_stage<kMc>(empty + 8 * prev);
        ws::release_stage<kMc>(empty + 8 * s);
      }
      has_prev = false;
#pragma unroll
      for (int i = 0; i < Cfg::kBN / 2; ++i) total[i] += acc[i];
    } else {
      if (has_prev) {
        ws::wgmma_wait<1>();  // the previous k-block's wgmmas are done: free its stage
        if (signal) ws::release_stage<kMc>(empty + 8 * prev);
      }
      prev = s;
      has_prev = true;
    }
  }
}

#if EPI != 0 && !(defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000)
// EPI = 2, one k-block after the first: issues it into cur (restarted: PROMOTE = 1), waits for
// the previous k-block (wait_group 1: only this one may still run; it wrote other), frees that
// stage and promotes other into total while cur's wgmmas run.
__device__ __forceinline__ void kblock_acc2(float (&cur)[Config::kBN / 2],
                                            float (&other)[Config::kBN / 2],
                                            float (&total)[Config::kBN / 2], uint32_t smem,
                                            uint32_t full, uint32_t empty, uint32_t& it,
                                            uint32_t& prev, int cw, bool signal) {
  const uint32_t s = it % Config::kStages, ph = (it / Config::kStages) & 1;
  ws::mbar_wait(full + 8 * s, ph);
  ws::wgmma_kblock<Config, true>(cur, smem, s, cw, true);
  ws::wgmma_wait<1>();
  ws::fence_operands(other);
  if (signal) ws::mbar_arrive(empty + 8 * prev);
#pragma unroll
  for (int i = 0; i < Config::kBN / 2; ++i) total[i] += other[i];
  prev = s;
  ++it;
}

// sm_90a consumer warpgroup cw (rows 64*cw.. of each 128 x BN tile) with EPI != 0: the main loop
// (EPI = 1: today's; EPI = 2, PROMOTE = 1 only: two wgmma accumulators, each k-block's promotion
// overlapped with the next k-block's wgmmas)
// and a staged epilogue: the tile's a_scale / b_scale values are loaded when the tile starts (their
// latency hides under the main loop); after it, b_scale goes to shared memory, each thread writes
// its scaled bf16 pairs into 64 staged rows (pitch 2*BN + 16: conflict-free) and 64 threads store
// one row each with cp.async.bulk (shared -> global, clipped to N, rows < M only), so the
// warpgroup returns to its MMAs at once; before the staging is rewritten (next tile) each issuing
// thread waits for its bulk group to have read it. Same numerics as EPI = 0, bit for bit.
__device__ __forceinline__ void consumer_staged_epilogue(
    uint32_t smem, uint32_t full, uint32_t empty, const float* __restrict__ a_scale,
    const float* __restrict__ b_scale, __nv_bfloat16* __restrict__ d, int M, int N, int tiles,
    int tiles_m, int tiles_n, int kblocks, int cw, int lane, unsigned char* smem_raw) {
  ws::setmaxnreg_inc<232>();
  const int t128 = threadIdx.x % 128;  // thread in the warpgroup
  const int w = t128 / 32;
  const bool signal = t128 == 0;
  const uint32_t stage_out =
      smem + Config::kStages * Config::kStageBytes + cw * Config::kEpiWgBytes;
  unsigned char* out_rows = smem_raw + (stage_out - ws::smem_u32(smem_raw));
  float* sb_smem = reinterpret_cast<float*>(out_rows + 64 * Config::kOutPitch);
  constexpr int kSbPer = (Config::kBN + 127) / 128;  // b_scale values per thread
  float acc[Config::kBN / 2];    // (64, BN) wgmma accumulator of the current promotion interval
  float acc1[Config::kBN / 2];   // EPI = 2: the other interval's accumulator
  float total[Config::kBN / 2];  // (64, BN) fp32 sum of the promoted intervals
  uint32_t it = 0;
  const ws::CtaTiles<Config, MC> walk{tiles_m, tiles_n, tiles};
  for (int t = walk.first(); t < walk.count(); t += walk.step()) {
    int tm, tn;
    walk.coords(t, tm, tn);
    // Scales first: their loads complete during the main loop.
    const int row0 = tm * Config::kBM + cw * 64 + 16 * w + lane / 4;
    const float sa0 = row0 < M ? a_scale[row0] : 0.0f;
    const float sa1 = row0 + 8 < M ? a_scale[row0 + 8] : 0.0f;
    const int col0 = tn * Config::kBN;
    float sbv[kSbPer];
#pragma unroll
    for (int i = 0; i < kSbPer; ++i) {
      const int c = t128 + 128 * i;
      sbv[i] = c < Config::kBN && col0 + c < N ? b_scale[col0 + c] : 0.0f;
    }
#pragma unroll
    for (int i = 0; i < Config::kBN / 2; ++i) total[i] = 0.0f;
    if constexpr (Config::kEpi == 1) {
      promote_loop<Config, MC>(acc, total, smem, full, empty, kblocks, cw, signal, it);
    } else {
      // Even k-blocks into acc, odd ones into acc1 (straight-line pairs: ptxas keeps the wgmmas
      // asynchronous only when each accumulator's in-flight span is unambiguous).
      uint32_t prev = it % Config::kStages;
      ws::mbar_wait(full + 8 * prev, (it / Config::kStages) & 1);
      ws::wgmma_kblock<Config, true>(acc, smem, prev, cw, true);
      ++it;
      int kb = 1;
      for (; kb + 1 < kblocks; kb += 2) {
        kblock_acc2(acc1, acc, total, smem, full, empty, it, prev, cw, signal);
        kblock_acc2(acc, acc1, total, smem, full, empty, it, prev, cw, signal);
      }
      if (kb < kblocks) {  // an even count: one more (odd) k-block, then acc1 is the last
        kblock_acc2(acc1, acc, total, smem, full, empty, it, prev, cw, signal);
        ws::wgmma_wait<0>();
        ws::fence_operands(acc1);
        if (signal) ws::mbar_arrive(empty + 8 * prev);
#pragma unroll
        for (int i = 0; i < Config::kBN / 2; ++i) total[i] += acc1[i];
      } else {
        ws::wgmma_wait<0>();
        ws::fence_operands(acc);
        if (signal) ws::mbar_arrive(empty + 8 * prev);
#pragma unroll
        for (int i = 0; i < Config::kBN / 2; ++i) total[i] += acc[i];
      }
    }
    // Staged epilogue. The previous tile's readers of sb_smem all passed its second barrier.
#pragma unroll
    for (int i = 0; i < kSbPer; ++i) {
      if (t128 + 128 * i < Config::kBN) sb_smem[t128 + 128 * i] = sbv[i];
    }
    if (t128 < 64) ws::bulk_wait_group_read<0>();  // the previous tile's row left the staging
    ws::named_bar_sync(1 + cw, 128);
    // Fragment: register 4j+e (e = 0..3) of thread (warp w, lane l) is row
    // 16w + l/4 + 8*(e/2), column 8j + 2*(l%4) + e%2.
    unsigned char* r0 = out_rows + (16 * w + lane / 4) * Config::kOutPitch + 4 * (lane % 4);
#pragma unroll
    for (int j = 0; j < Config::kBN / 8; ++j) {
      const float2 sb = *reinterpret_cast<const float2*>(sb_smem + 8 * j + 2 * (lane % 4));
      *reinterpret_cast<uint32_t*>(r0 + 16 * j) =
          ws::pack_bf16(total[4 * j] * (sa0 * sb.x), total[4 * j + 1] * (sa0 * sb.y));
      *reinterpret_cast<uint32_t*>(r0 + 8 * Config::kOutPitch + 16 * j) =
          ws::pack_bf16(total[4 * j + 2] * (sa1 * sb.x), total[4 * j + 3] * (sa1 * sb.y));
    }
    ws::fence_proxy_async_shared();  // the staged rows, before the async proxy reads them
    ws::named_bar_sync(1 + cw, 128);
    if (t128 < 64) {
      const int row = tm * Config::kBM + cw * 64 + t128;
      const int cols = min(Config::kBN, N - col0);  // N % 16 == 0: 32-byte multiples
      if (row < M) {
        ws::bulk_store_1d(d + static_cast<long long>(row) * N + col0,
                          stage_out + t128 * Config::kOutPitch, 2 * cols);
        ws::bulk_commit_group();
      }
    }
  }
  if (t128 < 64) ws::bulk_wait_group<0>();  // shared memory stays until the stores have read it
}
#endif

}  // namespace

// tma_a: a [M,K] as (K,M) boxes (128,128); tma_b: b [N,K] as (K,N) boxes (128,BN);
// a_scale [M], b_scale [N] fp32; d [M,N] bf16.
extern "C" __global__ void __launch_bounds__(Config::kThreads, 1) sm90_sm100_fp8_rowwise_gemm_tma(
    const __grid_constant__ ws::TensorMap tma_a, const __grid_constant__ ws::TensorMap tma_b,
    const __grid_constant__ ws::TensorMap tma_bh, const float* __restrict__ a_scale,
    const float* __restrict__ b_scale, __nv_bfloat16* __restrict__ d, int M, int N, int K) {
  (void)tma_bh;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const ws::RingSmem rs = ws::ring_smem<Config>(smem_raw, Config::kEpiBytes);
  const uint32_t smem = rs.smem, full = rs.full, empty = rs.empty;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const ws::TileGrid<Config> g(M, N, K);  // NOTE: after warp, lane (else other SASS on sm_100a)

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
  // ======================= sm_100a =======================
  ws::init_ring<Config::kStages, 2>(&tma_a, &tma_b, rs, 1);  // empty: one tcgen05.commit
  // Warp 2 allocates and later frees the accumulators.
  const uint32_t tmem_base = ws::tmem_alloc_cta(warp == 2, rs.tmem_slot, Config::kAccCols);

  if (warp == 0) {
    if (lane == 0)
      ws::produce_band<Config>(&tma_a, &tma_b, smem, full, empty, g.tiles_m, g.tiles_n, g.kblocks);
  } else if (warp == 1) {
    if (lane == 0) {
      ws::issue_mma_band<Config, true, ws::kDenseIdesc<true, Config::kBN>>(
          smem, full, empty, rs.acc_full, rs.acc_empty, tmem_base, g.tiles, g.kblocks);
    }
  } else if (warp >= 4) {
    // Epilogue: warp w reads TMEM lanes 32*(w%4).. (its sub-partition), half h of the columns.
    // NOTE: here, not in ws/dense_gemm.cuh: as a function it compiled to other SASS.
    const int q = warp % 4, h = (warp - 4) / 4;
    uint32_t local = 0;
    for (int t = blockIdx.x; t < g.tiles; t += gridDim.x, ++local) {
      int tm, tn;
      ws::band_tile<Config::kGroupM>(t, g.tiles_m, g.tiles_n, tm, tn);
      const uint32_t buf = local & 1, aph = (local >> 1) & 1;
      const int row = tm * Config::kBM + q * 32 + lane;
      const float sa = row < M ? a_scale[row] : 0.0f;  // before the wait: hides its latency
      ws::mbar_wait(rs.acc_full + 8 * buf, aph);
      ws::tc_fence_after();
#pragma unroll 1
      for (int c = 0; c < Config::kBN / 2; c += 32) {
        const int col0 = h * (Config::kBN / 2) + c;
        uint32_t r[32];
        ws::tmem_ld32(tmem_base + (uint32_t(q * 32) << 16) + buf * Config::kBN + col0, r);
        const int col = tn * Config::kBN + col0;
        if (row < M) {
          ws::store_row32_scaled_bf16(d + static_cast<long long>(row) * N + col,
                                      reinterpret_cast<const float*>(r), sa, b_scale + col, col,
                                      N);
        }
      }
      ws::tc_fence_before();
      __syncwarp();
      if (lane == 0) ws::mbar_arrive(rs.acc_empty + 8 * buf);
    }
  }
  ws::tmem_free_cta(warp == 2, tmem_base, Config::kAccCols);
#else
  // ======================= sm_90a =======================
  // empty: one arrival per consumer warpgroup (MC = 2: of both CTAs; ws/gemm.cuh, produce_pairs)
  ws::init_ring<Config::kStages, 0>(&tma_a, &tma_b, rs, 2 * MC);
  // Consumer warpgroup cw: rows 64*cw.. of each tile.
  ws::dense_gemm_sm90<Config, MC>(&tma_a, &tma_b, &tma_bh, rs, g, [&](int cw) {
#if EPI == 0
    ws::setmaxnreg_inc<232>();
    const int t128 = threadIdx.x % 128;  // thread in the warpgroup
    const bool signal = t128 == 0;
    float acc[Config::kBN / 2];    // (64, BN) wgmma accumulator of the current promotion interval
    float total[Config::kBN / 2];  // (64, BN) fp32 sum of the promoted intervals
    uint32_t it = 0;
    const ws::CtaTiles<Config, MC> walk{g.tiles_m, g.tiles_n, g.tiles};
    for (int t = walk.first(); t < walk.count(); t += walk.step()) {
      int tm, tn;
      walk.coords(t, tm, tn);
#pragma unroll
      for (int i = 0; i < Config::kBN / 2; ++i) total[i] = 0.0f;
      promote_loop<Config, MC>(acc, total, smem, full, empty, g.kblocks, cw, signal, it);
      // Fragment: register 4j+e (e = 0..3) of thread (warp w, lane l) is row
      // 16w + l/4 + 8*(e/2), column 8j + 2*(l%4) + e%2.
      const int w = t128 / 32;
      const int row0 = tm * Config::kBM + cw * 64 + 16 * w + lane / 4;
      const float sa0 = row0 < M ? a_scale[row0] : 0.0f;
      const float sa1 = row0 + 8 < M ? a_scale[row0 + 8] : 0.0f;
      const int colb = tn * Config::kBN + 2 * (lane % 4);
      ws::store_fragment_scaled_bf16<Config::kBN>(d, total, row0, M, colb, N, sa0, sa1, b_scale);
    }
#else
    consumer_staged_epilogue(smem, full, empty, a_scale, b_scale, d, M, N, g.tiles, g.tiles_m,
                             g.tiles_n, g.kblocks, cw, lane, smem_raw);
#endif
  });
#endif
}

// Split-K for small M (the plan launches it alone where M <= SPLIT_M; with M = 0 it would
// return at once): CTA u computes output tile u / splits (128 x SBN) over the k-blocks of split
// u % splits (ws/split_k.cuh: split_range). splits == 1 stores the scaled bf16 directly; else each
// unit stores its unscaled fp32 partial into slice `split` of the workspace (after 8 * tiles bytes
// of counters, rounded up to 256) and the last unit of a tile (a consumer warpgroup's 64 rows on
// sm_90a) sums the slices in split order, applies both scales and stores bf16. Same ring,
// barriers, MMAs and PROMOTE intervals (counted from the split's first k-block) as the kernel
// above, one unit per CTA; a consumer warpgroup whose 64 rows are all past M idles. It triggers
// the plan's next launch at once (they share no memory).
template <class C>
__device__ __forceinline__ void splitk_body(const ws::TensorMap& tma_a,
                                            const ws::TensorMap& tma_b,
                                            const float* __restrict__ a_scale,
                                            const float* __restrict__ b_scale,
                                            __nv_bfloat16* __restrict__ d,
                                            unsigned char* workspace, int M, int N, int K,
                                            int splits) {
  ws::griddep_launch_dependents();
  // NOTE: filled here, not by a ws/split_k.cuh function: its merged early exits change the SASS.
  ws::SplitUnit u;
  const ws::TileGrid<C> g(M, N, K);
  const int plan_splits = splits;
  splits = max(1, min(splits, g.kblocks));  // every split non-empty
  if (static_cast<int>(blockIdx.x) >= g.tiles * splits) return;
  u.splits = splits;
  u.tile = blockIdx.x / plan_splits;
  u.split = blockIdx.x % plan_splits;
  if (u.split >= splits) return;
  u.tm = u.tile % g.tiles_m;
  u.tn = u.tile / g.tiles_m;
  ws::split_range(u.split, splits, g.kblocks, u.kb0, u.kb1);
  u.use_workspace(workspace, g.tiles, M, N);
  const int tm = u.tm, tn = u.tn, nkb = u.kb1 - u.kb0;

  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const ws::RingSmem rs = ws::ring_smem<C>(smem_raw, 0);
  const uint32_t smem = rs.smem, full = rs.full, empty = rs.empty;
  int* last_flag = ws::split_flags(smem_raw, rs);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
  // ======================= sm_100a =======================
  ws::init_ring<C::kStages, 1>(&tma_a, &tma_b, rs, 1);
  const uint32_t tmem_base = ws::tmem_alloc_cta(warp == 2, rs.tmem_slot, C::kAccCols);
  if (warp == 0) {
    if (lane == 0) ws::produce_range<C>(&tma_a, &tma_b, smem, full, empty, tm, tn, u.kb0, u.kb1);
  } else if (warp == 1) {
    // issue_mma_band over "tiles = blockIdx.x + 1": exactly this CTA's one unit, buffer 0.
    if (lane == 0) {
      ws::issue_mma_band<C, true, ws::kDenseIdesc<true, C::kBN>>(
          smem, full, empty, rs.acc_full, rs.acc_empty, tmem_base, blockIdx.x + 1, nkb);
    }
  } else if (warp >= 4) {
    // NOTE: not ws::split_epilogue_sm100: with the scale load outside it, registers move.
    // Each half of the epilogue warps takes kHalf columns; with kBN = 32 the first half takes
    // them all and the second only counts in split_arrive.
    constexpr int kHalf = C::kBN / 2 >= 32 ? C::kBN / 2 : 32;
    const int q = warp % 4, h = (warp - 4) / 4;
    const bool has_cols = h * kHalf < C::kBN;
    const int row = tm * C::kBM + q * 32 + lane;
    const long long row_off = static_cast<long long>(row) * N;
    // Rows past the tile (SBM = 64: accumulator rows 64..127) are dropped like rows past M.
    const int row_end = min(M, (tm + 1) * C::kBM);
    const float sa = row < row_end ? a_scale[row] : 0.0f;
    ws::mbar_wait(rs.acc_full, 0);
    ws::tc_fence_after();
#pragma unroll 1
    for (int c = 0; c < kHalf && has_cols; c += 32) {
      const int col0 = h * kHalf + c;
      uint32_t r[32];
      ws::tmem_ld32(tmem_base + (uint32_t(q * 32) << 16) + col0, r);
      const int col = tn * C::kBN + col0;
      if (row < row_end) {
        if (u.splits == 1) {
          ws::store_row32_scaled_bf16(d + row_off + col, reinterpret_cast<const float*>(r), sa,
                                      b_scale + col, col, N);
        } else {
          ws::store_row32_f32(u.part + u.split * u.slice + row_off + col,
                              reinterpret_cast<const float*>(r), col, N);
        }
      }
    }
    if (u.splits > 1 && ws::split_arrive<256>(u.counters + 2 * u.tile, u.splits, 1,
                                              threadIdx.x == 128, &last_flag[0])) {
#pragma unroll 1
      for (int c = 0; c < kHalf && has_cols; c += 32) {
        const int col = tn * C::kBN + h * kHalf + c;
        if (row < row_end) {
          float f[32];
          ws::reduce_row32_f32(f, u.part + row_off + col, u.slice, u.splits, col, N);
          ws::store_row32_scaled_bf16(d + row_off + col, f, sa, b_scale + col, col, N);
        }
      }
    }
  }
  ws::tmem_free_cta(warp == 2, tmem_base, C::kAccCols);
#else
  // ======================= sm_90a =======================
  const int active = C::kBM > 64 && M - tm * C::kBM > 64 ? 2 : 1;
  ws::init_ring<C::kStages, 0>(&tma_a, &tma_b, rs, active);
  __syncthreads();
  const int wg = threadIdx.x / 128;
  if (wg == 0) {
    ws::setmaxnreg_dec<40>();
    if (threadIdx.x == 0) ws::produce_range<C>(&tma_a, &tma_b, smem, full, empty, tm, tn, u.kb0, u.kb1);
  } else {
    ws::setmaxnreg_inc<232>();
    const int cw = wg - 1;
    if (cw >= active) return;
    const int t128 = threadIdx.x % 128;
    const bool signal = t128 == 0;
    float acc[C::kBN / 2];    // the wgmma accumulator of the current promotion interval
    float total[C::kBN / 2];  // fp32 sum of the promoted intervals
#pragma unroll
    for (int i = 0; i < C::kBN / 2; ++i) total[i] = 0.0f;
    uint32_t it = 0;
    promote_loop<C>(acc, total, smem, full, empty, nkb, cw, signal, it);
    const int w = t128 / 32;
    const int row0 = tm * C::kBM + cw * 64 + 16 * w + lane / 4;
    const int colb = tn * C::kBN + 2 * (lane % 4);
    // NOTE: local: a shared store-partial / arrive / reduce function compiled to other SASS.
    bool store = true;
    if (u.splits > 1) {
      ws::store_fragment_f32<C::kBN>(u.part + u.split * u.slice, total, 0, row0, M, colb, N);
      store = ws::split_arrive<128>(u.counters + 2 * u.tile + cw, u.splits, 1 + cw, signal,
                                    &last_flag[cw]);
      if (store)
        ws::reduce_fragment_f32<C::kBN>(total, u.part, u.slice, u.splits, 0, row0, M, colb, N);
    }
    if (store) {
      const float sa0 = row0 < M ? a_scale[row0] : 0.0f;
      const float sa1 = row0 + 8 < M ? a_scale[row0 + 8] : 0.0f;
      ws::store_fragment_scaled_bf16<C::kBN>(d, total, row0, M, colb, N, sa0, sa1, b_scale);
    }
  }
#endif
}

extern "C" __global__ void __launch_bounds__(Config::kThreads, 1)
    sm90_sm100_fp8_rowwise_gemm_splitk(const __grid_constant__ ws::TensorMap tma_a,
                                       const __grid_constant__ ws::TensorMap tma_b,
                                       const float* __restrict__ a_scale,
                                       const float* __restrict__ b_scale,
                                       __nv_bfloat16* __restrict__ d, unsigned char* workspace,
                                       int M, int N, int K, int splits) {
  splitk_body<SplitConfig>(tma_a, tma_b, a_scale, b_scale, d, workspace, M, N, K, splits);
}

// The same over NSBN-wide tiles (at M128 N1536: 96 tiles, no split), for N <= NARROW_N; tma_b:
// B boxes of NSBN rows.
extern "C" __global__ void __launch_bounds__(Config::kThreads, 1)
    sm90_sm100_fp8_rowwise_gemm_splitk_narrow(const __grid_constant__ ws::TensorMap tma_a,
                                              const __grid_constant__ ws::TensorMap tma_b,
                                              const float* __restrict__ a_scale,
                                              const float* __restrict__ b_scale,
                                              __nv_bfloat16* __restrict__ d,
                                              unsigned char* workspace, int M, int N, int K,
                                              int splits) {
  splitk_body<SplitConfigNarrow>(tma_a, tma_b, a_scale, b_scale, d, workspace, M, N, K, splits);
}

// Decode GEMM (M <= GEMV_M, 16 by default): B streamed straight into
// m16n8k32 e4m3 mma.sync fragments by ws/gemv.cuh, each 64-k step's products promoted to the fp32
// accumulator (no TMA, no ring, no workspace); the warps' partials are summed in warp order, then
// total * (a_scale[row] * b_scale[col]) in fp32, RNE to bf16. Model: B is all the DRAM traffic
// (N * K bytes): 6.8 us for M 16, N 4096, K 7168 on the H200; measured 17.2-17.6 us (split-K
// 27.8-30.6, cuBLASLt 27.7: bf16_gemm/NOTES.md).
using GemvConfig = ws::GemvConfig<GEMV_M, GEMV_NT, GEMV_WARPS, GEMV_UNROLL, GEMV_KSPLIT,
                                     GEMV_LOAD, GEMV_ORDER>;

// a (M,K), b (N,K) e4m3 row-major, a_scale (M), b_scale (N) f32, d (M,N) bf16; M <= GEMV_M.
extern "C" __global__ void __launch_bounds__(GemvConfig::kThreads, 1)
    sm90_sm100_fp8_rowwise_gemm_gemv(const unsigned char* __restrict__ a,
                                     const unsigned char* __restrict__ b,
                                     const float* __restrict__ a_scale,
                                     const float* __restrict__ b_scale,
                                     __nv_bfloat16* __restrict__ d, int M, int N, int K) {
  extern __shared__ float4 gemv_red[];  // GemvConfig::kRedBytes
  ws::gemv<ws::GemvE4m3, GemvConfig>(
      a, b, M, N, K, gemv_red, [&](int row, int col, float v0, float v1) {
        const float sa = a_scale[row];
        *reinterpret_cast<uint32_t*>(d + static_cast<long long>(row) * N + col) =
            ws::pack_bf16(v0 * (sa * b_scale[col]), v1 * (sa * b_scale[col + 1]));
      });
}

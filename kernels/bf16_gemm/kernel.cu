/* warpsmith:plan
{ "knobs": { "BN": [256, 128, 192, 64], "STAGES": [4, 5, 3, 6], "GROUP_M": [8, 16, 4, 1],
             "SPLIT_M": [128, 0, 64, 256], "SBN": [64, 128, 256, 32], "SPLIT_KB": [4, 2, 8], "SMC": [1, 2, 4, 8],
             "SBM": [64, 128], "SSTAGES": [8, 4, 6, 12, 16],
             "NARROW_N": [2048, 0, 4096], "NSBN": [32, 64], "NSSTAGES": [16, 8, 12],
             "EPI": [1, 0], "PP": [0, 1], "MC": [1, 2], "GEMV_M": [16, 0, 32, 64], "GEMV_NT": [2, 4, 8, 1],
             "GEMV_WARPS": [8, 16, 4], "GEMV_UNROLL": [4, 2, 1, 8],
             "GEMV_KSPLIT": [1, 2, 4, 8],
             "GEMV_LOAD": [3, 0, 1, 2], "GEMV_ORDER": [0, 1] },
  "tensor_maps": {
    "tma_a": { "tensor": "a", "dims": ["K", "M"], "box": ["64", "128"], "swizzle": 128,
               "oob_fill": "zero", "l2_promotion": 256 },
    "tma_b": { "tensor": "b", "dims": ["K", "N"], "box": ["64", "BN"], "swizzle": 128,
               "oob_fill": "zero", "l2_promotion": 256 },
    "tma_bs": { "tensor": "b", "dims": ["K", "N"], "box": ["64", "SBN"], "swizzle": 128,
                "oob_fill": "zero", "l2_promotion": 256 },
    "tma_bn": { "tensor": "b", "dims": ["K", "N"], "box": ["64", "NSBN"], "swizzle": 128,
                "oob_fill": "zero", "l2_promotion": 256 },
    "tma_as": { "tensor": "a", "dims": ["K", "M"], "box": ["64", "SBM"], "swizzle": 128,
                "oob_fill": "zero", "l2_promotion": 256 },
    "tma_ac": { "tensor": "a", "dims": ["K", "M"], "box": ["64", "SBM / SMC"], "swizzle": 128,
                "oob_fill": "zero", "l2_promotion": 256 },
    "tma_bh": { "tensor": "b", "dims": ["K", "N"], "box": ["64", "BN / MC"], "swizzle": 128,
                "oob_fill": "zero", "l2_promotion": 256 } },
  "workspace": { "bytes": "(M <= SPLIT_M && M > GEMV_M && N <= NARROW_N) * (round_up(8 * (ceil_div(M, SBM) * ceil_div(N, NSBN)), 256) + 4 * (max(1, min(num_sms / (ceil_div(M, SBM) * ceil_div(N, NSBN)), ceil_div(K, 64) / SPLIT_KB))) * M * N) + (M <= SPLIT_M && M > GEMV_M && N > NARROW_N) * (round_up(8 * (ceil_div(M, SBM) * SMC * ceil_div(ceil_div(N, SBN), SMC)), 256) + 4 * (max(1, min(num_sms / (ceil_div(M, SBM) * SMC * ceil_div(ceil_div(N, SBN), SMC)), ceil_div(K, 64) / SPLIT_KB))) * M * N)",
                 "zero": true },
  "launch": [ { "kernel": "sm90_sm100_bf16_gemm_gemv",
                "when": "M <= GEMV_M",
                "grid": ["ceil_div(N, 8 * GEMV_NT) * GEMV_KSPLIT"],
                "cluster": ["GEMV_KSPLIT"],
                "block": ["32 * GEMV_WARPS"],
                "smem": "GEMV_WARPS * ceil_div(max(GEMV_M, 1), 16) * GEMV_NT * 512",
                "args": ["a", "b", "d", "M", "N", "K"] },
              { "kernel": "sm90_sm100_bf16_gemm_splitk_narrow",
                "when": "M > GEMV_M && M <= SPLIT_M && N <= NARROW_N",
                "grid": ["ceil_div(M, SBM) * ceil_div(N, NSBN) * max(1, min(num_sms / (ceil_div(M, SBM) * ceil_div(N, NSBN)), ceil_div(K, 64) / SPLIT_KB))"],
                "block": ["384"],
                "smem": "min(NSSTAGES, 230400 / (128 * SBM + 128 * NSBN)) * (128 * SBM + 128 * NSBN) + 2048",
                "args": ["tma_as", "tma_bn", "d", "workspace", "M", "N", "K",
                         "max(1, min(num_sms / (ceil_div(M, SBM) * ceil_div(N, NSBN)), ceil_div(K, 64) / SPLIT_KB))"] },
              { "kernel": "sm90_sm100_bf16_gemm_splitk",
                "when": "M > GEMV_M && M <= SPLIT_M && N > NARROW_N",
                "grid": ["ceil_div(M, SBM) * SMC * ceil_div(ceil_div(N, SBN), SMC) * max(1, min(num_sms / (ceil_div(M, SBM) * SMC * ceil_div(ceil_div(N, SBN), SMC)), ceil_div(K, 64) / SPLIT_KB))"],
                "cluster": ["SMC"],
                "block": ["384"],
                "smem": "min(SSTAGES, 230400 / (128 * SBM + 128 * SBN)) * (128 * SBM + 128 * SBN) + 2048",
                "args": ["tma_as", "tma_bs", "tma_ac", "d", "workspace", "M", "N", "K",
                         "max(1, min(num_sms / (ceil_div(M, SBM) * SMC * ceil_div(ceil_div(N, SBN), SMC)), ceil_div(K, 64) / SPLIT_KB))"] },
              { "kernel": "sm90_sm100_bf16_gemm_tma",
                "when": "M > max(SPLIT_M, GEMV_M)",
                "grid": ["MC * max(1, min(num_sms, ceil_div(M, 128) * ceil_div(N, BN)) / MC)"],
                "cluster": ["MC"],
                "block": ["384"],
                "smem": "min(STAGES, (230400 - EPI * (PP == 0) * (256 * BN + 2048)) / (16384 + 128 * BN)) * (16384 + 128 * BN) + EPI * (PP == 0) * (256 * BN + 2048) + 2048",
                "args": ["tma_a", "tma_b", "tma_bh", "d", "M", "N", "K"] } ] }
*/
// Dense BF16 GEMM, hand-tuned: d [M,N] = a [M,K] * b [N,K]^T, bf16 in and out, fp32 accumulation.
//
// Design (one kernel, one launch, every shape; the body is chosen by __CUDA_ARCH__):
//  - Tiles: 128 x BN output tiles, k-blocks of 64 bf16 (128 bytes: one 128-byte swizzle row).
//    A and B are both K-major, so each operand tile is rows of 128 bytes, loaded by TMA with the
//    128-byte swizzle (8-row atoms of 1024 bytes), the layout wgmma / tcgen05 read with
//    "K-major, SWIZZLE_128B" descriptors; a k16 step advances the descriptor start by 32 bytes.
//    TMA zero-fills out-of-bounds rows and k (M, N and K tails); stores are masked.
//  - Pipeline: a ring of STAGES shared-memory stages (A 16 KiB + B BN*128 B each), a "full"
//    mbarrier per stage (TMA transaction bytes) and an "empty" one (released by the MMA side).
//    STAGES is capped so the ring fits in 227 KiB (the plan's smem uses the same cap).
//  - Persistent: grid = min(num_sms, tiles); CTA c takes tiles c, c + grid, ... in a grouped order
//    (GROUP_M row-tiles share each column sweep) so concurrent CTAs reuse A and B in L2.
//  - sm_90a: warpgroup 0 is the producer (one thread issues TMA; setmaxnreg.dec to 40),
//    warpgroups 1 and 2 are consumers (setmaxnreg.inc to 232), each owning 64 rows x BN of the
//    tile in registers (BN/2 fp32 per thread) and issuing wgmma m64nBNk16 (4 per k-block), one
//    commit group per k-block; wait_group(1) lets a stage be released while the next one's
//    wgmmas run. Epilogue (EPI=1, default): each warpgroup writes its bf16 pairs into 64 staged
//    rows in shared memory and 64 threads store one row each with cp.async.bulk, so the tensor
//    cores wait only for the staging writes, not for global stores (1.06x the register-direct
//    EPI=0 geomean on the H200, 1.12-1.17x at K 2048 / 2880, where tiles are short); with
//    BN=256 the staging leaves room for 3 ring stages.
//  - sm_100a: warp 0 issues TMA, warp 1 (one thread) issues tcgen05.mma (cta_group::1,
//    M=128, N=BN, K=16) into a double-buffered fp32 accumulator in tensor memory (2*BN columns),
//    tcgen05.commit frees smem stages and publishes a finished accumulator; warps 4..11 (two
//    warpgroups, one half of the columns each) drain it with tcgen05.ld 32x32b.x32 and store
//    bf16 rows in 16-byte pieces while the MMA warp works on the next tile.
// Knobs: BN (tile N: 256 fills the tensor cores; smaller gives small problems more CTAs),
// STAGES (ring depth), GROUP_M (tile-order group height; 1 = row-major order), PP (sm_90a, BN <=
// 128: ping-pong consumers, each warpgroup a whole tile, one's epilogue under the other's MMAs;
// for short K, where the stores from registers idle the tensor cores between tiles).
// Small M: a split-K kernel (below; knob SPLIT_M, 0 = off), picked by the plan's "when" (NOTES.md):
// SBM x SBN tiles (64 x 64: one consumer warpgroup, 16 KiB stages; 1.25-1.43x the 128-row tiles on
// the H200, whose A boxes were half zero fill at M 64), SSTAGES ring stages, SMC CTAs per cluster
// along N sharing A by TMA multicast (sm_90a; measured no gain, default 1).
// SGEMV_M and its SGEMV_* knobs (session 30: the grouped GEMMs' shared-token GEMV on one group,
// for GEMV_M < M <= SGEMV_M) measured 0.35-0.51x the split-K default at M64 and 0.20-0.47x at
// M128 on the H200 (session 32) and were removed; b864ca7 has them (NOTES.md, "Session 32").
// Decode M (knob GEMV_M, default 16; 0 = off): an mma.sync kernel that
// streams B at copy speed in principle (below; GEMV_NT, GEMV_WARPS, GEMV_UNROLL, GEMV_KSPLIT,
// GEMV_LOAD, GEMV_ORDER). GEMV_LOAD=3 (B's loads ask the L2 for 256-byte fetches, L1
// allocating) is the default since session 42: 1.042x at M16 over six sweeps on an H100
// (0.94-1.13x per sweep, controls up to 12% apart; NOTES.md, "Session 42"); on the H200
// (session 43) the old load ran 1.008x of it over three sweeps: neutral there.
// MC (sm_90a): 2 = clusters of two CTAs along M, each B tile multicast to both
// (ws/gemm.cuh, produce_pairs). PP takes EPI=0. Not done: 2-CTA tcgen05, TMA stores.
//
// Evaluate: build/warpsmith eval bf16_gemm kernels/bf16_gemm/kernel.cu [--knob BN=128 ...]
// warpsmith:sass sm_90a: HGMMA UTMALDG UBLKCP
// warpsmith:sass sm_90a EPI=0: HGMMA UTMALDG
// warpsmith:sass sm_100a: UTCHMMA UTMALDG LDTM
// warpsmith:sass sm_90a EPI=1: HGMMA UTMALDG UBLKCP
// warpsmith:sass sm_90a PP=1 BN=128: HGMMA UTMALDG
// warpsmith:sass sm_90a MC=2: HGMMA UTMALDG.2D.MULTICAST UCGABAR_ARV
// warpsmith:sass sm_100a EPI=1: UTCHMMA UTMALDG LDTM
// warpsmith:sass sm_90a GEMV_M=16: HMMA.16816.F32.BF16 LDG.E.LTC256B.128.CONSTANT
// warpsmith:sass sm_100a GEMV_M=16: HMMA.16816.F32.BF16 LDG.E.LTC256B.128.CONSTANT
// warpsmith:sass sm_90a GEMV_LOAD=0: LDG.E.NA.128.CONSTANT
// warpsmith:sass sm_90a GEMV_KSPLIT=4: HMMA.16816.F32.BF16 UCGABAR_ARV
// warpsmith:sass sm_90a SMC=4: HGMMA UTMALDG.2D.MULTICAST UCGABAR_ARV
// warpsmith:sass sm_90a GEMV_LOAD=1: LDG.E.NA.LTC256B.128.CONSTANT
#include <cuda_bf16.h>

#include "ws/dense_gemm.cuh"
#include "ws/gemm.cuh"
#include "ws/gemv.cuh"
#include "ws/split_k.cuh"
#include "ws/wgmma.cuh"
#include "ws/wgmma_ring.cuh"

#ifndef BN
#define BN 256
#endif
#ifndef STAGES
#define STAGES 4
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
#ifndef SMC
#define SMC 1  // split-K kernel: CTAs per cluster along N sharing A by TMA multicast (sm_90a)
#endif
#ifndef EPI
#define EPI 1  // H200, 2026-12-02: 1.06x EPI=0 geomean, 1.12-1.17x at K 2048 / 2880 (README)
#endif
#ifndef PP
#define PP 0  // sm_90a: 1 = ping-pong consumers, a whole 128 x BN tile each (BN <= 128)
#endif
#ifndef MC
#define MC 1  // sm_90a: CTAs per cluster along M sharing each B tile by TMA multicast (1 or 2)
#endif
// Knob precedence, so that every combination the tuner draws compiles: PP = 1 keeps the register
// epilogue (EPI 0; the plan's smem says the same).
#if PP != 0 && EPI != 0
#undef EPI
#define EPI 0
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
#define GEMV_UNROLL 4  // its 32-k steps loaded before their MMAs, per warp
#endif
#ifndef GEMV_KSPLIT
#define GEMV_KSPLIT 1  // its CTAs per cluster, splitting K (ws/gemv.cuh)
#endif
#ifndef GEMV_LOAD
#define GEMV_LOAD 3  // B loads: 0 L1 no-allocate, 1 + L2 256-B fetch, 2 L2 evict-first, 3 L2 256-B
#endif
#ifndef GEMV_ORDER
#define GEMV_ORDER 0  // its warps' k-blocks: 0 in turn, 1 contiguous runs
#endif

namespace {

using ws::uint32_t;
using ws::uint64_t;

struct Config {
  static constexpr int kBM = 128, kBN = BN, kBK = 64;
  static constexpr int kThreads = 384;
  static constexpr int kABytes = kBM * kBK * 2;  // (BM,BK) bf16, 128B-swizzled
  static constexpr int kBBytes = kBN * kBK * 2;  // (BN,BK) bf16, 128B-swizzled
  static constexpr int kStageBytes = kABytes + kBBytes;
  static constexpr int kSmemCap = 227 * 1024 - 2048;  // 230400, the plan's cap (barriers, align)
  // EPI = 1 (sm_90a): per consumer warpgroup, 64 staged bf16 output rows of 2*BN + 16 bytes (the
  // pad makes the fragment writes conflict-free), after the ring.
  static constexpr int kEpi = EPI;
  using Staging = ws::StagedStore<kBN, __nv_bfloat16, kBN>;
  static constexpr int kEpiWgBytes = Staging::kBytes;
  static constexpr int kEpiBytes = EPI ? 2 * kEpiWgBytes : 0;  // = EPI * (256 * BN + 2048)
  static constexpr int kStages = STAGES < (kSmemCap - kEpiBytes) / kStageBytes
                                     ? STAGES
                                     : (kSmemCap - kEpiBytes) / kStageBytes;
  static constexpr int kGroupM = GROUP_M;
  static constexpr int kAccCols = ws::tmem_columns(2 * kBN);  // double-buffered accumulator
};
static_assert(Config::kBN % 64 == 0 && Config::kBN <= 256, "BN: 64..256 in steps of 64");
static_assert(Config::kStages >= 2, "at least two stages fit");
static_assert(Config::kEpi == 0 || Config::kEpi == 1, "EPI: 0 or 1");
static_assert(PP == 0 || PP == 1, "PP: 0 or 1");
static_assert(MC == 1 || (MC == 2 && PP == 0), "MC: 1, or 2 with PP = 0");
static_assert(PP == 0 || (Config::kBN <= 128 && Config::kEpi == 0),
              "PP: a warpgroup holds a 128 x BN fp32 tile (BN registers), stored from registers");
static_assert(Config::kEpiBytes == Config::kEpi * (256 * Config::kBN + 2048), "the plan's smem");
static_assert(Config::kABytes % 1024 == 0 && Config::kBBytes % 1024 == 0, "1024-byte atoms");

// The split-K kernel's tiles: SBM x kBn, as deep a ring as fits (up to kMaxStages stages).
template <int kBn, int kMaxStages, int kCluster>
struct SplitConfigT {
  static constexpr int kBM = SBM, kBN = kBn, kBK = 64;
  static constexpr int kABytes = kBM * kBK * 2;
  static constexpr int kBBytes = kBN * kBK * 2;
  static constexpr int kStageBytes = kABytes + kBBytes;
  static constexpr int kStages =
      kMaxStages < Config::kSmemCap / kStageBytes ? kMaxStages : Config::kSmemCap / kStageBytes;
  static constexpr int kAccCols = ws::tmem_columns(kBN);  // one accumulator
  static constexpr int kMc = kCluster;  // sm_90a only: sm_100a CTAs load their own A
  static_assert(kBN == 32 || kBN == 64 || kBN == 128 || kBN == 192 || kBN == 256,
                "split-K tile N: 32, 64, 128, 192 or 256 (wgmma N)");
  static_assert(kStages >= 2, "at least two stages fit");
};
// SBN wide tiles; where N <= NARROW_N the plan launches the NSBN-wide instance (no cluster).
using SplitConfig = SplitConfigT<SBN, SSTAGES, SMC>;
using SplitConfigNarrow = SplitConfigT<NSBN, NSSTAGES, 1>;
static_assert(SMC == 1 || SMC == 2 || SMC == 4 || SMC == 8, "SMC: 1, 2, 4 or 8 CTAs");
static_assert(SBM == 64 || SBM == 128, "SBM: 64 or 128 rows");

}  // namespace

#if !(defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000)
// sm_90a main loop of consumer warpgroup cw over one tile: acc = the tile's k-blocks through the
// ring (each stage freed once the next k-block's wgmmas are issued and the previous ones done),
// every wgmma complete on return. Returns the last stage, which the caller frees.
template <class Cfg, int kMc = 1>
__device__ __forceinline__ uint32_t mainloop(float (&acc)[Cfg::kBN / 2], uint32_t smem,
                                             uint32_t full, uint32_t empty, int kblocks, int cw,
                                             bool signal, uint32_t& it) {
#pragma unroll
  for (int i = 0; i < Cfg::kBN / 2; ++i) acc[i] = 0.0f;
  uint32_t prev = 0;
  for (int kb = 0; kb < kblocks; ++kb, ++it) {
    const uint32_t s = it % Cfg::kStages, ph = (it / Cfg::kStages) & 1;
    ws::mbar_wait(full + 8 * s, ph);
    ws::wgmma_kblock<Cfg, false>(acc, smem, s, cw, false);
    ws::release_previous_stage<kMc>(kb, s, prev, empty, signal);
  }
  ws::wgmma_wait<0>();
  return prev;
}
#endif

#if PP != 0 && !(defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000)
// sm_90a consumer warpgroup cw with PP = 1 (ping-pong): the CTA's tiles alternate between the two
// consumer warpgroups (local tile j goes to warpgroup j % 2), each computing the whole 128 x BN
// tile as two m64 halves (A rows 64..127 are 8 KiB into the stage), so one warpgroup's epilogue
// (stores from registers) overlaps the other's main loop instead of idling the tensor cores. Every
// tile has kblocks k-blocks, so a warpgroup's stage counter skips the other's tiles by kblocks.
// Order barriers (ws/wgmma_ring.cuh, pingpong_*): a warpgroup starts a main loop only once the
// other has finished the previous tile's, which keeps the MMAs in the ring's order and each
// full-barrier wait at most one phase ahead.
// cw is a template argument: a tile walk that depends on threadIdx makes ptxas serialize the
// wgmmas (C7520, found in bf16_grouped_gemm).
template <int cw>
__device__ __forceinline__ void consume_pingpong(uint32_t smem, uint32_t full, uint32_t empty,
                                                 uint32_t order, __nv_bfloat16* __restrict__ d,
                                                 int M, int N, int tiles, int tiles_m, int tiles_n,
                                                 int kblocks, int lane) {
  ws::setmaxnreg_inc<232>();
  const int t128 = threadIdx.x % 128;  // thread in the warpgroup
  const bool signal = t128 == 0;
  float acc0[Config::kBN / 2], acc1[Config::kBN / 2];  // rows 0..63 and 64..127, fp32
  uint32_t it = cw * kblocks;
  uint32_t n = 0;
  for (int t = blockIdx.x + cw * gridDim.x; t < tiles; t += 2 * gridDim.x, ++n) {
    int tm, tn;
    ws::band_tile<Config::kGroupM>(t, tiles_m, tiles_n, tm, tn);
    ws::pingpong_wait_turn<cw>(order, n);
#pragma unroll
    for (int i = 0; i < Config::kBN / 2; ++i) acc0[i] = acc1[i] = 0.0f;
    uint32_t prev = 0;
    for (int kb = 0; kb < kblocks; ++kb, ++it) {
      const uint32_t s = it % Config::kStages, ph = (it / Config::kStages) & 1;
      ws::mbar_wait(full + 8 * s, ph);
      const uint32_t a = smem + s * Config::kABytes;
      const uint32_t b = smem + Config::kStages * Config::kABytes + s * Config::kBBytes;
      ws::wgmma_fence();
#pragma unroll
      for (int k = 0; k < Config::kBK / 16; ++k) {
        ws::wgmma_bf16<Config::kBN>(acc0, ws::wgmma_desc_sw128(a + 32 * k),
                                    ws::wgmma_desc_sw128(b + 32 * k), 1);
        ws::wgmma_bf16<Config::kBN>(acc1, ws::wgmma_desc_sw128(a + 64 * 128 + 32 * k),
                                    ws::wgmma_desc_sw128(b + 32 * k), 1);
      }
      ws::wgmma_commit();
      ws::release_previous_stage(kb, s, prev, empty, signal);
    }
    ws::pingpong_end_main<cw>(acc0, acc1, empty, prev, order, kblocks, signal);
    // Fragment of each half: register 4j+e of thread (warp w, lane l) is row 16w + l/4 + 8*(e/2)
    // (+64 in acc1), column 8j + 2*(l%4) + e%2.
    const int row0 = tm * Config::kBM + 16 * (t128 / 32) + lane / 4;
    const int colb = tn * Config::kBN + 2 * (lane % 4);
    ws::store_fragment_bf16<Config::kBN>(d, acc0, 0, row0, M, colb, N);
    ws::store_fragment_bf16<Config::kBN>(d, acc1, 0, row0 + 64, M, colb, N);
    it += kblocks;  // the other warpgroup's next tile (past the end: never waited on)
  }
}
#endif

#if EPI != 0 && !(defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000)
// sm_90a consumer warpgroup cw (rows 64*cw.. of each 128 x BN tile) with EPI = 1: today's main
// loop, then a staged epilogue (ws::StagedStore, one pass of BN columns): each thread writes its
// bf16 pairs into 64 staged rows (pitch 2*BN + 16: conflict-free), and 64 threads store one row
// each with cp.async.bulk (clipped to N, rows < M only), so the warpgroup returns to its MMAs at
// once; before the staging is rewritten (next tile) each issuing thread waits for its bulk group
// to have read it.
__device__ __forceinline__ void consumer_staged_epilogue(uint32_t smem, uint32_t full,
                                                         uint32_t empty,
                                                         __nv_bfloat16* __restrict__ d, int M,
                                                         int N, int tiles, int tiles_m,
                                                         int tiles_n, int kblocks, int cw) {
  ws::setmaxnreg_inc<232>();
  const bool signal = threadIdx.x % 128 == 0;
  const uint32_t stage_out =
      smem + Config::kStages * Config::kStageBytes + cw * Config::kEpiWgBytes;
  const Config::Staging store{stage_out};
  float acc[Config::kBN / 2];  // (64, BN) fp32 fragment
  uint32_t it = 0;
  const ws::CtaTiles<Config, MC> walk{tiles_m, tiles_n, tiles};
  for (int t = walk.first(); t < walk.count(); t += walk.step()) {
    int tm, tn;
    walk.coords(t, tm, tn);
    const uint32_t prev = mainloop<Config, MC>(acc, smem, full, empty, kblocks, cw, signal, it);
    ws::fence_operands(acc);
    if (signal) ws::release_stage<MC>(empty + 8 * prev);
    store.store(d, acc, static_cast<long long>(tm) * Config::kBM, cw * 64, M - tm * Config::kBM,
                tn * Config::kBN, N, cw, [](float x, float y) { return ws::pack_bf16(x, y); });
  }
  store.drain();  // shared memory stays until the stores have read it
}
#endif

// tma_a: a [M,K] as (K,M) boxes (64,128); tma_b: b [N,K] as (K,N) boxes (64,BN); tma_bh: boxes
// (64, BN / MC), MC > 1 only; d [M,N].
extern "C" __global__ void __launch_bounds__(Config::kThreads, 1) sm90_sm100_bf16_gemm_tma(
    const __grid_constant__ ws::TensorMap tma_a, const __grid_constant__ ws::TensorMap tma_b,
    const __grid_constant__ ws::TensorMap tma_bh, __nv_bfloat16* __restrict__ d, int M, int N,
    int K) {
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
      ws::issue_mma_band<Config, false, ws::kDenseIdesc<false, Config::kBN>>(
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
      ws::mbar_wait(rs.acc_full + 8 * buf, aph);
      ws::tc_fence_after();
      const int row = tm * Config::kBM + q * 32 + lane;
#pragma unroll 1
      for (int c = 0; c < Config::kBN / 2; c += 32) {
        const int col0 = h * (Config::kBN / 2) + c;
        uint32_t r[32];
        ws::tmem_ld32(tmem_base + (uint32_t(q * 32) << 16) + buf * Config::kBN + col0, r);
        const int col = tn * Config::kBN + col0;
        if (row < M) {
          ws::store_row32_bf16(d + static_cast<long long>(row) * N + col,
                               reinterpret_cast<const float*>(r), col, N);
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
  // empty: one arrival per consumer warpgroup (PP: the tile's owner only; MC: of both CTAs)
  ws::init_ring<Config::kStages, 0>(&tma_a, &tma_b, rs, PP ? 1 : 2 * MC);
#if PP != 0
  // PP: the consumers' order barriers, in sm_100a's acc_full slots (unused on sm_90a).
  if (threadIdx.x == 0) {
    ws::mbar_init(rs.acc_full, 1);
    ws::mbar_init(rs.acc_full + 8, 1);
    ws::fence_mbarrier_init();
  }
#endif
  // Consumer warpgroup cw: rows 64*cw.. of each tile (PP: whole tiles in turn).
  ws::dense_gemm_sm90<Config, MC>(&tma_a, &tma_b, &tma_bh, rs, g, [&](int cw) {
#if PP != 0
    if (cw == 0)
      consume_pingpong<0>(smem, full, empty, rs.acc_full, d, M, N, g.tiles, g.tiles_m, g.tiles_n,
                          g.kblocks, lane);
    else
      consume_pingpong<1>(smem, full, empty, rs.acc_full, d, M, N, g.tiles, g.tiles_m, g.tiles_n,
                          g.kblocks, lane);
#elif EPI == 0
    ws::setmaxnreg_inc<232>();
    const int t128 = threadIdx.x % 128;  // thread in the warpgroup
    const bool signal = t128 == 0;
    float acc[Config::kBN / 2];  // (64, BN) fp32 fragment
    uint32_t it = 0;
    const ws::CtaTiles<Config, MC> walk{g.tiles_m, g.tiles_n, g.tiles};
    for (int t = walk.first(); t < walk.count(); t += walk.step()) {
      int tm, tn;
      walk.coords(t, tm, tn);
      const uint32_t prev = mainloop<Config, MC>(acc, smem, full, empty, g.kblocks, cw, signal, it);
      if (signal) ws::release_stage<MC>(empty + 8 * prev);
      // Accumulator fragment: register 4j+e (e = 0..3) of thread (warp w, lane l) is row
      // 16w + l/4 + 8*(e/2), column 8j + 2*(l%4) + e%2.
      const int w = t128 / 32;
      const int row0 = tm * Config::kBM + cw * 64 + 16 * w + lane / 4;
      const int colb = tn * Config::kBN + 2 * (lane % 4);
      ws::store_fragment_bf16<Config::kBN>(d, acc, 0, row0, M, colb, N);
    }
#else
    consumer_staged_epilogue(smem, full, empty, d, M, N, g.tiles, g.tiles_m, g.tiles_n, g.kblocks,
                             cw);
#endif
  });
#endif
}

// Split-K for small M (the plan launches it alone where M <= SPLIT_M; with M = 0 it would
// return at once): each CTA computes one output tile (SBM x SBN) over the k-blocks of one split
// (ws/split_k.cuh: split_range; the CTA order is below). splits == 1 stores bf16 directly; else
// each unit stores its fp32 partial into slice `split` of the workspace (after 8 * tiles bytes
// of counters, rounded up to 256) and the last unit of a tile (a consumer warpgroup's 64 rows on
// sm_90a) sums the slices in split order and stores bf16. Same ring, barriers and MMAs as the
// kernel above, one unit per CTA (not persistent); a consumer warpgroup whose 64 rows are all past
// M (or past the tile: SBM = 64 has one) idles. tma_a: A boxes of SBM rows; tma_ac: of
// SBM / SMC rows. It triggers the plan's next launch at once (they share no memory).
template <class C>
__device__ __forceinline__ void splitk_body(const ws::TensorMap& tma_a,
                                            const ws::TensorMap& tma_b,
                                            const ws::TensorMap& tma_ac,
                                            __nv_bfloat16* __restrict__ d,
                                            unsigned char* workspace, int M, int N, int K,
                                            int splits) {
  (void)tma_ac;
  ws::griddep_launch_dependents();
  // NOTE: filled here, not by a ws/split_k.cuh function: its merged early exits change the SASS.
  ws::SplitUnit u;
  const ws::TileGrid<C> g(M, N, K);
  const int plan_splits = splits;
  splits = max(1, min(splits, g.kblocks));  // every split non-empty
  // CTA = ((column group * tiles_m + tm) * plan_splits + split) * SMC + rank: a cluster's CTAs
  // share tm and split (so their k-blocks), tn = group * SMC + rank; a CTA with tn past the last
  // column tile (N not a multiple of SMC tiles) still serves its share of A and stores nothing.
  const int q = blockIdx.x / C::kMc;
  if (q >= g.tiles_m * ((g.tiles_n + C::kMc - 1) / C::kMc) * plan_splits) return;  // whole clusters
  u.splits = splits;
  u.split = q % plan_splits;
  if (u.split >= splits) return;
  u.tm = (q / plan_splits) % g.tiles_m;
  u.tn = (q / plan_splits) / g.tiles_m * C::kMc + static_cast<int>(blockIdx.x % C::kMc);
  u.tile = u.tm + g.tiles_m * u.tn;
  const bool owns_tile = u.tn < g.tiles_n;
  ws::split_range(u.split, splits, g.kblocks, u.kb0, u.kb1);
  u.use_workspace(workspace, g.tiles, M, N);

  extern __shared__ __align__(1024) unsigned char smem_raw[];
  const ws::RingSmem rs = ws::ring_smem<C>(smem_raw, 0);
  const uint32_t smem = rs.smem, full = rs.full, empty = rs.empty;
  int* last_flag = ws::split_flags(smem_raw, rs);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
  // ======================= sm_100a =======================
  if (!owns_tile) return;  // no multicast here: a cluster's CTAs are independent
  ws::init_ring<C::kStages, 1>(&tma_a, &tma_b, rs, 1);
  const uint32_t tmem_base = ws::tmem_alloc_cta(warp == 2, rs.tmem_slot, C::kAccCols);
  if (warp == 0) {
    if (lane == 0) ws::produce_range<C>(&tma_a, &tma_b, smem, full, empty, u.tm, u.tn, u.kb0, u.kb1);
  } else if (warp == 1) {
    // issue_mma_band over "tiles = blockIdx.x + 1": exactly this CTA's one unit, buffer 0.
    if (lane == 0) {
      ws::issue_mma_band<C, false, ws::kDenseIdesc<false, C::kBN>>(
          smem, full, empty, rs.acc_full, rs.acc_empty, tmem_base, blockIdx.x + 1, u.kb1 - u.kb0);
    }
  } else if (warp >= 4) {
    // Rows past the tile (SBM = 64: accumulator rows 64..127) are dropped like rows past M.
    ws::split_epilogue_sm100<C>(u, tmem_base, rs.acc_full, &last_flag[0],
                                min(M, (u.tm + 1) * C::kBM), N, warp, lane,
                                [&](long long off, const float* f, int col) {
                                  ws::store_row32_bf16(d + off, f, col, N);
                                });
  }
  ws::tmem_free_cta(warp == 2, tmem_base, C::kAccCols);
#else
  // ======================= sm_90a =======================
  // Consumer warpgroups with rows in the tile: the second only when more than 64 rows remain.
  // With SMC > 1 each empty barrier counts the active warpgroups of every CTA of the cluster (all
  // share tm, so the same count), and the barriers exist cluster-wide before any multicast.
  const int active = C::kBM > 64 && M - u.tm * C::kBM > 64 ? 2 : 1;
  ws::init_ring<C::kStages, 0>(C::kMc > 1 ? &tma_ac : &tma_a, &tma_b, rs, active * C::kMc);
  if constexpr (C::kMc > 1) {
    ws::cluster_sync();
  } else {
    __syncthreads();
  }
  const int wg = threadIdx.x / 128;
  if (wg == 0) {
    ws::setmaxnreg_dec<40>();
    if (threadIdx.x == 0) {
      ws::produce_range<C, C::kMc>(C::kMc > 1 ? &tma_ac : &tma_a, &tma_b, smem, full, empty,
                                   u.tm, u.tn, u.kb0, u.kb1);
    }
  } else if (wg - 1 < active) {
    ws::setmaxnreg_inc<232>();
    const int cw = wg - 1;
    const int t128 = threadIdx.x % 128;
    const bool signal = t128 == 0;
    float acc[C::kBN / 2];
    // NOTE: not mainloop<C>: the split kernel's own loop (ring position = k-block) is the SASS
    // verified on the H200; the shared loop compiles it differently.
#pragma unroll
    for (int i = 0; i < C::kBN / 2; ++i) acc[i] = 0.0f;
    uint32_t prev = 0;
    for (int kb = 0; kb < u.kb1 - u.kb0; ++kb) {
      const uint32_t s = kb % C::kStages, ph = (kb / C::kStages) & 1;
      ws::mbar_wait(full + 8 * s, ph);
      ws::wgmma_kblock<C, false>(acc, smem, s, cw, false);
      ws::release_previous_stage<C::kMc>(kb, s, prev, empty, signal);
    }
    ws::wgmma_wait<0>();
    ws::fence_operands(acc);
    const int w = t128 / 32;
    const int row = u.tm * C::kBM + cw * 64 + 16 * w + lane / 4;
    const int colb = u.tn * C::kBN + 2 * (lane % 4);
    // NOTE: local: a shared store-partial / arrive / reduce function compiled to other SASS.
    if (!owns_tile) {
    } else if (u.splits == 1) {
      ws::store_fragment_bf16<C::kBN>(d, acc, 0, row, M, colb, N);
    } else {
      ws::store_fragment_f32<C::kBN>(u.part + u.split * u.slice, acc, 0, row, M, colb, N);
      if (ws::split_arrive<128>(u.counters + 2 * u.tile + cw, u.splits, 1 + cw, signal,
                                &last_flag[cw])) {
        ws::reduce_fragment_f32<C::kBN>(acc, u.part, u.slice, u.splits, 0, row, M, colb, N);
        ws::store_fragment_bf16<C::kBN>(d, acc, 0, row, M, colb, N);
      }
    }
  }
  if constexpr (C::kMc > 1) {  // no CTA leaves while a peer may still arrive on its barriers
    __syncwarp();
    ws::cluster_sync();
  }
#endif
}

extern "C" __global__ void __launch_bounds__(Config::kThreads, 1) sm90_sm100_bf16_gemm_splitk(
    const __grid_constant__ ws::TensorMap tma_a, const __grid_constant__ ws::TensorMap tma_b,
    const __grid_constant__ ws::TensorMap tma_ac, __nv_bfloat16* __restrict__ d,
    unsigned char* workspace, int M, int N, int K, int splits) {
  splitk_body<SplitConfig>(tma_a, tma_b, tma_ac, d, workspace, M, N, K, splits);
}

// The same over NSBN-wide tiles (cuBLAS's 64 x 32 at M128 N1536: 96 tiles, no split), for
// N <= NARROW_N. tma_b: B boxes of NSBN rows; no cluster (tma_a stands in for tma_ac).
extern "C" __global__ void __launch_bounds__(Config::kThreads, 1)
    sm90_sm100_bf16_gemm_splitk_narrow(const __grid_constant__ ws::TensorMap tma_a,
                                       const __grid_constant__ ws::TensorMap tma_b,
                                       __nv_bfloat16* __restrict__ d, unsigned char* workspace,
                                       int M, int N, int K, int splits) {
  splitk_body<SplitConfigNarrow>(tma_a, tma_b, tma_a, d, workspace, M, N, K, splits);
}

// Decode GEMM (M <= GEMV_M, 16 by default): B streamed straight into
// mma.sync fragments by ws/gemv.cuh (no TMA, no ring, no workspace); the CTA's warps' partials
// are summed in warp order and stored as bf16 pairs. Model: B is all the DRAM traffic
// (N * K * 2 bytes), so the target is copy speed: 13.6 us for M 16, N 4096, K 7168 on the H200;
// measured 22.3-22.8 us (0.61 of copy; split-K 42.3, cuBLAS 21.8: NOTES.md).
using GemvConfig = ws::GemvConfig<GEMV_M, GEMV_NT, GEMV_WARPS, GEMV_UNROLL, GEMV_KSPLIT,
                                     GEMV_LOAD, GEMV_ORDER>;

// a (M,K), b (N,K), d (M,N), all bf16 row-major; M <= GEMV_M (the plan's when).
extern "C" __global__ void __launch_bounds__(GemvConfig::kThreads, 1)
    sm90_sm100_bf16_gemm_gemv(const __nv_bfloat16* __restrict__ a,
                              const __nv_bfloat16* __restrict__ b, __nv_bfloat16* __restrict__ d,
                              int M, int N, int K) {
  extern __shared__ float4 gemv_red[];  // GemvConfig::kRedBytes
  ws::gemv<ws::GemvBf16, GemvConfig>(
      a, b, M, N, K, gemv_red, [&](int row, int col, float v0, float v1) {
        *reinterpret_cast<uint32_t*>(d + static_cast<long long>(row) * N + col) =
            ws::pack_bf16(v0, v1);
      });
}

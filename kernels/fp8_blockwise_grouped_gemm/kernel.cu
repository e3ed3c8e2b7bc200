/* warpsmith:plan
{ "knobs": { "BN": [192, 128, 64], "STAGES": [4, 6, 5, 8], "OVERLAP": [1, 0], "GROUP_M": [8, 16, 1],
             "EPI": [1, 0] },
  "tensor_maps": {
    "tma_a": { "tensor": "a", "dims": ["K", "M"], "box": ["128", "128"], "swizzle": 128,
               "oob_fill": "zero", "l2_promotion": 256 },
    "tma_b": { "tensor": "b", "dims": ["K", "E * N"], "box": ["128", "BN"], "swizzle": 128,
               "oob_fill": "zero", "l2_promotion": 256 },
    "tma_sa": { "tensor": "a_scales", "dims": ["M", "K / 128"], "box": ["128", "1"],
                "swizzle": 0, "oob_fill": "zero", "l2_promotion": 128 } },
  "launch": [ { "kernel": "sm90_sm100_fp8_blockwise_grouped_gemm_tma",
                "grid": ["min(num_sms, ceil_div(M, 128) * ceil_div(N, BN))"],
                "block": ["384"],
                "smem": "min(STAGES, (226304 - EPI * 128 * (2 * BN + 16)) / (16896 + 128 * BN)) * (16896 + 128 * BN) + EPI * 128 * (2 * BN + 16) + 6144",
                "args": ["tma_a", "tma_b", "tma_sa", "b_scales", "offs", "c", "M", "E", "N",
                         "K"] } ] }
*/
// FP8 block-scaled grouped GEMM, the DeepSeek-V3 recipe, contiguous M-grouped layout (spec.json):
//   c[r, n] = bf16_rne(sum_j a_scales[j, r] * b_scales[g, n/128, j] * sum_{k in block j} a b)
// a [M,K] E4M3 (rows sorted by expert), a_scales [K/128, M] fp32 (1x128, MN-major), b [E,N,K] E4M3,
// b_scales [E, N/128, K/128] fp32 (128x128), offs [E] cumulative group ends -> c [M,N] bf16.
// The machinery is the device library's (kernels/include/ws); what is new is the per-block
// promotion with fp32 scales.
//
//  - Tiles: 128 rows x BN columns, k-blocks of 128 E4M3 = one scale block = one SW128 row. BM =
//    128 because every group size is a multiple of 128: a tile never straddles two experts, so
//    the group's weight rows and scales are uniform over it, and no M masking is needed; 128 is
//    the largest such BM (fewest B re-reads) and exactly the two consumer warpgroups' m64 each.
//    BN 64 or 128 divides 128 (N % 128 == 0): a tile lies inside one 128-column weight-scale
//    block, so b_scale is one scalar per tile and k-block, and no N tail exists. BN = 192 (14%
//    less operand traffic per FLOP, as fp8_rowwise_gemm's 1.05-1.13x over 128): a tile starts at
//    column 0 or 64 of a scale block and spans two, so two scalars per k-block; columns 0-63 of
//    the tile take the first, 128-191 the second, 64-127 the first only where the tile starts on
//    a block boundary; N tails are clipped at the store. K % 128 == 0: no K tail.
//  - Stage: A (128 x 128 B, TMA, SW128) + B (BN x 128 B, TMA from b viewed as [E*N, K]) + the
//    tile's 128 activation scales a_scales[kb, row0 .. row0+127] (contiguous: one 512-byte TMA
//    box), all on one full barrier; plus the tile's weight scale, which the producer warp loads
//    32 k-blocks at a time (lane l: block kb0 + l, coalesced along K/128) and stores into the
//    stage's slot before its arrive (release) on the full barrier. (b_scales rows are K/128 fp32,
//    not 16-byte aligned in general: no tensor map or bulk copy can fetch them.)
//  - Scheduler: persistent CTAs over ws::GroupCursor (forward form): groups walked forward,
//    GROUP_M-row bands inside a group, empty groups own no tiles; offs copied to shared memory.
//  - sm_90a: warpgroup 0 produces (one warp; setmaxnreg 40), warpgroups 1-2 consume 64 rows each.
//    Per k-block: 4 QGMMA m64nBNk32 into a fresh partial accumulator (scale-d = 0 on the first),
//    then promote: total += partial * (a_scale[row] * b_scale), fp32 FFMAs, once per 128 K, as
//    DeepGEMM does (Hopper's FP8 wgmma accumulates with ~14 bits: promotion every 128 elements
//    bounds that loss). OVERLAP = 1: two partial accumulators, k-blocks in pairs: both blocks'
//    wgmmas are issued, the first is waited for (wait_group 1) and promoted while the second
//    runs, then the second is promoted while the other consumer warpgroup's wgmmas fill the
//    tensor cores. OVERLAP = 0: one partial, wait_group 0 and promote per block; all overlap
//    comes from the other warpgroup (DeepGEMM's scheme). A pipeline carried across iterations
//    (issue kb+1 at the end of iteration kb) would overlap every promotion, but ptxas then
//    serializes all wgmmas (C7514). Registers at BN = 128: 3 x 64 (OVERLAP = 1) or 2 x 64 fp32
//    per thread under setmaxnreg 232.
//    A stage is released by one arrive per consumer warp (8) once that warp's wgmmas of the
//    block are complete and its lanes have read the block's scales.
//  - sm_100a: warp 0 produces, warp 1 (one thread) issues tcgen05.mma kind::f8f6f4 (M=128, N=BN,
//    K=32, 4 per k-block) into one of kAccBufs (4) TMEM partial buffers per k-block; warps 4..11
//    (TMEM lanes 32*(w%4).., column half (w-4)/4) wait for it, tcgen05.ld it and promote into
//    fp32 registers with the same scales, then free the buffer: the MMA of blocks kb+1..kb+3
//    overlaps the promotion of block kb and the tile's bf16 stores. NOTE: Blackwell's
//    kind::mxf8f6f4 block_scale MMA takes only UE8M0 scales per 32 elements (UE4M3 per 16 for
//    nvf4): arbitrary fp32 1x128 x 128x128 scales do not fit it, hence the promotion in
//    registers (TMEM accumulates in full fp32, so precision is not the reason here, the scales
//    are). A stage is released by the MMA's commit plus the 8 promotion warps (they read its
//    scales), so empty counts 9.
// Knobs: BN (192: two scales per tile, OVERLAP 0 (registers), 14% less operand traffic per FLOP:
// the default since 2026-12-03, 1.09x BN=128 on the H200; 128: one scale per tile; 64: twice the
// tiles for small M), STAGES (ring depth,
// capped to fit 227 KiB), OVERLAP (sm_90a promotion variant, above), GROUP_M (band height),
// EPI (sm_90a: 1 = each consumer warpgroup stages its bf16 rows in shared memory and bulk-copies
// them, one row per thread, ws::StagedStore: the epilogue that made fp8_rowwise_gemm 1.2x on the
// H200; the default since 2026-12-03 with STAGES=4: 1.10x EPI=0 with 6 stages, NOTES.md).
// Not done: epilogue/MMA overlap across tiles on sm_90a beyond EPI's asynchronous stores,
// TMA multicast of B across a cluster, BN = 256 on sm_100a, split-K for the decode shape.
//
// Paper model (cost in spec.json), B200 at ~7.7 TB/s and ~4.5 PFLOP/s dense FP8 beside the H200
// (4.8 TB/s, 1979 TFLOP/s dense FP8); the bench shapes are compute bound on both:
//   shape (M,E,N,K)           bytes     GFLOP   B200 us (mem/fp8)  H200 us (mem/fp8)
//   32768,4,4096,7168         628 MB    1924    82 / 428           131 / 972
//   32768,4,7168,2048         598 MB     962    78 / 214           125 / 486
//   32768,8,4096,7168         746 MB    1924    97 / 428           155 / 972
//   32768,8,7168,2048         656 MB     962    85 / 214           137 / 486
//   256,2,7168,2048            34 MB     7.5   4.4 / 1.7           7.0 / 3.8
// Target on the H200: >= 1.0x torch._scaled_grouped_mm (FP8 rowwise, cuBLASLt/CUTLASS inside),
// i.e. DeepGEMM-class 1.1-1.3 PFLOP/s at the large shapes (55-65% of dense peak; ~1.5-1.75 ms at
// K = 7168, ~0.75-0.9 ms at K = 2048); the decode shape is latency bound (76 tiles at
// BN = 192 on 132 SMs). Measured (H200, 2026-12-03, BN = 192, torch in the same call): 1820 /
// 951 / 1814 / 953 us at the four large shapes (1009-1061 TFLOP/s), 1.07-1.10x torch's FP8
// rowwise grouped GEMM, 1.21x at M256 (20.9 us); NOTES.md.
//
// Evaluate:
//   build/warpsmith eval fp8_blockwise_grouped_gemm kernels/fp8_blockwise_grouped_gemm/kernel.cu
// warpsmith:sass sm_90a: QGMMA UTMALDG
// warpsmith:sass sm_90a EPI=1: QGMMA UTMALDG UBLKCP.G.S
// warpsmith:sass sm_100a: UTCQMMA UTMALDG LDTM
#include <cuda_bf16.h>

#include "ws/gemm.cuh"
#include "ws/wgmma.cuh"

#ifndef BN
#define BN 192
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef OVERLAP
#define OVERLAP 1
#endif
#ifndef EPI
#define EPI 1  // sm_90a: bf16 rows staged in shared memory, one bulk copy per row (0: registers)
#endif
#if BN > 128 && OVERLAP != 0  // knob precedence: two 96-register partials and a total do not fit
#undef OVERLAP
#define OVERLAP 0
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif

namespace {

using ws::uint32_t;
using ws::uint64_t;

struct Config {
  static constexpr int kBM = 128, kBN = BN, kBK = 128;  // kBK: E4M3 elements = bytes = 1 scale
  static constexpr int kThreads = 384;
  static constexpr int kABytes = kBM * kBK;       // (BM,BK) e4m3, 128B-swizzled
  static constexpr int kBBytes = kBN * kBK;       // (BN,BK) e4m3, 128B-swizzled
  static constexpr int kSaBytes = kBM * 4;        // (BM) fp32 activation scales of one k-block
  static constexpr int kStageBytes = kABytes + kBBytes + kSaBytes;
  static constexpr int kScaleBlocks = kBN > 128 ? 2 : 1;  // 128-column scale blocks per tile
  static constexpr int kMaxE = 1024;              // offs held in shared memory
  static constexpr int kSmemCap = 227 * 1024 - 6144;  // 226304, the plan's cap
  // EPI = 1: the two consumer warpgroups' staged output rows after the scale slots.
  using Staged = ws::StagedStore<kBN, __nv_bfloat16>;
  static constexpr int kEpiBytes = EPI ? 2 * Staged::kBytes : 0;  // = EPI * 128 * (2 * BN + 16)
  static constexpr int kRingCap = kSmemCap - kEpiBytes;
  static constexpr int kStages = STAGES < kRingCap / kStageBytes ? STAGES : kRingCap / kStageBytes;
  static constexpr int kOverlap = OVERLAP;
  static constexpr int kGroupM = GROUP_M;
  static constexpr int kAcc = kBN / 2;  // sm_90a: fp32 fragment registers of a (64, BN) tile
  // sm_100a: per-k-block TMEM partials; four let the MMA run up to three blocks ahead of the
  // promotion (it stalls at the tile's bf16 stores).
  static constexpr int kAccBufs = 512 / kBN < 4 ? 512 / kBN : 4;
  static constexpr int kAccCols = ws::tmem_columns(kAccBufs * kBN);
  // Stage release: sm_90a one arrive per consumer warp; sm_100a the MMA commit plus one per
  // promotion warp.
  static constexpr int kEmptyArrivesSm90 = 8, kEmptyArrivesSm100 = 1 + 8;
};
static_assert(Config::kBN == 64 || Config::kBN == 128 || Config::kBN == 192,
              "BN: 64 or 128 (inside one 128-column scale block) or 192 (across two)");
static_assert(Config::kStages >= 2, "at least two stages fit");
static_assert(Config::kOverlap == 0 || Config::kOverlap == 1, "OVERLAP: 0 or 1");
static_assert(Config::kABytes % 1024 == 0 && Config::kBBytes % 1024 == 0, "1024-byte atoms");
static_assert(Config::kAccBufs * Config::kBN <= 512, "TMEM partials fit 512 columns");

using Cursor = ws::GroupCursor<ws::kFwd, Config::kBM, Config::kBN, Config::kGroupM>;
using Tile = ws::GroupTile<ws::kFwd>;

// Shared-memory addresses of the ring and its barriers (shared window) and the scale slots
// (generic pointers).
struct Smem {
  uint32_t a, b, sa;            // ring bases: A tiles, B tiles, activation-scale slots
  uint32_t full, empty;         // [kStages] mbarriers
  uint32_t acc_full, acc_empty;  // [kAccBufs] mbarriers (sm_100a)
  uint32_t tmem_slot;
  uint32_t staged;      // EPI = 1: the staged output rows (sm_90a)
  const float* sa_ptr;  // (kStages, BM) activation scales
  float* sb_ptr;        // (kStages, kScaleBlocks) the tile's weight scales per stage
  __device__ uint32_t a_at(uint32_t s) const { return a + s * Config::kABytes; }
  __device__ uint32_t b_at(uint32_t s) const { return b + s * Config::kBBytes; }
};

// Producer warp (all 32 lanes load weight scales; lane 0 waits and issues): the same tile
// sequence and stage counter as the consumers.
__device__ __forceinline__ void produce(const ws::TensorMap* tma_a, const ws::TensorMap* tma_b,
                                        const ws::TensorMap* tma_sa, const float* b_scales,
                                        const Smem& sm, const int* offs, int E, int N, int K) {
  const int lane = threadIdx.x % 32;
  const int kblocks = K / Config::kBK;
  Cursor cur;
  Tile tl;
  uint32_t it = 0;
  for (int t = blockIdx.x; cur.seek(t, offs, E, N, K, tl); t += gridDim.x) {
    const int row0 = tl.s + tl.tm * Config::kBM;
    const int col0 = tl.tn * Config::kBN;
    // (K/128) weight scales of this tile's first 128-column block of expert g and (BN = 192) of
    // the next, clamped at the last (its columns past N are computed, never stored).
    const int blocks = N / 128, blk = col0 / 128;
    const float* bs = b_scales + (static_cast<long long>(tl.g) * blocks + blk) * kblocks;
    const float* bs1 =
        b_scales + (static_cast<long long>(tl.g) * blocks + min(blk + 1, blocks - 1)) * kblocks;
    float chunk = 0.0f, chunk1 = 0.0f;  // lane l: block kb0 + l of the current 32
#pragma unroll 1  // the producer lives in 40 registers (setmaxnreg)
    for (int kb = 0; kb < kblocks; ++kb, ++it) {
      if (kb % 32 == 0) {
        chunk = kb + lane < kblocks ? __ldg(bs + kb + lane) : 0.0f;
        if constexpr (Config::kScaleBlocks == 2) {
          chunk1 = kb + lane < kblocks ? __ldg(bs1 + kb + lane) : 0.0f;
        }
      }
      const float sb = __shfl_sync(0xffffffffu, chunk, kb % 32);
      float sb1 = 0.0f;
      if constexpr (Config::kScaleBlocks == 2) sb1 = __shfl_sync(0xffffffffu, chunk1, kb % 32);
      if (lane == 0) {
        const uint32_t st = it % Config::kStages, ph = (it / Config::kStages) & 1;
        ws::mbar_wait(sm.empty + 8 * st, ph ^ 1);
        // Published by the arrive below (release).
        sm.sb_ptr[st * Config::kScaleBlocks] = sb;
        if constexpr (Config::kScaleBlocks == 2) sm.sb_ptr[st * 2 + 1] = sb1;
        const uint32_t bar = sm.full + 8 * st;
        ws::mbar_expect_tx(bar, Config::kStageBytes);
        const int k0 = kb * Config::kBK;
        ws::tma_load_2d(sm.a_at(st), tma_a, bar, k0, row0);
        ws::tma_load_2d(sm.b_at(st), tma_b, bar, k0, tl.g * N + col0);
        ws::tma_load_2d(sm.sa + st * Config::kSaBytes, tma_sa, bar, row0, kb);
      }
      __syncwarp();
    }
  }
}


#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
// Instruction descriptor, kind::f8f6f4: D f32, A and B E4M3, both K-major, M=128, N=BN.
constexpr uint32_t kIdesc =
    ws::umma_idesc(ws::kUmmaE4M3, ws::kUmmaE4M3, 0, 0, Config::kBM, Config::kBN);
#else
using Frag = float[Config::kAcc];  // (64, BN) fp32 wgmma fragment of one consumer warpgroup

// The promotion factors of one k-block for this thread's two fragment rows.
struct BlockScale {
  float lo, hi;  // a_scale[row] * b_scale, a_scale[row + 8] * b_scale
  // BN = 192: the tile's second scale block (columns 128-191) and columns 64-127's (the first
  // block's where the tile starts on a block boundary, else the second's).
  float lo1, hi1, lo_mid, hi_mid;
};

// Waits for k-block `it`'s stage, reads its scales, issues its 4 k32 wgmmas into p (restarting
// p), commits them as one group. r: this thread's first fragment row in the tile; aligned (BN =
// 192): the tile starts on a scale-block boundary.
__device__ __forceinline__ void issue_block(Frag& p, BlockScale& sc, const Smem& sm, uint32_t it,
                                            int cw, int r, bool aligned) {
  const uint32_t s = it % Config::kStages, ph = (it / Config::kStages) & 1;
  ws::mbar_wait(sm.full + 8 * s, ph);
  const float sb = sm.sb_ptr[s * Config::kScaleBlocks];
  const float sa_lo = sm.sa_ptr[s * Config::kBM + r], sa_hi = sm.sa_ptr[s * Config::kBM + r + 8];
  sc.lo = sa_lo * sb;
  sc.hi = sa_hi * sb;
  if constexpr (Config::kScaleBlocks == 2) {
    const float sb1 = sm.sb_ptr[s * 2 + 1];
    sc.lo1 = sa_lo * sb1;
    sc.hi1 = sa_hi * sb1;
    sc.lo_mid = aligned ? sc.lo : sc.lo1;
    sc.hi_mid = aligned ? sc.hi : sc.hi1;
  } else {
    (void)aligned;
  }
  const uint32_t a = sm.a_at(s) + cw * 64 * 128;  // this warpgroup's 64 rows
  const uint32_t b = sm.b_at(s);
  ws::wgmma_fence();
#pragma unroll
  for (int k = 0; k < Config::kBK / 32; ++k) {
    ws::wgmma_e4m3<Config::kBN>(p, ws::wgmma_desc_sw128(a + 32 * k),
                                ws::wgmma_desc_sw128(b + 32 * k), k != 0);
  }
  ws::wgmma_commit();
}

// After the block's wgmmas are complete: frees its stage (every lane of this warp has read the
// scales and its wgmmas no longer read the tiles) and adds the scaled partial into total.
// Fragment register 4j+e holds row r + 8*(e/2).
__device__ __forceinline__ void promote_block(Frag& total, Frag& p, const BlockScale& sc,
                                              const Smem& sm, uint32_t it) {
  ws::fence_operands(p);
  __syncwarp();
  if (threadIdx.x % 32 == 0) ws::mbar_arrive(sm.empty + 8 * (it % Config::kStages));
#pragma unroll
  for (int j = 0; j < Config::kAcc / 4; ++j) {
    // Column group j (columns 8j..8j+7 of the tile) lies in one scale block.
    float lo = sc.lo, hi = sc.hi;
    if constexpr (Config::kScaleBlocks == 2) {
      lo = j < 8 ? sc.lo : j < 16 ? sc.lo_mid : sc.lo1;
      hi = j < 8 ? sc.hi : j < 16 ? sc.hi_mid : sc.hi1;
    }
    total[4 * j + 0] = fmaf(p[4 * j + 0], lo, total[4 * j + 0]);
    total[4 * j + 1] = fmaf(p[4 * j + 1], lo, total[4 * j + 1]);
    total[4 * j + 2] = fmaf(p[4 * j + 2], hi, total[4 * j + 2]);
    total[4 * j + 3] = fmaf(p[4 * j + 3], hi, total[4 * j + 3]);
  }
}
#endif

}  // namespace

// tma_a: a [M,K] as (K,M) boxes (128,128); tma_b: b as [E*N, K], boxes (128,BN); tma_sa: a_scales
// [K/128, M] as (M, K/128) boxes (128, 1); b_scales [E, N/128, K/128]; offs [E]; c [M,N] bf16.
extern "C" __global__ void __launch_bounds__(Config::kThreads, 1)
    sm90_sm100_fp8_blockwise_grouped_gemm_tma(
        const __grid_constant__ ws::TensorMap tma_a, const __grid_constant__ ws::TensorMap tma_b,
        const __grid_constant__ ws::TensorMap tma_sa, const float* __restrict__ b_scales,
        const int* __restrict__ offs, __nv_bfloat16* __restrict__ c, int M, int E, int N, int K) {
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // Tiles need 1024-byte alignment (swizzle atoms); scale slots, barriers, then offs follow.
  const uint32_t raw = ws::smem_u32(smem_raw);
  const uint32_t base = (raw + 1023) & ~1023u;
  Smem sm;
  sm.a = base;
  sm.b = base + Config::kStages * Config::kABytes;
  sm.sa = sm.b + Config::kStages * Config::kBBytes;
  sm.staged = sm.sa + Config::kStages * Config::kSaBytes;
  const uint32_t bars = sm.staged + Config::kEpiBytes;
  sm.full = bars;
  sm.empty = bars + 8 * Config::kStages;
  sm.acc_full = bars + 16 * Config::kStages;
  sm.acc_empty = sm.acc_full + 8 * Config::kAccBufs;
  sm.tmem_slot = sm.acc_empty + 8 * Config::kAccBufs;
  sm.sa_ptr = reinterpret_cast<const float*>(smem_raw + (sm.sa - raw));
  sm.sb_ptr = reinterpret_cast<float*>(smem_raw + (sm.tmem_slot + 8 - raw));
  int* offs_smem = reinterpret_cast<int*>(smem_raw + (bars + 1024 - raw));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  (void)M;

  const int* goffs = ws::stage_offs<Config::kMaxE, Config::kThreads>(offs_smem, offs, E);
  const int kblocks = K / Config::kBK;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
  // ======================= sm_100a =======================
  if (threadIdx.x == 0) {
    ws::tma_prefetch(&tma_a);
    ws::tma_prefetch(&tma_b);
    ws::tma_prefetch(&tma_sa);
    ws::mbar_init_ring<Config::kStages>(sm.full, 1, sm.empty, Config::kEmptyArrivesSm100);
    // acc_full: the commit after a block's 4 MMAs; acc_empty: one arrive per promotion warp.
    ws::mbar_init_ring<Config::kAccBufs>(sm.acc_full, 1, sm.acc_empty, 8);
    ws::fence_mbarrier_init();
  }
  // Warp 2 allocates and later frees the partial buffers.
  const uint32_t tmem_base = ws::tmem_alloc_cta(warp == 2, sm.tmem_slot, Config::kAccCols);

  if (warp == 0) {
    produce(&tma_a, &tma_b, &tma_sa, b_scales, sm, goffs, E, N, K);
  } else if (warp == 1) {
    if (lane == 0) {
      Cursor cur;
      Tile tl;
      uint32_t it = 0;
      for (int t = blockIdx.x; cur.seek(t, goffs, E, N, K, tl); t += gridDim.x) {
        for (int kb = 0; kb < kblocks; ++kb, ++it) {
          const uint32_t buf = it % Config::kAccBufs, aph = (it / Config::kAccBufs) & 1;
          const uint32_t s = it % Config::kStages, ph = (it / Config::kStages) & 1;
          ws::mbar_wait(sm.acc_empty + 8 * buf, aph ^ 1);  // promoted out of this buffer
          ws::mbar_wait(sm.full + 8 * s, ph);
          ws::tc_fence_after();
          const uint32_t d_tmem = tmem_base + buf * Config::kBN;
          const uint32_t a = sm.a_at(s), b = sm.b_at(s);
#pragma unroll
          for (int k = 0; k < Config::kBK / 32; ++k) {
            ws::umma_f8f6f4(d_tmem, ws::umma_desc_sw128(a + 32 * k),
                            ws::umma_desc_sw128(b + 32 * k), kIdesc, k != 0);
          }
          ws::umma_commit(sm.empty + 8 * s);       // the tiles are read (1 of 9 arrivals)
          ws::umma_commit(sm.acc_full + 8 * buf);  // the block's partial is in TMEM
        }
      }
    }
  } else if (warp >= 4) {
    // Promotion: warp w owns TMEM lanes (tile rows) 32*(w%4).. and column half h.
    const int q = warp % 4, h = (warp - 4) / 4;
    const int r = q * 32 + lane;  // this thread's row in the tile
    constexpr int kHalf = Config::kBN / 2;
    float total[kHalf];  // (1, BN/2) fp32 sum of the promoted blocks, this row
    Cursor cur;
    Tile tl;
    uint32_t it = 0;
    for (int t = blockIdx.x; cur.seek(t, goffs, E, N, K, tl); t += gridDim.x) {
#pragma unroll
      for (int i = 0; i < kHalf; ++i) total[i] = 0.0f;
      const bool aligned = tl.tn * Config::kBN % 128 == 0;  // BN = 192: the mid columns' block
#pragma unroll 1
      for (int kb = 0; kb < kblocks; ++kb, ++it) {
        const uint32_t buf = it % Config::kAccBufs, aph = (it / Config::kAccBufs) & 1;
        const uint32_t s = it % Config::kStages, ph = (it / Config::kStages) & 1;
        // The stage cannot be refilled before our arrive below, so this phase is still current.
        ws::mbar_wait(sm.full + 8 * s, ph);
        const float sa = sm.sa_ptr[s * Config::kBM + r];
        const float sc = sa * sm.sb_ptr[s * Config::kScaleBlocks];
        // BN = 192: the second block's factor; 32-column chunks lie in one block (below).
        const float sc1 = Config::kScaleBlocks == 2 ? sa * sm.sb_ptr[s * 2 + 1] : sc;
        ws::mbar_wait(sm.acc_full + 8 * buf, aph);
        ws::tc_fence_after();
#pragma unroll
        for (int cc = 0; cc < kHalf; cc += 32) {
          const int c = h * kHalf + cc;  // the chunk's first tile column
          const float f = c < 64 ? sc : c >= 128 ? sc1 : aligned ? sc : sc1;
          uint32_t v[32];
          ws::tmem_ld32(tmem_base + (uint32_t(q * 32) << 16) + buf * Config::kBN + h * kHalf + cc,
                        v);
#pragma unroll
          for (int i = 0; i < 32; ++i) {
            asm volatile("" : "+r"(v[i])::"memory");  // uses stay after tcgen05.wait::ld
            total[cc + i] = fmaf(__uint_as_float(v[i]), f, total[cc + i]);
          }
        }
        ws::tc_fence_before();
        __syncwarp();
        if (lane == 0) {
          ws::mbar_arrive(sm.acc_empty + 8 * buf);
          ws::mbar_arrive(sm.empty + 8 * s);  // its scales are read (the MMA commits the rest)
        }
      }
      // Row r, columns h*BN/2.. of the tile: BN/2 contiguous bf16 (64 or 128 bytes).
      const ws::OutTile o = Cursor::out_tile(tl, N, K);
      uint4* dst = reinterpret_cast<uint4*>(c + (o.row0 + r) * N + o.col0 + h * kHalf);
#pragma unroll
      for (int j = 0; j < kHalf / 8; ++j) {
        if (Config::kScaleBlocks == 2 && o.col0 + h * kHalf + 8 * j >= N) break;  // BN = 192
        dst[j] = ws::pack_bf16x8(total + 8 * j);
      }
    }
  }
  ws::tmem_free_cta(warp == 2, tmem_base, Config::kAccCols);
#else
  // ======================= sm_90a =======================
  if (threadIdx.x == 0) {
    ws::tma_prefetch(&tma_a);
    ws::tma_prefetch(&tma_b);
    ws::tma_prefetch(&tma_sa);
    ws::mbar_init_ring<Config::kStages>(sm.full, 1, sm.empty, Config::kEmptyArrivesSm90);
    ws::fence_mbarrier_init();
  }
  __syncthreads();
  const int wg = threadIdx.x / 128;
  if (wg == 0) {
    ws::setmaxnreg_dec<40>();
    if (warp == 0) produce(&tma_a, &tma_b, &tma_sa, b_scales, sm, goffs, E, N, K);
  } else {
    ws::setmaxnreg_inc<232>();
    const int cw = wg - 1;                      // consumer warpgroup: rows 64*cw.. of the tile
    const int w = (threadIdx.x % 128) / 32;     // warp in the warpgroup
    const int r = cw * 64 + 16 * w + lane / 4;  // first fragment row in the tile (and r + 8)
    Cursor cur;
    Tile tl;
    float total[Config::kAcc];  // (64, BN) fp32 sum of the promoted blocks
    float p0[Config::kAcc];     // (64, BN) partial of an even block (every block if OVERLAP 0)
    BlockScale sc0, sc1;
    uint32_t it = 0;
#if EPI != 0
    const Config::Staged epi{sm.staged + cw * Config::Staged::kBytes};
#endif
    for (int t = blockIdx.x; cur.seek(t, goffs, E, N, K, tl); t += gridDim.x) {
#pragma unroll
      for (int i = 0; i < Config::kAcc; ++i) total[i] = 0.0f;
      const bool aligned = tl.tn * Config::kBN % 128 == 0;  // BN = 192: the mid columns' block
      if (Config::kOverlap == 0) {
#pragma unroll 1
        for (int kb = 0; kb < kblocks; ++kb, ++it) {
          issue_block(p0, sc0, sm, it, cw, r, aligned);
          ws::wgmma_wait<0>();
          promote_block(total, p0, sc0, sm, it);
        }
      } else {
        // Pairs of blocks: block kb+1's wgmmas run while block kb is promoted. NOTE: no wgmma
        // stays pending across the loop's back edge or a branch join: ptxas serializes every
        // wgmma of the kernel (C7514) or injects waits (C7517) when one does, so the classic
        // software pipeline (issue kb+1 at the end of iteration kb) is not an option.
        float p1[Config::kAcc];
#pragma unroll 1
        for (int kb = 0; kb < kblocks; kb += 2, it += 2) {
          issue_block(p0, sc0, sm, it, cw, r, aligned);
          if (kb + 1 < kblocks) {
            issue_block(p1, sc1, sm, it + 1, cw, r, aligned);
            ws::wgmma_wait<1>();
            promote_block(total, p0, sc0, sm, it);
            ws::wgmma_wait<0>();
            promote_block(total, p1, sc1, sm, it + 1);
          } else {
            ws::wgmma_wait<0>();
            promote_block(total, p0, sc0, sm, it);
          }
        }
        it -= kblocks & 1;  // an odd count's last pair held one block
      }
      // Fragment: register 4j+e of thread (warp w, lane l) is row r + 8*(e/2), column
      // 8j + 2*(l%4) + e%2; every tile is whole in rows (groups are multiples of 128), and in
      // columns but at BN = 192 (StagedStore clips at N, the register stores below check).
      const ws::OutTile o = Cursor::out_tile(tl, N, K);
#if EPI != 0
      epi.store(c, total, o.row0, cw * 64, o.rows_left, o.col0, N, cw,
                [](float lo, float hi) { return ws::pack_bf16(lo, hi); });
#else
      __nv_bfloat16* row_lo = c + (o.row0 + r) * N + o.col0 + 2 * (lane % 4);
      __nv_bfloat16* row_hi = row_lo + 8LL * N;
#pragma unroll
      for (int j = 0; j < Config::kAcc / 4; ++j) {
        if (Config::kScaleBlocks == 2 && o.col0 + 8 * j >= N) break;
        *reinterpret_cast<uint32_t*>(row_lo + 8 * j) =
            ws::pack_bf16(total[4 * j], total[4 * j + 1]);
        *reinterpret_cast<uint32_t*>(row_hi + 8 * j) =
            ws::pack_bf16(total[4 * j + 2], total[4 * j + 3]);
      }
#endif
    }
#if EPI != 0
    epi.drain();
#endif
  }
#endif
}

/* warpsmith:plan
{ "knobs": { "BN": [192, 256, 128, 64], "EPI": [1, 0], "WGRAD_BN": [192, 256, 128, 64],
             "WGRAD_EPI": [1, 0], "STAGES": [4, 5, 3, 6], "GROUP_M": [8, 16, 4, 1],
             "PP": [0], "EPI_SHORT": [1024, 0, 512, 2048],
             "SHORT": [64, 0, 128, 256], "SHORT_BN": [128, 64, 192] },
  "knob_scope": { "BN": "form != 2", "EPI": "form != 2", "WGRAD_BN": "form == 2",
                  "WGRAD_EPI": "form == 2", "EPI_SHORT": "form == 2",
                  "SHORT": "form == 0", "SHORT_BN": "form == 0" },
  "tensor_maps": {
    "tma_a": { "tensor": "a", "dims": ["(form == 0) * K + (form != 0) * N", "M"],
               "box": ["64", "(form == 2) * 64 + (form != 2) * 128"], "swizzle": 128,
               "oob_fill": "zero", "l2_promotion": 256 },
    "tma_b": { "tensor": "b", "dims": ["K", "(form == 2) * M + (form != 2) * E * N"],
               "box": ["64", "(form == 0) * BN + (form != 0) * 64"], "swizzle": 128,
               "oob_fill": "zero", "l2_promotion": 256 },
    "tma_bs": { "tensor": "b", "dims": ["K", "(form == 2) * M + (form != 2) * E * N"],
                "box": ["64", "SHORT_BN"], "swizzle": 128,
                "oob_fill": "zero", "l2_promotion": 256 } },
  "launch": [ { "kernel": "sm90_sm100_bf16_grouped_gemm_tma",
                "when": "form == 1 || (form == 0 && (M > SHORT * E || PP != 0)) || (form == 2 && M > EPI_SHORT * E)",
                "grid": ["min(num_sms, (form != 2) * (ceil_div(M, 128) + E) * ceil_div((form == 0) * N + (form != 0) * K, BN) + (form == 2) * E * ceil_div(N, 128) * ceil_div(K, WGRAD_BN))"],
                "block": ["384"],
                "smem": "(form != 2) * (min(STAGES, (226304 - EPI * (PP == 0) * 128 * (2 * BN + 16)) / (16384 + 128 * BN)) * (16384 + 128 * BN) + EPI * (PP == 0) * 128 * (2 * BN + 16)) + (form == 2) * (min(STAGES, (226304 - WGRAD_EPI * (PP == 0) * 128 * (2 * WGRAD_BN + 16)) / (16384 + 128 * WGRAD_BN)) * (16384 + 128 * WGRAD_BN) + WGRAD_EPI * (PP == 0) * 128 * (2 * WGRAD_BN + 16)) + 6144",
                "args": ["tma_a", "tma_b", "offs", "out", "M", "E", "N", "K"] },
              { "kernel": "sm90_sm100_bf16_grouped_gemm_tma_staged",
                "when": "form == 2 && M <= EPI_SHORT * E",
                "grid": ["min(num_sms, (form != 2) * (ceil_div(M, 128) + E) * ceil_div((form == 0) * N + (form != 0) * K, BN) + (form == 2) * E * ceil_div(N, 128) * ceil_div(K, WGRAD_BN))"],
                "block": ["384"],
                "smem": "min(STAGES, (226304 - (PP == 0) * 128 * (2 * WGRAD_BN + 16)) / (16384 + 128 * WGRAD_BN)) * (16384 + 128 * WGRAD_BN) + (PP == 0) * 128 * (2 * WGRAD_BN + 16) + 6144",
                "args": ["tma_a", "tma_b", "offs", "out", "M", "E", "N", "K"] },
              { "kernel": "sm90_sm100_bf16_grouped_gemm_tma_short",
                "when": "form == 0 && M <= SHORT * E && PP == 0",
                "grid": ["min(num_sms, (ceil_div(M, 128) + E) * ceil_div(N, SHORT_BN))"],
                "block": ["384"],
                "smem": "min(STAGES, (226304 - EPI * 128 * (2 * SHORT_BN + 16)) / (16384 + 128 * SHORT_BN)) * (16384 + 128 * SHORT_BN) + EPI * 128 * (2 * SHORT_BN + 16) + 6144",
                "args": ["tma_a", "tma_bs", "offs", "out", "M", "E", "N", "K"] } ] }
*/
// BF16 grouped GEMM of an MoE layer's experts (spec.json), three forms by WS_FORM, one source:
//   0 fwd:   out[r, n]     = sum_k a[r, k] * b[g*N + n, k]     (2D x 3D)
//   1 dgrad: out[r, k]     = sum_n a[r, n] * b[g*N + n, k]     (2D x 3D, contraction over N)
//   2 wgrad: out[g*N+n, k] = sum_{r in g} a[r, n] * b[r, k]    (2D x 2D, contraction over tokens)
// The machinery is kernels/bf16_gemm's (TMA + mbarrier ring, warp-specialized, persistent); what is
// new is the group scheduler and the operand layouts per form.
//
//  - Tiles: 128 output rows x BN output columns; k-blocks of 64 contraction elements. Every operand
//    box is 128-byte swizzled (64 bf16 inner), so one stage is A 16 KiB + B BN*128 bytes in every
//    form and the full barrier always expects the same byte count (TMA counts zero-filled bytes).
//  - Operand layouts (MMA "M" = output rows, "N" = output columns):
//      fwd:   A = a rows (K-major), B = expert g's rows of b (K-major): the dense GEMM's layout.
//      dgrad: A = a rows (K-major over n). B = b[g*N + n, k] with k contiguous: an MN-major
//             (transposed) operand: BN/64 boxes of (64 k) x (64 n), each one 128-byte swizzle
//             column; descriptor LBO = 8 KiB (next 64 columns), SBO = 1 KiB (next 8 n), and a
//             k16 step is +2 KiB. Reading b as stored beats a transposed copy of the weights.
//      wgrad: both operands MN-major the same way: A = a[r, n] as 2 boxes (64 n) x (64 r),
//             B = b[r, k] as BN/64 boxes (64 k) x (64 r).
//  - Ragged contraction without masking: every depth (K, N, or a group's row count) is a multiple
//    of 16, so a k16 step is wholly inside or wholly past the end; the MMA side issues only
//    min(4, (depth - 64*kb)/16) steps of the last k-block. Rows of the next group (wgrad) or of
//    the next expert (dgrad) that TMA loaded into the stage are never multiplied.
//    Output rows past a group's end (fwd/dgrad) or past N (wgrad) and columns past the output
//    width are masked at the store; TMA zero-fills only past the tensor's end.
//  - Scheduler: a persistent CTA takes linear tiles blockIdx.x, +gridDim.x, ...; a cursor walks
//    the groups forward (offs copied once to shared memory, E <= 1024; beyond that it reads
//    global memory) summing per-group tile counts, so mapping a tile costs O(1) amortized. Inside
//    a group tiles go in GROUP_M-row bands (L2 reuse of the group's B columns). Empty groups
//    have no tiles in fwd/dgrad; in wgrad a group always has ceil(N/128) x ceil(K/BN) tiles and
//    an empty one has zero k-blocks: its tiles are stored as zeros without touching the MMA.
//  - sm_90a: warpgroup 0 produces (one thread issues TMA, setmaxnreg 40), warpgroups 1 and 2
//    consume 64 rows each with wgmma m64nBNk16 (transpose bits per form), wait_group(1) to free
//    the previous stage; bf16 pairs stored from the accumulator fragment (EPI=0). EPI=1: the
//    rows staged in shared memory and stored one row per cp.async.bulk (rows past the group's
//    end skipped); the staging costs BN=256 its fourth stage, and on the H200 (2026-12-02) the
//    two came out even: 0.95-1.04x EPI=0 per shape in fwd and dgrad. In wgrad, where a group of
//    512-1024 tokens gives a tile only 8-16 k-blocks, the staged epilogue paid (H200 2026-12-03:
//    1.07x, 1.34x, 2.07x at 1024, 512, 32 tokens per group; 0.91-0.97x at 4096 and more), so the
//    module holds both: the plan launches `_tma_staged` in wgrad where M <= EPI_SHORT * E.
//  - sm_100a: warp 0 TMA, warp 1 issues tcgen05.mma (M=128, N=BN, a/b major bits per form) into
//    a double-buffered TMEM accumulator; warps 4..11 drain it (tcgen05.ld 32x32b.x32) and store.
// Knobs: BN and EPI (fwd and dgrad: output tile width and the main instance's epilogue; 192 with
// the staged epilogue keeps four 40 KiB stages and measured 1.08x / 1.09x 256 with register
// stores, H200 2026-12-03), WGRAD_BN and WGRAD_EPI (the same for wgrad: 192 and 1 measured
// 1.036x geomean 256 and 0 in one call, 1.14x at E128, 0.94-0.97x at E8 K7168 and M256, H200
// 2026-12-03 session 20), STAGES (ring depth, capped to fit), GROUP_M (band height), EPI_SHORT (wgrad: most
// tokens per group for the staged instance; 0: never), SHORT and SHORT_BN (fwd: where groups
// average at most SHORT tokens the plan launches `_tma_short`, the same kernel over SHORT_BN-wide
// tiles: at 32 tokens per group a group is one tile row, so 192-column tiles leave ~60 of 132
// SMs streaming the weights, 128-column ones ~90; 0: never). The plan's knob_scope tells the
// tuner which form reads which knobs. The kernel body is a template on its tile constants
// (ConfigT) and epilogue (RingT), so one module holds the three instances.
// GEMV and its GEMV_* knobs (session 30: fwd's short groups as a GEMV streaming b, and a
// shared-token form) measured 0.35-0.51x the default at E8 K2048 M256 N1536 on the H200
// (session 32) and were removed; b864ca7 has them (NOTES.md, "Session 32").
// PP=1 (sm_90a; BN <= 128; sm_100a ignores it, its TMEM accumulator is already double-buffered):
// ping-pong consumers, each warpgroup a whole 128 x BN tile in turn, so one warpgroup's epilogue
// runs under the other's MMAs (short wgrad contractions: ~512 rows per group = 8 k-blocks against a
// 64 KiB register-to-global epilogue per 128x256 tile); order barriers in acc_full's slots.
// PP=1 hung on its first H200 runs: a CTA without a tile sought it twice, and the tile cursor
// then mapped it past the last group (ws::GroupCursor::seek, fixed in session 24). Now `ok` at
// every test and hidden shape in fwd and dgrad, but 0.95-0.99x the cooperative BN=128 and
// 0.89x the default BN=192 (1.09x at fwd M256 alone), so it stays off the tuner's list.
// Not done: TMA multicast / 2-CTA MMA, stream-K for the decode shape.
//
// Evaluate: build/warpsmith eval bf16_grouped_gemm kernels/bf16_grouped_gemm/kernel.cu --set form=dgrad
// warpsmith:sass sm_90a: HGMMA UTMALDG
// warpsmith:sass sm_90a EPI=1: HGMMA UTMALDG UBLKCP
// warpsmith:sass sm_100a: UTCHMMA UTMALDG LDTM
#include <cuda_bf16.h>

#include "ws/gemm.cuh"
#include "ws/wgmma.cuh"
#include "ws/wgmma_ring.cuh"

#ifndef WS_FORM
#error "compile with -DWS_FORM (the problem's form parameter)"
#endif
#ifndef BN
#define BN 192  // fwd and dgrad (knob_scope); wgrad's tile is WGRAD_BN
#endif
#ifndef WGRAD_BN
#define WGRAD_BN 192
#endif
#ifndef SHORT_BN
#define SHORT_BN 128  // fwd's tile width where groups average at most SHORT tokens (the plan)
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef PP
#define PP 0
#endif
#ifndef EPI
#define EPI 1  // sm_90a: 1 = staged epilogue (ws::StagedStore), 0 = stores from registers
#endif
#ifndef WGRAD_EPI
#define WGRAD_EPI 1  // wgrad's EPI (its main instance; short groups take the staged one anyway)
#endif
// The form's tile: fwd and dgrad measured best at 192 columns with the staged epilogue (H200,
// 2026-12-03), wgrad too in one call (session 20); wgrad keeps its own two knobs, its groups'
// lengths differ from the others' by orders of magnitude.
#if WS_FORM == 2
#define TILE_N WGRAD_BN
#define TILE_EPI WGRAD_EPI
#else
#define TILE_N BN
#define TILE_EPI EPI
#endif
#if PP != 0 && TILE_EPI != 0  // ping-pong consumers store from registers
#undef TILE_EPI
#define TILE_EPI 0
#endif

namespace {

using ws::uint32_t;
using ws::uint64_t;

// A tile width's constants: the EPI / staged instances' TILE_N, the short-group one's SHORT_BN.
template <int kBN_>
struct ConfigT {
  static constexpr int kForm = WS_FORM;
  static constexpr int kBM = 128, kBN = kBN_, kBK = 64;
  static constexpr int kThreads = 384;
  static constexpr int kABytes = kBM * kBK * 2;  // (BM,BK) bf16, 128B-swizzled
  static constexpr int kBBytes = kBN * kBK * 2;  // (BN,BK) bf16, 128B-swizzled
  static constexpr int kBoxBytes = 64 * 64 * 2;  // one MN-major box: (64 contraction, 64 MN)
  static constexpr int kStageBytes = kABytes + kBBytes;
  static constexpr int kMaxE = 1024;                    // offs held in shared memory
  static constexpr int kSmemCap = 227 * 1024 - 6144;    // 226304, the plan's cap
  static constexpr int kGroupM = GROUP_M;
  static constexpr int kAccCols = ws::tmem_columns(2 * kBN);  // double-buffered accumulator
  // MN-major (transposed) operands: A in wgrad, B in dgrad and wgrad.
  static constexpr int kTransA = kForm == 2 ? 1 : 0;
  static constexpr int kTransB = kForm != 0 ? 1 : 0;
  // PP = 1 (sm_90a): ping-pong consumers, each warpgroup a whole 128 x BN tile (alternate tiles),
  // so one warpgroup's epilogue overlaps the other's MMAs; one arrival frees a stage.
  static constexpr int kPingPong = PP;
  static constexpr int kEmptyArrivals = PP ? 1 : 2;
};
using Config = ConfigT<TILE_N>;
#if PP != 0
using ShortConfig = Config;  // the plan never launches the short instance with PP
#else
using ShortConfig = ConfigT<SHORT_BN>;
#endif
// The ring of the kernel instance with epilogue kEpi (0: stores from registers, 1: staged; the
// plan launches the EPI instance, and in wgrad the staged one where groups are short).
template <class C, int kEpi>
struct RingT {
  // kEpi = 1: two consumer warpgroups' staged output rows between the ring and the barriers.
  using Staged = ws::StagedStore<C::kBN, __nv_bfloat16>;
  static constexpr int kEpiBytes = kEpi ? 2 * Staged::kBytes : 0;  // = EPI * 128 * (2 * BN + 16)
  static constexpr int kRingCap = C::kSmemCap - kEpiBytes;
  static constexpr int kStages =
      STAGES < kRingCap / C::kStageBytes ? STAGES : kRingCap / C::kStageBytes;
  static_assert(kStages >= 2, "at least two stages fit");
};
template <int kEpi>
using Ring = RingT<Config, kEpi>;
// PP consumers store from registers: their staged instance is the plain one.
constexpr int kStagedEpi = PP ? 0 : 1;
static_assert(Config::kForm >= 0 && Config::kForm <= 2, "WS_FORM: 0 fwd, 1 dgrad, 2 wgrad");
static_assert(Config::kBN == 64 || Config::kBN == 128 || Config::kBN == 192 || Config::kBN == 256,
              "BN: 64, 128, 192, 256");
static_assert(Config::kPingPong == 0 || Config::kPingPong == 1, "PP: 0 or 1");
static_assert(Config::kPingPong == 0 || Config::kBN <= 128,
              "PP: a warpgroup holds a 128 x BN fp32 tile (BN registers): BN <= 128");
static_assert(Config::kABytes % 1024 == 0 && Config::kBBytes % 1024 == 0, "1024-byte atoms");
static_assert(ShortConfig::kBN == 64 || ShortConfig::kBN == 128 || ShortConfig::kBN == 192 ||
                  ShortConfig::kBN == 256,
              "SHORT_BN: 64, 128, 192, 256");
constexpr int kTransA = Config::kTransA, kTransB = Config::kTransB;

// The group scheduler: tile order, contraction depth and output placement per form.
template <class C>
using CursorT = ws::GroupCursor<C::kForm, C::kBM, C::kBN, C::kGroupM>;
using Cursor = CursorT<Config>;
using Tile = ws::GroupTile<Config::kForm>;

// Producer loop (one thread): the same tile sequence and stage counter as the MMA side.
template <class C, int kStages>
__device__ __forceinline__ void produce(const ws::TensorMap* tma_a, const ws::TensorMap* tma_b,
                                        uint32_t smem, uint32_t full, uint32_t empty,
                                        const int* offs, int E, int N, int K) {
  CursorT<C> cur;
  uint32_t it = 0;
  Tile tl;
  for (int t = blockIdx.x; cur.seek(t, offs, E, N, K, tl); t += gridDim.x) {
    const int kblocks = (tl.depth(N, K) + C::kBK - 1) / C::kBK;
#pragma unroll 1  // the producer lives in 40 registers (setmaxnreg)
    for (int kb = 0; kb < kblocks; ++kb, ++it) {
      const uint32_t st = it % kStages, ph = (it / kStages) & 1;
      ws::mbar_wait(empty + 8 * st, ph ^ 1);
      ws::mbar_expect_tx(full + 8 * st, C::kStageBytes);
      const uint32_t a_dst = smem + st * C::kABytes;
      const uint32_t b_dst = smem + kStages * C::kABytes + st * C::kBBytes;
      const uint32_t bar = full + 8 * st;
      const int k0 = kb * C::kBK;
      if (C::kForm == 0) {
        ws::tma_load_2d(a_dst, tma_a, bar, k0, tl.s + tl.tm * C::kBM);
        ws::tma_load_2d(b_dst, tma_b, bar, k0, tl.g * N + tl.tn * C::kBN);
      } else if (C::kForm == 1) {
        ws::tma_load_2d(a_dst, tma_a, bar, k0, tl.s + tl.tm * C::kBM);
#pragma unroll
        for (int j = 0; j < C::kBN / 64; ++j)  // (64 n) x (64 k) boxes, k contiguous
          ws::tma_load_2d(b_dst + j * C::kBoxBytes, tma_b, bar, tl.tn * C::kBN + 64 * j,
                          tl.g * N + k0);
      } else {
#pragma unroll
        for (int i = 0; i < 2; ++i)  // (64 r) x (64 n) boxes, n contiguous
          ws::tma_load_2d(a_dst + i * C::kBoxBytes, tma_a, bar, tl.tm * C::kBM + 64 * i,
                          tl.s + k0);
#pragma unroll
        for (int j = 0; j < C::kBN / 64; ++j)  // (64 r) x (64 k) boxes, k contiguous
          ws::tma_load_2d(b_dst + j * C::kBoxBytes, tma_b, bar, tl.tn * C::kBN + 64 * j,
                          tl.s + k0);
      }
    }
  }
}

// k16 steps of k-block kb that lie inside the contraction (depth % 16 == 0).
__device__ __forceinline__ int ksteps_of(int depth, int kb) {
  return min(Config::kBK / 16, (depth - kb * Config::kBK) / 16);
}

// Byte offset of k16 step k inside an operand stage: +32 B along a K-major 128-byte row,
// +2 KiB (16 rows of 128 B) in an MN-major box.
template <int kTrans>
__device__ __forceinline__ uint32_t kstep_bytes(int k) {
  return kTrans ? 2048u * k : 32u * k;
}


// Shared-memory descriptors: K-major operands leave LBO unused; MN-major ones step 8 KiB from one
// 64-wide MN box to the next.
template <int kTrans>
constexpr uint32_t kLboBytes = kTrans ? Config::kBoxBytes : 16;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
// Instruction descriptor, kind::f16: D f32, A and B bf16, major-ness per form, M=128, N=BN.
template <class C>
constexpr uint32_t kIdescT =
    ws::umma_idesc(ws::kUmmaBf16, ws::kUmmaBf16, kTransA, kTransB, C::kBM, C::kBN);
#else
// k16 step k of the stage at (a, b) into the warpgroup's (64, 2 * kHalf) fragment.
template <int kHalf>
__device__ __forceinline__ void wgmma_step(float (&acc)[kHalf], uint32_t a, uint32_t b, int k) {
  ws::wgmma_bf16<2 * kHalf, kTransA, kTransB>(
      acc, ws::wgmma_desc_sw128<kLboBytes<kTransA>>(a + kstep_bytes<kTransA>(k)),
      ws::wgmma_desc_sw128<kLboBytes<kTransB>>(b + kstep_bytes<kTransB>(k)), 1);
}
#endif

}  // namespace

#if PP != 0 && !(defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000)
// sm_90a consumer warpgroup cw with PP = 1: the CTA's tiles alternate between the two consumer
// warpgroups (local tile j goes to warpgroup j % 2), each computing the whole 128 x BN tile as two
// m64 halves (A rows 0..63 at the stage, rows 64..127 8 KiB on: K-major rows and MN-major boxes
// alike). Both walk every tile so their stage counters match the producer's: a tile of the other
// warpgroup only advances it by its k-blocks. The ring hands stages out in tile order, so the
// warpgroups' MMAs follow each other and one's epilogue (stores from registers) overlaps the
// other's main loop; a stage is freed by its one consumer (empty count 1).
// Order barriers (order + 8w, count 1: warpgroup w arrives after each of its main loops): a
// warpgroup starts a tile's main loop only once the other has finished the previous tile's.
// Besides the ping-pong this keeps a full-barrier wait at most one phase ahead: without it a
// warpgroup that skipped the other's tile could wait on a stage two fills behind and pass on the
// parity of an older fill.
template <int cw>
__device__ __forceinline__ void consume_pingpong(uint32_t smem, uint32_t full, uint32_t empty,
                                                 uint32_t order,
                                                 const int* offs, __nv_bfloat16* __restrict__ out,
                                                 int E, int N, int K, int lane) {
  ws::setmaxnreg_inc<232>();
  const int t128 = threadIdx.x % 128;  // thread in the warpgroup
  const bool signal = t128 == 0;
  Cursor cur;
  Tile tl;
  float acc0[Config::kBN / 2], acc1[Config::kBN / 2];  // rows 0..63 and 64..127, fp32
  // Warpgroup 1 starts past warpgroup 0's first tile; each then skips the other's next tile.
  // cw is a template argument: a tile walk that depends on threadIdx makes ptxas serialize the
  // wgmmas (C7520 "WG.AR in divergent path").
  const int first = cur.seek(blockIdx.x, offs, E, N, K, tl)
                        ? (tl.depth(N, K) + Config::kBK - 1) / Config::kBK
                        : 0;
  uint32_t it = cw * first;
  int t = blockIdx.x + cw * gridDim.x;
  for (uint32_t n = 0; cur.seek(t, offs, E, N, K, tl); t += 2 * gridDim.x, ++n) {
    const int depth = tl.depth(N, K), kblocks = (depth + Config::kBK - 1) / Config::kBK;
    ws::pingpong_wait_turn<cw>(order, n);
#pragma unroll
    for (int i = 0; i < Config::kBN / 2; ++i) acc0[i] = acc1[i] = 0.0f;
    uint32_t prev = 0;
    for (int kb = 0; kb < kblocks; ++kb, ++it) {
      const uint32_t s = it % Ring<0>::kStages, ph = (it / Ring<0>::kStages) & 1;
      ws::mbar_wait(full + 8 * s, ph);
      const uint32_t a = smem + s * Config::kABytes;
      const uint32_t b = smem + Ring<0>::kStages * Config::kABytes + s * Config::kBBytes;
      const int ksteps = ksteps_of(depth, kb);
      ws::wgmma_fence();
      if (ksteps == Config::kBK / 16) {  // whole k-block: straight-line wgmmas
#pragma unroll
        for (int k = 0; k < Config::kBK / 16; ++k) {
          wgmma_step(acc0, a, b, k);
          wgmma_step(acc1, a + Config::kBoxBytes, b, k);
        }
      } else {  // the contraction's tail (one guarded wgmma per branch: none serialized)
#pragma unroll
        for (int k = 0; k < Config::kBK / 16; ++k) {
          if (k < ksteps) wgmma_step(acc0, a, b, k);
        }
#pragma unroll
        for (int k = 0; k < Config::kBK / 16; ++k) {
          if (k < ksteps) wgmma_step(acc1, a + Config::kBoxBytes, b, k);
        }
      }
      ws::wgmma_commit();
      ws::release_previous_stage(kb, s, prev, empty, signal);
    }
    ws::pingpong_end_main<cw>(acc0, acc1, empty, prev, order, kblocks, signal);
    // Fragment of each half: register 4j+e of thread (warp w, lane l) is row 16w + l/4 + 8*(e/2)
    // (+64 in acc1), column 8j + 2*(l%4) + e%2. Empty wgrad groups store their zeros.
    const ws::OutTile o = Cursor::out_tile(tl, N, K);
    const int r = 16 * (t128 / 32) + lane / 4, colb = o.col0 + 2 * (lane % 4);
    ws::store_fragment_bf16<Config::kBN>(out, acc0, o.row0, r, o.rows_left, colb, o.ncols);
    ws::store_fragment_bf16<Config::kBN>(out, acc1, o.row0, r + 64, o.rows_left, colb, o.ncols);
    Tile other;  // the other warpgroup's next tile: its k-blocks pass by this one's counter
    if (cur.seek(t + gridDim.x, offs, E, N, K, other))
      it += (other.depth(N, K) + Config::kBK - 1) / Config::kBK;
  }
}
#endif

// The kernel of tile width C::kBN with epilogue kEpi (RingT); tma_a / tma_b: see the plan (boxes
// per form); offs [E]
// cumulative group ends; out as spec.json.
template <class C, int kEpi>
__device__ __forceinline__ void grouped_gemm(const ws::TensorMap& tma_a,
                                             const ws::TensorMap& tma_b,
                                             const int* __restrict__ offs,
                                             __nv_bfloat16* __restrict__ out, int M, int E, int N,
                                             int K) {
  using R = RingT<C, kEpi>;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  // Tiles need 1024-byte alignment (swizzle atoms); the staged output rows (EPI = 1), the
  // barriers, then offs follow the ring.
  const uint32_t smem = (ws::smem_u32(smem_raw) + 1023) & ~1023u;
  const uint32_t staged = smem + R::kStages * C::kStageBytes;
  const uint32_t bars = staged + R::kEpiBytes;
  const uint32_t full = bars, empty = bars + 8 * R::kStages;
  const uint32_t acc_full = bars + 16 * R::kStages, acc_empty = acc_full + 16;
  const uint32_t tmem_slot = acc_empty + 16;
  int* offs_smem = reinterpret_cast<int*>(smem_raw + (bars + 1024 - ws::smem_u32(smem_raw)));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  (void)M;
  (void)staged;

  const int* goffs = ws::stage_offs<C::kMaxE, C::kThreads>(offs_smem, offs, E);

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
  // ======================= sm_100a =======================
  if (threadIdx.x == 0) {
    ws::tma_prefetch(&tma_a);
    ws::tma_prefetch(&tma_b);
    ws::mbar_init_ring<R::kStages>(full, 1, empty, 1);  // empty: one tcgen05.commit
    // acc_full: the commit after a tile's last MMA; acc_empty: one arrive per epilogue warp.
    ws::mbar_init_ring<2>(acc_full, 1, acc_empty, 8);
    ws::fence_mbarrier_init();
  }
  // Warp 2 allocates and later frees the accumulators.
  const uint32_t tmem_base = ws::tmem_alloc_cta(warp == 2, tmem_slot, C::kAccCols);

  if (warp == 0) {
    if (lane == 0) produce<C, R::kStages>(&tma_a, &tma_b, smem, full, empty, goffs, E, N, K);
  } else if (warp == 1) {
    if (lane == 0) {
      CursorT<C> cur;
      Tile tl;
      uint32_t it = 0, local = 0;
      for (int t = blockIdx.x; cur.seek(t, goffs, E, N, K, tl); t += gridDim.x) {
        const int depth = tl.depth(N, K), kblocks = (depth + C::kBK - 1) / C::kBK;
        if (kblocks == 0) continue;  // empty wgrad group: the epilogue stores zeros
        const uint32_t buf = local & 1, aph = (local >> 1) & 1;
        ++local;
        ws::mbar_wait(acc_empty + 8 * buf, aph ^ 1);  // the epilogue has drained this buffer
        ws::tc_fence_after();
        const uint32_t d_tmem = tmem_base + buf * C::kBN;
        for (int kb = 0; kb < kblocks; ++kb, ++it) {
          const uint32_t s = it % R::kStages, ph = (it / R::kStages) & 1;
          ws::mbar_wait(full + 8 * s, ph);
          ws::tc_fence_after();
          const uint32_t a = smem + s * C::kABytes;
          const uint32_t b = smem + R::kStages * C::kABytes + s * C::kBBytes;
          const int ksteps = ksteps_of(depth, kb);
#pragma unroll
          for (int k = 0; k < C::kBK / 16; ++k) {
            if (k < ksteps)
              ws::umma_f16(d_tmem,
                           ws::umma_desc_sw128<kLboBytes<kTransA>>(a + kstep_bytes<kTransA>(k)),
                           ws::umma_desc_sw128<kLboBytes<kTransB>>(b + kstep_bytes<kTransB>(k)),
                           kIdescT<C>, (kb | k) != 0);
          }
          ws::umma_commit(empty + 8 * s);  // frees the stage once these MMAs have read it
        }
        ws::umma_commit(acc_full + 8 * buf);
      }
    }
  } else if (warp >= 4) {
    // Epilogue: warp w reads TMEM lanes 32*(w%4).. (its sub-partition), half h of the columns.
    const int q = warp % 4, h = (warp - 4) / 4;
    CursorT<C> cur;
    Tile tl;
    uint32_t local = 0;
    for (int t = blockIdx.x; cur.seek(t, goffs, E, N, K, tl); t += gridDim.x) {
      const ws::OutTile o = CursorT<C>::out_tile(tl, N, K);
      const bool zero = tl.depth(N, K) == 0;
      const uint32_t buf = local & 1, aph = (local >> 1) & 1;
      if (!zero) {
        ++local;
        ws::mbar_wait(acc_full + 8 * buf, aph);
        ws::tc_fence_after();
      }
      const int r = q * 32 + lane;
#pragma unroll 1
      for (int c = 0; c < C::kBN / 2; c += 32) {
        const int cc = h * (C::kBN / 2) + c;
        uint32_t v[32];
        if (zero) {
#pragma unroll
          for (int i = 0; i < 32; ++i) v[i] = 0u;
        } else {
          ws::tmem_ld32(tmem_base + (uint32_t(q * 32) << 16) + buf * C::kBN + cc, v);
        }
        const int col = o.col0 + cc;
        if (r < o.rows_left) {
          uint4* dst = reinterpret_cast<uint4*>(out + (o.row0 + r) * o.ncols + col);
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            // widths are multiples of 16: each 8-column piece is wholly in or out.
            if (col + 8 * j < o.ncols) {
              // NOTE: ws::pack_bf16x8 on v moves registers of the wgrad form: kept as verified.
              uint4 p;
              p.x = ws::pack_bf16(__uint_as_float(v[8 * j + 0]), __uint_as_float(v[8 * j + 1]));
              p.y = ws::pack_bf16(__uint_as_float(v[8 * j + 2]), __uint_as_float(v[8 * j + 3]));
              p.z = ws::pack_bf16(__uint_as_float(v[8 * j + 4]), __uint_as_float(v[8 * j + 5]));
              p.w = ws::pack_bf16(__uint_as_float(v[8 * j + 6]), __uint_as_float(v[8 * j + 7]));
              dst[j] = p;
            }
          }
        }
      }
      if (!zero) {
        ws::tc_fence_before();
        __syncwarp();
        if (lane == 0) ws::mbar_arrive(acc_empty + 8 * buf);
      }
    }
  }
  ws::tmem_free_cta(warp == 2, tmem_base, C::kAccCols);
#else
  // ======================= sm_90a =======================
  if (threadIdx.x == 0) {
    ws::tma_prefetch(&tma_a);
    ws::tma_prefetch(&tma_b);
    // empty: one arrival per consumer warpgroup (PP: the tile's owner only)
    ws::mbar_init_ring<R::kStages>(full, 1, empty, C::kEmptyArrivals);
#if PP != 0
    // PP: the consumers' order barriers, in sm_100a's acc_full slots (unused on sm_90a).
    ws::mbar_init(acc_full, 1);
    ws::mbar_init(acc_full + 8, 1);
#endif
    ws::fence_mbarrier_init();
  }
  __syncthreads();
  const int wg = threadIdx.x / 128;
  if (wg == 0) {
    ws::setmaxnreg_dec<40>();
    if (threadIdx.x == 0) produce<C, R::kStages>(&tma_a, &tma_b, smem, full, empty, goffs, E, N, K);
  } else {
#if PP != 0
    if (wg == 1)
      consume_pingpong<0>(smem, full, empty, acc_full, goffs, out, E, N, K, lane);
    else
      consume_pingpong<1>(smem, full, empty, acc_full, goffs, out, E, N, K, lane);
#else
    ws::setmaxnreg_inc<232>();
    const int cw = wg - 1;               // consumer warpgroup: rows 64*cw.. of the tile
    const int t128 = threadIdx.x % 128;  // thread in the warpgroup
    const bool signal = t128 == 0;
    // Rows 64*cw.. of the A stage: 64 K-major rows of 128 B, or the cw-th MN-major box; 8 KiB both.
    const uint32_t a_off = cw * C::kBoxBytes;
    CursorT<C> cur;
    Tile tl;
    float acc[C::kBN / 2];  // (64, BN) fp32 fragment
    uint32_t it = 0;
    const typename R::Staged epi{staged + cw * R::Staged::kBytes};
    for (int t = blockIdx.x; cur.seek(t, goffs, E, N, K, tl); t += gridDim.x) {
      const int depth = tl.depth(N, K), kblocks = (depth + C::kBK - 1) / C::kBK;
#pragma unroll
      for (int i = 0; i < C::kBN / 2; ++i) acc[i] = 0.0f;
      uint32_t prev = 0;
      for (int kb = 0; kb < kblocks; ++kb, ++it) {
        const uint32_t s = it % R::kStages, ph = (it / R::kStages) & 1;
        ws::mbar_wait(full + 8 * s, ph);
        const uint32_t a = smem + s * C::kABytes + a_off;
        const uint32_t b = smem + R::kStages * C::kABytes + s * C::kBBytes;
        const int ksteps = ksteps_of(depth, kb);
        ws::wgmma_fence();
        if (ksteps == C::kBK / 16) {  // whole k-block: straight-line wgmmas
#pragma unroll
          for (int k = 0; k < C::kBK / 16; ++k)
            wgmma_step(acc, a, b, k);
        } else {  // the contraction's tail
#pragma unroll
          for (int k = 0; k < C::kBK / 16; ++k) {
            if (k < ksteps)
              wgmma_step(acc, a, b, k);
          }
        }
        ws::wgmma_commit();
        if (kb > 0) {
          ws::wgmma_wait<1>();  // the previous k-block's wgmmas are done: free its stage
          if (signal) ws::mbar_arrive(empty + 8 * prev);
        }
        prev = s;
      }
      ws::wgmma_wait<0>();
      if (signal && kblocks > 0) ws::mbar_arrive(empty + 8 * prev);
      // Accumulator fragment: register 4j+e (e = 0..3) of thread (warp w, lane l) is row
      // 16w + l/4 + 8*(e/2), column 8j + 2*(l%4) + e%2.
      const ws::OutTile o = CursorT<C>::out_tile(tl, N, K);
      if constexpr (kEpi != 0) {
        epi.store(out, acc, o.row0, cw * 64, o.rows_left, o.col0, o.ncols, cw,
                  [](float lo, float hi) { return ws::pack_bf16(lo, hi); });
      } else {
        const int w = t128 / 32;
        const int r = cw * 64 + 16 * w + lane / 4;
        ws::store_fragment_bf16<C::kBN>(out, acc, o.row0, r, o.rows_left,
                                             o.col0 + 2 * (lane % 4), o.ncols);
      }
    }
    if constexpr (kEpi != 0) epi.drain();
#endif  // PP
  }
#endif
}

extern "C" __global__ void __launch_bounds__(Config::kThreads, 1) sm90_sm100_bf16_grouped_gemm_tma(
    const __grid_constant__ ws::TensorMap tma_a, const __grid_constant__ ws::TensorMap tma_b,
    const int* __restrict__ offs, __nv_bfloat16* __restrict__ out, int M, int E, int N, int K) {
  grouped_gemm<Config, TILE_EPI>(tma_a, tma_b, offs, out, M, E, N, K);
}

// The staged-epilogue instance, for short groups (the plan's EPI_SHORT).
extern "C" __global__ void __launch_bounds__(Config::kThreads, 1)
    sm90_sm100_bf16_grouped_gemm_tma_staged(const __grid_constant__ ws::TensorMap tma_a,
                                            const __grid_constant__ ws::TensorMap tma_b,
                                            const int* __restrict__ offs,
                                            __nv_bfloat16* __restrict__ out, int M, int E, int N,
                                            int K) {
  grouped_gemm<Config, kStagedEpi>(tma_a, tma_b, offs, out, M, E, N, K);
}

#if WS_FORM == 0
// The short-group instance (fwd): SHORT_BN-wide tiles where groups average at most SHORT tokens.
extern "C" __global__ void __launch_bounds__(Config::kThreads, 1)
    sm90_sm100_bf16_grouped_gemm_tma_short(const __grid_constant__ ws::TensorMap tma_a,
                                           const __grid_constant__ ws::TensorMap tma_b,
                                           const int* __restrict__ offs,
                                           __nv_bfloat16* __restrict__ out, int M, int E, int N,
                                           int K) {
  grouped_gemm<ShortConfig, TILE_EPI>(tma_a, tma_b, offs, out, M, E, N, K);
}
#endif

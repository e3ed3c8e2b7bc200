/* warpsmith:plan
{ "knobs": { "STRATEGY": [3, 0, 1, 2, 4], "BN": [256, 128, 64, 192], "STAGES": [4, 3, 5, 6], "GROUP_M": [8, 16, 1],
             "SCALE_PIPE": [2, 1, 0], "SHORT": [128, 0, 512, 1024],
             "SHORT_STAGES": [4, 8, 12], "PDL": [0, 1], "EPI": [1, 0],
             "PRE_ORDER": [2, 0, 3], "FUSE": [0, 1, 2] },
  "tensor_maps": {
    "tma_a": { "tensor": "a", "dims": ["K", "M"], "box": ["128", "128"], "swizzle": 128,
               "oob_fill": "zero", "l2_promotion": 256 },
    "tma_b": { "tensor": "b", "dims": ["K", "N", "E"], "box": ["128", "min(BN, 128)", "1"], "swizzle": 128,
               "oob_fill": "zero", "l2_promotion": 256 },
    "tma_b64": { "tensor": "b", "dims": ["K", "N", "E"], "box": ["128", "64", "1"], "swizzle": 128,
                 "oob_fill": "zero", "l2_promotion": 256 },
    "raw_a": { "tensor": "a", "dims": ["K", "M"], "box": ["64", "128"], "swizzle": 0,
               "oob_fill": "zero", "l2_promotion": 256 },
    "raw_b": { "tensor": "b", "dims": ["K", "N", "E"], "box": ["64", "BN", "1"], "swizzle": 0,
               "oob_fill": "zero", "l2_promotion": 256 },
    "sw64_a": { "tensor": "a", "dims": ["K", "M"], "box": ["64", "128"], "swizzle": 64,
                "oob_fill": "zero", "l2_promotion": 256 },
    "sw64_b": { "tensor": "b", "dims": ["K", "N", "E"], "box": ["64", "128", "1"], "swizzle": 64,
                "oob_fill": "zero", "l2_promotion": 256 } },
  "launch": [ { "kernel": "sm90_mxfp8_grouped_gemm_fwd_pre_b", "when": "STRATEGY == 3 && M >= SHORT * E && M >= E * N",
                "grid": ["min(num_sms * 4, ceil_div(E * ceil_div(N, BN) * BN * ceil_div(K, 64), 256))"],
                "block": ["256"], "smem": "0",
                "args": ["b", "b_scales", "workspace", "E", "N", "K"] },
              { "kernel": "sm90_sm100_mxfp8_grouped_gemm_fwd", "when": "STRATEGY < 3 || (STRATEGY == 3 && M >= SHORT * E && M >= E * N)",
                "grid": ["min(num_sms, (ceil_div(M, 128) + E) * ceil_div(N, BN))"],
                "block": ["384"], "pdl": "PDL",
                "smem": "min(STAGES, (226304 - EPI * (STRATEGY >= 3) * 128 * (2 * BN + 16)) / ((STRATEGY < 2) * (128 + BN) * (144 + 48 * STRATEGY) + (STRATEGY == 2) * (9216 + 192 * BN) + (STRATEGY >= 3) * (9216 + 128 * BN))) * ((STRATEGY < 2) * (128 + BN) * (144 + 48 * STRATEGY) + (STRATEGY == 2) * (9216 + 192 * BN) + (STRATEGY >= 3) * (9216 + 128 * BN)) + EPI * (STRATEGY >= 3) * 128 * (2 * BN + 16) + 6144",
                "args": ["tma_a", "tma_b", "raw_a", "raw_b", "sw64_a", "a_scales", "b_scales", "workspace", "offs", "c",
                         "M", "E", "N", "K"] },
              { "kernel": "sm90_mxfp8_grouped_gemm_fwd_t_pre", "when": "STRATEGY == 4 || (STRATEGY == 3 && M >= SHORT * E && M < E * N)",
                "grid": ["(FUSE > 0) + (FUSE == 0) * min(num_sms * 4, ceil_div((ceil_div(M, BN) + E) * BN * ceil_div(K, 64), 256))"],
                "block": ["256"], "smem": "4 * E + 16",
                "args": ["a", "a_scales", "offs", "workspace", "E", "N", "K", "M"] },
              { "kernel": "sm90_sm100_mxfp8_grouped_gemm_fwd_t", "when": "STRATEGY == 4 || (STRATEGY == 3 && M >= SHORT * E && M < E * N)",
                "grid": ["min(num_sms, ceil_div(N, 128) * (ceil_div(M, BN) + E))"],
                "block": ["384"], "pdl": "PDL",
                "smem": "min(STAGES, (226304 - EPI * 288 * BN) / (9216 + 128 * BN)) * (9216 + 128 * BN) + EPI * 288 * BN + 6144",
                "args": ["tma_a", "tma_b", "sw64_b", "a_scales", "b_scales", "workspace", "offs", "c", "M", "E", "N", "K", "a"] },
              { "kernel": "sm90_mxfp8_grouped_gemm_fwd_short_pre", "when": "STRATEGY == 3 && M < SHORT * E",
                "grid": ["min(num_sms * 4, ceil_div((ceil_div(M, 64) + E) * 64 * ceil_div(K, 64), 256))"],
                "block": ["256"], "smem": "4 * E + 16",
                "args": ["a", "a_scales", "offs", "workspace", "E", "N", "K", "M"] },
              { "kernel": "sm90_sm100_mxfp8_grouped_gemm_fwd_short", "when": "STRATEGY == 3 && M < SHORT * E",
                "grid": ["min(num_sms, ceil_div(N, 128) * (ceil_div(M, 64) + E))"],
                "block": ["384"], "pdl": "PDL", "smem": "min(SHORT_STAGES, 13) * 17408 + 6144",
                "args": ["tma_a", "tma_b64", "sw64_b", "a_scales", "b_scales", "workspace", "offs", "c", "M", "E", "N", "K", "a"] } ],
  "workspace": { "bytes": "(STRATEGY == 3 && M >= SHORT * E && M >= E * N) * E * ceil_div(N, BN) * BN * ceil_div(K, 64) * 128 + (STRATEGY == 4 || (STRATEGY == 3 && M >= SHORT * E && M < E * N)) * (ceil_div(M, BN) + E) * ceil_div(K, 64) * BN * 128 + (STRATEGY == 3 && M < SHORT * E) * (ceil_div(M, 64) + E) * ceil_div(K, 64) * 64 * 128 + (FUSE > 0) * 4 * (STRATEGY == 4 || (STRATEGY == 3 && M >= SHORT * E && M < E * N)) * (ceil_div(M, BN) + E + 2)", "zero": false } }
*/
// MXFP8 grouped GEMM, forward (spec.json): c[r, n] = bf16(sum_j 2^(Sa-127) 2^(Sb-127) *
// sum_{k in block j} a[r, k] b[g(r), n, k]), a [M,K] and b [E,N,K] E4M3 (K-contiguous), E8M0
// scales per 32 along K, offs = cumulative group ends. The core is ws/mxfp8_grouped_gemm.cuh
// (shared with mxfp8_grouped_gemm_dgrad, which is this GEMM with N and K renamed); this file binds
// the tensors, the plan and the knobs. Design, strategies and the GPU checklist: NOTES.md.
//
// How it works: persistent CTAs (384 threads) walk the groups' 128 x BN tiles (tiles never
// straddle groups: rows past a group's end are computed from the next group's rows and masked at
// the store; TMA zero-fills past M, N and K). Warp 0 issues TMA into a STAGES-deep mbarrier ring.
//  - sm_90a STRATEGY=1 (§9.2 B, the exact path): warps 1-3 dequantize each raw E4M3
//    k-block of 64 into bf16 * 2^(S-127) (cvt e4m3x2 -> f16x2 -> fp32 * scale -> bf16x2: exact)
//    in 128-byte-swizzled tiles; consumer warpgroups 1-2 run HGMMA m64nBNk16, fp32 accumulate.
//  - sm_90a STRATEGY=0 (1.6x STRATEGY=1 on the H200; §9.2 A): TMA E4M3 k-blocks of 128
//    (SW128); warps 1-3 stage the scales as fp32; consumers issue one QGMMA m64nBNk32
//    per MX block into a fresh fragment (scale-d = 0) and promote acc += (part * sa) * sb while
//    the next block's QGMMA runs (two fragments).
//  - sm_90a STRATEGY=2 (A dequantized in registers; ok on the H200, 0.79x STRATEGY=0 at BN=256,
//    NOTES.md "Session 13"): TMA raw E4M3 k-blocks of 64 (A with the 64-byte swizzle); warps 1-3
//    convert only B to scaled bf16 SW128 tiles and stage A's block scales; each consumer thread
//    converts its own A fragment (rows r, r+8) to bf16 times its row's scale and issues HGMMA
//    m64nBNk16 with A from registers (BN up to 256). B's conversion on 96 threads is its limit.
//  - sm_90a STRATEGY=3 (the default): STRATEGY=2 with one operand converted once, by a first
//    launch, into the workspace as the SW128 bf16 tiles the MMA reads; the producer copies each
//    stage's tile with one bulk copy, the transform warps only stage the register operand's
//    scales. The plan picks the operand whose conversion moves fewer bytes (E4M3 read, bf16
//    written: 3 bytes per element):
//     - M >= E*N (long groups): B, E*N*K*3 bytes (pre_b, then the GEMM; 1.5x STRATEGY=0 at
//       DeepSeek-V3 fc1);
//     - M < E*N: the tokens, M*K*3 bytes, on the transposed problem (ws::kFwdT, out^T = b_g a_g^T
//       per tile: 128 rows of b per tile dequantized in the consumers' registers, TMA with the
//       64-byte swizzle; the tokens in BN-token tiles restarting at each group start; the store
//       writes the fragment transposed, pairs of rows exchanged between lanes): _t_pre, then _t.
//       At gpt-oss-120b's 128 experts of 512 tokens that is 0.57 GB instead of 6.4 GB: 1.50x the
//       STRATEGY=0 kernel that ran there before (session 15);
//     - below SHORT tokens per group on average (M < SHORT * E): the same transposed pipeline at
//       BN=64 (_short_pre, _short; 1.07x the STRATEGY=0 kernel it replaced at 32 per group).
//    STRATEGY=4 runs the transposed pipeline (at BN) at every shape. On sm_100a every kernel is
//    the block-scaled path and the first launches do nothing.
//  - sm_100a (any setting): the native block-scaled MMA. TMA E4M3 k-blocks of 128 (SW128, as
//    STRATEGY=0); warps 1-2 write the stage's E8M0 scales as two 128x4 blocked tiles (A, B); warp
//    3 copies them into a per-stage TMEM ring (tcgen05.cp 32x128b.warpx4) and issues
//    tcgen05.mma kind::mxf8f6f4.block_scale.scale_vec::1X (M=128, N=BN, K=32: one per MX block,
//    scale-factor ID = block) into a double-buffered TMEM accumulator; warps 4-11 drain it with
//    tcgen05.ld and store NaN for rows / columns with a 0xFF scale, as the reference does.
// Why fast (model): one read of each operand tile per CTA, FP8 bytes from HBM (half of BF16's),
// tensor cores fed from a deep TMA ring; B costs (BM+BN)*BK conversions per BM*BN*BK MMA (~3 ops
// per element on 96 threads: ~55% of the HGMMA time at BN=128, overlapped), A costs 2 FP32 ops per
// output element per 32-K (= 2x the QGMMA time: its ceiling is ~990 TFLOP/s with full overlap).
// Paper model, DeepSeek-V3 fc1 (M=131072, E=8, N=4096, K=7168): 7.70 TFLOP, 1.21 GB.
//   B200: 7.70 TFLOP / 4.5 PFLOP/s dense FP8 = 1.71 ms (bytes 1.21 GB / 7.7 TB/s = 0.16 ms):
//         compute-bound on the block-scaled MMA. NOTE: a 128 x 128 x 32 FP8 MMA reads 8 KiB of
//         smem per ~65 clocks, about the SM's 128 B/clk, so one CTA's 128 x BN tiles may stop short
//         of peak; 2-CTA (cta_group::2) 256-wide tiles halve B's reads (next step after a run).
//   H200 target: >= 1.0x torch._grouped_mm BF16 on the dequantized operands (572-705 TFLOP/s:
//         11-13.5 ms), aim 1.3x (8.5-10.4 ms, i.e. 740-900 TFLOP/s: at the BF16 ceiling, so B must
//         run near peak and A must overlap its promotions); >= 2x torch FP8 rowwise at Qwen3-30B
//         (366 TFLOP/s there -> >= 732 TFLOP/s: 1.1 ms for M=131072, N=1536, K=2048).
//   H200 measured (session 15, defaults): fc1 11.54 ms = 667 TFLOP/s, 1.04x torch bf16 in the
//         same call; Qwen3-30B 1.74 ms = 473 TFLOP/s, 0.79x bf16 and 1.39x FP8 rowwise; gpt-oss
//         4.08 ms = 533 TFLOP/s, 0.96x bf16 (session 14: 0.63x).
// Knobs: STRATEGY (0 promote, 1 dequantize, 2 A in registers, 3 as 2 with one operand converted
// first, 4 always the transposed form of 3; on sm_100a it only sets the plan's smem budget, and
// BN is capped to 128 there, the tma_b box too, in which sm_100a fits (128 + BN) * 144-byte stages:
// 5 at the defaults), BN (tile width: output columns, or tokens in the transposed form), STAGES
// (ring depth, capped to 227 KiB), GROUP_M (band height inside a group), SCALE_PIPE (sm_90a: 0 the
// scale loads as first verified, 1 word loads ahead of the wait and vector scale reads, 2 as 1
// with the consumers' scale reads issued before each QGMMA wait; NOTES.md), SHORT (STRATEGY=3:
// the tokens per group below which _short runs; 0 never), SHORT_STAGES (its ring depth: its
// stages are 17 KB, and at 32 tokens per group each CTA streams 256 KB of b through them), PDL
// (1: each GEMM is launched with pdl after its first launch, which lets it start at once; the
// producer waits, griddepcontrol.wait, before its first copy of the converted tiles; H200
// 2026-12-02: 0.98-1.09x, within noise, so off), EPI (STRATEGY=3's GEMMs, not _short: 1 = each
// consumer warpgroup stages its bf16 output rows in shared memory and bulk-copies them out, one
// copy per row, ws::StagedStore, or per token row in the transposed form, StagedStoreT, so the
// tensor cores do not wait for global stores; the staging takes one ring stage at BN=256),
// PRE_ORDER (STRATEGY=3's first launches: 0 numbers the 16-element chunks tile by tile; 2 walks
// whole tile rows, a warp per row, so a chunk's place needs shifts only and a row's group one
// lookup: ncu put order 0 at ~140 instructions per chunk, 308 us and 58% of DRAM bandwidth at
// E128 K2048, order 2 at 289 us, L2-bound, 1.011x overall: the default; 3 also pairs the lanes'
// stores into whole sectors. 1, chunks along the source rows, changed nothing and was retired),
// FUSE (the transposed pipeline at the knobs' BN, not _short: 1 or 2 of warps 1-3 write the
// tokens' bf16 tiles inside the GEMM, the rest stage the scales; the first launch only zeroes
// the counters that publish each tile to the producers (ws::mxg::fused_convert_fwdt). H200,
// session 25: 1.03-1.04x at E128 K2048, 0.92-0.96x at E128 K2880; one staging warp alone costs
// 4-8%, which ncu traced to the staging warps waiting on their scale loads every stage; NOTES.md).
// SPLIT 2/4 (0.64-0.83x at M256) and SCALE_PIPE 3/4 (1.00x) were measured in session 27 and
// removed, as was PAIR (the k-blocks over a cluster pair through DSMEM: 0.76-0.87x): M256 leaves
// ~73 SMs idle, but busier SMs each took longer per k-block (NOTES.md).
// GEMV and its GEMV_* knobs (session 30: short groups as a GEMV streaming the weights, and a
// shared-token form) measured 0.38-0.66x the default at E8 K2048 M256 N1536 on the H200
// (session 32) and were removed; b864ca7 has them (NOTES.md, "Session 32").
//
// Evaluate: build/warpsmith eval mxfp8_grouped_gemm_fwd kernels/mxfp8_grouped_gemm_fwd/kernel.cu
// warpsmith:sass sm_90a: HGMMA UBLKCP.S.G UBLKCP.G.S F2FP.F16.E4M3.UNPACK_B UTMALDG
// warpsmith:sass sm_90a STRATEGY=0 BN=128: QGMMA UTMALDG
// warpsmith:sass sm_90a STRATEGY=1 BN=128: HGMMA UTMALDG
// warpsmith:sass sm_90a STRATEGY=2 BN=256: HGMMA LDS.U16 F2FP.F16.E4M3.UNPACK_B UTMALDG
// warpsmith:sass sm_90a STRATEGY=3 BN=256: HGMMA UBLKCP.S.G F2FP.F16.E4M3.UNPACK_B UTMALDG
// warpsmith:sass sm_90a STRATEGY=0 BN=128 SCALE_PIPE=0: QGMMA UTMALDG
// warpsmith:sass sm_90a STRATEGY=1 BN=128 SCALE_PIPE=0: HGMMA UTMALDG
// warpsmith:sass sm_100a SCALE_PIPE=0: UTCQMMA UTCCP UTMALDG LDTM
// The SASS of tcgen05.mma kind::mxf8f6f4.block_scale is UTCQMMA with a scale-factor TMEM operand
// pair after the idesc (kind::f8f6f4's UTCQMMA has none); UTCCP is the scales' copy into TMEM.
// warpsmith:sass sm_100a: UTCQMMA UTCCP UTMALDG LDTM
#include "ws/mxfp8_grouped_gemm.cuh"

#ifndef STRATEGY
#define STRATEGY 1
#endif
#ifndef BN
#define BN 128
#endif
#ifndef STAGES
#define STAGES 4
#endif
#ifndef GROUP_M
#define GROUP_M 8
#endif
#ifndef PDL
#define PDL 0
#endif
#ifndef SHORT_STAGES
#define SHORT_STAGES 4
#endif
#ifndef PRE_ORDER
#define PRE_ORDER 2  // first launch: 0 tile by tile, 2 row walk, 3 with paired stores
#endif
#ifndef FUSE
#define FUSE 0  // kFwdT: the tokens' tiles converted inside the GEMM (the first launch zeroes)
#endif
#ifndef EPI
#define EPI 1  // STRATEGY=3's GEMMs (not the short kernel): output rows staged, bulk-copied out
#endif
#ifndef SCALE_PIPE
#define SCALE_PIPE 2  // ok at every test, hidden and bench shape on the H200, 1.09x over 1 (12-02)
#endif

namespace {
using Cfg = ws::mxg::Config<ws::kFwd, STRATEGY == 4 ? 3 : STRATEGY, BN, STAGES, GROUP_M,
                            SCALE_PIPE, PDL, EPI>;
// STRATEGY=3's pipeline on the transposed problem (ws::kFwdT): at the knobs' BN, and the
// short-group kernel at BN=64 with SHORT_STAGES stages (GROUP_M=8 and SCALE_PIPE=2 as measured).
using TCfg = ws::mxg::Config<ws::kFwdT, ws::mxg::kRegAPreB, BN, STAGES, GROUP_M, SCALE_PIPE,
                             PDL, EPI, FUSE>;
// (Not fused: at 32 tokens per group the GEMM waits on the conversion's latency, 0.84-0.89x.)
using ShortCfg = ws::mxg::Config<ws::kFwdT, ws::mxg::kRegAPreB, 64, SHORT_STAGES, 8, 2, PDL>;

// The kFwd view: output columns N, depth K; scale rows of K/32 bytes.
template <class C>
__device__ __forceinline__ void gemm(const ws::TensorMap* a_map, const ws::TensorMap* b_map,
                                     const unsigned char* a_scales, const unsigned char* b_scales,
                                     const unsigned char* workspace, const int* offs,
                                     __nv_bfloat16* c, int E, int N, int K,
                                     const unsigned char* b_raw = nullptr, int M = 0) {
  ws::mxg::run<C>(a_map, b_map, a_scales, b_scales, workspace, offs, c,
                  ws::mxg::Problem{E, N, K, K / 32}, b_raw, M);
}

// kFwdT's first launch: a's bf16 tiles into the workspace, C::kBN tokens each, restarting at
// every group start. Nothing on sm_100a (no kFwdT there).
template <class C>
__device__ __forceinline__ void pre_tokens(const unsigned char* a, const unsigned char* a_scales,
                                           const int* offs, unsigned char* workspace, int E, int N,
                                           int K, int M, int* qb) {
  if (PDL) ws::griddep_launch_dependents();  // the GEMM's prologue may start (it waits for us)
  const ws::mxg::Problem p{E, N, K, K / 32};
  if constexpr (C::kFuse)
    ws::mxg::fused_flags_zero<C>(workspace, M, p);  // the GEMM converts; its counters start at 0
  else if constexpr (C::kForm == ws::kFwdT)
    ws::mxg::pre_dequantize_b<C, PRE_ORDER>(a, a_scales, offs, workspace, p, qb);
}

// kFwdT's GEMM: on sm_90a A is b (sw64_b: (depth, rows, experts) boxes of (64, 128, 1), the
// 64-byte swizzle) and B the workspace; sm_100a runs the block-scaled kFwd GEMM (tma_a, b_map).
template <class C>
__device__ __forceinline__ void gemm_t(const ws::TensorMap* tma_a, const ws::TensorMap* b_map,
                                       const ws::TensorMap* sw64_b, const unsigned char* a_scales,
                                       const unsigned char* b_scales,
                                       const unsigned char* workspace, const int* offs,
                                       __nv_bfloat16* c, int E, int N, int K,
                                       const unsigned char* a, int M) {
  if constexpr (C::kForm == ws::kFwdT) {
    gemm<C>(sw64_b, b_map, b_scales, a_scales, workspace, offs, c, E, N, K, a, M);
  } else {
    gemm<C>(tma_a, b_map, a_scales, b_scales, workspace, offs, c, E, N, K);
  }
}
}  // namespace

// STRATEGY=3, first launch: B's bf16 tiles into the workspace (pre_dequantize_b), which the
// GEMM's producer then copies stage by stage. Empty on sm_100a (no STRATEGY=3 there).
extern "C" __global__ void __launch_bounds__(256) sm90_mxfp8_grouped_gemm_fwd_pre_b(
    const unsigned char* __restrict__ b, const unsigned char* __restrict__ b_scales,
    unsigned char* __restrict__ workspace, int E, int N, int K) {
  const ws::mxg::Problem p{E, N, K, K / 32};
  if (PDL) ws::griddep_launch_dependents();
  ws::mxg::pre_dequantize_b<Cfg, PRE_ORDER>(b, b_scales, nullptr, workspace, p, nullptr);
}

// tma_a / tma_b: the SW128 maps (STRATEGY=0 on sm_90a, and sm_100a); raw_a / raw_b: unswizzled
// (sm_90a STRATEGY=1; raw_b for 2); sw64_a: A with the 64-byte swizzle (sm_90a STRATEGY=2, 3).
extern "C" __global__ void __launch_bounds__(Cfg::kThreads, 1) sm90_sm100_mxfp8_grouped_gemm_fwd(
    const __grid_constant__ ws::TensorMap tma_a, const __grid_constant__ ws::TensorMap tma_b,
    const __grid_constant__ ws::TensorMap raw_a, const __grid_constant__ ws::TensorMap raw_b,
    const __grid_constant__ ws::TensorMap sw64_a, const unsigned char* __restrict__ a_scales,
    const unsigned char* __restrict__ b_scales, const unsigned char* __restrict__ workspace,
    const int* __restrict__ offs, __nv_bfloat16* __restrict__ c, int M, int E, int N, int K) {
  (void)M;
  const bool promote = Cfg::kStrategy == ws::mxg::kPromote;
  const bool rega = Cfg::kRegAFamily;
  gemm<Cfg>(promote ? &tma_a : rega ? &sw64_a : &raw_a, promote ? &tma_b : &raw_b, a_scales,
            b_scales, workspace, offs, c, E, N, K);
}

// The transposed pipeline's two launches for config C: PRE (the tokens' bf16 tiles; pre_qb: E + 1
// ints, the groups' first padded tiles), then GEMM (b_map: the SW128 map with C's column box,
// which sm_100a reads).
#define WS_TRANSPOSED_KERNELS(PRE, GEMM, C)                                                       \
  extern "C" __global__ void __launch_bounds__(256) PRE(                                          \
      const unsigned char* __restrict__ a, const unsigned char* __restrict__ a_scales,            \
      const int* __restrict__ offs, unsigned char* __restrict__ workspace, int E, int N, int K,  \
      int M) {                                                                                    \
    extern __shared__ int pre_qb[];                                                               \
    pre_tokens<C>(a, a_scales, offs, workspace, E, N, K, M, pre_qb);                              \
  }                                                                                               \
  extern "C" __global__ void __launch_bounds__(C::kThreads, 1) GEMM(                              \
      const __grid_constant__ ws::TensorMap tma_a, const __grid_constant__ ws::TensorMap b_map,   \
      const __grid_constant__ ws::TensorMap sw64_b, const unsigned char* __restrict__ a_scales,   \
      const unsigned char* __restrict__ b_scales, const unsigned char* __restrict__ workspace,    \
      const int* __restrict__ offs, __nv_bfloat16* __restrict__ c, int M, int E, int N, int K,    \
      const unsigned char* __restrict__ a) {                                                      \
    gemm_t<C>(&tma_a, &b_map, &sw64_b, a_scales, b_scales, workspace, offs, c, E, N, K, a, M);    \
  }

// STRATEGY=4, and STRATEGY=3 where M < E * N (fewer tokens than weight rows): at the knobs' BN.
WS_TRANSPOSED_KERNELS(sm90_mxfp8_grouped_gemm_fwd_t_pre, sm90_sm100_mxfp8_grouped_gemm_fwd_t, TCfg)
// STRATEGY=3 below SHORT tokens per group: at BN=64 (the plan passes tma_b64 as b_map).
WS_TRANSPOSED_KERNELS(sm90_mxfp8_grouped_gemm_fwd_short_pre,
                      sm90_sm100_mxfp8_grouped_gemm_fwd_short, ShortCfg)

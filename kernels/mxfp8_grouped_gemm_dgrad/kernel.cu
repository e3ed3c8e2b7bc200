/* warpsmith:plan
{ "knobs": { "STRATEGY": [3, 0, 1, 2, 4], "BN": [256, 128, 64, 192], "STAGES": [4, 3, 5, 6], "GROUP_M": [8, 16, 1],
             "SCALE_PIPE": [2, 1, 0], "SHORT": [128, 0, 512, 1024],
             "SHORT_STAGES": [4, 8, 12], "PDL": [0, 1], "EPI": [1, 0],
             "PRE_ORDER": [3, 0, 2], "FUSE": [0, 1, 2] },
  "tensor_maps": {
    "tma_a": { "tensor": "dc", "dims": ["N", "M"], "box": ["128", "128"], "swizzle": 128,
               "oob_fill": "zero", "l2_promotion": 256 },
    "tma_b": { "tensor": "bt", "dims": ["N", "K", "E"], "box": ["128", "min(BN, 128)", "1"], "swizzle": 128,
               "oob_fill": "zero", "l2_promotion": 256 },
    "tma_b64": { "tensor": "bt", "dims": ["N", "K", "E"], "box": ["128", "64", "1"], "swizzle": 128,
                 "oob_fill": "zero", "l2_promotion": 256 },
    "raw_a": { "tensor": "dc", "dims": ["N", "M"], "box": ["64", "128"], "swizzle": 0,
               "oob_fill": "zero", "l2_promotion": 256 },
    "raw_b": { "tensor": "bt", "dims": ["N", "K", "E"], "box": ["64", "BN", "1"], "swizzle": 0,
               "oob_fill": "zero", "l2_promotion": 256 },
    "sw64_a": { "tensor": "dc", "dims": ["N", "M"], "box": ["64", "128"], "swizzle": 64,
                "oob_fill": "zero", "l2_promotion": 256 },
    "sw64_b": { "tensor": "bt", "dims": ["N", "K", "E"], "box": ["64", "128", "1"], "swizzle": 64,
                "oob_fill": "zero", "l2_promotion": 256 } },
  "launch": [ { "kernel": "sm90_mxfp8_grouped_gemm_dgrad_pre_b", "when": "STRATEGY == 3 && M >= SHORT * E && M >= E * K",
                "grid": ["min(num_sms * 4, ceil_div(E * ceil_div(K, BN) * BN * ceil_div(N, 64), 256))"],
                "block": ["256"], "smem": "0",
                "args": ["bt", "bt_scales", "workspace", "E", "N", "K"] },
              { "kernel": "sm90_sm100_mxfp8_grouped_gemm_dgrad", "when": "STRATEGY < 3 || (STRATEGY == 3 && M >= SHORT * E && M >= E * K)",
                "grid": ["min(num_sms, (ceil_div(M, 128) + E) * ceil_div(K, BN))"],
                "block": ["384"], "pdl": "PDL",
                "smem": "min(STAGES, (226304 - EPI * (STRATEGY >= 3) * 128 * (2 * BN + 16)) / ((STRATEGY < 2) * (128 + BN) * (144 + 48 * STRATEGY) + (STRATEGY == 2) * (9216 + 192 * BN) + (STRATEGY >= 3) * (9216 + 128 * BN))) * ((STRATEGY < 2) * (128 + BN) * (144 + 48 * STRATEGY) + (STRATEGY == 2) * (9216 + 192 * BN) + (STRATEGY >= 3) * (9216 + 128 * BN)) + EPI * (STRATEGY >= 3) * 128 * (2 * BN + 16) + 6144",
                "args": ["tma_a", "tma_b", "raw_a", "raw_b", "sw64_a", "dc_scales", "bt_scales", "workspace", "offs", "da",
                         "M", "E", "N", "K"] },
              { "kernel": "sm90_mxfp8_grouped_gemm_dgrad_t_pre", "when": "STRATEGY == 4 || (STRATEGY == 3 && M >= SHORT * E && M < E * K)",
                "grid": ["(FUSE > 0) + (FUSE == 0) * min(num_sms * 4, ceil_div((ceil_div(M, BN) + E) * BN * ceil_div(N, 64), 256))"],
                "block": ["256"], "smem": "4 * E + 16",
                "args": ["dc", "dc_scales", "offs", "workspace", "E", "N", "K", "M"] },
              { "kernel": "sm90_sm100_mxfp8_grouped_gemm_dgrad_t", "when": "STRATEGY == 4 || (STRATEGY == 3 && M >= SHORT * E && M < E * K)",
                "grid": ["min(num_sms, ceil_div(K, 128) * (ceil_div(M, BN) + E))"],
                "block": ["384"], "pdl": "PDL",
                "smem": "min(STAGES, (226304 - EPI * 288 * BN) / (9216 + 128 * BN)) * (9216 + 128 * BN) + EPI * 288 * BN + 6144",
                "args": ["tma_a", "tma_b", "sw64_b", "dc_scales", "bt_scales", "workspace", "offs", "da", "M", "E", "N", "K", "dc"] },
              { "kernel": "sm90_mxfp8_grouped_gemm_dgrad_short_pre", "when": "STRATEGY == 3 && M < SHORT * E",
                "grid": ["min(num_sms * 4, ceil_div((ceil_div(M, 64) + E) * 64 * ceil_div(N, 64), 256))"],
                "block": ["256"], "smem": "4 * E + 16",
                "args": ["dc", "dc_scales", "offs", "workspace", "E", "N", "K", "M"] },
              { "kernel": "sm90_sm100_mxfp8_grouped_gemm_dgrad_short", "when": "STRATEGY == 3 && M < SHORT * E",
                "grid": ["min(num_sms, ceil_div(K, 128) * (ceil_div(M, 64) + E))"],
                "block": ["384"], "pdl": "PDL", "smem": "min(SHORT_STAGES, 13) * 17408 + 6144",
                "args": ["tma_a", "tma_b64", "sw64_b", "dc_scales", "bt_scales", "workspace", "offs", "da", "M", "E", "N", "K", "dc"] } ],
  "workspace": { "bytes": "(STRATEGY == 3 && M >= SHORT * E && M >= E * K) * E * ceil_div(K, BN) * BN * ceil_div(N, 64) * 128 + (STRATEGY == 4 || (STRATEGY == 3 && M >= SHORT * E && M < E * K)) * (ceil_div(M, BN) + E) * ceil_div(N, 64) * BN * 128 + (STRATEGY == 3 && M < SHORT * E) * (ceil_div(M, 64) + E) * ceil_div(N, 64) * 64 * 128 + (FUSE > 0) * 4 * (STRATEGY == 4 || (STRATEGY == 3 && M >= SHORT * E && M < E * K)) * (ceil_div(M, BN) + E + 2)", "zero": false } }
*/
// MXFP8 grouped GEMM, dgrad (spec.json): da[r, k] = bf16(sum_j 2^(Sdc-127) 2^(Sbt-127) *
// sum_{n in block j} dc[r, n] bt[g(r), k, n]), dc [M,N] and bt [E,K,N] E4M3, both N-contiguous,
// E8M0 scales per 32 along N. This is mxfp8_grouped_gemm_fwd with N and K renamed (output columns
// K, contraction N), so it is the same core (ws/mxfp8_grouped_gemm.cuh, kFwd form) with this
// binding; design, strategies, the paper model and the GPU checklist are in
// kernels/mxfp8_grouped_gemm_fwd/kernel.cu and NOTES.md. sm_100a runs fwd's block-scaled path
// (tcgen05.mma kind::mxf8f6f4.block_scale, scales copied into TMEM by tcgen05.cp).
// Paper model, DeepSeek-V3 fc1 dgrad (M=131072, E=8, N=4096, K=7168): 7.70 TFLOP, 0.68 GB of FP8
// operands + 1.88 GB bf16 out = 2.6 GB: B200 1.71 ms at 4.5 PFLOP/s (bytes 0.34 ms); H200 target
// as fwd (>= 1.0x torch._grouped_mm BF16, aim 1.3x).
// Knobs: STRATEGY (0 promote, 1 dequantize, 2 A in registers (BN up to 256), 3 as 2 with one
// operand's bf16 tiles made by a first launch, the default: bt's where M >= E*K, else the
// tokens' on the transposed problem, as fwd (1.15x / 1.31x at the 128-expert shapes); 4 always
// the transposed form; on sm_100a only the smem budget, and BN capped to 128), BN, STAGES,
// GROUP_M, SCALE_PIPE (sm_90a scale loading; see mxfp8_grouped_gemm_fwd/NOTES.md), SHORT
// (STRATEGY=3: below SHORT tokens per group on average, M < SHORT * E, the transposed pipeline at
// BN=64, _short, as fwd: 1.18x the STRATEGY=0 kernel it replaced at 32 per group), SHORT_STAGES
// (its ring depth, as fwd), PDL (the GEMMs launched with pdl after their first launch, as fwd),
// EPI (the staged epilogue of STRATEGY=3's GEMMs, as fwd), PRE_ORDER (the first launches' chunk
// order, as fwd), FUSE (the tokens' tiles made inside the transposed GEMM, as fwd; session 25:
// 1.02-1.04x at E128 K2048, 0.95-0.96x at E128 K2880).
// GEMV and its GEMV_* knobs (session 30: short groups as a GEMV streaming bt, as fwd) measured
// 0.48-0.67x the default at E8 K2048 M256 N1536 on the H200 (session 32) and were removed;
// b864ca7 has them (mxfp8_grouped_gemm_fwd/NOTES.md, "Session 32").
//
// Evaluate:
//   build/warpsmith eval mxfp8_grouped_gemm_dgrad kernels/mxfp8_grouped_gemm_dgrad/kernel.cu
// warpsmith:sass sm_90a: HGMMA UBLKCP.S.G UBLKCP.G.S F2FP.F16.E4M3.UNPACK_B UTMALDG
// warpsmith:sass sm_90a STRATEGY=0 BN=128: QGMMA UTMALDG
// warpsmith:sass sm_90a STRATEGY=1 BN=128: HGMMA UTMALDG
// warpsmith:sass sm_90a STRATEGY=0 BN=128 SCALE_PIPE=0: QGMMA UTMALDG
// warpsmith:sass sm_90a STRATEGY=1 BN=128 SCALE_PIPE=0: HGMMA UTMALDG
// warpsmith:sass sm_90a STRATEGY=2 BN=256: HGMMA LDS.U16 F2FP.F16.E4M3.UNPACK_B UTMALDG
// warpsmith:sass sm_90a STRATEGY=3 BN=256: HGMMA UBLKCP.S.G F2FP.F16.E4M3.UNPACK_B UTMALDG
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
#define PRE_ORDER 3  // first launch: 0 tile by tile, 2 row walk, 3 with paired stores
#endif
#ifndef FUSE
#define FUSE 0  // kFwdT: the tokens' tiles converted inside the GEMM (the first launch zeroes)
#endif
#ifndef EPI
#define EPI 1  // STRATEGY=3's GEMMs (not the short kernel): output rows staged, bulk-copied out
#endif
#ifndef SCALE_PIPE
#define SCALE_PIPE 2  // ok at every test, hidden and bench shape on the H200, 1.13x over 1 (12-02)
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

// The kFwd view with N and K renamed: output columns K, depth N; scale rows of N/32 bytes.
template <class C>
__device__ __forceinline__ void gemm(const ws::TensorMap* a_map, const ws::TensorMap* b_map,
                                     const unsigned char* dc_scales, const unsigned char* bt_scales,
                                     const unsigned char* workspace, const int* offs,
                                     __nv_bfloat16* da, int E, int N, int K,
                                     const unsigned char* b_raw = nullptr, int M = 0) {
  ws::mxg::run<C>(a_map, b_map, dc_scales, bt_scales, workspace, offs, da,
                  ws::mxg::Problem{E, K, N, N / 32}, b_raw, M);
}

// kFwdT's first launch: dc's bf16 tiles into the workspace, C::kBN tokens each, restarting at
// every group start. Nothing on sm_100a (no kFwdT there).
template <class C>
__device__ __forceinline__ void pre_tokens(const unsigned char* dc, const unsigned char* dc_scales,
                                           const int* offs, unsigned char* workspace, int E, int N,
                                           int K, int M, int* qb) {
  if (PDL) ws::griddep_launch_dependents();  // the GEMM's prologue may start (it waits for us)
  const ws::mxg::Problem p{E, K, N, N / 32};
  if constexpr (C::kFuse)
    ws::mxg::fused_flags_zero<C>(workspace, M, p);  // the GEMM converts; its counters start at 0
  else if constexpr (C::kForm == ws::kFwdT)
    ws::mxg::pre_dequantize_b<C, PRE_ORDER>(dc, dc_scales, offs, workspace, p, qb);
}

// kFwdT's GEMM: on sm_90a A is bt (sw64_b: (depth, rows, experts) boxes of (64, 128, 1), the
// 64-byte swizzle) and B the workspace; sm_100a runs the block-scaled kFwd GEMM (tma_a, b_map).
template <class C>
__device__ __forceinline__ void gemm_t(const ws::TensorMap* tma_a, const ws::TensorMap* b_map,
                                       const ws::TensorMap* sw64_b, const unsigned char* dc_scales,
                                       const unsigned char* bt_scales,
                                       const unsigned char* workspace, const int* offs,
                                       __nv_bfloat16* da, int E, int N, int K,
                                       const unsigned char* dc, int M) {
  if constexpr (C::kForm == ws::kFwdT) {
    gemm<C>(sw64_b, b_map, bt_scales, dc_scales, workspace, offs, da, E, N, K, dc, M);
  } else {
    gemm<C>(tma_a, b_map, dc_scales, bt_scales, workspace, offs, da, E, N, K);
  }
}
}  // namespace

// STRATEGY=3, first launch: B's bf16 tiles into the workspace (pre_dequantize_b), which the
// GEMM's producer then copies stage by stage. Empty on sm_100a (no STRATEGY=3 there).
extern "C" __global__ void __launch_bounds__(256) sm90_mxfp8_grouped_gemm_dgrad_pre_b(
    const unsigned char* __restrict__ bt, const unsigned char* __restrict__ bt_scales,
    unsigned char* __restrict__ workspace, int E, int N, int K) {
  const ws::mxg::Problem p{E, K, N, N / 32};
  if (PDL) ws::griddep_launch_dependents();
  ws::mxg::pre_dequantize_b<Cfg, PRE_ORDER>(bt, bt_scales, nullptr, workspace, p, nullptr);
}

// tma_a / tma_b: the SW128 maps (STRATEGY=0 on sm_90a, and sm_100a); raw_a / raw_b: unswizzled
// (sm_90a STRATEGY=1; raw_b for 2); sw64_a: A with the 64-byte swizzle (sm_90a STRATEGY=2, 3).
extern "C" __global__ void __launch_bounds__(Cfg::kThreads, 1) sm90_sm100_mxfp8_grouped_gemm_dgrad(
    const __grid_constant__ ws::TensorMap tma_a, const __grid_constant__ ws::TensorMap tma_b,
    const __grid_constant__ ws::TensorMap raw_a, const __grid_constant__ ws::TensorMap raw_b,
    const __grid_constant__ ws::TensorMap sw64_a, const unsigned char* __restrict__ dc_scales,
    const unsigned char* __restrict__ bt_scales, const unsigned char* __restrict__ workspace,
    const int* __restrict__ offs, __nv_bfloat16* __restrict__ da, int M, int E, int N, int K) {
  (void)M;
  const bool promote = Cfg::kStrategy == ws::mxg::kPromote;
  const bool rega = Cfg::kRegAFamily;
  gemm<Cfg>(promote ? &tma_a : rega ? &sw64_a : &raw_a, promote ? &tma_b : &raw_b, dc_scales,
            bt_scales, workspace, offs, da, E, N, K);
}

// The transposed pipeline's two launches for config C: PRE (the tokens' bf16 tiles; pre_qb: E + 1
// ints, the groups' first padded tiles), then GEMM (b_map: the SW128 map with C's column box,
// which sm_100a reads).
#define WS_TRANSPOSED_KERNELS(PRE, GEMM, C)                                                       \
  extern "C" __global__ void __launch_bounds__(256) PRE(                                          \
      const unsigned char* __restrict__ dc, const unsigned char* __restrict__ dc_scales,          \
      const int* __restrict__ offs, unsigned char* __restrict__ workspace, int E, int N, int K,  \
      int M) {                                                                                    \
    extern __shared__ int pre_qb[];                                                               \
    pre_tokens<C>(dc, dc_scales, offs, workspace, E, N, K, M, pre_qb);                            \
  }                                                                                               \
  extern "C" __global__ void __launch_bounds__(C::kThreads, 1) GEMM(                              \
      const __grid_constant__ ws::TensorMap tma_a, const __grid_constant__ ws::TensorMap b_map,   \
      const __grid_constant__ ws::TensorMap sw64_b, const unsigned char* __restrict__ dc_scales,  \
      const unsigned char* __restrict__ bt_scales, const unsigned char* __restrict__ workspace,   \
      const int* __restrict__ offs, __nv_bfloat16* __restrict__ da, int M, int E, int N, int K,   \
      const unsigned char* __restrict__ dc) {                                                     \
    gemm_t<C>(&tma_a, &b_map, &sw64_b, dc_scales, bt_scales, workspace, offs, da, E, N, K, dc, M); \
  }

// STRATEGY=4, and STRATEGY=3 where M < E * K (fewer tokens than weight rows): at the knobs' BN.
WS_TRANSPOSED_KERNELS(sm90_mxfp8_grouped_gemm_dgrad_t_pre, sm90_sm100_mxfp8_grouped_gemm_dgrad_t,
                      TCfg)
// STRATEGY=3 below SHORT tokens per group: at BN=64 (the plan passes tma_b64 as b_map).
WS_TRANSPOSED_KERNELS(sm90_mxfp8_grouped_gemm_dgrad_short_pre,
                      sm90_sm100_mxfp8_grouped_gemm_dgrad_short, ShortCfg)

// warpsmith device library: the kernels of mxfp8_grouped_gemm_fwd and _dgrad, written once. dgrad
// is fwd with N and K renamed (output columns K, contraction N, scale rows of N/32 bytes), so both
// problems' kernel.cu hold only their plan, their notes and their knob defaults, and include this
// with WS_MXG_FORM (fwd or dgrad: the kernels' names) and WS_MXG_DGRAD (0 or 1: the renaming).
// The core is ws/mxfp8_grouped_gemm.cuh; the design is in kernels/mxfp8_grouped_gemm_fwd/.
// Kernels (X = fwd or dgrad): sm90_mxfp8_grouped_gemm_X_pre_b and sm90_sm100_mxfp8_grouped_gemm_X
// (STRATEGY < 3, or 3 on the weights), _X_t_pre and _X_t (the transposed pipeline), _X_short_pre
// and _X_short (the transposed pipeline for short groups). Parameter names are fwd's: a the
// tokens (dgrad: dc), b the weights (bt), c the output (da).
#pragma once

#include "ws/mxfp8_grouped_gemm.cuh"

#if !defined(WS_MXG_FORM) && !defined(WS_MXG_DGRAD)  // alone (the library's own compile): fwd
#define WS_MXG_FORM fwd
#define WS_MXG_DGRAD 0
#elif !defined(WS_MXG_FORM) || !defined(WS_MXG_DGRAD)
#error "define both WS_MXG_FORM (fwd or dgrad) and WS_MXG_DGRAD (0 or 1) before including"
#endif
#define WS_MXG_PASTE(a, b, c) a##b##c
#define WS_MXG_NAME(a, form, c) WS_MXG_PASTE(a, form, c)
// The problem as the core sees it (the kFwd view): fwd's output columns N over depth K, or
// dgrad's output columns K over depth N. (A macro: a function returning either form put the
// struct on the stack.)
#if WS_MXG_DGRAD
#define WS_MXG_PROBLEM(E, N, K) ws::mxg::Problem{E, K, N, N / 32}
#else
#define WS_MXG_PROBLEM(E, N, K) ws::mxg::Problem{E, N, K, K / 32}
#endif

// Knob defaults where the plan passes none (the plans list every knob, so only a bare compile).
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
#define PRE_ORDER 2  // first launch: 0 tile by tile, 2 row walk, 3 with paired stores (fwd's)
#endif
#ifndef FUSE
#define FUSE 0  // kFwdT: the tokens' tiles converted inside the GEMM (the first launch zeroes)
#endif
#ifndef EPI
#define EPI 1  // STRATEGY=3's GEMMs (not the short kernel): output rows staged, bulk-copied out
#endif
#ifndef SCALE_PIPE
#define SCALE_PIPE 2  // ok at every test, hidden and bench shape on the H200, 1.09-1.13x over 1
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

template <class C>
__device__ __forceinline__ void gemm(const ws::TensorMap* a_map, const ws::TensorMap* b_map,
                                     const unsigned char* a_scales, const unsigned char* b_scales,
                                     const unsigned char* workspace, const int* offs,
                                     __nv_bfloat16* c, int E, int N, int K,
                                     const unsigned char* b_raw = nullptr, int M = 0) {
  ws::mxg::run<C>(a_map, b_map, a_scales, b_scales, workspace, offs, c,
                  WS_MXG_PROBLEM(E, N, K), b_raw, M);
}

// kFwdT's first launch: the tokens' bf16 tiles into the workspace, C::kBN tokens each,
// restarting at every group start. Nothing on sm_100a (no kFwdT there).
template <class C>
__device__ __forceinline__ void pre_tokens(const unsigned char* a, const unsigned char* a_scales,
                                           const int* offs, unsigned char* workspace, int E, int N,
                                           int K, int M, int* qb) {
  if (PDL) ws::griddep_launch_dependents();  // the GEMM's prologue may start (it waits for us)
  const ws::mxg::Problem p = WS_MXG_PROBLEM(E, N, K);
  if constexpr (C::kFuse)
    ws::mxg::fused_flags_zero<C>(workspace, M, p);  // the GEMM converts; its counters start at 0
  else if constexpr (C::kForm == ws::kFwdT)
    ws::mxg::pre_dequantize_b<C, PRE_ORDER>(a, a_scales, offs, workspace, p, qb);
}

// kFwdT's GEMM: on sm_90a A is the weights (sw64_b: (depth, rows, experts) boxes of
// (64, 128, 1), the 64-byte swizzle) and B the workspace; sm_100a runs the block-scaled kFwd
// GEMM (tma_a, b_map).
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
extern "C" __global__ void __launch_bounds__(256)
    WS_MXG_NAME(sm90_mxfp8_grouped_gemm_, WS_MXG_FORM, _pre_b)(
    const unsigned char* __restrict__ b, const unsigned char* __restrict__ b_scales,
    unsigned char* __restrict__ workspace, int E, int N, int K) {
  const ws::mxg::Problem p = WS_MXG_PROBLEM(E, N, K);
  if (PDL) ws::griddep_launch_dependents();
  ws::mxg::pre_dequantize_b<Cfg, PRE_ORDER>(b, b_scales, nullptr, workspace, p, nullptr);
}

// tma_a / tma_b: the SW128 maps (STRATEGY=0 on sm_90a, and sm_100a); raw_a / raw_b: unswizzled
// (sm_90a STRATEGY=1; raw_b for 2); sw64_a: A with the 64-byte swizzle (sm_90a STRATEGY=2, 3).
extern "C" __global__ void __launch_bounds__(Cfg::kThreads, 1)
    WS_MXG_NAME(sm90_sm100_mxfp8_grouped_gemm_, WS_MXG_FORM, )(
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

// STRATEGY=4, and STRATEGY=3 where there are fewer tokens than weight rows (fwd M < E * N,
// dgrad M < E * K): at the knobs' BN.
WS_TRANSPOSED_KERNELS(WS_MXG_NAME(sm90_mxfp8_grouped_gemm_, WS_MXG_FORM, _t_pre),
                      WS_MXG_NAME(sm90_sm100_mxfp8_grouped_gemm_, WS_MXG_FORM, _t), TCfg)
// STRATEGY=3 below SHORT tokens per group: at BN=64 (the plan passes tma_b64 as b_map).
WS_TRANSPOSED_KERNELS(WS_MXG_NAME(sm90_mxfp8_grouped_gemm_, WS_MXG_FORM, _short_pre),
                      WS_MXG_NAME(sm90_sm100_mxfp8_grouped_gemm_, WS_MXG_FORM, _short), ShortCfg)

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
// K, contraction N), so it is the same core (ws/mxfp8_grouped_gemm.cuh, kFwd form) and the same
// kernels (ws/mxfp8_grouped_fwd_kernels.cuh, WS_MXG_DGRAD 1) under this plan; design,
// strategies, the paper model and the GPU checklist are in
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
#define WS_MXG_FORM dgrad
#define WS_MXG_DGRAD 1
#ifndef PRE_ORDER
#define PRE_ORDER 3  // first launch: 0 tile by tile, 2 row walk, 3 with paired stores
#endif
#include "ws/mxfp8_grouped_fwd_kernels.cuh"

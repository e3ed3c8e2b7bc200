/* warpsmith:plan
{ "knobs": { "STRATEGY": [3, 0, 1, 2], "BN": [256, 128, 64, 192], "STAGES": [4, 3, 5, 6], "GROUP_M": [8, 16, 1],
             "SCALE_PIPE": [2, 1, 0], "EPI": [0, 1], "PRE_ORDER": [3, 0, 2] },
  "tensor_maps": {
    "tma_a": { "tensor": "dct", "dims": ["M", "N"], "box": ["128", "128"], "swizzle": 128,
               "oob_fill": "zero", "l2_promotion": 256 },
    "tma_b": { "tensor": "xt", "dims": ["M", "K", "1"], "box": ["128", "min(BN, 128)", "1"], "swizzle": 128,
               "oob_fill": "zero", "l2_promotion": 256 },
    "raw_a": { "tensor": "dct", "dims": ["M", "N"], "box": ["64", "128"], "swizzle": 0,
               "oob_fill": "zero", "l2_promotion": 256 },
    "raw_b": { "tensor": "xt", "dims": ["M", "K", "1"], "box": ["64", "BN", "1"], "swizzle": 0,
               "oob_fill": "zero", "l2_promotion": 256 },
    "sw64_a": { "tensor": "dct", "dims": ["M", "N"], "box": ["64", "128"], "swizzle": 64,
                "oob_fill": "zero", "l2_promotion": 256 } },
  "launch": [ { "kernel": "sm90_mxfp8_grouped_gemm_wgrad_pre_b", "when": "STRATEGY == 3",
                "grid": ["min(num_sms * 4, ceil_div(ceil_div(K, BN) * BN * (ceil_div(M, 64) + E), 256))"],
                "block": ["256"], "smem": "4 * E + 16 + (PRE_ORDER != 0) * 8 * (ceil_div(M, 64) + E)",
                "args": ["xt", "xt_scales", "offs", "workspace", "M", "E", "N", "K"] },
              { "kernel": "sm90_sm100_mxfp8_grouped_gemm_wgrad",
                "grid": ["min(num_sms, E * ceil_div(N, 128) * ceil_div(K, BN))"],
                "block": ["384"],
                "smem": "min(STAGES, (226304 - EPI * (STRATEGY == 3) * 36864) / ((STRATEGY < 2) * (128 + BN) * (144 + 48 * STRATEGY) + (STRATEGY == 2) * (9216 + 192 * BN) + (STRATEGY == 3) * (9216 + 128 * BN))) * ((STRATEGY < 2) * (128 + BN) * (144 + 48 * STRATEGY) + (STRATEGY == 2) * (9216 + 192 * BN) + (STRATEGY == 3) * (9216 + 128 * BN)) + EPI * (STRATEGY == 3) * 36864 + 6144",
                "args": ["tma_a", "tma_b", "raw_a", "raw_b", "sw64_a", "dct_scales", "xt_scales", "workspace",
                         "offs", "db", "M", "E", "N", "K"] } ],
  "workspace": { "bytes": "(STRATEGY == 3) * ceil_div(K, BN) * BN * (ceil_div(M, 64) + E) * 128", "zero": false } }
*/
// MXFP8 grouped GEMM, wgrad (spec.json): db[g, n, k] = f32(sum over the 32-token blocks j of
// group g of 2^(Sdct-127) 2^(Sxt-127) * sum_{r in block j} dct[n, r] xt[k, r]), dct [N,M] and
// xt [K,M] E4M3, token-contiguous, E8M0 scales per 32 tokens; db [E,N,K] fp32. The core is
// ws/mxfp8_grouped_gemm.cuh in its kWgrad form: every group owns ceil(N/128) x ceil(K/BN) tiles
// whose contraction is the group's tokens [s, e) (multiples of 32, so no MX block straddles two
// groups; a k-block past e reads the next group's tokens, which are never multiplied: the MMA
// side stops at the group's depth, and their scales read as factor 1); an empty group's tiles are
// stored as zeros. Design, strategies and the GPU checklist: kernels/mxfp8_grouped_gemm_fwd.
// sm_100a runs fwd's block-scaled path (tcgen05.mma kind::mxf8f6f4.block_scale, scales copied
// into TMEM by tcgen05.cp); its scale tiles start at the group's first token block.
// Paper model, DeepSeek-V3 fc1 wgrad (M=131072, E=8, N=4096, K=7168): 7.70 TFLOP; bytes
// 1.48 GB of FP8 + 0.94 GB fp32 out: B200 1.71 ms compute (0.31 ms bytes); Qwen3-30B
// (E=128, N=1536, K=2048): 0.83 TFLOP, 1.61 GB fp32 out + 0.47 GB in: memory-bound, 0.27 ms on
// B200 and ~0.43 ms at the H200's 4.8 TB/s.
// Knobs: STRATEGY (0 promote, 1 dequantize, 2 A in registers (BN up to 256), 3 as 2 with xt's
// bf16 tiles made by a first launch, in 64-token blocks that restart at each group start: the
// default, 1.37-1.71x STRATEGY=0 (SCALE_PIPE=1) at the long-group shapes on the H200; on
// sm_100a only the smem budget, and BN capped to 128), BN, STAGES, GROUP_M,
// SCALE_PIPE (sm_90a scale loading; see mxfp8_grouped_gemm_fwd/NOTES.md), EPI (STRATEGY=3,
// sm_90a: 1 = each consumer warpgroup stages its fp32 rows in shared memory in 4 passes of 64
// columns, 36 KB for both, and bulk-copies one row per pass per thread (ws::StagedStore), so the
// tensor cores do not wait for the 128 KB fp32 stores of a 128 x 256 tile; at 128 experts a
// group's tiles have 16 k-blocks and the output is 1.6 GB. H200 2026-12-03: 0.96x EPI=0, so 0).
// PRE_ORDER (the first launch: 0 numbers its chunks tile by tile; 2 walks xt's rows, 256 chunks
// per warp at a time, each padded block's first token and length looked up once per CTA into
// shared memory, since a tile row's 64 tokens restart at group starts; 3 pairs the stores too;
// fwd/NOTES.md, session 24). H200 2026-12-04, against order 0 in one call with hidden shapes,
// `ok` everywhere: order 2 1.013x, order 3 1.030x (1.021-1.041x at every bench shape): 3).
// EPI_SHORT (session 30: the EPI=1 instance wherever groups average at most EPI_SHORT tokens,
// for M1024, whose fp32 stores are its whole cost) ran 0.914x at 1024 on the H200 (session 32,
// bench/results/sweeps-h200-2026-12-05-session32.json) and was removed; git 15c83ff has it.
//
// Evaluate:
//   build/warpsmith eval mxfp8_grouped_gemm_wgrad kernels/mxfp8_grouped_gemm_wgrad/kernel.cu
// warpsmith:sass sm_90a: HGMMA UBLKCP.S.G F2FP.F16.E4M3.UNPACK_B UTMALDG
// warpsmith:sass sm_90a EPI=1: HGMMA UBLKCP.S.G UBLKCP.G.S UTMALDG
// warpsmith:sass sm_90a STRATEGY=0 BN=128 SCALE_PIPE=1: QGMMA UTMALDG
// warpsmith:sass sm_90a STRATEGY=1 BN=128: HGMMA UTMALDG
// warpsmith:sass sm_90a STRATEGY=0 BN=128 SCALE_PIPE=0: QGMMA UTMALDG
// warpsmith:sass sm_90a STRATEGY=1 BN=128 SCALE_PIPE=0: HGMMA UTMALDG
// warpsmith:sass sm_90a STRATEGY=2 BN=256: HGMMA LDS.U16 F2FP.F16.E4M3.UNPACK_B UTMALDG
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
#ifndef PRE_ORDER
#define PRE_ORDER 3  // first launch: 0 tile by tile, 2 row walk, 3 with paired stores
#endif
#ifndef EPI
#define EPI 0  // 1 (STRATEGY=3): fp32 rows staged, bulk-copied (H200: 0.96x geomean)
#endif
#ifndef SCALE_PIPE
#define SCALE_PIPE 2  // STRATEGY=0 measured best at 1: 1.3-2.0x over 0 (2026-12-01)
#endif

namespace {
using Cfg = ws::mxg::Config<ws::kWgrad, STRATEGY, BN, STAGES, GROUP_M, SCALE_PIPE, 0, EPI>;
}  // namespace

// STRATEGY=3, first launch: xt's bf16 tiles into the workspace in 64-token blocks restarting at
// each group start (pre_dequantize_b), which the GEMM's producer then copies stage by stage.
// Empty on sm_100a (no STRATEGY=3 there).
extern "C" __global__ void __launch_bounds__(256) sm90_mxfp8_grouped_gemm_wgrad_pre_b(
    const unsigned char* __restrict__ xt, const unsigned char* __restrict__ xt_scales,
    const int* __restrict__ offs, unsigned char* __restrict__ workspace, int M, int E, int N,
    int K) {
  extern __shared__ int pre_qb[];  // E + 1 ints: the groups' first padded blocks (then, with
                                   // PRE_ORDER, each padded block's tokens)
  ws::mxg::pre_dequantize_b<Cfg, PRE_ORDER>(xt, xt_scales, offs, workspace,
                                            ws::mxg::Problem{E, N, K, M / 32}, pre_qb);
}

// tma_a / tma_b: the SW128 maps (STRATEGY=0 on sm_90a, and sm_100a); raw_a / raw_b: unswizzled
// (sm_90a STRATEGY=1; raw_b for 2); sw64_a: A with the 64-byte swizzle (sm_90a STRATEGY=2).
extern "C" __global__ void __launch_bounds__(Cfg::kThreads, 1) sm90_sm100_mxfp8_grouped_gemm_wgrad(
    const __grid_constant__ ws::TensorMap tma_a, const __grid_constant__ ws::TensorMap tma_b,
    const __grid_constant__ ws::TensorMap raw_a, const __grid_constant__ ws::TensorMap raw_b,
    const __grid_constant__ ws::TensorMap sw64_a, const unsigned char* __restrict__ dct_scales,
    const unsigned char* __restrict__ xt_scales, const unsigned char* __restrict__ workspace,
    const int* __restrict__ offs, float* __restrict__ db, int M, int E, int N, int K) {
  const bool promote = Cfg::kStrategy == ws::mxg::kPromote;
  const bool rega = Cfg::kRegAFamily;
  // The kWgrad view: rows N, columns K, depth a group's tokens; scale rows of M/32 bytes.
  const ws::mxg::Problem p{E, N, K, M / 32};
  ws::mxg::run<Cfg>(promote ? &tma_a : rega ? &sw64_a : &raw_a, promote ? &tma_b : &raw_b,
                    dct_scales, xt_scales, workspace, offs, db, p);
}

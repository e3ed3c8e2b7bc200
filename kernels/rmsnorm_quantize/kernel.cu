/* warpsmith:plan
{ "knobs":  { "CHUNKS": [4, 2, 3, 6, 8], "LOAD_HINT": [0, 1], "STORE_CS": [1, 0] },
  "launch": [ { "kernel": "sm90_bf16_rmsnorm_mxfp8_quantize_resident",
                "grid":  ["M"],
                "block": ["min(512, round_up(ceil_div(H / 8, CHUNKS), 32))"], "smem": "0",
                "args":  ["x", "weight", "y", "q", "scales", "M", "H"] } ] }
*/
// RMSNorm + rowwise MXFP8, hand-tuned: x [M,H] bf16, weight [H] -> y [M,H] bf16, q [M,H] E4M3,
// scales [M,H/32] E8M0, in ONE read of x (the floor: 2 + 2 + 1 + 1/32 bytes per element).
//
// Design:
//  - One CTA per row, sized by the plan so the row fits in registers: thread t holds the 16-byte
//    chunks t, t + T, ..., t + (CHUNKS-1) T of the row (T = blockDim, a multiple of 32). Every
//    load instruction of a warp is 512 contiguous bytes; all CHUNKS loads (and the weight's) are
//    issued before the reduction, so a CTA has the whole row in flight.
//  - Sum of squares in fp32 (per thread, xor-shuffle, one value per warp through shared memory);
//    r = 1 / sqrt(sum / H + 1e-6f) with IEEE sqrt and division (once per row: costs nothing, and
//    keeps r within an ulp or two of the reference's double computation).
//  - y = bf16(w * bf16(x * r)) with non-FTZ mul.rn (bf16 subnormals exist); stored as 16-byte
//    vectors. The 4 lanes holding a 32-element block (H % 32 == 0 and T % 4 == 0 keep a block in
//    one lane quad) reduce its amax with two shuffles, then quantize exactly like
//    kernels/mxfp8_quantize_rowwise (8-byte q stores, the quad's first lane stores the scale).
//  - Rows longer than T * CHUNKS chunks (H > 8 * 512 * CHUNKS, beyond every listed shape) take a
//    second path that re-reads x from L2 per pass: correct, not tuned.
//  - sm_100a: rceil scales from cvt.rp.satfinite.ue8m0x2.f32; sm_90a from the bits of d.
// Why it should be fast: one DRAM pass, ~9 CTAs of 224 threads per SM at H = 7168 keep ~128 KB of
// loads in flight per SM; no shared-memory staging of the row, one __syncthreads per row.
// Knobs: CHUNKS (16-byte chunks per thread, so the CTA size), LOAD_HINT (0: ld.global.nc,
// 1: ld.global), STORE_CS (st.global.cs for y and q). SCALE_GATHER (the row's scales through
// shared memory in 16-byte pieces) ran 1.002x on an H100 in session 39 and was removed; git
// 8e184cf has it.
// Measured and removed (session 28, bench/results/sweeps-h200-2026-12-04-session28.json): a ring
// form (persistent CTAs streaming rows through 1-D bulk copies: 0.89-0.91x, commit 71d5ead) and
// the weight loaded late with a 40- or 48-register cap (17 CTAs per SM at H2880 instead of 10:
// 1.00x). Neither bytes in flight nor occupancy hold H2880 at 0.86 (kernels/SWEEPS-LOG.md).
// Nor the weight's L2 requests (as many as x's): 2 or 4 rows per CTA sharing one weight read ran
// 0.967x / 0.972x (ROWS=2 spilled on sm_90a; with CHUNKS=2, no spills, 1.001x) on an H100 in
// session 38 (bench/results/sweeps-h100-2026-12-05-session38.json); removed, git 310569e has it.
//
// SASS claims (scripts/check_sass.py): the packed e4m3 conversion on both; sm_100a's rceil scale
//  is the ue8m0 conversion.
// warpsmith:sass sm_100a: F2FP.SATFINITE.E4M3
// warpsmith:sass sm_100a rounding=rceil: F2FP.SATFINITE.E8
// warpsmith:sass sm_90a: F2FP.SATFINITE.E4M3

#include "ws/mx_block.cuh"

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR)
#error "compile with the problem's parameters: -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1"
#endif
#ifndef CHUNKS
#define CHUNKS 4
#endif
#ifndef LOAD_HINT
#define LOAD_HINT 0
#endif
#ifndef STORE_CS
#define STORE_CS 1
#endif

namespace {

struct Config {
  static constexpr int kChunks = CHUNKS;     // 16-byte chunks of the row per thread
  static constexpr int kChunkElems = 8;
  static constexpr int kMaxThreads = 512;  // the plan caps the CTA here: 128 registers per thread
  static constexpr bool kFloor = WS_ROUNDING == WS_ROUNDING_FLOOR;
  static constexpr ws::LoadHint kLoadHint = LOAD_HINT == 0 ? ws::LoadHint::kNc
                                                           : ws::LoadHint::kPlain;
  static constexpr bool kStoreCs = STORE_CS != 0;
  static constexpr float kEps = 1e-6f;
};
static_assert(Config::kChunks >= 1 && Config::kChunks <= 16, "registers");

using ws::bf16_hi;
using ws::bf16_lo;
using ws::Chunk;
using ws::cvt_bf16x2;
using ws::kFullMask;
using ws::mx::kBf16Inf;
using ws::mx::kE4M3NaNx4;
using ws::mx::kE8M0NaN;
using ws::mx::mul_rn_no_ftz;

__device__ __forceinline__ Chunk load_chunk(const Chunk* p) {
  return ws::load_global16<Config::kLoadHint>(p);
}

// A chunk of y (8 bf16) -> its block's scale (shared by the lane quad) and 8 E4M3 bytes.
// Every lane of the warp must call it (shuffles).
// NOTE: not ws::mx::quantize_quad: equal values, but its form (block_scale) compiles to other
// sm_100a SASS than this kernel's.
__device__ __forceinline__ unsigned quantize_chunk(const Chunk& c, unsigned& lo, unsigned& hi) {
  const unsigned amax = ws::mx::amax_quad(c);
  const bool special = Config::kFloor ? amax >= kBf16Inf : amax > kBf16Inf;
  const unsigned s = special ? kE8M0NaN
                             : (Config::kFloor ? ws::mx::floor_scale(amax)
                                               : ws::mx::rceil_scale(amax));
  unsigned out[2];
  ws::mx::quantize_bf16x8(c, ws::mx::scale_reciprocal(special ? 0u : s), out[0], out[1]);
  lo = special ? kE4M3NaNx4 : out[0];
  hi = special ? kE4M3NaNx4 : out[1];
  return s;
}

__device__ __forceinline__ float sum_squares(const Chunk& c) {
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    s = fmaf(bf16_lo(c.w[i]), bf16_lo(c.w[i]), s);
    s = fmaf(bf16_hi(c.w[i]), bf16_hi(c.w[i]), s);
  }
  return s;
}

// y chunk = bf16(w * bf16(x * r)).
__device__ __forceinline__ Chunk normalize(const Chunk& x, const Chunk& w, float r) {
  Chunk y;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const unsigned n =
        cvt_bf16x2(mul_rn_no_ftz(bf16_lo(x.w[i]), r), mul_rn_no_ftz(bf16_hi(x.w[i]), r));
    y.w[i] = cvt_bf16x2(mul_rn_no_ftz(bf16_lo(w.w[i]), bf16_lo(n)),
                        mul_rn_no_ftz(bf16_hi(w.w[i]), bf16_hi(n)));
  }
  return y;
}

// Block-wide sum; every thread gets the total. red: (32) floats of shared memory.
__device__ __forceinline__ float block_sum(float v, float* red) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int warps = blockDim.x >> 5;
  if (lane == 0) red[warp] = v;
  __syncthreads();
  float t = lane < warps ? red[lane] : 0.0f;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(kFullMask, t, o);
  return t;
}

// Normalizes and quantizes chunk ci of the row (all lanes call it; out-of-row lanes store nothing).
__device__ __forceinline__ void emit_chunk(const Chunk& xc, const Chunk& wc, float r, bool in_row,
                                           long long ci_global, Chunk* y_chunks, unsigned char* q,
                                           unsigned char* scales) {
  const Chunk yc = normalize(xc, wc, r);
  unsigned lo, hi;
  const unsigned s = quantize_chunk(yc, lo, hi);
  if (in_row) {
    ws::store_global16<Config::kStoreCs>(y_chunks + ci_global, yc);
    ws::store_global8<Config::kStoreCs>(q + ci_global * Config::kChunkElems, lo, hi);
    if ((threadIdx.x & 3) == 0) scales[ci_global >> 2] = static_cast<unsigned char>(s);
  }
}

}  // namespace

// x (M,H), weight (H), y (M,H) bf16 bits; q (M,H) e4m3; scales (M,H/32) e8m0. CTA: one row.
extern "C" __global__ void __launch_bounds__(Config::kMaxThreads)
    sm90_bf16_rmsnorm_mxfp8_quantize_resident(const unsigned short* __restrict__ x,
                                              const unsigned short* __restrict__ weight,
                                              unsigned short* __restrict__ y,
                                              unsigned char* __restrict__ q,
                                              unsigned char* __restrict__ scales, int M, int H) {
  __shared__ float red[32];
  const int row_chunks = H / Config::kChunkElems;  // multiple of 4
  const int T = blockDim.x;                         // multiple of 32
  const long long row = blockIdx.x;
  const long long base = row * row_chunks;          // first chunk of the row
  const Chunk* x_chunks = reinterpret_cast<const Chunk*>(x);
  const Chunk* w_chunks = reinterpret_cast<const Chunk*>(weight);
  Chunk* y_chunks = reinterpret_cast<Chunk*>(y);
  const int tid = threadIdx.x;
  const float inv_h = 1.0f / static_cast<float>(H);
  (void)M;

  if (row_chunks <= T * Config::kChunks) {
    // The row lives in registers: (kChunks) x 16 B of x and of the weight per thread.
    Chunk xc[Config::kChunks], wc[Config::kChunks];
#pragma unroll
    for (int u = 0; u < Config::kChunks; ++u) {
      const int ci = u * T + tid;
      if (ci < row_chunks) {
        xc[u] = load_chunk(x_chunks + base + ci);
      } else {
        xc[u] = Chunk{{0u, 0u, 0u, 0u}};
      }
    }
#pragma unroll
    for (int u = 0; u < Config::kChunks; ++u) {
      const int ci = u * T + tid;
      wc[u] = ci < row_chunks ? load_chunk(w_chunks + ci) : Chunk{{0u, 0u, 0u, 0u}};
    }
    float ss = 0.0f;
#pragma unroll
    for (int u = 0; u < Config::kChunks; ++u) ss += sum_squares(xc[u]);
    const float total = block_sum(ss, red);
    const float r = __frcp_rn(__fsqrt_rn(__fadd_rn(__fmul_rn(total, inv_h), Config::kEps)));
#pragma unroll
    for (int u = 0; u < Config::kChunks; ++u) {
      if (u * T >= row_chunks) break;  // uniform across the CTA: whole warps stay together
      const int ci = u * T + tid;
      emit_chunk(xc[u], wc[u], r, ci < row_chunks, base + ci, y_chunks, q, scales);
    }
  } else {
    // Long rows: the sum in one pass, then a second pass re-reading x (mostly from L2).
    float ss = 0.0f;
    for (int ci = tid; ci < row_chunks; ci += T) {
      ss += sum_squares(load_chunk(x_chunks + base + ci));
    }
    const float total = block_sum(ss, red);
    const float r = __frcp_rn(__fsqrt_rn(__fadd_rn(__fmul_rn(total, inv_h), Config::kEps)));
    for (int c0 = 0; c0 < row_chunks; c0 += T) {
      const int ci = c0 + tid;
      const bool in_row = ci < row_chunks;
      const Chunk xc = in_row ? load_chunk(x_chunks + base + ci) : Chunk{{0u, 0u, 0u, 0u}};
      const Chunk wc = in_row ? load_chunk(w_chunks + ci) : Chunk{{0u, 0u, 0u, 0u}};
      emit_chunk(xc, wc, r, in_row, base + ci, y_chunks, q, scales);
    }
  }
}

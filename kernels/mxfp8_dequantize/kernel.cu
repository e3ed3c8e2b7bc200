/* warpsmith:plan
{ "knobs":  { "CHUNKS": [2, 4, 1, 8], "THREADS": [256, 512, 128], "VEC": [0, 8, 16],
              "BF16_CVT": [0, 1], "STORE_CS": [0, 1] },
  "launch": [ { "kernel": "sm90_mxfp8_bf16_dequantize",
                "grid":  ["ceil_div(M * K, max(VEC, 8) * CHUNKS * THREADS)"],
                "block": ["THREADS"], "smem": "0",
                "args":  ["q", "scales", "y", "M", "K"] } ] }
*/
// MXFP8 dequantization, hand-tuned: E4M3 q [M,K] + E8M0 scales [M,K/32] -> BF16 y [M,K].
//
// Design (memory-bound: 1.03 bytes in, 2 bytes out per element, no reuse):
//  - K % 32 == 0, so [M,K] is a flat run of M*K/32 blocks and scales is that run's block index.
//  - A "chunk" is VEC q bytes of one block (VEC 8: ld.global.nc.v2, 16: .v4) plus its scale byte
//    (lanes of one block load the same byte: one sector per warp). Each lane issues CHUNKS chunk
//    loads (warp-strided, each load instruction contiguous) before the first use.
//  - Value: cvt.rn.f16x2.e4m3x2 (exact: every E4M3 value is an f16 normal), f16 -> f32, one
//    mul.rn.f32 by 2^(S-127) built from bits (S = 0: the subnormal 0x00400000; never FTZ), then
//    cvt.rn.bf16x2.f32 (RNE; exact except in bf16's subnormal range, which it rounds once) or,
//    BF16_CVT 1, the same rounding in integer ops. The product is exact in fp32 (4 significant
//    bits, >= 2^-136), so this is the single rounding the spec asks for.
//  - NaN: a 0xFF scale becomes the fp32 NaN, so the whole block's products are NaN; NaN q stays
//    NaN through the conversions; one SIMD compare per bf16 pair rewrites every NaN to 0x7FC0.
//  - Stores: 2*VEC bytes per lane, contiguous across the warp: VEC 8 one 16-byte store per lane
//    (512 B per warp instruction); VEC 16 on sm_100a one 32-byte st.global.v8.b32 (1 KiB per
//    instruction), on sm_90a two 16-byte stores. VEC 0 picks 8 on sm_90a, 16 on sm_100a.
//
// Knobs: CHUNKS (loads in flight per lane), THREADS, VEC (q bytes per chunk), BF16_CVT (0: cvt
// instruction, 1: integer RNE), STORE_CS (st.global.cs for y). Each chunk loads its block's
// scale byte. SCALE_LOAD 1 (one warp load for a warp tile's scale bytes, handed out by shuffles:
// a quarter to an eighth of the scale requests) ran 0.998x, with CHUNKS 8 1.002x (session 32,
// bench/results/sweeps-h200-2026-12-05-session32.json) and was removed (git dd1a2aa has it).
// Defaults (session 36, s36c1, the same call, controls within 0.2%): CHUNKS 2 with plain stores
// ran 1.022-1.026x the former CHUNKS 4 with st.global.cs at every bench shape, 0.92-0.97 of
// speed-of-light; CHUNKS 2 alone 1.017x, THREADS 128 1.015x, CHUNKS 2 THREADS 512 1.005x
// (bench/results/sweeps-h200-2026-12-05-session36.json). Fewer loads in flight per lane with
// more lanes resident, as the Triton peer (128 threads, 16-32 elements each) does.
// Evaluate: build/warpsmith eval mxfp8_dequantize kernels/mxfp8_dequantize/kernel.cu [--knob ...]
//
// SASS claims (scripts/check_sass.py): sm_100a stores 32 bytes per lane (256-bit stores); both
//  convert to bf16 with the packed cvt.
// warpsmith:sass sm_100a: STG.E.ENL2.256 F2FP.BF16
// warpsmith:sass sm_90a: F2FP.BF16
// Registers at the 256-thread defaults (8 CTAs per SM by registers at <= 32):
// warpsmith:regs sm_90a: sm90_mxfp8_bf16_dequantize<=32
// warpsmith:regs sm_100a: sm90_mxfp8_bf16_dequantize<=32

#include "ws/memory.cuh"
#include "ws/mx.cuh"

#ifndef CHUNKS
#define CHUNKS 2
#endif
#ifndef THREADS
#define THREADS 256
#endif
#ifndef VEC
#define VEC 0
#endif
#ifndef BF16_CVT
#define BF16_CVT 0
#endif
#ifndef STORE_CS
#define STORE_CS 0
#endif

namespace {

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
constexpr bool kBlackwell = true;
#else
constexpr bool kBlackwell = false;
#endif

struct Config {
  static constexpr int kThreads = THREADS;
  static constexpr int kChunks = CHUNKS;
  static constexpr int kVec = VEC != 0 ? VEC : (kBlackwell ? 16 : 8);  // q bytes per chunk
  static constexpr int kWords = kVec / 4;                               // q words per chunk
  static constexpr int kLanesPerBlock = 32 / kVec;
  static constexpr bool kStoreCs = STORE_CS != 0;
};
static_assert(Config::kThreads % 32 == 0 && Config::kThreads <= 1024, "whole warps");
static_assert(Config::kVec == 8 || Config::kVec == 16, "chunk width");
static_assert(Config::kChunks >= 1 && Config::kChunks <= 16, "registers");

constexpr unsigned kBf16NaNx2 = 0x7FC07FC0u;

struct Chunk {
  unsigned w[Config::kWords];  // kVec E4M3 bytes, element 4i+j in byte j of w[i]
  unsigned s;                  // the block's E8M0 scale byte
};

// ---- memory (streaming: every byte is touched once) ---------------------------------------------

__device__ __forceinline__ void load_q(unsigned (&w)[Config::kWords], const unsigned char* p) {
  if constexpr (Config::kWords == 4) {
    asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                 : "l"(p));
  } else {
    asm volatile("ld.global.nc.v2.u32 {%0, %1}, [%2];" : "=r"(w[0]), "=r"(w[1]) : "l"(p));
  }
}

__device__ __forceinline__ unsigned load_scale(const unsigned char* p) {
  unsigned short s;
  asm volatile("ld.global.nc.u8 %0, [%1];" : "=h"(s) : "l"(p));
  return s;
}

// 2*kVec bytes of y at p (aligned to 2*kVec).
__device__ __forceinline__ void store_y(unsigned short* p, const unsigned (&y)[2 * Config::kWords]) {
  if constexpr (Config::kWords == 4) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
    // NOTE: 256-bit stores exist from sm_100 on.
#if STORE_CS
    asm volatile("st.global.cs.v8.b32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8};" ::"l"(p),
                 "r"(y[0]), "r"(y[1]), "r"(y[2]), "r"(y[3]), "r"(y[4]), "r"(y[5]), "r"(y[6]),
                 "r"(y[7])
                 : "memory");
#else
    asm volatile("st.global.v8.b32 [%0], {%1, %2, %3, %4, %5, %6, %7, %8};" ::"l"(p), "r"(y[0]),
                 "r"(y[1]), "r"(y[2]), "r"(y[3]), "r"(y[4]), "r"(y[5]), "r"(y[6]), "r"(y[7])
                 : "memory");
#endif
#else
    ws::store_global16<Config::kStoreCs>(p, y[0], y[1], y[2], y[3]);
    ws::store_global16<Config::kStoreCs>(p + 8, y[4], y[5], y[6], y[7]);
#endif
  } else {
    ws::store_global16<Config::kStoreCs>(p, y[0], y[1], y[2], y[3]);
  }
}

// ---- arithmetic -------------------------------------------------------------------------------

// Two E4M3 bytes (lo in bits 0..7) -> f16x2, lo in the low half. Exact.
__device__ __forceinline__ unsigned cvt_f16x2_from_e4m3x2(unsigned pair) {
  unsigned d;
  const unsigned short a = static_cast<unsigned short>(pair);
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(d) : "h"(a));
  return d;
}

__device__ __forceinline__ float f32_from_f16(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}

// Two fp32 -> bf16x2 (lo in the low half), round to nearest even, subnormals kept. NaN lanes
// come out as some NaN and are rewritten by the caller.
__device__ __forceinline__ unsigned bf16x2_rne(float lo, float hi) {
#if BF16_CVT == 0
  unsigned d;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
  return d;
#else
  // NOTE: NaN first: the carry of the rounding add would turn 0x7FFFFFFF into -0.
  const unsigned a = __float_as_uint(lo), b = __float_as_uint(hi);
  const unsigned ra = (a & 0x7FFFFFFFu) > 0x7F800000u ? 0x7FC0u
                                                      : (a + 0x7FFFu + ((a >> 16) & 1u)) >> 16;
  const unsigned rb = (b & 0x7FFFFFFFu) > 0x7F800000u
                          ? 0x7FC00000u
                          : (b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u;
  return ra | rb;
#endif
}

// fp32 2^(S-127) from bits; S = 0 is the subnormal 2^-127; S = 0xFF (E8M0 NaN) gives NaN, so
// every product of its block is NaN.
__device__ __forceinline__ float scale_value(unsigned s) {
  if (s == 0xFFu) return __uint_as_float(0x7FC00000u);
  return __uint_as_float(s != 0 ? s << 23 : 0x00400000u);
}

// 4 E4M3 bytes -> 2 bf16x2 words.
__device__ __forceinline__ void dequantize_word(unsigned q4, float r, unsigned& y0, unsigned& y1) {
  unsigned out[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const unsigned f2 = cvt_f16x2_from_e4m3x2(q4 >> (16 * h));
    const float lo = ws::mx::mul_rn_no_ftz(f32_from_f16(static_cast<unsigned short>(f2)), r);
    const float hi = ws::mx::mul_rn_no_ftz(f32_from_f16(static_cast<unsigned short>(f2 >> 16)), r);
    const unsigned y = bf16x2_rne(lo, hi);
    // Any NaN half (magnitude above Inf) becomes the canonical positive 0x7FC0.
    const unsigned nan_mask = __vcmpgtu2(y & 0x7FFF7FFFu, 0x7F807F80u);
    out[h] = (y & ~nan_mask) | (kBf16NaNx2 & nan_mask);
  }
  y0 = out[0];
  y1 = out[1];
}

}  // namespace

// q (M,K) e4m3, scales (M,K/32) e8m0, y (M,K) bf16 bits. Warp tile: kChunks loads of 32 lanes x
// kVec bytes; grid-stride over warp tiles, so any grid size is correct.
extern "C" __global__ void __launch_bounds__(Config::kThreads)
    sm90_mxfp8_bf16_dequantize(const unsigned char* __restrict__ q,
                               const unsigned char* __restrict__ scales,
                               unsigned short* __restrict__ y, int M, int K) {
  constexpr int kTileChunks = 32 * Config::kChunks;
  const long long num_chunks = static_cast<long long>(M) * K / Config::kVec;
  const long long num_tiles = (num_chunks + kTileChunks - 1) / kTileChunks;
  const int lane = threadIdx.x & 31;
  const long long stride = static_cast<long long>(gridDim.x) * (Config::kThreads / 32);
  for (long long tile = static_cast<long long>(blockIdx.x) * (Config::kThreads / 32) +
                        (threadIdx.x >> 5);
       tile < num_tiles; tile += stride) {
    const long long chunk0 = tile * kTileChunks + lane;
    Chunk c[Config::kChunks];  // (kChunks) x kVec bytes + scale, all in flight before use
#pragma unroll
    for (int u = 0; u < Config::kChunks; ++u) {
      const long long ci = chunk0 + u * 32;
      if (ci < num_chunks) {
        load_q(c[u].w, q + ci * Config::kVec);
        c[u].s = load_scale(scales + ci / Config::kLanesPerBlock);
      }
    }
#pragma unroll
    for (int u = 0; u < Config::kChunks; ++u) {
      const long long ci = chunk0 + u * 32;
      if (ci >= num_chunks) continue;
      const float r = scale_value(c[u].s);
      unsigned out[2 * Config::kWords];
#pragma unroll
      for (int i = 0; i < Config::kWords; ++i) {
        dequantize_word(c[u].w[i], r, out[2 * i], out[2 * i + 1]);
      }
      store_y(y + ci * Config::kVec, out);
    }
  }
}

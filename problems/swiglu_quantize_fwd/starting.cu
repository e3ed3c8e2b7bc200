/* warpsmith:plan
{ "knobs":  { "TILE_K": [64, 128, 256], "THREADS": [128, 256, 512], "VECTOR_BYTES": [16, 8, 4],
              "CONVERT": [0, 1], "FAST_EXP": [0, 1] },
  "launch": [ { "kernel": "sm90_bf16_swiglu_mxfp8_quantize_tiled",
                "grid":  ["(M / 32) * ceil_div(I, TILE_K)"], "block": ["THREADS"], "smem": "0",
                "args":  ["hpre", "q", "scales", "q_t", "scales_t", "M", "I"] } ] }
*/
// Starting kernel for swiglu_quantize_fwd: mxfp8_quantize_dual's starting kernel with the
// activation fused into its load. Each CTA reads the gate and up halves of a 32-row x TILE_K-column
// tile of hpre (VECTOR_BYTES-wide coalesced loads), computes A = act(g, u) in fp32 (expf, or
// __expf with FAST_EXP=1), rounds it to bf16 into shared memory, then
//  - rowwise: one thread per 32-element row block of the tile (TILE_K such blocks) reads its
//    block from shared memory and writes 32 q bytes (two 16-byte stores) and a scale;
//  - colwise: one thread per column of the tile reads the column's 32 values and writes 32 bytes
//    of its q_t row (two 16-byte stores) and a scale.
// Knobs: TILE_K (columns per CTA, so CTA count and shared memory: 32 * (TILE_K + 8) * 2 bytes),
// THREADS, VECTOR_BYTES (global load width of g and u), FAST_EXP, CONVERT (0: cuda_fp8.h per element, 1: packed
// cvt.rn.satfinite.e4m3x2.f32). Rules as the baseline: amax on the bf16 magnitude bits (integer
// order is magnitude order, NaNs above +Inf), rceil from the bits of d = amax * fp32(1/448), floor
// from amax's exponent. Left on the table: the colwise stores of a warp hit 32 q_t rows M bytes
// apart (32 bytes each), the row-block shared-memory reads conflict, and nothing overlaps the
// next tile's loads with this tile's math.

#include <cuda_fp8.h>

#include "ws/mx_naive.cuh"

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR) || \
    !defined(WS_VARIANT) || !defined(WS_VARIANT_STANDARD) || !defined(WS_VARIANT_CLAMPED)
#error "compile with the problem's parameters: -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1 -DWS_VARIANT=<0|1> -DWS_VARIANT_STANDARD=0 -DWS_VARIANT_CLAMPED=1"
#endif
#ifndef TILE_K
#define TILE_K 64
#endif
#ifndef THREADS
#define THREADS 128
#endif
#ifndef VECTOR_BYTES
#define VECTOR_BYTES 16
#endif
#ifndef CONVERT
#define CONVERT 0
#endif
#ifndef FAST_EXP
#define FAST_EXP 0
#endif

namespace {

constexpr int kBlock = 32;                    // elements per E8M0 scale
constexpr int kTileK = TILE_K;                // columns per CTA
constexpr int kPitch = kTileK + 8;            // shared row pitch in bf16 (16-byte aligned rows)
constexpr int kThreads = THREADS;
constexpr int kVecBytes = VECTOR_BYTES;
constexpr int kVecElems = kVecBytes / 2;
constexpr bool kFloor = WS_ROUNDING == WS_ROUNDING_FLOOR;

static_assert(kTileK % 32 == 0 && kTileK <= 512, "whole blocks");
static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps");
static_assert(kVecBytes == 4 || kVecBytes == 8 || kVecBytes == 16, "load width");

constexpr bool kPackedCvt = CONVERT == 1;  // one cvt.rn.satfinite.e4m3x2.f32 per pair
using ws::mx_naive::quantize32_bits;
using ws::mx_naive::store32;

// A = act(g, u) of two bf16 bit patterns, in fp32, as bf16 bits (RNE).
__device__ __forceinline__ unsigned swiglu_bits(unsigned g_bits, unsigned u_bits) {
  float g = __uint_as_float(g_bits << 16), u = __uint_as_float(u_bits << 16);
  float z = g;
#if WS_VARIANT == WS_VARIANT_CLAMPED
  g = fminf(g, 7.0f);  // inputs are finite: fminf's NaN rule never matters here
  u = fmaxf(fminf(u, 7.0f), -7.0f) + 1.0f;
  z = 1.702f * g;
#endif
#if FAST_EXP == 1
  const float e = __expf(-z);
#else
  const float e = expf(-z);
#endif
  const float a = g / (1.0f + e) * u;
  const unsigned b = __float_as_uint(a);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0u;
  return (b + 0x7FFFu + ((b >> 16) & 1u)) >> 16;
}

// A for the bf16 pairs g and u (element 2k in the low half), as a bf16 pair.
__device__ __forceinline__ unsigned swiglu_pair(unsigned g, unsigned u) {
  return swiglu_bits(g & 0xFFFFu, u & 0xFFFFu) | swiglu_bits(g >> 16, u >> 16) << 16;
}

}  // namespace

// hpre (M,2I) bf16 bits, gate || up; q (M,I), scales (M,I/32); q_t (I,M), scales_t (I,M/32);
// all row-major, M % 32 == 0, I % 32 == 0. CTA c: row block c / tiles_k, column tile c % tiles_k
// of A (K below is I, the width of A).
extern "C" __global__ void __launch_bounds__(kThreads)
    sm90_bf16_swiglu_mxfp8_quantize_tiled(const unsigned short* __restrict__ hpre,
                                          unsigned char* __restrict__ q,
                                          unsigned char* __restrict__ scales,
                                          unsigned char* __restrict__ q_t,
                                          unsigned char* __restrict__ scales_t, int M, int I) {
  const int K = I;
  __shared__ __align__(16) unsigned short tile[kBlock * kPitch];
  const int tiles_k = (K + kTileK - 1) / kTileK;
  const long long rb = blockIdx.x / tiles_k;            // row block: rows 32rb .. 32rb+31
  const int k0 = (blockIdx.x % tiles_k) * kTileK;       // first column of the tile
  const int cols = min(kTileK, K - k0);                 // a multiple of 32

  // Fill the tile with A: vector v of row r covers columns v * kVecElems .. + kVecElems - 1 of
  // the gate half and the same columns of the up half.
  constexpr int kRowVecs = kTileK / kVecElems;
  for (int u = threadIdx.x; u < kBlock * kRowVecs; u += kThreads) {
    const int r = u / kRowVecs, c = (u % kRowVecs) * kVecElems;
    if (c >= cols) continue;
    const unsigned short* gate = hpre + (rb * kBlock + r) * 2 * I + k0 + c;
    const unsigned short* up = gate + I;
    unsigned short* dst = tile + r * kPitch + c;
    if constexpr (kVecBytes == 16) {
      const uint4 g = *reinterpret_cast<const uint4*>(gate), v = *reinterpret_cast<const uint4*>(up);
      *reinterpret_cast<uint4*>(dst) = make_uint4(swiglu_pair(g.x, v.x), swiglu_pair(g.y, v.y),
                                                  swiglu_pair(g.z, v.z), swiglu_pair(g.w, v.w));
    } else if constexpr (kVecBytes == 8) {
      const uint2 g = *reinterpret_cast<const uint2*>(gate), v = *reinterpret_cast<const uint2*>(up);
      *reinterpret_cast<uint2*>(dst) = make_uint2(swiglu_pair(g.x, v.x), swiglu_pair(g.y, v.y));
    } else {
      *reinterpret_cast<unsigned*>(dst) = swiglu_pair(*reinterpret_cast<const unsigned*>(gate),
                                                      *reinterpret_cast<const unsigned*>(up));
    }
  }
  __syncthreads();

  // Rowwise: row block (r, j) of the tile.
  const int row_blocks = cols / kBlock;
  for (int u = threadIdx.x; u < kBlock * row_blocks; u += kThreads) {
    const int r = u / row_blocks, j = u % row_blocks;
    unsigned qw[8];
    const unsigned s = quantize32_bits<kFloor, kPackedCvt>(tile + r * kPitch + j * kBlock, 1, qw);
    const long long row = rb * kBlock + r;
    const long long col = k0 + j * kBlock;
    store32(q + row * K + col, qw);
    scales[row * (K / kBlock) + col / kBlock] = static_cast<unsigned char>(s);
  }

  // Colwise: column c of the tile, rows 32rb .. 32rb+31.
  for (int c = threadIdx.x; c < cols; c += kThreads) {
    unsigned qw[8];
    const unsigned s = quantize32_bits<kFloor, kPackedCvt>(tile + c, kPitch, qw);
    const long long k = k0 + c;
    store32(q_t + k * M + rb * kBlock, qw);
    scales_t[k * (M / kBlock) + rb] = static_cast<unsigned char>(s);
  }
}

/* warpsmith:plan
{ "knobs":  { "TILE_K": [64, 128, 256], "THREADS": [128, 256, 512], "VECTOR_BYTES": [16, 8, 4],
              "CONVERT": [0, 1] },
  "launch": [ { "kernel": "sm90_bf16_mxfp8_quantize_expert_weights_tiled",
                "grid":  ["E * (N / 32) * ceil_div(K, TILE_K)"], "block": ["THREADS"], "smem": "0",
                "args":  ["w", "q_k", "s_k", "q_n", "s_n", "N", "K"] } ] }
*/
// Starting kernel for mxfp8_quantize_expert_weights: mxfp8_quantize_dual's starting kernel with
// an expert index (each expert's [N, K] matrix is one dual problem; CTAs run over all experts'
// tiles). One read of w serves both copies. Each CTA stages a 32-row x TILE_K-column tile of one
// expert in shared memory (VECTOR_BYTES-wide coalesced loads),
// then
//  - rowwise: one thread per 32-element row block of the tile (TILE_K such blocks) reads its
//    block from shared memory and writes 32 q bytes (two 16-byte stores) and a scale;
//  - colwise: one thread per column of the tile reads the column's 32 values and writes 32 bytes
//    of its q_t row (two 16-byte stores) and a scale.
// Knobs: TILE_K (columns per CTA, so CTA count and shared memory: 32 * (TILE_K + 8) * 2 bytes),
// THREADS, VECTOR_BYTES (global load width), CONVERT (0: cuda_fp8.h per element, 1: packed
// cvt.rn.satfinite.e4m3x2.f32). Rules as the baseline: amax on the bf16 magnitude bits (integer
// order is magnitude order, NaNs above +Inf), rceil from the bits of d = amax * fp32(1/448), floor
// from amax's exponent. Left on the table: the colwise stores of a warp hit 32 q_t rows M bytes
// apart (32 bytes each), the row-block shared-memory reads conflict, and nothing overlaps the
// next tile's loads with this tile's math.

#include <cuda_fp8.h>

#include "ws/mx_naive.cuh"

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR)
#error "compile with the problem's parameters: -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1"
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

}  // namespace

// w (E,N,K) bf16 bits; q_k (E,N,K), s_k (E,N,K/32); q_n (E,K,N), s_n (E,K,N/32); all
// row-major, N % 32 == 0, K % 32 == 0. CTA c: expert c / (N/32 * tiles_k), then row block and
// column tile of that expert's [N, K] matrix, which is then addressed as the dual problem's x
// (M = N rows).
extern "C" __global__ void __launch_bounds__(kThreads)
    sm90_bf16_mxfp8_quantize_expert_weights_tiled(const unsigned short* __restrict__ w,
                                                  unsigned char* __restrict__ q_k,
                                                  unsigned char* __restrict__ s_k,
                                                  unsigned char* __restrict__ q_n,
                                                  unsigned char* __restrict__ s_n, int N, int K) {
  __shared__ __align__(16) unsigned short tile[kBlock * kPitch];
  const int M = N;
  const int tiles_k = (K + kTileK - 1) / kTileK;
  const long long per_expert = static_cast<long long>(N / kBlock) * tiles_k;  // CTAs
  const long long e = blockIdx.x / per_expert;
  const long long cta = blockIdx.x % per_expert;
  const long long elems = static_cast<long long>(N) * K;
  const unsigned short* __restrict__ x = w + e * elems;
  unsigned char* __restrict__ q = q_k + e * elems;
  unsigned char* __restrict__ scales = s_k + e * elems / kBlock;
  unsigned char* __restrict__ q_t = q_n + e * elems;
  unsigned char* __restrict__ scales_t = s_n + e * elems / kBlock;
  const long long rb = cta / tiles_k;                   // row block: rows 32rb .. 32rb+31
  const int k0 = (cta % tiles_k) * kTileK;              // first column of the tile
  const int cols = min(kTileK, K - k0);                 // a multiple of 32

  // Load the tile: vector v of row r covers columns v * kVecElems .. + kVecElems - 1.
  constexpr int kRowVecs = kTileK / kVecElems;
  for (int u = threadIdx.x; u < kBlock * kRowVecs; u += kThreads) {
    const int r = u / kRowVecs, c = (u % kRowVecs) * kVecElems;
    if (c >= cols) continue;
    const unsigned short* src = x + (rb * kBlock + r) * K + k0 + c;
    unsigned short* dst = tile + r * kPitch + c;
    if constexpr (kVecBytes == 16) {
      *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
    } else if constexpr (kVecBytes == 8) {
      *reinterpret_cast<uint2*>(dst) = *reinterpret_cast<const uint2*>(src);
    } else {
      *reinterpret_cast<unsigned*>(dst) = *reinterpret_cast<const unsigned*>(src);
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

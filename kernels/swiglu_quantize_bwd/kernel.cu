/* warpsmith:plan
{ "knobs":  { "BLOCK_M": [64, 32, 128], "BLOCK_I": [64, 32, 128], "THREADS": [256, 128, 512],
              "FAST_EXP": [1, 0], "STORE_CS": [1, 0] },
  "launch": [ { "kernel": "sm90_bf16_dswiglu_mxfp8_quantize_dual",
                "grid":  ["ceil_div(M, BLOCK_M) * ceil_div(I, BLOCK_I)"], "block": ["THREADS"],
                "smem": "0",
                "args":  ["hpre", "da", "q", "scales", "q_t", "scales_t", "M", "I"] } ] }
*/
// SwiGLU backward + MXFP8 in both orientations, hand-tuned: hpre [M,2I] (g || u) and dA [M,I]
// bf16 -> dhpre = [dg || du] in bf16 -> q [M,2I] + scales [M,2I/32] (rowwise) and q_t [2I,M] +
// scales_t [2I,M/32] (columnwise, transposed). Floor: 6 bytes read + 4 (1 + 1/32) written per
// element of I; one pass, dhpre never leaves the SM.
//
// Design (swiglu_quantize_fwd's kernel with two outputs per element): one CTA per BLOCK_M x
// BLOCK_I tile of I (column tiles fastest).
//  - Loads: thread k of the tile's 16-byte chunks (8 columns of I) reads g, u and dA of its row;
//    all before any math.
//  - dg, du in fp32 in the reference's order (FAST_EXP: __expf and an approximate reciprocal for
//    the sigmoid; else expf and IEEE division), each rounded to bf16 once. Clamped: the clamp
//    gradients are selects with inclusive limits, so NaN and out-of-range give +0.
//  - Rowwise straight from registers: a row block (32 columns, all dg or all du since I % 32 == 0)
//    is a lane quad; two shuffles for amax, 8-byte q stores at column c (dg) and I + c (du).
//  - dg and du tiles go to shared memory (16-byte stores, conflict-free); after one barrier each
//    thread takes a column pair x 32-row block of one of them (32-bit reads, conflict-free) and
//    writes two 32-byte runs of q_t (rows c or I + c) and two scales.
//  - Scale rules as kernels/mxfp8_quantize_rowwise (sm_100a: cvt.rp.satfinite.ue8m0x2.f32 for
//    rceil; sm_90a: from the bits of d).
// Why it should be fast: one DRAM read of hpre and dA, full-sector writes, BLOCK_M*BLOCK_I*6
// bytes of loads in flight per CTA, 2*BLOCK_M*BLOCK_I*2 bytes of shared memory (16 KB default).
// Knobs: BLOCK_M (rows per tile; the q_t run length per CTA), BLOCK_I (columns of I per tile),
// THREADS, FAST_EXP, STORE_CS (st.global.cs for q and q_t).
//
// SASS claims (scripts/check_sass.py): the packed e4m3 conversion on both; sm_100a's rceil scale
//  is the ue8m0 conversion.
// warpsmith:sass sm_100a: F2FP.SATFINITE.E4M3
// warpsmith:sass sm_100a rounding=rceil: F2FP.SATFINITE.E8
// warpsmith:sass sm_90a: F2FP.SATFINITE.E4M3

#include "ws/mx_block.cuh"

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR) || \
    !defined(WS_VARIANT) || !defined(WS_VARIANT_STANDARD) || !defined(WS_VARIANT_CLAMPED)
#error "compile with the problem's parameters: -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1 -DWS_VARIANT=<0|1> -DWS_VARIANT_STANDARD=0 -DWS_VARIANT_CLAMPED=1"
#endif
#ifndef BLOCK_M
#define BLOCK_M 64
#endif
#ifndef BLOCK_I
#define BLOCK_I 64
#endif
#ifndef THREADS
#define THREADS 256
#endif
#ifndef FAST_EXP
#define FAST_EXP 1
#endif
#ifndef STORE_CS
#define STORE_CS 1
#endif

namespace {

struct Config {
  static constexpr int kBlockM = BLOCK_M;
  static constexpr int kBlockI = BLOCK_I;
  static constexpr int kThreads = THREADS;
  static constexpr int kRowChunks = kBlockI / 8;                  // 16-byte chunks per tile row
  static constexpr int kTileChunks = kBlockM * kRowChunks;
  static constexpr int kChunksPerThread = (kTileChunks + kThreads - 1) / kThreads;
  static constexpr int kColTasks = 2 * (kBlockI / 2) * (kBlockM / 32);  // {dg,du} x pair x row block
  static constexpr int kTasksPerThread = (kColTasks + kThreads - 1) / kThreads;
  static constexpr bool kFloor = WS_ROUNDING == WS_ROUNDING_FLOOR;
  static constexpr bool kClamped = WS_VARIANT == WS_VARIANT_CLAMPED;
  static constexpr bool kStoreCs = STORE_CS != 0;
};
static_assert(Config::kBlockM % 32 == 0 && Config::kBlockI % 32 == 0, "whole MX blocks");
static_assert(Config::kThreads % 32 == 0 && Config::kThreads <= 1024, "whole warps");
static_assert(2 * Config::kBlockM * Config::kBlockI * 2 <= 48 * 1024, "static shared memory");

using ws::bf16_hi;
using ws::bf16_lo;
using ws::Chunk;
using ws::cvt_bf16x2;

// sigmoid(z): FAST_EXP uses ex2.approx and rcp.approx (both MUFU), else expf and division.
__device__ __forceinline__ float sigmoid(float z) {
#if FAST_EXP
  return __fdividef(1.0f, 1.0f + __expf(-z));  // 1 + e = +Inf (z < -88) gives 0
#else
  return 1.0f / (1.0f + expf(-z));
#endif
}

// dg and du of one element, in the order the spec writes them.
__device__ __forceinline__ void swiglu_grad(float g, float u, float da, float& dg, float& du) {
  if constexpr (Config::kClamped) {
    const float gc = g > 7.0f ? 7.0f : g;                        // keeps NaN
    const float uc = u > 7.0f ? 7.0f : (u < -7.0f ? -7.0f : u);  // keeps NaN
    const float s = sigmoid(1.702f * gc);
    const bool pass_u = u >= -7.0f && u <= 7.0f;                 // false for NaN
    const bool pass_g = g <= 7.0f;                               // false for NaN
    du = pass_u ? da * (gc * s) : 0.0f;
    dg = pass_g ? (da * (uc + 1.0f)) * (s * (1.0f + (1.702f * gc) * (1.0f - s))) : 0.0f;
  } else {
    const float s = sigmoid(g);
    du = da * (g * s);
    dg = (da * u) * (s * (1.0f + g * (1.0f - s)));
  }
}

__device__ __forceinline__ void grad_chunk(const Chunk& g, const Chunk& u, const Chunk& da,
                                           Chunk& dg, Chunk& du) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float dg0, du0, dg1, du1;
    swiglu_grad(bf16_lo(g.w[i]), bf16_lo(u.w[i]), bf16_lo(da.w[i]), dg0, du0);
    swiglu_grad(bf16_hi(g.w[i]), bf16_hi(u.w[i]), bf16_hi(da.w[i]), dg1, du1);
    dg.w[i] = cvt_bf16x2(dg0, dg1);
    du.w[i] = cvt_bf16x2(du0, du1);
  }
}

}  // namespace

// hpre (M,2I), da (M,I) bf16 bits; q (M,2I), scales (M,2I/32); q_t (2I,M), scales_t (2I,M/32).
// CTA: one tile of I.
extern "C" __global__ void __launch_bounds__(Config::kThreads)
    sm90_bf16_dswiglu_mxfp8_quantize_dual(const unsigned short* __restrict__ hpre,
                                          const unsigned short* __restrict__ da,
                                          unsigned char* __restrict__ q,
                                          unsigned char* __restrict__ scales,
                                          unsigned char* __restrict__ q_t,
                                          unsigned char* __restrict__ scales_t, int M, int I) {
  __shared__ __align__(16) unsigned short tile[2][Config::kBlockM][Config::kBlockI];  // dg, du
  const int col_tiles = (I + Config::kBlockI - 1) / Config::kBlockI;
  const int m0 = (blockIdx.x / col_tiles) * Config::kBlockM;
  const int i0 = (blockIdx.x % col_tiles) * Config::kBlockI;
  const int tid = threadIdx.x;
  const long long two_i = 2LL * I;

  // Loads: chunk k -> tile row k / kRowChunks, columns 8 (k % kRowChunks) .. +7 of I; a row block
  // of 32 columns is a lane quad; columns are in or out in whole 32-blocks (I % 32 == 0).
  Chunk g[Config::kChunksPerThread], u[Config::kChunksPerThread], d[Config::kChunksPerThread];
#pragma unroll
  for (int c = 0; c < Config::kChunksPerThread; ++c) {
    const int k = c * Config::kThreads + tid;
    const int r = k / Config::kRowChunks, col = (k % Config::kRowChunks) * 8;
    const bool in = k < Config::kTileChunks && m0 + r < M && i0 + col < I;
    const unsigned short* row = hpre + static_cast<long long>(m0 + r) * two_i + i0 + col;
    g[c] = in ? ws::load_global16(row) : Chunk{{0u, 0u, 0u, 0u}};
    u[c] = in ? ws::load_global16(row + I) : Chunk{{0u, 0u, 0u, 0u}};
    d[c] = in ? ws::load_global16(da + static_cast<long long>(m0 + r) * I + i0 + col)
              : Chunk{{0u, 0u, 0u, 0u}};
  }
#pragma unroll
  for (int c = 0; c < Config::kChunksPerThread; ++c) {
    const int k = c * Config::kThreads + tid;
    const int r = k / Config::kRowChunks, col = (k % Config::kRowChunks) * 8;
    const bool in = k < Config::kTileChunks && m0 + r < M && i0 + col < I;
    Chunk grad[2];  // dg, du
    grad_chunk(g[c], u[c], d[c], grad[0], grad[1]);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      unsigned lo, hi;
      const unsigned s = ws::mx::quantize_quad<Config::kFloor>(grad[h], lo, hi);
      if (in) {
        const long long e = static_cast<long long>(m0 + r) * two_i + h * I + i0 + col;
        ws::store_global8<Config::kStoreCs>(q + e, lo, hi);
        if ((tid & 3) == 0) scales[e >> 5] = static_cast<unsigned char>(s);  // (M,2I/32): e/32
      }
      if (k < Config::kTileChunks) {
        *reinterpret_cast<uint4*>(&tile[h][r][col]) =
            make_uint4(grad[h].w[0], grad[h].w[1], grad[h].w[2], grad[h].w[3]);
      }
    }
  }
  __syncthreads();

  // Columnwise: task -> column pair p (fastest across lanes), 32-row block rb, then dg/du.
  const int m_blocks = M / 32;
  constexpr int kPairs = Config::kBlockI / 2;
  constexpr int kHalfTasks = Config::kColTasks / 2;
#pragma unroll
  for (int t = 0; t < Config::kTasksPerThread; ++t) {
    const int task = t * Config::kThreads + tid;
    if (task >= Config::kColTasks) break;
    const int h = task / kHalfTasks, rest = task % kHalfTasks;
    const int p = rest % kPairs, rb = rest / kPairs;
    const int col = i0 + 2 * p, mb = m0 / 32 + rb;
    if (col >= I || mb >= m_blocks) continue;
    unsigned v[32];
#pragma unroll
    for (int j = 0; j < 32; ++j) {
      v[j] = *reinterpret_cast<const unsigned*>(&tile[h][rb * 32 + j][2 * p]);
    }
    const long long out_col = static_cast<long long>(h) * I + col;  // row of q_t
    unsigned char* qt = q_t + out_col * M + mb * 32;
    unsigned char* st = scales_t + out_col * m_blocks + mb;
    ws::mx::quantize_column_pair<Config::kFloor, Config::kStoreCs>(v, qt, qt + M, st,
                                                                   st + m_blocks);
  }
}

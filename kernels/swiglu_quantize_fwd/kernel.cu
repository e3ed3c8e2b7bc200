/* warpsmith:plan
{ "knobs":  { "BLOCK_M": [64, 32, 128], "BLOCK_I": [64, 128], "THREADS": [256, 128, 512],
              "FAST_EXP": [1, 0], "STORE_CS": [1, 0] },
  "launch": [ { "kernel": "sm90_bf16_swiglu_mxfp8_quantize_dual",
                "grid":  ["ceil_div(M, BLOCK_M) * ceil_div(I, BLOCK_I)"], "block": ["THREADS"],
                "smem": "0",
                "args":  ["hpre", "q", "scales", "q_t", "scales_t", "M", "I"] } ] }
*/
// SwiGLU + MXFP8 in both orientations, hand-tuned: hpre [M,2I] bf16 -> A = act(g,u) in bf16 ->
// q [M,I] + scales [M,I/32] (rowwise) and q_t [I,M] + scales_t [I,M/32] (columnwise, transposed).
// Floor: 4 bytes read + 2 (1 + 1/32) written per element of A; one pass, A never leaves the SM.
//
// Design: one CTA per BLOCK_M x BLOCK_I tile of A (column tiles fastest, so neighbouring CTAs
// stream neighbouring bytes of the same hpre rows).
//  - Loads: thread k of the tile's 16-byte chunks (8 columns) reads the gate and the up chunk of its
//    row; a warp's load instruction covers whole 128-byte lines of a row. All of a thread's loads
//    are issued before any math.
//  - A in fp32 (FAST_EXP: __expf and an approximate reciprocal; else expf and IEEE division),
//    rounded to bf16 (RNE) once.
//  - Rowwise straight from registers: a row block (32 columns) is a lane quad; amax by two
//    shuffles, 8-byte q stores, the quad's first lane stores the scale.
//  - The bf16 tile goes to shared memory (16-byte stores, one row of 128 bytes per quarter warp:
//    conflict-free); after one barrier each thread takes a column pair x 32-row block (32-bit
//    reads, a warp reads 128 contiguous bytes of a tile row: conflict-free), computes both
//    columns' amax, and writes two 32-byte runs of q_t (two 16-byte stores each) and two scales.
//  - Scale rules as kernels/mxfp8_quantize_rowwise (integer amax on bf16 bits, NaN above Inf;
//    sm_100a: rceil via cvt.rp.satfinite.ue8m0x2.f32; sm_90a: from the bits of d).
// Why it should be fast: one DRAM read of hpre, full-sector writes (q_t runs are 32-byte aligned,
// M % 32 == 0), BLOCK_M*BLOCK_I*4 bytes of loads in flight per CTA, BLOCK_M*BLOCK_I*2 bytes of
// shared memory (8 KB at the default), so several CTAs per SM overlap load, math and stores.
// Knobs: BLOCK_M (rows per tile; also the q_t run length per CTA), BLOCK_I (columns per tile),
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
  static constexpr int kColTasks = (kBlockI / 2) * (kBlockM / 32);  // column pair x row block
  static constexpr int kTasksPerThread = (kColTasks + kThreads - 1) / kThreads;
  static constexpr bool kFloor = WS_ROUNDING == WS_ROUNDING_FLOOR;
  static constexpr bool kClamped = WS_VARIANT == WS_VARIANT_CLAMPED;
  static constexpr bool kStoreCs = STORE_CS != 0;
};
static_assert(Config::kBlockM % 32 == 0 && Config::kBlockI % 32 == 0, "whole MX blocks");
static_assert(Config::kThreads % 32 == 0 && Config::kThreads <= 1024, "whole warps");
static_assert(Config::kBlockM * Config::kBlockI * 2 <= 48 * 1024, "static shared memory");

using ws::bf16_hi;
using ws::bf16_lo;
using ws::Chunk;
using ws::cvt_bf16x2;

// sigmoid(z) * x: FAST_EXP uses ex2.approx and rcp.approx (both MUFU), else expf and division.
__device__ __forceinline__ float times_sigmoid(float x, float z) {
#if FAST_EXP
  return __fdividef(x, 1.0f + __expf(-z));  // 1 + e = +Inf (z < -88) gives x * 0
#else
  return x / (1.0f + expf(-z));
#endif
}

// A = act(g, u) in fp32.
__device__ __forceinline__ float activation(float g, float u) {
  if constexpr (Config::kClamped) {
    const float gc = g > 7.0f ? 7.0f : g;                               // keeps NaN
    const float uc = u > 7.0f ? 7.0f : (u < -7.0f ? -7.0f : u);         // keeps NaN
    return times_sigmoid(gc, 1.702f * gc) * (uc + 1.0f);
  } else {
    return times_sigmoid(g, g) * u;
  }
}

__device__ __forceinline__ Chunk activation_chunk(const Chunk& g, const Chunk& u) {
  Chunk a;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    a.w[i] = cvt_bf16x2(activation(bf16_lo(g.w[i]), bf16_lo(u.w[i])),
                        activation(bf16_hi(g.w[i]), bf16_hi(u.w[i])));
  }
  return a;
}

}  // namespace

// hpre (M,2I) bf16 bits; q (M,I), scales (M,I/32); q_t (I,M), scales_t (I,M/32). CTA: one tile.
extern "C" __global__ void __launch_bounds__(Config::kThreads)
    sm90_bf16_swiglu_mxfp8_quantize_dual(const unsigned short* __restrict__ hpre,
                                         unsigned char* __restrict__ q,
                                         unsigned char* __restrict__ scales,
                                         unsigned char* __restrict__ q_t,
                                         unsigned char* __restrict__ scales_t, int M, int I) {
  __shared__ __align__(16) unsigned short tile[Config::kBlockM][Config::kBlockI];  // A in bf16
  const int col_tiles = (I + Config::kBlockI - 1) / Config::kBlockI;
  const int m0 = (blockIdx.x / col_tiles) * Config::kBlockM;
  const int i0 = (blockIdx.x % col_tiles) * Config::kBlockI;
  const int tid = threadIdx.x;
  const long long two_i = 2LL * I;

  // Loads: chunk k -> tile row k / kRowChunks, columns 8 (k % kRowChunks) .. +7. A row block of
  // 32 columns is 4 consecutive k: a lane quad. Rows are in or out in whole (M % 32 == 0 is not
  // needed here), columns in whole 32-blocks (I % 32 == 0).
  Chunk g[Config::kChunksPerThread], u[Config::kChunksPerThread];
#pragma unroll
  for (int c = 0; c < Config::kChunksPerThread; ++c) {
    const int k = c * Config::kThreads + tid;
    const int r = k / Config::kRowChunks, col = (k % Config::kRowChunks) * 8;
    const bool in = k < Config::kTileChunks && m0 + r < M && i0 + col < I;
    const unsigned short* row = hpre + static_cast<long long>(m0 + r) * two_i + i0 + col;
    g[c] = in ? ws::load_global16(row) : Chunk{{0u, 0u, 0u, 0u}};
    u[c] = in ? ws::load_global16(row + I) : Chunk{{0u, 0u, 0u, 0u}};
  }
#pragma unroll
  for (int c = 0; c < Config::kChunksPerThread; ++c) {
    const int k = c * Config::kThreads + tid;
    const int r = k / Config::kRowChunks, col = (k % Config::kRowChunks) * 8;
    const bool in = k < Config::kTileChunks && m0 + r < M && i0 + col < I;
    const Chunk a = activation_chunk(g[c], u[c]);
    unsigned lo, hi;
    const unsigned s = ws::mx::quantize_quad<Config::kFloor>(a, lo, hi);
    if (in) {
      const long long e = static_cast<long long>(m0 + r) * I + i0 + col;
      ws::store_global8<Config::kStoreCs>(q + e, lo, hi);
      if ((tid & 3) == 0) scales[e >> 5] = static_cast<unsigned char>(s);  // (M,I/32): e/32
    }
    if (k < Config::kTileChunks) {
      *reinterpret_cast<uint4*>(&tile[r][col]) = make_uint4(a.w[0], a.w[1], a.w[2], a.w[3]);
    }
  }
  __syncthreads();

  // Columnwise: task -> column pair p (fastest across lanes), 32-row block rb.
  const int m_blocks = M / 32;
#pragma unroll
  for (int t = 0; t < Config::kTasksPerThread; ++t) {
    const int task = t * Config::kThreads + tid;
    if (task >= Config::kColTasks) break;
    const int p = task % (Config::kBlockI / 2), rb = task / (Config::kBlockI / 2);
    const int col = i0 + 2 * p, mb = m0 / 32 + rb;
    if (col >= I || mb >= m_blocks) continue;
    unsigned v[32];
#pragma unroll
    for (int j = 0; j < 32; ++j) v[j] = *reinterpret_cast<const unsigned*>(&tile[rb * 32 + j][2 * p]);
    unsigned char* qt = q_t + static_cast<long long>(col) * M + mb * 32;
    unsigned char* st = scales_t + static_cast<long long>(col) * m_blocks + mb;
    ws::mx::quantize_column_pair<Config::kFloor, Config::kStoreCs>(v, qt, qt + M, st,
                                                                   st + m_blocks);
  }
}

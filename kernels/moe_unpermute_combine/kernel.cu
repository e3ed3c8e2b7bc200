/* warpsmith:plan
{ "knobs":  { "THREADS": [256, 128, 512], "CHUNKS": [2, 1, 4], "SLOT_GROUP": [4, 8, 16],
              "LOAD_HINT": [0, 1] },
  "launch": [ { "kernel": "sm90_bf16_moe_unpermute_combine_gather",
                "grid":  ["ceil_div(T, THREADS / 32)"], "block": ["THREADS"], "smem": "0",
                "args":  ["y_p", "w", "slot_row", "y_shared", "y", "T", "H", "K"] } ] }
*/
// MoE combine (unpermute), hand-tuned: y[t] = bf16(sum_j fmaf(w[t,j], y_p[slot_row[t,j]], .)
// (+ y_shared[t])), exact (fixed order, one fmaf per slot from +0, one bf16 rounding).
// Floor: 2K + 2 (+2 with shared=add) bytes per output element; a gather of whole rows.
//
// Design: one warp per token.
//  - Lane j < K loads the token's slot row and weight once; the warp broadcasts them by shuffle.
//  - The row is walked in rounds of CHUNKS x 32 lanes x 16 bytes (8 bf16 per lane and chunk, each
//    load instruction 512 contiguous bytes of one gathered row). Per round, the loads of
//    SLOT_GROUP slots x CHUNKS chunks are all issued before the first fmaf (K = 8 at the
//    defaults: 4 KB in flight per warp), then accumulated strictly in slot order, so the sum is
//    the reference's bit for bit. K = 1 and 2 spend the same registers on more chunks per lane. y_shared's chunk is loaded with the first slot group and added last.
//  - H % 8 != 0 (rows not 16-byte aligned; test shapes only) takes a scalar path, same order.
// Why it should be fast: one read of each gathered row segment at full-line granularity, no
// atomics, no shared memory, enough independent 16-byte loads per SM to cover DRAM latency
// (a random row gather at >= 4 KB per row is as DRAM-friendly as a stream). No TMA: the data
// must pass through registers for the fmaf, and 16-byte loads already issue whole lines.
// Knobs: THREADS (CTA size), CHUNKS (16-byte chunks per lane per round), SLOT_GROUP (slots whose
// loads are in flight together: registers vs. bytes in flight), LOAD_HINT (0: ld.global.nc,
// 1: ld.global). Arch: the same code on sm_90a and sm_100a (nothing here needs a Blackwell form).

#include "ws/bf16.cuh"
#include "ws/memory.cuh"

#if !defined(WS_SHARED) || !defined(WS_SHARED_ADD)
#error "compile with the problem's parameters (-DWS_SHARED=..., -DWS_SHARED_ADD=1)"
#endif
#ifndef THREADS
#define THREADS 256
#endif
#ifndef CHUNKS
#define CHUNKS 2
#endif
#ifndef SLOT_GROUP
#define SLOT_GROUP 4
#endif
#ifndef LOAD_HINT
#define LOAD_HINT 0
#endif

namespace {

struct Config {
  static constexpr int kThreads = THREADS;
  static constexpr int kWarps = kThreads / 32;
  static constexpr int kChunks = CHUNKS;        // 16-byte chunks per lane per round
  static constexpr int kSlotGroup = SLOT_GROUP; // slots loaded together
  static constexpr int kRoundChunks = 32 * kChunks;
  static constexpr bool kShared = WS_SHARED == WS_SHARED_ADD;
  static constexpr ws::LoadHint kLoadHint = LOAD_HINT == 0 ? ws::LoadHint::kNc
                                                           : ws::LoadHint::kPlain;
};
static_assert(Config::kThreads % 32 == 0 && Config::kThreads <= 1024, "whole warps");
static_assert(Config::kChunks * Config::kSlotGroup <= 64, "registers");

using ws::bf16_hi;
using ws::bf16_lo;
using ws::Chunk;
using ws::kFullMask;

__device__ __forceinline__ Chunk load_chunk(const unsigned short* p) {
  return ws::load_global16<Config::kLoadHint>(p);
}

__device__ __forceinline__ float bf16_value(unsigned short b) {
  return __uint_as_float(static_cast<unsigned>(b) << 16);
}

// fp32 -> bf16 bits, RNE; NaN -> 0x7FC0 (the spec's NaN); overflow rounds to +-Inf.
__device__ __forceinline__ unsigned bf16_rne(float v) {
  const unsigned b = __float_as_uint(v);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0u;
  return (b + 0x7FFFu + ((b >> 16) & 1u)) >> 16;
}

// acc[8] += w * chunk (one fmaf each, element order irrelevant: elements are independent).
__device__ __forceinline__ void fma_chunk(float (&acc)[8], float w, const Chunk& c) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    acc[2 * i] = __fmaf_rn(w, bf16_lo(c.w[i]), acc[2 * i]);
    acc[2 * i + 1] = __fmaf_rn(w, bf16_hi(c.w[i]), acc[2 * i + 1]);
  }
}

// The vector path over the whole row: rounds of kU chunks per lane, kJ slots' loads in flight.
template <int kJ, int kU>
__device__ __forceinline__ void combine_row(const unsigned short* __restrict__ y_p,
                                            const unsigned short* __restrict__ y_shared,
                                            unsigned short* __restrict__ y, long long t, int H,
                                            int K, int my_row, float my_w, int lane) {
  const int row_chunks = H / 8;
  for (int c0 = 0; c0 < row_chunks; c0 += (32 * kU)) {
    float acc[kU][8];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
#pragma unroll
      for (int i = 0; i < 8; ++i) acc[u][i] = 0.0f;
    }
    Chunk shared_chunk[kU];
    for (int j0 = 0; j0 < K; j0 += kJ) {
      Chunk v[kJ][kU];
      float wj[kJ];
#pragma unroll
      for (int jj = 0; jj < kJ; ++jj) {
        const int j = j0 + jj;
        // NOTE: shuffles on all lanes; j >= K reads lane j's dummy row 0 and is never loaded.
        const long long row = __shfl_sync(kFullMask, my_row, j & 31);
        wj[jj] = __shfl_sync(kFullMask, my_w, j & 31);
#pragma unroll
        for (int u = 0; u < kU; ++u) {
          const int ci = c0 + u * 32 + lane;
          v[jj][u] = j < K && ci < row_chunks ? load_chunk(y_p + row * H + ci * 8)
                                              : Chunk{{0u, 0u, 0u, 0u}};
        }
      }
      if constexpr (Config::kShared) {
        if (j0 == 0) {
#pragma unroll
          for (int u = 0; u < kU; ++u) {
            const int ci = c0 + u * 32 + lane;
            shared_chunk[u] = ci < row_chunks ? load_chunk(y_shared + t * H + ci * 8)
                                              : Chunk{{0u, 0u, 0u, 0u}};
          }
        }
      }
      // In slot order: the reference's fmaf chain.
#pragma unroll
      for (int jj = 0; jj < kJ; ++jj) {
        if (j0 + jj < K) {
#pragma unroll
          for (int u = 0; u < kU; ++u) fma_chunk(acc[u], wj[jj], v[jj][u]);
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      const int ci = c0 + u * 32 + lane;
      if (ci >= row_chunks) continue;
      if constexpr (Config::kShared) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          acc[u][2 * i] = __fadd_rn(acc[u][2 * i], bf16_lo(shared_chunk[u].w[i]));
          acc[u][2 * i + 1] = __fadd_rn(acc[u][2 * i + 1], bf16_hi(shared_chunk[u].w[i]));
        }
      }
      unsigned out[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) out[i] = bf16_rne(acc[u][2 * i]) | (bf16_rne(acc[u][2 * i + 1]) << 16);
      asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(y + t * H + ci * 8),
                   "r"(out[0]), "r"(out[1]), "r"(out[2]), "r"(out[3]) : "memory");
    }
  }
}

}  // namespace

// y_p (MP,H), y_shared (T,H), y (T,H) bf16 bits; w (T,K) f32; slot_row (T,K) i32. Warp: a token.
extern "C" __global__ void __launch_bounds__(Config::kThreads)
    sm90_bf16_moe_unpermute_combine_gather(const unsigned short* __restrict__ y_p,
                                           const float* __restrict__ w,
                                           const int* __restrict__ slot_row,
                                           const unsigned short* __restrict__ y_shared,
                                           unsigned short* __restrict__ y, int T, int H, int K) {
  const int lane = threadIdx.x & 31;
  const long long t = static_cast<long long>(blockIdx.x) * Config::kWarps + (threadIdx.x >> 5);
  if (t >= T) return;  // whole warps leave together
  const int my_row = lane < K ? slot_row[t * K + lane] : 0;
  const float my_w = lane < K ? w[t * K + lane] : 0.0f;

  if ((H & 7) != 0) {
    // Scalar path (rows not 16-byte aligned).
    for (int h0 = 0; h0 < H; h0 += 32) {  // uniform trip count: the shuffles need every lane
      const int h = h0 + lane;
      float acc = 0.0f;
      for (int j = 0; j < K; ++j) {
        const long long row = __shfl_sync(kFullMask, my_row, j);
        const float wj = __shfl_sync(kFullMask, my_w, j);
        if (h < H) acc = __fmaf_rn(wj, bf16_value(y_p[row * H + h]), acc);
      }
      if (h >= H) continue;
      if constexpr (Config::kShared) acc = __fadd_rn(acc, bf16_value(y_shared[t * H + h]));
      y[t * H + h] = static_cast<unsigned short>(bf16_rne(acc));
    }
    return;
  }

  // Few slots leave registers idle: spend them on more chunks per lane instead.
  constexpr int kLoads = Config::kSlotGroup * Config::kChunks;
  constexpr int kU1 = kLoads < 8 ? kLoads : 8, kU2 = kLoads / 2 < 8 ? kLoads / 2 : 8;
  if (K == 1) {
    combine_row<1, kU1>(y_p, y_shared, y, t, H, K, my_row, my_w, lane);
  } else if (K == 2 && kU2 >= 1) {
    combine_row<2, (kU2 >= 1 ? kU2 : 1)>(y_p, y_shared, y, t, H, K, my_row, my_w, lane);
  } else {
    combine_row<Config::kSlotGroup, Config::kChunks>(y_p, y_shared, y, t, H, K, my_row, my_w,
                                                     lane);
  }
}

// warpsmith device library: grouped GEMMs of short groups (decode and small batches, a few dozen
// tokens per expert) as a GEMV that streams each expert's weights once:
//   out[t, o] = bf16(sum_d x[t, d] w[g(t), o, d])  with x [M,D], w [E,O,D], both D-contiguous,
// offs = cumulative group ends, in two operand kinds (the Op):
//   Mx:   E4M3 with E8M0 scales per 32 along D, each 32-block's sum times both scales (the MX
//         definition): mxfp8_grouped_gemm_fwd as is (O = N, D = K), _dgrad with N and K renamed;
//   Bf16: bf16 operands: bf16_grouped_gemm's fwd form.
//
// Why: at 32 tokens per expert a tile pipeline leaves most SMs without a tile and each SM streams
// its weights through one CTA's ring; here the weight bytes are the whole cost, so every SM
// streams them with plain loads straight into mma.sync fragments, as ws/gemv.cuh does for the
// dense decode GEMMs.
//
// A CTA owns one expert and kNT 8-row tiles of its weights (blockIdx.x = e * slices + slice:
// consecutive CTAs share the expert's tokens in L2); its kWarps warps split D into contiguous
// runs of kChunk-block chunks; the group's tokens go through in passes of 16 kMT (tokens are the
// MMA's rows, weight rows its columns, so the reduction stores bf16 pairs along O). A block is 32
// bytes of a row (an MX block, or 16 bf16). Per block a lane (g = lane / 4, q = lane % 4) loads
// the 8 bytes at 8 q of each of its rows (tokens g and g + 8 of each 16-token tile, weight row g
// of each 8-row tile): under one relabelling of the block's k, the same for both operands, they
// are exactly the lane's share of its MMAs, each 32-bit word one fragment register:
//   Mx:   two m16n8k16 f16 MMAs (word s the k-step s, its 16-bit halves the fragment's k pairs
//         {2q, 2q+1} and {2q+8, 2q+9}). E4M3 -> f16 is exact (cvt.rn.f16x2.e4m3x2, once per
//         operand and block); the two MMAs start from zero, so each block's 32 products are
//         summed in the tensor core's fp32 path, and the block's sum is promoted by its two
//         scales into the fp32 accumulator: the MX definition, no rebasing.
//   Bf16: one m16n8k16 bf16 MMA into the accumulator (word 0 the pair {2q, 2q+1}, word 1
//         {2q+8, 2q+9}).
// The warps' sums meet in shared memory in warp order (ws::gemv_reduce): deterministic, no
// atomics.
#pragma once

#include <cuda_bf16.h>

#include "ws/cluster.cuh"
#include "ws/gemv.cuh"
#include "ws/memory.cuh"
#include "ws/mx_gemm.cuh"
#include "ws/ptx_sm90.cuh"

namespace ws::ggv {

/// E4M3 operands with E8M0 scales per 32 along D.
struct Mx {
  static constexpr bool kScaled = true;
  static constexpr int kElemBytes = 1;
};

/// BF16 operands, no scales.
struct Bf16 {
  static constexpr bool kScaled = false;
  static constexpr int kElemBytes = 2;
};

/// Op (Mx or Bf16), kMT 16-token tiles per pass, kNT 8-row weight tiles per CTA, kWarps warps
/// over D, kChunk 32-byte blocks loaded ahead per warp (a 32-bit word of each scale row at 4),
/// kMinBlocks CTAs per SM for __launch_bounds__, kPrefetch: the CTA first asks L2 for all of
/// its weight rows (and their scale rows where whole 16-byte runs), so the DRAM reads in flight
/// do not wait for registers. The plan launches E * ceil(ceil(O / 8) / kNT) CTAs of kThreads
/// with kRedBytes of shared memory.
template <class TOp, int kMTiles, int kNTiles, int kNWarps, int kNChunk = 4,
          int kNMinBlocks = 2, bool kNPrefetch = true>
struct GemvConfig {
  using Op = TOp;
  static constexpr int kMT = kMTiles, kNT = kNTiles, kWarps = kNWarps;
  static constexpr int kChunk = kNChunk, kMinBlocks = kNMinBlocks;
  static constexpr bool kPrefetch = kNPrefetch;
  static_assert(kChunk == 1 || kChunk == 2 || kChunk == 4, "scale bytes of a chunk: one word");
  static_assert(kMT >= 1 && kMT <= 4 && kNT >= 1 && kNT <= 8, "registers");
  static constexpr int kThreads = 32 * kWarps;
  static_assert(kThreads <= 1024, "whole CTA");
  static constexpr int kRedBytes = kWarps * kMT * kNT * 32 * 16;
};

/// Bytes 0 and 1 (kHalf 0) or 2 and 3 (kHalf 1) of w, E4M3 -> f16x2 (exact).
template <int kHalf>
__device__ __forceinline__ unsigned f16x2_from_e4m3x2(unsigned w) {
  return mx::cvt_e4m3x2_f16x2(static_cast<unsigned short>(w >> (16 * kHalf)));
}

__device__ __forceinline__ void mma_f16(float (&c)[4], unsigned a0, unsigned a1, unsigned a2,
                                        unsigned a3, unsigned b0, unsigned b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
      "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

/// Scale bytes [j0, j0 + kBytes) of the scale row at row (nb bytes long; byte u in bits 8u..),
/// zeros past nb. One load where the row length and j0 (a multiple of kBytes) keep it aligned.
template <int kBytes>
__device__ __forceinline__ unsigned load_scale_word(const unsigned char* row, int j0, int nb,
                                                    bool aligned) {
  if (kBytes == 1 || (aligned && j0 + kBytes <= nb)) return load_global_nc_small<kBytes>(row + j0);
  unsigned v = 0;
#pragma unroll
  for (int u = 0; u < kBytes; ++u) {
    if (j0 + u < nb) v |= load_global_nc_small<1>(row + j0 + u) << (8 * u);
  }
  return v;
}

/// E8M0 byte u (unrolled: a constant) of a scale word whose bytes are in [1, 254] ->
/// 2^(s - 127): the byte moved into the fp32 exponent field.
__device__ __forceinline__ float e8m0_plain(unsigned word, int u) {
  const unsigned bits = u < 3 ? word << (23 - 8 * u) : word >> 1;
  return __uint_as_float(bits & 0x7F800000u);
}

/// True if any of the low kBytes bytes of the word is 0x00 or 0xFF (e8m0_plain would be wrong
/// for it).
template <int kBytes>
__device__ __forceinline__ bool e8m0_special(unsigned word) {
  constexpr unsigned kMask = kBytes >= 4 ? 0xFFFFFFFFu : (1u << (8 * kBytes)) - 1u;
  return ((__vcmpeq4(word, 0u) | __vcmpeq4(word, 0xFFFFFFFFu)) & kMask) != 0;
}

/// A lane's rows for one pass of grouped_gemv (few registers: one base and a stride each):
/// tokens g + 8 i (i = 2 mt + h: g and g + 8 of each 16-token tile, the MMA's rows) at x + i *
/// 8 D, their scale rows at xs + i * 8 nb, the first x_rows of them existing; weight row g of
/// each 8-row tile at w + nt * 8 D (loads), rows 2q + k at ws + (8 nt + k) nb (the fragment's
/// columns: scales), the first w_tiles tiles existing. Data pointers at the lane's 8 bytes of
/// block 0.
struct GemvRows {
  const unsigned char* x;
  const unsigned char* xs;
  const unsigned char* w;
  const unsigned char* ws;
  int d8;     // bytes between rows g and g + 8 (8 rows)
  int nb;     // 32-byte blocks per row (Mx: scale bytes per row)
  int x_rows; // tokens (g + 8 i) with 8 i < x_rows exist
  int w_tiles;
};

/// A scale word for rows that do not exist: 1.0 in every byte (their data loads as zeros and
/// their sums are never stored), so they never send a chunk down the special path.
constexpr unsigned kUnitScales = 0x7F7F7F7Fu;

/// Mx: block u of a chunk (loaded words xv, wv; scale words xsw, wsw) into acc.
template <class Cfg>
__device__ __forceinline__ void mx_block(const unsigned (&xv)[Cfg::kMT][2][2],
                                         const unsigned (&wv)[Cfg::kNT][2],
                                         const unsigned (&xsw)[Cfg::kMT][2],
                                         const unsigned (&wsw)[Cfg::kNT][2], int u, bool plain,
                                         float (&acc)[Cfg::kMT][Cfg::kNT][4]) {
  constexpr int kMT = Cfg::kMT, kNT = Cfg::kNT;
  // The weights' fragments for the block's two k-steps, shared by every token tile.
  unsigned b[kNT][2][2];
  float fb[kNT][2];
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      b[nt][s][0] = f16x2_from_e4m3x2<0>(wv[nt][s]);
      b[nt][s][1] = f16x2_from_e4m3x2<1>(wv[nt][s]);
    }
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      fb[nt][k] = plain ? e8m0_plain(wsw[nt][k], u)
                        : mx::e8m0_to_f32((wsw[nt][k] >> (8 * u)) & 0xFFu);
    }
  }
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
    // Tokens g and g + 8 of tile mt.
    unsigned a[2][4];
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      a[s][0] = f16x2_from_e4m3x2<0>(xv[mt][0][s]);
      a[s][1] = f16x2_from_e4m3x2<0>(xv[mt][1][s]);
      a[s][2] = f16x2_from_e4m3x2<1>(xv[mt][0][s]);
      a[s][3] = f16x2_from_e4m3x2<1>(xv[mt][1][s]);
    }
    float fa[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      fa[h] = plain ? e8m0_plain(xsw[mt][h], u) : mx::e8m0_to_f32((xsw[mt][h] >> (8 * u)) & 0xFFu);
    }
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
      float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      mma_f16(part, a[0][0], a[0][1], a[0][2], a[0][3], b[nt][0][0], b[nt][0][1]);
      mma_f16(part, a[1][0], a[1][1], a[1][2], a[1][3], b[nt][1][0], b[nt][1][1]);
      // c0, c1: token g, columns 2q, 2q + 1; c2, c3: token g + 8.
      acc[mt][nt][0] = fmaf(part[0] * fa[0], fb[nt][0], acc[mt][nt][0]);
      acc[mt][nt][1] = fmaf(part[1] * fa[0], fb[nt][1], acc[mt][nt][1]);
      acc[mt][nt][2] = fmaf(part[2] * fa[1], fb[nt][0], acc[mt][nt][2]);
      acc[mt][nt][3] = fmaf(part[3] * fa[1], fb[nt][1], acc[mt][nt][3]);
    }
  }
}

/// Blocks [j0, j0 + kChunk) of one warp into acc. kFull: the whole chunk lies below nb and (Mx)
/// the scale rows are kChunk-aligned (no per-block guards, one load per scale row).
template <class Cfg, bool kFull>
__device__ __forceinline__ void gemv_chunk(const GemvRows& r, int j0,
                                           float (&acc)[Cfg::kMT][Cfg::kNT][4]) {
  const int nb = r.nb;
  constexpr int kMT = Cfg::kMT, kNT = Cfg::kNT, kChunk = Cfg::kChunk;
  // Every load of the chunk before the first MMA.
  unsigned xv[kChunk][kMT][2][2], wv[kChunk][kNT][2];
#pragma unroll
  for (int u = 0; u < kChunk; ++u) {
    const bool jin = kFull || j0 + u < nb;
    const int off = (j0 + u) * 32;
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        xv[u][mt][h][0] = xv[u][mt][h][1] = 0u;
        if (jin && 8 * (2 * mt + h) < r.x_rows) {
          load_global8_nc<false>(xv[u][mt][h], r.x + (2 * mt + h) * r.d8 + off);
        }
      }
    }
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
      wv[u][nt][0] = wv[u][nt][1] = 0u;
      if (jin && nt < r.w_tiles) load_global8_nc<true>(wv[u][nt], r.w + nt * r.d8 + off);
    }
  }
  if constexpr (!Cfg::Op::kScaled) {
#pragma unroll
    for (int u = 0; u < kChunk; ++u) {
      if (!kFull && j0 + u >= nb) break;  // warp-uniform
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
          GemvBf16::mma(acc[mt][nt], xv[u][mt][0][0], xv[u][mt][1][0], xv[u][mt][0][1],
                   xv[u][mt][1][1], wv[u][nt][0], wv[u][nt][1]);
        }
      }
    }
    return;
  } else {
    unsigned xsw[kMT][2], wsw[kNT][2];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const unsigned char* row = r.xs + (2 * mt + h) * 8 * nb;
        xsw[mt][h] = 8 * (2 * mt + h) >= r.x_rows ? kUnitScales
                     : kFull ? load_scale_word<kChunk>(row, j0, nb, true)
                             : load_scale_word<kChunk>(row, j0, nb, false);
      }
    }
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        const unsigned char* row = r.ws + (8 * nt + k) * nb;
        wsw[nt][k] = nt >= r.w_tiles ? kUnitScales
                     : kFull ? load_scale_word<kChunk>(row, j0, nb, true)
                             : load_scale_word<kChunk>(row, j0, nb, false);
      }
    }
    // Blocks past nb (the last chunk's tail) read as 0x00 scales: special, and skipped below.
    bool special = false;
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
      special |= e8m0_special<kChunk>(xsw[mt][0]) | e8m0_special<kChunk>(xsw[mt][1]);
    }
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
      special |= e8m0_special<kChunk>(wsw[nt][0]) | e8m0_special<kChunk>(wsw[nt][1]);
    }
    const bool plain = !__any_sync(0xFFFFFFFFu, special);
#pragma unroll
    for (int u = 0; u < kChunk; ++u) {
      if (!kFull && j0 + u >= nb) break;  // warp-uniform
      mx_block<Cfg>(xv[u], wv[u], xsw, wsw, u, plain, acc);
    }
  }
}

/// One CTA: expert e's weight rows [8 tile0, 8 (tile0 + kNT)) against all of the expert's
/// tokens. x, w: the operands' bytes; xs, wsc: their scales (Mx; unused for Bf16); D in
/// elements (D * Op::kElemBytes % 32 == 0). red: Cfg::kRedBytes of shared memory. Every thread
/// calls it.
template <class Cfg>
__device__ __forceinline__ void grouped_gemv(const unsigned char* __restrict__ x,
                                             const unsigned char* __restrict__ xs,
                                             const unsigned char* __restrict__ w,
                                             const unsigned char* __restrict__ wsc,
                                             const int* __restrict__ offs,
                                             __nv_bfloat16* __restrict__ out, int E, int O, int D,
                                             float4* red) {
  constexpr int kMT = Cfg::kMT, kNT = Cfg::kNT, kChunk = Cfg::kChunk;
  require_dynamic_smem(Cfg::kRedBytes);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, q = lane % 4;
  const int tiles_o = O / 8;
  const int slices = (tiles_o + kNT - 1) / kNT;
  const int e = static_cast<int>(blockIdx.x) / slices;
  const int tile0 = static_cast<int>(blockIdx.x) % slices * kNT;
  if (e >= E) return;
  const int t_begin = e > 0 ? offs[e - 1] : 0, t_end = offs[e];
  if (t_begin >= t_end) return;  // an empty group: the whole CTA leaves

  const long long row_bytes = static_cast<long long>(D) * Cfg::Op::kElemBytes;
  const int nb = static_cast<int>(row_bytes / 32);  // blocks per row (Mx: scale bytes per row)
  const int chunks = (nb + kChunk - 1) / kChunk;
  const int c_first = warp * chunks / Cfg::kWarps, c_stop = (warp + 1) * chunks / Cfg::kWarps;
  // Chunks below c_full are whole (Mx: with kChunk-aligned scale words).
  const int c_full = !Cfg::Op::kScaled ? nb / kChunk : nb % kChunk == 0 ? chunks : 0;

  GemvRows r;
  const long long wrow0 = static_cast<long long>(e) * O + tile0 * 8;
  if constexpr (Cfg::kPrefetch) {
    const int rows = min(8 * kNT, O - tile0 * 8);
    if (static_cast<int>(threadIdx.x) < rows) {
      const long long row = wrow0 + threadIdx.x;
      bulk_prefetch_l2(w + row * row_bytes, static_cast<unsigned>(row_bytes));
      if (Cfg::Op::kScaled && nb % 16 == 0) {
        bulk_prefetch_l2(wsc + row * nb, static_cast<unsigned>(nb));
      }
    }
  }
  r.w = w + (wrow0 + g) * row_bytes + 8 * q;
  r.ws = Cfg::Op::kScaled ? wsc + (wrow0 + 2 * q) * nb : nullptr;
  r.d8 = static_cast<int>(8 * row_bytes);
  r.nb = nb;
  r.w_tiles = min(kNT, tiles_o - tile0);  // tiles past O: nothing loaded, nothing stored

  for (int p0 = t_begin; p0 < t_end; p0 += 16 * kMT) {
    // Tokens past the group: nothing loaded, nothing stored (rows <= the group's last, so the
    // pointers below stay inside x and xs).
    r.x_rows = t_end - p0 - g;
    r.x = x + (p0 + g) * row_bytes + 8 * q;
    r.xs = Cfg::Op::kScaled ? xs + static_cast<long long>(p0 + g) * nb : nullptr;
    float acc[kMT][kNT][4];
    zero_fragments(acc);
    for (int c = c_first; c < c_stop; ++c) {
      if (c < c_full) {
        gemv_chunk<Cfg, true>(r, c * kChunk, acc);
      } else {
        gemv_chunk<Cfg, false>(r, c * kChunk, acc);
      }
    }

    const int rows = min(16 * kMT, t_end - p0);
    __nv_bfloat16* out_pass = out + static_cast<long long>(p0) * O;
    gemv_reduce<kMT, kNT, Cfg::kWarps, 1>(
        red, acc, rows, O, tile0, [&](int row, int col, float v0, float v1) {
          __nv_bfloat162 pair = __floats2bfloat162_rn(v0, v1);
          *reinterpret_cast<__nv_bfloat162*>(out_pass + static_cast<long long>(row) * O + col) =
              pair;
        });
    __syncthreads();  // red is the next pass's too
  }
}

// ---- The shared-token form ------------------------------------------------------------------
// grouped_gemv reads a group's tokens from L2 once per CTA of 8 kNT weight rows, 2x the weight
// bytes at 32 tokens and 16 rows. grouped_gemv_shared stages them in shared memory instead and
// gives the CTA's warps different weight rows over the same contraction range, so each token
// byte leaves L2 once per kWarps * kNT * 8 weight rows:
//  - a CTA is (expert, kWarps * kNT 8-row tiles, part): with kSplit > 1 the plan launches
//    clusters of kSplit CTAs that take consecutive kChunk-aligned ranges of D and sum their fp32
//    fragments through distributed shared memory in rank order (deterministic);
//  - the pass's 16 kMT token rows go through in stages of kChunk blocks, double-buffered: the
//    whole CTA copies stage s + 1 with cp.async (16-byte pieces, zero-filled past the group and
//    past D; the scales as one 4-byte copy per row where aligned) while its warps compute stage
//    s; each warp loads its own weight rows of stage s (L2 hits: each CTA first asks L2 for its
//    whole range) before waiting for the stage's tokens;
//  - a stage's token rows sit kPitch bytes apart, kPitch = 8 words mod 32, so a half-warp's
//    8-byte reads (8 rows g, 4 lanes q) hit 32 distinct banks.

/// Op, kMT 16-token tiles per pass, kNT 8-row weight tiles per warp, kWarps warps (each its own
/// rows), kChunk 32-byte blocks per stage, kSplit CTAs per cluster over D, kMinBlocks, kPrefetch
/// (as GemvConfig). The plan launches E * ceil(ceil(O / 8) / (kWarps kNT)) * kSplit CTAs in
/// clusters of kSplit, kThreads each, with kSmemBytes of shared memory.
template <class TOp, int kMTiles, int kNTiles, int kNWarps, int kNChunk = 4, int kNSplit = 1,
          int kNMinBlocks = 2, bool kNPrefetch = true>
struct GemvSharedConfig {
  using Op = TOp;
  static constexpr int kMT = kMTiles, kNT = kNTiles, kWarps = kNWarps, kChunk = kNChunk;
  static constexpr int kSplit = kNSplit, kMinBlocks = kNMinBlocks;
  static constexpr bool kPrefetch = kNPrefetch;
  static_assert(kMT >= 1 && kMT <= 4 && kNT >= 1 && kNT <= 4, "registers");
  static_assert(kChunk == 1 || kChunk == 2 || kChunk == 4 || kChunk == 8, "stage blocks");
  static_assert(!Op::kScaled || kChunk <= 4, "Mx: a stage's scales are one word per row");
  static_assert(kSplit >= 1 && kSplit <= 8, "a portable cluster");
  static constexpr int kThreads = 32 * kWarps;
  static_assert(kThreads <= 1024, "whole CTA");
  static constexpr int kRows = 16 * kMT;                                   // tokens per pass
  static constexpr int kPieces = kChunk * 2;                               // 16 B per row
  static constexpr int kPitch = kChunk * 32 + ((8 - kChunk * 8) & 31) * 4;  // bytes per row
  static_assert((kPitch / 4) % 32 == 8 && kPitch % 16 == 0, "conflict-free 8-byte reads");
  static constexpr int kStageBytes = kRows * kPitch + (Op::kScaled ? kRows * 4 : 0);
  static constexpr int kRedBytes = kSplit > 1 ? kWarps * kMT * kNT * 32 * 16 : 0;
  static constexpr int kSmemBytes = 2 * kStageBytes + kRedBytes;
};

/// The whole CTA: stage [j0, j1) of the pass's token rows p0 .. (x rows, xs scale rows; row
/// length row_bytes, nb blocks) into the stage buffer at shared address buf, as cp.async.
/// Rows past t_end and blocks past j1 are zeros; their scales 0x7F (never special).
template <class Cfg>
__device__ __forceinline__ void stage_tokens(unsigned buf, const unsigned char* x,
                                             const unsigned char* xs, long long row_bytes,
                                             int nb, int p0, int t_end, int j0, int j1) {
  for (int i = threadIdx.x; i < Cfg::kRows * Cfg::kPieces; i += Cfg::kThreads) {
    const int row = i / Cfg::kPieces, piece = i % Cfg::kPieces;
    const int t = p0 + row, j = j0 + piece / 2;
    const bool valid = t < t_end && j < j1;
    const unsigned char* src = valid ? x + t * row_bytes + j0 * 32 + piece * 16 : x;
    cp_async16(buf + row * Cfg::kPitch + piece * 16, src, valid);
  }
  if constexpr (Cfg::Op::kScaled) {
    const unsigned sbuf = buf + Cfg::kRows * Cfg::kPitch;
    const bool words = j1 - j0 == Cfg::kChunk && Cfg::kChunk == 4 && nb % 4 == 0;
    for (int row = threadIdx.x; row < Cfg::kRows; row += Cfg::kThreads) {
      const int t = p0 + row;
      if (t < t_end && words) {
        cp_async4(sbuf + row * 4, xs + static_cast<long long>(t) * nb + j0);
      } else {
        unsigned v = kUnitScales;  // rows past the group
        if (t < t_end) {
          v = 0;  // blocks past j1: 0x00, skipped by the compute
#pragma unroll
          for (int u = 0; u < Cfg::kChunk; ++u) {
            if (j0 + u < j1) {
              v |= load_global_nc_small<1>(xs + static_cast<long long>(t) * nb + j0 + u) << (8 * u);
            }
          }
        }
        asm volatile("st.shared.u32 [%0], %1;" ::"r"(sbuf + row * 4), "r"(v) : "memory");
      }
    }
  }
}

/// One warp: its weight words for blocks [j0, j1) (rows w + nt * d8, this lane's 8 bytes), and
/// (Mx) the scale words of its fragment columns.
template <class Cfg>
__device__ __forceinline__ void load_weights(const GemvRows& r, int j0, int j1,
                                             unsigned (&wv)[Cfg::kChunk][Cfg::kNT][2],
                                             unsigned (&wsw)[Cfg::kNT][2]) {
#pragma unroll
  for (int u = 0; u < Cfg::kChunk; ++u) {
#pragma unroll
    for (int nt = 0; nt < Cfg::kNT; ++nt) {
      wv[u][nt][0] = wv[u][nt][1] = 0u;
      if (j0 + u < j1 && nt < r.w_tiles) {
        load_global8_nc<true>(wv[u][nt], r.w + nt * r.d8 + (j0 + u) * 32);
      }
    }
  }
  if constexpr (Cfg::Op::kScaled) {
    const bool full = j1 - j0 == Cfg::kChunk && r.nb % Cfg::kChunk == 0;
#pragma unroll
    for (int nt = 0; nt < Cfg::kNT; ++nt) {
#pragma unroll
      for (int k = 0; k < 2; ++k) {
        const unsigned char* row = r.ws + (8 * nt + k) * r.nb;
        // Blocks past j1 read as 0x00 (skipped by the compute).
        wsw[nt][k] = nt >= r.w_tiles ? kUnitScales
                     : full          ? load_scale_word<Cfg::kChunk>(row, j0, r.nb, true)
                                     : load_scale_word<Cfg::kChunk>(row, j0, j1, false);
      }
    }
  }
}

/// One warp: the stage at shared address buf (blocks [j0, j1)) against its weight words.
template <class Cfg>
__device__ __forceinline__ void compute_stage(unsigned buf, int j0, int j1,
                                              const unsigned (&wv)[Cfg::kChunk][Cfg::kNT][2],
                                              const unsigned (&wsw)[Cfg::kNT][2],
                                              float (&acc)[Cfg::kMT][Cfg::kNT][4]) {
  constexpr int kMT = Cfg::kMT, kNT = Cfg::kNT;
  const int lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
  unsigned xsw[kMT][2];
  bool plain = true;
  if constexpr (Cfg::Op::kScaled) {
    const unsigned sbuf = buf + Cfg::kRows * Cfg::kPitch;
    bool special = false;
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        xsw[mt][h] = load_shared4(sbuf + (16 * mt + 8 * h + g) * 4);
        special |= e8m0_special<Cfg::kChunk>(xsw[mt][h]);
      }
    }
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
      special |= e8m0_special<Cfg::kChunk>(wsw[nt][0]) | e8m0_special<Cfg::kChunk>(wsw[nt][1]);
    }
    plain = !__any_sync(0xFFFFFFFFu, special);
  }
#pragma unroll
  for (int u = 0; u < Cfg::kChunk; ++u) {
    if (j0 + u >= j1) break;  // warp-uniform
    unsigned xv[kMT][2][2];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const unsigned a = buf + (16 * mt + 8 * h + g) * Cfg::kPitch + u * 32 + 8 * q;
        asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];"
                     : "=r"(xv[mt][h][0]), "=r"(xv[mt][h][1])
                     : "r"(a));
      }
    }
    if constexpr (Cfg::Op::kScaled) {
      mx_block<Cfg>(xv, wv[u], xsw, wsw, u, plain, acc);
    } else {
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
          GemvBf16::mma(acc[mt][nt], xv[mt][0][0], xv[mt][1][0], xv[mt][0][1], xv[mt][1][1],
                   wv[u][nt][0], wv[u][nt][1]);
        }
      }
    }
  }
}

/// One CTA of the shared-token form (see above): x, w the operands' bytes, xs, wsc their scales
/// (Mx), D in elements, smem: Cfg::kSmemBytes. offs == nullptr: one group of M tokens (E = 1, a
/// dense small-M GEMM). Every thread calls it.
template <class Cfg>
__device__ __forceinline__ void grouped_gemv_shared(const unsigned char* __restrict__ x,
                                                    const unsigned char* __restrict__ xs,
                                                    const unsigned char* __restrict__ w,
                                                    const unsigned char* __restrict__ wsc,
                                                    const int* __restrict__ offs,
                                                    __nv_bfloat16* __restrict__ out, int E,
                                                    int O, int D, unsigned char* smem,
                                                    int M = 0) {
  constexpr int kMT = Cfg::kMT, kNT = Cfg::kNT, kChunk = Cfg::kChunk, kSplit = Cfg::kSplit;
  require_dynamic_smem(Cfg::kSmemBytes);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, q = lane % 4;
  const int tiles_o = O / 8;
  constexpr int kCtaTiles = Cfg::kWarps * kNT;
  const int slices = (tiles_o + kCtaTiles - 1) / kCtaTiles;
  const int cta = static_cast<int>(blockIdx.x) / kSplit;
  const int part = static_cast<int>(blockIdx.x) % kSplit;  // the cluster rank: 1-D clusters
  const int e = cta / slices;
  const int tile0 = cta % slices * kCtaTiles + warp * kNT;  // this warp's first tile
  if (e >= E) return;
  const int t_begin = offs == nullptr || e == 0 ? 0 : offs[e - 1];
  const int t_end = offs == nullptr ? M : offs[e];
  if (t_begin >= t_end) return;  // an empty group: the whole cluster leaves

  const long long row_bytes = static_cast<long long>(D) * Cfg::Op::kElemBytes;
  const int nb = static_cast<int>(row_bytes / 32);
  const int per = ((nb + kSplit - 1) / kSplit + kChunk - 1) / kChunk * kChunk;
  const int jb = min(nb, part * per), je = min(nb, jb + per);
  const int stages = (je - jb + kChunk - 1) / kChunk;

  GemvRows r;
  const long long wrow0 = static_cast<long long>(e) * O + max(0, min(tile0, tiles_o - 1)) * 8;
  r.w_tiles = max(0, min(kNT, tiles_o - tile0));  // tiles past O: nothing loaded or stored
  if constexpr (Cfg::kPrefetch) {
    // Lane l < 8 kNT asks L2 for its row's part of the range.
    if (lane < 8 * r.w_tiles && je > jb) {
      const long long row = wrow0 + lane;
      bulk_prefetch_l2(w + row * row_bytes + jb * 32, static_cast<unsigned>((je - jb) * 32));
    }
  }
  r.w = w + (wrow0 + g) * row_bytes + 8 * q;
  r.ws = Cfg::Op::kScaled ? wsc + (wrow0 + 2 * q) * nb : nullptr;
  r.d8 = static_cast<int>(8 * row_bytes);
  r.nb = nb;

  const unsigned base = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  float4* red = reinterpret_cast<float4*>(smem + 2 * Cfg::kStageBytes);
  for (int p0 = t_begin; p0 < t_end; p0 += Cfg::kRows) {
    float acc[kMT][kNT][4];
    zero_fragments(acc);
    if (stages > 0) {
      stage_tokens<Cfg>(base, x, xs, row_bytes, nb, p0, t_end, jb, min(je, jb + kChunk));
      cp_async_commit();
    }
    for (int s = 0; s < stages; ++s) {
      const int j0 = jb + s * kChunk, j1 = min(je, j0 + kChunk);
      if (s + 1 < stages) {
        // Buffer (s + 1) % 2 was stage s - 1's, released by the barrier that ended it.
        stage_tokens<Cfg>(base + ((s + 1) % 2) * Cfg::kStageBytes, x, xs, row_bytes, nb, p0,
                          t_end, j1, min(je, j1 + kChunk));
        cp_async_commit();
      }
      // The warp's weights for stage s (L2 hits after the prefetch): their latency runs under
      // the wait for the stage's tokens.
      unsigned wv[kChunk][kNT][2], wsw[kNT][2] = {};
      load_weights<Cfg>(r, j0, j1, wv, wsw);
      if (s + 1 < stages) {
        cp_async_wait<1>();
      } else {
        cp_async_wait<0>();
      }
      __syncthreads();  // stage s is in shared memory for every warp
      if (r.w_tiles > 0) {
        compute_stage<Cfg>(base + (s % 2) * Cfg::kStageBytes, j0, j1, wv, wsw, acc);
      }
      __syncthreads();  // every warp is done with buffer s % 2
    }

    // c0, c1: token 16 mt + g, columns 2q, 2q + 1 of tile tile0 + nt; c2, c3: token + 8.
    auto store = [&](int mt, int nt, const float4& v) {
      if (nt >= r.w_tiles) return;
      const int col = (tile0 + nt) * 8 + 2 * q;
      const int t0 = p0 + 16 * mt + g;
      if (t0 < t_end) {
        *reinterpret_cast<__nv_bfloat162*>(out + static_cast<long long>(t0) * O + col) =
            __floats2bfloat162_rn(v.x, v.y);
      }
      if (t0 + 8 < t_end) {
        *reinterpret_cast<__nv_bfloat162*>(out + static_cast<long long>(t0 + 8) * O + col) =
            __floats2bfloat162_rn(v.z, v.w);
      }
    };
    if constexpr (kSplit == 1) {
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
          store(mt, nt, make_float4(acc[mt][nt][0], acc[mt][nt][1], acc[mt][nt][2],
                                    acc[mt][nt][3]));
        }
      }
    } else {
      // Fragment (mt, nt) of this warp and lane at red[((warp kMT + mt) kNT + nt) 32 + lane];
      // rank `part` sums every kSplit-th of this warp's fragments over the ranks in order.
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
          red[((warp * kMT + mt) * kNT + nt) * 32 + lane] =
              make_float4(acc[mt][nt][0], acc[mt][nt][1], acc[mt][nt][2], acc[mt][nt][3]);
        }
      }
      cluster_sync();  // every rank's partials are in its red
#pragma unroll
      for (int f = 0; f < kMT * kNT; ++f) {
        if (f % kSplit != part) continue;
        const int mt = f / kNT, nt = f % kNT;
        const float4* slot = red + ((warp * kMT + mt) * kNT + nt) * 32 + lane;
        float4 sum = cluster_load_f4(slot, 0);
        for (int rk = 1; rk < kSplit; ++rk) {
          const float4 v = cluster_load_f4(slot, rk);
          sum.x += v.x;
          sum.y += v.y;
          sum.z += v.z;
          sum.w += v.w;
        }
        store(mt, nt, sum);
      }
      cluster_sync();  // no rank rewrites its red (next pass) or leaves while it is read
    }
  }
}

}  // namespace ws::ggv

// A kernel file's two Mx GEMV entry points: NAME (grouped_gemv on CFG) and SHARED_NAME
// (grouped_gemv_shared on SHARED_CFG), both taking (x, xs, w, wsc, offs, out, E, O, D) in the
// plan's order.
#define WS_GROUPED_GEMV_MX_KERNELS(NAME, SHARED_NAME, CFG, SHARED_CFG)                          \
  extern "C" __global__ void __launch_bounds__(CFG::kThreads, CFG::kMinBlocks) NAME(             \
      const unsigned char* __restrict__ x, const unsigned char* __restrict__ xs,                  \
      const unsigned char* __restrict__ w, const unsigned char* __restrict__ wsc,                 \
      const int* __restrict__ offs, __nv_bfloat16* __restrict__ out, int E, int O, int D) {      \
    extern __shared__ float4 gemv_red[]; /* CFG::kRedBytes */                                    \
    ws::ggv::grouped_gemv<CFG>(x, xs, w, wsc, offs, out, E, O, D, gemv_red);                      \
  }                                                                                               \
  extern "C" __global__ void __launch_bounds__(SHARED_CFG::kThreads, SHARED_CFG::kMinBlocks)    \
      SHARED_NAME(const unsigned char* __restrict__ x, const unsigned char* __restrict__ xs,      \
                  const unsigned char* __restrict__ w, const unsigned char* __restrict__ wsc,     \
                  const int* __restrict__ offs, __nv_bfloat16* __restrict__ out, int E, int O,    \
                  int D) {                                                                        \
    extern __shared__ __align__(16) unsigned char gemv_smem[]; /* SHARED_CFG::kSmemBytes */      \
    ws::ggv::grouped_gemv_shared<SHARED_CFG>(x, xs, w, wsc, offs, out, E, O, D, gemv_smem);       \
  }

// warpsmith device library: MXFP8 block quantizers on bf16 data held in registers, the two
// layouts the hand-tuned kernels use. A 32-element block is either spread over a lane quad (one
// Chunk of 8 elements per lane: rowwise) or held by one lane as 32 words, each a bf16 pair of two
// adjacent columns (colwise, two blocks at once). Scales and NaN handling follow ws/mx.cuh.
#pragma once

#include "ws/bf16.cuh"
#include "ws/memory.cuh"
#include "ws/mx.cuh"

namespace ws {
namespace mx {

/// amax of 8 bf16 as magnitude bits (integer order = magnitude order, NaN above Inf).
__device__ __forceinline__ unsigned amax_bf16x8(const Chunk& c) {
  const unsigned m2 = max_u16x2(max_u16x2(c.w[0] & 0x7FFF7FFFu, c.w[1] & 0x7FFF7FFFu),
                                max_u16x2(c.w[2] & 0x7FFF7FFFu, c.w[3] & 0x7FFF7FFFu));
  return max(m2 & 0xFFFFu, m2 >> 16);
}

/// 8 bf16 times r (non-FTZ) -> 8 E4M3 bytes, element i in byte i of lo:hi.
__device__ __forceinline__ void quantize_bf16x8(const Chunk& c, float r, unsigned& lo,
                                                unsigned& hi) {
  unsigned out[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const unsigned w0 = c.w[2 * h], w1 = c.w[2 * h + 1];
    out[h] = cvt_e4m3x2(mul_rn_no_ftz(bf16_lo(w0), r), mul_rn_no_ftz(bf16_hi(w0), r)) |
             (cvt_e4m3x2(mul_rn_no_ftz(bf16_lo(w1), r), mul_rn_no_ftz(bf16_hi(w1), r)) << 16);
  }
  lo = out[0];
  hi = out[1];
}

/// amax of a block spread over a lane quad (lanes 4k .. 4k+3, 8 elements each), in all 4 lanes.
/// Shuffles: every lane of the warp must call it.
__device__ __forceinline__ unsigned amax_quad(const Chunk& c) {
  unsigned amax = amax_bf16x8(c);
  amax = max(amax, __shfl_xor_sync(kFullMask, amax, 1));
  amax = max(amax, __shfl_xor_sync(kFullMask, amax, 2));
  return amax;
}

/// One block spread over a lane quad (lanes 4k .. 4k+3, 8 elements each): returns the block's
/// scale (the same in the 4 lanes) and this lane's 8 E4M3 bytes. Shuffles: every lane of the
/// warp must call it. kSelect: the branch-free rceil scale (block_scale).
template <bool kFloor, bool kSelect = false>
__device__ __forceinline__ unsigned quantize_quad(const Chunk& c, unsigned& lo, unsigned& hi) {
  const unsigned amax = amax_quad(c);
  bool special;
  const unsigned s = block_scale<kFloor, kSelect>(amax, &special);
  unsigned out[2];
  quantize_bf16x8(c, scale_reciprocal(special ? 0u : s), out[0], out[1]);
  lo = special ? kE4M3NaNx4 : out[0];
  hi = special ? kE4M3NaNx4 : out[1];
  return s;
}

/// One block spread over a lane pair (lanes 2k, 2k+1, 16 elements each: lo then hi): returns the
/// block's scale (the same in both lanes) and this lane's 16 E4M3 bytes. Shuffles: every lane of
/// the warp must call it.
template <bool kFloor>
__device__ __forceinline__ unsigned quantize_pair(const Chunk& lo, const Chunk& hi,
                                                  unsigned (&out)[4]) {
  unsigned amax = max(amax_bf16x8(lo), amax_bf16x8(hi));
  amax = max(amax, __shfl_xor_sync(kFullMask, amax, 1));
  bool special;
  const unsigned s = block_scale<kFloor>(amax, &special);
  const float r = scale_reciprocal(special ? 0u : s);
  quantize_bf16x8(lo, r, out[0], out[1]);
  quantize_bf16x8(hi, r, out[2], out[3]);
  if (special) out[0] = out[1] = out[2] = out[3] = kE4M3NaNx4;
  return s;
}

/// Pair pi of a row-major bf16 tile in shared memory with no row padding (elements 16 pi ..
/// 16 pi + 15: the chunks at tile + 32 pi and + 16), as lo and hi. The chunk of parity
/// (pi >> 2) & 1 is read first, so 8 consecutive pairs (a quarter warp) hit 8 distinct bank groups.
__device__ __forceinline__ void load_pair_shared(unsigned tile, int pi, Chunk& lo, Chunk& hi) {
  const int sw = (pi >> 2) & 1;
  const unsigned src = tile + 32u * pi;
  const Chunk a = load_shared16(src + 16 * sw), b = load_shared16(src + 16 * (1 - sw));
#pragma unroll
  for (int w = 0; w < 4; ++w) {
    lo.w[w] = sw ? b.w[w] : a.w[w];
    hi.w[w] = sw ? a.w[w] : b.w[w];
  }
}

/// As quantize_column_pair, into registers: qa / qb get column 2p's / 2p+1's 32 E4M3 bytes (row
/// 4k+i in byte i of word k), s_lo / s_hi their scales; the caller stages or stores them.
template <bool kFloor, bool kSelect = false>
__device__ __forceinline__ void quantize_column_pair_regs(const unsigned (&v)[32], unsigned (&qa)[8],
                                                          unsigned (&qb)[8], unsigned& s_lo,
                                                          unsigned& s_hi) {
  unsigned m2 = 0;
#pragma unroll
  for (int j = 0; j < 32; ++j) m2 = max_u16x2(m2, v[j] & 0x7FFF7FFFu);
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const unsigned amax = half == 0 ? (m2 & 0xFFFFu) : (m2 >> 16);
    bool special;
    const unsigned s = block_scale<kFloor, kSelect>(amax, &special);
    const float r = scale_reciprocal(special ? 0u : s);
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const unsigned a = v[4 * k], b = v[4 * k + 1], c = v[4 * k + 2], d = v[4 * k + 3];
      unsigned lo16, hi16;
      if (half == 0) {
        lo16 = cvt_e4m3x2(mul_rn_no_ftz(bf16_lo(a), r), mul_rn_no_ftz(bf16_lo(b), r));
        hi16 = cvt_e4m3x2(mul_rn_no_ftz(bf16_lo(c), r), mul_rn_no_ftz(bf16_lo(d), r));
      } else {
        lo16 = cvt_e4m3x2(mul_rn_no_ftz(bf16_hi(a), r), mul_rn_no_ftz(bf16_hi(b), r));
        hi16 = cvt_e4m3x2(mul_rn_no_ftz(bf16_hi(c), r), mul_rn_no_ftz(bf16_hi(d), r));
      }
      const unsigned word = special ? kE4M3NaNx4 : (lo16 | (hi16 << 16));
      if (half == 0) {
        qa[k] = word;
      } else {
        qb[k] = word;
      }
    }
    if (half == 0) {
      s_lo = s;
    } else {
      s_hi = s;
    }
  }
}

/// Two adjacent columns of 32 rows: v[j] holds row j (low half: column 2p, high: 2p+1). Stores
/// each column's 32 E4M3 bytes (two 16-byte stores; qt_lo, qt_hi 16-byte aligned) and its scale
/// byte. kStreaming: st.global.cs.
template <bool kFloor, bool kStreaming>
__device__ __forceinline__ void quantize_column_pair(const unsigned (&v)[32], unsigned char* qt_lo,
                                                     unsigned char* qt_hi, unsigned char* s_lo,
                                                     unsigned char* s_hi) {
  unsigned m2 = 0;
#pragma unroll
  for (int j = 0; j < 32; ++j) m2 = max_u16x2(m2, v[j] & 0x7FFF7FFFu);
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const unsigned amax = half == 0 ? (m2 & 0xFFFFu) : (m2 >> 16);
    bool special;
    const unsigned s = block_scale<kFloor>(amax, &special);
    const float r = scale_reciprocal(special ? 0u : s);
    unsigned out[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const unsigned a = v[4 * k], b = v[4 * k + 1], c = v[4 * k + 2], d = v[4 * k + 3];
      unsigned lo16, hi16;
      if (half == 0) {
        lo16 = cvt_e4m3x2(mul_rn_no_ftz(bf16_lo(a), r), mul_rn_no_ftz(bf16_lo(b), r));
        hi16 = cvt_e4m3x2(mul_rn_no_ftz(bf16_lo(c), r), mul_rn_no_ftz(bf16_lo(d), r));
      } else {
        lo16 = cvt_e4m3x2(mul_rn_no_ftz(bf16_hi(a), r), mul_rn_no_ftz(bf16_hi(b), r));
        hi16 = cvt_e4m3x2(mul_rn_no_ftz(bf16_hi(c), r), mul_rn_no_ftz(bf16_hi(d), r));
      }
      out[k] = special ? kE4M3NaNx4 : (lo16 | (hi16 << 16));
    }
    unsigned char* dst = half == 0 ? qt_lo : qt_hi;
    store_global16<kStreaming>(dst, out[0], out[1], out[2], out[3]);
    store_global16<kStreaming>(dst + 16, out[4], out[5], out[6], out[7]);
    *(half == 0 ? s_lo : s_hi) = static_cast<unsigned char>(s);
  }
}

}  // namespace mx
}  // namespace ws

/* warpsmith:plan
{ "knobs":  { "THREADS": [256] },
  "launch": [ { "kernel": "sm90_mxfp8_bf16_dequantize_naive",
                "grid":  ["ceil_div(M * K, THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["q", "scales", "y", "M", "K"] } ] }
*/
// Trusted GPU reference for mxfp8_dequantize: one thread per element, the rules of spec.json with
// integer bit logic only (no floating-point instruction at all). The value is sig * 2^E with a
// 4-bit integer significand; the bf16 result is written from (sign, sig, E) directly: exact for
// normal bf16 results, round-to-nearest-even on bf16's subnormal grid (2^-133), +-Inf at 2^128.
// Slow by design; never tune this file.
//
// Checked against problems/mxfp8_dequantize/reference.cc (which uses an fp32 multiply and a bf16
// rounding of its bits: a different route to the same bits) by `warpsmith problems verify`.

#ifndef THREADS
#define THREADS 256
#endif

namespace {

constexpr int kBlock = 32;               // elements per scale
constexpr unsigned kBf16NaN = 0x7FC0u;
constexpr unsigned kBf16Inf = 0x7F80u;

// Position of the highest set bit of a non-zero value.
__device__ int highest_bit(unsigned v) {
  int p = 0;
  while (v >>= 1) ++p;
  return p;
}

__device__ unsigned dequantize(unsigned q, unsigned s) {
  if (s == 0xFFu || (q & 0x7Fu) == 0x7Fu) return kBf16NaN;
  const unsigned sign = (q & 0x80u) << 8;
  const int e = static_cast<int>((q >> 3) & 0xFu);
  const unsigned m = q & 7u;
  // E4M3 value = sig * 2^ex: normals (8 + m) * 2^(e - 10), subnormals m * 2^-9.
  const unsigned sig = e == 0 ? m : 8u + m;
  const int ex = e == 0 ? -9 : e - 10;
  if (sig == 0) return sign;  // +-0
  // Times 2^(s - 127): s = 0 is 2^-127 by the same formula.
  const int big_e = ex + static_cast<int>(s) - 127;
  const int h = highest_bit(sig);  // 0..3
  const int u = h + big_e;         // floor(log2 |value|)
  if (u >= 128) return sign | kBf16Inf;
  if (u >= -126) {
    // Normal bf16: 7 mantissa bits hold the 3 below the leading one exactly.
    const unsigned mant = (sig << (7 - h)) & 0x7Fu;
    return sign | (static_cast<unsigned>(u + 127) << 7) | mant;
  }
  // Subnormal bf16: the value in quanta of 2^-133 is sig * 2^(big_e + 133).
  const int up = big_e + 133;
  if (up >= 0) return sign | (sig << up);  // < 128 quanta here: a plain subnormal code
  const int sh = -up;
  if (sh > 4) return sign;  // below half a quantum: sig < 16 <= 2^(sh - 1)
  unsigned n = sig >> sh;
  const unsigned rem = sig - (n << sh);
  const unsigned half = 1u << (sh - 1);
  if (rem > half || (rem == half && (n & 1u))) ++n;
  return sign | n;
}

}  // namespace

// q (M,K) e4m3, scales (M,K/32) e8m0, y (M,K) bf16 bits; one thread per element.
extern "C" __global__ void sm90_mxfp8_bf16_dequantize_naive(const unsigned char* q,
                                                            const unsigned char* scales,
                                                            unsigned short* y, int M, int K) {
  const long long n = static_cast<long long>(M) * K;
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  // K % 32 == 0: blocks run flat through memory, element i's scale is scales[i / 32].
  y[i] = static_cast<unsigned short>(dequantize(q[i], scales[i / kBlock]));
}

/* warpsmith:plan
{ "knobs":  { "THREADS": [256] },
  "launch": [ { "kernel": "sm90_bf16_dswiglu_mxfp8_quantize_rows_naive",
                "grid":  ["ceil_div(M * (2 * I / 32), THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["hpre", "da", "q", "scales", "M", "I"] },
              { "kernel": "sm90_bf16_dswiglu_mxfp8_quantize_cols_naive",
                "grid":  ["ceil_div(2 * I * (M / 32), THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["hpre", "da", "q_t", "scales_t", "M", "I"] } ] }
*/
// Trusted GPU reference for swiglu_quantize_bwd: one thread per 32-element block of dhpre, rowwise
// then columnwise. Each thread computes its 32 gradients in double exactly as reference.cc does
// (explicitly rounded operations in the same order, no contraction; exp from libdevice, which may
// differ from the C library's in the last bit of a double, far below the fp32 and bf16 roundings
// that follow), then quantizes them by the block rules of mxfp8_quantize_rowwise's reference.cu
// (integer bit logic). Slow by design; never tune this file.

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR) || \
    !defined(WS_VARIANT) || !defined(WS_VARIANT_STANDARD) || !defined(WS_VARIANT_CLAMPED)
#error "compile with the problem's parameters: -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1 -DWS_VARIANT=<0|1> -DWS_VARIANT_STANDARD=0 -DWS_VARIANT_CLAMPED=1"
#endif
#ifndef THREADS
#define THREADS 256
#endif

namespace {

constexpr int kBlock = 32;               // elements per scale
constexpr unsigned kE8M0NaN = 0xFF;
constexpr unsigned kE4M3NaN = 0x7F;
constexpr unsigned kE4M3Max = 0x7E;      // 448
constexpr unsigned kF32Inf = 0x7F800000u;
constexpr unsigned kF32_448 = 0x43E00000u;

__device__ float bits_to_float(unsigned b) { return __uint_as_float(b); }

// fp32 multiply, round to nearest even, subnormals kept (the rules' arithmetic).
__device__ float mul_f32(float a, float b) {
  float d;
  asm("mul.rn.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  return d;
}

// Position of the highest set bit of a non-zero value.
__device__ int highest_bit(unsigned v) {
  int p = 0;
  while (v >>= 1) ++p;
  return p;
}

// floor(log2(a)) of a finite non-zero bf16 magnitude, exact from its bits.
__device__ int floor_log2_bf16(unsigned a) {
  const int e = static_cast<int>(a >> 7);
  if (e != 0) return e - 127;
  return highest_bit(a & 0x7F) - 133;  // subnormal: value = mantissa * 2^-133
}

__device__ unsigned scale_rceil(unsigned amax_bf16) {
  const float d = mul_f32(bits_to_float(amax_bf16 << 16), 1.0f / 448.0f);
  const unsigned db = __float_as_uint(d);
  if (db == kF32Inf) return 254;
  // The smallest s with 2^(s-127) >= d, by search. Compare fp32 bit patterns, which order
  // non-negative values; 2^-127 (s = 0) is the subnormal 0x00400000.
  for (unsigned s = 0; s < 254; ++s) {
    const unsigned pow2 = s == 0 ? 0x00400000u : (s << 23);
    if (pow2 >= db) return s;
  }
  return 254;
}

__device__ unsigned scale_floor(unsigned amax_bf16) {
  if (amax_bf16 == 0) return 0;
  int s = floor_log2_bf16(amax_bf16) - 8 + 127;
  if (s < 0) s = 0;
  if (s > 254) s = 254;
  return static_cast<unsigned>(s);
}

// fp32 -> E4M3, round to nearest even, saturating to +-448 (Inf too). The sign is kept (-0 -> 0x80).
__device__ unsigned e4m3_from_f32(float v) {
  const unsigned bits = __float_as_uint(v);
  const unsigned sign = (bits >> 24) & 0x80;
  const unsigned a = bits & 0x7FFFFFFFu;
  if (a > kF32Inf) return sign | kE4M3NaN;
  if (a >= kF32_448) return sign | kE4M3Max;  // 448 itself, above (rounds or saturates), Inf
  const int ue = static_cast<int>(a >> 23) - 127;  // fp32 subnormals: tiny, handled below
  if (ue < -10) return sign;                        // |v| < 2^-10: half the smallest subnormal
  const unsigned sig = (a & 0x7FFFFF) | 0x800000;   // |v| = sig * 2^(ue-23)
  // E4M3 step: 2^(ue-3) for normals (ue >= -6), 2^-9 for subnormals.
  const int step_exp = (ue >= -6 ? ue : -6) - 3;
  const int shift = step_exp - (ue - 23);  // 20..24
  unsigned steps = sig >> shift;
  const unsigned rem = sig - (steps << shift);
  const unsigned half = 1u << (shift - 1);
  if (rem > half || (rem == half && (steps & 1))) ++steps;
  // steps counts multiples of 2^step_exp: for normals 8..16 (16 carries to the next binade),
  // encode = (biased exponent - 1) * 8 + steps; for subnormals step_exp = -9 and encode = steps.
  const unsigned code = static_cast<unsigned>((step_exp + 9) * 8) + steps;
  return sign | (code > kE4M3Max ? kE4M3Max : code);
}

// One 32-element block, element i at x[i * x_stride], q[i * q_stride]; returns the scale byte.
// The rules of problems/mxfp8_quantize_rowwise/reference.cc, spelled out with integer bit logic.
__device__ unsigned quantize_block(const unsigned short* x, long long x_stride, unsigned char* q,
                                   long long q_stride) {
  unsigned amax = 0;  // bf16 magnitude bits
  bool nan = false;
  for (int i = 0; i < kBlock; ++i) {
    const unsigned a = x[i * x_stride] & 0x7FFFu;
    if (a > 0x7F80u) nan = true;
    else if (a > amax) amax = a;
  }
  unsigned s;
  if (nan) {
    s = kE8M0NaN;
  } else if (WS_ROUNDING == WS_ROUNDING_FLOOR) {
    s = amax == 0x7F80u ? kE8M0NaN : scale_floor(amax);
  } else {
    s = scale_rceil(amax);
  }
  if (s == kE8M0NaN) {
    for (int i = 0; i < kBlock; ++i) q[i * q_stride] = kE4M3NaN;
    return s;
  }
  const float r = bits_to_float(s == 254 ? 0x00400000u : (254u - s) << 23);  // 2^(127-S)
  for (int i = 0; i < kBlock; ++i) {
    const float v = bits_to_float(static_cast<unsigned>(x[i * x_stride]) << 16);
    q[i * q_stride] = static_cast<unsigned char>(e4m3_from_f32(mul_f32(v, r)));
  }
  return s;
}

}  // namespace

namespace {
// fp32 -> bf16 bits, RNE; NaN -> 0x7FC0 (reference.cc's FloatToBf16).
__device__ unsigned short bf16_rne(float v) {
  unsigned b = __float_as_uint(v);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0;
  b += 0x7FFFu + ((b >> 16) & 1u);
  return static_cast<unsigned short>(b >> 16);
}
__device__ double bf16_value(unsigned short b) {
  return static_cast<double>(__uint_as_float(static_cast<unsigned>(b) << 16));
}
// double -> fp32 -> bf16, as reference.cc's Round.
__device__ unsigned short round_bf16(double v) { return bf16_rne(__double2float_rn(v)); }

// The double arithmetic of reference.cc, every operation explicitly rounded (no contraction).
__device__ double sigmoid_d(double z) { return __ddiv_rn(1.0, __dadd_rn(1.0, exp(-z))); }
__device__ double clamp_max_d(double v, double hi) { return isnan(v) ? v : (hi < v ? hi : v); }
__device__ double clamp_d(double v, double lo, double hi) {
  return isnan(v) ? v : (v < lo ? lo : (hi < v ? hi : v));
}

constexpr double kLimit = 7.0;
constexpr double kAlpha = 1.702;

}  // namespace

namespace {
// dgate (which = 0) or dup (which = 1) of one element (reference.cc's SwigluBackward).
__device__ unsigned short swiglu_backward(unsigned short g_bits, unsigned short u_bits,
                                          unsigned short da_bits, int which) {
  const double g = bf16_value(g_bits), u = bf16_value(u_bits), da = bf16_value(da_bits);
  if (WS_VARIANT == WS_VARIANT_STANDARD) {
    const double s = sigmoid_d(g);
    if (which == 1) return round_bf16(__dmul_rn(da, __dmul_rn(g, s)));
    const double ds = __dmul_rn(s, __dadd_rn(1.0, __dmul_rn(g, __dadd_rn(1.0, -s))));
    return round_bf16(__dmul_rn(__dmul_rn(da, u), ds));
  }
  const double gc = clamp_max_d(g, kLimit), uc = clamp_d(u, -kLimit, kLimit);
  const double s = sigmoid_d(__dmul_rn(kAlpha, gc));
  if (which == 1) {
    const bool pass_u = u >= -kLimit && u <= kLimit;  // false for NaN
    return pass_u ? round_bf16(__dmul_rn(da, __dmul_rn(gc, s))) : 0;
  }
  if (!(g <= kLimit)) return 0;
  const double ds =
      __dmul_rn(s, __dadd_rn(1.0, __dmul_rn(__dmul_rn(kAlpha, gc), __dadd_rn(1.0, -s))));
  return round_bf16(__dmul_rn(__dmul_rn(da, __dadd_rn(uc, 1.0)), ds));
}

// dhpre[m][c] for c in [0, 2I).
__device__ unsigned short dh_at(const unsigned short* hpre, const unsigned short* da, long long m,
                                long long c, int I) {
  const long long i = c < I ? c : c - I;
  return swiglu_backward(hpre[m * 2 * I + i], hpre[m * 2 * I + I + i], da[m * I + i],
                         c < I ? 0 : 1);
}
}  // namespace

// hpre (M,2I), da (M,I) bf16 bits; q (M,2I), scales (M,2I/32). Thread: row t / (2I/32), block
// t % (2I/32).
extern "C" __global__ void sm90_bf16_dswiglu_mxfp8_quantize_rows_naive(
    const unsigned short* hpre, const unsigned short* da, unsigned char* q, unsigned char* scales,
    int M, int I) {
  const long long blocks = 2LL * I / kBlock;  // per row
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= static_cast<long long>(M) * blocks) return;
  const long long m = t / blocks, b = t % blocks;
  unsigned short v[kBlock];
  for (int j = 0; j < kBlock; ++j) v[j] = dh_at(hpre, da, m, b * kBlock + j, I);
  scales[t] = static_cast<unsigned char>(quantize_block(v, 1, q + m * 2 * I + b * kBlock, 1));
}

// hpre (M,2I), da (M,I); q_t (2I,M), scales_t (2I,M/32). Thread: column t % 2I, block t / 2I.
extern "C" __global__ void sm90_bf16_dswiglu_mxfp8_quantize_cols_naive(
    const unsigned short* hpre, const unsigned short* da, unsigned char* q_t,
    unsigned char* scales_t, int M, int I) {
  const long long blocks = M / kBlock;
  const long long cols = 2LL * I;
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= blocks * cols) return;
  const long long c = t % cols, b = t / cols;
  unsigned short v[kBlock];
  for (int j = 0; j < kBlock; ++j) v[j] = dh_at(hpre, da, b * kBlock + j, c, I);
  scales_t[c * blocks + b] =
      static_cast<unsigned char>(quantize_block(v, 1, q_t + c * M + b * kBlock, 1));
}

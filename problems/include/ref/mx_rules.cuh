// Trusted reference library: the MXFP8 block rules (OCP MX v1.0 with NVIDIA's rceil or the spec's
// floor scale) spelled out with integer bit logic, for the trusted GPU references that quantize
// (problems/*/reference.cu). No hardware conversions: the only floating-point operations are the
// two fp32 multiplies the rules name (amax * fp32(1/448) and x * 2^(127-S)), issued as mul.rn.f32
// without flush-to-zero. Each reference is checked byte for byte against its CPU reference
// (reference.cc) by `warpsmith problems verify`. Candidates never see this folder, and the
// references never include the candidates' library (kernels/include).
//
// The includer defines the rounding parameter (WS_ROUNDING, WS_ROUNDING_RCEIL, WS_ROUNDING_FLOOR).
// Everything is in an anonymous namespace: each reference is one translation unit.
#pragma once

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR)
#error "ref/mx_rules.cuh needs the rounding parameter: -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1"
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

// Input generation: every element of every input tensor is a pure function of (seed, tensor index,
// element index), so the runner generates inputs on the device in parallel and a host replays any
// element bit for bit.
//
// This header is self-contained on purpose: the runner hands its text to NVRTC with no include
// path, and host code (tests) includes it as plain C++. Nothing here may include another file.
//
// Bit-exactness between host and device: every floating-point step goes through the ws_d* and ws_f*
// helpers, which use the explicitly rounded intrinsics on the device (never contracted into FMAs)
// and plain IEEE double or float arithmetic on the host (ISO C++ mode does not contract across
// these calls). Division and square root are correctly rounded on both sides.
//
// Dtype codes follow ws::DType's order; dist codes are kWsDist*.
//
// "mx_blocks" (quantizer inputs) is defined per 32-element block of consecutive elements, or with
// "blocks": "tiles" per 32x32 tile (see ws_mx_lane: columnwise quantizers then meet every kind
// too). A block draws its kind from a hash of (seed, tensor, block); "normal" below means
// mean + stddev * N(0,1)
// with the tensor's mean/stddev (0 and 1 by default):
//   58%  normal * 2^e, e uniform in [-30, 30] (one e per block)
//    8%  normal * 2^e, e in [-133, -120] (float/bf16 subnormals) or [100, 127], clamped to the
//        dtype's largest finite value
//    6%  zeros with random signs (+0 / -0)
//    6%  exact powers of two 2^e, e in [-30, 30], random signs
//    8%  the E4M3 boundary: 448 * 2^k, or one bf16 ulp below/above it (one choice per block, k in
//        [-20, 20]), on one element plus ~1/4 of the others; the rest uniform in +-400 * 2^k
//    6%  one +Inf or -Inf among normal values
//    4%  one NaN (random sign, quiet) among normal values
//    2%  +-bf16 max (0x7F7F) on one element plus ~1/8 of the others, among normal * 2^-10
//    2%  normal, unscaled
#ifndef WS_PROBLEMS_INIT_H_
#define WS_PROBLEMS_INIT_H_

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define WS_HD __host__ __device__
#else
#define WS_HD
#endif

// Dtype codes (the order of ws::DType). Enums, not constants: NVRTC warns about unused
// constexpr variables.
enum WsDtypeCode : int {
  kWsDtypeBF16 = 0,
  kWsDtypeF32 = 1,
  kWsDtypeF16 = 2,
  kWsDtypeFP8E4M3 = 3,
  kWsDtypeFP8E5M2 = 4,
  kWsDtypeE8M0 = 5,
  kWsDtypeU8 = 6,
  kWsDtypeI32 = 7,
  kWsDtypeI64 = 8,
};

enum WsDistCode : int {
  kWsDistNormal = 0,          // p0 = mean, p1 = stddev
  kWsDistUniform = 1,         // p0 = lo, p1 = hi
  kWsDistMxBlocks = 2,        // p0 = mean, p1 = stddev of the normal values
  kWsDistNormalOutliers = 3,  // p0 = mean, p1 = stddev, p2 = outlier fraction, p3 = its scale
  kWsDistTopkIds = 4,         // n0 = experts, n1 = k, p0 = skew
  kWsDistGroupOffsets = 5,    // n0 = total, n1 = align, n2 = G (the element count), p0 = skew,
                              // p1 = empty fraction
};

/// A distribution and its parameters, as the runner's generation kernel takes them.
struct WsInitParams {
  int dist;
  float p0, p1, p2, p3;
  long long n0, n1, n2;
};

// mx_blocks kinds, in the order of the table above.
enum WsMxKind : int {
  kWsMxScaledNormal = 0,
  kWsMxExtreme = 1,
  kWsMxZeros = 2,
  kWsMxPowersOfTwo = 3,
  kWsMxE4M3Boundary = 4,
  kWsMxInf = 5,
  kWsMxNaN = 6,
  kWsMxBf16Max = 7,
  kWsMxPlainNormal = 8,
  kWsMxNumKinds = 9,
};

WS_HD inline int ws_dtype_size(int dtype) {
  switch (dtype) {
    case kWsDtypeBF16: case kWsDtypeF16: return 2;
    case kWsDtypeF32: case kWsDtypeI32: return 4;
    case kWsDtypeI64: return 8;
    default: return 1;
  }
}

// ---- Bits and exactly rounded arithmetic --------------------------------------------------------

WS_HD inline unsigned int ws_f32_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  union { float f; unsigned int u; } v;
  v.f = f;
  return v.u;
#endif
}

WS_HD inline float ws_f32_from_bits(unsigned int u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  union { float f; unsigned int u; } v;
  v.u = u;
  return v.f;
#endif
}

WS_HD inline unsigned long long ws_f64_bits(double d) {
#if defined(__CUDA_ARCH__)
  return static_cast<unsigned long long>(__double_as_longlong(d));
#else
  union { double d; unsigned long long u; } v;
  v.d = d;
  return v.u;
#endif
}

WS_HD inline double ws_f64_from_bits(unsigned long long u) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(u));
#else
  union { double d; unsigned long long u; } v;
  v.u = u;
  return v.d;
#endif
}

WS_HD inline double ws_dadd(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

WS_HD inline double ws_dmul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

WS_HD inline double ws_ddiv(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

WS_HD inline double ws_dsqrt(double a) {
#if defined(__CUDA_ARCH__)
  return __dsqrt_rn(a);
#else
  return __builtin_sqrt(a);
#endif
}

WS_HD inline float ws_d2f(double d) {
#if defined(__CUDA_ARCH__)
  return __double2float_rn(d);
#else
  return static_cast<float>(d);
#endif
}

WS_HD inline float ws_fadd(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

WS_HD inline float ws_fmul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

WS_HD inline float ws_fdiv(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

WS_HD inline float ws_fsqrt(float a) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(a);
#else
  return __builtin_sqrtf(a);
#endif
}

// 2^e as a double, for e in [-1022, 1023].
WS_HD inline double ws_pow2(int e) {
  return ws_f64_from_bits(static_cast<unsigned long long>(e + 1023) << 52);
}

// Round to nearest even integer, for |x| < 2^52.
WS_HD inline double ws_rint(double x) {
  const double big = 4503599627370496.0;  // 2^52
  if (x >= 0) return ws_dadd(ws_dadd(x, big), -big);
  return -ws_dadd(ws_dadd(-x, big), -big);
}

WS_HD inline bool ws_is_nan_f32(float f) {
  unsigned int b = ws_f32_bits(f);
  return (b & 0x7F800000u) == 0x7F800000u && (b & 0x007FFFFFu) != 0;
}

WS_HD inline bool ws_is_inf_f32(float f) { return (ws_f32_bits(f) & 0x7FFFFFFFu) == 0x7F800000u; }

// ---- Counter-based random bits ------------------------------------------------------------------

// The splitmix64 finalizer: a bijection on 64 bits with full avalanche.
WS_HD inline unsigned long long ws_mix64(unsigned long long z) {
  z ^= z >> 30;
  z *= 0xBF58476D1CE4E5B9ull;
  z ^= z >> 27;
  z *= 0x94D049BB133111EBull;
  z ^= z >> 31;
  return z;
}

// Independent streams of draws for one (seed, tensor, index): stream 0 is ws_init_bits itself.
// Element streams and block streams use disjoint stream numbers.
WS_HD inline unsigned long long ws_draw(unsigned long long seed, int tensor_index,
                                        unsigned long long i, unsigned int stream) {
  // Keying by (seed, tensor, stream) first makes i -> bits a bijection for a fixed key, so no two
  // elements of one tensor share their draw.
  unsigned long long key = ws_mix64(
      seed ^ ws_mix64(static_cast<unsigned long long>(static_cast<unsigned int>(tensor_index)) *
                          0x9E3779B97F4A7C15ull +
                      static_cast<unsigned long long>(stream) * 0xE7037ED1A0B428DBull +
                      0xA0761D6478BD642Full));
  // One finalizer per element: the key is already a full-avalanche function of its inputs.
  return ws_mix64(key ^ (i * 0xD6E8FEB86659FD93ull));
}

/// 64 random bits for element i of tensor `tensor_index` under `seed`.
WS_HD inline unsigned long long ws_init_bits(unsigned long long seed, int tensor_index,
                                             unsigned long long i) {
  return ws_draw(seed, tensor_index, i, 0);
}

/// Uniform float in [0, 1) from the top 24 bits.
WS_HD inline float ws_uniform01f(unsigned long long bits) {
  return static_cast<float>(static_cast<unsigned int>(bits >> 40)) * (1.0f / 16777216.0f);
}

/// Uniform double in [0, 1) from the top 53 bits.
WS_HD inline double ws_uniform01(unsigned long long bits) {
  return ws_dmul(static_cast<double>(bits >> 11), 1.0 / 9007199254740992.0);
}

// ln(x) for finite x > 0, to about 1 ulp: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), then
// ln(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.1716, as an odd series to s^21.
WS_HD inline double ws_log(double x) {
  unsigned long long b = ws_f64_bits(x);
  int e = static_cast<int>((b >> 52) & 0x7FF) - 1023;
  double m = ws_f64_from_bits((b & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull);
  if (m > 1.4142135623730951) {
    m = ws_dmul(m, 0.5);
    e += 1;
  }
  double s = ws_ddiv(ws_dadd(m, -1.0), ws_dadd(m, 1.0));
  double s2 = ws_dmul(s, s);
  double p = 1.0 / 21.0;
  const double c[10] = {1.0 / 19.0, 1.0 / 17.0, 1.0 / 15.0, 1.0 / 13.0, 1.0 / 11.0,
                        1.0 / 9.0,  1.0 / 7.0,  1.0 / 5.0,  1.0 / 3.0,  1.0};
  for (int k = 0; k < 10; ++k) p = ws_dadd(ws_dmul(p, s2), c[k]);
  double ln_m = ws_dmul(ws_dmul(2.0, s), p);
  return ws_dadd(ws_dmul(static_cast<double>(e), 0.6931471805599453), ln_m);
}

// The normal draw is in float: input generation runs before every timed run (fresh inputs), and
// float arithmetic runs at full rate on every GPU. Each step is a correctly rounded float
// operation on both sides, so the host still replays it bit for bit.

// ln(x) for finite float x > 0, to about 2 float ulps: x = m * 2^e with m in [sqrt(1/2), sqrt(2)),
// ln(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.1716, as an odd series to s^9.
WS_HD inline float ws_logf(float x) {
  unsigned int b = ws_f32_bits(x);
  int e = static_cast<int>((b >> 23) & 0xFFu) - 127;
  float m = ws_f32_from_bits((b & 0x007FFFFFu) | 0x3F800000u);
  if (m > 1.41421356f) {
    m = ws_fmul(m, 0.5f);
    e += 1;
  }
  float s = ws_fdiv(ws_fadd(m, -1.0f), ws_fadd(m, 1.0f));
  float s2 = ws_fmul(s, s);
  float p = 1.0f / 9.0f;
  p = ws_fadd(ws_fmul(p, s2), 1.0f / 7.0f);
  p = ws_fadd(ws_fmul(p, s2), 1.0f / 5.0f);
  p = ws_fadd(ws_fmul(p, s2), 1.0f / 3.0f);
  p = ws_fadd(ws_fmul(p, s2), 1.0f);
  return ws_fadd(ws_fmul(static_cast<float>(e), 0.693147181f), ws_fmul(ws_fmul(2.0f, s), p));
}

// cos(2 pi u) for u in [0, 1) on a 2^-24 grid: quadrant q and fraction f from u; odd quadrants
// use sin(f pi/2) = cos((1 - f) pi/2) (1 - f is exact), so one Taylor series on [0, pi/2], to
// x^14 (truncation below 1e-10), by Horner on x^2, serves all four.
WS_HD inline float ws_cos_2pif(float u) {
  float t = ws_fmul(u, 4.0f);  // exact
  int q = static_cast<int>(t);
  float f = ws_fadd(t, -static_cast<float>(q));
  if (q & 1) f = ws_fadd(1.0f, -f);
  float x = ws_fmul(f, 1.57079633f);
  float x2 = ws_fmul(x, x);
  float c = -1.0f / 87178291200.0f;
  c = ws_fadd(ws_fmul(c, x2), 1.0f / 479001600.0f);
  c = ws_fadd(ws_fmul(c, x2), -1.0f / 3628800.0f);
  c = ws_fadd(ws_fmul(c, x2), 1.0f / 40320.0f);
  c = ws_fadd(ws_fmul(c, x2), -1.0f / 720.0f);
  c = ws_fadd(ws_fmul(c, x2), 1.0f / 24.0f);
  c = ws_fadd(ws_fmul(c, x2), -0.5f);
  c = ws_fadd(ws_fmul(c, x2), 1.0f);
  return (q == 1 || q == 2) ? -c : c;
}

// Normal values come in pairs: elements i and i + 32 (i with bit 5 clear), so a warp of the
// generation kernel, a thread per pair, covers two whole 32-element blocks, one per half of each
// pair, and stays on one mx_blocks kind in each.
enum : unsigned long long { kWsPairBit = 32 };

/// The pair partner's role: 1 for the element with bit 5 set.
WS_HD inline unsigned int ws_pair_half(unsigned long long i) {
  return static_cast<unsigned int>((i / kWsPairBit) & 1u);
}

/// What Box-Muller shares between the two elements of a pair: the radius from the pair's draw
/// (the first element's stream-0 draw: u1 in (0, 1] from the high 32 bits, tails to 6.7 sigma)
/// and the angle's 24-bit grid index (bits 8-31).
struct WsNormalPair {
  float r;
  unsigned int k;
};

WS_HD inline WsNormalPair ws_normal_pair(unsigned long long bits) {
  const unsigned int hi = static_cast<unsigned int>(bits >> 32) | 1u;
  float u1 = ws_fmul(static_cast<float>(hi), 1.0f / 4294967296.0f);  // hi rounds to 24 bits
  return {ws_fsqrt(ws_fmul(-2.0f, ws_logf(u1))), static_cast<unsigned int>(bits) >> 8};
}

/// N(0, 1): the pair's first element r cos(2 pi u), the second (`half` 1) r sin(2 pi u) =
/// r cos(2 pi (u + 3/4)), the angle shifted on the grid (exact): two independent normals.
WS_HD inline double ws_normal_of_pair(const WsNormalPair& p, unsigned int half) {
  const unsigned int k = half ? (p.k + 0xC00000u) & 0xFFFFFFu : p.k;
  const float u = ws_fmul(static_cast<float>(k), 1.0f / 16777216.0f);  // exact
  return static_cast<double>(ws_fmul(p.r, ws_cos_2pif(u)));
}

/// N(0, 1) for element i of tensor `tensor_index`, from its pair's draw.
WS_HD inline double ws_normal_at(unsigned long long seed, int tensor_index, unsigned long long i) {
  return ws_normal_of_pair(ws_normal_pair(ws_draw(seed, tensor_index, i & ~kWsPairBit, 0)),
                           ws_pair_half(i));
}

// ---- Conversions to raw bits --------------------------------------------------------------------

/// float -> bf16 bits, round to nearest even; NaN stays NaN (quieted, sign and top payload kept).
WS_HD inline unsigned short ws_f32_to_bf16(float f) {
  unsigned int b = ws_f32_bits(f);
  if ((b & 0x7F800000u) == 0x7F800000u && (b & 0x007FFFFFu) != 0) {
    return static_cast<unsigned short>((b >> 16) | 0x0040u);
  }
  b += 0x7FFFu + ((b >> 16) & 1u);
  return static_cast<unsigned short>(b >> 16);
}

WS_HD inline float ws_bf16_to_f32(unsigned short h) {
  return ws_f32_from_bits(static_cast<unsigned int>(h) << 16);
}

// float -> a narrow float format with `man_bits` mantissa bits and exponent bias `bias`, round to
// nearest even. A result above `max_finite` becomes `overflow_code` (Inf, or the largest finite
// code when saturating); Inf becomes `inf_code`; NaN becomes `nan_code`. The sign goes to bit
// `sign_bit`.
WS_HD inline unsigned int ws_f32_to_narrow(float f, int man_bits, int bias, double max_finite,
                                           unsigned int overflow_code, unsigned int inf_code,
                                           unsigned int nan_code, int sign_bit) {
  unsigned int b = ws_f32_bits(f);
  unsigned int sign = (b >> 31) << sign_bit;
  if (ws_is_nan_f32(f)) return sign | nan_code;
  if (ws_is_inf_f32(f)) return sign | inf_code;
  double a = static_cast<double>(ws_f32_from_bits(b & 0x7FFFFFFFu));
  if (a == 0.0) return sign;
  int e = static_cast<int>((ws_f64_bits(a) >> 52) & 0x7FF) - 1023;
  int e_min = 1 - bias;
  if (e < e_min) e = e_min;  // subnormal range: the quantum stops shrinking
  double q = ws_rint(ws_dmul(a, ws_pow2(man_bits - e)));  // the value in quanta, hidden bit incl.
  if (ws_dmul(q, ws_pow2(e - man_bits)) > max_finite) return sign | overflow_code;
  // (e + bias - 1) << man_bits + q carries a rounded-up mantissa into the exponent, and gives
  // subnormals (e == e_min, q < 2^man_bits) their plain code.
  unsigned int code = (static_cast<unsigned int>(e + bias - 1) << man_bits) +
                      static_cast<unsigned int>(q);
  return sign | code;
}

/// float -> f16 bits, round to nearest even, IEEE overflow to Inf; NaN stays a quiet NaN.
WS_HD inline unsigned short ws_f32_to_f16(float f) {
  unsigned int nan = 0x7E00u | ((ws_f32_bits(f) >> 13) & 0x03FFu);
  return static_cast<unsigned short>(
      ws_f32_to_narrow(f, 10, 15, 65504.0, 0x7C00u, 0x7C00u, nan, 15));
}

/// float -> OCP E4M3 (FN) bits, round to nearest even, saturating (Inf too) to +-448; NaN -> 0x7F.
WS_HD inline unsigned char ws_f32_to_e4m3(float f) {
  return static_cast<unsigned char>(ws_f32_to_narrow(f, 3, 7, 448.0, 0x7Eu, 0x7Eu, 0x7Fu, 7));
}

/// float -> E5M2 bits, round to nearest even, finite values saturating to +-57344, Inf kept.
WS_HD inline unsigned char ws_f32_to_e5m2(float f) {
  return static_cast<unsigned char>(ws_f32_to_narrow(f, 2, 15, 57344.0, 0x7Bu, 0x7Cu, 0x7Fu, 7));
}

// Largest finite value of a float dtype, as the clamp for generated extremes.
WS_HD inline double ws_dtype_max_finite(int dtype) {
  switch (dtype) {
    case kWsDtypeBF16: return 3.3895313892515355e38;  // 0x7F7F
    case kWsDtypeF16: return 65504.0;
    default: return 3.4028234663852886e38;            // FLT_MAX
  }
}

/// A float value as `dtype`'s raw bits (little-endian in the low bytes). Integers round to nearest
/// even and saturate (NaN -> 0); e8m0 takes the float's exponent field (0 for zero and
/// subnormals, 0xFE for Inf, 0xFF for NaN).
WS_HD inline unsigned long long ws_to_dtype_bits(float f, int dtype) {
  switch (dtype) {
    case kWsDtypeBF16: return ws_f32_to_bf16(f);
    case kWsDtypeF32: return ws_f32_bits(f);
    case kWsDtypeF16: return ws_f32_to_f16(f);
    case kWsDtypeFP8E4M3: return ws_f32_to_e4m3(f);
    case kWsDtypeFP8E5M2: return ws_f32_to_e5m2(f);
    case kWsDtypeE8M0: {
      if (ws_is_nan_f32(f)) return 0xFF;
      if (ws_is_inf_f32(f)) return 0xFE;
      return (ws_f32_bits(f) >> 23) & 0xFF;
    }
    default: break;
  }
  if (ws_is_nan_f32(f)) return 0;
  double v = static_cast<double>(f);
  if (dtype == kWsDtypeU8) {
    if (v <= 0) return 0;
    if (v >= 255) return 255;
    return static_cast<unsigned long long>(ws_rint(v));
  }
  if (dtype == kWsDtypeI32) {
    if (v <= -2147483648.0) return 0x80000000ull;
    if (v >= 2147483647.0) return 0x7FFFFFFFull;
    return static_cast<unsigned int>(static_cast<int>(ws_rint(v)));
  }
  // i64: float has 24 significant bits, so values of 2^52 and up are already integers.
  if (v <= -9223372036854775808.0) return 0x8000000000000000ull;
  if (v >= 9223372036854775807.0) return 0x7FFFFFFFFFFFFFFFull;
  double r = (v > 4503599627370496.0 || v < -4503599627370496.0) ? v : ws_rint(v);
  return static_cast<unsigned long long>(static_cast<long long>(r));
}

// ---- Distributions ------------------------------------------------------------------------------

// Block streams start here; element streams are 0..3.
enum : unsigned int { kWsStreamBlock = 16 };

/// Where element i sits in its mx_blocks block: the block's key and the element's lane (0..31).
/// Row blocks (tile_cols 0): 32 consecutive elements. Tiles (tile_cols = the last dim): a 32x32
/// tile of the [rows, tile_cols] view shares one kind, so the row blocks and the column blocks
/// that a columnwise quantizer reads both see every kind; the lane runs along the tile's
/// diagonals, so each row block and each column block holds one element of each lane.
struct WsMxLane {
  unsigned long long block;
  unsigned int lane;
};

WS_HD inline WsMxLane ws_mx_lane(unsigned long long i, long long tile_cols) {
  if (tile_cols <= 0) return {i >> 5, static_cast<unsigned int>(i & 31u)};
  const unsigned long long cols = static_cast<unsigned long long>(tile_cols);
  unsigned long long row, col;
  if (i <= 0xFFFFFFFFull && cols <= 0xFFFFFFFFull) {  // 32-bit division: a fraction of 64-bit's
    const unsigned int i32 = static_cast<unsigned int>(i), c32 = static_cast<unsigned int>(cols);
    row = i32 / c32;
    col = i32 - static_cast<unsigned int>(row) * c32;
  } else {
    row = i / cols;
    col = i % cols;
  }
  const unsigned long long tiles_per_row = (cols + 31) / 32;
  return {(row >> 5) * tiles_per_row + (col >> 5),
          static_cast<unsigned int>(((row & 31u) + (col & 31u)) & 31u)};
}

/// The kind a block's draw picks (its high 32 bits; the low 32 are its parameters, see
/// ws_mx_blocks_value).
WS_HD inline int ws_mx_kind_of_draw(unsigned long long block_draw) {
  const unsigned int roll = static_cast<unsigned int>(block_draw >> 32) % 100u;
  if (roll < 58) return kWsMxScaledNormal;
  if (roll < 66) return kWsMxExtreme;
  if (roll < 72) return kWsMxZeros;
  if (roll < 78) return kWsMxPowersOfTwo;
  if (roll < 86) return kWsMxE4M3Boundary;
  if (roll < 92) return kWsMxInf;
  if (roll < 96) return kWsMxNaN;
  if (roll < 98) return kWsMxBf16Max;
  return kWsMxPlainNormal;
}

/// The mx_blocks kind of the block (see ws_mx_lane) holding element i.
WS_HD inline int ws_mx_block_kind(unsigned long long seed, int tensor_index, unsigned long long i,
                                  long long tile_cols = 0) {
  return ws_mx_kind_of_draw(
      ws_draw(seed, tensor_index, ws_mx_lane(i, tile_cols).block, kWsStreamBlock));
}

WS_HD inline float ws_clamp_finite(double v, int dtype) {
  double m = ws_dtype_max_finite(dtype);
  if (v > m) v = m;
  if (v < -m) v = -m;
  return ws_d2f(v);
}

/// What element i of an mx_blocks tensor draws: its block's draw, its lane in the block, and
/// its own stream-0 draw.
struct WsMxDraws {
  unsigned long long block;
  unsigned int lane;
  unsigned long long elem;
};

WS_HD inline WsMxDraws ws_mx_draws(unsigned long long seed, int tensor_index, unsigned long long i,
                                   long long tile_cols) {
  const WsMxLane lane = ws_mx_lane(i, tile_cols);
  return {ws_draw(seed, tensor_index, lane.block, kWsStreamBlock), lane.lane,
          ws_draw(seed, tensor_index, i, 0)};
}

// Zeros, powers of two and the E4M3 boundary draw no normal value: a whole block (a warp of the
// generation kernel) skips its cost.
WS_HD inline bool ws_mx_kind_draws_normal(int kind) {
  return kind != kWsMxZeros && kind != kWsMxPowersOfTwo && kind != kWsMxE4M3Boundary;
}

/// An mx_blocks element from its draws (ws_mx_draws), its block's kind (ws_mx_kind_of_draw of
/// the block draw) and, where the kind draws a normal, its pair's WsNormalPair (`half`:
/// ws_pair_half of the element).
///
/// Two draws per element, the cost of generation (it is issue-bound on the hashing): the block's
/// high 32 bits pick its kind; of its low 32, bits 0-4 its special lane and bits 5-31 its other
/// parameters. The element's own draw gives its choices: the sign (bit 0) and bits 1-3 in the
/// kinds with a normal value (the normal, from the pair's draw, uses bits 8-63: independent of
/// them), any bits in the others.
WS_HD inline float ws_mx_blocks_value_of(float mean, float stddev, const WsMxDraws& d, int kind,
                                         const WsNormalPair& np, unsigned int half, int dtype) {
  const unsigned long long hb = d.block, e2 = d.elem;
  const unsigned int pos = static_cast<unsigned int>(hb & 31u);  // the block's special lane
  const unsigned int p = static_cast<unsigned int>(hb) >> 5;     // 27 bits of block parameters
  const bool at_pos = d.lane == pos;
  const unsigned int neg = static_cast<unsigned int>(e2 & 1u) << 31;
  const double normal =
      ws_mx_kind_draws_normal(kind)
          ? ws_dadd(static_cast<double>(mean),
                    ws_dmul(static_cast<double>(stddev), ws_normal_of_pair(np, half)))
          : 0.0;
  switch (kind) {
    case kWsMxScaledNormal: {
      int e = static_cast<int>(p % 61u) - 30;
      return ws_clamp_finite(ws_dmul(normal, ws_pow2(e)), dtype);
    }
    case kWsMxExtreme: {
      int e = (p & 1u) ? 100 + static_cast<int>((p >> 1) % 28u)
                       : -133 + static_cast<int>((p >> 1) % 14u);
      return ws_clamp_finite(ws_dmul(normal, ws_pow2(e)), dtype);
    }
    case kWsMxZeros:
      return ws_f32_from_bits(neg);
    case kWsMxPowersOfTwo: {
      int e = static_cast<int>(static_cast<unsigned int>(e2 >> 1) % 61u) - 30;
      return ws_f32_from_bits(neg | ws_f32_bits(ws_d2f(ws_pow2(e))));
    }
    case kWsMxE4M3Boundary: {
      int k = static_cast<int>(p % 41u) - 20;
      int d = static_cast<int>((p >> 8) % 3u) - 1;
      if (at_pos || ((e2 >> 1) & 3u) == 0) {
        // 448 = 1.75 * 2^8: bf16 exponent field 135 + k, mantissa 0x60; +-1 is one bf16 ulp.
        unsigned int h = static_cast<unsigned int>((((135 + k) << 7) | 0x60) + d);
        return ws_f32_from_bits(neg | (h << 16));
      }
      double u = ws_dadd(ws_dmul(ws_uniform01(e2), 2.0), -1.0);
      return ws_d2f(ws_dmul(ws_dmul(u, 400.0), ws_pow2(k)));
    }
    case kWsMxInf:
      if (at_pos) return ws_f32_from_bits(neg | 0x7F800000u);
      break;
    case kWsMxNaN:
      if (at_pos) {
        // A quiet NaN with a payload bf16 can hold, so every dtype keeps a NaN.
        unsigned int payload = static_cast<unsigned int>((e2 >> 8) & 0x3Fu) << 16;
        return ws_f32_from_bits(neg | 0x7FC00000u | payload);
      }
      break;
    case kWsMxBf16Max:
      if (at_pos || ((e2 >> 1) & 7u) == 0) return ws_f32_from_bits(neg | 0x7F7F0000u);
      return ws_clamp_finite(ws_dmul(normal, 1.0 / 1024.0), dtype);
    default:
      break;
  }
  return ws_clamp_finite(normal, dtype);
}

/// Element i of an mx_blocks tensor, as a float (see the table at the top).
WS_HD inline float ws_mx_blocks_value(float mean, float stddev, unsigned long long seed,
                                      int tensor_index, unsigned long long i, int dtype,
                                      long long tile_cols = 0) {
  const WsMxDraws d = ws_mx_draws(seed, tensor_index, i, tile_cols);
  const int kind = ws_mx_kind_of_draw(d.block);
  const unsigned int half = ws_pair_half(i);
  WsNormalPair np{0.0f, 0u};
  if (ws_mx_kind_draws_normal(kind)) {
    np = ws_normal_pair(half ? ws_draw(seed, tensor_index, i - kWsPairBit, 0) : d.elem);
  }
  return ws_mx_blocks_value_of(mean, stddev, d, kind, np, half, dtype);
}

/// mean + stddev * z, as a float.
WS_HD inline float ws_normal_value(float mean, float stddev, double z) {
  return ws_d2f(ws_dadd(static_cast<double>(mean), ws_dmul(static_cast<double>(stddev), z)));
}

/// Element i of tensor `tensor_index` as raw bits of `dtype` (the low ws_dtype_size bytes).
/// dist: kWsDist*; p0, p1: mean/stddev (normal, mx_blocks) or lo/hi (uniform).
WS_HD inline unsigned long long ws_init_element(int dtype, int dist, float p0, float p1,
                                                unsigned long long seed, int tensor_index,
                                                unsigned long long i) {
  float v;
  if (dist == kWsDistMxBlocks) {
    v = ws_mx_blocks_value(p0, p1, seed, tensor_index, i, dtype);
  } else if (dist == kWsDistUniform) {
    double u = ws_uniform01(ws_init_bits(seed, tensor_index, i));
    double lo = static_cast<double>(p0);
    v = ws_d2f(ws_dadd(lo, ws_dmul(ws_dadd(static_cast<double>(p1), -lo), u)));
  } else {
    v = ws_normal_value(p0, p1, ws_normal_at(seed, tensor_index, i));
  }
  return ws_to_dtype_bits(v, dtype);
}

// ---- MoE routing distributions ------------------------------------------------------------------
//
// topk_ids: row t of [T, k] holds k distinct experts in the order drawn. Draw m of row t takes a
// rank r from the Zipf-like weights w(r) = integral over [r, r+1) of (1 + x)^-skew (inverse
// transform of one uniform u(t, m); skew 0 is uniform) and maps it to the expert p(r), p a
// per-seed permutation of the experts (p(r) = (a r + b) mod E, gcd(a, E) = 1), so the popular
// experts differ between seeds. A draw of an expert already in the row is rejected: exactly
// weighted sampling without replacement. Each element replays its row's draws, O(k^2) work, so
// any number of experts is cheap. After kWsTopkMaxDraws draws (only with extreme skew and k
// near E) the row is completed with the lowest-rank experts not yet in it.
//
// group_offsets: G groups of total / align units each of `align` rows. Group i is empty with
// probability `empty`, else weighs w_i = (1 + r(i))^-skew * (0.5 + v_i), v uniform in [0, 1);
// element g is align * floor(units * W_g / W) (W_g the weights of groups 0..g summed in order, W
// all of them) and the last element is total. Floors of a non-decreasing sequence keep the
// offsets non-decreasing; if every group is empty the last one takes everything.

enum : unsigned int { kWsStreamRouting = 32 };

// exp(x) for x in [-700, 700]: x = k ln2 + r, |r| <= ln2/2, Taylor series of e^r to r^20.
WS_HD inline double ws_exp(double x) {
  if (x < -700.0) return 0.0;
  if (x > 700.0) x = 700.0;
  double k = ws_rint(ws_dmul(x, 1.4426950408889634));
  double r = ws_dadd(ws_dadd(x, -ws_dmul(k, 6.93147180369123816490e-01)),
                     -ws_dmul(k, 1.90821492927058770002e-10));
  // Horner with 1/n! as constants (n! exact in a double up to 22!).
  const double inv_fact[20] = {
      1.0 / 2432902008176640000.0, 1.0 / 121645100408832000.0, 1.0 / 6402373705728000.0,
      1.0 / 355687428096000.0,     1.0 / 20922789888000.0,     1.0 / 1307674368000.0,
      1.0 / 87178291200.0,         1.0 / 6227020800.0,         1.0 / 479001600.0,
      1.0 / 39916800.0,            1.0 / 3628800.0,            1.0 / 362880.0,
      1.0 / 40320.0,               1.0 / 5040.0,               1.0 / 720.0,
      1.0 / 120.0,                 1.0 / 24.0,                 1.0 / 6.0,
      1.0 / 2.0,                   1.0};
  double p = inv_fact[0];
  for (int n = 1; n < 20; ++n) p = ws_dadd(ws_dmul(p, r), inv_fact[n]);
  p = ws_dadd(ws_dmul(p, r), 1.0);
  int ki = static_cast<int>(k);
  // 2^k in two steps keeps each factor normal for k down to -1010.
  int k1 = ki / 2;
  return ws_dmul(ws_dmul(p, ws_pow2(k1)), ws_pow2(ki - k1));
}

WS_HD inline unsigned long long ws_gcd(unsigned long long a, unsigned long long b) {
  while (b != 0) {
    unsigned long long t = a % b;
    a = b;
    b = t;
  }
  return a;
}

// The per-seed permutation r(e) = (a e + b) mod n of [0, n): a and b from the seed.
struct WsAffinePerm {
  unsigned long long a, b, n;
};

WS_HD inline WsAffinePerm ws_affine_perm(unsigned long long seed, int tensor_index,
                                         unsigned long long n) {
  WsAffinePerm p;
  p.n = n;
  const unsigned long long h = ws_draw(seed, tensor_index, 0, kWsStreamRouting);
  p.b = (h >> 32) % n;
  p.a = n > 1 ? 1 + (h & 0xFFFFFFFFull) % (n - 1) : 1;
  while (ws_gcd(p.a, n) != 1) p.a = p.a % (n - 1) + 1;  // gcd(1, n) = 1 ends it
  return p;
}

WS_HD inline unsigned long long ws_perm_apply(WsAffinePerm p, unsigned long long e) {
  // a, e < 2^31: the product fits in 64 bits.
  return (p.a * e + p.b) % p.n;
}

// Draws per row before the fallback; the largest k; draw m uses stream kWsStreamTopkDraw + m.
enum : unsigned int { kWsTopkMaxDraws = 4096, kWsTopkMaxK = 64, kWsStreamTopkDraw = 64 };

/// topk_ids: the rank drawn by draw m of row t, in [0, experts).
WS_HD inline unsigned long long ws_topk_rank(unsigned long long seed, int tensor_index,
                                             unsigned long long experts, double skew,
                                             unsigned long long t, unsigned int m) {
  const double u = ws_uniform01(ws_draw(seed, tensor_index, t, kWsStreamTopkDraw + m));
  const double n = static_cast<double>(experts);
  double x;
  if (skew == 0.0) {
    x = ws_dmul(u, n);
  } else if (skew == 1.0) {
    // F(x) = ln(1 + x) / ln(1 + n)
    x = ws_dadd(ws_exp(ws_dmul(u, ws_log(ws_dadd(1.0, n)))), -1.0);
  } else {
    // F(x) = ((1 + x)^(1-s) - 1) / ((1 + n)^(1-s) - 1)
    const double y = ws_dadd(1.0, -skew);
    const double top = ws_dadd(ws_exp(ws_dmul(y, ws_log(ws_dadd(1.0, n)))), -1.0);
    const double inner = ws_dadd(1.0, ws_dmul(u, top));
    x = inner > 0.0 ? ws_dadd(ws_exp(ws_ddiv(ws_log(inner), y)), -1.0) : 0.0;
  }
  if (!(x >= 0.0)) return 0;
  if (x >= n) return experts - 1;
  return static_cast<unsigned long long>(x);
}

/// topk_ids element i: row i / k, position i % k, as an expert id (k <= kWsTopkMaxK).
WS_HD inline long long ws_topk_id(unsigned long long seed, int tensor_index, long long experts,
                                  long long k, double skew, unsigned long long i) {
  const unsigned long long n = static_cast<unsigned long long>(experts);
  const WsAffinePerm perm = ws_affine_perm(seed, tensor_index, n);
  const unsigned long long t = i / static_cast<unsigned long long>(k);
  const long long j = static_cast<long long>(i % static_cast<unsigned long long>(k));
  // Replays the row's draws until position j is filled.
  unsigned long long taken[kWsTopkMaxK];
  long long filled = 0;
  const auto is_taken = [&](unsigned long long r) {
    for (long long q = 0; q < filled; ++q) {
      if (taken[q] == r) return true;
    }
    return false;
  };
  for (unsigned int m = 0; m < kWsTopkMaxDraws; ++m) {
    const unsigned long long r = ws_topk_rank(seed, tensor_index, n, skew, t, m);
    if (is_taken(r)) continue;
    if (filled == j) return static_cast<long long>(ws_perm_apply(perm, r));
    taken[filled++] = r;
  }
  // Out of draws: the lowest ranks not drawn, in rank order.
  for (unsigned long long r = 0; r < n; ++r) {
    if (is_taken(r)) continue;
    if (filled == j) return static_cast<long long>(ws_perm_apply(perm, r));
    taken[filled++] = r;
  }
  return 0;  // unreachable for k <= experts
}

/// group_offsets: group g's weight (0 for an empty group).
WS_HD inline double ws_group_weight(unsigned long long seed, int tensor_index, WsAffinePerm perm,
                                    double skew, double empty, unsigned long long g) {
  const unsigned long long bits = ws_draw(seed, tensor_index, g, kWsStreamRouting + 2);
  if (ws_uniform01(bits) < empty) return 0.0;
  double w = ws_dadd(0.5, ws_uniform01(ws_draw(seed, tensor_index, g, kWsStreamRouting + 3)));
  if (skew != 0.0) {
    const double rank = static_cast<double>(ws_perm_apply(perm, g) + 1);
    w = ws_dmul(w, ws_exp(-ws_dmul(skew, ws_log(rank))));
  }
  return w;
}

/// group_offsets element g of G: the END offset of group g.
WS_HD inline long long ws_group_end(unsigned long long seed, int tensor_index, long long total,
                                    long long align, long long groups, double skew, double empty,
                                    unsigned long long g) {
  if (g + 1 >= static_cast<unsigned long long>(groups)) return total;
  const WsAffinePerm perm = ws_affine_perm(seed, tensor_index,
                                           static_cast<unsigned long long>(groups));
  double upto = 0, all = 0;
  for (unsigned long long i = 0; i < static_cast<unsigned long long>(groups); ++i) {
    all = ws_dadd(all, ws_group_weight(seed, tensor_index, perm, skew, empty, i));
    if (i == g) upto = all;
  }
  if (all == 0.0) return 0;  // every group empty: the last takes all
  const long long units = total / align;
  long long u = static_cast<long long>(ws_dmul(static_cast<double>(units), ws_ddiv(upto, all)));
  if (u > units) u = units;
  return u * align;
}

/// A normal_outliers element from its N(0, 1) value and its stream-2 draw.
WS_HD inline float ws_normal_outliers_of(const WsInitParams& p, double z, unsigned long long draw2,
                                         int dtype) {
  double v = ws_dadd(static_cast<double>(p.p0), ws_dmul(static_cast<double>(p.p1), z));
  if (ws_uniform01(draw2) < static_cast<double>(p.p2)) {
    v = ws_dmul(v, static_cast<double>(p.p3));
  }
  return ws_clamp_finite(v, dtype);
}

/// Element i of a normal_outliers tensor, as a float.
WS_HD inline float ws_normal_outliers_value(const WsInitParams& p, unsigned long long seed,
                                            int tensor_index, unsigned long long i, int dtype) {
  return ws_normal_outliers_of(p, ws_normal_at(seed, tensor_index, i),
                               ws_draw(seed, tensor_index, i, 2), dtype);
}

/// Element i of tensor `tensor_index` as raw bits of `dtype`, for any distribution.
WS_HD inline unsigned long long ws_init_element_p(int dtype, const WsInitParams& p,
                                                  unsigned long long seed, int tensor_index,
                                                  unsigned long long i) {
  if (p.dist == kWsDistTopkIds || p.dist == kWsDistGroupOffsets) {
    const long long v =
        p.dist == kWsDistTopkIds
            ? ws_topk_id(seed, tensor_index, p.n0, p.n1, static_cast<double>(p.p0), i)
            : ws_group_end(seed, tensor_index, p.n0, p.n1, p.n2, static_cast<double>(p.p0),
                           static_cast<double>(p.p1), i);
    if (dtype == kWsDtypeI64) return static_cast<unsigned long long>(v);
    if (dtype == kWsDtypeI32) return static_cast<unsigned int>(static_cast<int>(v));
    return ws_to_dtype_bits(static_cast<float>(v), dtype);
  }
  if (p.dist == kWsDistNormalOutliers) {
    return ws_to_dtype_bits(ws_normal_outliers_value(p, seed, tensor_index, i, dtype), dtype);
  }
  if (p.dist == kWsDistMxBlocks && p.n0 > 0) {
    return ws_to_dtype_bits(
        ws_mx_blocks_value(p.p0, p.p1, seed, tensor_index, i, dtype, p.n0), dtype);
  }
  return ws_init_element(dtype, p.dist, p.p0, p.p1, seed, tensor_index, i);
}

/// Raw bits of the two elements of a pair.
struct WsPairBits {
  unsigned long long first, second;
};

/// An mx_blocks pair (elements i and i + 32) from their draws and their blocks' kinds: the
/// normal's radius is drawn once, from element i's draw.
WS_HD inline WsPairBits ws_mx_pair_of_draws(const WsInitParams& p, int dtype, const WsMxDraws& d0,
                                            int k0, const WsMxDraws& d1, int k1) {
  WsNormalPair np{0.0f, 0u};
  if (ws_mx_kind_draws_normal(k0) || ws_mx_kind_draws_normal(k1)) np = ws_normal_pair(d0.elem);
  return {ws_to_dtype_bits(ws_mx_blocks_value_of(p.p0, p.p1, d0, k0, np, 0, dtype), dtype),
          ws_to_dtype_bits(ws_mx_blocks_value_of(p.p0, p.p1, d1, k1, np, 1, dtype), dtype)};
}

/// Elements i and i + 32 (i with bit 5 clear: a pair) as ws_init_element_p gives them, sharing
/// the normal's radius: the generation kernel's unit of work. init_test holds it to
/// ws_init_element_p.
WS_HD inline WsPairBits ws_init_pair_p(int dtype, const WsInitParams& p, unsigned long long seed,
                                       int tensor_index, unsigned long long i) {
  const unsigned long long i2 = i + kWsPairBit;
  if (p.dist == kWsDistMxBlocks) {
    const long long tile_cols = p.n0 > 0 ? p.n0 : 0;
    const WsMxDraws d0 = ws_mx_draws(seed, tensor_index, i, tile_cols);
    const WsMxDraws d1 = ws_mx_draws(seed, tensor_index, i2, tile_cols);
    return ws_mx_pair_of_draws(p, dtype, d0, ws_mx_kind_of_draw(d0.block), d1,
                               ws_mx_kind_of_draw(d1.block));
  }
  if (p.dist == kWsDistNormal) {
    const WsNormalPair np = ws_normal_pair(ws_draw(seed, tensor_index, i, 0));
    return {ws_to_dtype_bits(ws_normal_value(p.p0, p.p1, ws_normal_of_pair(np, 0)), dtype),
            ws_to_dtype_bits(ws_normal_value(p.p0, p.p1, ws_normal_of_pair(np, 1)), dtype)};
  }
  if (p.dist == kWsDistNormalOutliers) {
    const WsNormalPair np = ws_normal_pair(ws_draw(seed, tensor_index, i, 0));
    const float v0 = ws_normal_outliers_of(p, ws_normal_of_pair(np, 0),
                                           ws_draw(seed, tensor_index, i, 2), dtype);
    const float v1 = ws_normal_outliers_of(p, ws_normal_of_pair(np, 1),
                                           ws_draw(seed, tensor_index, i2, 2), dtype);
    return {ws_to_dtype_bits(v0, dtype), ws_to_dtype_bits(v1, dtype)};
  }
  return {ws_init_element_p(dtype, p, seed, tensor_index, i),
          ws_init_element_p(dtype, p, seed, tensor_index, i2)};
}

// ---- Checksums ----------------------------------------------------------------------------------

/// One 8-byte word's term of an order-independent checksum: a bijection of the word for each
/// index, so changing any one word changes the sum, and moving words changes it with
/// overwhelming probability.
WS_HD inline unsigned long long ws_hash_word(unsigned long long word, unsigned long long index) {
  return ws_mix64(word ^ ws_mix64(index * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull));
}

/// The canary byte j of a guard region salted with `salt`.
WS_HD inline unsigned char ws_canary_byte(unsigned long long salt, unsigned long long j) {
  return static_cast<unsigned char>(ws_mix64(salt ^ ((j >> 3) * 0xD1B54A32D192ED03ull)) >>
                                    ((j & 7u) * 8u));
}

#endif  // WS_PROBLEMS_INIT_H_

/* warpsmith:plan
{ "knobs":  { "THREADS": [128] },
  "launch": [ { "kernel": "sm90_bf16_rmsnorm_mxfp8_quantize_naive",
                "grid":  ["ceil_div(M, THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["x", "weight", "y", "q", "scales", "M", "H"] } ] }
*/
// Trusted GPU reference for rmsnorm_quantize: one thread per row, mirroring reference.cc step by
// step: mean(x^2) and r in double with explicitly rounded operations (squares exact, summed in
// index order, correctly rounded division and sqrt, r rounded once to fp32), y = bf16(w *
// bf16(x * r)) with fp32 mul.rn, then the rows of y quantized by the block rules of
// mxfp8_quantize_rowwise's reference.cu (integer bit logic). Bit-identical to the CPU reference;
// slow by design; never tune this file.

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR)
#error "compile with the problem's parameters: -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1"
#endif
#ifndef THREADS
#define THREADS 128
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
// fp32 -> bf16 bits, round to nearest even; NaN -> 0x7FC0 (reference.cc's FloatToBf16).
__device__ unsigned short bf16_rne(float v) {
  unsigned b = __float_as_uint(v);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0;
  b += 0x7FFFu + ((b >> 16) & 1u);
  return static_cast<unsigned short>(b >> 16);
}
__device__ float bf16_value(unsigned short b) { return __uint_as_float(static_cast<unsigned>(b) << 16); }
}  // namespace

// x (M,H), weight (H), y (M,H) bf16 bits; q (M,H) e4m3; scales (M,H/32) e8m0. Thread: one row.
extern "C" __global__ void sm90_bf16_rmsnorm_mxfp8_quantize_naive(
    const unsigned short* x, const unsigned short* weight, unsigned short* y, unsigned char* q,
    unsigned char* scales, int M, int H) {
  const long long row = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= M) return;
  const unsigned short* xr = x + row * H;
  unsigned short* yr = y + row * H;
  double sum = 0.0;
  for (int h = 0; h < H; ++h) {
    const double v = static_cast<double>(bf16_value(xr[h]));
    sum = __dadd_rn(sum, __dmul_rn(v, v));
  }
  const double mean = __ddiv_rn(sum, static_cast<double>(H));
  const float r = __double2float_rn(
      __ddiv_rn(1.0, __dsqrt_rn(__dadd_rn(mean, static_cast<double>(1e-6f)))));
  for (int h = 0; h < H; ++h) {
    const unsigned short normed = bf16_rne(mul_f32(bf16_value(xr[h]), r));
    yr[h] = bf16_rne(mul_f32(bf16_value(weight[h]), bf16_value(normed)));
  }
  for (int b = 0; b < H / kBlock; ++b) {
    scales[row * (H / kBlock) + b] = static_cast<unsigned char>(
        quantize_block(yr + b * kBlock, 1, q + row * H + b * kBlock, 1));
  }
}

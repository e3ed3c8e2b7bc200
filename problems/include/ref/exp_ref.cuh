// Trusted reference library: e^x in fp64 from explicitly rounded IEEE operations (__dadd_rn,
// __dmul_rn, __ddiv_rn: never contracted into FMAs), the same sequence as the routers' CPU
// references, so GPU and CPU weights agree bit for bit whatever libm the host has. Everything is
// in an anonymous namespace: each reference is one translation unit.
#pragma once

namespace {

__device__ double ref_add(double a, double b) {
  return __dadd_rn(a, b);
}
__device__ double ref_mul(double a, double b) {
  return __dmul_rn(a, b);
}
__device__ double ref_div(double a, double b) {
  return __ddiv_rn(a, b);
}

// Round to nearest even integer, |x| < 2^52.
__device__ double rint_even(double x) {
  const double big = 4503599627370496.0;  // 2^52
  if (x >= 0)
    return ref_add(ref_add(x, big), -big);
  return -ref_add(ref_add(-x, big), -big);
}

__device__ double pow2(int e) {
  return __longlong_as_double(static_cast<long long>(e + 1023) << 52);
}

// e^x: Cody-Waite reduction by ln 2, then 1 + r (1 + r/2 (1 + ... (1 + r/13))).
__device__ double exp_ref(double x) {
  if (x != x)
    return x;
  if (x > 709.782712893384)
    return __longlong_as_double(0x7FF0000000000000ll);
  if (x < -746.0)
    return 0.0;
  const double n = rint_even(ref_mul(x, 1.4426950408889634));
  const double r = ref_add(ref_add(x, -ref_mul(n, 6.93147180369123816490e-01)),
                           -ref_mul(n, 1.90821492927058770002e-10));
  double p = 1.0;
  for (int i = 13; i >= 1; --i) p = ref_add(1.0, ref_div(ref_mul(r, p), static_cast<double>(i)));
  const int ni = static_cast<int>(n);
  const int n1 = ni / 2;
  return ref_mul(ref_mul(p, pow2(n1)), pow2(ni - n1));
}

}  // namespace

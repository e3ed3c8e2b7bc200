// Trusted reference library: the double arithmetic of the SwiGLU problems' CPU references
// (problems/swiglu_quantize_fwd/reference.cc, SwigluForward and SwigluBackward), for their GPU
// references. Every operation is explicitly rounded (no contraction); exp is libdevice's, which
// may differ from the C library's in the last bit of a double, far below the fp32 and bf16
// roundings that follow. Everything is in an anonymous namespace: each reference is one
// translation unit.
#pragma once

#include "ref/bf16.cuh"

namespace {

__device__ double bf16_value(unsigned short b) { return static_cast<double>(bf16_float(b)); }
// double -> fp32 -> bf16, as reference.cc's Round.
__device__ unsigned short round_bf16(double v) { return bf16_rne(__double2float_rn(v)); }

__device__ double sigmoid_d(double z) { return __ddiv_rn(1.0, __dadd_rn(1.0, exp(-z))); }
__device__ double clamp_max_d(double v, double hi) { return isnan(v) ? v : (hi < v ? hi : v); }
__device__ double clamp_d(double v, double lo, double hi) {
  return isnan(v) ? v : (v < lo ? lo : (hi < v ? hi : v));
}

// The clamped variant (gpt-oss): gate clamped above, up clamped both ways, then alpha and the +1.
constexpr double kLimit = 7.0;
constexpr double kAlpha = 1.702;

}  // namespace

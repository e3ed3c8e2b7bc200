// CPU reference for swiglu_quantize_fwd (and the SwiGLU math swiglu_quantize_bwd shares):
// hpre [M, 2I] bf16 = gate || up -> A = act(gate, up) as bf16, quantized to MXFP8 rowwise
// (q [M, I], scales [M, I/32]) and columnwise transposed (q_t [I, M], scales_t [I, M/32]).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "problems/mx.h"
#include "problems/problems.h"

namespace ws::mxfp8 {

/// The "variant" parameter: standard SwiGLU, or gpt-oss's clamped form.
enum class SwigluVariant { kStandard = 0, kClamped = 1 };

inline constexpr double kSwigluLimit = 7.0;    // gpt-oss clamp
inline constexpr double kSwigluAlpha = 1.702;  // gpt-oss sigmoid slope

/// A = act(g, u) in double, rounded to fp32, then to bf16 (RNE; NaN -> 0x7FC0).
///   standard: (g * sigmoid(g)) * u
///   clamped:  (gc * sigmoid(alpha * gc)) * (uc + 1), gc = min(g, 7), uc = clamp(u, -7, 7), NaN
///             kept by both clamps
/// with sigmoid(z) = 1 / (1 + exp(-z)).
uint16_t SwigluForward(uint16_t g, uint16_t u, SwigluVariant variant);

/// Gradients of A with respect to g and u for incoming dA, same precision and rounding:
///   standard: du = dA * (g s), dg = (dA * u) * s (1 + g (1 - s)), s = sigmoid(g)
///   clamped:  du = -7 <= u <= 7 ? dA * (gc s) : +0,
///             dg = g <= 7 ? (dA * (uc + 1)) * s (1 + alpha gc (1 - s)) : +0, s = sigmoid(alpha gc)
/// (the clamp's gradient is a select, as torch.clamp's: a NaN g or u selects +0).
void SwigluBackward(uint16_t g, uint16_t u, uint16_t da, SwigluVariant variant, uint16_t* dg,
                    uint16_t* du);

/// hpre [m, 2i] -> A [m, i] bf16 (A[r][c] from hpre[r][c] and hpre[r][i + c]).
void SwigluRows(const uint16_t* hpre, int64_t m, int64_t i, SwigluVariant variant, uint16_t* a);

/// The "variant" parameter: the chosen value, else the spec's default.
Result<SwigluVariant> VariantParam(const ProblemSpec& spec,
                                   const std::map<std::string, std::string>& params);

/// The registered reference: symbols M, I; input hpre; outputs q, scales, q_t, scales_t.
Status SwigluQuantizeFwdReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                  const std::map<std::string, std::string>& params,
                                  const TensorMap& inputs, TensorMap& outputs);

}  // namespace ws::mxfp8

#include "problems/swiglu_quantize_fwd/reference.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "problems/mxfp8_quantize_dual/reference.h"

namespace ws::mxfp8 {
namespace {

double Sigmoid(double z) {
  return 1.0 / (1.0 + std::exp(-z));
}

// min(v, hi) and clamp(v, lo, hi) that keep NaN (torch.clamp's rule).
double ClampMax(double v, double hi) {
  return std::isnan(v) ? v : std::min(v, hi);
}
double Clamp(double v, double lo, double hi) {
  return std::isnan(v) ? v : std::clamp(v, lo, hi);
}

uint16_t Round(double v) {
  return FloatToBf16(static_cast<float>(v));
}

}  // namespace

uint16_t SwigluForward(uint16_t g_bits, uint16_t u_bits, SwigluVariant variant) {
  const double g = Bf16Bits(g_bits), u = Bf16Bits(u_bits);
  if (variant == SwigluVariant::kStandard)
    return Round((g * Sigmoid(g)) * u);
  const double gc = ClampMax(g, kSwigluLimit);
  const double uc = Clamp(u, -kSwigluLimit, kSwigluLimit);
  return Round((gc * Sigmoid(kSwigluAlpha * gc)) * (uc + 1.0));
}

void SwigluBackward(uint16_t g_bits, uint16_t u_bits, uint16_t da_bits, SwigluVariant variant,
                    uint16_t* dg, uint16_t* du) {
  const double g = Bf16Bits(g_bits), u = Bf16Bits(u_bits), da = Bf16Bits(da_bits);
  if (variant == SwigluVariant::kStandard) {
    const double s = Sigmoid(g);
    *du = Round(da * (g * s));
    *dg = Round((da * u) * (s * (1.0 + g * (1.0 - s))));
    return;
  }
  const double gc = ClampMax(g, kSwigluLimit);
  const double uc = Clamp(u, -kSwigluLimit, kSwigluLimit);
  const double s = Sigmoid(kSwigluAlpha * gc);
  const bool pass_u = u >= -kSwigluLimit && u <= kSwigluLimit;  // false for NaN
  const bool pass_g = g <= kSwigluLimit;
  *du = pass_u ? Round(da * (gc * s)) : 0;
  *dg = pass_g ? Round((da * (uc + 1.0)) * (s * (1.0 + kSwigluAlpha * gc * (1.0 - s)))) : 0;
}

void SwigluRows(const uint16_t* hpre, int64_t m, int64_t i, SwigluVariant variant, uint16_t* a) {
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < i; ++c) {
      a[r * i + c] = SwigluForward(hpre[r * 2 * i + c], hpre[r * 2 * i + i + c], variant);
    }
  }
}

Result<SwigluVariant> VariantParam(const ProblemSpec& spec,
                                   const std::map<std::string, std::string>& params) {
  const auto it = params.find("variant");
  const ParamSpec* p = spec.FindParam("variant");
  const std::string v = it != params.end() ? it->second : p ? p->default_value : "standard";
  if (v == "standard")
    return SwigluVariant::kStandard;
  if (v == "clamped")
    return SwigluVariant::kClamped;
  return Status::Error("unknown variant '{}'", v);
}

Status SwigluQuantizeFwdReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                  const std::map<std::string, std::string>& params,
                                  const TensorMap& inputs, TensorMap& outputs) {
  WS_ASSIGN_OR_RETURN(const int64_t m, SymbolValue(symbols, "M"));
  WS_ASSIGN_OR_RETURN(const int64_t i, SymbolValue(symbols, "I"));
  if (m % kMxBlock != 0 || i % kMxBlock != 0)
    return Status::Error("M = {} and I = {} must be multiples of 32", m, i);
  WS_ASSIGN_OR_RETURN(const Rounding rounding, RoundingParam(spec, params));
  WS_ASSIGN_OR_RETURN(const SwigluVariant variant, VariantParam(spec, params));
  WS_ASSIGN_OR_RETURN(const HostTensor* hpre, FindTensor(inputs, "hpre"));
  WS_ASSIGN_OR_RETURN(HostTensor* q, FindTensor(outputs, "q"));
  WS_ASSIGN_OR_RETURN(HostTensor* scales, FindTensor(outputs, "scales"));
  WS_ASSIGN_OR_RETURN(HostTensor* q_t, FindTensor(outputs, "q_t"));
  WS_ASSIGN_OR_RETURN(HostTensor* scales_t, FindTensor(outputs, "scales_t"));
  const std::vector<uint16_t> h = Bf16Words(*hpre);
  std::vector<uint16_t> a(static_cast<size_t>(m * i));
  SwigluRows(h.data(), m, i, variant, a.data());
  QuantizeDual(a.data(), m, i, rounding, q->bytes.data(), scales->bytes.data(), q_t->bytes.data(),
               scales_t->bytes.data());
  return Status::Ok();
}

}  // namespace ws::mxfp8

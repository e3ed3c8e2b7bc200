#include "problems/swiglu_quantize_bwd/reference.h"

#include <vector>

#include "problems/mxfp8_quantize_dual/reference.h"

namespace ws::mxfp8 {

void SwigluBackwardRows(const uint16_t* hpre, const uint16_t* da, int64_t m, int64_t i,
                        SwigluVariant variant, uint16_t* dh) {
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < i; ++c) {
      SwigluBackward(hpre[r * 2 * i + c], hpre[r * 2 * i + i + c], da[r * i + c], variant,
                     &dh[r * 2 * i + c], &dh[r * 2 * i + i + c]);
    }
  }
}

Status SwigluQuantizeBwdReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                  const std::map<std::string, std::string>& params,
                                  const TensorMap& inputs, TensorMap& outputs) {
  WS_ASSIGN_OR_RETURN(const int64_t m, SymbolValue(symbols, "M"));
  WS_ASSIGN_OR_RETURN(const int64_t i, SymbolValue(symbols, "I"));
  if (m % kMxBlock != 0 || i % kMxBlock != 0)
    return Status::Error("M = {} and I = {} must be multiples of 32", m, i);
  WS_ASSIGN_OR_RETURN(const Rounding rounding, RoundingParam(spec, params));
  WS_ASSIGN_OR_RETURN(const SwigluVariant variant, VariantParam(spec, params));
  WS_ASSIGN_OR_RETURN(const HostTensor* hpre, FindTensor(inputs, "hpre"));
  WS_ASSIGN_OR_RETURN(const HostTensor* da, FindTensor(inputs, "da"));
  WS_ASSIGN_OR_RETURN(HostTensor* q, FindTensor(outputs, "q"));
  WS_ASSIGN_OR_RETURN(HostTensor* scales, FindTensor(outputs, "scales"));
  WS_ASSIGN_OR_RETURN(HostTensor* q_t, FindTensor(outputs, "q_t"));
  WS_ASSIGN_OR_RETURN(HostTensor* scales_t, FindTensor(outputs, "scales_t"));
  const std::vector<uint16_t> h = Bf16Words(*hpre), d = Bf16Words(*da);
  std::vector<uint16_t> dh(static_cast<size_t>(m * 2 * i));
  SwigluBackwardRows(h.data(), d.data(), m, i, variant, dh.data());
  QuantizeDual(dh.data(), m, 2 * i, rounding, q->bytes.data(), scales->bytes.data(),
               q_t->bytes.data(), scales_t->bytes.data());
  return Status::Ok();
}

}  // namespace ws::mxfp8

#include "problems/mxfp8_quantize_dual/reference.h"

namespace ws::mxfp8 {

void QuantizeDual(const uint16_t* x, int64_t m, int64_t k, Rounding rounding, uint8_t* q,
                  uint8_t* scales, uint8_t* q_t, uint8_t* scales_t) {
  QuantizeRowwise(x, m, k, rounding, q, scales);
  QuantizeColwiseTransposed(x, m, k, rounding, q_t, scales_t);
}

Status QuantizeDualReference(const ProblemSpec& spec, const SymbolTable& symbols,
                             const std::map<std::string, std::string>& params,
                             const TensorMap& inputs, TensorMap& outputs) {
  WS_ASSIGN_OR_RETURN(const int64_t m, SymbolValue(symbols, "M"));
  WS_ASSIGN_OR_RETURN(const int64_t k, SymbolValue(symbols, "K"));
  if (m % kMxBlock != 0 || k % kMxBlock != 0)
    return Status::Error("M = {} and K = {} must be multiples of 32", m, k);
  WS_ASSIGN_OR_RETURN(const Rounding rounding, RoundingParam(spec, params));
  WS_ASSIGN_OR_RETURN(const HostTensor* x, FindTensor(inputs, "x"));
  WS_ASSIGN_OR_RETURN(HostTensor* q, FindTensor(outputs, "q"));
  WS_ASSIGN_OR_RETURN(HostTensor* scales, FindTensor(outputs, "scales"));
  WS_ASSIGN_OR_RETURN(HostTensor* q_t, FindTensor(outputs, "q_t"));
  WS_ASSIGN_OR_RETURN(HostTensor* scales_t, FindTensor(outputs, "scales_t"));
  const std::vector<uint16_t> words = Bf16Words(*x);
  QuantizeDual(words.data(), m, k, rounding, q->bytes.data(), scales->bytes.data(),
               q_t->bytes.data(), scales_t->bytes.data());
  return Status::Ok();
}

}  // namespace ws::mxfp8

#include "problems/mxfp8_quantize_colwise/reference.h"

namespace ws::mxfp8 {

Status QuantizeColwiseReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                const std::map<std::string, std::string>& params,
                                const TensorMap& inputs, TensorMap& outputs) {
  WS_ASSIGN_OR_RETURN(const int64_t m, SymbolValue(symbols, "M"));
  WS_ASSIGN_OR_RETURN(const int64_t k, SymbolValue(symbols, "K"));
  if (m % kMxBlock != 0)
    return Status::Error("M = {} is not a multiple of 32", m);
  WS_ASSIGN_OR_RETURN(const Rounding rounding, RoundingParam(spec, params));
  WS_ASSIGN_OR_RETURN(const HostTensor* x, FindTensor(inputs, "x"));
  WS_ASSIGN_OR_RETURN(HostTensor* q_t, FindTensor(outputs, "q_t"));
  WS_ASSIGN_OR_RETURN(HostTensor* scales_t, FindTensor(outputs, "scales_t"));
  const std::vector<uint16_t> words = Bf16Words(*x);
  QuantizeColwiseTransposed(words.data(), m, k, rounding, q_t->bytes.data(),
                            scales_t->bytes.data());
  return Status::Ok();
}

}  // namespace ws::mxfp8

#include "problems/mxfp8_quantize_expert_weights/reference.h"

#include "problems/mxfp8_quantize_dual/reference.h"

namespace ws::mxfp8 {

Status QuantizeExpertWeightsReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                      const std::map<std::string, std::string>& params,
                                      const TensorMap& inputs, TensorMap& outputs) {
  WS_ASSIGN_OR_RETURN(const int64_t e, SymbolValue(symbols, "E"));
  WS_ASSIGN_OR_RETURN(const int64_t n, SymbolValue(symbols, "N"));
  WS_ASSIGN_OR_RETURN(const int64_t k, SymbolValue(symbols, "K"));
  if (n % kMxBlock != 0 || k % kMxBlock != 0)
    return Status::Error("N = {} and K = {} must be multiples of 32", n, k);
  WS_ASSIGN_OR_RETURN(const Rounding rounding, RoundingParam(spec, params));
  WS_ASSIGN_OR_RETURN(const HostTensor* w, FindTensor(inputs, "w"));
  WS_ASSIGN_OR_RETURN(HostTensor* q_k, FindTensor(outputs, "q_k"));
  WS_ASSIGN_OR_RETURN(HostTensor* s_k, FindTensor(outputs, "s_k"));
  WS_ASSIGN_OR_RETURN(HostTensor* q_n, FindTensor(outputs, "q_n"));
  WS_ASSIGN_OR_RETURN(HostTensor* s_n, FindTensor(outputs, "s_n"));
  const std::vector<uint16_t> words = Bf16Words(*w);
  const int64_t elems = n * k;  // per expert, in every output's data; scales have elems / 32
  for (int64_t x = 0; x < e; ++x) {
    QuantizeDual(words.data() + x * elems, n, k, rounding, q_k->bytes.data() + x * elems,
                 s_k->bytes.data() + x * elems / kMxBlock, q_n->bytes.data() + x * elems,
                 s_n->bytes.data() + x * elems / kMxBlock);
  }
  return Status::Ok();
}

}  // namespace ws::mxfp8

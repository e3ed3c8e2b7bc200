#include "problems/rmsnorm_quantize/reference.h"

#include <cmath>
#include <vector>

namespace ws::mxfp8 {

float RmsNormFactor(const uint16_t* x, int64_t h) {
  double sum = 0.0;
  for (int64_t i = 0; i < h; ++i) {
    const double v = Bf16Bits(x[i]);
    sum += v * v;  // exact: a bf16 square has at most 16 significant bits
  }
  const double mean = sum / static_cast<double>(h);
  return static_cast<float>(1.0 / std::sqrt(mean + static_cast<double>(kRmsNormEps)));
}

void RmsNormRow(const uint16_t* x, const uint16_t* w, int64_t h, uint16_t* y) {
  const float r = RmsNormFactor(x, h);
  for (int64_t i = 0; i < h; ++i) {
    const uint16_t normed = FloatToBf16(Bf16Bits(x[i]) * r);
    y[i] = FloatToBf16(Bf16Bits(w[i]) * Bf16Bits(normed));
  }
}

void RmsNormQuantize(const uint16_t* x, const uint16_t* w, int64_t m, int64_t h,
                     Rounding rounding, uint16_t* y, uint8_t* q, uint8_t* scales) {
  for (int64_t row = 0; row < m; ++row) RmsNormRow(x + row * h, w, h, y + row * h);
  QuantizeRowwise(y, m, h, rounding, q, scales);
}

Status RmsNormQuantizeReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                const std::map<std::string, std::string>& params,
                                const TensorMap& inputs, TensorMap& outputs) {
  WS_ASSIGN_OR_RETURN(const int64_t m, SymbolValue(symbols, "M"));
  WS_ASSIGN_OR_RETURN(const int64_t h, SymbolValue(symbols, "H"));
  if (h % kMxBlock != 0)
    return Status::Error("H = {} is not a multiple of 32", h);
  WS_ASSIGN_OR_RETURN(const Rounding rounding, RoundingParam(spec, params));
  WS_ASSIGN_OR_RETURN(const HostTensor* x, FindTensor(inputs, "x"));
  WS_ASSIGN_OR_RETURN(const HostTensor* weight, FindTensor(inputs, "weight"));
  WS_ASSIGN_OR_RETURN(HostTensor* y, FindTensor(outputs, "y"));
  WS_ASSIGN_OR_RETURN(HostTensor* q, FindTensor(outputs, "q"));
  WS_ASSIGN_OR_RETURN(HostTensor* scales, FindTensor(outputs, "scales"));
  const std::vector<uint16_t> xw = Bf16Words(*x), ww = Bf16Words(*weight);
  std::vector<uint16_t> yw(static_cast<size_t>(m * h));
  RmsNormQuantize(xw.data(), ww.data(), m, h, rounding, yw.data(), q->bytes.data(),
                  scales->bytes.data());
  StoreBf16Words(yw, *y);
  return Status::Ok();
}

}  // namespace ws::mxfp8

#include "problems/moe_unpermute_combine/reference.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "problems/reference_util.h"

namespace ws::moe {
namespace {

float Bf16ToFloat(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

uint16_t FloatToBf16(float v) {
  uint32_t b = std::bit_cast<uint32_t>(v);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u)
    return 0x7FC0;
  b += 0x7FFFu + ((b >> 16) & 1u);  // round to nearest even; a carry moves to the next binade
  return static_cast<uint16_t>(b >> 16);
}

}  // namespace

uint16_t CombineElement(const float* w, const uint16_t* rows, int64_t k, const uint16_t* shared) {
  float acc = 0.0f;
  for (int64_t j = 0; j < k; ++j) acc = std::fma(w[j], Bf16ToFloat(rows[j]), acc);
  if (shared != nullptr)
    acc = acc + Bf16ToFloat(*shared);
  return FloatToBf16(acc);
}

void UnpermuteCombine(const uint16_t* y_p, const float* w, const int32_t* slot_row,
                      const uint16_t* y_shared, int64_t t, int64_t k, int64_t h, uint16_t* y) {
  std::vector<uint16_t> rows(static_cast<size_t>(k));
  for (int64_t tok = 0; tok < t; ++tok) {
    const float* wt = w + tok * k;
    const int32_t* rt = slot_row + tok * k;
    for (int64_t c = 0; c < h; ++c) {
      for (int64_t j = 0; j < k; ++j) rows[j] = y_p[static_cast<int64_t>(rt[j]) * h + c];
      y[tok * h + c] =
          CombineElement(wt, rows.data(), k, y_shared ? y_shared + tok * h + c : nullptr);
    }
  }
}

Status MoeUnpermuteCombineReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                    const std::map<std::string, std::string>& params,
                                    const TensorMap& inputs, TensorMap& outputs) {
  WS_ASSIGN_OR_RETURN(const int64_t t, SymbolValue(symbols, "T"));
  WS_ASSIGN_OR_RETURN(const int64_t h, SymbolValue(symbols, "H"));
  WS_ASSIGN_OR_RETURN(const int64_t k, SymbolValue(symbols, "K"));
  const std::string shared = ParamValue(spec, params, "shared");
  if (shared != "none" && shared != "add")
    return Status::Error("unknown shared '{}'", shared);
  const HostTensor& y_p_t = inputs.find("y_p")->second;
  const int64_t m_pad = y_p_t.dims.empty() ? 0 : y_p_t.dims[0];
  const std::vector<uint16_t> y_p = TensorValues<uint16_t>(y_p_t);
  const std::vector<float> w = TensorValues<float>(inputs.find("w")->second);
  const std::vector<int32_t> slot_row = TensorValues<int32_t>(inputs.find("slot_row")->second);
  const std::vector<uint16_t> y_shared = TensorValues<uint16_t>(inputs.find("y_shared")->second);
  for (int64_t s = 0; s < t * k; ++s) {
    if (slot_row[s] < 0 || slot_row[s] >= m_pad) {
      return Status::Error("slot_row[{}, {}] = {} is not a row of y_p [0, {})", s / k, s % k,
                           slot_row[s], m_pad);
    }
  }
  std::vector<uint16_t> y(static_cast<size_t>(t * h));
  UnpermuteCombine(y_p.data(), w.data(), slot_row.data(),
                   shared == "add" ? y_shared.data() : nullptr, t, k, h, y.data());
  StoreTensorValues(y, outputs.find("y")->second);
  return Status::Ok();
}

}  // namespace ws::moe

#include "problems/moe_unpermute_combine/reference.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

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

namespace {

// Tensor bytes to and from typed values, through memcpy: HostTensor holds raw bytes.
template <typename T>
std::vector<T> Values(const HostTensor& t) {
  std::vector<T> v(t.bytes.size() / sizeof(T));
  if (!v.empty())
    std::memcpy(v.data(), t.bytes.data(), v.size() * sizeof(T));
  return v;
}

template <typename T>
void Store(const std::vector<T>& v, HostTensor& t) {
  if (!v.empty())
    std::memcpy(t.bytes.data(), v.data(), v.size() * sizeof(T));
}

Result<int64_t> Symbol(const SymbolTable& symbols, const char* name) {
  const auto it = symbols.find(name);
  if (it == symbols.end())
    return Status::Error("symbol {} needed", name);
  return it->second;
}

std::string Param(const ProblemSpec& spec, const std::map<std::string, std::string>& params,
                  const char* name) {
  const auto it = params.find(name);
  if (it != params.end())
    return it->second;
  const ParamSpec* p = spec.FindParam(name);
  return p ? p->default_value : "";
}

}  // namespace

Status MoeUnpermuteCombineReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                    const std::map<std::string, std::string>& params,
                                    const TensorMap& inputs, TensorMap& outputs) {
  WS_ASSIGN_OR_RETURN(const int64_t t, Symbol(symbols, "T"));
  WS_ASSIGN_OR_RETURN(const int64_t h, Symbol(symbols, "H"));
  WS_ASSIGN_OR_RETURN(const int64_t k, Symbol(symbols, "K"));
  const std::string shared = Param(spec, params, "shared");
  if (shared != "none" && shared != "add")
    return Status::Error("unknown shared '{}'", shared);
  const HostTensor& y_p_t = inputs.find("y_p")->second;
  const int64_t m_pad = y_p_t.dims.empty() ? 0 : y_p_t.dims[0];
  const std::vector<uint16_t> y_p = Values<uint16_t>(y_p_t);
  const std::vector<float> w = Values<float>(inputs.find("w")->second);
  const std::vector<int32_t> slot_row = Values<int32_t>(inputs.find("slot_row")->second);
  const std::vector<uint16_t> y_shared = Values<uint16_t>(inputs.find("y_shared")->second);
  for (int64_t s = 0; s < t * k; ++s) {
    if (slot_row[s] < 0 || slot_row[s] >= m_pad) {
      return Status::Error("slot_row[{}, {}] = {} is not a row of y_p [0, {})", s / k, s % k,
                           slot_row[s], m_pad);
    }
  }
  std::vector<uint16_t> y(static_cast<size_t>(t * h));
  UnpermuteCombine(y_p.data(), w.data(), slot_row.data(),
                   shared == "add" ? y_shared.data() : nullptr, t, k, h, y.data());
  Store(y, outputs.find("y")->second);
  return Status::Ok();
}

}  // namespace ws::moe

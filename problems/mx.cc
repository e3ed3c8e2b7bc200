#include "problems/mx.h"

#include <array>
#include <bit>

namespace ws::mxfp8 {

float Bf16Bits(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

void QuantizeColwiseTransposed(const uint16_t* x, int64_t rows, int64_t cols, Rounding rounding,
                               uint8_t* q_t, uint8_t* scales_t) {
  const int64_t blocks = rows / kMxBlock;
  std::array<uint16_t, kMxBlock> column{};
  // NOTE: block rows outermost, so the 32 rows being gathered stay in cache across the columns.
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t c = 0; c < cols; ++c) {
      for (int i = 0; i < kMxBlock; ++i) column[i] = x[(b * kMxBlock + i) * cols + c];
      QuantizeBlock(column.data(), rounding, q_t + c * rows + b * kMxBlock,
                    scales_t + c * blocks + b);
    }
  }
}

Result<Rounding> RoundingParam(const ProblemSpec& spec,
                               const std::map<std::string, std::string>& params) {
  const auto it = params.find("rounding");
  const ParamSpec* p = spec.FindParam("rounding");
  const std::string rounding = it != params.end() ? it->second : p ? p->default_value : "rceil";
  if (rounding == "rceil")
    return Rounding::kRceil;
  if (rounding == "floor")
    return Rounding::kFloor;
  return Status::Error("unknown rounding '{}'", rounding);
}

std::vector<uint16_t> Bf16Words(const HostTensor& t) {
  std::vector<uint16_t> w(t.bytes.size() / 2);
  for (size_t i = 0; i < w.size(); ++i) {
    w[i] = static_cast<uint16_t>(t.bytes[2 * i] | (t.bytes[2 * i + 1] << 8));
  }
  return w;
}

void StoreBf16Words(const std::vector<uint16_t>& words, HostTensor& t) {
  t.bytes.resize(words.size() * 2);
  for (size_t i = 0; i < words.size(); ++i) {
    t.bytes[2 * i] = static_cast<uint8_t>(words[i] & 0xFF);
    t.bytes[2 * i + 1] = static_cast<uint8_t>(words[i] >> 8);
  }
}

Result<const HostTensor*> FindTensor(const TensorMap& map, std::string_view name) {
  const auto it = map.find(name);
  if (it == map.end())
    return Status::Error("tensor '{}' missing", name);
  return &it->second;
}

Result<HostTensor*> FindTensor(TensorMap& map, std::string_view name) {
  const auto it = map.find(name);
  if (it == map.end())
    return Status::Error("tensor '{}' missing", name);
  return &it->second;
}

}  // namespace ws::mxfp8

#include "problems/bf16_gemm/gemm_common.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace ws::gemm {

double Bf16ToDouble(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

double E4M3ToDouble(uint8_t b) {
  if ((b & 0x7F) == 0x7F) return std::numeric_limits<double>::quiet_NaN();
  const int e = (b >> 3) & 0xF, m = b & 7;
  const double v = e == 0 ? std::ldexp(m, -9) : std::ldexp(8 + m, e - 10);
  return (b & 0x80) ? -v : v;
}

double E8M0ToDouble(uint8_t s) {
  if (s == 0xFF) return std::numeric_limits<double>::quiet_NaN();
  return std::ldexp(1.0, s - 127);
}

uint16_t DoubleToBf16(double v) {
  if (std::isnan(v)) return 0x7FC0;
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(v);
  if (a == 0) return sign;
  int e;
  std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1)
  // 8 significant bits for normal results (a >= 2^-126); the fixed quantum 2^-133 below.
  const int quantum = std::max(e - 8, -133);
  const double r = std::nearbyint(std::ldexp(a, -quantum));  // ties to even (default mode)
  const double rounded = std::ldexp(r, quantum);
  if (rounded >= 0x1p128) return sign | 0x7F80;
  // `rounded` is exactly a bf16 value, so its float's top half is the answer.
  return sign | static_cast<uint16_t>(std::bit_cast<uint32_t>(static_cast<float>(rounded)) >> 16);
}

void GemmABt(const double* a, int64_t lda, const double* b, int64_t ldb, int64_t m, int64_t n,
             int64_t k, double* d) {
  for (int64_t i = 0; i < m; ++i) {
    const double* ar = a + i * lda;
    for (int64_t j = 0; j < n; ++j) {
      const double* br = b + j * ldb;
      // Four partial sums: the same value up to double rounding, and several times faster.
      double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      int64_t x = 0;
      for (; x + 4 <= k; x += 4) {
        s0 += ar[x] * br[x];
        s1 += ar[x + 1] * br[x + 1];
        s2 += ar[x + 2] * br[x + 2];
        s3 += ar[x + 3] * br[x + 3];
      }
      for (; x < k; ++x) s0 += ar[x] * br[x];
      d[i * n + j] = (s0 + s1) + (s2 + s3);
    }
  }
}

uint16_t LoadU16(const std::vector<uint8_t>& t, int64_t i) {
  return static_cast<uint16_t>(t[2 * i] | (t[2 * i + 1] << 8));
}

float LoadF32(const std::vector<uint8_t>& t, int64_t i) {
  uint32_t u = 0;
  for (int b = 0; b < 4; ++b) u |= static_cast<uint32_t>(t[4 * i + b]) << (8 * b);
  return std::bit_cast<float>(u);
}

int32_t LoadI32(const std::vector<uint8_t>& t, int64_t i) {
  return std::bit_cast<int32_t>(std::bit_cast<uint32_t>(LoadF32(t, i)));
}

void StoreU16(std::vector<uint8_t>& t, int64_t i, uint16_t v) {
  t[2 * i] = static_cast<uint8_t>(v & 0xFF);
  t[2 * i + 1] = static_cast<uint8_t>(v >> 8);
}

void StoreF32(std::vector<uint8_t>& t, int64_t i, float v) {
  const uint32_t u = std::bit_cast<uint32_t>(v);
  for (int b = 0; b < 4; ++b) t[4 * i + b] = static_cast<uint8_t>(u >> (8 * b));
}

Result<std::vector<int64_t>> GroupStarts(const std::vector<int32_t>& offs, int64_t total,
                                         int64_t align) {
  std::vector<int64_t> starts = {0};
  for (size_t g = 0; g < offs.size(); ++g) {
    const int64_t end = offs[g];
    if (end < starts.back() || end > total || end % align != 0) {
      return Status::Error("group offsets: offs[{}] = {} after {} (total {}, align {})", g, end,
                           starts.back(), total, align);
    }
    starts.push_back(end);
  }
  if (starts.back() != total) {
    return Status::Error("group offsets: the last is {}, not the total {}", starts.back(), total);
  }
  return starts;
}

Result<int64_t> Symbol(const SymbolTable& symbols, std::string_view name) {
  const auto it = symbols.find(name);
  if (it == symbols.end()) return Status::Error("symbol {} needed", name);
  return it->second;
}

const HostTensor& In(const TensorMap& inputs, std::string_view name) {
  return inputs.find(name)->second;
}

HostTensor& Out(TensorMap& outputs, std::string_view name) { return outputs.find(name)->second; }

}  // namespace ws::gemm

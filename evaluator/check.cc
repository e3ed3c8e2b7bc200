// The checker: compares a candidate's outputs with the reference's, outside every runner.
#include <string>
#include <vector>

#include "evaluator/internal.h"

namespace ws {
namespace {

std::string Coords(int64_t index, const std::vector<int64_t>& dims) {
  std::vector<int64_t> c(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    int64_t n = dims[d] > 0 ? dims[d] : 1;
    c[d] = index % n;
    index /= n;
  }
  std::string s;
  for (size_t d = 0; d < c.size(); ++d) s += (d ? ", " : "") + std::to_string(c[d]);
  return s;
}

std::string Hex(std::string_view bytes) {
  std::string s = "0x";
  // Little-endian element: print the most significant byte first.
  for (size_t i = bytes.size(); i-- > 0;) s += fmt::format("{:02x}", static_cast<uint8_t>(bytes[i]));
  return s;
}

}  // namespace

std::string CompareExact(const std::string& tensor, const std::vector<int64_t>& dims, int elem_size,
                         std::string_view got, std::string_view want, int max_reports) {
  if (got.size() != want.size()) {
    return fmt::format("{}: {} bytes written back, {} expected", tensor, got.size(), want.size());
  }
  if (got == want) return "";
  std::string msg;
  int64_t mismatches = 0;
  const int64_t n = static_cast<int64_t>(got.size()) / elem_size;
  for (int64_t i = 0; i < n; ++i) {
    std::string_view g = got.substr(i * elem_size, elem_size);
    std::string_view w = want.substr(i * elem_size, elem_size);
    if (g == w) continue;
    if (mismatches < max_reports) {
      msg += fmt::format("{}{}[{}]: got {}, expected {}", msg.empty() ? "" : "; ", tensor,
                         Coords(i, dims), Hex(g), Hex(w));
    }
    ++mismatches;
  }
  return fmt::format("{} ({} of {} elements differ)", msg, mismatches, n);
}

}  // namespace ws

// libFuzzer target: the shape and plan expression language (problems/expr.cc). Plans come from
// candidates, so every expression is untrusted text. Any input must give a value or an error.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "problems/problems.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view expr(reinterpret_cast<const char*>(data), size);
  static const ws::SymbolTable kSymbols = {{"M", 131072},          {"K", 7168},
                                           {"E", 128},             {"num_sms", 132},
                                           {"BIG", INT64_MAX / 3}, {"NEG", INT64_MIN + 1},
                                           {"ZERO", 0}};
  (void)ws::EvalExpr(expr, kSymbols);
  auto ids = ws::ExprIdentifiers(expr);
  if (ids.ok()) {
    // Whatever parses must evaluate or fail cleanly once its names are bound.
    ws::SymbolTable bound;
    int64_t v = 1;
    for (const auto& id : *ids) bound[id] = (v = v * 7 % 1000003);
    (void)ws::EvalExpr(expr, bound);
  }
  return 0;
}

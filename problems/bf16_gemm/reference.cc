#include "problems/bf16_gemm/reference.h"

#include <vector>

#include "problems/bf16_gemm/gemm_common.h"

namespace ws::gemm {

void Bf16Gemm(const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k, uint16_t* d) {
  std::vector<double> da(m * k), db(n * k), dd(m * n);
  for (int64_t i = 0; i < m * k; ++i) da[i] = Bf16ToDouble(a[i]);
  for (int64_t i = 0; i < n * k; ++i) db[i] = Bf16ToDouble(b[i]);
  GemmABt(da.data(), k, db.data(), k, m, n, k, dd.data());
  for (int64_t i = 0; i < m * n; ++i) d[i] = DoubleToBf16(dd[i]);
}

Status Bf16GemmReference(const ProblemSpec& spec, const SymbolTable& symbols,
                         const std::map<std::string, std::string>& params,
                         const TensorMap& inputs, TensorMap& outputs) {
  (void)spec;
  (void)params;
  WS_ASSIGN_OR_RETURN(int64_t m, Symbol(symbols, "M"));
  WS_ASSIGN_OR_RETURN(int64_t n, Symbol(symbols, "N"));
  WS_ASSIGN_OR_RETURN(int64_t k, Symbol(symbols, "K"));
  std::vector<uint16_t> a(m * k), b(n * k), d(m * n);
  for (int64_t i = 0; i < m * k; ++i) a[i] = LoadU16(In(inputs, "a").bytes, i);
  for (int64_t i = 0; i < n * k; ++i) b[i] = LoadU16(In(inputs, "b").bytes, i);
  Bf16Gemm(a.data(), b.data(), m, n, k, d.data());
  for (int64_t i = 0; i < m * n; ++i) StoreU16(Out(outputs, "d").bytes, i, d[i]);
  return Status::Ok();
}

}  // namespace ws::gemm

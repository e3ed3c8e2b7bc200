#include "problems/fp8_rowwise_gemm/reference.h"

#include <vector>

#include "problems/bf16_gemm/gemm_common.h"

namespace ws::gemm {

void Fp8RowwiseGemm(const uint8_t* a, const uint8_t* b, const float* a_scale,
                    const float* b_scale, int64_t m, int64_t n, int64_t k, uint16_t* d) {
  std::vector<double> da(m * k), db(n * k), dd(m * n);
  for (int64_t i = 0; i < m * k; ++i) da[i] = E4M3ToDouble(a[i]);
  for (int64_t i = 0; i < n * k; ++i) db[i] = E4M3ToDouble(b[i]);
  GemmABt(da.data(), k, db.data(), k, m, n, k, dd.data());
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      const double scale = static_cast<double>(a_scale[r]) * static_cast<double>(b_scale[c]);
      d[r * n + c] = DoubleToBf16(dd[r * n + c] * scale);
    }
  }
}

Status Fp8RowwiseGemmReference(const ProblemSpec& spec, const SymbolTable& symbols,
                               const std::map<std::string, std::string>& params,
                               const TensorMap& inputs, TensorMap& outputs) {
  (void)spec;
  (void)params;
  WS_ASSIGN_OR_RETURN(int64_t m, Symbol(symbols, "M"));
  WS_ASSIGN_OR_RETURN(int64_t n, Symbol(symbols, "N"));
  WS_ASSIGN_OR_RETURN(int64_t k, Symbol(symbols, "K"));
  std::vector<float> sa(m), sb(n);
  for (int64_t i = 0; i < m; ++i) sa[i] = LoadF32(In(inputs, "a_scale").bytes, i);
  for (int64_t i = 0; i < n; ++i) sb[i] = LoadF32(In(inputs, "b_scale").bytes, i);
  std::vector<uint16_t> d(m * n);
  Fp8RowwiseGemm(In(inputs, "a").bytes.data(), In(inputs, "b").bytes.data(), sa.data(), sb.data(),
                 m, n, k, d.data());
  for (int64_t i = 0; i < m * n; ++i) StoreU16(Out(outputs, "d").bytes, i, d[i]);
  return Status::Ok();
}

}  // namespace ws::gemm

#include "problems/mxfp8_grouped_gemm_fwd/reference.h"

#include "problems/bf16_gemm/gemm_common.h"
#include "problems/bf16_grouped_gemm/reference.h"

namespace ws::gemm {

std::vector<double> DequantizeMxRows(const uint8_t* q, const uint8_t* scales, int64_t rows,
                                     int64_t cols) {
  std::vector<double> out(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      out[r * cols + c] =
          E4M3ToDouble(q[r * cols + c]) * E8M0ToDouble(scales[r * (cols / 32) + c / 32]);
    }
  }
  return out;
}

Status MxGroupedGemmFwd(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                        const uint8_t* b_scales, const std::vector<int32_t>& offs, int64_t m,
                        int64_t n, int64_t k, uint16_t* c) {
  if (k % 32 != 0) return Status::Error("K = {} is not a multiple of 32", k);
  const int64_t e = static_cast<int64_t>(offs.size());
  const std::vector<double> da = DequantizeMxRows(a, a_scales, m, k);
  const std::vector<double> db = DequantizeMxRows(b, b_scales, e * n, k);
  std::vector<double> dc(m * n);
  WS_RETURN_IF_ERROR(
      GroupedGemmDouble(GroupedForm::kFwd, da.data(), db.data(), offs, m, n, k, dc.data()));
  for (int64_t i = 0; i < m * n; ++i) c[i] = DoubleToBf16(dc[i]);
  return Status::Ok();
}

Status MxGroupedGemmFwdReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                 const std::map<std::string, std::string>& params,
                                 const TensorMap& inputs, TensorMap& outputs) {
  (void)spec;
  (void)params;
  WS_ASSIGN_OR_RETURN(int64_t m, Symbol(symbols, "M"));
  WS_ASSIGN_OR_RETURN(int64_t e, Symbol(symbols, "E"));
  WS_ASSIGN_OR_RETURN(int64_t n, Symbol(symbols, "N"));
  WS_ASSIGN_OR_RETURN(int64_t k, Symbol(symbols, "K"));
  std::vector<int32_t> offs(e);
  for (int64_t g = 0; g < e; ++g) offs[g] = LoadI32(In(inputs, "offs").bytes, g);
  std::vector<uint16_t> c(m * n);
  WS_RETURN_IF_ERROR(MxGroupedGemmFwd(
      In(inputs, "a").bytes.data(), In(inputs, "a_scales").bytes.data(),
      In(inputs, "b").bytes.data(), In(inputs, "b_scales").bytes.data(), offs, m, n, k, c.data()));
  for (int64_t i = 0; i < m * n; ++i) StoreU16(Out(outputs, "c").bytes, i, c[i]);
  return Status::Ok();
}

}  // namespace ws::gemm

#include "problems/mxfp8_grouped_gemm_wgrad/reference.h"

#include "problems/bf16_gemm/gemm_common.h"
#include "problems/mxfp8_grouped_gemm_fwd/reference.h"

namespace ws::gemm {

Status MxGroupedGemmWgrad(const uint8_t* dct, const uint8_t* dct_scales, const uint8_t* xt,
                          const uint8_t* xt_scales, const std::vector<int32_t>& offs, int64_t m,
                          int64_t n, int64_t k, float* db) {
  if (m % 32 != 0) return Status::Error("M = {} is not a multiple of 32", m);
  WS_ASSIGN_OR_RETURN(std::vector<int64_t> starts, GroupStarts(offs, m, 32));
  const std::vector<double> a = DequantizeMxRows(dct, dct_scales, n, m);
  const std::vector<double> b = DequantizeMxRows(xt, xt_scales, k, m);
  std::vector<double> out(n * k);
  for (size_t g = 0; g < offs.size(); ++g) {
    const int64_t r0 = starts[g], rows = starts[g + 1] - r0;
    GemmABt(a.data() + r0, m, b.data() + r0, m, n, k, rows, out.data());
    for (int64_t i = 0; i < n * k; ++i) db[g * n * k + i] = static_cast<float>(out[i]);
  }
  return Status::Ok();
}

Status MxGroupedGemmWgradReference(const ProblemSpec& spec, const SymbolTable& symbols,
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
  std::vector<float> db(e * n * k);
  WS_RETURN_IF_ERROR(MxGroupedGemmWgrad(
      In(inputs, "dct").bytes.data(), In(inputs, "dct_scales").bytes.data(),
      In(inputs, "xt").bytes.data(), In(inputs, "xt_scales").bytes.data(), offs, m, n, k,
      db.data()));
  for (int64_t i = 0; i < e * n * k; ++i) StoreF32(Out(outputs, "db").bytes, i, db[i]);
  return Status::Ok();
}

}  // namespace ws::gemm

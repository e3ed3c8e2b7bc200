#include "problems/mxfp8_grouped_gemm_dgrad/reference.h"

#include "problems/bf16_gemm/gemm_common.h"
#include "problems/mxfp8_grouped_gemm_fwd/reference.h"

namespace ws::gemm {

Status MxGroupedGemmDgrad(const uint8_t* dc, const uint8_t* dc_scales, const uint8_t* bt,
                          const uint8_t* bt_scales, const std::vector<int32_t>& offs, int64_t m,
                          int64_t n, int64_t k, uint16_t* da) {
  // The forward GEMM with output width K and contraction N.
  return MxGroupedGemmFwd(dc, dc_scales, bt, bt_scales, offs, m, k, n, da);
}

Status MxGroupedGemmDgradReference(const ProblemSpec& spec, const SymbolTable& symbols,
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
  std::vector<uint16_t> da(m * k);
  WS_RETURN_IF_ERROR(MxGroupedGemmDgrad(
      In(inputs, "dc").bytes.data(), In(inputs, "dc_scales").bytes.data(),
      In(inputs, "bt").bytes.data(), In(inputs, "bt_scales").bytes.data(), offs, m, n, k,
      da.data()));
  for (int64_t i = 0; i < m * k; ++i) StoreU16(Out(outputs, "da").bytes, i, da[i]);
  return Status::Ok();
}

}  // namespace ws::gemm

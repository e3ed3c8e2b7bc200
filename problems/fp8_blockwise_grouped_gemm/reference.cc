#include "problems/fp8_blockwise_grouped_gemm/reference.h"

#include "problems/bf16_gemm/gemm_common.h"
#include "problems/bf16_grouped_gemm/reference.h"

namespace ws::gemm {

Status Fp8BlockwiseGroupedGemm(const uint8_t* a, const float* a_scales, const uint8_t* b,
                               const float* b_scales, const std::vector<int32_t>& offs,
                               int64_t m, int64_t n, int64_t k, uint16_t* c) {
  if (n % 128 != 0 || k % 128 != 0) {
    return Status::Error("N = {} and K = {} must be multiples of 128", n, k);
  }
  const int64_t e = static_cast<int64_t>(offs.size()), kb = k / 128, nb = n / 128;
  // Scaling each element by its block's scale before summing is the same sum, exactly, in double
  // (at most a 2^-1074 underflow difference, far below any tolerance).
  std::vector<double> da(m * k), db(e * n * k), dc(m * n);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t x = 0; x < k; ++x) {
      da[r * k + x] = E4M3ToDouble(a[r * k + x]) * static_cast<double>(a_scales[(x / 128) * m + r]);
    }
  }
  for (int64_t g = 0; g < e; ++g) {
    for (int64_t row = 0; row < n; ++row) {
      for (int64_t x = 0; x < k; ++x) {
        const int64_t i = (g * n + row) * k + x;
        db[i] = E4M3ToDouble(b[i]) *
                static_cast<double>(b_scales[(g * nb + row / 128) * kb + x / 128]);
      }
    }
  }
  WS_RETURN_IF_ERROR(
      GroupedGemmDouble(GroupedForm::kFwd, da.data(), db.data(), offs, m, n, k, dc.data()));
  for (int64_t i = 0; i < m * n; ++i) c[i] = DoubleToBf16(dc[i]);
  return Status::Ok();
}

Status Fp8BlockwiseGroupedGemmReference(const ProblemSpec& spec, const SymbolTable& symbols,
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
  const HostTensor& as = In(inputs, "a_scales");
  const HostTensor& bs = In(inputs, "b_scales");
  std::vector<float> sa(as.bytes.size() / 4), sb(bs.bytes.size() / 4);
  for (size_t i = 0; i < sa.size(); ++i) sa[i] = LoadF32(as.bytes, i);
  for (size_t i = 0; i < sb.size(); ++i) sb[i] = LoadF32(bs.bytes, i);
  std::vector<uint16_t> c(m * n);
  WS_RETURN_IF_ERROR(Fp8BlockwiseGroupedGemm(In(inputs, "a").bytes.data(), sa.data(),
                                             In(inputs, "b").bytes.data(), sb.data(), offs, m, n,
                                             k, c.data()));
  for (int64_t i = 0; i < m * n; ++i) StoreU16(Out(outputs, "c").bytes, i, c[i]);
  return Status::Ok();
}

}  // namespace ws::gemm

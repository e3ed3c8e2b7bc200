#include "problems/bf16_grouped_gemm/reference.h"

#include "problems/bf16_gemm/gemm_common.h"

namespace ws::gemm {
namespace {

// [rows, cols] -> [cols, rows].
std::vector<double> Transpose(const double* x, int64_t rows, int64_t cols) {
  std::vector<double> t(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) t[c * rows + r] = x[r * cols + c];
  }
  return t;
}

}  // namespace

Status GroupedGemmDouble(GroupedForm form, const double* a, const double* b,
                         const std::vector<int32_t>& offs, int64_t m, int64_t n, int64_t k,
                         double* out) {
  WS_ASSIGN_OR_RETURN(std::vector<int64_t> starts, GroupStarts(offs, m, 1));
  const int64_t e = static_cast<int64_t>(offs.size());
  switch (form) {
    case GroupedForm::kFwd:
      for (int64_t g = 0; g < e; ++g) {
        const int64_t r0 = starts[g], rows = starts[g + 1] - r0;
        GemmABt(a + r0 * k, k, b + g * n * k, k, rows, n, k, out + r0 * n);
      }
      break;
    case GroupedForm::kDgrad:
      for (int64_t g = 0; g < e; ++g) {
        const int64_t r0 = starts[g], rows = starts[g + 1] - r0;
        const std::vector<double> bt = Transpose(b + g * n * k, n, k);  // [K, N]
        GemmABt(a + r0 * n, n, bt.data(), n, rows, k, n, out + r0 * k);
      }
      break;
    case GroupedForm::kWgrad: {
      const std::vector<double> at = Transpose(a, m, n), bt = Transpose(b, m, k);  // [N,M], [K,M]
      for (int64_t g = 0; g < e; ++g) {
        const int64_t r0 = starts[g], rows = starts[g + 1] - r0;
        GemmABt(at.data() + r0, m, bt.data() + r0, m, n, k, rows, out + g * n * k);
      }
      break;
    }
  }
  return Status::Ok();
}

Status Bf16GroupedGemm(GroupedForm form, const uint16_t* a, const uint16_t* b,
                       const std::vector<int32_t>& offs, int64_t m, int64_t n, int64_t k,
                       uint16_t* out) {
  const int64_t e = static_cast<int64_t>(offs.size());
  const int64_t a_cols = form == GroupedForm::kFwd ? k : n;
  const int64_t b_size = form == GroupedForm::kWgrad ? m * k : e * n * k;
  const int64_t out_size = form == GroupedForm::kFwd ? m * n : form == GroupedForm::kDgrad
                                                                   ? m * k
                                                                   : e * n * k;
  std::vector<double> da(m * a_cols), db(b_size), dout(out_size);
  for (int64_t i = 0; i < m * a_cols; ++i) da[i] = Bf16ToDouble(a[i]);
  for (int64_t i = 0; i < b_size; ++i) db[i] = Bf16ToDouble(b[i]);
  WS_RETURN_IF_ERROR(GroupedGemmDouble(form, da.data(), db.data(), offs, m, n, k, dout.data()));
  for (int64_t i = 0; i < out_size; ++i) out[i] = DoubleToBf16(dout[i]);
  return Status::Ok();
}

Status Bf16GroupedGemmReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                const std::map<std::string, std::string>& params,
                                const TensorMap& inputs, TensorMap& outputs) {
  WS_ASSIGN_OR_RETURN(int64_t m, Symbol(symbols, "M"));
  WS_ASSIGN_OR_RETURN(int64_t e, Symbol(symbols, "E"));
  WS_ASSIGN_OR_RETURN(int64_t n, Symbol(symbols, "N"));
  WS_ASSIGN_OR_RETURN(int64_t k, Symbol(symbols, "K"));
  const auto it = params.find("form");
  const ParamSpec* p = spec.FindParam("form");
  const std::string form_name = it != params.end() ? it->second : p ? p->default_value : "fwd";
  GroupedForm form;
  if (form_name == "fwd") {
    form = GroupedForm::kFwd;
  } else if (form_name == "dgrad") {
    form = GroupedForm::kDgrad;
  } else if (form_name == "wgrad") {
    form = GroupedForm::kWgrad;
  } else {
    return Status::Error("unknown form '{}'", form_name);
  }
  const HostTensor& a = In(inputs, "a");
  const HostTensor& b = In(inputs, "b");
  std::vector<uint16_t> av(a.bytes.size() / 2), bv(b.bytes.size() / 2);
  for (size_t i = 0; i < av.size(); ++i) av[i] = LoadU16(a.bytes, i);
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = LoadU16(b.bytes, i);
  std::vector<int32_t> offs(e);
  for (int64_t g = 0; g < e; ++g) offs[g] = LoadI32(In(inputs, "offs").bytes, g);
  HostTensor& out = Out(outputs, "out");
  std::vector<uint16_t> ov(out.bytes.size() / 2);
  WS_RETURN_IF_ERROR(Bf16GroupedGemm(form, av.data(), bv.data(), offs, m, n, k, ov.data()));
  for (size_t i = 0; i < ov.size(); ++i) StoreU16(out.bytes, i, ov[i]);
  return Status::Ok();
}

}  // namespace ws::gemm

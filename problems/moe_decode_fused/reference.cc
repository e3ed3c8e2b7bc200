#include "problems/moe_decode_fused/reference.h"

#include <algorithm>
#include <cmath>

#include "problems/bf16_gemm/gemm_common.h"

namespace ws::gemm {

Status MoeDecodeFused(const MoeDecodeShape& s, const uint16_t* x, const int32_t* topk_ids,
                      const float* topk_weights, const uint16_t* w13, const uint16_t* w2,
                      uint16_t* y) {
  std::vector<double> xt(s.h), h(s.i), acc(s.h);
  for (int64_t t = 0; t < s.t; ++t) {
    for (int64_t c = 0; c < s.h; ++c) xt[c] = Bf16ToDouble(x[t * s.h + c]);
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t j = 0; j < s.topk; ++j) {
      const int64_t e = topk_ids[t * s.topk + j];
      if (e < 0 || e >= s.e) {
        return Status::Error("topk_ids[{}, {}] = {} is not an expert in [0, {})", t, j, e, s.e);
      }
      const uint16_t* gate = w13 + e * 2 * s.i * s.h;
      const uint16_t* up = gate + s.i * s.h;
      for (int64_t r = 0; r < s.i; ++r) {
        double g = 0, u = 0;
        for (int64_t c = 0; c < s.h; ++c) {
          g += Bf16ToDouble(gate[r * s.h + c]) * xt[c];
          u += Bf16ToDouble(up[r * s.h + c]) * xt[c];
        }
        h[r] = g / (1.0 + std::exp(-g)) * u;
      }
      const double w = topk_weights[t * s.topk + j];
      const uint16_t* down = w2 + e * s.h * s.i;
      for (int64_t c = 0; c < s.h; ++c) {
        double d = 0;
        for (int64_t r = 0; r < s.i; ++r) d += Bf16ToDouble(down[c * s.i + r]) * h[r];
        acc[c] += w * d;
      }
    }
    for (int64_t c = 0; c < s.h; ++c) y[t * s.h + c] = DoubleToBf16(acc[c]);
  }
  return Status::Ok();
}

Status MoeDecodeFusedReference(const ProblemSpec& spec, const SymbolTable& symbols,
                               const std::map<std::string, std::string>& params,
                               const TensorMap& inputs, TensorMap& outputs) {
  (void)spec;
  (void)params;
  MoeDecodeShape s;
  WS_ASSIGN_OR_RETURN(s.t, Symbol(symbols, "T"));
  WS_ASSIGN_OR_RETURN(s.h, Symbol(symbols, "H"));
  WS_ASSIGN_OR_RETURN(s.i, Symbol(symbols, "I"));
  WS_ASSIGN_OR_RETURN(s.e, Symbol(symbols, "E"));
  WS_ASSIGN_OR_RETURN(s.topk, Symbol(symbols, "TOPK"));
  auto u16 = [&](std::string_view name) {
    const HostTensor& t = In(inputs, name);
    std::vector<uint16_t> v(t.bytes.size() / 2);
    for (size_t i = 0; i < v.size(); ++i) v[i] = LoadU16(t.bytes, i);
    return v;
  };
  const std::vector<uint16_t> x = u16("x"), w13 = u16("w13"), w2 = u16("w2");
  std::vector<int32_t> ids(s.t * s.topk);
  std::vector<float> w(s.t * s.topk);
  for (int64_t i = 0; i < s.t * s.topk; ++i) {
    ids[i] = LoadI32(In(inputs, "topk_ids").bytes, i);
    w[i] = LoadF32(In(inputs, "topk_weights").bytes, i);
  }
  std::vector<uint16_t> y(s.t * s.h);
  WS_RETURN_IF_ERROR(MoeDecodeFused(s, x.data(), ids.data(), w.data(), w13.data(), w2.data(),
                                    y.data()));
  for (int64_t i = 0; i < s.t * s.h; ++i) StoreU16(Out(outputs, "y").bytes, i, y[i]);
  return Status::Ok();
}

}  // namespace ws::gemm

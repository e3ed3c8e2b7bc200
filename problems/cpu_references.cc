// The CPU reference registry: an explicit table, since a static library drops objects whose only
// job is a static initializer that registers itself.

#include <cstring>
#include <vector>

#include <fmt/ranges.h>

#include "problems/bf16_gemm/reference.h"
#include "problems/bf16_grouped_gemm/reference.h"
#include "problems/fp8_blockwise_grouped_gemm/reference.h"
#include "problems/fp8_rowwise_gemm/reference.h"
#include "problems/moe_decode_fused/reference.h"
#include "problems/moe_permute_quantize/reference.h"
#include "problems/moe_unpermute_combine/reference.h"
#include "problems/mxfp8_dequantize/reference.h"
#include "problems/mxfp8_grouped_gemm_dgrad/reference.h"
#include "problems/mxfp8_grouped_gemm_fwd/reference.h"
#include "problems/mxfp8_grouped_gemm_wgrad/reference.h"
#include "problems/mxfp8_quantize_colwise/reference.h"
#include "problems/mxfp8_quantize_dual/reference.h"
#include "problems/mxfp8_quantize_expert_weights/reference.h"
#include "problems/mxfp8_quantize_rowwise/reference.h"
#include "problems/mxfp8_scales_to_blocked/reference.h"
#include "problems/problems.h"
#include "problems/rmsnorm_quantize/reference.h"
#include "problems/router_topk_sigmoid_grouped/reference.h"
#include "problems/router_topk_softmax/reference.h"
#include "problems/swiglu_quantize_bwd/reference.h"
#include "problems/swiglu_quantize_fwd/reference.h"

namespace ws {
namespace {

Status Mxfp8QuantizeRowwise(const ProblemSpec& spec, const SymbolTable& symbols,
                            const std::map<std::string, std::string>& params,
                            const TensorMap& inputs, TensorMap& outputs) {
  const auto m = symbols.find("M"), k = symbols.find("K");
  if (m == symbols.end() || k == symbols.end())
    return Status::Error("symbols M and K needed");
  if (k->second % 32 != 0)
    return Status::Error("K = {} is not a multiple of 32", k->second);
  const auto it = params.find("rounding");
  const ParamSpec* p = spec.FindParam("rounding");
  const std::string rounding = it != params.end() ? it->second : p ? p->default_value : "rceil";
  mxfp8::Rounding mode;
  if (rounding == "rceil") {
    mode = mxfp8::Rounding::kRceil;
  } else if (rounding == "floor") {
    mode = mxfp8::Rounding::kFloor;
  } else {
    return Status::Error("unknown rounding '{}'", rounding);
  }
  const HostTensor& x = inputs.find("x")->second;
  HostTensor& q = outputs.find("q")->second;
  HostTensor& scales = outputs.find("scales")->second;
  // NOTE: rows go through an aligned uint16 buffer: x holds raw bytes, and reading them as
  // uint16_t in place would break aliasing rules.
  const int64_t cols = k->second;
  std::vector<uint16_t> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < m->second; ++r) {
    std::memcpy(row.data(), x.bytes.data() + r * cols * 2, static_cast<size_t>(cols) * 2);
    mxfp8::QuantizeRowwise(row.data(), 1, cols, mode, q.bytes.data() + r * cols,
                           scales.bytes.data() + r * (cols / 32));
  }
  return Status::Ok();
}

Status Mxfp8Dequantize(const ProblemSpec& spec, const SymbolTable& symbols,
                       const std::map<std::string, std::string>& params, const TensorMap& inputs,
                       TensorMap& outputs) {
  (void)spec;
  (void)params;
  const auto m = symbols.find("M"), k = symbols.find("K");
  if (m == symbols.end() || k == symbols.end())
    return Status::Error("symbols M and K needed");
  if (k->second % 32 != 0)
    return Status::Error("K = {} is not a multiple of 32", k->second);
  const HostTensor& q = inputs.find("q")->second;
  const HostTensor& scales = inputs.find("scales")->second;
  HostTensor& y = outputs.find("y")->second;
  // NOTE: rows go through an aligned uint16 buffer and are stored little-endian byte by byte: y
  // holds raw bytes, and writing them as uint16_t in place would break aliasing rules.
  const int64_t cols = k->second;
  std::vector<uint16_t> row(static_cast<size_t>(cols));
  for (int64_t r = 0; r < m->second; ++r) {
    mxfp8::DequantizeRowwise(q.bytes.data() + r * cols, scales.bytes.data() + r * (cols / 32), 1,
                             cols, row.data());
    uint8_t* dst = y.bytes.data() + r * cols * 2;
    for (int64_t c = 0; c < cols; ++c) {
      dst[2 * c] = static_cast<uint8_t>(row[c] & 0xFF);
      dst[2 * c + 1] = static_cast<uint8_t>(row[c] >> 8);
    }
  }
  return Status::Ok();
}

struct Entry {
  std::string_view name;
  CpuReferenceFn fn;
};

constexpr Entry kReferences[] = {
    {"bf16_gemm", &gemm::Bf16GemmReference},
    {"fp8_rowwise_gemm", &gemm::Fp8RowwiseGemmReference},
    {"bf16_grouped_gemm", &gemm::Bf16GroupedGemmReference},
    {"mxfp8_grouped_gemm_fwd", &gemm::MxGroupedGemmFwdReference},
    {"mxfp8_grouped_gemm_dgrad", &gemm::MxGroupedGemmDgradReference},
    {"mxfp8_grouped_gemm_wgrad", &gemm::MxGroupedGemmWgradReference},
    {"fp8_blockwise_grouped_gemm", &gemm::Fp8BlockwiseGroupedGemmReference},
    {"moe_decode_fused", &gemm::MoeDecodeFusedReference},
    {"mxfp8_quantize_rowwise", &Mxfp8QuantizeRowwise},
    {"mxfp8_dequantize", &Mxfp8Dequantize},
    {"router_topk_softmax", &router::RouterTopkSoftmaxReference},
    {"router_topk_sigmoid_grouped", &router::RouterTopkSigmoidGroupedReference},
    {"moe_permute_quantize", &moe::MoePermuteQuantizeReference},
    {"moe_unpermute_combine", &moe::MoeUnpermuteCombineReference},
    {"mxfp8_quantize_colwise", &mxfp8::QuantizeColwiseReference},
    {"mxfp8_quantize_dual", &mxfp8::QuantizeDualReference},
    {"mxfp8_quantize_expert_weights", &mxfp8::QuantizeExpertWeightsReference},
    {"mxfp8_scales_to_blocked", &mxfp8::ScalesToBlockedReference},
    {"rmsnorm_quantize", &mxfp8::RmsNormQuantizeReference},
    {"swiglu_quantize_fwd", &mxfp8::SwigluQuantizeFwdReference},
    {"swiglu_quantize_bwd", &mxfp8::SwigluQuantizeBwdReference},
};

}  // namespace

const CpuReferenceFn* FindCpuReference(std::string_view name) {
  for (const Entry& e : kReferences) {
    if (e.name == name)
      return &e.fn;
  }
  return nullptr;
}

Result<TensorMap> RunCpuReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                  const std::map<std::string, std::string>& params,
                                  const TensorMap& inputs) {
  const CpuReferenceFn* fn = FindCpuReference(spec.cpu_reference);
  if (fn == nullptr) {
    return Status::Error("{}: no CPU reference registered as '{}'", spec.name, spec.cpu_reference);
  }
  for (const auto& [name, t] : inputs) {
    const TensorSpec* ts = spec.FindTensor(name);
    if (ts == nullptr || ts->role != TensorRole::kInput) {
      return Status::Error("{}: '{}' is not an input tensor", spec.name, name);
    }
  }
  TensorMap outputs;
  for (const TensorSpec& ts : spec.tensors) {
    Result<std::vector<int64_t>> dims = TensorDims(ts, symbols);
    if (!dims.ok())
      return dims.status().Context(spec.name);
    WS_ASSIGN_OR_RETURN(int64_t numel, TensorNumel(ts, symbols));
    const size_t bytes = static_cast<size_t>(numel) * DTypeSize(ts.dtype);
    if (ts.role == TensorRole::kOutput) {
      outputs[ts.name] = HostTensor{ts.dtype, *dims, std::vector<uint8_t>(bytes, 0)};
      continue;
    }
    const auto it = inputs.find(ts.name);
    if (it == inputs.end())
      return Status::Error("{}: input '{}' missing", spec.name, ts.name);
    const HostTensor& in = it->second;
    if (in.dtype != ts.dtype) {
      return Status::Error("{}: input '{}' is {}, the spec says {}", spec.name, ts.name,
                           DTypeName(in.dtype), DTypeName(ts.dtype));
    }
    if (in.dims != *dims) {
      return Status::Error("{}: input '{}' has dims [{}], the spec says [{}]", spec.name, ts.name,
                           fmt::join(in.dims, ", "), fmt::join(*dims, ", "));
    }
    if (in.bytes.size() != bytes) {
      return Status::Error("{}: input '{}' holds {} bytes, its dims need {}", spec.name, ts.name,
                           in.bytes.size(), bytes);
    }
  }
  WS_RETURN_IF_ERROR((*fn)(spec, symbols, params, inputs, outputs).Context(spec.cpu_reference));
  return outputs;
}

}  // namespace ws

// The problem set: specs, the shape/cost expression language, CPU references and .npy tensors.
//
// A problem lives in problems/<name>/: spec.json (the contract), reference.cc (the CPU reference,
// registered by name), reference.cu (the GPU reference kernel, candidate format) and baseline.cu (a
// plain, correct kernel as a competent user would first write it; also the agents' starting kernel).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace ws {

// ---- Expressions --------------------------------------------------------------------------------
// Integer expressions over named symbols: literals, identifiers, + - * / % (C semantics on int64),
// comparisons (== != < <= > >=, yielding 0/1), && || !, unary -, parentheses, and the functions
// ceil_div(a,b), round_up(a,b), min(a,b), max(a,b), pow2(a), log2_floor(a). Every operation is
// overflow-checked; division by zero and unknown names are errors that quote the expression.

using SymbolTable = std::map<std::string, int64_t, std::less<>>;

/// Evaluates `expr` with `symbols` bound. Errors name the expression and what failed.
Result<int64_t> EvalExpr(std::string_view expr, const SymbolTable& symbols);

/// Parses only (no evaluation): reports syntax errors and returns the identifiers used, so a
/// loader can reject unknown names up front.
Result<std::vector<std::string>> ExprIdentifiers(std::string_view expr);

// ---- Data types ---------------------------------------------------------------------------------

enum class DType { kBF16, kF32, kF16, kFP8E4M3, kFP8E5M2, kE8M0, kU8, kI32, kI64 };

/// Bytes per element.
int DTypeSize(DType t);
/// "bf16", "fp8_e4m3", "e8m0", ...
std::string_view DTypeName(DType t);
Result<DType> ParseDType(std::string_view name);

// ---- Specs --------------------------------------------------------------------------------------

enum class TensorRole { kInput, kOutput };

/// How an input tensor's values are drawn. Generated on the device by the runner (and on the host
/// by the same code, see GenerateInput) from (seed, element index), so any case can be replayed.
/// Which fields apply depends on `dist` (docs/problem-format.md); expressions (`experts`, `k`,
/// `total`) are evaluated with the shape's symbols.
struct InitSpec {
  // "normal", "uniform", "mx_blocks", "normal_outliers", "topk_ids", "group_offsets"
  std::string dist = "normal";
  double mean = 0.0;
  double stddev = 1.0;          // normal, mx_blocks, normal_outliers
  double lo = -1.0, hi = 1.0;   // uniform
  double outlier_fraction = 0;  // normal_outliers: this fraction of elements ...
  double outlier_scale = 1;     // ... is multiplied by this
  std::string experts, k;       // topk_ids: ids in [0, experts), k distinct per row
  std::string total;            // group_offsets: the last END offset
  int64_t align = 1;            // group_offsets: every group size is a multiple of this
  double skew = 0;              // topk_ids, group_offsets: 0 = uniform
  double empty = 0;             // group_offsets: about this fraction of groups is empty
  bool mx_tiles = false;        // mx_blocks: one kind per 32x32 tile (rows and columns both)
  // Other numeric fields under one value of a parameter (spec "by_param", e.g. balanced routing
  // where "routing" is "balanced"): the whole init for that setting, the same dist.
  struct ByParam {
    std::string param;
    int64_t value = 0;  // the value's index, as expressions see the parameter
    std::shared_ptr<const InitSpec> init;
  };
  std::vector<ByParam> by_param;
};

/// The init an input is drawn with under `symbols` (which bind each parameter to its value's
/// index): its by_param entry for those values, else `in` itself.
const InitSpec& InitFor(const InitSpec& in, const SymbolTable& symbols);

struct TensorSpec {
  std::string name;
  DType dtype = DType::kBF16;
  std::vector<std::string> shape;  // expressions over the problem's symbols
  TensorRole role = TensorRole::kInput;
  InitSpec init;                   // inputs only
};

/// A problem parameter with enumerated values, e.g. rounding = rceil | floor. Kernels see it as
/// -DWS_<NAME>=<index> plus -DWS_<NAME>_<VALUE>=<index> for each value; expressions see <name>
/// bound to the index.
struct ParamSpec {
  std::string name;
  std::vector<std::string> values;
  std::string default_value;
};

/// One concrete shape: symbol values, plus where the shape comes from (bench shapes).
struct Shape {
  SymbolTable symbols;
  std::string source;  // "DeepSeek-V3 permuted activations", empty for test shapes
};

enum class ToleranceKind { kExact, kUlp, kClose, kGemm, kMxData, kMxScales, kCustom };

/// How one output is compared with the reference (docs/problem-format.md, evaluator/check.cc).
struct Tolerance {
  ToleranceKind kind = ToleranceKind::kExact;
  int64_t max_ulp = 0;             // ulp: "max"; mx_data: "max_ulp" (E4M3/E5M2 ulps)
  double rtol = 0, atol = 0;       // close
  // gemm: ||got-want||_F <= rel_frobenius ||want||_F; |got-want| <= elem_rtol |want| +
  // elem_rms rms(want) for >= elem_fraction of elements; none beyond worst_rms rms(want).
  double rel_frobenius = 3e-3;
  double elem_rtol = 1.0 / 128;
  double elem_rms = 1.0 / 256;
  double elem_fraction = 0.9999;
  double worst_rms = 0.05;
  std::string partner;             // mx_data: its scales output; mx_scales: its data output
  double scale_mismatch_fraction = 0.001;  // mx_data
  std::string checker;             // custom: the name registered in evaluator/check.cc
  std::map<std::string, double> options;   // custom: free numeric settings for the checker
};

/// "exact", "ulp", "close", "gemm", "mx_data", "mx_scales", "custom".
std::string_view ToleranceKindName(ToleranceKind k);

struct ProblemSpec {
  std::string name;
  std::string description;
  std::string dir;                          // folder holding spec.json
  std::vector<std::string> symbols;         // shape symbols, e.g. M, K
  std::vector<std::string> constraints;     // expressions that must be non-zero for a valid shape
  std::vector<ParamSpec> params;
  std::vector<TensorSpec> tensors;
  std::vector<Shape> test_shapes;
  std::vector<Shape> bench_shapes;
  std::vector<Shape> hidden_shapes;         // never shown to an agent
  std::string cost_bytes;                   // minimum bytes moved
  std::map<std::string, std::string> cost_flops;  // math class ("bf16", "fp8") -> FLOPs
  std::map<std::string, Tolerance> tolerance;     // per output tensor
  std::string cpu_reference;                // registered name
  std::string gpu_reference;                // path relative to dir
  std::string baseline;                     // path relative to dir
  std::string starting_kernel;              // path relative to dir

  const TensorSpec* FindTensor(std::string_view name) const;
  const ParamSpec* FindParam(std::string_view name) const;
};

/// Library baselines: "cublaslt:<op>" in a spec's "baseline", run by the trusted runner
/// (evaluator/runner/library_baselines.cc) instead of a kernel file.
inline constexpr std::string_view kLibraryBaselines[] = {"cublaslt:bf16_gemm",
                                                         "cublaslt:fp8_rowwise_gemm"};
inline bool IsLibraryBaseline(std::string_view baseline) {
  return baseline.starts_with("cublaslt:");
}
inline bool KnownLibraryBaseline(std::string_view baseline) {
  for (std::string_view b : kLibraryBaselines) {
    if (b == baseline) return true;
  }
  return false;
}

/// Loads and validates problems/<...>/spec.json. Every error names the file and the field
/// ("problems/x/spec.json: tensors[1].shape[0]: unknown symbol 'N'").
Result<ProblemSpec> LoadProblem(const std::string& spec_path);

/// Loads every problems/*/spec.json under `root`, sorted by name.
Result<std::vector<ProblemSpec>> LoadProblemSet(const std::string& root);

/// The same, for the folders `want` accepts only (by folder name, which is the problem's name):
/// a broken spec elsewhere in the set does not stop work on these.
Result<std::vector<ProblemSpec>> LoadProblemSet(
    const std::string& root, const std::function<bool(std::string_view)>& want);

/// Parameter values chosen for one evaluation: defaults overridden by --set NAME=VALUE.
/// Unknown names or values are errors listing the allowed ones.
Result<std::map<std::string, std::string>> ResolveParams(
    const ProblemSpec& spec, const std::map<std::string, std::string>& overrides);

/// Symbols for expressions: the shape's symbols plus each parameter bound to its value index.
SymbolTable BindSymbols(const ProblemSpec& spec, const Shape& shape,
                        const std::map<std::string, std::string>& params);

/// "M=131072 K=7168": the shape's symbols in the spec's order.
std::string ShapeText(const ProblemSpec& spec, const Shape& shape);

/// Checks a shape against the spec's symbols and constraints.
Status ValidateShape(const ProblemSpec& spec, const Shape& shape);

/// Element count of a tensor at `symbols` (overflow-checked).
Result<int64_t> TensorNumel(const TensorSpec& t, const SymbolTable& symbols);
Result<std::vector<int64_t>> TensorDims(const TensorSpec& t, const SymbolTable& symbols);

// ---- Host tensors and .npy files ----------------------------------------------------------------

/// A dense host tensor holding raw bytes (bf16 as uint16 patterns, fp8 and e8m0 as uint8).
struct HostTensor {
  DType dtype = DType::kU8;
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;
  int64_t numel() const;
};

/// .npy v1/v2, C order, little endian. bf16 is stored as '<u2', fp8/e8m0 as '|u1'; on reading,
/// the expected dtype decides how raw words are interpreted, and the file's word size must match.
Result<HostTensor> ReadNpy(const std::string& path, DType expected);
Status WriteNpy(const std::string& path, const HostTensor& t);

// ---- CPU references -----------------------------------------------------------------------------

using TensorMap = std::map<std::string, HostTensor, std::less<>>;

/// A CPU reference: fills `outputs` (already sized from the spec) from `inputs`.
using CpuReferenceFn = Status (*)(const ProblemSpec& spec, const SymbolTable& symbols,
                                  const std::map<std::string, std::string>& params,
                                  const TensorMap& inputs, TensorMap& outputs);

/// Registered CPU references by name (as written in a spec's "cpu_reference").
const CpuReferenceFn* FindCpuReference(std::string_view name);

// ---- Input generation on the host -------------------------------------------------------------

/// Input spec.tensors[index] at `symbols`, generated on the host bit for bit as the runner does on
/// the device (problems/init.h) for the case seed `seed`; tensor_index is the position in
/// spec.tensors, as in the runner's jobs.
Result<HostTensor> GenerateInput(const ProblemSpec& spec, const SymbolTable& symbols, size_t index,
                                 uint64_t seed);

/// Every input of the spec, by name.
Result<TensorMap> GenerateInputs(const ProblemSpec& spec, const SymbolTable& symbols,
                                 uint64_t seed);

/// The init fields the runner's job carries for an input (docs/runner-protocol.md): counts and
/// sizes (expressions evaluated to integers, e.g. "experts": 256, "k": 8) apart from the real
/// parameters (e.g. "skew": 1.2), so each travels as its JSON type.
struct InitFields {
  std::map<std::string, int64_t> ints;
  std::map<std::string, double> reals;
};
Result<InitFields> InitJobFields(const TensorSpec& t, const SymbolTable& symbols);

/// Runs a problem's CPU reference: checks the inputs' dtypes and dims against the spec, allocates
/// the outputs and calls the registered function.
Result<TensorMap> RunCpuReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                  const std::map<std::string, std::string>& params,
                                  const TensorMap& inputs);

}  // namespace ws

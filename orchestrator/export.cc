// `warpsmith export`: selection from the store and the cmake and torch generators. The host
// launchers are generated from each kernel's plan: every plan expression is translated to C++
// over checked int64 helpers (the expression language's semantics), evaluated at run time from the
// caller's shape symbols, with knobs and parameters fixed to the exported values.
#include "orchestrator/export.h"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/files.h"
#include "evaluator/evaluator.h"
#include "orchestrator/bundle.h"

namespace ws {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// ---- Expressions to C++ -------------------------------------------------------------------------

// Precedence as in problems/expr.cc, loosest first: || && (== !=) (< <= > >=) (+ -) (* / %) unary.
class CppTranslator {
 public:
  explicit CppTranslator(std::string_view expr) : s_(expr) {}

  Result<std::string> Run() {
    WS_ASSIGN_OR_RETURN(std::string out, Or());
    Skip();
    if (pos_ < s_.size())
      return Fail("unexpected '{}'", s_[pos_]);
    return out;
  }

 private:
  template <typename... Args>
  Status Fail(fmt::format_string<Args...> f, Args&&... args) const {
    return Status::Error("expression '{}' at column {}: {}", s_, pos_ + 1,
                         fmt::format(f, std::forward<Args>(args)...));
  }
  void Skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool Accept(std::string_view op, char not_before = '\0') {
    Skip();
    if (s_.substr(pos_, op.size()) != op)
      return false;
    if (not_before != '\0' && pos_ + op.size() < s_.size() && s_[pos_ + op.size()] == not_before) {
      return false;
    }
    pos_ += op.size();
    return true;
  }
  static std::string Bool(const std::string& cond) {
    return "((" + cond + ") ? int64_t{1} : int64_t{0})";
  }

  Result<std::string> Or() {
    WS_ASSIGN_OR_RETURN(std::string l, And());
    while (Accept("||")) {
      WS_ASSIGN_OR_RETURN(std::string r, And());
      l = Bool("(" + l + ") != 0 || (" + r + ") != 0");
    }
    return l;
  }
  Result<std::string> And() {
    WS_ASSIGN_OR_RETURN(std::string l, Equality());
    while (Accept("&&")) {
      WS_ASSIGN_OR_RETURN(std::string r, Equality());
      l = Bool("(" + l + ") != 0 && (" + r + ") != 0");
    }
    return l;
  }
  Result<std::string> Equality() {
    WS_ASSIGN_OR_RETURN(std::string l, Relational());
    for (;;) {
      std::string op;
      if (Accept("==")) {
        op = "==";
      } else if (Accept("!=")) {
        op = "!=";
      } else {
        return l;
      }
      WS_ASSIGN_OR_RETURN(std::string r, Relational());
      l = Bool("(" + l + ") " + op + " (" + r + ")");
    }
  }
  Result<std::string> Relational() {
    WS_ASSIGN_OR_RETURN(std::string l, Additive());
    for (;;) {
      std::string op;
      if (Accept("<=")) {
        op = "<=";
      } else if (Accept(">=")) {
        op = ">=";
      } else if (Accept("<")) {
        op = "<";
      } else if (Accept(">")) {
        op = ">";
      } else {
        return l;
      }
      WS_ASSIGN_OR_RETURN(std::string r, Additive());
      l = Bool("(" + l + ") " + op + " (" + r + ")");
    }
  }
  Result<std::string> Additive() {
    WS_ASSIGN_OR_RETURN(std::string l, Multiplicative());
    for (;;) {
      const char* fn;
      if (Accept("+")) {
        fn = "Add";
      } else if (Accept("-")) {
        fn = "Sub";
      } else {
        return l;
      }
      WS_ASSIGN_OR_RETURN(std::string r, Multiplicative());
      l = fmt::format("wsd::{}(e, {}, {})", fn, l, r);
    }
  }
  Result<std::string> Multiplicative() {
    WS_ASSIGN_OR_RETURN(std::string l, Unary());
    for (;;) {
      const char* fn;
      if (Accept("*")) {
        fn = "Mul";
      } else if (Accept("/")) {
        fn = "Div";
      } else if (Accept("%")) {
        fn = "Mod";
      } else {
        return l;
      }
      WS_ASSIGN_OR_RETURN(std::string r, Unary());
      l = fmt::format("wsd::{}(e, {}, {})", fn, l, r);
    }
  }
  Result<std::string> Unary() {
    if (++depth_ > 100)
      return Fail("nested more than 100 levels deep");
    Result<std::string> out = Status::Error("unreachable");
    if (Accept("-")) {
      WS_ASSIGN_OR_RETURN(std::string v, Unary());
      out = "wsd::Neg(e, " + v + ")";
    } else if (Accept("!", '=')) {
      WS_ASSIGN_OR_RETURN(std::string v, Unary());
      out = Bool("(" + v + ") == 0");
    } else if (Accept("+")) {
      out = Unary();
    } else {
      out = Primary();
    }
    --depth_;
    return out;
  }
  Result<std::string> Primary() {
    Skip();
    if (pos_ >= s_.size())
      return Fail("unexpected end of expression");
    const char c = s_[pos_];
    if (Accept("(")) {
      WS_ASSIGN_OR_RETURN(std::string v, Or());
      if (!Accept(")"))
        return Fail("expected ')'");
      return "(" + v + ")";
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      const size_t at = pos_;
      int64_t v = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        if (__builtin_mul_overflow(v, int64_t{10}, &v) ||
            __builtin_add_overflow(v, int64_t{s_[pos_] - '0'}, &v)) {
          return Fail("integer literal too large");
        }
        ++pos_;
      }
      if (pos_ < s_.size() && IsIdent(s_[pos_]))
        return Fail("unexpected '{}' after number", s_[pos_]);
      return fmt::format("int64_t{{{}}}", s_.substr(at, pos_ - at));
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const size_t at = pos_;
      while (pos_ < s_.size() && IsIdent(s_[pos_])) ++pos_;
      const std::string name(s_.substr(at, pos_ - at));
      if (!Accept("("))
        return "v_" + name;
      const int arity = name == "pow2" || name == "log2_floor" ? 1
                        : name == "ceil_div" || name == "round_up" || name == "min" || name == "max"
                            ? 2
                            : 0;
      if (arity == 0)
        return Fail("unknown function '{}'", name);
      std::vector<std::string> args;
      for (int i = 0; i < arity; ++i) {
        if (i > 0 && !Accept(","))
          return Fail("'{}' takes {} arguments", name, arity);
        WS_ASSIGN_OR_RETURN(std::string a, Or());
        args.push_back(a);
      }
      if (!Accept(")"))
        return Fail("'{}' takes {} argument(s); expected ')'", name, arity);
      if (name == "min")
        return fmt::format("wsd::Min({}, {})", args[0], args[1]);
      if (name == "max")
        return fmt::format("wsd::Max({}, {})", args[0], args[1]);
      if (name == "pow2")
        return fmt::format("wsd::Pow2(e, {})", args[0]);
      if (name == "log2_floor")
        return fmt::format("wsd::Log2Floor(e, {})", args[0]);
      if (name == "ceil_div")
        return fmt::format("wsd::CeilDiv(e, {}, {})", args[0], args[1]);
      return fmt::format("wsd::RoundUp(e, {}, {})", args[0], args[1]);
    }
    return Fail("unexpected '{}'", c);
  }
  static bool IsIdent(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

  std::string_view s_;
  size_t pos_ = 0;
  int depth_ = 0;
};

// ---- Templates ----------------------------------------------------------------------------------

// The launchers' runtime: checked arithmetic with the expression language's rules, the evaluator's
// launch bounds, and the launch itself.
constexpr std::string_view kPlanRuntime =
    R"GEN(// Generated by warpsmith export. The run-time support of the generated launchers: checked int64
// arithmetic with the rules of warpsmith's plan expressions (overflow, division by zero and
// out-of-range pow2/log2_floor are errors; && and || short-circuit), the evaluator's launch
// bounds, and the launch.
#pragma once

#include <cstdint>
#include <limits>
#include <string>

#include <cuda.h>  // CUtensorMap and its enums only: the driver is reached through cudart
#include <cuda_runtime.h>

namespace warpsmith::detail {

struct Eval {
  const char* error = nullptr;  // the first failure
};

inline int64_t Fail(Eval& e, const char* what) {
  if (e.error == nullptr) e.error = what;
  return 0;
}
inline int64_t Add(Eval& e, int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? Fail(e, "overflow in '+'") : r;
}
inline int64_t Sub(Eval& e, int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_sub_overflow(a, b, &r) ? Fail(e, "overflow in '-'") : r;
}
inline int64_t Mul(Eval& e, int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? Fail(e, "overflow in '*'") : r;
}
inline int64_t Neg(Eval& e, int64_t a) {
  int64_t r = 0;
  return __builtin_sub_overflow(int64_t{0}, a, &r) ? Fail(e, "overflow in unary '-'") : r;
}
inline int64_t Div(Eval& e, int64_t a, int64_t b) {
  if (b == 0) return Fail(e, "division by zero");
  if (a == std::numeric_limits<int64_t>::min() && b == -1) return Fail(e, "overflow in '/'");
  return a / b;
}
inline int64_t Mod(Eval& e, int64_t a, int64_t b) {
  if (b == 0) return Fail(e, "division by zero");
  if (a == std::numeric_limits<int64_t>::min() && b == -1) return Fail(e, "overflow in '%'");
  return a % b;
}
inline int64_t CeilDiv(Eval& e, int64_t a, int64_t b) {
  if (b == 0) return Fail(e, "division by zero in ceil_div");
  if (a == std::numeric_limits<int64_t>::min() && b == -1) return Fail(e, "overflow in ceil_div");
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) == (b < 0))) ++q;  // C truncates; ceil goes up when positive
  return q;
}
inline int64_t RoundUp(Eval& e, int64_t a, int64_t b) {
  if (b == 0) return Fail(e, "division by zero in round_up");
  const int64_t q = CeilDiv(e, a, b);
  int64_t r = 0;
  return __builtin_mul_overflow(q, b, &r) ? Fail(e, "overflow in round_up") : r;
}
inline int64_t Min(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t Max(int64_t a, int64_t b) { return a < b ? b : a; }
inline int64_t Pow2(Eval& e, int64_t a) {
  if (a < 0 || a > 62) return Fail(e, "pow2 out of range [0, 62]");
  return int64_t{1} << a;
}
inline int64_t Log2Floor(Eval& e, int64_t a) {
  if (a < 1) return Fail(e, "log2_floor needs a positive argument");
  return 63 - __builtin_clzll(static_cast<unsigned long long>(a));
}

/// The last failure of a generated function on this thread ("" after a success).
inline thread_local std::string last_error;

inline cudaError_t Error(const char* function, const char* where, const char* what,
                         cudaError_t code = cudaErrorInvalidValue) {
  last_error = std::string(function) + ": " + where + ": " + what;
  return code;
}

inline bool ToI32(int64_t v, int32_t* out) {
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
    return false;
  }
  *out = static_cast<int32_t>(v);
  return true;
}

struct Launch {
  int64_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1}, cluster[3] = {1, 1, 1};
  int64_t smem = 0;
  bool pdl = false;  // programmatic stream serialization
};

/// The evaluator's bounds (grid, block, cluster, shared memory), then the launch. Returns
/// cudaErrorInvalidValue with last_error set when a bound fails.
inline cudaError_t LaunchKernel(const char* function, const char* where, const void* kernel,
                                const Launch& l, void** args, cudaStream_t stream) {
  const int64_t grid_max[3] = {2147483647, 65535, 65535};
  const int64_t block_max[3] = {1024, 1024, 64};
  int64_t threads = 1, cluster = 1;
  for (int d = 0; d < 3; ++d) {
    if (l.grid[d] < 1 || l.grid[d] > grid_max[d]) return Error(function, where, "grid out of range");
    if (l.block[d] < 1 || l.block[d] > block_max[d]) {
      return Error(function, where, "block out of range");
    }
    if (l.cluster[d] < 1 || l.cluster[d] > 16) return Error(function, where, "cluster out of range");
    if (l.grid[d] % l.cluster[d] != 0) {
      return Error(function, where, "grid is not a multiple of the cluster");
    }
    threads *= l.block[d];
    cluster *= l.cluster[d];
  }
  if (threads > 1024) return Error(function, where, "more than 1024 threads per block");
  if (cluster > 16) return Error(function, where, "cluster larger than 16");
  if (l.smem < 0 || l.smem > 227 * 1024) return Error(function, where, "smem out of range");
  cudaError_t err = cudaSuccess;
  if (l.smem > 48 * 1024) {
    err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(l.smem));
    if (err != cudaSuccess) return Error(function, where, cudaGetErrorString(err), err);
  }
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(l.grid[0]), static_cast<unsigned>(l.grid[1]),
                     static_cast<unsigned>(l.grid[2]));
  cfg.blockDim = dim3(static_cast<unsigned>(l.block[0]), static_cast<unsigned>(l.block[1]),
                      static_cast<unsigned>(l.block[2]));
  cfg.dynamicSmemBytes = static_cast<size_t>(l.smem);
  cfg.stream = stream;
  cudaLaunchAttribute attr[2];
  unsigned n_attr = 0;
  if (cluster > 1) {
    if (cluster > 8) {
      err = cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
      if (err != cudaSuccess) return Error(function, where, cudaGetErrorString(err), err);
    }
    attr[n_attr].id = cudaLaunchAttributeClusterDimension;
    attr[n_attr].val.clusterDim.x = static_cast<unsigned>(l.cluster[0]);
    attr[n_attr].val.clusterDim.y = static_cast<unsigned>(l.cluster[1]);
    attr[n_attr].val.clusterDim.z = static_cast<unsigned>(l.cluster[2]);
    ++n_attr;
  }
  if (l.pdl) {
    attr[n_attr].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n_attr].val.programmaticStreamSerializationAllowed = 1;
    ++n_attr;
  }
  if (n_attr > 0) {
    cfg.attrs = attr;
    cfg.numAttrs = n_attr;
  }
  err = cudaLaunchKernelExC(&cfg, kernel, args);
  if (err != cudaSuccess) return Error(function, where, cudaGetErrorString(err), err);
  return cudaSuccess;
}

using TensorMapEncodeTiled = CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*,
                                          const cuuint64_t*, const cuuint64_t*, const cuuint32_t*,
                                          const cuuint32_t*, CUtensorMapInterleave,
                                          CUtensorMapSwizzle, CUtensorMapL2promotion,
                                          CUtensorMapFloatOOBfill);

/// The driver's cuTensorMapEncodeTiled, found through the runtime so the package does not link
/// libcuda itself; nullptr when the driver lacks it.
inline TensorMapEncodeTiled TensorMapEncoder() {
  static const TensorMapEncodeTiled fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
#if CUDART_VERSION >= 12050
    cudaError_t err = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000,
                                                       cudaEnableDefault, &found);
#else
    cudaError_t err = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &p, cudaEnableDefault,
                                              &found);
#endif
    return err == cudaSuccess && found == cudaDriverEntryPointSuccess
               ? reinterpret_cast<TensorMapEncodeTiled>(p)
               : nullptr;
  }();
  return fn;
}

/// A plan's tensor map over the contiguous row-major tensor at `address` (`numel` elements of
/// `esize` bytes), checked as the evaluator checks it, then encoded. dims, box and element
/// strides innermost first. A tensor without elements gets a zeroed map, as in the evaluator.
inline cudaError_t EncodeTensorMap(const char* function, const char* where, CUtensorMap* out,
                                   const void* address, CUtensorMapDataType type, int64_t esize,
                                   int64_t numel, int rank, const int64_t* dims,
                                   const int64_t* box, const int64_t* element_strides,
                                   CUtensorMapSwizzle swizzle, int64_t swizzle_bytes,
                                   CUtensorMapL2promotion l2, CUtensorMapFloatOOBfill oob) {
  *out = CUtensorMap{};
  cuuint64_t gdim[5] = {}, gstride[4] = {};
  cuuint32_t bdim[5] = {}, estride[5] = {};
  int64_t product = 1, stride = esize;
  bool empty = false;
  for (int d = 0; d < rank; ++d) {
    if (dims[d] < 0 || dims[d] > (int64_t{1} << 32)) return Error(function, where, "dims out of range");
    if (box[d] < 1 || box[d] > 256) return Error(function, where, "box out of [1, 256]");
    if (element_strides[d] < 1 || element_strides[d] > 8) {
      return Error(function, where, "element_strides out of [1, 8]");
    }
    empty = empty || dims[d] == 0;
    if (!empty && product > numel / dims[d]) {
      return Error(function, where, "dims do not match the tensor");
    }
    product = empty ? 0 : product * dims[d];
    if (d > 0) {
      if (!empty && (stride % 16 != 0 || stride >= (int64_t{1} << 40))) {
        return Error(function, where, "a stride is not a multiple of 16 bytes");
      }
      gstride[d - 1] = static_cast<cuuint64_t>(stride);
    }
    stride = empty ? 0 : stride * dims[d];
    gdim[d] = static_cast<cuuint64_t>(dims[d]);
    bdim[d] = static_cast<cuuint32_t>(box[d]);
    estride[d] = static_cast<cuuint32_t>(element_strides[d]);
  }
  if (product != numel) return Error(function, where, "dims do not match the tensor");
  if (box[0] * esize % 16 != 0 || (swizzle_bytes > 0 && box[0] * esize > swizzle_bytes)) {
    return Error(function, where, "box[0] does not fit 16-byte units or the swizzle span");
  }
  if (empty) return cudaSuccess;
  TensorMapEncodeTiled encode = TensorMapEncoder();
  if (encode == nullptr) {
    return Error(function, where, "the driver has no cuTensorMapEncodeTiled", cudaErrorNotSupported);
  }
  CUresult r = encode(out, type, static_cast<cuuint32_t>(rank), const_cast<void*>(address), gdim,
                      rank > 1 ? gstride : nullptr, bdim, estride, CU_TENSOR_MAP_INTERLEAVE_NONE,
                      swizzle, l2, oob);
  if (r != CUDA_SUCCESS) return Error(function, where, "cuTensorMapEncodeTiled failed");
  return cudaSuccess;
}

/// A stream-ordered scratch buffer, freed on the stream when it goes out of scope.
struct AsyncBuffer {
  void* ptr = nullptr;
  cudaStream_t stream = nullptr;
  AsyncBuffer() = default;
  AsyncBuffer(const AsyncBuffer&) = delete;
  AsyncBuffer& operator=(const AsyncBuffer&) = delete;
  ~AsyncBuffer() {
    if (ptr != nullptr) cudaFreeAsync(ptr, stream);
  }
};

}  // namespace warpsmith::detail
)GEN";

std::string Join(const std::vector<std::string>& v, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? std::string(sep) : "") + v[i];
  return out;
}

std::string CType(DType t) {
  switch (t) {
    case DType::kBF16:
    case DType::kF16:
      return "uint16_t";
    case DType::kF32:
      return "float";
    case DType::kI32:
      return "int32_t";
    case DType::kI64:
      return "int64_t";
    default:
      return "uint8_t";
  }
}

std::string TorchDType(DType t) {
  switch (t) {
    case DType::kBF16:
      return "at::kBFloat16";
    case DType::kF16:
      return "at::kHalf";
    case DType::kF32:
      return "at::kFloat";
    case DType::kFP8E4M3:
      return "at::kFloat8_e4m3fn";
    case DType::kFP8E5M2:
      return "at::kFloat8_e5m2";
    case DType::kI32:
      return "at::kInt";
    case DType::kI64:
      return "at::kLong";
    default:
      return "at::kByte";  // e8m0 and u8: raw bytes
  }
}

std::string CString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// One line of a comment: no newlines, no comment terminators.
std::string CommentText(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r')
      c = ' ';
  }
  for (size_t at; (at = s.find("*/")) != std::string::npos;) s.replace(at, 2, "* /");
  return s;
}

std::string ParamsText(const std::map<std::string, std::string>& params) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : params) parts.push_back(k + "=" + v);
  return parts.empty() ? "no parameters" : Join(parts, ", ");
}

// The C++ signature's parameter list: tensors in spec order, then the shape symbols.
std::string Signature(const ProblemSpec& spec) {
  std::vector<std::string> parts;
  for (const auto& t : spec.tensors) {
    parts.push_back(fmt::format("{}{}* {}", t.role == TensorRole::kInput ? "const " : "",
                                CType(t.dtype), t.name));
  }
  for (const auto& s : spec.symbols) parts.push_back("int64_t " + s);
  parts.push_back("cudaStream_t stream");
  return Join(parts, ", ");
}

std::string KernelSymbol(const ExportItem& it, size_t index) {
  return fmt::format("wsx_{}_kernel_{}", it.function, index);
}

// The distinct kernels of a plan, in first-launch order.
std::vector<std::string> PlanKernels(const Plan& plan) {
  std::vector<std::string> out;
  for (const auto& l : plan.launches) {
    if (std::find(out.begin(), out.end(), l.kernel) == out.end())
      out.push_back(l.kernel);
  }
  return out;
}

// The device-code translation unit: the kernel source verbatim, its kernels renamed (two
// parameter settings of one problem define the same extern "C" names), and a getter per kernel
// for the launcher. `inline_defines`: the defines as #define lines (torch), else -D (cmake).
std::string KernelUnit(const ExportItem& it, const std::string& source_file, bool inline_defines) {
  std::string out = fmt::format(
      "// Generated by warpsmith export: device code of {} ({}), kernel {} (sha256 {}).\n",
      it.spec.name, ParamsText(it.params), it.kernel.id, it.kernel.hash);
  if (inline_defines) {
    for (const auto& [k, v] : KernelDefines(it.spec, it.params, it.knobs)) {
      out += fmt::format("#define {} {}\n", k, v);
    }
  }
  const auto kernels = PlanKernels(it.plan);
  for (const auto& k : kernels) out += fmt::format("#define {} wsx_{}__{}\n", k, it.function, k);
  out += fmt::format("#include \"{}\"\n\n", source_file);
  for (size_t i = 0; i < kernels.size(); ++i) {
    out += fmt::format(
        "extern \"C\" const void* {}() {{ return reinterpret_cast<const void*>(&{}); }}\n",
        KernelSymbol(it, i), kernels[i]);
  }
  return out;
}

// The plan's tensor maps, encoded from the caller's pointers and symbols before the launches,
// with the checks ResolvePlan makes.
Result<std::string> TensorMapCode(const ExportItem& it) {
  std::string out;
  for (const auto& [name, m] : it.plan.tensor_maps) {
    const TensorSpec* t = it.spec.FindTensor(m.tensor);
    if (t == nullptr) return Status::Error("tensor_maps.{}: unknown tensor '{}'", name, m.tensor);
    std::string numel = "int64_t{1}";
    for (const auto& d : t->shape) {
      WS_ASSIGN_OR_RETURN(std::string c, ExprToCpp(d));
      numel = fmt::format("wsd::Mul(e, {}, {})", numel, c);
    }
    std::vector<std::string> dims, box, strides;
    for (size_t d = 0; d < m.dims.size(); ++d) {
      WS_ASSIGN_OR_RETURN(std::string dc, ExprToCpp(m.dims[d]));
      WS_ASSIGN_OR_RETURN(std::string bc, ExprToCpp(m.box[d]));
      std::string sc = "1";
      if (!m.element_strides.empty()) {
        WS_ASSIGN_OR_RETURN(sc, ExprToCpp(m.element_strides[d]));
      }
      dims.push_back(dc);
      box.push_back(bc);
      strides.push_back(sc);
    }
    const char* type = "CU_TENSOR_MAP_DATA_TYPE_UINT8";
    switch (t->dtype) {
      case DType::kBF16: type = "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16"; break;
      case DType::kF16: type = "CU_TENSOR_MAP_DATA_TYPE_FLOAT16"; break;
      case DType::kF32: type = "CU_TENSOR_MAP_DATA_TYPE_FLOAT32"; break;
      case DType::kI32: type = "CU_TENSOR_MAP_DATA_TYPE_INT32"; break;
      case DType::kI64: type = "CU_TENSOR_MAP_DATA_TYPE_INT64"; break;
      default: break;  // fp8, e8m0, u8: bytes
    }
    const char* swizzle = m.swizzle == 32    ? "CU_TENSOR_MAP_SWIZZLE_32B"
                          : m.swizzle == 64  ? "CU_TENSOR_MAP_SWIZZLE_64B"
                          : m.swizzle == 128 ? "CU_TENSOR_MAP_SWIZZLE_128B"
                                             : "CU_TENSOR_MAP_SWIZZLE_NONE";
    const char* l2 = m.l2_promotion == 64    ? "CU_TENSOR_MAP_L2_PROMOTION_L2_64B"
                     : m.l2_promotion == 128 ? "CU_TENSOR_MAP_L2_PROMOTION_L2_128B"
                     : m.l2_promotion == 256 ? "CU_TENSOR_MAP_L2_PROMOTION_L2_256B"
                                             : "CU_TENSOR_MAP_L2_PROMOTION_NONE";
    const std::string where = CString("tensor_maps." + name);
    out += fmt::format(
        "  CUtensorMap map_{0};  // {1}\n  {{\n"
        "    const int64_t numel = {2};\n"
        "    const int64_t dims[] = {{{3}}};\n"
        "    const int64_t box[] = {{{4}}};\n"
        "    const int64_t strides[] = {{{5}}};\n"
        "    if (e.error != nullptr) return wsd::Error(\"{6}\", {7}, e.error);\n"
        "    err = wsd::EncodeTensorMap(\"{6}\", {7}, &map_{0}, {8}, {9}, {10}, numel, {11}, dims, "
        "box, strides, {12}, {13}, {14}, {15});\n"
        "    if (err != cudaSuccess) return err;\n  }}\n",
        name, CommentText("tensor " + m.tensor), numel, Join(dims, ", "), Join(box, ", "),
        Join(strides, ", "), it.function, where, m.tensor, type, DTypeSize(t->dtype),
        m.dims.size(), swizzle, m.swizzle, l2,
        m.oob_nan ? "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA"
                  : "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE");
  }
  return out;
}

// The host launcher, generated from the plan.
Result<std::string> LauncherUnit(const ExportItem& it) {
  const ProblemSpec& spec = it.spec;
  const auto kernels = PlanKernels(it.plan);
  std::string out = fmt::format(
      "// Generated by warpsmith export from the plan of kernel {} (sha256 {}): {} ({}).\n"
      "#include <cstdint>\n\n#include <cuda.h>\n#include <cuda_runtime.h>\n\n"
      "#include \"warpsmith/detail/plan_runtime.h\"\n#include \"warpsmith/kernels.h\"\n\n",
      it.kernel.id, it.kernel.hash, spec.name, ParamsText(it.params));
  for (size_t i = 0; i < kernels.size(); ++i) {
    out += fmt::format("extern \"C\" const void* {}();  // {}\n", KernelSymbol(it, i), kernels[i]);
  }
  const std::string fn = it.function;
  out += fmt::format("\nnamespace warpsmith {{\n\ncudaError_t {}({}) {{\n", fn, Signature(spec));
  out += "  namespace wsd = ::warpsmith::detail;\n  wsd::last_error.clear();\n  wsd::Eval e;\n";
  for (const auto& s : spec.symbols) out += fmt::format("  const int64_t v_{0} = {0};\n", s);
  for (const auto& p : spec.params) {
    const std::string& v = it.params.at(p.name);
    const auto idx = std::find(p.values.begin(), p.values.end(), v) - p.values.begin();
    out += fmt::format("  [[maybe_unused]] const int64_t v_{} = {};  // {}\n", p.name, idx, v);
  }
  for (const auto& [k, v] : it.knobs) {
    out += fmt::format("  [[maybe_unused]] const int64_t v_{} = {};  // knob\n", k, v);
  }
  // The problem's constraints: a shape the kernel was never checked on is refused.
  for (size_t i = 0; i < spec.constraints.size(); ++i) {
    WS_ASSIGN_OR_RETURN(std::string c, ExprToCpp(spec.constraints[i]));
    out += fmt::format(
        "  if ({} == 0 || e.error != nullptr) {{\n"
        "    return wsd::Error(\"{}\", {}, e.error ? e.error : \"the shape violates it\");\n  }}\n",
        c, fn, CString("constraint " + spec.constraints[i]));
  }
  out += fmt::format(
      "  int device = 0, sms = 0;\n"
      "  cudaError_t err = cudaGetDevice(&device);\n"
      "  if (err == cudaSuccess) {{\n"
      "    err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);\n"
      "  }}\n"
      "  if (err != cudaSuccess) return wsd::Error(\"{0}\", \"device\", cudaGetErrorString(err), "
      "err);\n"
      "  [[maybe_unused]] const int64_t v_num_sms = sms;\n",
      fn);
  WS_ASSIGN_OR_RETURN(std::string wsb, ExprToCpp(it.plan.workspace_bytes));
  out += fmt::format(
      "  const int64_t workspace_bytes = {};\n"
      "  if (e.error != nullptr || workspace_bytes < 0) {{\n"
      "    return wsd::Error(\"{}\", \"workspace.bytes\", e.error ? e.error : \"negative\");\n  "
      "}}\n"
      "  wsd::AsyncBuffer workspace;\n  workspace.stream = stream;\n"
      "  if (workspace_bytes > 0) {{\n"
      "    err = cudaMallocAsync(&workspace.ptr, static_cast<size_t>(workspace_bytes), stream);\n"
      "    if (err != cudaSuccess) return wsd::Error(\"{}\", \"workspace\", "
      "cudaGetErrorString(err), err);\n",
      wsb, fn, fn);
  if (it.plan.workspace_zero) {
    out += fmt::format(
        "    err = cudaMemsetAsync(workspace.ptr, 0, static_cast<size_t>(workspace_bytes), "
        "stream);\n"
        "    if (err != cudaSuccess) return wsd::Error(\"{}\", \"workspace\", "
        "cudaGetErrorString(err), err);\n",
        fn);
  }
  out += "  }\n";
  WS_ASSIGN_OR_RETURN(std::string maps, TensorMapCode(it));
  out += maps;
  const bool conditional = std::any_of(it.plan.launches.begin(), it.plan.launches.end(),
                                       [](const PlanLaunch& l) { return !l.when.empty(); });
  if (conditional) out += "  bool launched = false;  // some launch has run (PDL may follow it)\n";
  for (size_t li = 0; li < it.plan.launches.size(); ++li) {
    const PlanLaunch& l = it.plan.launches[li];
    const std::string where = fmt::format("launch[{}] ({})", li, l.kernel);
    if (!l.when.empty()) {
      // As in ResolvePlan: a launch whose "when" is 0 at this shape is left out.
      WS_ASSIGN_OR_RETURN(std::string w, ExprToCpp(l.when));
      out += fmt::format(
          "  const bool run_{0} = ({1}) != 0;\n"
          "  if (e.error != nullptr) return wsd::Error(\"{2}\", {3}, e.error);\n"
          "  if (run_{0})\n",
          li, w, fn, CString(where + ".when"));
    }
    out += fmt::format("  {{  // {}\n    wsd::Launch l;\n", CommentText(where));
    auto dims = [&](const std::vector<std::string>& exprs, const char* what) -> Status {
      for (size_t d = 0; d < exprs.size(); ++d) {
        WS_ASSIGN_OR_RETURN(std::string c, ExprToCpp(exprs[d]));
        out += fmt::format("    l.{}[{}] = {};\n", what, d, c);
      }
      return Status::Ok();
    };
    WS_RETURN_IF_ERROR(dims(l.grid, "grid"));
    WS_RETURN_IF_ERROR(dims(l.block, "block"));
    WS_RETURN_IF_ERROR(dims(l.cluster, "cluster"));
    WS_ASSIGN_OR_RETURN(std::string smem, ExprToCpp(l.smem));
    out += fmt::format("    l.smem = {};\n", smem);
    // As in the runner: the first launch must not overlap the caller's earlier stream work.
    if (!l.pdl.empty() && (conditional || li > 0)) {
      const std::string first = conditional ? "launched" : "true";
      if (l.pdl == "1") {
        out += fmt::format("    l.pdl = {};\n", first);
      } else {
        WS_ASSIGN_OR_RETURN(std::string p, ExprToCpp(l.pdl));
        out += fmt::format(
            "    l.pdl = {} && ({}) != 0;\n"
            "    if (e.error != nullptr) return wsd::Error(\"{}\", {}, e.error);\n",
            first, p, fn, CString(where + ".pdl"));
      }
    }
    std::vector<std::string> arg_refs;
    for (size_t ai = 0; ai < l.args.size(); ++ai) {
      const PlanArg& a = l.args[ai];
      if (a.kind == PlanArg::Kind::kTensorMap) {
        arg_refs.push_back(fmt::format("&map_{}", a.text));  // by value: the 128 bytes
        continue;
      }
      if (a.kind == PlanArg::Kind::kWorkspace) {
        out += fmt::format("    void* a{} = workspace.ptr;\n", ai);
      } else if (a.kind != PlanArg::Kind::kI64 && spec.FindTensor(a.text)) {
        out += fmt::format("    void* a{} = const_cast<void*>(static_cast<const void*>({}));\n", ai,
                           a.text);
      } else if (a.kind == PlanArg::Kind::kI64) {
        WS_ASSIGN_OR_RETURN(std::string c, ExprToCpp(a.text));
        out += fmt::format("    int64_t a{} = {};\n", ai, c);
      } else {
        WS_ASSIGN_OR_RETURN(std::string c, ExprToCpp(a.text));
        out += fmt::format(
            "    int32_t a{0} = 0;\n"
            "    if (!wsd::ToI32({1}, &a{0}) && e.error == nullptr) e.error = \"args[{0}] does not "
            "fit in int32\";\n",
            ai, c);
      }
      arg_refs.push_back(fmt::format("&a{}", ai));
    }
    const size_t kernel_index =
        std::find(kernels.begin(), kernels.end(), l.kernel) - kernels.begin();
    out += fmt::format(
        "    if (e.error != nullptr) return wsd::Error(\"{0}\", {1}, e.error);\n"
        "    void* args[] = {{{2}}};\n"
        "    err = wsd::LaunchKernel(\"{0}\", {1}, {3}(), l, args, stream);\n"
        "    if (err != cudaSuccess) return err;\n{4}  }}\n",
        fn, CString(where), arg_refs.empty() ? "nullptr" : Join(arg_refs, ", "),
        KernelSymbol(it, kernel_index), conditional ? "    launched = true;\n" : "");
  }
  if (conditional) {
    out += fmt::format(
        "  if (!launched) return wsd::Error(\"{}\", \"launch\", \"no launch's when holds at this "
        "shape\");\n",
        fn);
  }
  out += "  return cudaSuccess;\n}\n\n}  // namespace warpsmith\n";
  return out;
}

std::string TensorDoc(const ProblemSpec& spec) {
  std::string out;
  for (const auto& t : spec.tensors) {
    out += fmt::format("///   {} {} [{}] ({}, device memory, contiguous)\n", t.name,
                       DTypeName(t.dtype), Join(t.shape, ", "),
                       t.role == TensorRole::kInput ? "input" : "output");
  }
  return out;
}

std::string Header(const std::vector<ExportItem>& items) {
  std::string out =
      "// Generated by warpsmith export: one function per exported kernel (problem and parameter\n"
      "// setting). Tensors are device pointers to contiguous row-major memory (bf16/f16 as "
      "uint16\n"
      "// bit patterns, fp8/e8m0/u8 as bytes); the shape symbols are the problem's; the kernels\n"
      "// run on `stream`. A shape outside the problem's constraints or a plan bound returns\n"
      "// cudaErrorInvalidValue; warpsmith::last_error() says why.\n"
      "#pragma once\n\n#include <cstdint>\n\n#include <cuda_runtime.h>\n\nnamespace warpsmith {\n\n"
      "/// Why the last call on this thread failed (\"\" after a success).\n"
      "const char* last_error();\n\n";
  for (const auto& it : items) {
    out += fmt::format(
        "/// {} ({}): kernel {} (sha256 {}), {}{}.\n", it.spec.name, ParamsText(it.params),
        it.kernel.id, it.kernel.hash.substr(0, 16), it.verified ? "verified" : "UNVERIFIED",
        it.evaluation.time_us > 0
            ? fmt::format(", {:.2f} us geomean on {}", it.evaluation.time_us, it.evaluation.gpu)
            : "");
    out += TensorDoc(it.spec);
    out += fmt::format("cudaError_t {}({} = nullptr);\n\n", it.function, Signature(it.spec));
  }
  out += "}  // namespace warpsmith\n";
  return out;
}

constexpr std::string_view kCommonUnit = R"GEN(// Generated by warpsmith export.
#include "warpsmith/detail/plan_runtime.h"
#include "warpsmith/kernels.h"

namespace warpsmith {

const char* last_error() { return detail::last_error.c_str(); }

}  // namespace warpsmith
)GEN";

json ManifestEntry(const ExportItem& it) {
  json j;
  j["function"] = it.function;
  j["problem"] = it.spec.name;
  j["params"] = it.params;
  j["kernel"] = {{"id", it.kernel.id},
                 {"hash", it.kernel.hash},
                 {"origin", it.kernel.origin},
                 {"agent", it.kernel.agent}};
  j["evaluation"] = {{"id", it.evaluation.id},
                     {"verdict", it.evaluation.verdict},
                     {"gpu", it.evaluation.gpu},
                     {"arch", it.evaluation.arch},
                     {"time_us", it.evaluation.time_us},
                     {"sol_fraction", it.evaluation.sol_fraction},
                     {"created_at", it.evaluation.created_at},
                     {"flagged", it.evaluation.flagged},
                     {"flag_reason", it.evaluation.flag_reason}};
  j["verified"] = it.verified;
  j["knobs"] = it.knobs;
  return j;
}

Status WriteManifest(const std::vector<ExportItem>& items, const ExportOptions& opts,
                     const std::string& extra_readme) {
  json m;
  m["format"] = opts.format;
  m["generator"] = "warpsmith export";
  m["gpu"] = opts.gpu;
  m["include_unverified"] = opts.include_unverified;
  m["kernels"] = json::array();
  for (const auto& it : items) m["kernels"].push_back(ManifestEntry(it));
  WS_RETURN_IF_ERROR(WriteFileAtomic(opts.out + "/MANIFEST.json", m.dump(2) + "\n"));
  std::string readme = fmt::format(
      "# warpsmith export ({})\n\nGenerated by `warpsmith export --format {}`. What it holds:\n\n"
      "| function | problem | params | kernel | verdict | GPU | time (us) | knobs |\n"
      "|---|---|---|---|---|---|---|---|\n",
      opts.format, opts.format);
  for (const auto& it : items) {
    std::vector<std::string> knobs;
    for (const auto& [k, v] : it.knobs) knobs.push_back(fmt::format("{}={}", k, v));
    readme += fmt::format(
        "| `{}` | {} | {} | {} (`{}`) | {}{} | {} | {} | {} |\n", it.function, it.spec.name,
        ParamsText(it.params), it.kernel.id, it.kernel.hash.substr(0, 12), it.evaluation.verdict,
        it.verified ? "" : " (UNVERIFIED)", it.evaluation.gpu.empty() ? "-" : it.evaluation.gpu,
        it.evaluation.time_us > 0 ? fmt::format("{:.2f}", it.evaluation.time_us) : "-",
        Join(knobs, " "));
  }
  readme += "\nMANIFEST.json holds the same in machine-readable form.\n\n" + extra_readme;
  return WriteFileAtomic(opts.out + "/README.md", readme);
}

Status CopyTree(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::create_directories(to.parent_path(), ec);
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec)
    return Status::Error("copying {} to {}: {}", from.string(), to.string(), ec.message());
  return Status::Ok();
}

// The CPU references and the checker, copied from the warpsmith tree for the package's test:
// base/, every problem's headers and sources (the reference table names them all), the exported
// problems' spec.json without hidden shapes, and the checker.
Status ShipReference(const std::vector<ExportItem>& items, const fs::path& src,
                     const fs::path& dst) {
  auto ship = [&](const fs::path& rel) { return CopyTree(src / rel, dst / rel); };
  for (const char* f : {"base/status.h", "base/status.cc", "base/files.h", "base/files.cc",
                        "evaluator/check.cc", "evaluator/internal.h", "evaluator/evaluator.h",
                        "evaluator/runner/sample.h", "evaluator/runner/tensor_map.h"}) {
    WS_RETURN_IF_ERROR(ship(f));
  }
  // problems/ includes problems/include: the references' own headers, beside the references.
  for (const char* dir : {"problems", "evaluator/checkers"}) {
    std::error_code ec;
    for (auto e = fs::recursive_directory_iterator(src / dir, ec);
         !ec && e != fs::recursive_directory_iterator(); e.increment(ec)) {
      if (!e->is_regular_file())
        continue;
      const std::string name = e->path().filename().string();
      const std::string ext = e->path().extension().string();
      const bool ref_header = ext == ".cuh";  // problems/include: what the references include
      if ((ext != ".h" && ext != ".cc" && !ref_header) || name.ends_with("_test.cc"))
        continue;
      WS_RETURN_IF_ERROR(ship(fs::relative(e->path(), src)));
    }
    if (ec)
      return Status::Error("reading {}: {}", (src / dir).string(), ec.message());
  }
  std::set<std::string> done;
  for (const auto& it : items) {
    if (!done.insert(it.spec.name).second)
      continue;
    WS_ASSIGN_OR_RETURN(std::string text, ReadFile(it.spec.dir + "/spec.json"));
    json spec;
    try {
      spec = json::parse(text);
    } catch (const json::exception& e) {
      return Status::Error("{}/spec.json: {}", it.spec.dir, e.what());
    }
    // Hidden shapes stay hidden; the test runs the test shapes (or any shape it is given).
    if (spec.contains("shapes"))
      spec["shapes"].erase("hidden");
    const fs::path to = dst / "problems" / it.spec.name / "spec.json";
    fs::create_directories(to.parent_path());
    // The trusted GPU reference, baseline and starting kernel the spec names: the spec loader
    // requires them, and they document the problem.
    for (const auto& e : fs::directory_iterator(it.spec.dir)) {
      if (e.is_regular_file() && e.path().extension() == ".cu") {
        WS_RETURN_IF_ERROR(CopyTree(e.path(), to.parent_path() / e.path().filename()));
      }
    }
    WS_RETURN_IF_ERROR(WriteFileAtomic(to.string(), spec.dump(2) + "\n"));
  }
  return Status::Ok();
}

std::string CmakeLists(const std::vector<ExportItem>& items, bool with_reference) {
  std::string sources, defines;
  for (const auto& it : items) {
    sources += fmt::format("  src/{0}.kernel.cu\n  src/{0}.launch.cc\n", it.function);
    std::vector<std::string> d;
    for (const auto& [k, v] : KernelDefines(it.spec, it.params, it.knobs)) d.push_back(k + "=" + v);
    defines += fmt::format(
        "set_source_files_properties(src/{}.kernel.cu PROPERTIES\n"
        "  COMPILE_DEFINITIONS \"{}\")\n",
        it.function, Join(d, ";"));
  }
  std::string out = fmt::format(R"CM(# Generated by warpsmith export: the warpsmith_kernels package.
#   find_package(warpsmith_kernels) -> target warpsmith::kernels (header <warpsmith/kernels.h>).
cmake_minimum_required(VERSION 3.24)
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES "90a;100a")
endif()
project(warpsmith_kernels LANGUAGES CXX CUDA)

set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
find_package(CUDAToolkit REQUIRED)

add_library(warpsmith_kernels STATIC
  src/common.cc
{})
# Each kernel is compiled with the parameter and knob values it was exported with.
{}target_include_directories(warpsmith_kernels PUBLIC
  $<BUILD_INTERFACE:${{CMAKE_CURRENT_SOURCE_DIR}}/include> $<INSTALL_INTERFACE:include>)
target_include_directories(warpsmith_kernels PRIVATE ${{CMAKE_CURRENT_SOURCE_DIR}}/src)
target_compile_options(warpsmith_kernels PRIVATE
  $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -lineinfo>)
target_link_libraries(warpsmith_kernels PUBLIC CUDA::cudart)
set_target_properties(warpsmith_kernels PROPERTIES EXPORT_NAME kernels)
add_library(warpsmith::kernels ALIAS warpsmith_kernels)

include(GNUInstallDirs)
install(TARGETS warpsmith_kernels EXPORT warpsmith_kernelsTargets
  ARCHIVE DESTINATION ${{CMAKE_INSTALL_LIBDIR}})
install(DIRECTORY include/ DESTINATION ${{CMAKE_INSTALL_INCLUDEDIR}})
install(EXPORT warpsmith_kernelsTargets NAMESPACE warpsmith::
  DESTINATION ${{CMAKE_INSTALL_LIBDIR}}/cmake/warpsmith_kernels)
install(FILES cmake/warpsmith_kernelsConfig.cmake
  DESTINATION ${{CMAKE_INSTALL_LIBDIR}}/cmake/warpsmith_kernels)
# find_package against the build tree too (warpsmith_kernels_DIR=<build>).
export(EXPORT warpsmith_kernelsTargets NAMESPACE warpsmith::
  FILE ${{CMAKE_CURRENT_BINARY_DIR}}/warpsmith_kernelsTargets.cmake)
configure_file(cmake/warpsmith_kernelsConfig.cmake
  ${{CMAKE_CURRENT_BINARY_DIR}}/warpsmith_kernelsConfig.cmake COPYONLY)

add_executable(warpsmith_kernels_example example/example.cc)
target_link_libraries(warpsmith_kernels_example PRIVATE warpsmith::kernels)
)CM",
                                sources, defines);
  if (with_reference) {
    out += R"CM(
# The test: every function against the problem's CPU reference (shipped in reference/).
option(WARPSMITH_KERNELS_TESTS "build the test against the CPU references" ON)
if(WARPSMITH_KERNELS_TESTS)
  find_package(fmt QUIET)
  find_package(nlohmann_json QUIET)
  if(fmt_FOUND AND nlohmann_json_FOUND)
    file(GLOB_RECURSE WSX_REFERENCE_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/reference/*.cc)
    add_library(warpsmith_reference STATIC ${WSX_REFERENCE_SOURCES})
    target_include_directories(warpsmith_reference PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/reference)
    target_link_libraries(warpsmith_reference PUBLIC fmt::fmt-header-only
      PRIVATE nlohmann_json::nlohmann_json)
    add_executable(warpsmith_kernels_test test/kernels_test.cc test/l2_flush.cu)
    target_link_libraries(warpsmith_kernels_test PRIVATE warpsmith::kernels warpsmith_reference)
    target_compile_definitions(warpsmith_kernels_test PRIVATE
      WSX_REFERENCE_DIR="${CMAKE_CURRENT_SOURCE_DIR}/reference")
    enable_testing()
    add_test(NAME warpsmith_kernels_test COMMAND warpsmith_kernels_test)
    # 77: no GPU here; the test skips and says so.
    set_tests_properties(warpsmith_kernels_test PROPERTIES SKIP_RETURN_CODE 77)
  else()
    message(STATUS "warpsmith_kernels: the test needs fmt and nlohmann_json; not built")
  endif()
endif()
)CM";
  }
  return out;
}

constexpr std::string_view kConfig = R"CM(# Generated by warpsmith export.
include(CMakeFindDependencyMacro)
find_dependency(CUDAToolkit)
include("${CMAKE_CURRENT_LIST_DIR}/warpsmith_kernelsTargets.cmake")
)CM";

std::string Example(const ExportItem& it) {
  // The smallest test shape, as the example's fixed shape.
  const ProblemSpec& spec = it.spec;
  const Shape* shape = nullptr;
  for (const auto& s : spec.test_shapes) {
    int64_t prod = 1;
    for (const auto& [k, v] : s.symbols) prod *= std::max<int64_t>(v, 1);
    int64_t best = 1;
    if (shape) {
      for (const auto& [k, v] : shape->symbols) best *= std::max<int64_t>(v, 1);
    }
    if (!shape || prod < best)
      shape = &s;
  }
  std::string symbols, sizes, allocs, frees, args;
  SymbolTable table;
  if (shape)
    table = BindSymbols(spec, *shape, it.params);
  for (const auto& s : spec.symbols) {
    symbols += fmt::format("  const int64_t {} = {};\n", s, table.count(s) ? table.at(s) : 1);
  }
  for (const auto& t : spec.tensors) {
    int64_t numel = 0;
    if (auto n = TensorNumel(t, table); n.ok())
      numel = *n;
    allocs += fmt::format(
        "  void* {0} = nullptr;  // {1} [{2}] = {3} elements\n"
        "  if (cudaMalloc(&{0}, {4}) != cudaSuccess || cudaMemset({0}, 0, {4}) != cudaSuccess) "
        "return 1;\n",
        t.name, DTypeName(t.dtype), Join(t.shape, ", "), numel,
        std::max<int64_t>(numel * DTypeSize(t.dtype), 1));
    frees += fmt::format("  cudaFree({});\n", t.name);
    args += fmt::format("static_cast<{}{}*>({}), ", t.role == TensorRole::kInput ? "const " : "",
                        CType(t.dtype), t.name);
  }
  for (const auto& s : spec.symbols) args += s + ", ";
  return fmt::format(
      R"GEN(// Generated by warpsmith export: calling {0} on one small shape (zero inputs).
#include <cstdio>

#include <cuda_runtime.h>

#include "warpsmith/kernels.h"

int main() {{
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {{
    std::printf("warpsmith_kernels_example: no GPU here; nothing to run\n");
    return 0;
  }}
{1}{2}  cudaStream_t stream = nullptr;
  cudaError_t err = warpsmith::{0}({3}stream);
  if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
  std::printf("warpsmith::{0}: %s %s\n", cudaGetErrorString(err), warpsmith::last_error());
{4}  return err == cudaSuccess ? 0 : 1;
}}
)GEN",
      it.function, symbols, allocs, args, frees);
}

// The benchmark's L2 flush: reads 4x the L2's size (a read leaves no dirty lines to write back
// during the timed call), as the evaluator's runner does.
constexpr std::string_view kL2Flush = R"GEN(// Generated by warpsmith export: the benchmark's L2 flush.
#include <cstdint>

#include <cuda_runtime.h>

namespace {

__global__ void ReadAll(const uint4* __restrict__ p, size_t n, unsigned* sink) {
  uint32_t acc = 0;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    const uint4 v = p[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9E3779B9u) *sink = acc;  // keeps the loads; practically never taken
}

}  // namespace

namespace wsx {

cudaError_t FlushL2(cudaStream_t stream) {
  static uint4* buffer = nullptr;
  static unsigned* sink = nullptr;
  static size_t n = 0;
  if (!buffer) {
    int device = 0, l2 = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device);
    n = 4 * static_cast<size_t>(l2 > 0 ? l2 : 64 << 20) / sizeof(uint4);
    if (err == cudaSuccess) err = cudaMalloc(&buffer, n * sizeof(uint4));
    if (err == cudaSuccess) err = cudaMalloc(&sink, sizeof(unsigned));
    if (err == cudaSuccess) err = cudaMemset(buffer, 1, n * sizeof(uint4));
    if (err != cudaSuccess) return err;
  }
  ReadAll<<<1024, 512, 0, stream>>>(buffer, n, sink);
  return cudaGetLastError();
}

}  // namespace wsx
)GEN";

std::string TestProgram(const std::vector<ExportItem>& items) {
  std::string calls, table;
  for (const auto& it : items) {
    std::vector<std::string> args;
    for (size_t i = 0; i < it.spec.tensors.size(); ++i) {
      const auto& t = it.spec.tensors[i];
      args.push_back(fmt::format("static_cast<{}{}*>(p[{}])",
                                 t.role == TensorRole::kInput ? "const " : "", CType(t.dtype), i));
    }
    for (const auto& s : it.spec.symbols) args.push_back(fmt::format("s.at(\"{}\")", s));
    calls += fmt::format(
        "cudaError_t Call_{}(const std::vector<void*>& p, const ws::SymbolTable& s) {{\n"
        "  return warpsmith::{}({}, nullptr);\n}}\n\n",
        it.function, it.function, Join(args, ", "));
    std::vector<std::string> params;
    for (const auto& [k, v] : it.params) params.push_back(fmt::format("{{\"{}\", \"{}\"}}", k, v));
    table += fmt::format("    {{\"{}\", \"{}\", {{{}}}, &Call_{}}},\n", it.function, it.spec.name,
                         Join(params, ", "), it.function);
  }
  return fmt::format(
      R"GEN(// Generated by warpsmith export: every exported function against its problem's CPU reference
// (reference/, warpsmith's own), on the problem's test shapes or a shape given on the command line,
// with warpsmith's input generators and checker (the problem's tolerances).
//   warpsmith_kernels_test                      every function, every test shape, two seeds
//   warpsmith_kernels_test FUNCTION [SYM=V...]  one function, on the test shapes or this shape
//   warpsmith_kernels_test --bench FUNCTION [SYM=V...]
//                                               time it on the bench shapes or this shape, as the
//                                               evaluator does (events around the call, outputs
//                                               overwritten and the L2 flushed before each call)
// Exit: 0 all passed, 1 a failure, 77 no GPU (skipped).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "evaluator/internal.h"
#include "problems/problems.h"
#include "warpsmith/kernels.h"

namespace wsx {{
cudaError_t FlushL2(cudaStream_t stream);  // test/l2_flush.cu
}}  // namespace wsx

namespace {{

{0}struct Function {{
  const char* name;
  const char* problem;
  std::map<std::string, std::string> params;
  cudaError_t (*call)(const std::vector<void*>&, const ws::SymbolTable&);
}};

const Function kFunctions[] = {{
{1}}};

// A case's tensors on the device, in the spec's order: inputs uploaded, outputs poisoned (an
// output left unwritten shows). Freed with the object.
struct DeviceTensors {{
  std::vector<void*> ptrs;
  std::vector<size_t> bytes;
  ~DeviceTensors() {{
    for (void* p : ptrs) cudaFree(p);
  }}
}};

// Returns "" on success.
std::string Upload(const ws::ProblemSpec& spec, const ws::SymbolTable& symbols,
                   const ws::TensorMap& inputs, DeviceTensors* d) {{
  for (const auto& t : spec.tensors) {{
    auto numel = ws::TensorNumel(t, symbols);
    if (!numel.ok()) return "tensor " + t.name + ": bad shape";
    const size_t bytes = static_cast<size_t>(*numel) * ws::DTypeSize(t.dtype);
    void* p = nullptr;
    if (cudaMalloc(&p, bytes > 0 ? bytes : 1) != cudaSuccess) return "cudaMalloc failed";
    d->ptrs.push_back(p);
    d->bytes.push_back(bytes);
    const cudaError_t err =
        t.role == ws::TensorRole::kInput
            ? cudaMemcpy(p, inputs.at(t.name).bytes.data(), bytes, cudaMemcpyHostToDevice)
            : cudaMemset(p, 0xA5, bytes);
    if (err != cudaSuccess) return "uploading " + t.name + ": " + cudaGetErrorString(err);
  }}
  return "";
}}

// One case: fresh inputs from `seed`, the function on the GPU, the CPU reference, the checker.
// Returns "" on a pass.
std::string RunCase(const Function& f, const ws::ProblemSpec& spec, const ws::Shape& shape,
                    uint64_t seed) {{
  const ws::SymbolTable symbols = ws::BindSymbols(spec, shape, f.params);
  auto inputs = ws::GenerateInputs(spec, symbols, seed);
  if (!inputs.ok()) return "generating inputs: " + inputs.status().message();
  DeviceTensors dev;
  if (std::string failure = Upload(spec, symbols, *inputs, &dev); !failure.empty()) return failure;
  cudaError_t err = f.call(dev.ptrs, symbols);
  if (err == cudaSuccess) err = cudaDeviceSynchronize();
  if (err != cudaSuccess) return std::string(cudaGetErrorString(err)) + " " + warpsmith::last_error();
  ws::TensorMap got;
  for (size_t i = 0; i < spec.tensors.size(); ++i) {{
    const auto& t = spec.tensors[i];
    if (t.role != ws::TensorRole::kOutput) continue;
    auto dims = ws::TensorDims(t, symbols);
    if (!dims.ok()) return "tensor " + t.name + ": bad shape";
    ws::HostTensor h;
    h.dtype = t.dtype;
    h.dims = *dims;
    h.bytes.resize(dev.bytes[i]);
    err = cudaMemcpy(h.bytes.data(), dev.ptrs[i], h.bytes.size(), cudaMemcpyDeviceToHost);
    if (err != cudaSuccess) return "reading " + t.name + ": " + cudaGetErrorString(err);
    got[t.name] = std::move(h);
  }}
  auto want = ws::RunCpuReference(spec, symbols, f.params, *inputs);
  if (!want.ok()) return "CPU reference: " + want.status().message();
  auto verdict = ws::CheckOutputs(spec, symbols, f.params, got, *want,
                                  [&]() -> ws::Result<ws::TensorMap> {{ return *inputs; }});
  return verdict.ok() ? *verdict : "checker: " + verdict.status().message();
}}

// Times one function on one shape: inputs from the problem's generators, 3 warm-up calls, then
// `iters` calls, each after overwriting the outputs and flushing the L2. Returns "" on success.
std::string BenchCase(const Function& f, const ws::ProblemSpec& spec, const ws::Shape& shape,
                      int iters) {{
  const ws::SymbolTable symbols = ws::BindSymbols(spec, shape, f.params);
  auto inputs = ws::GenerateInputs(spec, symbols, 4242);
  if (!inputs.ok()) return "generating inputs: " + inputs.status().message();
  DeviceTensors dev;
  std::string failure = Upload(spec, symbols, *inputs, &dev);
  inputs = ws::TensorMap{{}};  // the host copies are not needed any more
  std::vector<float> times;
  cudaEvent_t start = nullptr, stop = nullptr;
  if (failure.empty() &&
      (cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&stop) != cudaSuccess)) {{
    failure = "cudaEventCreate failed";
  }}
  for (int i = -3; failure.empty() && i < iters; ++i) {{
    cudaError_t err = cudaSuccess;
    for (size_t t = 0; t < spec.tensors.size() && err == cudaSuccess; ++t) {{
      if (spec.tensors[t].role == ws::TensorRole::kOutput) {{
        err = cudaMemsetAsync(dev.ptrs[t], 0xA5, dev.bytes[t]);
      }}
    }}
    if (err == cudaSuccess) err = wsx::FlushL2(nullptr);
    if (err == cudaSuccess) err = cudaEventRecord(start);
    if (err == cudaSuccess) err = f.call(dev.ptrs, symbols);
    if (err == cudaSuccess) err = cudaEventRecord(stop);
    if (err == cudaSuccess) err = cudaEventSynchronize(stop);
    float ms = 0;
    if (err == cudaSuccess) err = cudaEventElapsedTime(&ms, start, stop);
    if (err != cudaSuccess) {{
      failure = std::string(cudaGetErrorString(err)) + " " + warpsmith::last_error();
      break;
    }}
    if (i >= 0) times.push_back(ms * 1000.0f);
  }}
  if (start) cudaEventDestroy(start);
  if (stop) cudaEventDestroy(stop);
  if (!failure.empty()) return failure;
  std::sort(times.begin(), times.end());
  std::printf("{{\"function\": \"%s\", \"shape\": \"%s\", \"iters\": %d, \"median_us\": %.3f, "
              "\"min_us\": %.3f, \"p90_us\": %.3f}}\n",
              f.name, ws::ShapeText(spec, shape).c_str(), iters, times[times.size() / 2],
              times.front(), times[std::min(times.size() - 1, times.size() * 9 / 10)]);
  return "";
}}

}}  // namespace

int main(int argc, char** argv) {{
  // Every problem loads here, GPU or not, so a broken shipped reference shows without a GPU too.
  std::vector<ws::ProblemSpec> specs;
  for (const Function& f : kFunctions) {{
    auto spec = ws::LoadProblem(std::string(WSX_REFERENCE_DIR) + "/problems/" + f.problem +
                                "/spec.json");
    if (!spec.ok()) {{
      std::printf("%s: %s\n", f.name, spec.status().message().c_str());
      return 1;
    }}
    specs.push_back(std::move(*spec));
  }}
  int devices = 0;
  const cudaError_t probe = cudaGetDeviceCount(&devices);
  if (probe != cudaSuccess || devices == 0) {{
    std::printf("warpsmith_kernels_test: no GPU (%s): %zu exported function(s) built, none run; "
                "SKIPPED\n",
                probe != cudaSuccess ? cudaGetErrorString(probe) : "no CUDA device",
                std::size(kFunctions));
    return 77;
  }}
  const bool bench = argc > 1 && std::strcmp(argv[1], "--bench") == 0;
  if (bench) {{
    --argc;
    ++argv;
    if (argc < 2) {{
      std::printf("usage: warpsmith_kernels_test --bench FUNCTION [SYMBOL=VALUE...]\n");
      return 2;
    }}
  }}
  const char* only = argc > 1 ? argv[1] : nullptr;
  int cases = 0, failures = 0, matched = 0;
  for (size_t fi = 0; fi < std::size(kFunctions); ++fi) {{
    const Function& f = kFunctions[fi];
    const ws::ProblemSpec* spec = &specs[fi];
    if (only && std::strcmp(only, f.name) != 0) continue;
    ++matched;
    std::vector<ws::Shape> shapes = bench ? spec->bench_shapes : spec->test_shapes;
    if (argc > 2) {{
      ws::Shape s;
      for (int i = 2; i < argc; ++i) {{
        const char* eq = std::strchr(argv[i], '=');
        if (!eq) {{
          std::printf("expected SYMBOL=VALUE, got '%s'\n", argv[i]);
          return 2;
        }}
        s.symbols[std::string(argv[i], static_cast<size_t>(eq - argv[i]))] = std::strtoll(eq + 1, nullptr, 10);
      }}
      if (auto st = ws::ValidateShape(*spec, s); !st.ok()) {{
        std::printf("%s\n", st.message().c_str());
        return 2;
      }}
      shapes = {{s}};
    }}
    for (size_t si = 0; bench && si < shapes.size(); ++si) {{
      const std::string failure = BenchCase(f, *spec, shapes[si], 100);
      ++cases;
      if (!failure.empty()) {{
        std::printf("%s %s: %s\n", f.name, ws::ShapeText(*spec, shapes[si]).c_str(),
                    failure.c_str());
        ++failures;
      }}
    }}
    for (size_t si = 0; !bench && si < shapes.size(); ++si) {{
      for (uint64_t seed : {{uint64_t{{1000}} + 2 * si, uint64_t{{1001}} + 2 * si}}) {{
        const std::string failure = RunCase(f, *spec, shapes[si], seed);
        ++cases;
        std::printf("%s %s seed %llu: %s\n", f.name, ws::ShapeText(*spec, shapes[si]).c_str(),
                    static_cast<unsigned long long>(seed),
                    failure.empty() ? "ok" : failure.c_str());
        if (!failure.empty()) ++failures;
      }}
    }}
  }}
  if (only && matched == 0) {{
    std::printf("no exported function named '%s'\n", only);
    return 2;
  }}
  std::printf("warpsmith_kernels_test: %d cases, %d failed\n", cases, failures);
  return failures == 0 ? 0 : 1;
}}
)GEN",
      calls, table);
}

Status WriteSources(const std::vector<ExportItem>& items, const fs::path& dir, bool torch) {
  fs::create_directories(dir / "include" / "warpsmith" / "detail");
  fs::create_directories(dir / "src" / "kernels");
  WS_RETURN_IF_ERROR(
      WriteFileAtomic((dir / "include/warpsmith/kernels.h").string(), Header(items)));
  WS_RETURN_IF_ERROR(
      WriteFileAtomic((dir / "include/warpsmith/detail/plan_runtime.h").string(), kPlanRuntime));
  WS_RETURN_IF_ERROR(WriteFileAtomic((dir / "src/common.cc").string(), kCommonUnit));
  for (const auto& it : items) {
    const std::string source_file = "kernels/" + it.function + ".cu";
    // The device-library headers inlined as they were when the kernel was verified: the package
    // does not depend on warpsmith's tree, nor on the library's later versions.
    WS_RETURN_IF_ERROR(WriteFileAtomic((dir / "src" / source_file).string(),
                                       InlineLibrary(it.kernel.source, it.kernel.library_headers)));
    WS_RETURN_IF_ERROR(WriteFileAtomic((dir / "src" / (it.function + ".kernel.cu")).string(),
                                       KernelUnit(it, source_file, torch)));
    WS_ASSIGN_OR_RETURN(std::string launcher, LauncherUnit(it));
    WS_RETURN_IF_ERROR(
        WriteFileAtomic((dir / "src" / (it.function + ".launch.cc")).string(), launcher));
  }
  return Status::Ok();
}

Status WriteCmake(const std::vector<ExportItem>& items, const ExportOptions& opts) {
  const fs::path dir = opts.out;
  WS_RETURN_IF_ERROR(WriteSources(items, dir, /*torch=*/false));
  bool with_reference = false;
  std::string note;
  if (!opts.source_root.empty() && fs::exists(fs::path(opts.source_root) / "base/status.h")) {
    WS_RETURN_IF_ERROR(ShipReference(items, opts.source_root, dir / "reference"));
    with_reference = true;
  } else {
    note = "The warpsmith source tree was not found: no CPU reference and no test were shipped.\n";
    std::fprintf(stderr, "warpsmith: %s", note.c_str());
  }
  fs::create_directories(dir / "cmake");
  fs::create_directories(dir / "example");
  fs::create_directories(dir / "test");
  WS_RETURN_IF_ERROR(
      WriteFileAtomic((dir / "CMakeLists.txt").string(), CmakeLists(items, with_reference)));
  WS_RETURN_IF_ERROR(
      WriteFileAtomic((dir / "cmake/warpsmith_kernelsConfig.cmake").string(), kConfig));
  WS_RETURN_IF_ERROR(
      WriteFileAtomic((dir / "example/example.cc").string(), Example(items.front())));
  if (with_reference) {
    WS_RETURN_IF_ERROR(
        WriteFileAtomic((dir / "test/kernels_test.cc").string(), TestProgram(items)));
    WS_RETURN_IF_ERROR(WriteFileAtomic((dir / "test/l2_flush.cu").string(), kL2Flush));
  }
  return WriteManifest(
      items, opts,
      "## Use\n\n```sh\ncmake -S . -B build -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc\n"
      "cmake --build build -j\nctest --test-dir build          # each function against the CPU "
      "reference (GPU)\ncmake --install build --prefix /opt/warpsmith_kernels\n```\n\n"
      "Then `find_package(warpsmith_kernels)` and link `warpsmith::kernels`; the functions are in\n"
      "`<warpsmith/kernels.h>`. Device code is built for `CMAKE_CUDA_ARCHITECTURES` (default\n"
      "`90a;100a`); each kernel gets its parameter and knob values as -D defines.\n"
      "`build/warpsmith_kernels_test FUNCTION M=... K=...` checks one function on any shape;\n"
      "`build/warpsmith_kernels_test --bench FUNCTION [M=... K=...]` times it on the problem's bench\n"
      "shapes (or that shape) the way warpsmith's evaluator does.\n\n" +
          note);
}

// ---- torch --------------------------------------------------------------------------------------

struct TorchOp {
  std::string schema, cpp;
};

// The op: symbols from the inputs' dims where a dim is a bare symbol, the rest as int arguments;
// every input's dtype, device, contiguity and dims checked; outputs allocated.
Result<TorchOp> TorchFunction(const ExportItem& it) {
  const ProblemSpec& spec = it.spec;
  std::map<std::string, std::string> bound;  // symbol -> C++ source of its value
  for (const auto& t : spec.tensors) {
    if (t.role != TensorRole::kInput)
      continue;
    for (size_t d = 0; d < t.shape.size(); ++d) {
      const std::string& e = t.shape[d];
      if (std::find(spec.symbols.begin(), spec.symbols.end(), e) != spec.symbols.end() &&
          !bound.count(e)) {
        bound[e] = fmt::format("{}.size({})", t.name, d);
      }
    }
  }
  std::vector<std::string> schema_args, cpp_args;
  for (const auto& t : spec.tensors) {
    if (t.role != TensorRole::kInput)
      continue;
    schema_args.push_back("Tensor " + t.name);
    cpp_args.push_back("const at::Tensor& " + t.name);
  }
  for (const auto& s : spec.symbols) {
    if (bound.count(s))
      continue;
    schema_args.push_back("int " + s);
    cpp_args.push_back("int64_t " + s + "_arg");
    bound[s] = s + "_arg";
  }
  std::vector<std::string> outs;
  for (const auto& t : spec.tensors) {
    if (t.role == TensorRole::kOutput)
      outs.push_back(t.name);
  }
  TorchOp op;
  op.schema = fmt::format(
      "{}({}) -> {}", it.function, Join(schema_args, ", "),
      outs.size() == 1 ? "Tensor"
                       : "(" + Join(std::vector<std::string>(outs.size(), "Tensor"), ", ") + ")");
  const std::string ret =
      outs.size() == 1
          ? "at::Tensor"
          : "std::tuple<" + Join(std::vector<std::string>(outs.size(), "at::Tensor"), ", ") + ">";
  std::string body;
  body += "  namespace wsd = ::warpsmith::detail;\n  wsd::Eval e;\n";
  std::string first_input;
  for (const auto& t : spec.tensors) {
    if (t.role != TensorRole::kInput)
      continue;
    if (first_input.empty())
      first_input = t.name;
    body += fmt::format(
        "  TORCH_CHECK({0}.dim() == {1}, \"{2}: {0} must have {1} dims, got \", "
        "{0}.dim());\n",
        t.name, t.shape.size(), it.function);
  }
  for (const auto& s : spec.symbols) {
    body += fmt::format("  const int64_t v_{} = {};\n", s, bound.at(s));
  }
  for (const auto& p : spec.params) {
    const std::string& v = it.params.at(p.name);
    const auto idx = std::find(p.values.begin(), p.values.end(), v) - p.values.begin();
    body += fmt::format("  [[maybe_unused]] const int64_t v_{} = {};\n", p.name, idx);
  }
  for (const auto& t : spec.tensors) {
    std::vector<std::string> dims;
    for (const auto& d : t.shape) {
      WS_ASSIGN_OR_RETURN(std::string c, ExprToCpp(d));
      dims.push_back(c);
    }
    body +=
        fmt::format("  const std::vector<int64_t> dims_{} = {{{}}};\n", t.name, Join(dims, ", "));
  }
  body += fmt::format(
      "  TORCH_CHECK(e.error == nullptr, \"{}: the shape's dims: \", e.error ? e.error : \"\");\n",
      it.function);
  for (const auto& t : spec.tensors) {
    if (t.role != TensorRole::kInput)
      continue;
    body += fmt::format(
        "  TORCH_CHECK({0}.is_cuda(), \"{1}: {0} must be a CUDA tensor\");\n"
        "{5}"
        "  TORCH_CHECK({0}.scalar_type() == {3}, \"{1}: {0} must be {4}, got \", "
        "{0}.scalar_type());\n"
        "  TORCH_CHECK({0}.is_contiguous(), \"{1}: {0} must be contiguous\");\n"
        "  TORCH_CHECK({0}.sizes().vec() == dims_{0}, \"{1}: {0} has sizes \", {0}.sizes(), "
        "\", expected \", at::IntArrayRef(dims_{0}));\n",
        t.name, it.function, first_input, TorchDType(t.dtype), DTypeName(t.dtype),
        t.name == first_input
            ? ""
            : fmt::format("  TORCH_CHECK({0}.device() == {2}.device(), \"{1}: {0} is on another "
                          "device than {2}\");\n",
                          t.name, it.function, first_input));
  }
  body += fmt::format("  const c10::cuda::CUDAGuard guard({}.device());\n", first_input);
  for (const auto& t : spec.tensors) {
    if (t.role != TensorRole::kOutput)
      continue;
    body += fmt::format("  at::Tensor {0} = at::empty(dims_{0}, {1}.options().dtype({2}));\n",
                        t.name, first_input, TorchDType(t.dtype));
  }
  std::vector<std::string> call;
  for (const auto& t : spec.tensors) {
    call.push_back(fmt::format("static_cast<{}{}*>({}.data_ptr())",
                               t.role == TensorRole::kInput ? "const " : "", CType(t.dtype),
                               t.name));
  }
  for (const auto& s : spec.symbols) call.push_back("v_" + s);
  body += fmt::format(
      "  const cudaError_t err = warpsmith::{0}({1}, at::cuda::getCurrentCUDAStream());\n"
      "  TORCH_CHECK(err == cudaSuccess, \"warpsmith::{0}: \", cudaGetErrorString(err), \" \", "
      "warpsmith::last_error());\n",
      it.function, Join(call, ", "));
  body +=
      outs.size() == 1 ? "  return " + outs[0] + ";\n" : "  return {" + Join(outs, ", ") + "};\n";
  op.cpp = fmt::format("{} {}({}) {{\n{}}}\n", ret, it.function, Join(cpp_args, ", "), body);
  return op;
}

// The shape symbols a torch op takes as int arguments: those no input dim names on its own.
std::vector<std::string> IntArgSymbols(const ProblemSpec& spec) {
  std::set<std::string> bound;
  for (const auto& t : spec.tensors) {
    if (t.role != TensorRole::kInput)
      continue;
    for (const auto& e : t.shape) bound.insert(e);
  }
  std::vector<std::string> out;
  for (const auto& s : spec.symbols) {
    if (!bound.count(s))
      out.push_back(s);
  }
  return out;
}

// test_ops.py's cases: every test shape with each tensor's dims and each output's tolerance.
json TorchTestCases(const std::vector<ExportItem>& items) {
  json ops = json::array();
  for (const auto& it : items) {
    json op = {{"name", it.function},
               {"problem", it.spec.name},
               {"params", it.params},
               {"int_args", IntArgSymbols(it.spec)},
               {"cases", json::array()},
               {"bench", json::array()}};
    // Test shapes are checked; bench shapes are timed with --bench.
    std::vector<std::pair<const Shape*, const char*>> shapes;
    for (const auto& shape : it.spec.test_shapes) shapes.emplace_back(&shape, "cases");
    for (const auto& shape : it.spec.bench_shapes) shapes.emplace_back(&shape, "bench");
    for (const auto& [shape_ptr, list] : shapes) {
      const Shape& shape = *shape_ptr;
      const SymbolTable symbols = BindSymbols(it.spec, shape, it.params);
      json c = {{"symbols", json::object()}, {"inputs", json::array()}, {"outputs", json::array()}};
      for (const auto& s : it.spec.symbols) c["symbols"][s] = symbols.at(s);
      bool ok = true;
      for (const auto& t : it.spec.tensors) {
        auto dims = TensorDims(t, symbols);
        if (!dims.ok()) {
          ok = false;
          break;
        }
        json tj = {{"name", t.name}, {"dtype", DTypeName(t.dtype)}, {"dims", *dims}};
        if (t.role == TensorRole::kInput) {
          c["inputs"].push_back(tj);
        } else {
          auto tol = it.spec.tolerance.find(t.name);
          tj["tolerance"] = tol == it.spec.tolerance.end()
                                ? std::string("exact")
                                : std::string(ToleranceKindName(tol->second.kind));
          c["outputs"].push_back(tj);
        }
      }
      if (ok)
        op[list].push_back(c);
    }
    ops.push_back(op);
  }
  return ops;
}

Status WriteTorch(const std::vector<ExportItem>& items, const ExportOptions& opts) {
  const fs::path dir = opts.out;
  const fs::path csrc = dir / "warpsmith_kernels" / "csrc";
  WS_RETURN_IF_ERROR(WriteSources(items, csrc, /*torch=*/true));
  std::string ops =
      "// Generated by warpsmith export: torch.ops.warpsmith.<function>, one op per exported\n"
      "// kernel, over the generated launchers (src/*.launch.cc).\n"
      "#include <tuple>\n#include <vector>\n\n#include <ATen/ATen.h>\n"
      "#include <ATen/cuda/CUDAContext.h>\n#include <c10/cuda/CUDAGuard.h>\n"
      "#include <torch/extension.h>\n#include <torch/library.h>\n\n"
      "#include \"warpsmith/detail/plan_runtime.h\"\n#include \"warpsmith/kernels.h\"\n\n"
      "namespace {\n\n";
  std::string defs, impls;
  std::vector<std::string> py_sources = {"\"warpsmith_kernels/csrc/ops.cc\"",
                                         "\"warpsmith_kernels/csrc/src/common.cc\""};
  for (const auto& it : items) {
    WS_ASSIGN_OR_RETURN(TorchOp op, TorchFunction(it));
    ops += op.cpp + "\n";
    defs += fmt::format("  m.def({});\n", CString(op.schema));
    impls += fmt::format("  m.impl(\"{0}\", &{0});\n", it.function);
    py_sources.push_back(fmt::format("\"warpsmith_kernels/csrc/src/{}.kernel.cu\"", it.function));
    py_sources.push_back(fmt::format("\"warpsmith_kernels/csrc/src/{}.launch.cc\"", it.function));
  }
  ops += "}  // namespace\n\nTORCH_LIBRARY(warpsmith, m) {\n" + defs +
         "}\n\nTORCH_LIBRARY_IMPL(warpsmith, CUDA, m) {\n" + impls +
         "}\n\n// A Python module too, so that `import warpsmith_kernels._C` loads the library.\n"
         "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.doc() = \"torch.ops.warpsmith\"; }\n";
  WS_RETURN_IF_ERROR(WriteFileAtomic((csrc / "ops.cc").string(), ops));

  const std::string sources = "[\n    " + Join(py_sources, ",\n    ") + ",\n]";
  const std::string setup =
      fmt::format(R"PY(# Generated by warpsmith export: the warpsmith_kernels PyTorch extension.
#   pip install --no-build-isolation .      (or: python setup.py build_ext --inplace)
# registers torch.ops.warpsmith.<function> for every exported kernel (see MANIFEST.json).
import os

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

HERE = os.path.dirname(os.path.abspath(__file__))

SOURCES = {0}
ARCHS = ["-gencode=arch=compute_90a,code=sm_90a", "-gencode=arch=compute_100a,code=sm_100a"]

setup(
    name="warpsmith_kernels",
    version="0.1",
    packages=["warpsmith_kernels"],
    ext_modules=[
        CUDAExtension(
            name="warpsmith_kernels._C",
            sources=SOURCES,
            # Absolute: torch's ninja build compiles from its own build folder.
            include_dirs=[os.path.join(HERE, "warpsmith_kernels", "csrc", d) for d in ("include", "src")],
            extra_compile_args={{"cxx": ["-O2", "-std=c++20"],
                                "nvcc": ["-O3", "-std=c++17", "--expt-relaxed-constexpr"] + ARCHS}},
        )
    ],
    cmdclass={{"build_ext": BuildExtension}},
)
)PY",
                  sources);
  WS_RETURN_IF_ERROR(WriteFileAtomic((dir / "setup.py").string(), setup));
  std::string names;
  for (const auto& it : items) names += fmt::format("    \"{}\",\n", it.function);
  const std::string init = fmt::format(
      R"PY("""Generated by warpsmith export: torch.ops.warpsmith.<function> for each exported kernel.

Import this package (after building it with setup.py), or call load() to build it just in time
with torch.utils.cpp_extension.load. Each op takes the problem's input tensors (CUDA, contiguous,
the problem's dtypes and dims), allocates and returns its outputs.
"""
import os

import torch

FUNCTIONS = [
{0}]

_HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = [os.path.join(os.path.dirname(_HERE), s) for s in {1}]


def load(verbose=False):
    """Builds the extension in-process (torch.utils.cpp_extension.load) and registers the ops."""
    from torch.utils import cpp_extension

    return cpp_extension.load(
        name="warpsmith_kernels_jit",
        sources=SOURCES,
        extra_include_paths=[os.path.join(_HERE, "csrc", "include"), os.path.join(_HERE, "csrc", "src")],
        extra_cflags=["-O2", "-std=c++20"],
        extra_cuda_cflags=["-O3", "-std=c++17", "--expt-relaxed-constexpr",
                           "-gencode=arch=compute_90a,code=sm_90a",
                           "-gencode=arch=compute_100a,code=sm_100a"],
        is_python_module=False,
        verbose=verbose,
    )


try:
    from . import _C  # noqa: F401  (registers the ops)
except ImportError as e:  # not built: load() builds it just in time
    import warnings

    warnings.warn("warpsmith_kernels._C is not built ({{}}); call warpsmith_kernels.load()".format(e))
    _C = None
)PY",
      names, sources);
  WS_RETURN_IF_ERROR(WriteFileAtomic((dir / "warpsmith_kernels" / "__init__.py").string(), init));
  const std::string test = fmt::format(
      R"PY("""Generated by warpsmith export: every op against its problem's CPU reference.

    python test_ops.py [--warpsmith PATH/TO/warpsmith]
    python test_ops.py --bench [--bench-json OUT.json] [--iters N]

Each op runs on the problem's test shapes with random inputs; `warpsmith reference` computes the
CPU reference on the same inputs (.npy files); outputs whose tolerance is exact must match byte
for byte, others are compared loosely here (the cmake package's test applies the problem's own
tolerances and input distributions). Also checks that a bad input is rejected. Exit 0 all passed,
1 a failure, 77 no GPU (skipped). --bench times every op at its problem's bench shapes the way
warpsmith's evaluator does (CUDA events around the call, the L2 flushed by reading 4x its size
before each timed call, median of N) on random inputs generated on the GPU.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch

import warpsmith_kernels  # noqa: F401  (registers torch.ops.warpsmith)

OPS = json.loads(r"""{0}""")

DTYPES = {{
    "bf16": (torch.bfloat16, torch.int16, np.uint16),
    "f16": (torch.float16, torch.int16, np.uint16),
    "f32": (torch.float32, torch.float32, np.float32),
    "fp8_e4m3": (torch.float8_e4m3fn, torch.uint8, np.uint8),
    "fp8_e5m2": (torch.float8_e5m2, torch.uint8, np.uint8),
    "e8m0": (torch.uint8, torch.uint8, np.uint8),
    "u8": (torch.uint8, torch.uint8, np.uint8),
    "i32": (torch.int32, torch.int32, np.int32),
    "i64": (torch.int64, torch.int64, np.int64),
}}


def random_input(dtype, dims, gen):
    t, _, _ = DTYPES[dtype]
    if dtype in ("bf16", "f16", "f32"):
        x = torch.randn(dims, generator=gen) * torch.exp2(
            torch.randint(-12, 12, dims, generator=gen).float())
        return x.to(t)
    if dtype in ("fp8_e4m3", "fp8_e5m2"):
        b = torch.randint(0, 256, dims, generator=gen, dtype=torch.int32)
        b = torch.where((b & 0x7F) >= (0x7F if dtype == "fp8_e4m3" else 0x7C), b & 0x70, b)
        return b.to(torch.uint8).view(t)
    if dtype in ("e8m0", "u8"):
        return torch.randint(100, 140, dims, generator=gen, dtype=torch.int32).to(torch.uint8)
    return torch.zeros(dims, dtype=t)  # ids and offsets: zeros (a valid, degenerate case)


def raw(t, dtype):
    _, view, np_type = DTYPES[dtype]
    return t.contiguous().cpu().view(view).numpy().view(np_type)


def bench_input(dtype, dims):
    t, _, _ = DTYPES[dtype]
    if dtype in ("bf16", "f16", "f32"):
        return torch.randn(dims, device="cuda").to(t)
    if dtype in ("fp8_e4m3", "fp8_e5m2"):
        return torch.randn(dims, device="cuda").to(t)
    if dtype in ("e8m0", "u8"):
        return torch.randint(100, 140, dims, device="cuda", dtype=torch.int32).to(torch.uint8)
    return torch.zeros(dims, dtype=t, device="cuda")


def bench(iters, out_path):
    props = torch.cuda.get_device_properties(0)
    flush = torch.empty(4 * props.L2_cache_size // 4, dtype=torch.float32, device="cuda")
    flush.normal_()
    rows = []
    for spec in OPS:
        op = getattr(torch.ops.warpsmith, spec["name"])
        for case in spec["bench"]:
            inputs = [bench_input(t["dtype"], t["dims"]) for t in case["inputs"]]
            ints = [case["symbols"][s] for s in spec["int_args"]]
            for _ in range(3):
                op(*inputs, *ints)
            times = []
            for _ in range(iters):
                flush.sum()
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                op(*inputs, *ints)
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end) * 1000.0)
            times.sort()
            row = {{"function": spec["name"], "problem": spec["problem"], "params": spec["params"],
                    "shape": case["symbols"], "iters": iters,
                    "median_us": times[len(times) // 2], "min_us": times[0],
                    "p90_us": times[min(len(times) - 1, int(0.9 * len(times)))]}}
            print("{{}} {{}}: median {{:.2f}} us (min {{:.2f}}, p90 {{:.2f}})".format(
                spec["name"], case["symbols"], row["median_us"], row["min_us"], row["p90_us"]))
            rows.append(row)
            del inputs
    if out_path:
        with open(out_path, "w") as f:
            json.dump({{"gpu": props.name, "torch": torch.__version__, "results": rows}}, f, indent=1)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--warpsmith", default=shutil.which("warpsmith") or os.environ.get("WARPSMITH"))
    ap.add_argument("--bench", action="store_true", help="time the ops at the bench shapes")
    ap.add_argument("--bench-json", default=None)
    ap.add_argument("--iters", type=int, default=100)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("test_ops: no GPU; SKIPPED")
        return 77
    if args.bench:
        return bench(args.iters, args.bench_json)
    failures = 0
    gen = torch.Generator().manual_seed(1234)
    for spec in OPS:
        op = getattr(torch.ops.warpsmith, spec["name"])
        try:
            op(torch.zeros(3, device="cpu"), *([1] * len(spec["int_args"])))
        except (RuntimeError, TypeError, NotImplementedError) as e:
            print(spec["name"], "rejects a bad input:", str(e).splitlines()[0][:120])
        else:
            print(spec["name"], "accepted a bad input")
            failures += 1
        for case in spec["cases"]:
            inputs = [random_input(t["dtype"], t["dims"], gen) for t in case["inputs"]]
            outs = op(*[x.cuda() for x in inputs], *[case["symbols"][s] for s in spec["int_args"]])
            outs = outs if isinstance(outs, (tuple, list)) else [outs]
            torch.cuda.synchronize()
            label = "{{}} {{}}".format(spec["name"], case["symbols"])
            for t, o in zip(case["outputs"], outs):
                if list(o.shape) != t["dims"]:
                    print(label, t["name"], "has shape", list(o.shape), "expected", t["dims"])
                    failures += 1
            if not args.warpsmith:
                print(label, "ran; no warpsmith binary (--warpsmith): not compared")
                continue
            with tempfile.TemporaryDirectory() as d:
                os.makedirs(os.path.join(d, "in"))
                for t, x in zip(case["inputs"], inputs):
                    np.save(os.path.join(d, "in", t["name"] + ".npy"), raw(x, t["dtype"]))
                cmd = [args.warpsmith, "reference", spec["problem"], "--in", os.path.join(d, "in"),
                       "--out", os.path.join(d, "out")]
                for k, v in spec["params"].items():
                    cmd += ["--set", "{{}}={{}}".format(k, v)]
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    print(label, "CPU reference refused these inputs:", r.stderr.strip()[:200])
                    continue
                for t, o in zip(case["outputs"], outs):
                    want = np.load(os.path.join(d, "out", t["name"] + ".npy"))
                    got = raw(o, t["dtype"])
                    if t["tolerance"] == "exact":
                        bad = int((got.reshape(-1) != want.reshape(-1)).sum())
                        ok = bad == 0
                        print(label, t["name"], "exact:", "ok" if ok else "{{}} differ".format(bad))
                    else:
                        g = o.float().cpu().numpy().reshape(-1)
                        w = want.copy()
                        w = w.view(np.int16) if w.dtype == np.uint16 else w
                        w = torch.from_numpy(w).view(DTYPES[t["dtype"]][0]).float()
                        w = w.numpy().reshape(-1)
                        ok = bool(np.allclose(g, w, rtol=2e-2, atol=2e-2, equal_nan=True))
                        print(label, t["name"], t["tolerance"], "(loose here):",
                              "ok" if ok else "max diff {{}}".format(np.nanmax(np.abs(g - w))))
                    failures += 0 if ok else 1
    print("test_ops:", "ok" if failures == 0 else "{{}} failures".format(failures))
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
)PY",
      TorchTestCases(items).dump(1));
  WS_RETURN_IF_ERROR(WriteFileAtomic((dir / "test_ops.py").string(), test));
  return WriteManifest(
      items, opts,
      "## Use\n\n```sh\npip install --no-build-isolation .   # or: python setup.py build_ext "
      "--inplace\npython -c 'import torch, warpsmith_kernels; print(torch.ops.warpsmith)'\n"
      "python test_ops.py --warpsmith PATH/TO/warpsmith   # each op against the CPU reference\n"
      "python test_ops.py --bench                         # time each op at the bench shapes\n"
      "```\n\n`warpsmith_kernels.load()` builds the same sources with\n"
      "`torch.utils.cpp_extension.load` instead. Ops take CUDA tensors (contiguous, the problem's\n"
      "dtypes; e8m0 as uint8, fp8 as torch.float8_e4m3fn / float8_e5m2) and return the outputs.\n");
}

Result<std::map<std::string, std::string>> ParseParams(const std::string& text) {
  std::map<std::string, std::string> out;
  try {
    json j = json::parse(text.empty() ? "{}" : text);
    for (auto& [k, v] : j.items()) out[k] = v.is_string() ? v.get<std::string>() : v.dump();
  } catch (const json::exception& e) {
    return Status::Error("malformed params '{}': {}", text, e.what());
  }
  return out;
}

}  // namespace

Result<std::string> ExprToCpp(std::string_view expr) {
  return CppTranslator(expr).Run();
}

std::map<std::string, std::string> KernelDefines(const ProblemSpec& spec,
                                                 const std::map<std::string, std::string>& params,
                                                 const std::map<std::string, int64_t>& knobs) {
  std::map<std::string, std::string> defs = ParamDefines(spec, params);
  for (const auto& [k, v] : knobs) defs[k] = std::to_string(v);
  return defs;
}

std::string PlanJson(const Plan& plan) {
  json j;
  j["knobs"] = json::object();
  for (const auto& [k, v] : plan.knobs) j["knobs"][k] = v;
  j["launch"] = json::array();
  for (const auto& l : plan.launches) {
    json a = json::array();
    for (const auto& arg : l.args) {
      if (arg.kind == PlanArg::Kind::kWorkspace) {
        a.push_back("workspace");
      } else if (arg.kind == PlanArg::Kind::kI64) {
        a.push_back({{"i64", arg.text}});
      } else {
        a.push_back(arg.text);
      }
    }
    json lj = {
        {"kernel", l.kernel}, {"grid", l.grid}, {"block", l.block}, {"smem", l.smem}, {"args", a}};
    if (!l.cluster.empty())
      lj["cluster"] = l.cluster;
    if (l.pdl == "1") {
      lj["pdl"] = true;
    } else if (!l.pdl.empty()) {
      lj["pdl"] = l.pdl;
    }
    if (!l.when.empty()) lj["when"] = l.when;
    j["launch"].push_back(lj);
  }
  for (const auto& [name, m] : plan.tensor_maps) {
    json mj = {{"tensor", m.tensor}, {"dims", m.dims}, {"box", m.box}, {"swizzle", m.swizzle},
               {"oob_fill", m.oob_nan ? "nan" : "zero"}, {"l2_promotion", m.l2_promotion}};
    if (!m.element_strides.empty()) mj["element_strides"] = m.element_strides;
    j["tensor_maps"][name] = mj;
  }
  j["workspace"] = {{"bytes", plan.workspace_bytes}, {"zero", plan.workspace_zero}};
  return j.dump(2);
}

Result<std::vector<ExportItem>> SelectExport(Store& store, const std::vector<ProblemSpec>& problems,
                                             const ExportOptions& opts) {
  if (opts.all == !opts.problem_globs.empty()) {
    return Status::Error("give either --problem GLOB (repeatable) or --all");
  }
  std::map<std::string, const ProblemSpec*> selected;
  std::vector<std::string> known;
  for (const auto& p : problems) known.push_back(p.name);
  for (const auto& p : problems) {
    if (opts.all)
      selected[p.name] = &p;
  }
  for (const auto& glob : opts.problem_globs) {
    bool any = false;
    for (const auto& p : problems) {
      if (fnmatch(glob.c_str(), p.name.c_str(), 0) == 0) {
        selected[p.name] = &p;
        any = true;
      }
    }
    if (!any)
      return Status::Error("no problem matches '{}' (known: {})", glob, Join(known, ", "));
  }

  WS_ASSIGN_OR_RETURN(auto board, store.Leaderboard(""));
  std::set<std::string> gpus;
  for (const auto& e : board) {
    if (selected.count(e.problem))
      gpus.insert(e.gpu);
  }
  std::string gpu = opts.gpu;
  if (gpu.empty() && gpus.size() > 1) {
    return Status::Error(
        "the store ranks kernels of these problems on several GPU models ({}); choose one with "
        "--gpu",
        Join(std::vector<std::string>(gpus.begin(), gpus.end()), ", "));
  }
  if (gpu.empty() && gpus.size() == 1)
    gpu = *gpus.begin();
  if (!opts.gpu.empty() && !gpus.count(opts.gpu) && !opts.include_unverified) {
    return Status::Error(
        "no verified kernel of these problems is ranked on GPU '{}' (ranked on: {})", opts.gpu,
        gpus.empty() ? std::string("none")
                     : Join(std::vector<std::string>(gpus.begin(), gpus.end()), ", "));
  }

  std::map<std::string, std::vector<EvaluationRecord>> evals;  // per problem, newest first
  auto evaluations = [&](const std::string& problem) -> Result<std::vector<EvaluationRecord>*> {
    auto it = evals.find(problem);
    if (it == evals.end()) {
      WS_ASSIGN_OR_RETURN(auto list, store.Evaluations(problem, 0));
      it = evals.emplace(problem, std::move(list)).first;
    }
    return &it->second;
  };

  std::vector<ExportItem> items;
  std::set<std::pair<std::string, std::string>> covered;  // (problem, params_json)
  auto add = [&](const ProblemSpec& spec, const EvaluationRecord& e, bool verified) -> Status {
    ExportItem it;
    it.spec = spec;
    it.verified = verified;
    it.evaluation = e;
    WS_ASSIGN_OR_RETURN(it.kernel, store.GetKernel(e.kernel_id));
    WS_ASSIGN_OR_RETURN(auto raw_params, ParseParams(e.params_json));
    WS_ASSIGN_OR_RETURN(it.params, ResolveParams(spec, raw_params));
    auto plan = ParsePlan(it.kernel.source);
    if (!plan.ok()) {
      return plan.status().Context(fmt::format("kernel {} of {}", it.kernel.id, spec.name));
    }
    it.plan = *plan;
    WS_RETURN_IF_ERROR(ValidatePlan(it.plan, spec)
                           .Context(fmt::format("kernel {} of {}", it.kernel.id, spec.name)));
    try {
      json k = json::parse(e.knobs_json.empty() ? "{}" : e.knobs_json);
      for (auto& [name, v] : k.items()) {
        if (it.plan.knobs.count(name))
          it.knobs[name] = v.get<int64_t>();
      }
    } catch (const json::exception& ex) {
      return Status::Error("evaluation {}: malformed knobs: {}", e.id, ex.what());
    }
    for (const auto& [name, values] : it.plan.knobs) {
      if (!it.knobs.count(name))
        it.knobs[name] = values.front();
    }
    it.function = spec.name;
    std::vector<std::string> differing;
    for (const auto& p : spec.params) {
      if (it.params.at(p.name) != p.default_value)
        differing.push_back(it.params.at(p.name));
    }
    if (!differing.empty()) {
      std::string suffix;
      for (char c : Join(differing, "_")) {
        suffix += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      }
      it.function += "__" + suffix;
    }
    for (const auto& other : items) {
      if (other.function == it.function) {
        return Status::Error("two exported kernels would be named '{}'", it.function);
      }
    }
    covered.insert({spec.name, json(it.params).dump()});
    items.push_back(std::move(it));
    return Status::Ok();
  };

  for (const auto& entry : board) {
    auto sel = selected.find(entry.problem);
    if (sel == selected.end() || entry.gpu != gpu)
      continue;
    WS_ASSIGN_OR_RETURN(auto* list, evaluations(entry.problem));
    auto e = std::find_if(list->begin(), list->end(),
                          [&](const EvaluationRecord& r) { return r.id == entry.evaluation_id; });
    if (e == list->end())
      return Status::Error("evaluation {} vanished", entry.evaluation_id);
    WS_RETURN_IF_ERROR(add(*sel->second, *e, /*verified=*/true));
  }
  if (opts.include_unverified) {
    // The newest evaluation that compiled (ok but unranked, or not run) of each parameter setting
    // without a verified kernel.
    for (const auto& [name, spec] : selected) {
      WS_ASSIGN_OR_RETURN(auto* list, evaluations(name));
      for (const auto& e : *list) {
        if (e.verdict != "ok" && e.verdict != "not_run")
          continue;
        if (!gpu.empty() && !e.gpu.empty() && e.gpu != gpu)
          continue;
        WS_ASSIGN_OR_RETURN(auto raw, ParseParams(e.params_json));
        auto params = ResolveParams(*spec, raw);
        if (!params.ok() || covered.count({name, json(*params).dump()}))
          continue;
        WS_RETURN_IF_ERROR(add(*spec, e, /*verified=*/false));
      }
    }
  }
  if (items.empty()) {
    std::vector<std::string> names;
    for (const auto& [n, _] : selected) names.push_back(n);
    return Status::Error(
        "nothing to export: the store holds no verified (ranked) kernel of {}{}; kernels are "
        "ranked after an ok run on a GPU of every test, hidden and bench shape{}",
        names.size() > 4 ? fmt::format("{} problems", names.size()) : Join(names, ", "),
        gpu.empty() ? "" : " on " + gpu,
        opts.include_unverified ? ""
                                : " (--include-unverified exports kernels that only compiled)");
  }
  std::sort(items.begin(), items.end(),
            [](const ExportItem& a, const ExportItem& b) { return a.function < b.function; });
  return items;
}

Status WriteExport(const std::vector<ExportItem>& items, const ExportOptions& opts) {
  if (items.empty())
    return Status::Error("nothing to export");
  if (opts.format != "cmake" && opts.format != "torch" && opts.format != "bundle") {
    return Status::Error("--format must be cmake, torch or bundle, not '{}'", opts.format);
  }
  if (opts.out.empty())
    return Status::Error("--out DIR is required");
  std::error_code ec;
  if (fs::exists(opts.out) && !fs::is_empty(opts.out, ec)) {
    return Status::Error("--out {} exists and is not empty", opts.out);
  }
  fs::create_directories(opts.out, ec);
  if (ec)
    return Status::Error("cannot create {}: {}", opts.out, ec.message());
  ExportOptions o = opts;
  if (o.gpu.empty()) {
    for (const auto& it : items) {
      if (!it.evaluation.gpu.empty())
        o.gpu = it.evaluation.gpu;
    }
  }
  if (opts.format == "cmake")
    return WriteCmake(items, o);
  if (opts.format == "torch")
    return WriteTorch(items, o);
  for (const auto& it : items) WS_RETURN_IF_ERROR(WriteBundle(it, o.out + "/" + it.function));
  return WriteManifest(items, o,
                       "## Use\n\nEach folder is one bundle; `warpsmith verify DIR` re-checks "
                       "and re-times it (or all of them, given this folder) on the GPU at hand.\n");
}

}  // namespace ws

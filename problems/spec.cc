// Spec loading and validation: spec.json -> ProblemSpec, with every error naming file and field.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "problems/problems.h"

#include "base/files.h"

namespace ws {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

std::string Sub(std::string_view field, std::string_view key) {
  return field.empty() ? std::string(key) : fmt::format("{}.{}", field, key);
}
std::string Idx(std::string_view field, size_t i) {
  return fmt::format("{}[{}]", field, i);
}

template <typename... Args>
Status FieldError(std::string_view field, fmt::format_string<Args...> f, Args&&... args) {
  return Status::Error("{}: {}", field, fmt::format(f, std::forward<Args>(args)...));
}

bool IsIdentifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_'))
    return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::string JsonType(const Json& j) {
  return j.type_name();
}

// `obj` must be an object holding every key of `required`, and no key outside both lists.
Status CheckKeys(const Json& obj, std::string_view field,
                 std::initializer_list<std::string_view> required,
                 std::initializer_list<std::string_view> optional) {
  if (!obj.is_object()) {
    return FieldError(field.empty() ? "(top level)" : field, "must be an object, not {}",
                      JsonType(obj));
  }
  for (const auto& item : obj.items()) {
    const std::string& key = item.key();  // not a structured binding: lambdas capture it
    const auto in = [&](auto list) {
      return std::find(list.begin(), list.end(), key) != list.end();
    };
    if (!in(required) && !in(optional))
      return FieldError(Sub(field, key), "unknown key");
  }
  for (std::string_view key : required) {
    if (!obj.contains(key))
      return FieldError(Sub(field, key), "missing required field");
  }
  return Status::Ok();
}

Result<std::string> AsString(const Json& j, std::string_view field) {
  if (!j.is_string())
    return FieldError(field, "must be a string, not {}", JsonType(j));
  return j.get<std::string>();
}

Result<int64_t> AsInt(const Json& j, std::string_view field) {
  if (j.is_number_unsigned()) {
    const uint64_t v = j.get<uint64_t>();
    if (v > static_cast<uint64_t>(INT64_MAX))
      return FieldError(field, "integer too large");
    return static_cast<int64_t>(v);
  }
  if (j.is_number_integer())
    return j.get<int64_t>();
  return FieldError(field, "must be an integer, not {}", JsonType(j));
}

Result<double> AsNumber(const Json& j, std::string_view field) {
  if (!j.is_number())
    return FieldError(field, "must be a number, not {}", JsonType(j));
  return j.get<double>();
}

Result<std::vector<std::string>> AsStringArray(const Json& j, std::string_view field) {
  if (!j.is_array())
    return FieldError(field, "must be an array, not {}", JsonType(j));
  std::vector<std::string> out;
  for (size_t i = 0; i < j.size(); ++i) {
    WS_ASSIGN_OR_RETURN(std::string s, AsString(j[i], Idx(field, i)));
    out.push_back(std::move(s));
  }
  return out;
}

// An expression must parse and use only `known` names (symbols and params).
Status CheckExpr(const std::string& expr, std::string_view field,
                 const std::set<std::string, std::less<>>& known) {
  Result<std::vector<std::string>> ids = ExprIdentifiers(expr);
  if (!ids.ok())
    return ids.status().Context(field);
  for (const std::string& id : *ids) {
    if (!known.contains(id))
      return FieldError(field, "unknown symbol '{}'", id);
  }
  return Status::Ok();
}

// Relative path inside the problem folder; the file must exist.
Result<std::string> KernelPath(const Json& j, std::string_view field, const std::string& dir) {
  WS_ASSIGN_OR_RETURN(std::string rel, AsString(j, field));
  const fs::path p(rel);
  if (rel.empty() || p.is_absolute() ||
      std::any_of(p.begin(), p.end(), [](const fs::path& part) { return part == ".."; })) {
    return FieldError(field, "'{}' must be a path inside the problem folder", rel);
  }
  std::error_code ec;
  if (!fs::is_regular_file(fs::path(dir) / p, ec)) {
    return FieldError(field, "file '{}' does not exist", (fs::path(dir) / p).string());
  }
  return rel;
}

std::string FormatShape(const Shape& s) {
  std::string out = "{";
  for (const auto& [k, v] : s.symbols)
    out += fmt::format("{}{}={}", out.size() > 1 ? ", " : "", k, v);
  return out + "}";
}

// An expression field: a string, or an integer literal.
Result<std::string> ExprField(const Json& j, std::string_view field,
                              const std::set<std::string, std::less<>>& known) {
  std::string expr;
  if (j.is_number_integer()) {
    expr = std::to_string(j.get<int64_t>());
  } else {
    WS_ASSIGN_OR_RETURN(expr, AsString(j, field));
  }
  WS_RETURN_IF_ERROR(CheckExpr(expr, field, known));
  return expr;
}

// Reads optional number `key` of `j` into *out.
Status OptNumber(const Json& j, std::string_view field, const char* key, double* out) {
  if (!j.contains(key))
    return Status::Ok();
  WS_ASSIGN_OR_RETURN(*out, AsNumber(j[key], Sub(field, key)));
  if (!std::isfinite(*out))
    return FieldError(Sub(field, key), "must be finite");
  return Status::Ok();
}

bool IsFloatDType(DType t) {
  return t == DType::kBF16 || t == DType::kF16 || t == DType::kF32;
}

// One init's fields (no by_param).
Status ParseInitFields(const Json& j, std::string_view field, DType dtype, size_t rank,
                       const std::set<std::string, std::less<>>& known, InitSpec* init) {
  if (!j.contains("dist"))
    return FieldError(Sub(field, "dist"), "missing required field");
  WS_ASSIGN_OR_RETURN(init->dist, AsString(j["dist"], Sub(field, "dist")));
  const auto need_dtype = [&](bool ok, std::string_view what) -> Status {
    if (ok)
      return Status::Ok();
    return FieldError(Sub(field, "dist"), "'{}' needs {}, not {}", init->dist, what,
                      DTypeName(dtype));
  };
  if (init->dist == "normal") {
    WS_RETURN_IF_ERROR(CheckKeys(j, field, {"dist"}, {"mean", "stddev"}));
    WS_RETURN_IF_ERROR(OptNumber(j, field, "mean", &init->mean));
    WS_RETURN_IF_ERROR(OptNumber(j, field, "stddev", &init->stddev));
    if (!(init->stddev > 0))
      return FieldError(Sub(field, "stddev"), "must be positive");
  } else if (init->dist == "uniform") {
    WS_RETURN_IF_ERROR(CheckKeys(j, field, {"dist"}, {"lo", "hi"}));
    WS_RETURN_IF_ERROR(OptNumber(j, field, "lo", &init->lo));
    WS_RETURN_IF_ERROR(OptNumber(j, field, "hi", &init->hi));
    if (!(init->lo < init->hi))
      return FieldError(field, "needs lo < hi");
  } else if (init->dist == "mx_blocks") {
    WS_RETURN_IF_ERROR(CheckKeys(j, field, {"dist"}, {"blocks"}));
    if (j.contains("blocks")) {
      const Json& b = j["blocks"];
      if (!b.is_string() || (b != "rows" && b != "tiles"))
        return FieldError(Sub(field, "blocks"), "must be \"rows\" or \"tiles\"");
      init->mx_tiles = b == "tiles";
      if (init->mx_tiles && rank < 2)
        return FieldError(Sub(field, "blocks"), "\"tiles\" needs a tensor of 2 or more dims");
    }
  } else if (init->dist == "normal_outliers") {
    WS_RETURN_IF_ERROR(CheckKeys(j, field, {"dist", "outlier_fraction", "outlier_scale"},
                                 {"mean", "stddev"}));
    WS_RETURN_IF_ERROR(need_dtype(IsFloatDType(dtype), "a bf16, f16 or f32 tensor"));
    WS_RETURN_IF_ERROR(OptNumber(j, field, "mean", &init->mean));
    WS_RETURN_IF_ERROR(OptNumber(j, field, "stddev", &init->stddev));
    WS_RETURN_IF_ERROR(OptNumber(j, field, "outlier_fraction", &init->outlier_fraction));
    WS_RETURN_IF_ERROR(OptNumber(j, field, "outlier_scale", &init->outlier_scale));
    if (!(init->stddev > 0))
      return FieldError(Sub(field, "stddev"), "must be positive");
    if (!(init->outlier_fraction >= 0 && init->outlier_fraction <= 1))
      return FieldError(Sub(field, "outlier_fraction"), "must be in [0, 1]");
    if (!(init->outlier_scale > 0))
      return FieldError(Sub(field, "outlier_scale"), "must be positive");
  } else if (init->dist == "topk_ids") {
    WS_RETURN_IF_ERROR(CheckKeys(j, field, {"dist", "experts", "k"}, {"skew"}));
    WS_RETURN_IF_ERROR(need_dtype(dtype == DType::kI32, "an i32 tensor"));
    if (rank != 2)
      return FieldError(Sub(field, "dist"), "'topk_ids' needs a 2-D tensor [T, k]");
    WS_ASSIGN_OR_RETURN(init->experts, ExprField(j["experts"], Sub(field, "experts"), known));
    WS_ASSIGN_OR_RETURN(init->k, ExprField(j["k"], Sub(field, "k"), known));
    WS_RETURN_IF_ERROR(OptNumber(j, field, "skew", &init->skew));
    if (!(init->skew >= 0 && init->skew <= 16))
      return FieldError(Sub(field, "skew"), "must be in [0, 16]");
  } else if (init->dist == "group_offsets") {
    WS_RETURN_IF_ERROR(CheckKeys(j, field, {"dist", "total"}, {"align", "skew", "empty"}));
    WS_RETURN_IF_ERROR(need_dtype(dtype == DType::kI32, "an i32 tensor"));
    if (rank != 1)
      return FieldError(Sub(field, "dist"), "'group_offsets' needs a 1-D tensor [G]");
    WS_ASSIGN_OR_RETURN(init->total, ExprField(j["total"], Sub(field, "total"), known));
    if (j.contains("align")) {
      WS_ASSIGN_OR_RETURN(init->align, AsInt(j["align"], Sub(field, "align")));
      if (init->align < 1 || init->align > (int64_t{1} << 20))
        return FieldError(Sub(field, "align"), "must be in [1, 2^20]");
    }
    WS_RETURN_IF_ERROR(OptNumber(j, field, "skew", &init->skew));
    WS_RETURN_IF_ERROR(OptNumber(j, field, "empty", &init->empty));
    if (!(init->skew >= 0 && init->skew <= 16))
      return FieldError(Sub(field, "skew"), "must be in [0, 16]");
    if (!(init->empty >= 0 && init->empty < 1))
      return FieldError(Sub(field, "empty"), "must be in [0, 1)");
  } else {
    return FieldError(Sub(field, "dist"),
                      "unknown distribution '{}' (known: normal, uniform, mx_blocks, "
                      "normal_outliers, topk_ids, group_offsets)",
                      init->dist);
  }
  return Status::Ok();
}

// An input's init: its fields, then "by_param": {PARAM: {VALUE: {FIELD: number, ...}}}, the
// numeric fields that differ under a parameter's value (each such init checked whole).
Status ParseInit(const Json& j, std::string_view field, DType dtype, size_t rank,
                 const std::set<std::string, std::less<>>& known, const ProblemSpec& spec,
                 InitSpec* init) {
  if (!j.is_object())
    return FieldError(field, "must be an object, not {}", JsonType(j));
  Json base = j;
  base.erase("by_param");
  WS_RETURN_IF_ERROR(ParseInitFields(base, field, dtype, rank, known, init));
  if (!j.contains("by_param"))
    return Status::Ok();
  static const std::set<std::string, std::less<>> kNumeric = {
      "mean", "stddev", "lo", "hi", "outlier_fraction", "outlier_scale", "skew", "empty"};
  const std::string by_field = Sub(field, "by_param");
  const Json& by = j["by_param"];
  if (!by.is_object() || by.empty())
    return FieldError(by_field, "must be a non-empty object of parameters");
  for (const auto& [name, per_value] : by.items()) {
    const std::string pfield = Sub(by_field, name);
    const ParamSpec* p = spec.FindParam(name);
    if (p == nullptr)
      return FieldError(pfield, "'{}' is not a parameter of this problem", name);
    if (!per_value.is_object() || per_value.empty())
      return FieldError(pfield, "must be a non-empty object of the parameter's values");
    for (const auto& [value, fields] : per_value.items()) {
      const std::string vfield = Sub(pfield, value);
      const auto v = std::find(p->values.begin(), p->values.end(), value);
      if (v == p->values.end())
        return FieldError(vfield, "'{}' is not a value of '{}'", value, name);
      if (!fields.is_object() || fields.empty())
        return FieldError(vfield, "must be a non-empty object of fields");
      Json merged = base;
      for (const auto& [key, number] : fields.items()) {
        if (!kNumeric.count(key)) {
          return FieldError(Sub(vfield, key),
                            "only numeric fields (mean, stddev, lo, hi, outlier_fraction, "
                            "outlier_scale, skew, empty) may differ by parameter");
        }
        merged[key] = number;
      }
      auto sub = std::make_shared<InitSpec>();
      WS_RETURN_IF_ERROR(ParseInitFields(merged, vfield, dtype, rank, known, sub.get()));
      init->by_param.push_back({name, v - p->values.begin(), std::move(sub)});
    }
  }
  return Status::Ok();
}

// A tolerance entry for output `t`; pairings (mx_data <-> mx_scales) are checked afterwards.
Result<Tolerance> ParseTolerance(const Json& j, std::string_view field, const TensorSpec& t) {
  Tolerance tol;
  if (j.is_string()) {
    if (j.get<std::string>() != "exact") {
      return FieldError(field, "unknown tolerance '{}' (a string must be \"exact\"; others are "
                        "objects with a \"kind\")", j.get<std::string>());
    }
    return tol;
  }
  if (!j.is_object())
    return FieldError(field, "must be \"exact\" or an object, not {}", JsonType(j));
  if (!j.contains("kind"))
    return FieldError(Sub(field, "kind"), "missing required field");
  WS_ASSIGN_OR_RETURN(std::string kind, AsString(j["kind"], Sub(field, "kind")));
  const auto need_dtype = [&](bool ok, std::string_view what) -> Status {
    if (ok)
      return Status::Ok();
    return FieldError(Sub(field, "kind"), "'{}' needs {} output, not {} ('{}')", kind, what,
                      DTypeName(t.dtype), t.name);
  };
  const auto nonneg = [&](const char* key, double* v) -> Status {
    WS_RETURN_IF_ERROR(OptNumber(j, field, key, v));
    if (!(*v >= 0))
      return FieldError(Sub(field, key), "must be >= 0");
    return Status::Ok();
  };
  if (kind == "exact") {
    WS_RETURN_IF_ERROR(CheckKeys(j, field, {"kind"}, {}));
  } else if (kind == "ulp") {
    tol.kind = ToleranceKind::kUlp;
    WS_RETURN_IF_ERROR(CheckKeys(j, field, {"kind", "max"}, {}));
    WS_RETURN_IF_ERROR(need_dtype(IsFloatDType(t.dtype), "a bf16, f16 or f32"));
    WS_ASSIGN_OR_RETURN(tol.max_ulp, AsInt(j["max"], Sub(field, "max")));
    if (tol.max_ulp < 0 || tol.max_ulp > (int64_t{1} << 24))
      return FieldError(Sub(field, "max"), "must be in [0, 2^24]");
  } else if (kind == "close") {
    tol.kind = ToleranceKind::kClose;
    WS_RETURN_IF_ERROR(CheckKeys(j, field, {"kind"}, {"rtol", "atol"}));
    WS_RETURN_IF_ERROR(need_dtype(IsFloatDType(t.dtype), "a bf16, f16 or f32"));
    if (!j.contains("rtol") && !j.contains("atol"))
      return FieldError(field, "'close' needs rtol, atol or both");
    WS_RETURN_IF_ERROR(nonneg("rtol", &tol.rtol));
    WS_RETURN_IF_ERROR(nonneg("atol", &tol.atol));
  } else if (kind == "gemm") {
    tol.kind = ToleranceKind::kGemm;
    WS_RETURN_IF_ERROR(CheckKeys(
        j, field, {"kind"},
        {"rel_frobenius", "elem_rtol", "elem_rms", "elem_fraction", "worst_rms"}));
    WS_RETURN_IF_ERROR(need_dtype(IsFloatDType(t.dtype), "a bf16, f16 or f32"));
    WS_RETURN_IF_ERROR(nonneg("rel_frobenius", &tol.rel_frobenius));
    WS_RETURN_IF_ERROR(nonneg("elem_rtol", &tol.elem_rtol));
    WS_RETURN_IF_ERROR(nonneg("elem_rms", &tol.elem_rms));
    WS_RETURN_IF_ERROR(nonneg("worst_rms", &tol.worst_rms));
    WS_RETURN_IF_ERROR(OptNumber(j, field, "elem_fraction", &tol.elem_fraction));
    if (!(tol.elem_fraction > 0 && tol.elem_fraction <= 1))
      return FieldError(Sub(field, "elem_fraction"), "must be in (0, 1]");
  } else if (kind == "mx_data") {
    tol.kind = ToleranceKind::kMxData;
    tol.max_ulp = 1;
    WS_RETURN_IF_ERROR(
        CheckKeys(j, field, {"kind", "scales"}, {"max_ulp", "scale_mismatch_fraction"}));
    WS_RETURN_IF_ERROR(need_dtype(t.dtype == DType::kFP8E4M3 || t.dtype == DType::kFP8E5M2,
                                  "an fp8_e4m3 or fp8_e5m2"));
    WS_ASSIGN_OR_RETURN(tol.partner, AsString(j["scales"], Sub(field, "scales")));
    if (j.contains("max_ulp")) {
      WS_ASSIGN_OR_RETURN(tol.max_ulp, AsInt(j["max_ulp"], Sub(field, "max_ulp")));
      if (tol.max_ulp < 0 || tol.max_ulp > 64)
        return FieldError(Sub(field, "max_ulp"), "must be in [0, 64]");
    }
    WS_RETURN_IF_ERROR(OptNumber(j, field, "scale_mismatch_fraction",
                                 &tol.scale_mismatch_fraction));
    if (!(tol.scale_mismatch_fraction >= 0 && tol.scale_mismatch_fraction <= 1))
      return FieldError(Sub(field, "scale_mismatch_fraction"), "must be in [0, 1]");
  } else if (kind == "mx_scales") {
    tol.kind = ToleranceKind::kMxScales;
    WS_RETURN_IF_ERROR(CheckKeys(j, field, {"kind", "data"}, {}));
    WS_RETURN_IF_ERROR(need_dtype(t.dtype == DType::kE8M0, "an e8m0"));
    WS_ASSIGN_OR_RETURN(tol.partner, AsString(j["data"], Sub(field, "data")));
  } else if (kind == "custom") {
    tol.kind = ToleranceKind::kCustom;
    WS_RETURN_IF_ERROR(CheckKeys(j, field, {"kind", "checker"}, {"options"}));
    WS_ASSIGN_OR_RETURN(tol.checker, AsString(j["checker"], Sub(field, "checker")));
    if (!IsIdentifier(tol.checker))
      return FieldError(Sub(field, "checker"), "'{}' is not an identifier", tol.checker);
    if (j.contains("options")) {
      const Json& o = j["options"];
      if (!o.is_object())
        return FieldError(Sub(field, "options"), "must be an object, not {}", JsonType(o));
      for (const auto& [key, value] : o.items()) {
        WS_ASSIGN_OR_RETURN(tol.options[key], AsNumber(value, Sub(Sub(field, "options"), key)));
      }
    }
  } else {
    return FieldError(Sub(field, "kind"),
                      "unknown tolerance kind '{}' (known: exact, ulp, close, gemm, mx_data, "
                      "mx_scales, custom)",
                      kind);
  }
  return tol;
}

// mx_data and mx_scales entries name each other, on tensors of matching shapes.
Status CheckTolerancePairs(const ProblemSpec& spec) {
  for (const auto& [name, tol] : spec.tolerance) {
    const std::string field = Sub("tolerance", name);
    if (tol.kind != ToleranceKind::kMxData && tol.kind != ToleranceKind::kMxScales)
      continue;
    const bool data = tol.kind == ToleranceKind::kMxData;
    const std::string key = data ? "scales" : "data";
    const TensorSpec* other = spec.FindTensor(tol.partner);
    if (other == nullptr || other->role != TensorRole::kOutput) {
      return FieldError(Sub(field, key), "'{}' is not an output tensor", tol.partner);
    }
    const auto it = spec.tolerance.find(tol.partner);
    const ToleranceKind want = data ? ToleranceKind::kMxScales : ToleranceKind::kMxData;
    if (it == spec.tolerance.end() || it->second.kind != want || it->second.partner != name) {
      return FieldError(Sub(field, key),
                        "'{}' must have the tolerance {{\"kind\": \"{}\", \"{}\": \"{}\"}}",
                        tol.partner, data ? "mx_scales" : "mx_data", data ? "data" : "scales",
                        name);
    }
    if (data && spec.FindTensor(name)->shape.size() != other->shape.size()) {
      return FieldError(Sub(field, key), "'{}' and '{}' must have the same rank", name,
                        tol.partner);
    }
  }
  return Status::Ok();
}

// Checks at one shape what only concrete sizes show: init parameters and mx block pairing.
Status CheckAtShape(const ProblemSpec& spec, const SymbolTable& symbols) {
  const auto eval = [&](const std::string& expr, const std::string& field) -> Result<int64_t> {
    Result<int64_t> v = EvalExpr(expr, symbols);
    if (!v.ok())
      return v.status().Context(field);
    return v;
  };
  for (size_t i = 0; i < spec.tensors.size(); ++i) {
    const TensorSpec& t = spec.tensors[i];
    const std::string field = fmt::format("tensors[{}] ({}).init", i, t.name);
    if (t.role != TensorRole::kInput)
      continue;
    WS_ASSIGN_OR_RETURN(std::vector<int64_t> dims, TensorDims(t, symbols));
    if (t.init.dist == "topk_ids") {
      WS_ASSIGN_OR_RETURN(int64_t e, eval(t.init.experts, Sub(field, "experts")));
      WS_ASSIGN_OR_RETURN(int64_t k, eval(t.init.k, Sub(field, "k")));
      if (e < 1 || e > INT32_MAX)
        return FieldError(Sub(field, "experts"), "{} is not in [1, 2^31)", e);
      if (k < 0 || k > e || k > 64) {
        return FieldError(Sub(field, "k"), "{} is not in [0, min(experts = {}, 64)]", k, e);
      }
      if (dims[1] != k)
        return FieldError(Sub(field, "k"), "{} differs from the tensor's last dimension {}", k,
                          dims[1]);
    } else if (t.init.dist == "group_offsets") {
      WS_ASSIGN_OR_RETURN(int64_t total, eval(t.init.total, Sub(field, "total")));
      if (total < 0 || total > INT32_MAX)
        return FieldError(Sub(field, "total"), "{} is not in [0, 2^31)", total);
      if (total % t.init.align != 0)
        return FieldError(Sub(field, "total"), "{} is not a multiple of align {}", total,
                          t.init.align);
      if (dims[0] == 0 && total != 0)
        return FieldError(Sub(field, "total"), "{} rows in no groups (G = 0)", total);
    }
  }
  for (const auto& [name, tol] : spec.tolerance) {
    if (tol.kind != ToleranceKind::kMxData)
      continue;
    WS_ASSIGN_OR_RETURN(std::vector<int64_t> d, TensorDims(*spec.FindTensor(name), symbols));
    WS_ASSIGN_OR_RETURN(std::vector<int64_t> s,
                        TensorDims(*spec.FindTensor(tol.partner), symbols));
    bool ok = !d.empty() && d.size() == s.size() && s.back() == (d.back() + 31) / 32;
    for (size_t i = 0; ok && i + 1 < d.size(); ++i) ok = d[i] == s[i];
    if (!ok) {
      return FieldError(fmt::format("tolerance.{}.scales", name),
                        "'{}' [{}] must be '{}' [{}] with the last dimension / 32", tol.partner,
                        fmt::join(s, ", "), name, fmt::join(d, ", "));
    }
  }
  return Status::Ok();
}

Result<TensorSpec> ParseTensor(const Json& j, std::string_view field,
                               const std::set<std::string, std::less<>>& known,
                               const ProblemSpec& spec) {
  WS_RETURN_IF_ERROR(CheckKeys(j, field, {"name", "dtype", "shape", "role"}, {"init"}));
  TensorSpec t;
  WS_ASSIGN_OR_RETURN(t.name, AsString(j["name"], Sub(field, "name")));
  if (!IsIdentifier(t.name)) {
    return FieldError(Sub(field, "name"), "'{}' is not an identifier", t.name);
  }
  WS_ASSIGN_OR_RETURN(std::string dtype, AsString(j["dtype"], Sub(field, "dtype")));
  Result<DType> dt = ParseDType(dtype);
  if (!dt.ok())
    return dt.status().Context(Sub(field, "dtype"));
  t.dtype = *dt;
  const std::string shape_field = Sub(field, "shape");
  const Json& shape = j["shape"];
  if (!shape.is_array())
    return FieldError(shape_field, "must be an array, not {}", JsonType(shape));
  for (size_t i = 0; i < shape.size(); ++i) {
    std::string expr;
    if (shape[i].is_number_integer()) {
      expr = std::to_string(shape[i].get<int64_t>());  // a literal dimension
    } else {
      WS_ASSIGN_OR_RETURN(expr, AsString(shape[i], Idx(shape_field, i)));
    }
    WS_RETURN_IF_ERROR(CheckExpr(expr, Idx(shape_field, i), known));
    t.shape.push_back(std::move(expr));
  }
  WS_ASSIGN_OR_RETURN(std::string role, AsString(j["role"], Sub(field, "role")));
  if (role == "input") {
    t.role = TensorRole::kInput;
  } else if (role == "output") {
    t.role = TensorRole::kOutput;
  } else {
    return FieldError(Sub(field, "role"), "unknown role '{}' (known: input, output)", role);
  }
  if (j.contains("init")) {
    if (t.role != TensorRole::kInput)
      return FieldError(Sub(field, "init"), "outputs take no init");
    WS_RETURN_IF_ERROR(
        ParseInit(j["init"], Sub(field, "init"), t.dtype, t.shape.size(), known, spec, &t.init));
  }
  return t;
}

Result<Shape> ParseShape(const Json& j, std::string_view field, const ProblemSpec& spec,
                         bool need_source) {
  if (!j.is_object())
    return FieldError(field, "must be an object, not {}", JsonType(j));
  Shape s;
  for (const auto& [key, value] : j.items()) {
    if (key == "source") {
      WS_ASSIGN_OR_RETURN(s.source, AsString(value, Sub(field, key)));
      continue;
    }
    if (std::find(spec.symbols.begin(), spec.symbols.end(), key) == spec.symbols.end()) {
      return FieldError(field, "unknown symbol '{}'", key);
    }
    WS_ASSIGN_OR_RETURN(s.symbols[key], AsInt(value, Sub(field, key)));
  }
  if (need_source && s.source.empty()) {
    return FieldError(Sub(field, "source"),
                      "bench shapes need a source (the model they come from)");
  }
  return s;
}

Result<ProblemSpec> Parse(const Json& root, const std::string& path) {
  WS_RETURN_IF_ERROR(CheckKeys(root, "",
                               {"name", "description", "symbols", "tensors", "shapes", "cost",
                                "tolerance", "cpu_reference", "gpu_reference", "baseline"},
                               {"constraints", "params", "starting_kernel"}));
  ProblemSpec spec;
  spec.dir = fs::path(path).parent_path().string();
  if (spec.dir.empty())
    spec.dir = ".";

  WS_ASSIGN_OR_RETURN(spec.name, AsString(root["name"], "name"));
  if (!IsIdentifier(spec.name))
    return FieldError("name", "'{}' is not an identifier", spec.name);
  const std::string folder =
      fs::absolute(path).lexically_normal().parent_path().filename().string();
  if (spec.name != folder) {
    return FieldError("name", "'{}' differs from its folder '{}'", spec.name, folder);
  }
  WS_ASSIGN_OR_RETURN(spec.description, AsString(root["description"], "description"));

  // Names: symbols, then params; together they are what expressions may use.
  std::set<std::string, std::less<>> known;
  WS_ASSIGN_OR_RETURN(spec.symbols, AsStringArray(root["symbols"], "symbols"));
  for (size_t i = 0; i < spec.symbols.size(); ++i) {
    if (!IsIdentifier(spec.symbols[i])) {
      return FieldError(Idx("symbols", i), "'{}' is not an identifier", spec.symbols[i]);
    }
    if (!known.insert(spec.symbols[i]).second) {
      return FieldError(Idx("symbols", i), "duplicate symbol '{}'", spec.symbols[i]);
    }
  }
  if (root.contains("params")) {
    const Json& params = root["params"];
    if (!params.is_object())
      return FieldError("params", "must be an object, not {}", JsonType(params));
    for (const auto& [name, p] : params.items()) {
      const std::string field = Sub("params", name);
      if (!IsIdentifier(name))
        return FieldError(field, "'{}' is not an identifier", name);
      if (!known.insert(name).second)
        return FieldError(field, "'{}' is also a symbol", name);
      WS_RETURN_IF_ERROR(CheckKeys(p, field, {"values", "default"}, {}));
      ParamSpec ps;
      ps.name = name;
      WS_ASSIGN_OR_RETURN(ps.values, AsStringArray(p["values"], Sub(field, "values")));
      if (ps.values.empty())
        return FieldError(Sub(field, "values"), "must not be empty");
      for (size_t i = 0; i < ps.values.size(); ++i) {
        if (!IsIdentifier(ps.values[i])) {
          return FieldError(Idx(Sub(field, "values"), i), "'{}' is not an identifier",
                            ps.values[i]);
        }
        if (std::count(ps.values.begin(), ps.values.end(), ps.values[i]) > 1) {
          return FieldError(Idx(Sub(field, "values"), i), "duplicate value '{}'", ps.values[i]);
        }
      }
      WS_ASSIGN_OR_RETURN(ps.default_value, AsString(p["default"], Sub(field, "default")));
      if (std::find(ps.values.begin(), ps.values.end(), ps.default_value) == ps.values.end()) {
        return FieldError(Sub(field, "default"), "'{}' is not one of the values", ps.default_value);
      }
      spec.params.push_back(std::move(ps));
    }
  }
  if (root.contains("constraints")) {
    WS_ASSIGN_OR_RETURN(spec.constraints, AsStringArray(root["constraints"], "constraints"));
    for (size_t i = 0; i < spec.constraints.size(); ++i) {
      WS_RETURN_IF_ERROR(CheckExpr(spec.constraints[i], Idx("constraints", i), known));
    }
  }

  const Json& tensors = root["tensors"];
  if (!tensors.is_array() || tensors.empty()) {
    return FieldError("tensors", "must be a non-empty array");
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    WS_ASSIGN_OR_RETURN(TensorSpec t,
                        ParseTensor(tensors[i], Idx("tensors", i), known, spec));
    if (spec.FindTensor(t.name) != nullptr) {
      return FieldError(Sub(Idx("tensors", i), "name"), "duplicate tensor name '{}'", t.name);
    }
    spec.tensors.push_back(std::move(t));
  }
  if (std::none_of(spec.tensors.begin(), spec.tensors.end(),
                   [](const TensorSpec& t) { return t.role == TensorRole::kOutput; })) {
    return FieldError("tensors", "no output tensor");
  }

  const Json& cost = root["cost"];
  WS_RETURN_IF_ERROR(CheckKeys(cost, "cost", {"bytes"}, {"flops"}));
  WS_ASSIGN_OR_RETURN(spec.cost_bytes, AsString(cost["bytes"], "cost.bytes"));
  WS_RETURN_IF_ERROR(CheckExpr(spec.cost_bytes, "cost.bytes", known));
  if (cost.contains("flops")) {
    const Json& flops = cost["flops"];
    if (!flops.is_object())
      return FieldError("cost.flops", "must be an object, not {}", JsonType(flops));
    for (const auto& [cls, expr] : flops.items()) {
      const std::string field = Sub("cost.flops", cls);
      WS_ASSIGN_OR_RETURN(std::string e, AsString(expr, field));
      WS_RETURN_IF_ERROR(CheckExpr(e, field, known));
      spec.cost_flops[cls] = std::move(e);
    }
  }

  const Json& tolerance = root["tolerance"];
  if (!tolerance.is_object()) {
    return FieldError("tolerance", "must be an object, not {}", JsonType(tolerance));
  }
  for (const auto& [name, value] : tolerance.items()) {
    const std::string field = Sub("tolerance", name);
    const TensorSpec* t = spec.FindTensor(name);
    if (t == nullptr || t->role != TensorRole::kOutput) {
      return FieldError(field, "'{}' is not an output tensor", name);
    }
    WS_ASSIGN_OR_RETURN(spec.tolerance[name], ParseTolerance(value, field, *t));
  }
  WS_RETURN_IF_ERROR(CheckTolerancePairs(spec));
  for (const TensorSpec& t : spec.tensors) {
    if (t.role == TensorRole::kOutput && !spec.tolerance.contains(t.name)) {
      return FieldError("tolerance", "output '{}' has no tolerance", t.name);
    }
  }

  WS_ASSIGN_OR_RETURN(spec.cpu_reference, AsString(root["cpu_reference"], "cpu_reference"));
  if (FindCpuReference(spec.cpu_reference) == nullptr) {
    return FieldError("cpu_reference", "no CPU reference registered as '{}'", spec.cpu_reference);
  }
  WS_ASSIGN_OR_RETURN(spec.gpu_reference,
                      KernelPath(root["gpu_reference"], "gpu_reference", spec.dir));
  // A baseline is a kernel file or a library op the trusted runner calls ("cublaslt:<op>").
  if (root["baseline"].is_string() && IsLibraryBaseline(root["baseline"].get<std::string>())) {
    spec.baseline = root["baseline"].get<std::string>();
    if (!KnownLibraryBaseline(spec.baseline)) {
      return FieldError("baseline", "unknown library op '{}' (known: {})", spec.baseline,
                        fmt::join(kLibraryBaselines, ", "));
    }
    if (!root.contains("starting_kernel")) {
      return FieldError("starting_kernel", "required with a library baseline");
    }
  } else {
    WS_ASSIGN_OR_RETURN(spec.baseline, KernelPath(root["baseline"], "baseline", spec.dir));
  }
  spec.starting_kernel = spec.baseline;
  if (root.contains("starting_kernel")) {
    WS_ASSIGN_OR_RETURN(spec.starting_kernel,
                        KernelPath(root["starting_kernel"], "starting_kernel", spec.dir));
  }

  // Shapes last: checking them evaluates the tensor and cost expressions.
  const Json& shapes = root["shapes"];
  WS_RETURN_IF_ERROR(CheckKeys(shapes, "shapes", {"test", "bench"}, {"hidden"}));
  const std::map<std::string, std::string> defaults = *ResolveParams(spec, {});
  for (const auto& [kind, list] :
       {std::pair{"test", &spec.test_shapes}, std::pair{"bench", &spec.bench_shapes},
        std::pair{"hidden", &spec.hidden_shapes}}) {
    const std::string field = Sub("shapes", kind);
    if (!shapes.contains(kind))
      continue;
    const Json& arr = shapes[kind];
    if (!arr.is_array())
      return FieldError(field, "must be an array, not {}", JsonType(arr));
    if (arr.empty() && std::string_view(kind) != "hidden") {
      return FieldError(field, "must not be empty");
    }
    for (size_t i = 0; i < arr.size(); ++i) {
      const std::string sf = Idx(field, i);
      WS_ASSIGN_OR_RETURN(Shape s, ParseShape(arr[i], sf, spec, std::string_view(kind) == "bench"));
      WS_RETURN_IF_ERROR(ValidateShape(spec, s).Context(sf));
      const SymbolTable symbols = BindSymbols(spec, s, defaults);
      for (size_t t = 0; t < spec.tensors.size(); ++t) {
        WS_RETURN_IF_ERROR(
            TensorNumel(spec.tensors[t], symbols)
                .status()
                .Context(fmt::format("{}: tensors[{}] ({})", sf, t, spec.tensors[t].name)));
      }
      WS_RETURN_IF_ERROR(CheckAtShape(spec, symbols).Context(sf));
      WS_RETURN_IF_ERROR(
          EvalExpr(spec.cost_bytes, symbols).status().Context(fmt::format("{}: cost.bytes", sf)));
      for (const auto& [cls, e] : spec.cost_flops) {
        WS_RETURN_IF_ERROR(
            EvalExpr(e, symbols).status().Context(fmt::format("{}: cost.flops.{}", sf, cls)));
      }
      list->push_back(std::move(s));
    }
  }
  return spec;
}

}  // namespace

const TensorSpec* ProblemSpec::FindTensor(std::string_view n) const {
  for (const TensorSpec& t : tensors) {
    if (t.name == n)
      return &t;
  }
  return nullptr;
}

const ParamSpec* ProblemSpec::FindParam(std::string_view n) const {
  for (const ParamSpec& p : params) {
    if (p.name == n)
      return &p;
  }
  return nullptr;
}

Result<ProblemSpec> LoadProblem(const std::string& spec_path) {
  Result<std::string> text = ReadFile(spec_path);
  if (!text.ok())
    return Status::Error("{}: cannot read", spec_path);
  try {
    const Json root = Json::parse(*text);
    Result<ProblemSpec> r = Parse(root, spec_path);
    if (!r.ok())
      return r.status().Context(spec_path);
    return r;
  } catch (const Json::exception& e) {
    // NOTE: parse errors land here; Parse checks types before every get<>, so others are bugs
    // we still report rather than crash on.
    return Status::Error("{}: invalid JSON: {}", spec_path, e.what());
  }
}

Result<std::vector<ProblemSpec>> LoadProblemSet(const std::string& root) {
  return LoadProblemSet(root, [](std::string_view) { return true; });
}

Result<std::vector<ProblemSpec>> LoadProblemSet(
    const std::string& root, const std::function<bool(std::string_view)>& want) {
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    return Status::Error("{}: not a directory", root);
  std::vector<ProblemSpec> out;
  for (const fs::directory_entry& e : fs::directory_iterator(root, ec)) {
    const fs::path spec = e.path() / "spec.json";
    if (!e.is_directory() || !fs::exists(spec) || !want(e.path().filename().string()))
      continue;
    WS_ASSIGN_OR_RETURN(ProblemSpec p, LoadProblem(spec.string()));
    out.push_back(std::move(p));
  }
  if (ec)
    return Status::Error("{}: cannot list: {}", root, ec.message());
  std::sort(out.begin(), out.end(),
            [](const ProblemSpec& a, const ProblemSpec& b) { return a.name < b.name; });
  return out;
}

Result<std::map<std::string, std::string>> ResolveParams(
    const ProblemSpec& spec, const std::map<std::string, std::string>& overrides) {
  std::map<std::string, std::string> out;
  for (const ParamSpec& p : spec.params) out[p.name] = p.default_value;
  for (const auto& [name, value] : overrides) {
    const ParamSpec* p = spec.FindParam(name);
    if (p == nullptr) {
      std::vector<std::string> names;
      for (const ParamSpec& q : spec.params) names.push_back(q.name);
      return Status::Error("{}: unknown parameter '{}' (parameters: {})", spec.name, name,
                           names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", ")));
    }
    if (std::find(p->values.begin(), p->values.end(), value) == p->values.end()) {
      return Status::Error("{}: parameter '{}' has no value '{}' (values: {})", spec.name, name,
                           value, fmt::join(p->values, ", "));
    }
    out[name] = value;
  }
  return out;
}

SymbolTable BindSymbols(const ProblemSpec& spec, const Shape& shape,
                        const std::map<std::string, std::string>& params) {
  SymbolTable out = shape.symbols;
  for (const ParamSpec& p : spec.params) {
    const auto it = params.find(p.name);
    const std::string& value = it == params.end() ? p.default_value : it->second;
    const auto v = std::find(p.values.begin(), p.values.end(), value);
    WS_CHECK(v != p.values.end());  // ResolveParams vets values
    out[p.name] = v - p.values.begin();
  }
  return out;
}

Status ValidateShape(const ProblemSpec& spec, const Shape& shape) {
  for (const std::string& s : spec.symbols) {
    if (!shape.symbols.contains(s)) {
      return Status::Error("shape {}: missing symbol '{}'", FormatShape(shape), s);
    }
  }
  for (const auto& [name, value] : shape.symbols) {
    if (std::find(spec.symbols.begin(), spec.symbols.end(), name) == spec.symbols.end()) {
      return Status::Error("shape {}: unknown symbol '{}'", FormatShape(shape), name);
    }
  }
  const SymbolTable symbols = BindSymbols(spec, shape, {});
  for (const std::string& c : spec.constraints) {
    WS_ASSIGN_OR_RETURN(int64_t ok, EvalExpr(c, symbols));
    if (ok == 0) {
      return Status::Error("shape {}: constraint '{}' does not hold", FormatShape(shape), c);
    }
  }
  return Status::Ok();
}

Result<std::vector<int64_t>> TensorDims(const TensorSpec& t, const SymbolTable& symbols) {
  std::vector<int64_t> dims;
  for (const std::string& e : t.shape) {
    WS_ASSIGN_OR_RETURN(int64_t d, EvalExpr(e, symbols));
    if (d < 0)
      return Status::Error("tensor '{}': dimension '{}' is negative ({})", t.name, e, d);
    dims.push_back(d);
  }
  return dims;
}

Result<int64_t> TensorNumel(const TensorSpec& t, const SymbolTable& symbols) {
  WS_ASSIGN_OR_RETURN(std::vector<int64_t> dims, TensorDims(t, symbols));
  int64_t n = 1;
  for (int64_t d : dims) {
    if (__builtin_mul_overflow(n, d, &n)) {
      return Status::Error("tensor '{}': element count overflows", t.name);
    }
  }
  // Bytes must fit too: the runner allocates them.
  if (int64_t bytes; __builtin_mul_overflow(n, int64_t{DTypeSize(t.dtype)}, &bytes)) {
    return Status::Error("tensor '{}': byte count overflows", t.name);
  }
  return n;
}

std::string_view ToleranceKindName(ToleranceKind k) {
  switch (k) {
    case ToleranceKind::kExact: return "exact";
    case ToleranceKind::kUlp: return "ulp";
    case ToleranceKind::kClose: return "close";
    case ToleranceKind::kGemm: return "gemm";
    case ToleranceKind::kMxData: return "mx_data";
    case ToleranceKind::kMxScales: return "mx_scales";
    case ToleranceKind::kCustom: return "custom";
  }
  return "unknown";
}

std::string ShapeText(const ProblemSpec& spec, const Shape& shape) {
  std::string t;
  for (const auto& name : spec.symbols) {
    auto it = shape.symbols.find(name);
    if (it != shape.symbols.end()) t += fmt::format("{}{}={}", t.empty() ? "" : " ", name, it->second);
  }
  return t;
}

}  // namespace ws

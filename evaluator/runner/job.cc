#include "evaluator/runner/job.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "problems/init.h"

namespace ws::runner {
namespace {

using json = nlohmann::json;

constexpr double kMaxCaseBudgetSeconds = 86400;

// Field readers: each names the field's path in its error.
Status Need(const json& j, const char* key, const std::string& path) {
  if (!j.is_object()) return Status::Error("{}: expected an object", path);
  if (!j.contains(key)) return Status::Error("{}.{}: missing", path, key);
  return Status::Ok();
}

Result<int64_t> Int(const json& j, const std::string& path, int64_t lo, int64_t hi) {
  int64_t v;
  if (j.is_number_unsigned()) {
    uint64_t u = j.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Status::Error("{}: {} is out of range [{}, {}]", path, u, lo, hi);
    }
    v = static_cast<int64_t>(u);
  } else if (j.is_number_integer()) {
    v = j.get<int64_t>();
  } else {
    return Status::Error("{}: expected an integer", path);
  }
  if (v < lo || v > hi) return Status::Error("{}: {} is out of range [{}, {}]", path, v, lo, hi);
  return v;
}

Result<int64_t> IntField(const json& j, const char* key, const std::string& path, int64_t lo,
                         int64_t hi) {
  WS_RETURN_IF_ERROR(Need(j, key, path));
  return Int(j[key], path + "." + key, lo, hi);
}

Result<std::string> StringField(const json& j, const char* key, const std::string& path) {
  WS_RETURN_IF_ERROR(Need(j, key, path));
  if (!j[key].is_string()) return Status::Error("{}.{}: expected a string", path, key);
  return j[key].get<std::string>();
}

Result<bool> BoolField(const json& j, const char* key, const std::string& path, bool dflt) {
  if (!j.is_object() || !j.contains(key)) return dflt;
  if (!j[key].is_boolean()) return Status::Error("{}.{}: expected true or false", path, key);
  return j[key].get<bool>();
}

Result<float> FloatField(const json& j, const char* key, const std::string& path, float dflt) {
  if (!j.contains(key) || j[key].is_null()) return dflt;
  if (!j[key].is_number()) return Status::Error("{}.{}: expected a number", path, key);
  double d = j[key].get<double>();
  if (!std::isfinite(d) || std::fabs(d) > 3.0e38) {
    return Status::Error("{}.{}: {} is not a finite float", path, key, d);
  }
  return static_cast<float>(d);
}

Status Dim3(const json& j, const char* key, const std::string& path, uint32_t lo, uint32_t out[3],
            bool optional) {
  if (!j.contains(key) || (optional && j[key].is_null())) {
    if (optional) return Status::Ok();
    return Status::Error("{}.{}: missing", path, key);
  }
  const json& a = j[key];
  std::string p = path + "." + key;
  if (!a.is_array() || a.empty() || a.size() > 3) {
    return Status::Error("{}: expected an array of 1 to 3 integers", p);
  }
  for (size_t i = 0; i < a.size(); ++i) {
    WS_ASSIGN_OR_RETURN(int64_t v, Int(a[i], fmt::format("{}[{}]", p, i), lo, 0xFFFFFFFFll));
    out[i] = static_cast<uint32_t>(v);
  }
  return Status::Ok();
}

Result<TensorJob> ParseTensor(const json& j, const std::string& path, int index) {
  TensorJob t;
  t.tensor_index = index;
  WS_ASSIGN_OR_RETURN(t.name, StringField(j, "name", path));
  if (t.name.empty() || t.name.find_first_of("/\\") != std::string::npos || t.name[0] == '.') {
    return Status::Error("{}.name: '{}' cannot name a dump file", path, t.name);
  }
  WS_ASSIGN_OR_RETURN(std::string dtype, StringField(j, "dtype", path));
  t.dtype = DtypeCode(dtype);
  if (t.dtype < 0) return Status::Error("{}.dtype: unknown dtype '{}'", path, dtype);
  WS_ASSIGN_OR_RETURN(t.numel, IntField(j, "numel", path, 0, int64_t{1} << 40));
  WS_ASSIGN_OR_RETURN(std::string role, StringField(j, "role", path));
  if (role != "input" && role != "output") {
    return Status::Error("{}.role: '{}' is neither input nor output", path, role);
  }
  t.input = role == "input";
  if (!t.input) return t;
  t.dist = kWsDistNormal;
  if (!j.contains("init") || j["init"].is_null()) return t;
  const json& init = j["init"];
  std::string ip = path + ".init";
  if (!init.is_object()) return Status::Error("{}: expected an object", ip);
  std::string dist = "normal";
  if (init.contains("dist")) {
    WS_ASSIGN_OR_RETURN(dist, StringField(init, "dist", ip));
  }
  if (dist == "normal" || dist == "mx_blocks") {
    t.dist = dist == "normal" ? kWsDistNormal : kWsDistMxBlocks;
    WS_ASSIGN_OR_RETURN(t.p0, FloatField(init, "mean", ip, 0.0f));
    WS_ASSIGN_OR_RETURN(t.p1, FloatField(init, "stddev", ip, 1.0f));
    if (t.dist == kWsDistMxBlocks && init.contains("tile_cols")) {
      WS_ASSIGN_OR_RETURN(t.n0, IntField(init, "tile_cols", ip, 1, int64_t{1} << 40));
      if (t.numel % t.n0 != 0)
        return Status::Error("{}.tile_cols: {} elements are not rows of {}", ip, t.numel, t.n0);
    }
  } else if (dist == "uniform") {
    t.dist = kWsDistUniform;
    WS_ASSIGN_OR_RETURN(t.p0, FloatField(init, "lo", ip, -1.0f));
    WS_ASSIGN_OR_RETURN(t.p1, FloatField(init, "hi", ip, 1.0f));
  } else if (dist == "normal_outliers") {
    t.dist = kWsDistNormalOutliers;
    WS_ASSIGN_OR_RETURN(t.p0, FloatField(init, "mean", ip, 0.0f));
    WS_ASSIGN_OR_RETURN(t.p1, FloatField(init, "stddev", ip, 1.0f));
    WS_ASSIGN_OR_RETURN(t.p2, FloatField(init, "outlier_fraction", ip, 0.0f));
    WS_ASSIGN_OR_RETURN(t.p3, FloatField(init, "outlier_scale", ip, 1.0f));
  } else if (dist == "topk_ids") {
    t.dist = kWsDistTopkIds;
    WS_ASSIGN_OR_RETURN(t.n0, IntField(init, "experts", ip, 1, 0x7FFFFFFF));
    WS_ASSIGN_OR_RETURN(t.n1, IntField(init, "k", ip, 0, std::min<int64_t>(t.n0, kWsTopkMaxK)));
    WS_ASSIGN_OR_RETURN(t.p0, FloatField(init, "skew", ip, 0.0f));
    if (t.n1 == 0 ? t.numel != 0 : t.numel % t.n1 != 0) {
      return Status::Error("{}.k: {} elements are not rows of {}", ip, t.numel, t.n1);
    }
  } else if (dist == "group_offsets") {
    t.dist = kWsDistGroupOffsets;
    WS_ASSIGN_OR_RETURN(t.n0, IntField(init, "total", ip, 0, 0x7FFFFFFF));
    WS_ASSIGN_OR_RETURN(t.n1, IntField(init, "align", ip, 1, 1 << 20));
    WS_ASSIGN_OR_RETURN(t.p0, FloatField(init, "skew", ip, 0.0f));
    WS_ASSIGN_OR_RETURN(t.p1, FloatField(init, "empty", ip, 0.0f));
    t.n2 = t.numel;
    if (t.n0 % t.n1 != 0) {
      return Status::Error("{}.total: {} is not a multiple of align {}", ip, t.n0, t.n1);
    }
  } else {
    return Status::Error(
        "{}.dist: unknown distribution '{}' (normal, uniform, mx_blocks, normal_outliers, "
        "topk_ids, group_offsets)",
        ip, dist);
  }
  if ((t.dist == kWsDistTopkIds || t.dist == kWsDistGroupOffsets) && t.dtype != kWsDtypeI32 &&
      t.dtype != kWsDtypeI64) {
    return Status::Error("{}.dist: '{}' needs an integer tensor", ip, dist);
  }
  return t;
}

// Up to kMaxTensorMapRank integers in [lo, hi] into out; returns how many.
Result<int> MapList(const json& j, const char* key, const std::string& path, int64_t lo,
                    int64_t hi, int64_t out[kMaxTensorMapRank]) {
  WS_RETURN_IF_ERROR(Need(j, key, path));
  const json& a = j[key];
  const std::string p = path + "." + key;
  if (!a.is_array() || a.empty() || a.size() > kMaxTensorMapRank) {
    return Status::Error("{}: expected 1 to {} integers", p, kMaxTensorMapRank);
  }
  for (size_t i = 0; i < a.size(); ++i) {
    WS_ASSIGN_OR_RETURN(out[i], Int(a[i], fmt::format("{}[{}]", p, i), lo, hi));
  }
  return static_cast<int>(a.size());
}

// A tensor-map argument: the map's fields, checked here against the tensor it covers (the
// runner trusts no caller's arithmetic) and turned into cuTensorMapEncodeTiled's arguments.
Status ParseTensorMapArg(const json& j, const std::string& path,
                         const std::map<std::string, int>& tensor_index,
                         const std::vector<TensorJob>& tensors, ArgJob* arg) {
  static const std::set<std::string> kKeys = {"name",     "tensor",   "dims",        "box",
                                              "element_strides", "swizzle", "oob_fill",
                                              "l2_promotion"};
  if (!j.is_object()) return Status::Error("{}: expected an object", path);
  for (auto& [key, _] : j.items()) {
    if (!kKeys.count(key)) return Status::Error("{}.{}: unknown field", path, key);
  }
  arg->kind = ArgJob::Kind::kTensorMap;
  if (j.contains("name")) {
    WS_ASSIGN_OR_RETURN(arg->map_name, StringField(j, "name", path));
  }
  WS_ASSIGN_OR_RETURN(std::string tensor, StringField(j, "tensor", path));
  auto it = tensor_index.find(tensor);
  if (it == tensor_index.end()) return Status::Error("{}.tensor: unknown tensor '{}'", path, tensor);
  arg->tensor = it->second;
  TensorMapSpec& m = arg->map;
  WS_ASSIGN_OR_RETURN(m.rank, MapList(j, "dims", path, 0, int64_t{1} << 40, m.dims));
  WS_ASSIGN_OR_RETURN(int box_rank, MapList(j, "box", path, 1, kMaxTensorMapBox, m.box));
  if (box_rank != m.rank) {
    return Status::Error("{}.box: {} extents for {} dims", path, box_rank, m.rank);
  }
  if (j.contains("element_strides")) {
    WS_ASSIGN_OR_RETURN(int n, MapList(j, "element_strides", path, 1,
                                       kMaxTensorMapElementStride, m.element_strides));
    if (n != m.rank) {
      return Status::Error("{}.element_strides: {} strides for {} dims", path, n, m.rank);
    }
  }
  if (j.contains("swizzle")) {
    WS_ASSIGN_OR_RETURN(int64_t v, Int(j["swizzle"], path + ".swizzle", 0, 128));
    m.swizzle = static_cast<int>(v);
  }
  if (j.contains("l2_promotion")) {
    WS_ASSIGN_OR_RETURN(int64_t v, Int(j["l2_promotion"], path + ".l2_promotion", 0, 256));
    m.l2_promotion = static_cast<int>(v);
  }
  if (j.contains("oob_fill")) {
    WS_ASSIGN_OR_RETURN(std::string fill, StringField(j, "oob_fill", path));
    if (fill != "zero" && fill != "nan") {
      return Status::Error("{}.oob_fill: '{}' is neither zero nor nan", path, fill);
    }
    m.oob_nan = fill == "nan";
  }
  const TensorJob& t = tensors[arg->tensor];
  auto enc = ComputeTensorMapEncoding(t.dtype, t.numel, m);
  if (!enc.ok()) {
    return Status::Error("{}.{} (tensor '{}' of {} elements)", path, enc.status().message(),
                         t.name, t.numel);
  }
  arg->encoding = *enc;
  return Status::Ok();
}

Result<LaunchJob> ParseLaunch(const json& j, const std::string& path,
                              const std::map<std::string, int>& tensor_index,
                              const std::vector<TensorJob>& tensors) {
  LaunchJob l;
  WS_ASSIGN_OR_RETURN(l.kernel, StringField(j, "kernel", path));
  WS_RETURN_IF_ERROR(Dim3(j, "grid", path, 0, l.grid, false));
  WS_RETURN_IF_ERROR(Dim3(j, "block", path, 0, l.block, false));
  WS_RETURN_IF_ERROR(Dim3(j, "cluster", path, 1, l.cluster, true));
  if (j.contains("smem")) {
    WS_ASSIGN_OR_RETURN(int64_t smem, Int(j["smem"], path + ".smem", 0, 0xFFFFFFFFll));
    l.smem = static_cast<uint32_t>(smem);
  }
  WS_ASSIGN_OR_RETURN(l.pdl, BoolField(j, "pdl", path, false));
  if (!j.contains("args")) return l;
  if (!j["args"].is_array()) return Status::Error("{}.args: expected an array", path);
  for (size_t i = 0; i < j["args"].size(); ++i) {
    const json& a = j["args"][i];
    std::string ap = fmt::format("{}.args[{}]", path, i);
    if (!a.is_object() || a.size() != 1) {
      return Status::Error("{}: expected one of {{\"tensor\"}}, {{\"workspace\"}}, {{\"i32\"}}, "
                           "{{\"i64\"}}, {{\"tensor_map\"}}",
                           ap);
    }
    ArgJob arg;
    if (a.contains("tensor")) {
      WS_ASSIGN_OR_RETURN(std::string name, StringField(a, "tensor", ap));
      auto it = tensor_index.find(name);
      if (it == tensor_index.end()) {
        return Status::Error("{}.tensor: unknown tensor '{}'", ap, name);
      }
      arg.kind = ArgJob::Kind::kTensor;
      arg.tensor = it->second;
    } else if (a.contains("tensor_map")) {
      WS_RETURN_IF_ERROR(
          ParseTensorMapArg(a["tensor_map"], ap + ".tensor_map", tensor_index, tensors, &arg));
    } else if (a.contains("workspace")) {
      arg.kind = ArgJob::Kind::kWorkspace;
    } else if (a.contains("i32")) {
      arg.kind = ArgJob::Kind::kI32;
      WS_ASSIGN_OR_RETURN(arg.value, Int(a["i32"], ap + ".i32", std::numeric_limits<int32_t>::min(),
                                         std::numeric_limits<int32_t>::max()));
    } else if (a.contains("i64")) {
      arg.kind = ArgJob::Kind::kI64;
      WS_ASSIGN_OR_RETURN(arg.value, Int(a["i64"], ap + ".i64", std::numeric_limits<int64_t>::min(),
                                         std::numeric_limits<int64_t>::max()));
    } else {
      return Status::Error("{}: unknown argument kind", ap);
    }
    l.args.push_back(std::move(arg));
  }
  return l;
}

Result<LibraryJob> ParseLibrary(const json& j, const std::string& path,
                                const std::map<std::string, int>& tensor_index) {
  LibraryJob l;
  WS_ASSIGN_OR_RETURN(l.op, StringField(j, "op", path));
  WS_ASSIGN_OR_RETURN(l.m, IntField(j, "m", path, 1, int64_t{1} << 31));
  WS_ASSIGN_OR_RETURN(l.n, IntField(j, "n", path, 1, int64_t{1} << 31));
  WS_ASSIGN_OR_RETURN(l.k, IntField(j, "k", path, 1, int64_t{1} << 31));
  WS_RETURN_IF_ERROR(Need(j, "tensors", path));
  if (!j["tensors"].is_array()) return Status::Error("{}.tensors: expected an array", path);
  for (size_t i = 0; i < j["tensors"].size(); ++i) {
    const std::string tp = fmt::format("{}.tensors[{}]", path, i);
    if (!j["tensors"][i].is_string()) return Status::Error("{}: expected a tensor name", tp);
    auto it = tensor_index.find(j["tensors"][i].get<std::string>());
    if (it == tensor_index.end()) {
      return Status::Error("{}: unknown tensor '{}'", tp, j["tensors"][i].get<std::string>());
    }
    l.tensors.push_back(it->second);
  }
  return l;
}

Result<uint64_t> Hex64Field(const json& j, const char* key, const std::string& path);

// A case's "sample": rows of large outputs written back in some runs (SampleJob).
Result<SampleJob> ParseSample(const json& j, const std::string& path, const CaseJob& c,
                              const std::map<std::string, int>& index) {
  if (!j.is_object()) return Status::Error("{}: expected an object", path);
  SampleJob s;
  WS_ASSIGN_OR_RETURN(s.key, Hex64Field(j, "key", path));
  WS_ASSIGN_OR_RETURN(int64_t every, IntField(j, "every", path, 2, 1 << 20));
  s.every = static_cast<int>(every);
  WS_RETURN_IF_ERROR(Need(j, "runs", path));
  if (!j["runs"].is_array()) return Status::Error("{}.runs: expected an array", path);
  for (size_t i = 0; i < j["runs"].size(); ++i) {
    const json& r = j["runs"][i];
    if (!r.is_string() || (r != "check" && r != "audit" && r != "last")) {
      return Status::Error("{}.runs[{}]: expected \"check\", \"audit\" or \"last\", got {}",
                           path, i, r.dump());
    }
    s.runs.push_back(r.get<std::string>());
  }
  WS_RETURN_IF_ERROR(Need(j, "outputs", path));
  if (!j["outputs"].is_array()) return Status::Error("{}.outputs: expected an array", path);
  for (size_t i = 0; i < j["outputs"].size(); ++i) {
    const std::string op = fmt::format("{}.outputs[{}]", path, i);
    const json& o = j["outputs"][i];
    if (!o.is_object()) return Status::Error("{}: expected an object", op);
    WS_ASSIGN_OR_RETURN(std::string name, StringField(o, "name", op));
    auto it = index.find(name);
    if (it == index.end() || c.tensors[it->second].input) {
      return Status::Error("{}.name: '{}' is not an output of the case", op, name);
    }
    if (std::find(c.digest.begin(), c.digest.end(), it->second) != c.digest.end()) {
      return Status::Error("{}.name: '{}' is digested, not written back", op, name);
    }
    for (const auto& seen : s.outputs) {
      if (seen.tensor == it->second) return Status::Error("{}.name: '{}' appears twice", op, name);
    }
    SampleJob::Output out{it->second, 0};
    const int64_t bytes = c.tensors[it->second].bytes();
    WS_ASSIGN_OR_RETURN(out.row_bytes,
                        IntField(o, "row_bytes", op, 1, std::max<int64_t>(bytes, 1)));
    if (bytes % out.row_bytes != 0) {
      return Status::Error("{}.row_bytes: {} does not divide the output's {} bytes", op,
                           out.row_bytes, bytes);
    }
    s.outputs.push_back(out);
  }
  return s;
}

Result<CaseJob> ParseCase(const json& j, const std::string& path) {
  CaseJob c;
  WS_ASSIGN_OR_RETURN(c.id, StringField(j, "id", path));
  WS_RETURN_IF_ERROR(Need(j, "tensors", path));
  if (!j["tensors"].is_array()) return Status::Error("{}.tensors: expected an array", path);
  std::map<std::string, int> index;
  bool any_input = false;
  for (size_t i = 0; i < j["tensors"].size(); ++i) {
    WS_ASSIGN_OR_RETURN(TensorJob t, ParseTensor(j["tensors"][i],
                                                 fmt::format("{}.tensors[{}]", path, i),
                                                 static_cast<int>(i)));
    if (!index.emplace(t.name, static_cast<int>(i)).second) {
      return Status::Error("{}.tensors[{}].name: '{}' appears twice", path, i, t.name);
    }
    any_input |= t.input;
    c.tensors.push_back(std::move(t));
  }
  WS_RETURN_IF_ERROR(Need(j, "launches", path));
  if (!j["launches"].is_array()) return Status::Error("{}.launches: expected an array", path);
  for (size_t i = 0; i < j["launches"].size(); ++i) {
    WS_ASSIGN_OR_RETURN(LaunchJob l, ParseLaunch(j["launches"][i],
                                                 fmt::format("{}.launches[{}]", path, i), index,
                                                 c.tensors));
    c.launches.push_back(std::move(l));
  }
  if (j.contains("library") && !j["library"].is_null()) {
    if (!c.launches.empty()) {
      return Status::Error("{}.library: a case has launches or a library call, not both", path);
    }
    WS_ASSIGN_OR_RETURN(c.library, ParseLibrary(j["library"], path + ".library", index));
    WS_RETURN_IF_ERROR(ValidateLibraryJob(*c.library, c.tensors).Context(path + ".library"));
  }
  if (j.contains("workspace") && !j["workspace"].is_null()) {
    std::string wp = path + ".workspace";
    WS_ASSIGN_OR_RETURN(c.workspace_bytes, IntField(j["workspace"], "bytes", wp, 0,
                                                    int64_t{1} << 40));
    WS_ASSIGN_OR_RETURN(c.workspace_zero, BoolField(j["workspace"], "zero", wp, false));
  }
  if (j.contains("input_seeds")) {
    const json& s = j["input_seeds"];
    if (!s.is_array()) return Status::Error("{}.input_seeds: expected an array", path);
    for (size_t i = 0; i < s.size(); ++i) {
      std::string sp = fmt::format("{}.input_seeds[{}]", path, i);
      if (!s[i].is_number_integer()) return Status::Error("{}: expected an integer", sp);
      if (s[i].is_number_unsigned()) {
        c.input_seeds.push_back(s[i].get<uint64_t>());
      } else {
        int64_t v = s[i].get<int64_t>();
        if (v < 0) return Status::Error("{}: {} is negative", sp, v);
        c.input_seeds.push_back(static_cast<uint64_t>(v));
      }
    }
  }
  if (c.input_seeds.empty()) {
    if (any_input) return Status::Error("{}.input_seeds: at least one seed is needed", path);
    c.input_seeds.push_back(0);  // one (empty) input set keeps the run loop uniform
  }
  if (j.contains("poison")) {
    WS_ASSIGN_OR_RETURN(int64_t p, Int(j["poison"], path + ".poison", 0, 255));
    c.poison = static_cast<uint8_t>(p);
  }
  if (j.contains("timing") && !j["timing"].is_null()) {
    const json& t = j["timing"];
    std::string tp = path + ".timing";
    TimingJob tj;
    WS_ASSIGN_OR_RETURN(int64_t warmup, IntField(t, "warmup", tp, 0, 100000));
    WS_ASSIGN_OR_RETURN(int64_t iters, IntField(t, "iterations", tp, 1, 1000000));
    WS_ASSIGN_OR_RETURN(tj.l2_flush_bytes, IntField(t, "l2_flush_bytes", tp, 0, int64_t{1} << 36));
    tj.warmup = static_cast<int>(warmup);
    if (t.contains("warmup_ms")) {
      WS_ASSIGN_OR_RETURN(int64_t warmup_ms, IntField(t, "warmup_ms", tp, 0, 60000));
      tj.warmup_ms = static_cast<int>(warmup_ms);
    }
    tj.iterations = static_cast<int>(iters);
    if (t.contains("audit_iteration")) {
      WS_ASSIGN_OR_RETURN(int64_t audit, IntField(t, "audit_iteration", tp, 0, iters - 1));
      tj.audit_iteration = static_cast<int>(audit);
    }
    WS_ASSIGN_OR_RETURN(tj.graph, BoolField(t, "graph", tp, false));
    if (t.contains("fresh_seed") && !t["fresh_seed"].is_null()) {
      WS_ASSIGN_OR_RETURN(tj.fresh_seed, Hex64Field(t, "fresh_seed", tp));
    }
    c.timing = tj;
  }
  if (j.contains("dump") && !j["dump"].is_null()) {
    WS_ASSIGN_OR_RETURN(c.dump, StringField(j, "dump", path));
  }
  WS_ASSIGN_OR_RETURN(c.dump_inputs, BoolField(j, "dump_inputs", path, false));
  if (j.contains("budget_s") && !j["budget_s"].is_null()) {
    const json& b = j["budget_s"];
    // A day is far beyond any case; the bound keeps the watchdog's deadline arithmetic sane.
    const double d = b.is_number() ? b.get<double>() : 0;
    if (!b.is_number() || !std::isfinite(d) || d <= 0 || d > kMaxCaseBudgetSeconds) {
      return Status::Error("{}.budget_s: expected seconds in (0, {}], got {}", path,
                           kMaxCaseBudgetSeconds, b.dump());
    }
    c.budget_s = d;
  }
  if (j.contains("digest") && !j["digest"].is_null()) {
    const json& d = j["digest"];
    if (!d.is_array()) return Status::Error("{}.digest: expected an array of output names", path);
    for (size_t i = 0; i < d.size(); ++i) {
      const std::string dp = fmt::format("{}.digest[{}]", path, i);
      if (!d[i].is_string()) return Status::Error("{}: expected an output name", dp);
      auto it = index.find(d[i].get<std::string>());
      if (it == index.end() || c.tensors[it->second].input) {
        return Status::Error("{}: '{}' is not an output of the case", dp, d[i].get<std::string>());
      }
      if (std::find(c.digest.begin(), c.digest.end(), it->second) != c.digest.end()) {
        return Status::Error("{}: '{}' appears twice", dp, d[i].get<std::string>());
      }
      c.digest.push_back(it->second);
    }
  }
  if (j.contains("sample") && !j["sample"].is_null()) {
    WS_ASSIGN_OR_RETURN(c.sample, ParseSample(j["sample"], path + ".sample", c, index));
  }
  return c;
}

// A 64-bit value as exactly 16 hex digits (JSON numbers lose bits above 2^53 in many readers).
Result<uint64_t> Hex64Field(const json& j, const char* key, const std::string& path) {
  WS_ASSIGN_OR_RETURN(std::string text, StringField(j, key, path));
  uint64_t v = 0;
  if (text.size() != 16) return Status::Error("{}.{}: expected 16 hex digits", path, key);
  for (char ch : text) {
    int digit = ch >= '0' && ch <= '9'   ? ch - '0'
                : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                         : -1;
    if (digit < 0) return Status::Error("{}.{}: expected 16 hex digits", path, key);
    v = (v << 4) | static_cast<uint64_t>(digit);
  }
  return v;
}

}  // namespace

int DtypeCode(std::string_view name) {
  static const std::map<std::string_view, int> kCodes = {
      {"bf16", kWsDtypeBF16},         {"f32", kWsDtypeF32},   {"fp32", kWsDtypeF32},
      {"f16", kWsDtypeF16},           {"fp16", kWsDtypeF16},  {"fp8_e4m3", kWsDtypeFP8E4M3},
      {"fp8_e5m2", kWsDtypeFP8E5M2},  {"e8m0", kWsDtypeE8M0}, {"u8", kWsDtypeU8},
      {"i32", kWsDtypeI32},           {"i64", kWsDtypeI64}};
  auto it = kCodes.find(name);
  return it == kCodes.end() ? -1 : it->second;
}

int64_t TensorJob::bytes() const { return numel * ws_dtype_size(dtype); }

Result<Job> ParseJob(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::Error("the job is not valid JSON");
  Job job;
  WS_ASSIGN_OR_RETURN(job.cubin, StringField(j, "cubin", "job"));
  WS_ASSIGN_OR_RETURN(job.result, StringField(j, "result", "job"));
  if (j.contains("digest_key") && !j["digest_key"].is_null()) {
    WS_ASSIGN_OR_RETURN(job.digest_key, Hex64Field(j, "digest_key", "job"));
  }
  // A lock file and the longest wait for it, the wait required beside the file.
  auto lock_field = [&](const char* name, std::string* path, double* wait_s) -> Status {
    if (!j.contains(name) || j[name].is_null()) return Status::Ok();
    WS_ASSIGN_OR_RETURN(*path, StringField(j, name, "job"));
    const std::string wait_name = std::string(name) + "_wait_s";
    const json& w = j.value(wait_name, json());
    const double d = w.is_number() ? w.get<double>() : -1;
    if (!w.is_number() || !std::isfinite(d) || d < 0 || d > kMaxCaseBudgetSeconds) {
      return Status::Error("job.{}: expected seconds in [0, {}] beside {}, got {}", wait_name,
                           kMaxCaseBudgetSeconds, name, w.dump());
    }
    *wait_s = d;
    return Status::Ok();
  };
  WS_RETURN_IF_ERROR(lock_field("gpu_lock", &job.gpu_lock, &job.gpu_lock_wait_s));
  WS_RETURN_IF_ERROR(lock_field("turn", &job.turn, &job.turn_wait_s));
  WS_RETURN_IF_ERROR(Need(j, "cases", "job"));
  if (!j["cases"].is_array()) return Status::Error("job.cases: expected an array");
  std::set<std::string> ids;
  for (size_t i = 0; i < j["cases"].size(); ++i) {
    std::string path = fmt::format("cases[{}]", i);
    WS_ASSIGN_OR_RETURN(CaseJob c, ParseCase(j["cases"][i], path));
    if (!ids.insert(c.id).second) return Status::Error("{}.id: '{}' appears twice", path, c.id);
    if (!c.digest.empty() && !job.digest_key) {
      return Status::Error("{}.digest: the job has no digest_key", path);
    }
    job.cases.push_back(std::move(c));
  }
  return job;
}

TimingStats ComputeStats(std::vector<double> t) {
  TimingStats s;
  if (t.empty()) return s;
  std::sort(t.begin(), t.end());
  size_t n = t.size();
  s.min_us = t.front();
  s.median_us = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
  size_t rank = static_cast<size_t>(std::ceil(0.9 * static_cast<double>(n)));
  s.p90_us = t[std::max<size_t>(rank, 1) - 1];
  double sum = 0;
  for (double v : t) sum += v;
  s.mean_us = sum / static_cast<double>(n);
  if (n > 1) {
    double sq = 0;
    for (double v : t) sq += (v - s.mean_us) * (v - s.mean_us);
    s.stdev_us = std::sqrt(sq / static_cast<double>(n - 1));
  }
  return s;
}

}  // namespace ws::runner

// Launch plans: parsing the JSON block at a candidate's head, validating it against a problem, and
// resolving it to concrete launch geometry for one shape.
#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "evaluator/evaluator.h"

namespace ws {
namespace {

using json = nlohmann::json;

constexpr std::string_view kPlanTag = "warpsmith:plan";
const std::set<std::string, std::less<>> kPlanKeys = {"knobs", "knob_scope", "launch", "workspace",
                                                      "problem", "tensor_maps"};
const std::set<std::string, std::less<>> kLaunchKeys = {"kernel", "grid", "block", "cluster",
                                                        "smem", "args", "pdl", "when"};
const std::set<std::string, std::less<>> kTensorMapKeys = {
    "tensor", "dims", "box", "element_strides", "swizzle", "oob_fill", "l2_promotion"};
constexpr size_t kMaxTensorMaps = 16;
const std::set<std::string, std::less<>> kDeviceSymbols = {"num_sms"};

// Sane caps on what a plan may hold: real plans are a few hundred bytes, expressions a few dozen
// characters. The caps keep hostile plans cheap to reject and their messages short.
constexpr size_t kMaxPlanBytes = 64 * 1024;
constexpr size_t kMaxExprChars = 1024;
constexpr size_t kMaxKernelName = 256;
constexpr size_t kMaxKnobValues = 64;

bool IsIdentifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// A JSON integer as int64; nlohmann also reads 2^63..2^64-1 as "integers", which would wrap.
Result<int64_t> Int64Field(const json& j, const std::string& field) {
  if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    return Status::Error("{}: {} does not fit in int64", field, j.get<uint64_t>());
  }
  return j.get<int64_t>();
}

Status CheckExprLength(const std::string& e, const std::string& field) {
  if (e.size() > kMaxExprChars) {
    return Status::Error("{}: the expression is {} characters long; the limit is {}", field,
                         e.size(), kMaxExprChars);
  }
  return Status::Ok();
}

// An expression field: a JSON string, or an integer written as a number.
Result<std::string> ExprField(const json& j, const std::string& field) {
  if (j.is_string()) {
    WS_RETURN_IF_ERROR(CheckExprLength(j.get<std::string>(), field));
    return j.get<std::string>();
  }
  if (j.is_number_integer()) {
    WS_ASSIGN_OR_RETURN(int64_t v, Int64Field(j, field));
    return std::to_string(v);
  }
  return Status::Error("{}: expected an expression (string or integer), got {}", field,
                       j.type_name());
}

Result<std::vector<std::string>> DimsField(const json& j, const std::string& field,
                                           bool allow_empty) {
  std::vector<std::string> out;
  if (j.is_string() || j.is_number_integer()) {
    WS_ASSIGN_OR_RETURN(auto e, ExprField(j, field));
    out.push_back(e);
    return out;
  }
  if (!j.is_array()) return Status::Error("{}: expected an array of 1 to 3 expressions", field);
  if (j.size() > 3 || (j.empty() && !allow_empty)) {
    return Status::Error("{}: expected 1 to 3 expressions, got {}", field, j.size());
  }
  for (size_t i = 0; i < j.size(); ++i) {
    WS_ASSIGN_OR_RETURN(auto e, ExprField(j[i], fmt::format("{}[{}]", field, i)));
    out.push_back(e);
  }
  return out;
}

// A list of 1 to kMaxTensorMapRank expressions: a map's dims, box or element_strides.
Result<std::vector<std::string>> MapDimsField(const json& j, const std::string& field) {
  if (!j.is_array() || j.empty() || j.size() > runner::kMaxTensorMapRank) {
    return Status::Error("{}: expected an array of 1 to {} expressions, innermost first", field,
                         runner::kMaxTensorMapRank);
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < j.size(); ++i) {
    WS_ASSIGN_OR_RETURN(auto e, ExprField(j[i], fmt::format("{}[{}]", field, i)));
    out.push_back(std::move(e));
  }
  return out;
}

Result<int> ChoiceField(const json& j, const std::string& field, std::initializer_list<int> allowed) {
  std::string list;
  for (int a : allowed) list += (list.empty() ? "" : ", ") + std::to_string(a);
  if (j.is_number_integer()) {
    WS_ASSIGN_OR_RETURN(int64_t v, Int64Field(j, field));
    for (int a : allowed) {
      if (v == a) return a;
    }
    return Status::Error("{}: {} is not one of {}", field, v, list);
  }
  return Status::Error("{}: expected one of {}", field, list);
}

Result<PlanTensorMap> ParseTensorMap(const json& j, const std::string& base) {
  if (!j.is_object()) return Status::Error("{}: expected an object", base);
  for (auto& [key, _] : j.items()) {
    if (!kTensorMapKeys.count(key)) {
      return Status::Error(
          "{}.{}: unknown field (allowed: tensor, dims, box, element_strides, swizzle, oob_fill, "
          "l2_promotion)",
          base, key);
    }
  }
  PlanTensorMap m;
  if (!j.contains("tensor") || !j["tensor"].is_string()) {
    return Status::Error("{}.tensor: expected the name of a tensor of the problem", base);
  }
  m.tensor = j["tensor"].get<std::string>();
  for (const char* key : {"dims", "box"}) {
    if (!j.contains(key)) return Status::Error("{}.{}: missing", base, key);
  }
  WS_ASSIGN_OR_RETURN(m.dims, MapDimsField(j["dims"], base + ".dims"));
  WS_ASSIGN_OR_RETURN(m.box, MapDimsField(j["box"], base + ".box"));
  if (m.box.size() != m.dims.size()) {
    return Status::Error("{}.box: {} extents for {} dims", base, m.box.size(), m.dims.size());
  }
  if (j.contains("element_strides")) {
    WS_ASSIGN_OR_RETURN(m.element_strides,
                        MapDimsField(j["element_strides"], base + ".element_strides"));
    if (m.element_strides.size() != m.dims.size()) {
      return Status::Error("{}.element_strides: {} strides for {} dims", base,
                           m.element_strides.size(), m.dims.size());
    }
  }
  if (j.contains("swizzle")) {
    WS_ASSIGN_OR_RETURN(m.swizzle, ChoiceField(j["swizzle"], base + ".swizzle", {0, 32, 64, 128}));
  }
  if (j.contains("l2_promotion")) {
    WS_ASSIGN_OR_RETURN(m.l2_promotion,
                        ChoiceField(j["l2_promotion"], base + ".l2_promotion", {0, 64, 128, 256}));
  }
  if (j.contains("oob_fill")) {
    const json& f = j["oob_fill"];
    if (!f.is_string() || (f.get<std::string>() != "zero" && f.get<std::string>() != "nan")) {
      return Status::Error("{}.oob_fill: expected \"zero\" or \"nan\"", base);
    }
    m.oob_nan = f.get<std::string>() == "nan";
  }
  return m;
}

Result<Plan> ParsePlanJson(const json& root) {
  Plan plan;
  if (!root.is_object()) return Status::Error("the plan must be a JSON object");
  for (auto& [key, _] : root.items()) {
    if (!kPlanKeys.count(key)) {
      return Status::Error(
          "unknown field '{}' (allowed: knobs, knob_scope, launch, workspace, tensor_maps)", key);
    }
  }
  if (root.contains("knobs")) {
    const json& knobs = root["knobs"];
    if (!knobs.is_object()) return Status::Error("knobs: expected an object name -> [values]");
    for (auto& [name, values] : knobs.items()) {
      std::string field = fmt::format("knobs.{}", name);
      if (!IsIdentifier(name)) return Status::Error("{}: not a valid identifier", field);
      if (name.rfind("WS_", 0) == 0) return Status::Error("{}: the WS_ prefix is reserved", field);
      if (!values.is_array() || values.empty()) {
        return Status::Error("{}: expected a non-empty array of integers", field);
      }
      if (values.size() > kMaxKnobValues) {
        return Status::Error("{}: at most {} values, got {}", field, kMaxKnobValues, values.size());
      }
      std::vector<int64_t> vals;
      for (size_t i = 0; i < values.size(); ++i) {
        if (!values[i].is_number_integer()) {
          return Status::Error("{}[{}]: expected an integer", field, i);
        }
        WS_ASSIGN_OR_RETURN(int64_t v, Int64Field(values[i], fmt::format("{}[{}]", field, i)));
        vals.push_back(v);
      }
      plan.knobs[name] = std::move(vals);
    }
  }
  if (root.contains("knob_scope")) {
    const json& scope = root["knob_scope"];
    if (!scope.is_object()) return Status::Error("knob_scope: expected an object knob -> expression");
    for (auto& [name, e] : scope.items()) {
      std::string field = fmt::format("knob_scope.{}", name);
      if (!plan.knobs.count(name)) return Status::Error("{}: not a knob of the plan", field);
      if (!e.is_string()) return Status::Error("{}: expected an expression string", field);
      if (e.get<std::string>().size() > kMaxExprChars) {
        return Status::Error("{}: longer than {} characters", field, kMaxExprChars);
      }
      plan.knob_scope[name] = e.get<std::string>();
    }
  }
  if (root.contains("tensor_maps")) {
    const json& maps = root["tensor_maps"];
    if (!maps.is_object()) return Status::Error("tensor_maps: expected an object name -> map");
    if (maps.size() > kMaxTensorMaps) {
      return Status::Error("tensor_maps: at most {} maps, got {}", kMaxTensorMaps, maps.size());
    }
    for (auto& [name, m] : maps.items()) {
      std::string base = fmt::format("tensor_maps.{}", name);
      if (!IsIdentifier(name)) return Status::Error("{}: not a valid identifier", base);
      if (plan.knobs.count(name) || kDeviceSymbols.count(name) || name == "workspace") {
        return Status::Error("{}: the name is already a knob or a reserved name", base);
      }
      WS_ASSIGN_OR_RETURN(plan.tensor_maps[name], ParseTensorMap(m, base));
    }
  }
  if (!root.contains("launch")) return Status::Error("launch: missing (at least one kernel launch)");
  const json& launches = root["launch"];
  if (!launches.is_array() || launches.empty()) {
    return Status::Error("launch: expected a non-empty array of launches");
  }
  if (launches.size() > 16) return Status::Error("launch: at most 16 launches, got {}", launches.size());
  for (size_t li = 0; li < launches.size(); ++li) {
    const json& l = launches[li];
    std::string base = fmt::format("launch[{}]", li);
    if (!l.is_object()) return Status::Error("{}: expected an object", base);
    for (auto& [key, _] : l.items()) {
      if (!kLaunchKeys.count(key)) return Status::Error("{}.{}: unknown field", base, key);
    }
    PlanLaunch pl;
    if (!l.contains("kernel") || !l["kernel"].is_string() ||
        !IsIdentifier(l["kernel"].get<std::string>())) {
      return Status::Error("{}.kernel: expected the name of an extern \"C\" __global__ function", base);
    }
    pl.kernel = l["kernel"].get<std::string>();
    if (pl.kernel.size() > kMaxKernelName) {
      return Status::Error("{}.kernel: the name is longer than {} characters", base,
                           kMaxKernelName);
    }
    for (const char* key : {"grid", "block"}) {
      if (!l.contains(key)) return Status::Error("{}.{}: missing", base, key);
    }
    WS_ASSIGN_OR_RETURN(pl.grid, DimsField(l["grid"], base + ".grid", false));
    WS_ASSIGN_OR_RETURN(pl.block, DimsField(l["block"], base + ".block", false));
    if (l.contains("cluster")) {
      WS_ASSIGN_OR_RETURN(pl.cluster, DimsField(l["cluster"], base + ".cluster", true));
    }
    if (l.contains("smem")) {
      WS_ASSIGN_OR_RETURN(pl.smem, ExprField(l["smem"], base + ".smem"));
    }
    if (l.contains("pdl")) {
      if (l["pdl"].is_boolean()) {
        pl.pdl = l["pdl"].get<bool>() ? "1" : "";
      } else if (l["pdl"].is_string()) {
        WS_ASSIGN_OR_RETURN(pl.pdl, ExprField(l["pdl"], base + ".pdl"));
      } else {
        return Status::Error("{}.pdl: expected true, false or an expression", base);
      }
    }
    if (l.contains("when")) {
      WS_ASSIGN_OR_RETURN(pl.when, ExprField(l["when"], base + ".when"));
    }
    if (!l.contains("args") || !l["args"].is_array()) {
      return Status::Error("{}.args: expected an array", base);
    }
    const json& args = l["args"];
    if (args.size() > 64) return Status::Error("{}.args: at most 64 arguments", base);
    for (size_t ai = 0; ai < args.size(); ++ai) {
      std::string field = fmt::format("{}.args[{}]", base, ai);
      const json& a = args[ai];
      PlanArg arg;
      if (a.is_string()) {
        arg.text = a.get<std::string>();
        WS_RETURN_IF_ERROR(CheckExprLength(arg.text, field));
        arg.kind = arg.text == "workspace"           ? PlanArg::Kind::kWorkspace
                   : plan.tensor_maps.count(arg.text) ? PlanArg::Kind::kTensorMap
                                                      : PlanArg::Kind::kI32;
        // Tensor names are told apart from expressions by ValidatePlan, which knows the problem.
      } else if (a.is_number_integer()) {
        arg.kind = PlanArg::Kind::kI32;
        WS_ASSIGN_OR_RETURN(int64_t v, Int64Field(a, field));
        arg.text = std::to_string(v);
      } else if (a.is_object() && a.size() == 1 && a.contains("i64")) {
        arg.kind = PlanArg::Kind::kI64;
        WS_ASSIGN_OR_RETURN(arg.text, ExprField(a["i64"], field + ".i64"));
      } else if (a.is_object() && a.size() == 1 && a.contains("i32")) {
        arg.kind = PlanArg::Kind::kI32;
        WS_ASSIGN_OR_RETURN(arg.text, ExprField(a["i32"], field + ".i32"));
      } else {
        return Status::Error(
            "{}: expected a tensor name, a tensor map name, \"workspace\", an expression, or "
            "{{\"i64\": expr}}",
            field);
      }
      pl.args.push_back(std::move(arg));
    }
    plan.launches.push_back(std::move(pl));
  }
  if (root.contains("workspace")) {
    const json& w = root["workspace"];
    if (!w.is_object()) return Status::Error("workspace: expected {{\"bytes\": expr, \"zero\": bool}}");
    for (auto& [key, _] : w.items()) {
      if (key != "bytes" && key != "zero") return Status::Error("workspace.{}: unknown field", key);
    }
    if (w.contains("bytes")) {
      WS_ASSIGN_OR_RETURN(plan.workspace_bytes, ExprField(w["bytes"], "workspace.bytes"));
    }
    if (w.contains("zero")) {
      if (!w["zero"].is_boolean()) return Status::Error("workspace.zero: expected true or false");
      plan.workspace_zero = w["zero"].get<bool>();
    }
  }
  return plan;
}

// Names an expression may use for `spec`, given the plan's knobs.
std::set<std::string, std::less<>> ExprNames(const Plan& plan, const ProblemSpec& spec) {
  std::set<std::string, std::less<>> names(kDeviceSymbols.begin(), kDeviceSymbols.end());
  for (const auto& s : spec.symbols) names.insert(s);
  for (const auto& p : spec.params) names.insert(p.name);
  for (const auto& [k, _] : plan.knobs) names.insert(k);
  return names;
}

Status CheckExpr(const std::string& expr, const std::string& field,
                 const std::set<std::string, std::less<>>& names) {
  auto ids = ExprIdentifiers(expr);
  if (!ids.ok()) return ids.status().Context(field);
  for (const auto& id : *ids) {
    if (!names.count(id)) {
      std::string known;
      for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
      return Status::Error("{}: unknown name '{}' in \"{}\" (known: {})", field, id, expr, known);
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Plan> ParsePlan(const std::string& source) {
  size_t tag = source.find(kPlanTag);
  if (tag == std::string::npos) {
    return Status::Error(
        "no launch plan: the source must begin with a /* warpsmith:plan {{...}} */ comment");
  }
  size_t open = source.rfind("/*", tag);
  if (open == std::string::npos || source.find_first_not_of(" \t\r\n", open + 2) != tag) {
    return Status::Error("the warpsmith:plan tag must open a /* ... */ comment");
  }
  size_t close = source.find("*/", tag);
  if (close == std::string::npos) return Status::Error("the plan comment is not closed with */");
  std::string body = source.substr(tag + kPlanTag.size(), close - tag - kPlanTag.size());
  if (body.size() > kMaxPlanBytes) {
    return Status::Error("the plan is {} bytes; the limit is {}", body.size(), kMaxPlanBytes);
  }
  // JSON allows duplicate keys and nlohmann keeps the last; a reader of the plan would see the
  // first. A plan must mean one thing, so duplicates are an error.
  std::vector<std::set<std::string>> keys_at_depth;
  std::string duplicate;
  json::parser_callback_t on_event = [&](int depth, json::parse_event_t event, json& parsed) {
    const auto d = static_cast<size_t>(depth);
    if (event == json::parse_event_t::object_start) {
      if (keys_at_depth.size() <= d + 1) keys_at_depth.resize(d + 2);
      keys_at_depth[d + 1].clear();
    } else if (event == json::parse_event_t::key && duplicate.empty()) {
      if (keys_at_depth.size() <= d) keys_at_depth.resize(d + 1);
      if (!keys_at_depth[d].insert(parsed.get<std::string>()).second) {
        duplicate = parsed.get<std::string>();
      }
    }
    return true;
  };
  json root;
  try {
    root = json::parse(body, on_event, /*allow_exceptions=*/true, /*ignore_comments=*/true);
  } catch (const json::exception& e) {
    return Status::Error("the plan is not valid JSON: {}", e.what());
  }
  if (!duplicate.empty()) {
    return Status::Error("the plan names the key '{}' twice in one object", duplicate);
  }
  return ParsePlanJson(root);
}

Status ValidatePlan(const Plan& plan, const ProblemSpec& spec) {
  auto names = ExprNames(plan, spec);
  std::set<std::string, std::less<>> param_names;  // a knob's scope depends on parameters only
  for (const auto& p : spec.params) param_names.insert(p.name);
  for (const auto& [knob, e] : plan.knob_scope) {
    if (param_names.empty()) {
      return Status::Error("knob_scope.{}: the problem has no parameters to scope a knob by", knob);
    }
    WS_RETURN_IF_ERROR(CheckExpr(e, "knob_scope." + knob, param_names));
  }
  for (const auto& [knob, _] : plan.knobs) {
    if (spec.FindTensor(knob) || spec.FindParam(knob) ||
        std::find(spec.symbols.begin(), spec.symbols.end(), knob) != spec.symbols.end() ||
        kDeviceSymbols.count(knob)) {
      return Status::Error("knobs.{}: clashes with a name of the problem", knob);
    }
  }
  for (const auto& [name, m] : plan.tensor_maps) {
    const std::string base = fmt::format("tensor_maps.{}", name);
    if (spec.FindTensor(name) || spec.FindParam(name) ||
        std::find(spec.symbols.begin(), spec.symbols.end(), name) != spec.symbols.end()) {
      return Status::Error("{}: clashes with a tensor, symbol or parameter of the problem", base);
    }
    if (!spec.FindTensor(m.tensor)) {
      return Status::Error("{}.tensor: the problem has no tensor '{}'", base, m.tensor);
    }
    for (const auto* list : {&m.dims, &m.box, &m.element_strides}) {
      const char* what = list == &m.dims ? "dims" : list == &m.box ? "box" : "element_strides";
      for (size_t d = 0; d < list->size(); ++d) {
        WS_RETURN_IF_ERROR(CheckExpr((*list)[d], fmt::format("{}.{}[{}]", base, what, d), names));
      }
    }
  }
  for (size_t li = 0; li < plan.launches.size(); ++li) {
    const PlanLaunch& l = plan.launches[li];
    std::string base = fmt::format("launch[{}]", li);
    auto check_dims = [&](const std::vector<std::string>& dims, const char* what) -> Status {
      for (size_t d = 0; d < dims.size(); ++d) {
        WS_RETURN_IF_ERROR(CheckExpr(dims[d], fmt::format("{}.{}[{}]", base, what, d), names));
      }
      return Status::Ok();
    };
    WS_RETURN_IF_ERROR(check_dims(l.grid, "grid"));
    WS_RETURN_IF_ERROR(check_dims(l.block, "block"));
    WS_RETURN_IF_ERROR(check_dims(l.cluster, "cluster"));
    WS_RETURN_IF_ERROR(CheckExpr(l.smem, base + ".smem", names));
    if (!l.when.empty()) WS_RETURN_IF_ERROR(CheckExpr(l.when, base + ".when", names));
    if (!l.pdl.empty()) WS_RETURN_IF_ERROR(CheckExpr(l.pdl, base + ".pdl", names));
    for (size_t ai = 0; ai < l.args.size(); ++ai) {
      const PlanArg& a = l.args[ai];
      std::string field = fmt::format("{}.args[{}]", base, ai);
      if (a.kind == PlanArg::Kind::kWorkspace || a.kind == PlanArg::Kind::kTensorMap ||
          spec.FindTensor(a.text)) {
        continue;
      }
      WS_RETURN_IF_ERROR(CheckExpr(a.text, field, names));
    }
  }
  return CheckExpr(plan.workspace_bytes, "workspace.bytes", names);
}

Result<std::map<std::string, std::vector<int64_t>>> ScopedKnobs(
    const Plan& plan, const ProblemSpec& spec, const std::map<std::string, std::string>& params) {
  WS_ASSIGN_OR_RETURN(auto resolved, ResolveParams(spec, params));  // vets the values
  SymbolTable env = BindSymbols(spec, Shape{}, resolved);
  auto out = plan.knobs;
  for (const auto& [knob, e] : plan.knob_scope) {
    auto on = EvalExpr(e, env);
    if (!on.ok()) return on.status().Context("knob_scope." + knob);
    auto it = out.find(knob);
    if (*on == 0 && it != out.end()) it->second.resize(1);  // the default alone
  }
  return out;
}

Result<ResolvedPlan> ResolvePlan(const Plan& plan, const ProblemSpec& spec, const SymbolTable& symbols,
                                 const std::map<std::string, int64_t>& knob_values,
                                 const DeviceLimits& limits) {
  SymbolTable env = symbols;
  env["num_sms"] = limits.num_sms;
  for (const auto& [name, allowed] : plan.knobs) {
    auto it = knob_values.find(name);
    int64_t v = it == knob_values.end() ? allowed.front() : it->second;
    if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) {
      return Status::Error("knobs.{}: {} is not one of the allowed values", name, v);
    }
    env[name] = v;
  }
  for (const auto& [name, _] : knob_values) {
    if (!plan.knobs.count(name)) return Status::Error("knob '{}' is not declared by the plan", name);
  }
  auto eval = [&](const std::string& e, const std::string& field) -> Result<int64_t> {
    auto v = EvalExpr(e, env);
    if (!v.ok()) return v.status().Context(field);
    return v;
  };

  ResolvedPlan out;
  // Every declared map, used or not, so a map that cannot be encoded is a plan error at once.
  for (const auto& [name, m] : plan.tensor_maps) {
    const std::string base = fmt::format("tensor_maps.{}", name);
    const TensorSpec* t = spec.FindTensor(m.tensor);
    if (t == nullptr) return Status::Error("{}.tensor: the problem has no tensor '{}'", base, m.tensor);
    ResolvedTensorMap rm;
    rm.tensor = m.tensor;
    rm.spec.rank = static_cast<int>(m.dims.size());
    for (size_t d = 0; d < m.dims.size(); ++d) {
      WS_ASSIGN_OR_RETURN(rm.spec.dims[d], eval(m.dims[d], fmt::format("{}.dims[{}]", base, d)));
      WS_ASSIGN_OR_RETURN(rm.spec.box[d], eval(m.box[d], fmt::format("{}.box[{}]", base, d)));
      if (!m.element_strides.empty()) {
        WS_ASSIGN_OR_RETURN(rm.spec.element_strides[d],
                            eval(m.element_strides[d],
                                 fmt::format("{}.element_strides[{}]", base, d)));
      }
    }
    rm.spec.swizzle = m.swizzle;
    rm.spec.l2_promotion = m.l2_promotion;
    rm.spec.oob_nan = m.oob_nan;
    auto numel = TensorNumel(*t, symbols);
    if (!numel.ok()) return numel.status().Context(base);
    auto enc = runner::ComputeTensorMapEncoding(static_cast<int>(t->dtype), *numel, rm.spec);
    if (!enc.ok()) {
      return Status::Error("{}.{} (tensor '{}' of {} elements)", base, enc.status().message(),
                           m.tensor, *numel);
    }
    out.tensor_maps[name] = std::move(rm);
  }
  for (size_t li = 0; li < plan.launches.size(); ++li) {
    const PlanLaunch& l = plan.launches[li];
    std::string base = fmt::format("launch[{}]", li);
    if (!l.when.empty()) {
      // A launch for other shapes (a small-M path, say) is left out here, geometry and all.
      WS_ASSIGN_OR_RETURN(int64_t on, eval(l.when, base + ".when"));
      if (on == 0) continue;
    }
    ResolvedLaunch rl;
    rl.kernel = l.kernel;
    auto dims = [&](const std::vector<std::string>& exprs, int64_t* dst, const char* what,
                    const int64_t* maxes, int64_t product_max) -> Status {
      int64_t product = 1;
      for (size_t d = 0; d < exprs.size(); ++d) {
        std::string field = fmt::format("{}.{}[{}]", base, what, d);
        WS_ASSIGN_OR_RETURN(int64_t v, eval(exprs[d], field));
        if (v < 1 || v > maxes[d]) {
          return Status::Error("{} = {} (\"{}\") is outside [1, {}]", field, v, exprs[d], maxes[d]);
        }
        dst[d] = v;
        product *= v;  // each factor is bounded, so this cannot overflow before the check below
        if (product > product_max) {
          return Status::Error("{}: total {} exceeds the limit {}", base + "." + what, product,
                               product_max);
        }
      }
      return Status::Ok();
    };
    const int64_t block_max[3] = {1024, 1024, 64};
    const int64_t cluster_max[3] = {limits.max_cluster, limits.max_cluster, limits.max_cluster};
    WS_RETURN_IF_ERROR(dims(l.grid, rl.grid, "grid", limits.max_grid, int64_t{1} << 40));
    WS_RETURN_IF_ERROR(dims(l.block, rl.block, "block", block_max, limits.max_threads_per_block));
    WS_RETURN_IF_ERROR(dims(l.cluster, rl.cluster, "cluster", cluster_max, limits.max_cluster));
    for (int d = 0; d < 3; ++d) {
      if (rl.grid[d] % rl.cluster[d] != 0) {
        return Status::Error("{}: grid[{}] = {} is not a multiple of cluster[{}] = {}", base, d,
                             rl.grid[d], d, rl.cluster[d]);
      }
    }
    WS_ASSIGN_OR_RETURN(rl.smem, eval(l.smem, base + ".smem"));
    if (rl.smem < 0 || rl.smem > limits.max_smem_per_block) {
      return Status::Error("{}.smem = {} is outside [0, {}]", base, rl.smem,
                           limits.max_smem_per_block);
    }
    for (size_t ai = 0; ai < l.args.size(); ++ai) {
      const PlanArg& a = l.args[ai];
      std::string field = fmt::format("{}.args[{}]", base, ai);
      ResolvedLaunch::Arg ra;
      ra.kind = a.kind;
      if (a.kind == PlanArg::Kind::kWorkspace) {
        // pointer filled by the runner
      } else if (a.kind == PlanArg::Kind::kTensorMap) {
        ra.tensor = a.text;  // resolved above
      } else if (a.kind != PlanArg::Kind::kI64 && spec.FindTensor(a.text)) {
        ra.kind = PlanArg::Kind::kTensor;
        ra.tensor = a.text;
      } else {
        WS_ASSIGN_OR_RETURN(ra.value, eval(a.text, field));
        if (a.kind == PlanArg::Kind::kI32 && (ra.value < INT32_MIN || ra.value > INT32_MAX)) {
          return Status::Error("{} = {} does not fit in int32; pass it as {{\"i64\": ...}}", field,
                               ra.value);
        }
      }
      rl.args.push_back(std::move(ra));
    }
    if (!l.pdl.empty()) {
      WS_ASSIGN_OR_RETURN(int64_t pdl, eval(l.pdl, base + ".pdl"));
      rl.pdl = pdl != 0;
    }
    out.launches.push_back(std::move(rl));
  }
  // A library baseline's plan has no launches at all (the runner makes the call); a kernel's
  // plan always has one, so an empty result means every "when" was 0.
  if (out.launches.empty() && !plan.launches.empty()) {
    return Status::Error("launch: no launch's \"when\" holds at this shape, so nothing would run");
  }
  WS_ASSIGN_OR_RETURN(out.workspace_bytes, eval(plan.workspace_bytes, "workspace.bytes"));
  if (out.workspace_bytes < 0 || out.workspace_bytes > limits.max_workspace) {
    return Status::Error("workspace.bytes = {} is outside [0, {}]", out.workspace_bytes,
                         limits.max_workspace);
  }
  out.workspace_zero = plan.workspace_zero;
  return out;
}

}  // namespace ws

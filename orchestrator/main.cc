// warpsmith: the command line. Exit status: 0 ok, 1 the candidate was rejected, 2 usage or
// internal error.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/files.h"
#include "evaluator/cost.h"
#include "evaluator/evaluator.h"
#include "evaluator/lint.h"
#include "orchestrator/bundle.h"
#include "orchestrator/campaign.h"
#include "orchestrator/job.h"
#include "orchestrator/doctor.h"
#include "orchestrator/export.h"
#include "orchestrator/serve.h"
#include "orchestrator/store.h"
#include "orchestrator/views.h"
#include "problems/problems.h"
#include "sandbox/sandbox.h"

namespace ws {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr int kExitOk = 0, kExitRejected = 1, kExitError = 2;

struct Globals {
  std::string workspace = ".warpsmith";
  std::string problems_dir;
};

std::string DefaultProblemsDir() {
  if (const char* env = std::getenv("WARPSMITH_PROBLEMS")) return env;
  return SourceTreePath("problems");
}

int Fail(const Status& s) {
  std::fprintf(stderr, "warpsmith: %s\n", s.message().c_str());
  return kExitError;
}

Result<std::vector<ProblemSpec>> LoadAll(const Globals& g) {
  return LoadProblemSet(g.problems_dir.empty() ? DefaultProblemsDir() : g.problems_dir);
}

Result<ProblemSpec> FindProblem(const Globals& g, const std::string& name) {
  // The named problem alone: another problem's broken spec must not stop work on this one.
  const bool plain = !name.empty() && name.find_first_of("/\\") == std::string::npos &&
                     name != "." && name != "..";
  const fs::path spec =
      fs::path(g.problems_dir.empty() ? DefaultProblemsDir() : g.problems_dir) / name / "spec.json";
  std::error_code ec;
  if (plain && fs::is_regular_file(spec, ec)) return LoadProblem(spec.string());
  WS_ASSIGN_OR_RETURN(auto all, LoadAll(g));
  std::string names;
  for (auto& p : all) {
    if (p.name == name) return std::move(p);
    names += (names.empty() ? "" : ", ") + p.name;
  }
  return Status::Error("no problem named '{}' (known: {})", name, names);
}

Result<std::unique_ptr<Store>> OpenStore(const Globals& g) {
  std::error_code ec;
  fs::create_directories(g.workspace, ec);
  if (ec) return Status::Error("cannot create the workspace {}: {}", g.workspace, ec.message());
  return Store::Open(g.workspace + "/warpsmith.db");
}

Result<std::map<std::string, std::string>> ParseSets(const std::vector<std::string>& sets) {
  std::map<std::string, std::string> out;
  for (const auto& s : sets) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::Error("--set expects NAME=VALUE, got '{}'", s);
    }
    out[s.substr(0, eq)] = s.substr(eq + 1);
  }
  return out;
}

json ShapeJson(const Shape& s) {
  json j = json::object();
  for (const auto& [k, v] : s.symbols) j[k] = v;
  return j;
}

std::string ParamsJson(const std::map<std::string, std::string>& params) {
  return json(params).dump();
}

// ---- problems -----------------------------------------------------------------------------------

json SpecJson(const ProblemSpec& p, bool full) {
  json j = {{"name", p.name}, {"description", p.description}};
  j["symbols"] = p.symbols;
  json params = json::object();
  for (const auto& prm : p.params) params[prm.name] = {{"values", prm.values}, {"default", prm.default_value}};
  j["params"] = params;
  if (!full) return j;
  json tensors = json::array();
  for (const auto& t : p.tensors) {
    tensors.push_back({{"name", t.name},
                       {"dtype", std::string(DTypeName(t.dtype))},
                       {"shape", t.shape},
                       {"role", t.role == TensorRole::kInput ? "input" : "output"}});
  }
  j["tensors"] = tensors;
  j["constraints"] = p.constraints;
  json test = json::array(), bench = json::array();
  for (const auto& s : p.test_shapes) test.push_back(ShapeJson(s));
  for (const auto& s : p.bench_shapes) {
    json b = ShapeJson(s);
    b["source"] = s.source;
    bench.push_back(b);
  }
  // Hidden shapes are never printed: only their number.
  j["shapes"] = {{"test", test}, {"bench", bench}, {"hidden_count", p.hidden_shapes.size()}};
  j["cost"] = {{"bytes", p.cost_bytes}, {"flops", p.cost_flops}};
  j["gpu_reference"] = p.gpu_reference;
  j["baseline"] = p.baseline;
  j["starting_kernel"] = p.starting_kernel;
  return j;
}

int CmdProblems(const Globals& g, bool as_json) {
  auto all = LoadAll(g);
  if (!all.ok()) return Fail(all.status());
  if (as_json) {
    json arr = json::array();
    for (const auto& p : *all) arr.push_back(SpecJson(p, false));
    std::cout << arr.dump(2) << "\n";
    return kExitOk;
  }
  for (const auto& p : *all) {
    std::cout << fmt::format("{:<28} {}\n", p.name, p.description.substr(0, 70));
  }
  return kExitOk;
}

std::string OneInitText(const InitSpec& in) {
  if (in.dist == "uniform") return fmt::format("uniform [{}, {})", in.lo, in.hi);
  if (in.dist == "mx_blocks") return "mx_blocks";
  if (in.dist == "normal_outliers") {
    return fmt::format("normal_outliers (mean {}, stddev {}; {} of elements x {})", in.mean,
                       in.stddev, in.outlier_fraction, in.outlier_scale);
  }
  if (in.dist == "topk_ids") {
    return fmt::format("topk_ids (experts {}, k {}, skew {})", in.experts, in.k, in.skew);
  }
  if (in.dist == "group_offsets") {
    return fmt::format("group_offsets (total {}, align {}, skew {}, empty {})", in.total, in.align,
                       in.skew, in.empty);
  }
  return fmt::format("normal (mean {}, stddev {})", in.mean, in.stddev);
}

// The init, then each parameter value's own ("; routing=balanced: group_offsets (...)").
std::string InitText(const InitSpec& in, const ProblemSpec& spec) {
  std::string text = OneInitText(in);
  for (const InitSpec::ByParam& b : in.by_param) {
    const ParamSpec* p = spec.FindParam(b.param);
    const std::string value = p != nullptr ? p->values.at(b.value) : "?";
    text += fmt::format("; {}={}: {}", b.param, value, OneInitText(*b.init));
  }
  return text;
}

std::string ToleranceText(const Tolerance& t) {
  switch (t.kind) {
    case ToleranceKind::kExact: return "exact";
    case ToleranceKind::kUlp: return fmt::format("within {} ulp", t.max_ulp);
    case ToleranceKind::kClose: return fmt::format("close (rtol {}, atol {})", t.rtol, t.atol);
    case ToleranceKind::kGemm:
      return fmt::format("gemm (rel_frobenius {}, elem_rtol {}, elem_rms {}, elem_fraction {}, "
                         "worst_rms {})",
                         t.rel_frobenius, t.elem_rtol, t.elem_rms, t.elem_fraction, t.worst_rms);
    case ToleranceKind::kMxData:
      return fmt::format("mx_data with scales {} (max_ulp {}, scale_mismatch_fraction {})",
                         t.partner, t.max_ulp, t.scale_mismatch_fraction);
    case ToleranceKind::kMxScales: return fmt::format("mx_scales of {}", t.partner);
    case ToleranceKind::kCustom: return fmt::format("custom checker {}", t.checker);
  }
  return "?";
}

// The store's latest `device probe` figures, if the workspace has any; else why not.
std::optional<DeviceCeilings> StoredCeilings(const Globals& g, std::string* why) {
  const std::string db = g.workspace + "/warpsmith.db";
  if (!fs::exists(db)) {
    *why = fmt::format("no store at {}", db);
    return std::nullopt;
  }
  auto store = Store::Open(db);
  if (!store.ok()) {
    *why = store.status().message();
    return std::nullopt;
  }
  auto latest = (*store)->LatestCeilings();
  if (!latest.ok() || !latest->has_value()) {
    *why = latest.ok() ? fmt::format("no device probe stored in {}", db)
                       : latest.status().message();
    return std::nullopt;
  }
  const CeilingsRecord& r = **latest;
  return DeviceCeilings{r.gpu, r.copy_bytes_per_s, r.bf16_flops_per_s, r.fp8_flops_per_s,
                        r.measured_at};
}

std::string Si(double v, const char* unit) {
  const char* prefixes[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  while (std::fabs(v) >= 1000 && i < 5) {
    v /= 1000;
    ++i;
  }
  return fmt::format("{:.3g} {}{}", v, prefixes[i], unit);
}

int CmdProblemShow(const Globals& g, const std::string& name, bool as_json) {
  auto p = FindProblem(g, name);
  if (!p.ok()) return Fail(p.status());
  json j = SpecJson(*p, true);
  for (size_t i = 0; i < p->tensors.size(); ++i) {
    const TensorSpec& t = p->tensors[i];
    if (t.role == TensorRole::kInput) {
      j["tensors"][i]["init"] = InitText(t.init, *p);
    } else if (auto it = p->tolerance.find(t.name); it != p->tolerance.end()) {
      j["tensors"][i]["tolerance"] = ToleranceText(it->second);
    }
  }
  // Per bench shape: bytes, FLOPs and, with a stored device probe, the speed-of-light time.
  std::string why_none;
  const std::optional<DeviceCeilings> ceil = StoredCeilings(g, &why_none);
  const auto params = *ResolveParams(*p, {});
  json bench_cost = json::array();
  std::vector<std::string> rows;
  for (const auto& s : p->bench_shapes) {
    const SymbolTable sym = BindSymbols(*p, s, params);
    auto bytes = EvalExpr(p->cost_bytes, sym);
    if (!bytes.ok()) return Fail(bytes.status());
    std::map<std::string, double> flops;
    std::string flops_text;
    for (const auto& [cls, e] : p->cost_flops) {
      auto f = EvalExpr(e, sym);
      if (!f.ok()) return Fail(f.status());
      flops[cls] = static_cast<double>(*f);
      flops_text += fmt::format("{}{} {}", flops_text.empty() ? "" : ", ", cls, Si(*f, "FLOP"));
    }
    json c = {{"shape", ShapeJson(s)}, {"bytes", *bytes}, {"flops", flops}};
    std::string sol_text = "-";
    if (ceil) {
      std::string bound;
      const double sol = SpeedOfLightUs(static_cast<double>(*bytes), flops, *ceil, &bound);
      c["sol_us"] = sol;
      c["bound"] = bound;
      sol_text = fmt::format("{:.2f} us ({})", sol, bound);
    }
    bench_cost.push_back(c);
    rows.push_back(fmt::format("    {:<24} {:>10} {:<24} {:<22} {}", ShapeText(*p, s),
                               Si(static_cast<double>(*bytes), "B"), flops_text, sol_text,
                               s.source));
  }
  j["bench_cost"] = bench_cost;
  std::string sol_note;
  if (ceil) {
    j["ceilings"] = {{"gpu", ceil->gpu},
                     {"copy_bytes_per_s", ceil->copy_bytes_per_s},
                     {"bf16_flops_per_s", ceil->bf16_flops_per_s},
                     {"fp8_flops_per_s", ceil->fp8_flops_per_s},
                     {"measured_at", ceil->measured_at}};
    sol_note = fmt::format(
        "speed of light on {} (device probe of {}: copy {:.3f} TB/s, bf16 {:.0f} TFLOP/s, fp8 "
        "{:.0f} TFLOP/s)",
        ceil->gpu, ceil->measured_at, ceil->copy_bytes_per_s / 1e12,
        ceil->bf16_flops_per_s / 1e12, ceil->fp8_flops_per_s / 1e12);
  } else {
    // The code keeps no datasheet figures: without a probe there is no honest bound to show.
    j["ceilings"] = nullptr;
    sol_note = fmt::format(
        "no speed of light: {}; run `warpsmith device probe` on the GPU machine (no built-in "
        "GPU figures exist), so bytes and FLOPs only", why_none);
    j["ceilings_note"] = sol_note;
  }
  if (as_json) {
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << fmt::format("{}\n  {}\n\n", p->name, p->description);
  for (const auto& prm : p->params) {
    std::string vals;
    for (const auto& v : prm.values) vals += (vals.empty() ? "" : " | ") + v;
    std::cout << fmt::format("  param {} = {} (default {})\n", prm.name, vals, prm.default_value);
  }
  for (const auto& t : p->tensors) {
    std::string dims;
    for (const auto& d : t.shape) dims += (dims.empty() ? "" : ", ") + d;
    std::string extra;
    if (t.role == TensorRole::kInput) {
      extra = InitText(t.init, *p);
    } else if (auto it = p->tolerance.find(t.name); it != p->tolerance.end()) {
      extra = "tolerance: " + ToleranceText(it->second);
    }
    std::cout << fmt::format("  {:<6} {:<8} {:<9} [{}]  {}\n",
                             t.role == TensorRole::kInput ? "input" : "output", t.name,
                             DTypeName(t.dtype), dims, extra);
  }
  std::cout << fmt::format("\n  bytes moved: {}\n", p->cost_bytes);
  for (const auto& [cls, f] : p->cost_flops) std::cout << fmt::format("  {} FLOPs: {}\n", cls, f);
  std::cout << "\n  test shapes:\n";
  for (const auto& s : p->test_shapes) std::cout << "    " << ShapeText(*p, s) << "\n";
  std::cout << fmt::format("  bench shapes ({}):\n", sol_note);
  std::cout << fmt::format("    {:<24} {:>10} {:<24} {:<22} {}\n", "shape", "bytes", "FLOPs",
                           "speed of light", "source");
  for (const auto& r : rows) std::cout << r << "\n";
  std::cout << fmt::format("  hidden shapes: {} (not shown)\n", p->hidden_shapes.size());
  std::cout << fmt::format("\n  reference: {}/{}\n  baseline:  {}\n", p->dir, p->gpu_reference,
                           IsLibraryBaseline(p->baseline) ? p->baseline
                                                          : p->dir + "/" + p->baseline);
  return kExitOk;
}

// Lints the named problems (all by default); exit 1 on any finding. Each spec loads on its own,
// so one that does not load is a finding, not the end of the lint.
int CmdProblemLint(const Globals& g, const std::vector<std::string>& names) {
  const std::string dir = g.problems_dir.empty() ? DefaultProblemsDir() : g.problems_dir;
  std::vector<std::string> chosen = names;
  if (chosen.empty()) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.is_directory() && fs::exists(e.path() / "spec.json")) {
        chosen.push_back(e.path().filename().string());
      }
    }
    if (ec) return Fail(Status::Error("{}: cannot list: {}", dir, ec.message()));
    std::sort(chosen.begin(), chosen.end());
  }
  for (const auto& name : names) {
    if (!fs::exists(fmt::format("{}/{}/spec.json", dir, name))) {
      return Fail(Status::Error("no problem named '{}' in {}", name, dir));
    }
  }
  int findings = 0, bad = 0;
  for (const auto& name : chosen) {
    std::vector<std::string> f;
    auto spec = LoadProblem(fmt::format("{}/{}/spec.json", dir, name));
    if (spec.ok()) {
      f = LintProblem(*spec);
    } else {
      f.push_back("does not load: " + spec.status().message());
    }
    for (const auto& what : f) std::cout << fmt::format("{}: {}\n", name, what);
    findings += static_cast<int>(f.size());
    bad += !f.empty();
  }
  std::cout << fmt::format("{} problems linted: {}\n", chosen.size(),
                           findings == 0 ? std::string("no findings")
                                         : fmt::format("{} findings in {} problems", findings, bad));
  return findings == 0 ? kExitOk : kExitRejected;
}

int CmdProblemVerify(const Globals& g, const std::string& name,
                     const std::vector<std::string>& set_args, bool compile_only,
                     const std::string& arch_name) {
  auto spec = FindProblem(g, name);
  if (!spec.ok()) return Fail(spec.status());
  auto sets = ParseSets(set_args);
  if (!sets.ok()) return Fail(sets.status());
  auto params = ResolveParams(*spec, *sets);
  if (!params.ok()) return Fail(params.status());
  EvaluatorOptions opts;
  opts.workspace = g.workspace;
  if (compile_only) {
    // What a machine without a GPU can check: the reference compiles and its plan is valid.
    auto arch = ParseArch(arch_name);
    if (!arch.ok()) return Fail(arch.status());
    auto c = CompileGpuReference(*spec, *params, *arch, opts);
    if (!c.ok()) return Fail(c.status());
    std::cout << fmt::format("{} ({}): the GPU reference compiles for {}; plan valid\n",
                             spec->name, ParamsJson(*params), arch_name);
    std::cout << fmt::format("  cubin: {}\n", c->cubin_path);
    for (const auto& k : c->resources.kernels) {
      std::cout << fmt::format("  {}: {} registers, {} B static smem, {} B spill stores\n",
                               k.name, k.registers, k.smem_static, k.spill_stores);
    }
    return kExitOk;
  }
  std::string why;
  auto device = ProbeDevice(opts, &why);
  if (!device.ok()) return Fail(device.status());
  if (!*device) return Fail(Status::Error("verifying the GPU reference needs a GPU: {}", why));
  auto arch = ParseArch((*device)->arch);
  if (!arch.ok()) return Fail(arch.status());
  auto shapes = VerifyGpuReference(*spec, *params, *arch, **device, opts);
  if (!shapes.ok()) {
    std::fprintf(stderr, "warpsmith: %s\n", shapes.status().message().c_str());
    return kExitRejected;
  }
  std::cout << fmt::format("{} ({}): the GPU reference matches the CPU reference on {} shapes of "
                           "fresh inputs\n",
                           spec->name, ParamsJson(*params), shapes->size());
  return kExitOk;
}

// ---- eval ---------------------------------------------------------------------------------------

json ResultJson(const EvalResult& r) {
  json cases = json::array();
  for (const auto& c : r.cases) {
    json j = {{"kind", c.kind}, {"verdict", std::string(VerdictName(c.verdict))},
              {"message", c.message}, {"bytes", c.bytes}, {"sol_us", c.sol_us}};
    if (c.kind != "hidden") j["shape"] = ShapeJson(c.shape);
    if (c.timing) {
      j["timing"] = {{"median_us", c.timing->median_us}, {"min_us", c.timing->min_us},
                     {"p90_us", c.timing->p90_us},       {"mean_us", c.timing->mean_us},
                     {"stdev_us", c.timing->stdev_us},   {"iterations", c.timing->iterations},
                     {"graph", c.timing->graph}};
    }
    cases.push_back(j);
  }
  json res = {{"verdict", std::string(VerdictName(r.verdict))},
              {"message", r.message},
              {"ran_on_gpu", r.ran_on_gpu},
              {"knobs", r.knobs},
              {"compile", {{"ok", r.compile.ok}, {"hash", r.compile.hash}, {"cached", r.compile.cached}}},
              {"cases", cases},
              {"geomean_us", r.geomean_us},
              {"sol_fraction", r.sol_fraction}};
  json kernels = json::array();
  for (const auto& k : r.compile.resources.kernels) {
    kernels.push_back({{"name", k.name}, {"registers", k.registers}, {"smem_static", k.smem_static},
                       {"stack_frame", k.stack_frame}, {"spill_stores", k.spill_stores},
                       {"spill_loads", k.spill_loads}});
  }
  res["resources"] = kernels;
  if (r.device) res["device"] = {{"name", r.device->name}, {"arch", r.device->arch},
                                 {"driver", r.device->driver}};
  res["sandbox"] = r.sandbox_layers;
  if (!r.deep.empty()) res["deep"] = r.deep;
  res["phase_seconds"] = r.phase_seconds;
  if (!r.retries.empty()) res["retries"] = r.retries;
  if (!r.kept_scratch.empty()) res["kept_scratch"] = r.kept_scratch;
  return res;
}

void PrintResult(const EvalResult& r, const ProblemSpec& spec) {
  for (const auto& k : r.compile.resources.kernels) {
    std::cout << fmt::format("  kernel {}: {} registers, {} B static smem, {} B stack, {} B spilled\n",
                             k.name, k.registers, k.smem_static, k.stack_frame,
                             k.spill_stores + k.spill_loads);
  }
  if (r.device) {
    std::cout << fmt::format("  gpu: {} ({}, driver {})\n", r.device->name, r.device->arch,
                             r.device->driver);
  }
  for (const auto& [layer, state] : r.sandbox_layers) {
    std::cout << fmt::format("  sandbox {}: {}\n", layer, state);
  }
  for (const auto& [tool, state] : r.deep) {
    std::cout << fmt::format("  deep {}: {}\n", tool, state);
  }
  for (const auto& why : r.retries) std::cout << fmt::format("  retried: {}\n", why);
  if (!r.kept_scratch.empty()) {
    std::cout << fmt::format("  scratch kept: {} (job files, results, dumps)\n", r.kept_scratch);
  }
  if (!r.phase_seconds.empty()) {
    std::string phases;
    for (const auto& [name, s] : r.phase_seconds) phases += fmt::format(" {} {:.2f}", name, s);
    std::cout << "  seconds:" << phases << "\n";
  }
  if (!r.cases.empty()) {
    std::cout << fmt::format("  {:<7} {:<22} {:<13} {:>11} {:>11} {:>10} {:>8} {:>8}\n", "kind",
                             "shape", "verdict", "median us", "p90 us", "SOL us", "of SOL",
                             "TB/s");
  }
  int hidden = 0;
  for (const auto& c : r.cases) {
    std::string shape = c.kind == "hidden" ? fmt::format("#{}", hidden++) : ShapeText(spec, c.shape);
    std::string med = "-", p90 = "-", sol = c.sol_us > 0 ? fmt::format("{:.2f}", c.sol_us) : "-",
                frac = "-", tbps = "-";
    if (c.timing) {
      med = fmt::format("{:.2f}", c.timing->median_us);
      p90 = fmt::format("{:.2f}", c.timing->p90_us);
      if (c.sol_us > 0) frac = fmt::format("{:.3f}", c.sol_us / c.timing->median_us);
      tbps = fmt::format("{:.3f}", c.bytes / (c.timing->median_us * 1e-6) / 1e12);
    }
    std::cout << fmt::format("  {:<7} {:<22} {:<13} {:>11} {:>11} {:>10} {:>8} {:>8}\n", c.kind,
                             shape, VerdictName(c.verdict), med, p90, sol, frac, tbps);
  }
  std::string summary = fmt::format("{}: {}", spec.name, VerdictName(r.verdict));
  if (r.verdict == Verdict::kOk && r.geomean_us > 0) {
    summary += fmt::format(" — geomean {:.2f} us over bench shapes", r.geomean_us);
    if (r.sol_fraction > 0) summary += fmt::format(", {:.3f} of speed-of-light", r.sol_fraction);
  }
  std::cout << summary << "\n";
  if (!r.message.empty()) std::cout << "  " << r.message << "\n";
}

struct EvalArgs {
  std::string problem, file, arch = "sm_90a", kernel_library;
  bool compile_only = false, as_json = false, no_hidden = false, no_bench = false, deep = false,
       keep_scratch = false;
  int iterations = 0;
  std::string bench_where;
  std::optional<uint64_t> input_seed;
  std::vector<std::string> sets, knobs;
};

int CmdEval(const Globals& g, const EvalArgs& a) {
  auto spec = FindProblem(g, a.problem);
  if (!spec.ok()) return Fail(spec.status());
  // FILE may name a spec's library baseline ("cublaslt:bf16_gemm") instead of a .cu file.
  const bool library = IsLibraryBaseline(a.file);
  auto source_text = library ? Result<std::string>(std::string()) : ReadFile(a.file);
  if (!source_text.ok()) return Fail(source_text.status());
  const std::string& source = *source_text;
  auto arch = ParseArch(a.arch);
  if (!arch.ok()) return Fail(arch.status());
  auto sets = ParseSets(a.sets);
  if (!sets.ok()) return Fail(sets.status());
  auto params = ResolveParams(*spec, *sets);
  if (!params.ok()) return Fail(params.status());
  auto knob_text = ParseSets(a.knobs);
  if (!knob_text.ok()) return Fail(knob_text.status());
  std::map<std::string, int64_t> knobs;
  for (const auto& [k, v] : *knob_text) {
    char* end = nullptr;
    long long n = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end) return Fail(Status::Error("--knob {}: '{}' is not an integer", k, v));
    knobs[k] = n;
  }
  auto store = OpenStore(g);
  if (!store.ok()) return Fail(store.status());

  EvaluatorOptions opts;
  opts.workspace = g.workspace;
  // Absolute: the compiler checks each #include against the library's path as given.
  if (!a.kernel_library.empty()) opts.kernel_library = fs::absolute(a.kernel_library).string();
  opts.keep_scratch = a.keep_scratch;
  EvalRequest req;
  req.spec = &*spec;
  req.source = source;
  req.source_name = a.file;
  if (library) req.library = a.file;
  req.arch = *arch;
  req.params = *params;
  req.knobs = knobs;
  req.compile_only = a.compile_only;
  req.include_hidden = !a.no_hidden;
  req.include_bench = !a.no_bench;
  req.bench_where = a.bench_where;
  req.input_seed = a.input_seed;
  req.timing_iterations = a.iterations;
  req.deep = a.deep;
  if (!a.compile_only) {
    std::string why;
    auto device = ProbeDevice(opts, &why);
    if (!device.ok()) return Fail(device.status());
    req.device = *device;
    if (*device) {
      auto ceilings = CeilingsFor(**store, **device, opts);
      if (!ceilings.ok()) return Fail(ceilings.status());
      req.ceilings = *ceilings;
    } else {
      std::fprintf(stderr, "warpsmith: no GPU here (%s): compiling and validating only\n",
                   why.c_str());
    }
  }
  // The same evaluate-and-record path the campaigns use.
  RecordContext ctx;
  ctx.origin = "file:" + fs::path(a.file).lexically_normal().string();
  // A library baseline is no kernel: evaluated and shown, never stored or ranked.
  auto rec = library ? Result<RecordedEvaluation>(RecordedEvaluation{})
                     : EvaluateAndRecord(**store, req, opts, ctx);
  if (!rec.ok()) return Fail(rec.status());
  if (library) {
    auto lr = Evaluate(req, opts);
    if (!lr.ok()) return Fail(lr.status());
    rec->result = std::move(*lr);
  }
  const EvalResult& r = rec->result;
  const std::optional<int64_t> eid =
      library ? std::nullopt : std::optional<int64_t>(rec->evaluation_id);

  if (a.as_json) {
    json j = ResultJson(r);
    j["evaluation_id"] = eid ? json(*eid) : json(nullptr);
    j["problem"] = spec->name;
    j["params"] = *params;
    if (!a.bench_where.empty()) j["bench_where"] = a.bench_where;
    if (a.input_seed) j["input_seed"] = *a.input_seed;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << fmt::format("evaluation {} of {} ({}, {})\n",
                             eid ? std::to_string(*eid) : "(not stored)", a.file, spec->name,
                             ParamsJson(*params));
    PrintResult(r, *spec);
    if (!a.bench_where.empty()) {
      std::cout << fmt::format("  bench shapes where {} only: not ranked\n", a.bench_where);
    }
    if (a.input_seed) {
      std::cout << fmt::format("  inputs from seed {}: not ranked\n", *a.input_seed);
    }
  }
  // Deep mode was asked for and could not give its answer: never a pass.
  if (std::string why = DeepModeFailure(r); !why.empty()) {
    std::fprintf(stderr, "warpsmith: deep mode was asked for but could not run: %s\n",
                 why.c_str());
    return kExitError;
  }
  switch (r.verdict) {
    case Verdict::kOk:
    case Verdict::kNotRun:
      return kExitOk;
    default:
      return kExitRejected;
  }
}

// Per agent: attempts, verdicts, tokens, cost ("" is `warpsmith eval`).
void PrintAgents(const std::vector<AgentStats>& agents) {
  if (agents.empty()) return;
  std::cout << fmt::format("\n{:<28} {:>9} {:>12} {:>12} {:>9}  {}\n", "agent", "attempts",
                           "tokens in", "tokens out", "cost $", "verdicts");
  for (const auto& a : agents) {
    std::string verdicts;
    for (const auto& [v, n] : a.verdicts) {
      verdicts += fmt::format("{}{} {}", verdicts.empty() ? "" : ", ", v, n);
    }
    std::cout << fmt::format("{:<28} {:>9} {:>12} {:>12} {:>9.2f}  {}\n",
                             a.agent.empty() ? "(warpsmith eval)" : a.agent, a.attempts,
                             a.input_tokens, a.output_tokens, a.cost_usd, verdicts);
  }
}

// ---- leaderboard --------------------------------------------------------------------------------

int CmdLeaderboard(const Globals& g, const std::string& problem, bool as_json) {
  auto store = OpenStore(g);
  if (!store.ok()) return Fail(store.status());
  auto rows = (*store)->Leaderboard(problem);
  if (!rows.ok()) return Fail(rows.status());
  auto agents = (*store)->AgentStatistics(std::nullopt);
  if (!agents.ok()) return Fail(agents.status());
  if (as_json) {
    // The same builder as the dashboard's /api/leaderboard.
    auto arr = LeaderboardJson(**store, problem,
                               g.problems_dir.empty() ? DefaultProblemsDir() : g.problems_dir);
    if (!arr.ok()) return Fail(arr.status());
    std::cout << arr->dump(2) << "\n";
    return kExitOk;
  }
  if (rows->empty()) {
    std::cout << "no verified, timed kernels yet" << (problem.empty() ? "" : " for " + problem)
              << "\n";
    PrintAgents(*agents);
    return kExitOk;
  }
  // A kernel evaluated more than once is ranked by the median of its runs ("runs"); "apart" is
  // their spread, slowest minus fastest over the median.
  std::cout << fmt::format("{:<26} {:<22} {:<14} {:>11} {:>4} {:>6} {:>7} {:<13} {}\n",
                           "problem", "params", "gpu", "geomean us", "runs", "apart", "of SOL",
                           "kernel", "origin");
  for (const auto& r : *rows) {
    const std::string apart =
        r.evaluations > 1 && r.time_us > 0
            ? fmt::format("{:.1f}%", 100 * (r.slowest_us - r.fastest_us) / r.time_us)
            : "-";
    std::cout << fmt::format("{:<26} {:<22} {:<14} {:>11.2f} {:>4} {:>6} {:>7.3f} {:<13} {}{}{}\n",
                             r.problem, r.params_json, r.gpu, r.time_us, r.evaluations, apart,
                             r.sol_fraction, r.kernel_hash.substr(0, 12), r.origin,
                             r.agent.empty() ? "" : " by " + r.agent + " " + r.knobs_json,
                             r.flagged ? " [flagged: " + r.flag_reason + "]" : "");
  }
  PrintAgents(*agents);
  return kExitOk;
}

// ---- reference ----------------------------------------------------------------------------------

int CmdReference(const Globals& g, const std::string& problem, const std::string& in_dir,
                 const std::string& out_dir, const std::vector<std::string>& set_args) {
  auto spec = FindProblem(g, problem);
  if (!spec.ok()) return Fail(spec.status());
  auto sets = ParseSets(set_args);
  if (!sets.ok()) return Fail(sets.status());
  auto params = ResolveParams(*spec, *sets);
  if (!params.ok()) return Fail(params.status());
  TensorMap inputs;
  Shape shape;
  for (const auto& t : spec->tensors) {
    if (t.role != TensorRole::kInput) continue;
    std::string path = in_dir + "/" + t.name + ".npy";
    auto tensor = ReadNpy(path, t.dtype);
    if (!tensor.ok()) return Fail(tensor.status());
    if (tensor->dims.size() != t.shape.size()) {
      return Fail(Status::Error("{}: {} dims, the spec's '{}' has {}", path, tensor->dims.size(),
                                t.name, t.shape.size()));
    }
    // Bare symbols in the spec's shape take their values from the file.
    for (size_t d = 0; d < t.shape.size(); ++d) {
      const std::string& e = t.shape[d];
      if (std::find(spec->symbols.begin(), spec->symbols.end(), e) == spec->symbols.end()) continue;
      auto [it, fresh] = shape.symbols.emplace(e, tensor->dims[d]);
      if (!fresh && it->second != tensor->dims[d]) {
        return Fail(Status::Error("{}: dim {} is {}, but {} = {} from another input", path, d,
                                  tensor->dims[d], e, it->second));
      }
    }
    inputs.emplace(t.name, std::move(*tensor));
  }
  if (Status s = ValidateShape(*spec, shape); !s.ok()) return Fail(s);
  SymbolTable symbols = BindSymbols(*spec, shape, *params);
  auto outputs = RunCpuReference(*spec, symbols, *params, inputs);
  if (!outputs.ok()) return Fail(outputs.status());
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return Fail(Status::Error("cannot create {}: {}", out_dir, ec.message()));
  for (const auto& [name, t] : *outputs) {
    std::string path = out_dir + "/" + name + ".npy";
    if (Status s = WriteNpy(path, t); !s.ok()) return Fail(s);
    std::cout << fmt::format("wrote {} ({}, {} elements)\n", path, DTypeName(t.dtype), t.numel());
  }
  return kExitOk;
}

// ---- device -------------------------------------------------------------------------------------

int CmdDeviceProbe(const Globals& g, bool as_json) {
  EvaluatorOptions opts;
  opts.workspace = g.workspace;
  std::string why;
  auto device = ProbeDevice(opts, &why);
  if (!device.ok()) return Fail(device.status());
  if (!*device) return Fail(Status::Error("no GPU to probe: {}", why));
  auto c = MeasureCeilings(opts);
  if (!c.ok()) return Fail(c.status());
  auto store = OpenStore(g);
  if (!store.ok()) return Fail(store.status());
  CeilingsRecord rec{c->gpu, c->copy_bytes_per_s, c->bf16_flops_per_s, c->fp8_flops_per_s, ""};
  if (Status s = (*store)->PutCeilings(rec); !s.ok()) return Fail(s);
  if (as_json) {
    std::cout << json{{"gpu", c->gpu}, {"arch", (*device)->arch}, {"driver", (*device)->driver},
                      {"copy_bytes_per_s", c->copy_bytes_per_s},
                      {"bf16_flops_per_s", c->bf16_flops_per_s},
                      {"fp8_flops_per_s", c->fp8_flops_per_s}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << fmt::format(
        "{} ({}, driver {}): copy {:.3f} TB/s, bf16 {:.0f} TFLOP/s, fp8 {:.0f} TFLOP/s (stored)\n",
        c->gpu, (*device)->arch, (*device)->driver, c->copy_bytes_per_s / 1e12,
        c->bf16_flops_per_s / 1e12, c->fp8_flops_per_s / 1e12);
  }
  return kExitOk;
}

// ---- campaign -----------------------------------------------------------------------------------

CancelToken g_interrupt;  // Ctrl-C: finish the current step, then stop the campaign

extern "C" void OnInterrupt(int) { g_interrupt.cancelled.store(true); }

struct CampaignArgs {
  std::string problems = "*", base_url, budget, arch, seed = "hand";
  std::vector<std::string> agents, sets, prices;
  bool compile_only = false, as_json = false, deep_winners = false;
  int64_t id = 0;  // 0: the newest campaign
  int tuner_batch = 8, compile_threads = 0, max_turns = 16, confirm_runs = 2,
      max_output_tokens = 8192;
  int64_t context_tokens = 128000;
  std::string executor = "local", gpus, slurm_partition, slurm_account, slurm_time,
              slurm_shared_dir;
  int max_tries = 3;
};

CampaignEnv MakeCampaignEnv(const Globals& g) {
  CampaignEnv env;
  env.workspace = g.workspace;
  env.problems_dir = g.problems_dir.empty() ? DefaultProblemsDir() : g.problems_dir;
  env.kernels_dir = (fs::path(env.problems_dir).parent_path() / "kernels").string();
  env.eval_opts.workspace = g.workspace;
  env.cancel = &g_interrupt;
  struct sigaction sa {};
  sa.sa_handler = OnInterrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  return env;
}

Result<int64_t> CampaignId(Store& store, int64_t id) {
  if (id > 0) return id;
  WS_ASSIGN_OR_RETURN(auto latest, store.LatestCampaign());
  if (!latest) return Status::Error("no campaign yet: start one with `warpsmith campaign start`");
  return latest->id;
}

int CmdCampaignStart(const Globals& g, const CampaignArgs& a) {
  CampaignConfig c;
  c.problems = a.problems;
  for (const auto& text : a.agents) {
    auto agent = ParseAgent(text);
    if (!agent.ok()) return Fail(agent.status());
    c.agents.push_back(*agent);
  }
  c.base_url = a.base_url;
  for (const auto& text : a.prices) {
    auto price = ParseAgentPrice(text);
    if (!price.ok()) return Fail(price.status());
    c.prices[price->first] = price->second;
  }
  auto budget = ParseBudget(a.budget);
  if (!budget.ok()) return Fail(budget.status());
  c.budget = *budget;
  c.compile_only = a.compile_only;
  c.arch = a.arch;
  auto sets = ParseSets(a.sets);
  if (!sets.ok()) return Fail(sets.status());
  c.params = *sets;
  c.seed = a.seed;
  c.tuner_batch = a.tuner_batch;
  c.compile_threads = a.compile_threads;
  c.max_turns = a.max_turns;
  c.max_output_tokens = a.max_output_tokens;
  c.context_tokens = a.context_tokens;
  c.deep_winners = a.deep_winners;
  c.confirm_runs = a.confirm_runs;
  c.executor = a.executor;
  c.gpus = a.gpus;
  c.slurm_partition = a.slurm_partition;
  c.slurm_account = a.slurm_account;
  c.slurm_time = a.slurm_time;
  c.slurm_shared_dir = a.slurm_shared_dir;
  if (!c.slurm_shared_dir.empty()) c.slurm_shared_dir = fs::absolute(c.slurm_shared_dir).string();
  c.max_tries = a.max_tries;
  CampaignEnv env = MakeCampaignEnv(g);
  auto id = StartCampaign(c, env);
  if (!id.ok()) return Fail(id.status());
  return kExitOk;
}

int CmdCampaignResume(const Globals& g, const CampaignArgs& a) {
  auto store = OpenStore(g);
  if (!store.ok()) return Fail(store.status());
  auto id = CampaignId(**store, a.id);
  if (!id.ok()) return Fail(id.status());
  auto c = (*store)->GetCampaign(*id);
  if (!c.ok()) return Fail(c.status());
  if (c->status == "running" && c->pid > 0 && c->pid != ::getpid() &&
      (::kill(static_cast<pid_t>(c->pid), 0) == 0 || errno == EPERM)) {
    return Fail(Status::Error("campaign {} is running in process {}; stop it first", *id, c->pid));
  }
  store->reset();
  CampaignEnv env = MakeCampaignEnv(g);
  if (Status s = RunCampaign(*id, env); !s.ok()) return Fail(s);
  return kExitOk;
}

int CmdCampaignStop(const Globals& g, const CampaignArgs& a) {
  auto store = OpenStore(g);
  if (!store.ok()) return Fail(store.status());
  auto id = CampaignId(**store, a.id);
  if (!id.ok()) return Fail(id.status());
  if (Status s = (*store)->RequestCampaignStop(*id); !s.ok()) return Fail(s);
  auto c = (*store)->GetCampaign(*id);
  if (c.ok() && c->status != "running") {
    std::cout << fmt::format("campaign {} is not running ({})\n", *id, c->status);
  } else {
    std::cout << fmt::format("campaign {}: stop requested; it stops after the current step\n", *id);
  }
  return kExitOk;
}

int CmdCampaignStatus(const Globals& g, const CampaignArgs& a) {
  auto store = OpenStore(g);
  if (!store.ok()) return Fail(store.status());
  auto id = CampaignId(**store, a.id);
  if (!id.ok()) return Fail(id.status());
  auto text = a.as_json ? CampaignStatusJson(**store, *id) : CampaignStatusText(**store, *id);
  if (!text.ok()) return Fail(text.status());
  std::cout << *text << "\n";
  return kExitOk;
}

// ---- serve --------------------------------------------------------------------------------------

int CmdServe(const Globals& g, ServeOptions o) {
  o.workspace = g.workspace;
  o.problems_dir = g.problems_dir.empty() ? DefaultProblemsDir() : g.problems_dir;
  if (o.token.empty()) {
    if (const char* env = std::getenv("WARPSMITH_TOKEN")) o.token = env;
  }
  o.warpsmith_exe = SelfExecutable();  // re-verify runs it
  // Ctrl-C and SIGTERM stop the server: the threads it starts inherit the blocked mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  auto server = Server::Start(o);
  if (!server.ok()) return Fail(server.status());
  std::cout << fmt::format("warpsmith serve: {} ({}; store {}/warpsmith.db)\n", (*server)->url(),
                           o.token.empty() ? "read-only" : "actions need the token", g.workspace)
            << std::flush;
  int sig = 0;
  sigwait(&stop_signals, &sig);
  (*server)->Stop();
  return kExitOk;
}

// `warpsmith export` and `warpsmith verify` (docs/export.md).
int CmdExport(const Globals& g, ExportOptions o) {
  if (o.format != "cmake" && o.format != "torch" && o.format != "bundle") {
    return Fail(Status::Error("--format must be cmake, torch or bundle, not '{}'", o.format));
  }
  auto problems = LoadAll(g);
  if (!problems.ok()) return Fail(problems.status());
  auto store = OpenStore(g);
  if (!store.ok()) return Fail(store.status());
  // The CPU references shipped with a cmake package come from the tree holding the problems.
  o.source_root =
      fs::absolute(g.problems_dir.empty() ? DefaultProblemsDir() : g.problems_dir)
          .lexically_normal().parent_path().string();
  auto items = SelectExport(**store, *problems, o);
  if (!items.ok()) return Fail(items.status());
  if (Status s = WriteExport(*items, o); !s.ok()) return Fail(s);
  std::cout << fmt::format("exported {} kernel(s) to {} ({}):\n", items->size(), o.out, o.format);
  for (const auto& it : *items) {
    std::cout << fmt::format("  {}: {} {}, kernel {} ({}), {}\n", it.function, it.spec.name,
                             it.evaluation.params_json, it.kernel.id, it.kernel.hash.substr(0, 12),
                             it.verified ? "verified " + it.evaluation.gpu : "UNVERIFIED");
  }
  return kExitOk;
}

int CmdVerify(const Globals& g, const std::string& path) {
  auto bundles = FindBundles(path);
  if (!bundles.ok()) return Fail(bundles.status());
  auto store = OpenStore(g);
  if (!store.ok()) return Fail(store.status());
  EvaluatorOptions opts;
  opts.workspace = g.workspace;
  bool all = true;
  for (const auto& b : *bundles) {
    auto r = VerifyBundle(b, **store, opts);
    if (!r.ok()) return Fail(r.status());
    std::cout << r->report;
    std::cout << (r->match ? (r->ran ? "reproduced\n" : "compiled and validated (not re-run)\n")
                           : "MISMATCH\n");
    all = all && r->match;
  }
  return all ? kExitOk : kExitRejected;
}

// `warpsmith job run SPEC.json`: one evaluation for an executor (hidden; docs/scale-out.md).
int CmdJobRun(const Globals& g, const std::string& spec, const std::string& out) {
  EvaluatorOptions opts;
  opts.workspace = g.workspace;
  if (Status s = RunJobFile(spec, out, opts); !s.ok()) return Fail(s);
  return kExitOk;
}

int Main(int argc, char** argv) {
  CLI::App app{"warpsmith: kernel optimization campaigns for MXFP8 MoE on Hopper and Blackwell"};
  app.require_subcommand(1);
  Globals g;
  app.add_option("--workspace", g.workspace, "workspace folder (store, cache, scratch)")
      ->capture_default_str();
  app.add_option("--problems-dir", g.problems_dir, "problem set folder (default: ./problems)");

  int rc = kExitOk;
  bool as_json = false;

  auto* problems = app.add_subcommand("problems", "list problems, or show one");
  problems->add_flag("--json", as_json, "machine-readable output");
  auto* show = problems->add_subcommand("show", "show one problem");
  std::string show_name;
  show->add_option("NAME", show_name)->required();
  show->add_flag("--json", as_json, "machine-readable output");
  show->callback([&] { rc = CmdProblemShow(g, show_name, as_json); });
  std::string verify_name, verify_arch = "sm_90a";
  std::vector<std::string> verify_sets;
  bool verify_compile_only = false;
  auto* verify = problems->add_subcommand(
      "verify", "check the GPU reference against the CPU reference on fresh inputs (needs a GPU)");
  verify->add_option("NAME", verify_name)->required();
  verify->add_option("--set", verify_sets, "problem parameter NAME=VALUE");
  verify->add_flag("--compile-only", verify_compile_only,
                   "only compile the GPU reference and validate its plan (no GPU needed)");
  verify->add_option("--arch", verify_arch, "with --compile-only: sm_90a or sm_100a")
      ->capture_default_str();
  verify->callback([&] {
    rc = CmdProblemVerify(g, verify_name, verify_sets, verify_compile_only, verify_arch);
  });
  std::vector<std::string> lint_names;
  auto* lint = problems->add_subcommand(
      "lint", "reject degenerate problems: spec checks and a CPU-reference run on two seeds");
  lint->add_option("NAME", lint_names, "problems to lint (default: all)");
  lint->callback([&] { rc = CmdProblemLint(g, lint_names); });
  problems->callback([&] {
    if (problems->get_subcommands().empty()) rc = CmdProblems(g, as_json);
  });

  EvalArgs ea;
  auto* eval = app.add_subcommand("eval", "compile, check and time one candidate kernel");
  eval->add_option("PROBLEM", ea.problem)->required();
  eval->add_option("FILE", ea.file,
                   "the candidate .cu (device code + plan), or a library baseline such as "
                   "cublaslt:bf16_gemm")
      ->required();
  eval->add_option("--arch", ea.arch, "sm_90a or sm_100a")->capture_default_str();
  eval->add_flag("--compile-only", ea.compile_only, "compile and validate the plan; run nothing");
  eval->add_option("--set", ea.sets, "problem parameter NAME=VALUE")->take_all();
  eval->add_option("--knob", ea.knobs, "knob NAME=VALUE (default: the plan's first value)");
  eval->add_flag("--no-hidden", ea.no_hidden, "skip hidden shapes (such a result is not ranked)");
  eval->add_flag("--no-bench", ea.no_bench,
                 "skip bench shapes: a quick check, e.g. with --deep (not timed, not ranked)");
  eval->add_option("--bench-where", ea.bench_where,
                   "only the bench shapes where EXPR (the problem's symbols and parameters, as in "
                   "a plan) is nonzero, e.g. 'M <= 128' (not ranked)");
  eval->add_option("--input-seed", ea.input_seed,
                   "draw every input from this seed, so evaluations with the same seed time the "
                   "same inputs (paired knob comparisons; not ranked)");
  eval->add_flag("--keep-scratch", ea.keep_scratch,
                 "keep the runners' job files, results and dumps, and say where (to profile a "
                 "candidate's runner under ncu, or debug one)");
  eval->add_option("--iterations", ea.iterations,
                   "timed launches per bench shape (default: from its speed-of-light time, "
                   "20-200); a result timed otherwise is not ranked")
      ->check(CLI::Range(3, 1000));
  eval->add_flag("--json", ea.as_json, "machine-readable output");
  eval->add_option("--kernel-library", ea.kernel_library,
                   "the device library (#include \"ws/...\") to compile against; default: "
                   "kernels/include of this warpsmith")
      ->check(CLI::ExistingDirectory);
  eval->add_flag("--deep", ea.deep,
                 "after an ok verdict, run the test shapes under compute-sanitizer memcheck, "
                 "racecheck and initcheck (slow; a finding is wrong_answer)");
  eval->callback([&] { rc = CmdEval(g, ea); });

  std::string lb_problem;
  auto* lb = app.add_subcommand("leaderboard", "the fastest verified kernels");
  lb->add_option("--problem", lb_problem);
  lb->add_flag("--json", as_json, "machine-readable output");
  lb->callback([&] { rc = CmdLeaderboard(g, lb_problem, as_json); });

  std::string ref_problem, ref_in, ref_out;
  std::vector<std::string> ref_sets;
  auto* ref = app.add_subcommand("reference", "run a problem's CPU reference on .npy inputs");
  ref->add_option("PROBLEM", ref_problem)->required();
  ref->add_option("--in", ref_in, "folder with <tensor>.npy inputs")->required();
  ref->add_option("--out", ref_out, "folder for <tensor>.npy outputs")->required();
  ref->add_option("--set", ref_sets, "problem parameter NAME=VALUE");
  ref->callback([&] { rc = CmdReference(g, ref_problem, ref_in, ref_out, ref_sets); });

  auto* device = app.add_subcommand("device", "the GPU and its measured ceilings");
  device->require_subcommand(1);
  auto* probe = device->add_subcommand("probe", "measure copy bandwidth and BF16/FP8 matrix rates");
  probe->add_flag("--json", as_json, "machine-readable output");
  probe->callback([&] { rc = CmdDeviceProbe(g, as_json); });

  auto* doctor = app.add_subcommand("doctor", "which sandbox layers work here; NVRTC, GPU, workspace");
  doctor->add_flag("--json", as_json, "machine-readable output");
  doctor->callback([&] { rc = RunDoctor(g.workspace, as_json); });

  CampaignArgs ca;
  auto* campaign = app.add_subcommand("campaign", "agents improve kernels until a budget is spent");
  campaign->require_subcommand(1);
  auto* cstart = campaign->add_subcommand("start", "start a campaign (runs in the foreground)");
  cstart->add_option("--problems", ca.problems, "glob over problem names")->capture_default_str();
  cstart->add_option("--agent", ca.agents,
                     "tuner or PROVIDER:MODEL (openai:..., anthropic:...); repeatable; "
                     "default: the tuner");
  cstart->add_option("--base-url", ca.base_url, "the LLM endpoint (default: the provider's)");
  cstart->add_option("--price", ca.prices,
                     "AGENT=IN,OUT[,CACHE_READ[,CACHE_WRITE]]: an LLM agent's prices in USD per "
                     "million tokens; repeatable; a dollars budget needs every LLM agent's");
  cstart->add_option("--budget", ca.budget,
                     "KEY=VALUE,... over evaluations, tokens, dollars, gpu_seconds, "
                     "wall_seconds (30m, 2h)")
      ->required();
  cstart->add_flag("--compile-only", ca.compile_only, "compile and validate only; run nothing");
  cstart->add_flag("--deep-winners", ca.deep_winners,
                   "evaluate a would-be leaderboard winner again in deep mode (compute-sanitizer) "
                   "before ranking it");
  cstart->add_option("--confirm-runs", ca.confirm_runs,
                     "time a problem's leader again after an attempt until it has this many "
                     "runs; the leaderboard ranks by their median (0 or 1: off)")
      ->check(CLI::Range(0, 9))
      ->capture_default_str();
  cstart->add_option("--arch", ca.arch, "sm_90a or sm_100a (default: the GPU's)");
  cstart->add_option("--set", ca.sets, "problem parameter NAME=VALUE")->take_all();
  cstart->add_option("--seed", ca.seed,
                     "seed parents: hand (kernels/<problem>/kernel.cu, else the starting "
                     "kernel), starting, or a .cu path")
      ->capture_default_str();
  cstart->add_option("--tuner-batch", ca.tuner_batch, "knob settings per tuner attempt")
      ->capture_default_str();
  cstart->add_option("--compile-threads", ca.compile_threads, "parallel compiles (0: auto)");
  cstart->add_option("--max-output-tokens", ca.max_output_tokens,
                     "per model reply (a reasoning model's reasoning counts: give it more)")
      ->check(CLI::Range(256, 1 << 20))
      ->capture_default_str();
  cstart->add_option("--max-turns", ca.max_turns, "model turns per worker attempt")
      ->capture_default_str();
  cstart->add_option("--context-tokens", ca.context_tokens, "the models' context window")
      ->capture_default_str();
  cstart->add_option("--executor", ca.executor, "where evaluations run: local or slurm")
      ->check(CLI::IsMember({"local", "slurm"}))
      ->capture_default_str();
  cstart->add_option("--gpus", ca.gpus,
                     "local: the GPUs to time on, e.g. 0,1 (default: CUDA_VISIBLE_DEVICES, else "
                     "the default GPU); one runner per GPU");
  cstart->add_option("--slurm-partition", ca.slurm_partition, "slurm: sbatch --partition");
  cstart->add_option("--slurm-account", ca.slurm_account, "slurm: sbatch --account");
  cstart->add_option("--slurm-time", ca.slurm_time, "slurm: sbatch --time per job");
  cstart->add_option("--slurm-shared-dir", ca.slurm_shared_dir,
                     "slurm: a folder every node sees at the same path (default: "
                     "<workspace>/slurm)");
  cstart->add_option("--max-tries", ca.max_tries,
                     "tries per job (a lost or cancelled job is retried)")
      ->capture_default_str();
  cstart->callback([&] { rc = CmdCampaignStart(g, ca); });
  auto* cstatus = campaign->add_subcommand("status", "a campaign's progress and spend");
  cstatus->add_option("--id", ca.id, "campaign id (default: the newest)");
  cstatus->add_flag("--json", ca.as_json, "machine-readable output");
  cstatus->callback([&] { rc = CmdCampaignStatus(g, ca); });
  auto* cstop = campaign->add_subcommand("stop", "ask a running campaign to stop");
  cstop->add_option("--id", ca.id, "campaign id (default: the newest)");
  cstop->callback([&] { rc = CmdCampaignStop(g, ca); });
  auto* cresume = campaign->add_subcommand("resume", "continue a stopped or killed campaign");
  cresume->add_option("--id", ca.id, "campaign id (default: the newest)");
  cresume->callback([&] { rc = CmdCampaignResume(g, ca); });

  ServeOptions so;
  auto* serve = app.add_subcommand("serve", "the dashboard: leaderboard, problems, kernels, "
                                            "campaigns, and a JSON API (docs/dashboard.md)");
  serve->add_option("--port", so.port, "TCP port (0: any free one)")->capture_default_str();
  serve->add_option("--bind", so.bind, "address to listen on (not loopback: needs --token)")
      ->capture_default_str();
  serve->add_option("--token", so.token,
                    "allow the actions (stop, re-verify) with Authorization: Bearer TOKEN "
                    "(default: $WARPSMITH_TOKEN; none: read-only)");
  serve->add_option("--threads", so.threads, "request threads")->capture_default_str();
  serve->add_flag("--log", so.log, "a line on stderr per request");
  serve->callback([&] { rc = CmdServe(g, so); });

  ExportOptions xo;
  auto* xp = app.add_subcommand(
      "export", "write the best verified kernels as a CMake package, a PyTorch extension or bundles");
  xp->add_option("--problem", xo.problem_globs, "glob over problem names (repeatable)");
  xp->add_flag("--all", xo.all, "every problem");
  xp->add_option("--gpu", xo.gpu, "GPU model (default: the only one kernels are ranked on)");
  xp->add_option("--out", xo.out, "folder to write (absent or empty)")->required();
  xp->add_option("--format", xo.format, "cmake, torch or bundle")->required();
  xp->add_flag("--include-unverified", xo.include_unverified,
               "also export the newest compiled kernel of settings with no verified one");
  xp->callback([&] { rc = CmdExport(g, xo); });
  std::string bundle_path;
  auto* vb = app.add_subcommand(
      "verify", "re-check and re-time an exported bundle on the GPU at hand (exit 1: mismatch)");
  vb->add_option("BUNDLE", bundle_path, "a bundle folder, or an export folder of bundles")
      ->required();
  vb->callback([&] { rc = CmdVerify(g, bundle_path); });

  // Hidden: what executors run (`warpsmith job run SPEC.json`).
  std::string job_spec, job_out;
  auto* job = app.add_subcommand("job", "")->group("");
  job->require_subcommand(1);
  auto* job_run = job->add_subcommand("run", "evaluate one job spec and write its result");
  job_run->add_option("SPEC", job_spec)->required();
  job_run->add_option("--out", job_out, "result path (default: the spec's)");
  job_run->callback([&] { rc = CmdJobRun(g, job_spec, job_out); });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? kExitOk : kExitError;
  }
  return rc;
}

}  // namespace
}  // namespace ws

int main(int argc, char** argv) { return ws::Main(argc, argv); }

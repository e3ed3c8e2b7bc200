// Job specs and results as JSON, and the job runner behind `warpsmith job run`.
#include "orchestrator/job.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/files.h"
#include "evaluator/resources_json.h"

namespace ws {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

constexpr Verdict kVerdicts[] = {
    Verdict::kOk,      Verdict::kCompileError, Verdict::kPlanError,  Verdict::kCrashed,
    Verdict::kTimeout, Verdict::kWrongAnswer,  Verdict::kSuspicious, Verdict::kNotRun};

Result<Verdict> ParseVerdict(const std::string& name) {
  for (Verdict v : kVerdicts) {
    if (VerdictName(v) == name)
      return v;
  }
  return Status::Error("unknown verdict '{}'", name);
}

json LimitsJson(const DeviceLimits& l) {
  return {{"num_sms", l.num_sms},
          {"max_threads_per_block", l.max_threads_per_block},
          {"max_smem_per_block", l.max_smem_per_block},
          {"max_grid", {l.max_grid[0], l.max_grid[1], l.max_grid[2]}},
          {"max_cluster", l.max_cluster},
          {"max_workspace", l.max_workspace}};
}

DeviceLimits LimitsFrom(const json& j) {
  DeviceLimits l;
  l.num_sms = j.value("num_sms", l.num_sms);
  l.max_threads_per_block = j.value("max_threads_per_block", l.max_threads_per_block);
  l.max_smem_per_block = j.value("max_smem_per_block", l.max_smem_per_block);
  if (j.contains("max_grid") && j["max_grid"].size() == 3) {
    for (int i = 0; i < 3; ++i) l.max_grid[i] = j["max_grid"][i].get<int64_t>();
  }
  l.max_cluster = j.value("max_cluster", l.max_cluster);
  l.max_workspace = j.value("max_workspace", l.max_workspace);
  return l;
}

json DeviceJson(const DeviceInfo& d) {
  return {{"name", d.name},
          {"arch", d.arch},
          {"driver", d.driver},
          {"num_sms", d.num_sms},
          {"l2_bytes", d.l2_bytes},
          {"memory_bytes", d.memory_bytes},
          {"limits", LimitsJson(d.limits)}};
}

DeviceInfo DeviceFrom(const json& j) {
  DeviceInfo d;
  d.name = j.value("name", "");
  d.arch = j.value("arch", "");
  d.driver = j.value("driver", "");
  d.num_sms = j.value("num_sms", 0);
  d.l2_bytes = j.value("l2_bytes", int64_t{0});
  d.memory_bytes = j.value("memory_bytes", int64_t{0});
  d.limits = LimitsFrom(j.value("limits", json::object()));
  return d;
}

json CeilingsJson(const DeviceCeilings& c) {
  return {{"gpu", c.gpu},
          {"copy_bytes_per_s", c.copy_bytes_per_s},
          {"bf16_flops_per_s", c.bf16_flops_per_s},
          {"fp8_flops_per_s", c.fp8_flops_per_s},
          {"measured_at", c.measured_at}};
}

DeviceCeilings CeilingsFrom(const json& j) {
  DeviceCeilings c;
  c.gpu = j.value("gpu", "");
  c.copy_bytes_per_s = j.value("copy_bytes_per_s", 0.0);
  c.bf16_flops_per_s = j.value("bf16_flops_per_s", 0.0);
  c.fp8_flops_per_s = j.value("fp8_flops_per_s", 0.0);
  c.measured_at = j.value("measured_at", "");
  return c;
}

json EvalResultJson(const EvalResult& r) {
  json cases = json::array();
  for (const auto& c : r.cases) {
    json symbols = json::object();
    for (const auto& [k, v] : c.shape.symbols) symbols[k] = v;
    json jc = {{"kind", c.kind},
               {"shape", symbols},
               {"shape_source", c.shape.source},
               {"verdict", VerdictName(c.verdict)},
               {"message", c.message},
               {"sol_us", c.sol_us},
               {"bytes", c.bytes},
               {"flops", c.flops}};
    if (c.timing) {
      jc["timing"] = {{"median_us", c.timing->median_us}, {"min_us", c.timing->min_us},
                      {"p90_us", c.timing->p90_us},       {"mean_us", c.timing->mean_us},
                      {"stdev_us", c.timing->stdev_us},   {"iterations", c.timing->iterations},
                      {"graph", c.timing->graph}};
    }
    cases.push_back(std::move(jc));
  }
  json j = {{"verdict", VerdictName(r.verdict)},
            {"message", r.message},
            {"compile",
             {{"ok", r.compile.ok},
              {"log", r.compile.log},
              {"cubin_path", r.compile.cubin_path},
              {"hash", r.compile.hash},
              {"kernels", ResourcesToJson(r.compile.resources)},
              {"cached", r.compile.cached},
              {"sandbox_layers", r.compile.sandbox_layers}}},
            {"cases", cases},
            {"knobs", r.knobs},
            {"geomean_us", r.geomean_us},
            {"sol_fraction", r.sol_fraction},
            {"ran_on_gpu", r.ran_on_gpu},
            {"sandbox_layers", r.sandbox_layers},
            {"deep", r.deep},
            {"phase_seconds", r.phase_seconds},
            {"retries", r.retries},
            {"library_headers", r.library_headers}};
  j["device"] = r.device ? DeviceJson(*r.device) : json(nullptr);
  return j;
}

Result<EvalResult> EvalResultFrom(const json& j) {
  EvalResult r;
  WS_ASSIGN_OR_RETURN(r.verdict, ParseVerdict(j.at("verdict").get<std::string>()));
  r.message = j.value("message", "");
  const json c = j.value("compile", json::object());
  r.compile.ok = c.value("ok", false);
  r.compile.log = c.value("log", "");
  r.compile.cubin_path = c.value("cubin_path", "");
  r.compile.hash = c.value("hash", "");
  r.compile.cached = c.value("cached", false);
  r.compile.sandbox_layers = c.value("sandbox_layers", std::map<std::string, std::string>{});
  r.compile.resources = ResourcesFromJson(c.value("kernels", json::array()));
  for (const auto& jc : j.value("cases", json::array())) {
    CaseResult cr;
    cr.kind = jc.value("kind", "");
    const json shape = jc.value("shape", json::object());  // items() must not outlive it
    for (const auto& [k, v] : shape.items()) cr.shape.symbols[k] = v.get<int64_t>();
    cr.shape.source = jc.value("shape_source", "");
    WS_ASSIGN_OR_RETURN(cr.verdict, ParseVerdict(jc.value("verdict", "ok")));
    cr.message = jc.value("message", "");
    cr.sol_us = jc.value("sol_us", 0.0);
    cr.bytes = jc.value("bytes", 0.0);
    cr.flops = jc.value("flops", std::map<std::string, double>{});
    if (jc.contains("timing") && jc["timing"].is_object()) {
      const json& t = jc["timing"];
      Timing tm;
      tm.median_us = t.value("median_us", 0.0);
      tm.min_us = t.value("min_us", 0.0);
      tm.p90_us = t.value("p90_us", 0.0);
      tm.mean_us = t.value("mean_us", 0.0);
      tm.stdev_us = t.value("stdev_us", 0.0);
      tm.iterations = t.value("iterations", 0);
      tm.graph = t.value("graph", false);
      cr.timing = tm;
    }
    r.cases.push_back(std::move(cr));
  }
  if (j.contains("device") && j["device"].is_object())
    r.device = DeviceFrom(j["device"]);
  r.knobs = j.value("knobs", std::map<std::string, int64_t>{});
  r.geomean_us = j.value("geomean_us", 0.0);
  r.sol_fraction = j.value("sol_fraction", 0.0);
  r.ran_on_gpu = j.value("ran_on_gpu", false);
  r.sandbox_layers = j.value("sandbox_layers", std::map<std::string, std::string>{});
  r.deep = j.value("deep", std::map<std::string, std::string>{});
  r.phase_seconds = j.value("phase_seconds", std::map<std::string, double>{});
  r.retries = j.value("retries", std::vector<std::string>{});
  r.library_headers = j.value("library_headers", LibraryHeaders{});
  return r;
}

// The GPU this process may use, when CUDA_VISIBLE_DEVICES names exactly one ordinal.
std::optional<int> VisibleGpuIndex() {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  if (v == nullptr || *v == '\0')
    return std::nullopt;
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  if (end == v || *end != '\0' || n < 0)
    return std::nullopt;
  return static_cast<int>(n);
}

}  // namespace

std::string_view JobKindName(JobKind k) {
  return k == JobKind::kCompile ? "compile" : "gpu";
}

std::string JobSpecJson(const JobSpec& s) {
  json ceilings = json::array();
  for (const auto& c : s.ceilings) ceilings.push_back(CeilingsJson(c));
  return json{{"id", s.id},
              {"try", s.try_number},
              {"kind", JobKindName(s.kind)},
              {"problem", s.problem},
              {"problems_dir", s.problems_dir},
              {"source", s.source},
              {"library", s.library},
              {"source_name", s.source_name},
              {"arch", ArchName(s.arch)},
              {"params", s.params},
              {"knobs", s.knobs},
              {"compile_only", s.compile_only},
              {"time_bench", s.time_bench},
              {"include_hidden", s.include_hidden},
              {"include_bench", s.include_bench},
              {"timing_iterations", s.timing_iterations},
              {"deep", s.deep},
              {"ceilings", ceilings},
              {"device", s.device ? DeviceJson(*s.device) : json(nullptr)},
              {"workspace", s.workspace},
              {"result_path", s.result_path}}
      .dump();
}

Result<JobSpec> ParseJobSpec(const std::string& text) {
  try {
    json j = json::parse(text);
    JobSpec s;
    s.id = j.at("id").get<std::string>();
    s.try_number = j.value("try", 1);
    const std::string kind = j.value("kind", "gpu");
    if (kind != "compile" && kind != "gpu")
      return Status::Error("job spec: kind '{}' is neither compile nor gpu", kind);
    s.kind = kind == "compile" ? JobKind::kCompile : JobKind::kGpu;
    s.problem = j.at("problem").get<std::string>();
    s.problems_dir = j.value("problems_dir", "");
    s.source = j.value("source", "");
    s.library = j.value("library", "");
    s.source_name = j.value("source_name", "");
    WS_ASSIGN_OR_RETURN(s.arch, ParseArch(j.value("arch", "sm_90a")));
    s.params = j.value("params", std::map<std::string, std::string>{});
    s.knobs = j.value("knobs", std::map<std::string, int64_t>{});
    s.compile_only = j.value("compile_only", false);
    s.time_bench = j.value("time_bench", true);
    s.include_hidden = j.value("include_hidden", true);
    s.include_bench = j.value("include_bench", true);
    s.timing_iterations = j.value("timing_iterations", 0);
    s.deep = j.value("deep", false);
    for (const auto& c : j.value("ceilings", json::array())) s.ceilings.push_back(CeilingsFrom(c));
    if (j.contains("device") && j["device"].is_object())
      s.device = DeviceFrom(j["device"]);
    s.workspace = j.value("workspace", "");
    s.result_path = j.value("result_path", "");
    return s;
  } catch (const json::exception& e) {
    return Status::Error("job spec: {}", e.what());
  }
}

std::string JobResultJson(const JobResult& r) {
  json j = {{"job_id", r.job_id}, {"try", r.try_number},  {"ok", r.ok},
            {"error", r.error},   {"seconds", r.seconds}, {"node", r.node}};
  j["gpu_index"] = r.gpu_index ? json(*r.gpu_index) : json(nullptr);
  j["result"] = r.ok ? EvalResultJson(r.result) : json(nullptr);
  return j.dump();
}

Result<JobResult> ParseJobResult(const std::string& text) {
  try {
    json j = json::parse(text);
    JobResult r;
    r.job_id = j.at("job_id").get<std::string>();
    r.try_number = j.value("try", 1);
    r.ok = j.value("ok", false);
    r.error = j.value("error", "");
    r.seconds = j.value("seconds", 0.0);
    r.node = j.value("node", "");
    if (j.contains("gpu_index") && j["gpu_index"].is_number_integer())
      r.gpu_index = j["gpu_index"].get<int>();
    if (r.ok) {
      WS_ASSIGN_OR_RETURN(r.result, EvalResultFrom(j.at("result")));
    }
    return r;
  } catch (const json::exception& e) {
    return Status::Error("job result: {}", e.what());
  }
}

JobSpec JobFromRequest(const EvalRequest& req, JobKind kind, const std::string& problems_dir) {
  JobSpec s;
  s.kind = kind;
  s.problem = req.spec != nullptr ? req.spec->name : "";
  s.problems_dir = problems_dir;
  s.source = req.source;
  s.library = req.library;
  s.source_name = req.source_name;
  s.arch = req.arch;
  s.params = req.params;
  s.knobs = req.knobs;
  s.compile_only = req.compile_only || kind == JobKind::kCompile;
  s.time_bench = req.time_bench;
  s.include_hidden = req.include_hidden;
  s.include_bench = req.include_bench;
  s.timing_iterations = req.timing_iterations;
  s.deep = req.deep;
  if (req.ceilings)
    s.ceilings.push_back(*req.ceilings);
  s.device = req.device;
  return s;
}

std::string HostName() {
  // Inside a Slurm job, the node's name as Slurm knows it (squeue shows the same).
  if (const char* n = std::getenv("SLURMD_NODENAME"); n != nullptr && *n != '\0')
    return n;
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0)
    return "";
  return buf;
}

std::string SelfExecutable() {
  std::error_code ec;
  return fs::read_symlink("/proc/self/exe", ec).string();
}

JobResult RunJobInProcess(const JobSpec& spec, const EvaluatorOptions& base,
                          const JobEvalFn& eval) {
  JobResult out;
  out.job_id = spec.id;
  out.try_number = spec.try_number;
  out.node = HostName();
  out.gpu_index = VisibleGpuIndex();
  auto fail = [&](const Status& s) {
    out.ok = false;
    out.error = s.message();
    return out;
  };
  Result<ProblemSpec> problem = LoadProblem(spec.problems_dir + "/" + spec.problem + "/spec.json");
  if (!problem.ok())
    return fail(problem.status());
  EvalRequest req;
  req.spec = &*problem;
  req.source = spec.source;
  req.library = spec.library;
  req.source_name = spec.source_name;
  req.arch = spec.arch;
  req.params = spec.params;
  req.knobs = spec.knobs;
  req.compile_only = spec.compile_only || spec.kind == JobKind::kCompile;
  req.time_bench = spec.time_bench;
  req.include_hidden = spec.include_hidden;
  req.include_bench = spec.include_bench;
  req.timing_iterations = spec.timing_iterations;
  req.deep = spec.deep;
  EvaluatorOptions opts = base;
  if (!spec.workspace.empty())
    opts.workspace = spec.workspace;
  req.device = spec.device;
  if (!req.compile_only && !req.device && !spec.ceilings.empty()) {
    // The ceilings of this job's GPU model, when the store knew them.
    std::string why;
    Result<std::optional<DeviceInfo>> device = ProbeDevice(opts, &why);
    if (device.ok() && *device) {
      req.device = **device;
    }
  }
  for (const auto& c : spec.ceilings) {
    if (req.device && c.gpu == req.device->name)
      req.ceilings = c;
  }
  const auto t0 = std::chrono::steady_clock::now();
  Result<EvalResult> r = eval ? eval(req, opts) : Evaluate(req, opts);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!r.ok())
    return fail(r.status());
  out.ok = true;
  out.result = std::move(*r);
  return out;
}

Status RunJobFile(const std::string& spec_path, const std::string& out_path,
                  const EvaluatorOptions& base) {
  WS_ASSIGN_OR_RETURN(std::string text, ReadFile(spec_path));
  WS_ASSIGN_OR_RETURN(JobSpec spec, ParseJobSpec(text));
  const std::string path = out_path.empty() ? spec.result_path : out_path;
  if (path.empty())
    return Status::Error("{}: no result path given", spec_path);
  if (const char* d = std::getenv("WARPSMITH_JOB_DELAY_S"); d != nullptr) {
    std::this_thread::sleep_for(std::chrono::duration<double>(std::atof(d)));
  }
  JobResult r = RunJobInProcess(spec, base);
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  return WriteFileAtomic(path, JobResultJson(r));
}

}  // namespace ws

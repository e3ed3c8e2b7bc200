// Evaluate(): plan -> compile -> reference runner and candidate runner -> checker -> timings.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <future>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "evaluator/cost.h"
#include "evaluator/evaluator.h"
#include "evaluator/gpu_lock.h"
#include "evaluator/internal.h"
#include "evaluator/runner/commands.h"
#include "evaluator/runner/job.h"
#include "evaluator/runner/watchdog.h"
#include "evaluator/sanitizer.h"
#include "sandbox/sandbox.h"

namespace ws {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kOk: return "ok";
    case Verdict::kCompileError: return "compile_error";
    case Verdict::kPlanError: return "plan_error";
    case Verdict::kCrashed: return "crashed";
    case Verdict::kTimeout: return "timeout";
    case Verdict::kWrongAnswer: return "wrong_answer";
    case Verdict::kSuspicious: return "suspicious";
    case Verdict::kNotRun: return "not_run";
  }
  return "unknown";
}

namespace {

// A time this far under the measured speed-of-light bound is not credible: measured ceilings
// (a device copy, a library GEMM) sit a little under the hardware's, so a small margin is honest.
constexpr double kSuspiciousFraction = 1.15;

// `problems verify` compares the host's input generation with the device's up to this many
// input elements per shape (the host takes ~100 ns an element).
constexpr int64_t kHostRegenerateElems = int64_t{1} << 24;

// A bench shape's allowance on top of case_timeout_s, in each runner.
constexpr double kBenchMarginS = 10;

// Bench shapes whose speed-of-light time is under this are timed as CUDA-graph replays.
constexpr double kGraphBelowUs = 20;
// Warm-up of each timed case, in wall time, beyond its 3 warm-up runs: an idle H200 (345 MHz) took
// a short kernel's first timed runs at low clocks (a 22 us decode GEMM read 26 us as the first
// evaluation of a sweep, session 13).
constexpr int kWarmupMs = 100;

std::string RunnerPath(const EvaluatorOptions& opts) {
  return opts.runner.empty() ? SelfDir() + "/ws_runner" : opts.runner;
}

uint64_t SecureRandom64() {
  std::random_device rd;  // getrandom(2) on Linux
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

// SplitMix64's finalizer: a bijection that spreads every input bit over the output.
uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

Result<DeviceInfo> ParseDevice(const json& d) {
  try {
    DeviceInfo info;
    info.name = d.at("name").get<std::string>();
    info.arch = d.value("arch", "");
    info.driver = d.value("driver", "");
    info.num_sms = d.at("num_sms").get<int>();
    info.l2_bytes = d.value("l2_bytes", int64_t{0});
    info.memory_bytes = d.value("memory_bytes", int64_t{0});
    info.limits.num_sms = info.num_sms;
    info.limits.max_threads_per_block = d.value("max_threads_per_block", 1024);
    info.limits.max_smem_per_block = d.value("max_smem_per_block", int64_t{227 * 1024});
    if (d.contains("max_grid") && d["max_grid"].size() == 3) {
      for (int i = 0; i < 3; ++i) info.limits.max_grid[i] = d["max_grid"][i].get<int64_t>();
    }
    return info;
  } catch (const json::exception& e) {
    return Status::Error("runner reported a malformed device: {}", e.what());
  }
}


// The bytes and FLOPs the problem states for one shape, and the speed-of-light time.
struct Cost {
  double bytes = 0;
  std::map<std::string, double> flops;
  double sol_us = 0;
};

Result<Cost> ShapeCost(const ProblemSpec& spec, const SymbolTable& symbols,
                       const std::optional<DeviceCeilings>& ceilings) {
  Cost c;
  WS_ASSIGN_OR_RETURN(int64_t bytes, EvalExpr(spec.cost_bytes, symbols));
  c.bytes = static_cast<double>(bytes);
  for (const auto& [cls, expr] : spec.cost_flops) {
    WS_ASSIGN_OR_RETURN(int64_t f, EvalExpr(expr, symbols));
    c.flops[cls] = static_cast<double>(f);
  }
  if (ceilings) c.sol_us = SpeedOfLightUs(c.bytes, c.flops, *ceilings);
  return c;
}

struct TrustedReference {
  std::string path;
  Plan plan;
  CompileResult compile;
};

CompileOptions CompileOptionsFor(const EvaluatorOptions& opts) {
  CompileOptions copts;
  copts.cache_dir = opts.workspace + "/cache";
  copts.timeout_s = opts.compile_timeout_s;
  copts.compile_worker = opts.compile_worker;
  return copts;
}

Result<TrustedReference> CompileReference(const ProblemSpec& spec,
                                          const std::map<std::string, std::string>& params,
                                          Arch arch, const CompileOptions& copts) {
  TrustedReference ref;
  ref.path = spec.dir + "/" + spec.gpu_reference;
  WS_ASSIGN_OR_RETURN(std::string source, ReadFile(ref.path));
  auto plan = ParsePlan(source);
  if (!plan.ok()) return plan.status().Context(ref.path);
  WS_RETURN_IF_ERROR(ValidatePlan(*plan, spec).Context(ref.path));
  ref.plan = std::move(*plan);
  auto defines = ParamDefines(spec, params);
  for (const auto& [k, v] : ref.plan.knobs) defines[k] = std::to_string(v.front());
  // The judge's own library (problems/include, "ref/..."), never the candidates' device library.
  WS_ASSIGN_OR_RETURN(ref.compile,
                      Compile({source, arch, defines, {ReferenceLibraryDir(spec)}}, copts));
  if (!ref.compile.ok) {
    return Status::Error("the GPU reference {} does not compile: {}", ref.path, ref.compile.log);
  }
  return ref;
}

struct PlannedCase {
  std::string id;
  std::string kind;
  Shape shape;
  SymbolTable symbols;
  ResolvedPlan plan;
  Cost cost;
  std::vector<uint64_t> seeds;
  json timing;            // null for correctness-only cases
  // The input seeds of the audited and the last timed run (fresh inputs: runner::FreshRunSeed).
  uint64_t audit_seed = 0, last_seed = 0;
  // The reference runs this case is checked against: (run tag, reference case suffix, seed).
  struct CheckedRun {
    std::string tag, ref;
    uint64_t seed;
  };
  std::vector<CheckedRun> CheckedRuns() const {
    std::vector<CheckedRun> runs = {{"check", "0", seeds[0]}};
    if (!timing.is_null()) {
      runs.push_back({"audit", "audit", audit_seed});
      runs.push_back({"last", "last", last_seed});
    }
    return runs;
  }
  // Test and hidden shapes run a second time, on other inputs and under another output poison
  // (a case of its own, "<id>#2", right after the first): a result that depends on what the
  // outputs held before the run (an uninitialised read, a race against the poison) or on state
  // kept from an earlier launch fails one of the two.
  std::optional<uint64_t> second_seed;
  // Outputs both runners digest instead of dumping (DigestedOutputs: exact outputs of bench
  // shapes).
  std::vector<std::string> digested;
  // Outputs written back as a keyed sample of their rows in the audited and the last run, in both
  // runners (SampledOutputRows); the check run writes them whole.
  SampledOutputs sample;
  // The job's "sample" for runs `runs` of a case (null when nothing is sampled).
  json SampleJson(std::initializer_list<const char*> runs) const {
    if (sample.row_bytes.empty()) return nullptr;
    json outputs = json::array();
    for (const auto& [name, row_bytes] : sample.row_bytes) {
      outputs.push_back({{"name", name}, {"row_bytes", row_bytes}});
    }
    return {{"key", fmt::format("{:016x}", sample.key)},
            {"every", sample.every},
            {"runs", runs},
            {"outputs", outputs}};
  }
  // The candidate runner's allowances (the job's budget_s) for the case and for its second run;
  // the runner's wall-clock limit is their sum over all cases plus the start-up allowance.
  double budget_s = 0;
  double second_budget_s = 0;
  double ref_budget_s = 0;  // each of the reference's cases for this shape
};

}  // namespace

// A launch argument's tensor map, whole: each argument carries its own map, so the job's cases
// stay self-contained (docs/runner-protocol.md).
static json TensorMapJson(const std::string& name, const ResolvedPlan& plan) {
  const ResolvedTensorMap& m = plan.tensor_maps.at(name);
  json dims = json::array(), box = json::array(), strides = json::array();
  for (int d = 0; d < m.spec.rank; ++d) {
    dims.push_back(m.spec.dims[d]);
    box.push_back(m.spec.box[d]);
    strides.push_back(m.spec.element_strides[d]);
  }
  return {{"name", name},       {"tensor", m.tensor},
          {"dims", dims},       {"box", box},
          {"element_strides", strides}, {"swizzle", m.spec.swizzle},
          {"oob_fill", m.spec.oob_nan ? "nan" : "zero"}, {"l2_promotion", m.spec.l2_promotion}};
}

json LaunchesJson(const ResolvedPlan& plan) {
  json arr = json::array();
  for (const auto& l : plan.launches) {
    json args = json::array();
    for (const auto& a : l.args) {
      switch (a.kind) {
        case PlanArg::Kind::kTensor: args.push_back({{"tensor", a.tensor}}); break;
        case PlanArg::Kind::kWorkspace: args.push_back({{"workspace", true}}); break;
        case PlanArg::Kind::kI32: args.push_back({{"i32", a.value}}); break;
        case PlanArg::Kind::kI64: args.push_back({{"i64", a.value}}); break;
        case PlanArg::Kind::kTensorMap: args.push_back({{"tensor_map",
                                                         TensorMapJson(a.tensor, plan)}});
          break;
      }
    }
    json launch = {{"kernel", l.kernel},
                   {"grid", {l.grid[0], l.grid[1], l.grid[2]}},
                   {"block", {l.block[0], l.block[1], l.block[2]}},
                   {"cluster", {l.cluster[0], l.cluster[1], l.cluster[2]}},
                   {"smem", l.smem},
                   {"args", args}};
    if (l.pdl) launch["pdl"] = true;
    arr.push_back(std::move(launch));
  }
  return arr;
}

Result<json> TensorsJson(const ProblemSpec& spec, const SymbolTable& symbols) {
  json arr = json::array();
  for (const auto& t : spec.tensors) {
    WS_ASSIGN_OR_RETURN(int64_t numel, TensorNumel(t, symbols));
    json j = {{"name", t.name},
              {"dtype", std::string(DTypeName(t.dtype))},
              {"numel", numel},
              {"role", t.role == TensorRole::kInput ? "input" : "output"}};
    if (t.role == TensorRole::kInput) {
      // The same fields GenerateInput uses on the host, so a checker sees the case's inputs.
      WS_ASSIGN_OR_RETURN(auto fields, InitJobFields(t, symbols));
      j["init"] = {{"dist", t.init.dist}};
      for (const auto& [key, value] : fields.ints) j["init"][key] = value;
      for (const auto& [key, value] : fields.reals) j["init"][key] = value;
    }
    arr.push_back(j);
  }
  return arr;
}

namespace {

Result<int64_t> InputBytes(const ProblemSpec& spec, const SymbolTable& symbols) {
  int64_t total = 0;
  for (const auto& t : spec.tensors) {
    if (t.role != TensorRole::kInput) continue;
    WS_ASSIGN_OR_RETURN(int64_t n, TensorNumel(t, symbols));
    total += n * DTypeSize(t.dtype);
  }
  return total;
}

struct RunnerOutcome {
  SandboxResult process;
  std::map<std::string, json> cases;  // by id, the cases the runner finished
  double startup_s = 0;   // the runner's own start-up, before it asked for the GPU
  double gpu_wait_s = 0;  // its wait for the GPU lock
};

// A runner's own account of its time (runner/run.cc), added to phase_seconds: runner_startup,
// gpu_wait, and per part of its cases runner_case_<part> (setup, check_run, dump, timing, rehash,
// total).
void AddRunnerSeconds(const RunnerOutcome& r, EvalResult* res) {
  res->phase_seconds["runner_startup"] += r.startup_s;
  res->phase_seconds["gpu_wait"] += r.gpu_wait_s;
  for (const auto& [id, c] : r.cases) {
    if (!c.contains("seconds") || !c["seconds"].is_object()) continue;
    for (const auto& [part, s] : c["seconds"].items()) {
      if (s.is_number()) res->phase_seconds["runner_case_" + part] += s.get<double>();
    }
  }
}

// A runner's sandbox: the default layers plus the GPU's device nodes and driver files, `scratch`
// read-write and `read_only` (the cubins it loads) read-only. RLIMIT_AS stays unlimited (CUDA
// reserves huge virtual ranges); host RAM is bounded by the cgroup where there is one.
Status ConfineRunner(SandboxSpec* spec, const std::string& scratch,
                     const std::vector<std::string>& read_only) {
  WS_ASSIGN_OR_RETURN(spec->policy, DefaultSandboxPolicy());
  spec->policy.gpu = true;
  spec->policy.scratch_dir = scratch;
  spec->policy.read_only_paths = read_only;
  spec->limits.address_space_bytes = 0;
  spec->limits.cgroup_memory_bytes = int64_t{64} << 30;
  spec->limits.cgroup_pids = 1024;
  return Status::Ok();
}

// Deep mode: the runner runs inside one of compute-sanitizer's tools, in the same sandbox.
struct SanitizerWrap {
  std::string sanitizer;             // canonical path
  SanitizerTool tool = SanitizerTool::kMemcheck;
  std::vector<std::string> kernels;  // the plan's
};

// The lock name of the GPU the runners will use: opts.visible_devices, else ours.
std::string RunnerGpuLockName(const EvaluatorOptions& opts) {
  const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
  return GpuLockName(!opts.visible_devices.empty() ? opts.visible_devices : env ? env : "");
}

Result<RunnerOutcome> RunRunner(const EvaluatorOptions& opts, const std::string& job_path,
                                json job, double wall_seconds,
                                const SanitizerWrap* wrap = nullptr) {
  // The runner locks the GPU after its start-up (gpu_lock.h); the sandbox's limit allows for the
  // wait, the case budgets (the runner's own watchdog) start after it.
  std::string gpu_lock;
  if (!opts.gpu_lock_dir.empty()) {
    WS_ASSIGN_OR_RETURN(gpu_lock, PrepareGpuLock(opts.gpu_lock_dir, RunnerGpuLockName(opts)));
    job["gpu_lock"] = gpu_lock;
    job["gpu_lock_wait_s"] = opts.gpu_lock_wait_s;
    wall_seconds += opts.gpu_lock_wait_s;
  }
  WS_RETURN_IF_ERROR(WriteFileAtomic(job_path, job.dump()));
  SandboxSpec spec;
  const std::string abs_job = fs::absolute(job_path).lexically_normal().string();
  spec.argv = {RunnerPath(opts), "run", abs_job};
  std::vector<std::string> read_only;
  // A library baseline's job has no cubin.
  if (job.contains("cubin") && job["cubin"].is_string() && job["cubin"] != "") {
    read_only.push_back(job["cubin"]);
  }
  if (!gpu_lock.empty()) read_only.push_back(gpu_lock);
  if (wrap) {
    // The sandbox binds the program it starts; here that is the sanitizer, so the runner and
    // the sanitizer's own folder are bound read-only by name.
    read_only.push_back(fs::absolute(spec.argv[0]).lexically_normal().string());
    for (const auto& p : SanitizerReadOnlyPaths(wrap->sanitizer)) read_only.push_back(p);
    for (const auto& [k, v] : SanitizerEnv()) spec.env_set[k] = v;
    spec.argv = SanitizerArgv(wrap->sanitizer, wrap->tool, wrap->kernels, spec.argv);
  }
  WS_RETURN_IF_ERROR(ConfineRunner(&spec, fs::path(abs_job).parent_path().string(), read_only));
  if (!opts.visible_devices.empty()) spec.env_set["CUDA_VISIBLE_DEVICES"] = opts.visible_devices;
  spec.limits.wall_seconds = wall_seconds;
  spec.limits.open_files = 1024;
  spec.limits.output_cap_bytes = 1 << 20;
  WS_ASSIGN_OR_RETURN(SandboxResult proc, RunSandboxed(spec));
  if (!proc.signaled && !proc.timed_out && proc.exit_code == runner::kExitGpuBusy) {
    // Not the candidate's doing: other evaluations held this GPU the whole time.
    return Status::Error("the GPU stayed busy: {}", proc.stderr_data.substr(0, 500));
  }
  if (!proc.signaled && !proc.timed_out && proc.exit_code == runner::kExitNoTurn) {
    // The evaluator's own gate said no (the reference failed) or was never opened.
    return Status::Error("the candidate runner got no turn: {}", proc.stderr_data.substr(0, 500));
  }
  RunnerOutcome out;
  out.process = std::move(proc);
  auto text = ReadFile(job["result"].get<std::string>());
  if (text.ok()) {
    json r = json::parse(*text, nullptr, false);
    if (r.is_object() && r.contains("cases") && r["cases"].is_array()) {
      for (const auto& c : r["cases"]) {
        if (c.is_object() && c.contains("id") && c["id"].is_string()) out.cases[c["id"]] = c;
      }
    }
    if (r.is_object() && r.contains("seconds") && r["seconds"].is_object()) {
      const json& s = r["seconds"];
      if (s.contains("startup") && s["startup"].is_number()) out.startup_s = s["startup"].get<double>();
      if (s.contains("gpu_wait") && s["gpu_wait"].is_number()) out.gpu_wait_s = s["gpu_wait"].get<double>();
    }
  }
  return out;
}

struct ScratchCleanup {
  std::string dir;
  bool keep;
  ~ScratchCleanup() {
    std::error_code ec;
    if (!keep) fs::remove_all(dir, ec);
  }
};

// A library baseline's cuBLASLt workspace (the runner allocates it, guarded like any workspace).
constexpr int64_t kLibraryWorkspaceBytes = int64_t{32} << 20;

// The runner's library call for one shape of a library baseline ("cublaslt:<op>",
// evaluator/runner/library_baselines.h): the spec's inputs in order, then its output, checked
// against the op: A [M,K], B [N,K], (fp8_rowwise_gemm: a_scale [M] f32, b_scale [N] f32,) D [M,N].
Result<json> LibraryCall(const ProblemSpec& spec, const SymbolTable& symbols,
                         const std::string& baseline) {
  if (!KnownLibraryBaseline(baseline)) {
    return Status::Error("unknown library baseline '{}'", baseline);
  }
  const std::string op = baseline.substr(baseline.find(':') + 1);
  const bool fp8 = op == "fp8_rowwise_gemm";
  std::vector<const TensorSpec*> args;
  for (const auto& t : spec.tensors) {
    if (t.role == TensorRole::kInput) args.push_back(&t);
  }
  for (const auto& t : spec.tensors) {
    if (t.role == TensorRole::kOutput) args.push_back(&t);
  }
  const auto misfit = [&] {
    return Status::Error("{}: its tensors do not fit {} (inputs A [M,K], B [N,K]{}, output D [M,N])",
                         spec.name, baseline, fp8 ? ", a_scale [M] f32, b_scale [N] f32" : "");
  };
  if (args.size() != (fp8 ? 5u : 3u)) return misfit();
  std::vector<std::vector<int64_t>> dims;
  for (const TensorSpec* t : args) {
    WS_ASSIGN_OR_RETURN(auto d, TensorDims(*t, symbols));
    const bool scale = fp8 && (t == args[2] || t == args[3]);
    if (d.size() != (scale ? 1u : 2u)) return misfit();
    dims.push_back(std::move(d));
  }
  const DType in = fp8 ? DType::kFP8E4M3 : DType::kBF16;
  const int64_t m = dims[0][0], k = dims[0][1], n = dims[1][0];
  bool fits = args[0]->dtype == in && args[1]->dtype == in && args.back()->dtype == DType::kBF16 &&
              dims[1][1] == k && dims.back() == std::vector<int64_t>{m, n};
  if (fp8) {
    fits = fits && args[2]->dtype == DType::kF32 && args[3]->dtype == DType::kF32 &&
           dims[2] == std::vector<int64_t>{m} && dims[3] == std::vector<int64_t>{n};
  }
  if (!fits) return misfit();
  json names = json::array();
  for (const TensorSpec* t : args) names.push_back(t->name);
  return json{{"op", op}, {"m", m}, {"n", n}, {"k", k}, {"tensors", names}};
}

Timing ParseTiming(const json& t) {
  Timing tm;
  tm.median_us = t.value("median_us", 0.0);
  tm.min_us = t.value("min_us", 0.0);
  tm.p90_us = t.value("p90_us", 0.0);
  tm.mean_us = t.value("mean_us", 0.0);
  tm.stdev_us = t.value("stdev_us", 0.0);
  tm.iterations = t.contains("times_us") ? static_cast<int>(t["times_us"].size()) : 0;
  tm.graph = t.value("graph", false);
  return tm;
}

}  // namespace

Result<std::string> MakeScratch(const EvaluatorOptions& opts, int64_t need_bytes) {
  const std::string fallback = opts.workspace + "/scratch";
  const bool chosen = !opts.scratch_root.empty();
  std::string root =
      chosen ? opts.scratch_root : ChooseScratchRoot({"/dev/shm"}, need_bytes, fallback);
  std::error_code ec;
  if (!chosen && root != fallback) {
    // One folder per user, private: other users of the host must not read the dumps.
    root = fmt::format("{}/warpsmith-{}", root, ::getuid());
    fs::create_directory(root, ec);
    const bool dir = !ec && fs::is_directory(fs::symlink_status(root, ec));
    // Fails (and falls back) on a folder another user made.
    if (dir) fs::permissions(root, fs::perms::owner_all, ec);
    if (!dir || ec) root = fallback;
  }
  std::string scratch = fmt::format("{}/{:016x}", root, SecureRandom64());
  fs::create_directories(scratch, ec);
  if (ec) return Status::Error("cannot create {}: {}", scratch, ec.message());
  // Private whatever the root (a scratch_root may be shared): the dumps hold hidden-shape outputs.
  fs::permissions(scratch, fs::perms::owner_all, ec);
  if (ec) return Status::Error("cannot make {} private: {}", scratch, ec.message());
  return scratch;
}

std::map<std::string, std::string> ParamDefines(const ProblemSpec& spec,
                                                const std::map<std::string, std::string>& params) {
  std::map<std::string, std::string> defs;
  for (const auto& p : spec.params) {
    std::string upper;
    for (char c : p.name) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    auto it = params.find(p.name);
    const std::string& chosen = it == params.end() ? p.default_value : it->second;
    for (size_t i = 0; i < p.values.size(); ++i) {
      std::string v;
      for (char c : p.values[i]) {
        v += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::toupper(c)) : '_';
      }
      defs[fmt::format("WS_{}_{}", upper, v)] = std::to_string(i);
      if (p.values[i] == chosen) defs["WS_" + upper] = std::to_string(i);
    }
  }
  return defs;
}

Result<std::optional<DeviceInfo>> ProbeDevice(const EvaluatorOptions& opts, std::string* why_none) {
  auto none = [&](std::string why) -> Result<std::optional<DeviceInfo>> {
    if (why_none) *why_none = std::move(why);
    return std::optional<DeviceInfo>();
  };
  if (!fs::exists("/dev/nvidiactl")) return none("no NVIDIA device nodes (/dev/nvidiactl)");
  std::string runner = RunnerPath(opts);
  if (!fs::exists(runner)) return Status::Error("the runner {} is missing; build it first", runner);
  SandboxSpec spec;
  spec.argv = {runner, "devices"};
  WS_RETURN_IF_ERROR(ConfineRunner(&spec, "", {}));
  spec.limits.wall_seconds = 60;
  WS_ASSIGN_OR_RETURN(SandboxResult r, RunSandboxed(spec));
  if (r.timed_out || r.signaled || r.exit_code != 0) {
    std::string err = r.stderr_data.substr(0, 500);
    while (!err.empty() && std::isspace(static_cast<unsigned char>(err.back()))) err.pop_back();
    return none(fmt::format("the runner found no usable GPU ({}{}{})", r.Describe(),
                            err.empty() ? "" : ": ", err));
  }
  json j = json::parse(r.stdout_data, nullptr, false);
  if (!j.is_object() || !j.contains("devices") || !j["devices"].is_array() || j["devices"].empty()) {
    return none("the runner listed no devices");
  }
  WS_ASSIGN_OR_RETURN(DeviceInfo info, ParseDevice(j["devices"][0]));
  return std::optional<DeviceInfo>(std::move(info));
}

Result<DeviceCeilings> MeasureCeilings(const EvaluatorOptions& opts) {
  SandboxSpec spec;
  spec.argv = {RunnerPath(opts), "probe"};
  WS_RETURN_IF_ERROR(ConfineRunner(&spec, "", {}));
  spec.limits.wall_seconds = 300;
  // The probe times: alone on the GPU, from before the runner starts.
  WS_ASSIGN_OR_RETURN(FileLock gpu, AcquireGpuLock(opts.gpu_lock_dir, RunnerGpuLockName(opts)));
  WS_ASSIGN_OR_RETURN(SandboxResult r, RunSandboxed(spec));
  if (r.timed_out || r.signaled || r.exit_code != 0) {
    return Status::Error("device probe failed ({}): {}", r.Describe(), r.stderr_data.substr(0, 2000));
  }
  json j = json::parse(r.stdout_data, nullptr, false);
  if (!j.is_object()) return Status::Error("device probe printed malformed JSON");
  DeviceCeilings c;
  c.gpu = j.value("gpu", "");
  c.copy_bytes_per_s = j.value("copy_bytes_per_s", 0.0);
  c.bf16_flops_per_s = j.value("bf16_flops_per_s", 0.0);
  c.fp8_flops_per_s = j.value("fp8_flops_per_s", 0.0);
  if (c.gpu.empty() || c.copy_bytes_per_s <= 0) {
    return Status::Error("device probe gave no copy bandwidth: {}", r.stdout_data.substr(0, 500));
  }
  return c;
}

uint64_t DerivedInputSeed(uint64_t seed, std::string_view case_id, int set) {
  uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a over the case id: stable across builds
  for (unsigned char c : case_id) h = (h ^ c) * 0x100000001B3ull;
  return Mix64(Mix64(seed ^ h) + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(set + 2));
}

Result<EvalResult> Evaluate(const EvalRequest& req, const EvaluatorOptions& opts) {
  if (!req.spec) return Status::Error("Evaluate: no problem given");
  const ProblemSpec& spec = *req.spec;
  EvalResult res;
  using Clock = std::chrono::steady_clock;
  const auto t_start = Clock::now();
  auto t_phase = t_start;
  // Closes the current phase under `name` (and keeps the running total up to date).
  auto phase = [&](const char* name) {
    auto now = Clock::now();
    res.phase_seconds[name] += std::chrono::duration<double>(now - t_phase).count();
    res.phase_seconds["total"] = std::chrono::duration<double>(now - t_start).count();
    t_phase = now;
  };
  // Deep mode's tools, each "not run: <why>", when deep mode was asked for.
  auto deep_not_run = [&](const std::string& why) {
    if (!req.deep) return;
    for (SanitizerTool t : kDeepTools) res.deep[std::string(SanitizerToolName(t))] = "not run: " + why;
  };
  auto reject = [&](Verdict v, std::string msg, std::string deep_why = "") -> Result<EvalResult> {
    res.verdict = v;
    res.message = std::move(msg);
    deep_not_run(deep_why.empty() ? fmt::format("the verdict is {}", VerdictName(v)) : deep_why);
    return res;
  };

  // 1. The plan. A library baseline ("cublaslt:<op>") has none and compiles nothing: the runner
  // makes the call on each case's tensors, in a workspace it allocates.
  const bool library = !req.library.empty();
  Result<Plan> plan = ParsePlan(req.source);
  if (library) {
    if (!KnownLibraryBaseline(req.library)) {
      return Status::Error("unknown library baseline '{}'", req.library);
    }
    plan = Plan{};
    plan->workspace_bytes = std::to_string(kLibraryWorkspaceBytes);
  }
  if (!plan.ok()) return reject(Verdict::kPlanError, plan.status().message());
  if (Status s = ValidatePlan(*plan, spec); !s.ok()) return reject(Verdict::kPlanError, s.message());
  for (const auto& [name, allowed] : plan->knobs) {
    auto it = req.knobs.find(name);
    int64_t v = it == req.knobs.end() ? allowed.front() : it->second;
    if (std::find(allowed.begin(), allowed.end(), v) == allowed.end()) {
      return reject(Verdict::kPlanError,
                    fmt::format("knob {}={} is not one of the plan's values", name, v));
    }
    res.knobs[name] = v;
  }
  for (const auto& [name, _] : req.knobs) {
    if (!plan->knobs.count(name)) {
      return reject(Verdict::kPlanError, fmt::format("knob '{}' is not declared by the plan", name));
    }
  }

  // Every shape the evaluation may run, in the order their failures are reported.
  std::vector<std::pair<std::string, const Shape*>> shapes;
  for (const auto& s : spec.test_shapes) shapes.emplace_back("test", &s);
  if (req.include_hidden) {
    for (const auto& s : spec.hidden_shapes) shapes.emplace_back("hidden", &s);
  }
  if (req.include_bench) {
    for (const auto& s : spec.bench_shapes) {
      if (!req.bench_where.empty()) {
        auto on = EvalExpr(req.bench_where, BindSymbols(spec, s, req.params));
        if (!on.ok()) {
          return Status::Error("bench_where '{}': {}", req.bench_where, on.status().message());
        }
        if (*on == 0) continue;
      }
      shapes.emplace_back("bench", &s);
    }
    if (!req.bench_where.empty() &&
        std::none_of(shapes.begin(), shapes.end(), [](const auto& k) { return k.first == "bench"; })) {
      return Status::Error("bench_where '{}' holds at none of {}'s bench shapes", req.bench_where,
                           spec.name);
    }
  }
  auto shape_label = [&](const std::string& kind, const Shape& s, size_t index) {
    // Hidden shapes are never named: their dims must not reach an agent.
    return kind == "hidden" ? fmt::format("hidden shape #{}", index)
                            : fmt::format("{} shape {{{}}}", kind, ShapeText(spec, s));
  };

  // A plan that cannot be resolved for some shape (with the default device's limits) is rejected
  // before anything is compiled.
  DeviceLimits default_limits;
  for (size_t i = 0; i < shapes.size(); ++i) {
    SymbolTable sym = BindSymbols(spec, *shapes[i].second, req.params);
    auto rp = ResolvePlan(*plan, spec, sym, res.knobs, default_limits);
    if (rp.ok() && library) {
      // The op must fit the problem's tensors at every shape.
      if (auto call = LibraryCall(spec, sym, req.library); !call.ok()) rp = call.status();
    }
    if (!rp.ok()) {
      return reject(Verdict::kPlanError, fmt::format("{}: {}", shape_label(shapes[i].first,
                                                                           *shapes[i].second, i),
                                                     rp.status().message()));
    }
  }

  // 2. Compile.
  std::map<std::string, std::string> defines = ParamDefines(spec, req.params);
  for (const auto& [k, v] : res.knobs) defines[k] = std::to_string(v);
  const CompileOptions copts = CompileOptionsFor(opts);
  if (library) {
    res.compile.ok = true;
    res.compile.hash = req.library;
  } else {
    // Candidates may include the trusted device library; the trusted references may not.
    const std::string library = KernelLibraryDir(opts);
    res.library_headers = LibraryClosure(req.source, library);
    WS_ASSIGN_OR_RETURN(res.compile, Compile({req.source, req.arch, defines, {library}}, copts));
  }
  phase("compile");
  if (!res.compile.sandbox_layers.empty()) {
    res.sandbox_layers = res.compile.sandbox_layers;
    res.sandbox_layers["stage"] = "compile";
  }
  if (!res.compile.ok) return reject(Verdict::kCompileError, res.compile.log);
  // The plan's argument lists against the kernels' parameters, as the runner will check them on
  // the GPU: found here, a mismatch costs no GPU time and shows in compile-only runs. A cubin
  // this reader cannot parse is left to the runner's check.
  if (!library) {
    if (auto bytes = ReadFile(res.compile.cubin_path); bytes.ok()) {
      if (auto params = CubinKernelParams(*bytes); params.ok()) {
        if (std::string m = PlanCubinMismatch(*plan, spec, *params); !m.empty()) {
          return reject(Verdict::kPlanError, m);
        }
      }
    }
  }
  if (req.compile_only) {
    return reject(Verdict::kNotRun,
                  fmt::format("compiled for {}; plan valid; not run (compile only)",
                              ArchName(req.arch)),
                  "compile only");
  }

  // 3. A GPU?
  std::string why = "no device found";
  std::optional<DeviceInfo> device = req.device;
  if (!device) {
    WS_ASSIGN_OR_RETURN(device, ProbeDevice(opts, &why));
  }
  if (!device) {
    return reject(Verdict::kNotRun,
                  fmt::format("compiled for {}; plan valid; not run: running needs a GPU ({})",
                              ArchName(req.arch), why),
                  "no GPU");
  }
  res.device = device;
  if (!device->arch.empty() && device->arch != ArchName(req.arch)) {
    return reject(Verdict::kNotRun,
                  fmt::format("compiled for {}; plan valid; not run: the GPU ({}) is {}",
                              ArchName(req.arch), device->name, device->arch),
                  fmt::format("no {} GPU", ArchName(req.arch)));
  }

  // The trusted reference, compiled for the same parameters with its default knobs.
  phase("probe");
  WS_ASSIGN_OR_RETURN(TrustedReference ref_kernel, CompileReference(spec, req.params, req.arch, copts));
  phase("reference_compile");
  const std::string& ref_path = ref_kernel.path;
  const Plan* ref_plan = &ref_kernel.plan;
  const CompileResult& ref_compile = ref_kernel.compile;

  // 4. Jobs. Seeds and the digest key come from the OS's CSPRNG, fresh for every evaluation.
  const int poison = static_cast<int>(SecureRandom64() % 256);
  // Never equal to `poison`, nor to the reference's poison + 1.
  const int poison2 = (poison + 2 + static_cast<int>(SecureRandom64() % 254)) % 256;
  std::vector<PlannedCase> cases;
  // Plus one watchdog grace: the runner stops a hung case at its allowance + kCaseGraceSeconds,
  // which must come before the sandbox's limit for the whole run even when the last case hangs.
  double cand_budget_s = opts.startup_timeout_s + runner::kCaseGraceSeconds;
  double ref_budget_s = opts.startup_timeout_s + runner::kCaseGraceSeconds;
  // What the runners will write to scratch: the outputs that are dumped, not digested, once per
  // run of each runner; plus one digest re-run's full dumps.
  int64_t dump_bytes = 0, rerun_bytes = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto& [kind, shape] = shapes[i];
    PlannedCase pc;
    pc.id = fmt::format("{}-{}", kind, i);
    pc.kind = kind;
    pc.shape = *shape;
    pc.symbols = BindSymbols(spec, *shape, req.params);
    WS_ASSIGN_OR_RETURN(pc.cost, ShapeCost(spec, pc.symbols, req.ceilings));
    auto rp = ResolvePlan(*plan, spec, pc.symbols, res.knobs, device->limits);
    if (!rp.ok()) {
      return reject(Verdict::kPlanError,
                    fmt::format("{}: {}", shape_label(kind, *shape, i), rp.status().message()));
    }
    pc.plan = std::move(*rp);
    // A case's inputs: fresh, or from req.input_seed (a paired comparison, never ranked).
    auto input_seed = [&](int set) {
      return req.input_seed ? DerivedInputSeed(*req.input_seed, pc.id, set) : SecureRandom64();
    };
    pc.seeds.push_back(input_seed(0));
    double case_s = opts.case_timeout_s;
    // Each case is stopped at its own allowance (the runner's watchdog), so a bench shape's
    // check run (gigabytes of inputs, a correct but slow kernel) gets a margin of its own rather
    // than borrowing from faster cases.
    if (kind == "bench") case_s += kBenchMarginS;
    pc.ref_budget_s = case_s;
    if (kind == "bench" && req.time_bench) {
      WS_ASSIGN_OR_RETURN(int64_t in_bytes, InputBytes(spec, pc.symbols));
      // Enough input sets that rotating them defeats the L2, within a memory budget.
      int64_t sets = in_bytes > 0 ? (2 * device->l2_bytes + in_bytes - 1) / in_bytes : 2;
      sets = std::clamp<int64_t>(sets, 2, 8);
      while (sets > 2 && sets * in_bytes > (int64_t{24} << 30)) --sets;
      for (int64_t s = 1; s < sets; ++s) pc.seeds.push_back(input_seed(static_cast<int>(s)));
      double est_us = pc.cost.sol_us > 0 ? pc.cost.sol_us : pc.cost.bytes / 2e12 * 1e6;
      int iters = req.timing_iterations > 0
                      ? req.timing_iterations
                      : static_cast<int>(std::clamp(300000.0 / std::max(est_us, 1.0), 20.0, 200.0));
      // The last timed run must not reuse input set 0 (the check run's): a kernel that kept the
      // check run's inputs or outputs (by pointer or in a global) then fails the last run's check.
      if ((iters - 1) % sets == 0) ++iters;
      int audit = static_cast<int>(SecureRandom64() % static_cast<uint64_t>(iters - 1));
      // Fresh inputs for every run (runner::TimingJob::fresh_seed): a kernel that caches outputs
      // by input pointer or content across runs replays wrong ones in the checked runs.
      const uint64_t fresh = req.input_seed ? DerivedInputSeed(*req.input_seed, pc.id, -2)
                                            : SecureRandom64();
      pc.audit_seed = runner::FreshRunSeed(fresh, audit);
      pc.last_seed = runner::FreshRunSeed(fresh, iters - 1);
      pc.timing = {{"warmup", 3},
                   {"warmup_ms", kWarmupMs},
                   {"iterations", iters},
                   {"l2_flush_bytes", std::max<int64_t>(4 * device->l2_bytes, 256 << 20)},
                   {"audit_iteration", audit},
                   {"fresh_seed", fmt::format("{:016x}", fresh)},
                   // Several launches, or one short one: replay a CUDA graph so launch gaps and
                   // CPU overhead stay out of the kernel's time.
                   {"graph", pc.plan.launches.size() > 1 || est_us < kGraphBelowUs}};
      // A candidate may be far slower than speed-of-light and still correct (CUDA-core baselines
      // of FP8 GEMMs run 100-200x under it); a hang is not. Since each case now stops at its own
      // allowance, a slow timed case cannot borrow from the others: allow 200x.
      case_s += (iters + 5) * (est_us * 1e-6 * 200 + 2e-3) + 2e-3 * kWarmupMs;
    }
    if (pc.timing.is_null() && kind != "bench") {
      pc.second_seed = input_seed(-1);
      pc.second_budget_s = opts.case_timeout_s;
      ref_budget_s += opts.case_timeout_s;
    }
    pc.budget_s = case_s;
    cand_budget_s += pc.budget_s + pc.second_budget_s;
    // One reference case per input set it checks, each untimed.
    ref_budget_s += pc.ref_budget_s * (pc.timing.is_null() ? 1 : 3);
    pc.digested = DigestedOutputs(spec, kind);
    if (!pc.timing.is_null()) {
      WS_ASSIGN_OR_RETURN(pc.sample.row_bytes,
                          SampledOutputRows(spec, pc.symbols, kind, pc.digested));
      pc.sample.key = SecureRandom64();
    }
    // Bytes per run of each runner: the check run's, and the audited or last run's.
    int64_t dumped = 0, dumped_sampled = 0, all = 0;
    for (const auto& t : spec.tensors) {
      if (t.role != TensorRole::kOutput) continue;
      WS_ASSIGN_OR_RETURN(int64_t n, TensorNumel(t, pc.symbols));
      all += n * DTypeSize(t.dtype);
      if (std::find(pc.digested.begin(), pc.digested.end(), t.name) == pc.digested.end()) {
        dumped += n * DTypeSize(t.dtype);
        // A sample holds about 1/every of the rows; allow twice that.
        dumped_sampled += pc.sample.row_bytes.count(t.name)
                              ? 2 * n * DTypeSize(t.dtype) / pc.sample.every
                              : n * DTypeSize(t.dtype);
      }
    }
    // Candidate and reference: the check run (and a second seed's), then the audited and last.
    dump_bytes += 2 * dumped * (1 + (pc.second_seed ? 1 : 0)) +
                  (pc.timing.is_null() ? 0 : 4 * dumped_sampled);
    if (!pc.digested.empty()) rerun_bytes = std::max(rerun_bytes, all * 4);
    cases.push_back(std::move(pc));
  }
  WS_ASSIGN_OR_RETURN(std::string scratch, MakeScratch(opts, dump_bytes + rerun_bytes));
  ScratchCleanup cleanup{scratch, opts.keep_scratch};
  if (opts.keep_scratch) res.kept_scratch = fs::absolute(scratch).string();
  const uint64_t digest_key = SecureRandom64();
  const std::string digest_key_hex = fmt::format("{:016x}", digest_key);

  json cand_job = {{"cubin", library ? "" : fs::absolute(res.compile.cubin_path).string()},
                   {"result", fs::absolute(scratch + "/candidate.result.json").string()},
                   {"digest_key", digest_key_hex},
                   {"cases", json::array()}};
  json ref_job = {{"cubin", fs::absolute(ref_compile.cubin_path).string()},
                  {"result", fs::absolute(scratch + "/reference.result.json").string()},
                  {"digest_key", digest_key_hex},
                  {"cases", json::array()}};
  auto ref_plan_for = [&](const PlannedCase& pc) {
    return ResolvePlan(*ref_plan, spec, pc.symbols, {}, device->limits);
  };
  for (const auto& pc : cases) {
    WS_ASSIGN_OR_RETURN(json tensors, TensorsJson(spec, pc.symbols));
    std::string prefix = fs::absolute(scratch + "/cand-" + pc.id).string();
    json library_call = nullptr;
    if (library) {
      WS_ASSIGN_OR_RETURN(library_call, LibraryCall(spec, pc.symbols, req.library));
    }
    cand_job["cases"].push_back({{"id", pc.id},
                                 {"launches", LaunchesJson(pc.plan)},
                                 {"workspace", {{"bytes", pc.plan.workspace_bytes},
                                                {"zero", pc.plan.workspace_zero}}},
                                 {"tensors", tensors},
                                 {"input_seeds", pc.seeds},
                                 {"poison", poison},
                                 {"timing", pc.timing},
                                 {"dump", prefix},
                                 {"digest", pc.digested},
                                 {"sample", pc.SampleJson({"audit", "last"})},
                                 {"library", library_call},
                                 {"dump_inputs", false},
                                 {"budget_s", pc.budget_s}});
    auto rp = ref_plan_for(pc);
    if (!rp.ok()) return rp.status().Context(ref_path);
    if (pc.second_seed) {
      const std::string id2 = pc.id + "#2";
      cand_job["cases"].push_back({{"id", id2},
                                   {"launches", LaunchesJson(pc.plan)},
                                   {"workspace", {{"bytes", pc.plan.workspace_bytes},
                                                  {"zero", pc.plan.workspace_zero}}},
                                   {"tensors", tensors},
                                   {"input_seeds", {*pc.second_seed}},
                                   {"poison", poison2},
                                   {"timing", nullptr},
                                   {"dump", fs::absolute(scratch + "/cand-" + id2).string()},
                                   {"library", library_call},
                                   {"dump_inputs", false},
                                   {"budget_s", pc.second_budget_s}});
      ref_job["cases"].push_back(
          {{"id", id2 + "@0"},
           {"launches", LaunchesJson(*rp)},
           {"workspace", {{"bytes", rp->workspace_bytes}, {"zero", rp->workspace_zero}}},
           {"tensors", tensors},
           {"input_seeds", {*pc.second_seed}},
           {"poison", (poison + 1) % 256},
           {"timing", nullptr},
           {"dump", fs::absolute(fmt::format("{}/ref-{}@0", scratch, id2)).string()},
           {"dump_inputs", false},
           {"budget_s", opts.case_timeout_s}});
    }
    for (const auto& run : pc.CheckedRuns()) {
      ref_job["cases"].push_back(
          {{"id", fmt::format("{}@{}", pc.id, run.ref)},
           {"launches", LaunchesJson(*rp)},
           {"workspace", {{"bytes", rp->workspace_bytes}, {"zero", rp->workspace_zero}}},
           {"tensors", tensors},
           {"input_seeds", {run.seed}},
           {"poison", (poison + 1) % 256},
           {"timing", nullptr},
           {"dump", fs::absolute(fmt::format("{}/ref-{}@{}", scratch, pc.id, run.ref)).string()},
           {"digest", pc.digested},
           {"sample", run.tag == "check" ? json(nullptr) : pc.SampleJson({"check"})},
           {"dump_inputs", false},
           {"budget_s", pc.ref_budget_s}});
    }
  }

  // 5. Run: the reference first (trusted), then the candidate, in separate processes. With
  // overlap_runners the candidate runner starts up meanwhile and waits at a turn gate for the
  // reference to finish before it loads the candidate (gpu_lock.h).
  phase("plan");
  const char* overlap_env = std::getenv("WARPSMITH_OVERLAP_RUNNERS");
  const bool overlap =
      overlap_env && *overlap_env ? std::string(overlap_env) == "1" : opts.overlap_runners;
  // The reference's longest possible run, both attempts: the candidate's wait at the gate.
  const double turn_wait_s =
      2 * (ref_budget_s + (opts.gpu_lock_dir.empty() ? 0 : opts.gpu_lock_wait_s));
  std::future<Result<RunnerOutcome>> cand_started;
  // Declared after the future, so destroyed before it: an early return opens the gate with
  // "abort" and the future's destructor then waits for a runner that is going home.
  std::optional<TurnGate> gate;
  if (overlap) {
    // In scratch, which the runner's sandbox binds as a folder: it sees the word replace the file.
    auto closed = TurnGate::Close(scratch + "/turn");
    if (!closed.ok()) return closed.status();
    gate.emplace(std::move(*closed));
    json job = cand_job;
    job["turn"] = fs::absolute(gate->path()).string();
    job["turn_wait_s"] = turn_wait_s;
    cand_started = std::async(std::launch::async, [&opts, &scratch, job, cand_budget_s,
                                                   turn_wait_s] {
      return RunRunner(opts, scratch + "/candidate.job.json", job, cand_budget_s + turn_wait_s);
    });
  }
  // The trusted reference failing is never the candidate's doing: something else on the GPU or
  // host (another user's process, a driver recovering from a killed context). One more try.
  std::string ref_failure;
  RunnerOutcome ref;
  for (int attempt = 0; attempt < 2; ++attempt) {
    WS_ASSIGN_OR_RETURN(ref, RunRunner(opts, scratch + "/reference.job.json", ref_job, ref_budget_s));
    AddRunnerSeconds(ref, &res);
    ref_failure.clear();
    for (const auto& c : ref_job["cases"]) {
      auto it = ref.cases.find(c["id"].get<std::string>());
      if (it == ref.cases.end() || it->second.value("status", "") != "ok") {
        ref_failure = fmt::format("the reference runner failed on case {} ({}): {}{}",
                                  c["id"].get<std::string>(), ref.process.Describe(),
                                  it == ref.cases.end() ? "" : it->second.value("message", ""),
                                  ref.process.stderr_data.substr(0, 1000));
        break;
      }
    }
    if (ref_failure.empty()) break;
    res.retries.push_back(fmt::format("attempt {}: {}", attempt + 1, ref_failure.substr(0, 300)));
  }
  if (!ref_failure.empty()) return Status::Error("{} (twice)", ref_failure);
  phase("reference_run");
  Result<RunnerOutcome> cand_run = Status::Error("the candidate runner did not run");
  if (gate) {
    gate->Open(true);
    cand_run = cand_started.get();
  } else {
    cand_run = RunRunner(opts, scratch + "/candidate.job.json", cand_job, cand_budget_s);
  }
  WS_ASSIGN_OR_RETURN(RunnerOutcome cand, std::move(cand_run));
  phase("candidate_run");
  AddRunnerSeconds(cand, &res);
  res.ran_on_gpu = true;
  res.sandbox_layers = cand.process.layers;
  res.sandbox_layers["stage"] = "runner";

  // A digest mismatch: the case again in both runners with every output dumped, so the message can
  // name coordinates. Returns the byte comparison of run `tag`, or "" when the re-run did not show
  // a difference or could not run (the digests have decided the verdict already).
  auto rerun_with_dumps = [&](const PlannedCase& pc,
                              const PlannedCase::CheckedRun& run) -> std::string {
    const std::string& tag = run.tag;
    const std::string ref_id = fmt::format("{}@{}", pc.id, run.ref);
    json cc, rc;
    for (const auto& c : cand_job["cases"]) {
      if (c["id"] == pc.id) cc = c;
    }
    for (const auto& c : ref_job["cases"]) {
      if (c["id"] == ref_id) rc = c;
    }
    if (cc.is_null() || rc.is_null()) return "";
    const std::string cand_prefix = fs::absolute(scratch + "/rerun-cand-" + pc.id).string();
    const std::string ref_prefix = fs::absolute(scratch + "/rerun-ref-" + ref_id).string();
    // Every output written back whole: neither digested nor sampled.
    cc["digest"] = cc["sample"] = nullptr;
    cc["dump"] = cand_prefix;
    if (tag == "check") cc["timing"] = nullptr;
    rc["digest"] = rc["sample"] = nullptr;
    rc["dump"] = ref_prefix;
    json rj = {{"cubin", ref_job["cubin"]},
               {"result", fs::absolute(scratch + "/rerun-reference.result.json").string()},
               {"cases", json::array({rc})}};
    json cj = {{"cubin", cand_job["cubin"]},
               {"result", fs::absolute(scratch + "/rerun-candidate.result.json").string()},
               {"cases", json::array({cc})}};
    auto rr = RunRunner(opts, scratch + "/rerun-reference.job.json", rj,
                        opts.startup_timeout_s + 3 * opts.case_timeout_s);
    if (!rr.ok() || !rr->cases.count(ref_id) || rr->cases[ref_id].value("status", "") != "ok") {
      return "";
    }
    auto cr = RunRunner(opts, scratch + "/rerun-candidate.job.json", cj,
                        opts.startup_timeout_s + pc.budget_s + runner::kCaseGraceSeconds);
    if (!cr.ok() || !cr->cases.count(pc.id) || cr->cases[pc.id].value("status", "") != "ok") {
      return "";
    }
    auto diff = CompareDumps(spec, pc.symbols, req.params, run.seed, cand_prefix, tag,
                             ref_prefix, {});
    return diff.ok() ? *diff : "";
  };
  const std::map<std::string, std::string> run_names = {
      {"check", "the check run"},
      {"audit", "the audited timed run"},
      {"last", "the last timed run"}};

  // 6. Check, case by case; the first failure decides the verdict.
  double log_sum = 0, sol_log_sum = 0;
  int timed = 0, sol_known = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const PlannedCase& pc = cases[i];
    CaseResult cr;
    cr.kind = pc.kind;
    cr.shape = pc.shape;
    cr.bytes = pc.cost.bytes;
    cr.flops = pc.cost.flops;
    cr.sol_us = pc.cost.sol_us;
    std::string label = shape_label(pc.kind, pc.shape, i);
    auto it = cand.cases.find(pc.id);
    auto fail = [&](Verdict v, std::string msg) {
      cr.verdict = v;
      cr.message = msg;
      if (res.verdict == Verdict::kOk) {
        res.verdict = v;
        res.message = fmt::format("{}: {}", label, msg);
      }
    };
    if (it == cand.cases.end()) {
      RunnerFinding f = MissingCaseFinding(cand.process, cand_budget_s, pc.budget_s);
      fail(f.verdict, f.message);
      res.cases.push_back(cr);
      break;  // later cases never ran
    }
    // The runner's own findings about one case: a crash, a hang, a guard, the inputs. True if
    // clean.
    auto runner_findings_clean = [&](const json& c, const std::string& prefix_msg,
                                     double allowance_s) {
      std::optional<RunnerFinding> f = RunnerCaseFinding(c, allowance_s);
      if (f) fail(f->verdict, prefix_msg + f->message);
      return !f;
    };
    const json& c = it->second;
    if (runner_findings_clean(c, "", pc.budget_s)) {
      std::string cand_prefix = scratch + "/cand-" + pc.id;
      for (const auto& run : pc.CheckedRuns()) {
        const std::string& tag = run.tag;
        // Digested outputs first (the reference's case for this run's inputs ran its check run).
        std::string diff;
        if (!pc.digested.empty()) {
          auto want = ref.cases.find(fmt::format("{}@{}", pc.id, run.ref));
          WS_ASSIGN_OR_RETURN(
              diff, CompareDigests(pc.digested, RunDigests(c, tag),
                                   want == ref.cases.end() ? std::map<std::string, std::string>()
                                                           : RunDigests(want->second, "check")));
        }
        const bool by_digest = !diff.empty();
        if (diff.empty()) {
          WS_ASSIGN_OR_RETURN(diff, CompareDumps(spec, pc.symbols, req.params, run.seed,
                                                 cand_prefix, tag,
                                                 fmt::format("{}/ref-{}@{}", scratch, pc.id,
                                                             run.ref),
                                                 pc.digested,
                                                 tag == "check" ? nullptr : &pc.sample));
        }
        if (diff.empty()) continue;
        // Only for the failure that decides the verdict: the others keep the digest's word.
        if (by_digest && res.verdict == Verdict::kOk) {
          phase("check");
          const std::string bytes = rerun_with_dumps(pc, run);
          phase("digest_rerun");
          diff = bytes.empty() ? diff + "; a re-run with every output written back did not show "
                                        "the difference, so no coordinates"
                               : bytes + " (on a re-run with every output written back, after "
                                         "their keyed digests differed)";
        }
        fail(Verdict::kWrongAnswer, tag == "check" && !by_digest
                                        ? diff
                                        : fmt::format("in {}: {}", run_names.at(tag), diff));
        break;
      }
      if (cr.verdict == Verdict::kOk && pc.second_seed) {
        const std::string id2 = pc.id + "#2";
        const std::string what = fmt::format(
            "in the second run (other inputs, outputs poisoned with 0x{:02x} instead of 0x{:02x}): ",
            poison2, poison);
        auto it2 = cand.cases.find(id2);
        if (it2 == cand.cases.end()) {
          RunnerFinding f = MissingCaseFinding(cand.process, cand_budget_s, pc.second_budget_s);
          fail(f.verdict, what + f.message);
          res.cases.push_back(cr);
          break;
        }
        if (runner_findings_clean(it2->second, what, pc.second_budget_s)) {
          auto diff = CompareDumps(spec, pc.symbols, req.params, *pc.second_seed,
                                   scratch + "/cand-" + id2, "check",
                                   fmt::format("{}/ref-{}@0", scratch, id2), {});
          if (!diff.ok()) return diff.status();
          if (!diff->empty()) {
            fail(Verdict::kWrongAnswer,
                 what + *diff +
                     " (the result depends on what the outputs held before the run, on a race, "
                     "or on state kept from an earlier launch)");
          }
        }
      }
      if (cr.verdict == Verdict::kOk && c.contains("timing") && c["timing"].is_object()) {
        cr.timing = ParseTiming(c["timing"]);
        if (cr.sol_us > 0 && cr.timing->median_us * kSuspiciousFraction < cr.sol_us) {
          fail(Verdict::kSuspicious,
               fmt::format("median {:.2f} us is under the speed-of-light bound {:.2f} us",
                           cr.timing->median_us, cr.sol_us));
        }
      }
    }
    if (cr.timing && cr.timing->median_us > 0) {
      log_sum += std::log(cr.timing->median_us);
      ++timed;
      if (cr.sol_us > 0) {
        sol_log_sum += std::log(cr.sol_us / cr.timing->median_us);
        ++sol_known;
      }
    }
    // The watchdog ended the runner at a case that hung: no later case ran.
    const bool stopped = cr.verdict == Verdict::kTimeout;
    res.cases.push_back(std::move(cr));
    if (stopped) break;
  }
  if (timed) res.geomean_us = std::exp(log_sum / timed);
  if (sol_known) res.sol_fraction = std::exp(sol_log_sum / sol_known);

  phase("check");
  // 7. Deep mode: the test shapes again, untimed, under each sanitizer tool.
  if (req.deep && library) {
    deep_not_run("a library baseline is not a kernel");
  } else if (req.deep && res.verdict != Verdict::kOk) {
    deep_not_run(fmt::format("the verdict is {}", VerdictName(res.verdict)));
  } else if (req.deep) {
    std::vector<std::string> kernels;
    for (const auto& l : plan->launches) kernels.push_back(l.kernel);
    json deep_job = {{"cubin", cand_job["cubin"]}, {"cases", json::array()}};
    const double deep_case_budget_s =
        opts.deep_time_factor * opts.case_timeout_s + opts.startup_timeout_s;
    int deep_cases = 0;
    for (const auto& c : cand_job["cases"]) {
      const std::string id = c["id"].get<std::string>();
      if (id.rfind("test-", 0) != 0 || id.find('#') != std::string::npos) continue;
      json dc = c;
      dc["id"] = "deep-" + id;
      dc["timing"] = nullptr;
      dc["dump"] = nullptr;
      // Kernels run many times slower under a sanitizer, and its first launches instrument the
      // module: a case's allowance scales as the whole run's does, plus a start-up allowance.
      dc["budget_s"] = deep_case_budget_s;
      deep_job["cases"].push_back(std::move(dc));
      ++deep_cases;
    }
    const double deep_budget_s = 2 * opts.startup_timeout_s + 60 +
                                 opts.deep_time_factor * opts.case_timeout_s * deep_cases;
    std::string sanitizer = opts.compute_sanitizer;
    std::string unavailable;
    if (sanitizer.empty()) {
      auto found = FindComputeSanitizer();
      if (found.ok()) {
        sanitizer = *found;
      } else {
        unavailable = found.status().message();
      }
    }
    std::string stop;  // once set, the remaining tools are not run, for this reason
    for (SanitizerTool tool : kDeepTools) {
      const std::string name(SanitizerToolName(tool));
      if (!unavailable.empty()) {
        res.deep[name] = "unavailable: " + unavailable;
        continue;
      }
      if (!stop.empty()) {
        res.deep[name] = "not run: " + stop;
        continue;
      }
      json job = deep_job;
      job["result"] = fs::absolute(fmt::format("{}/deep-{}.result.json", scratch, name)).string();
      SanitizerWrap wrap{sanitizer, tool, kernels};
      WS_ASSIGN_OR_RETURN(RunnerOutcome run,
                          RunRunner(opts, fmt::format("{}/deep-{}.job.json", scratch, name), job,
                                    deep_budget_s, &wrap));
      if (run.process.timed_out) {
        res.deep[name] = fmt::format("timeout after {:.0f} s", deep_budget_s);
        res.verdict = Verdict::kTimeout;
        res.message = fmt::format("deep mode: under {} the test shapes did not finish within {:.0f} s",
                                  name, deep_budget_s);
        stop = name + " timed out";
        continue;
      }
      SanitizerOutcome o = ParseSanitizerOutput(
          tool, !run.process.signaled, run.process.exit_code,
          run.process.stdout_data + "\n" + run.process.stderr_data,
          std::set<std::string>(kernels.begin(), kernels.end()));
      if (o.state == SanitizerOutcome::State::kFindings) {
        res.deep[name] = o.Text();
        res.verdict = Verdict::kWrongAnswer;
        res.message = "deep mode: " + o.Message(tool);
        stop = name + " found " + o.Text();
        continue;
      }
      // The runner's own verdict on a case that failed under the tool: the candidate's doing.
      std::string case_failure;
      Verdict case_verdict = Verdict::kCrashed;
      bool all_ok = true;
      for (const auto& c : job["cases"]) {
        auto it = run.cases.find(c["id"].get<std::string>());
        if (it == run.cases.end()) {
          all_ok = false;
          continue;
        }
        const std::string status = it->second.value("status", "");
        if (status != "ok" && case_failure.empty()) {
          case_failure = fmt::format("{} ({}): {}", c["id"].get<std::string>(), status,
                                     it->second.value("message", ""));
          if (status == "timeout") {
            case_verdict = Verdict::kTimeout;
          } else if (status != "crashed" && status != "launch_error" &&
                     status != "plan_error") {
            case_verdict = Verdict::kWrongAnswer;
          }
        }
      }
      if (!case_failure.empty()) {
        res.deep[name] = case_verdict == Verdict::kCrashed   ? "crashed"
                         : case_verdict == Verdict::kTimeout ? "timeout"
                                                             : "runner finding";
        res.verdict = case_verdict;
        res.message = fmt::format("deep mode: under {}: {}", name, case_failure);
        stop = name + " saw a " + (case_verdict == Verdict::kTimeout ? "timeout" : "crash");
        continue;
      }
      if (o.state == SanitizerOutcome::State::kClean && !all_ok) {
        o.state = SanitizerOutcome::State::kUnavailable;
        o.why = fmt::format("the runner did not finish the test shapes under {} ({}): {}", name,
                            run.process.Describe(), run.process.stderr_data.substr(0, 500));
      }
      res.deep[name] = o.Text();
      if (o.state == SanitizerOutcome::State::kUnavailable) {
        stop = name + " was unavailable";
        if (res.verdict == Verdict::kOk) {
          res.verdict = Verdict::kNotRun;
          res.message = fmt::format("deep mode was asked for but could not run: {}: {}", name, o.why);
        }
      }
    }
    if (!unavailable.empty()) {
      res.verdict = Verdict::kNotRun;
      res.message = "deep mode was asked for but could not run: " + unavailable;
    }
    phase("deep");
  }
  return res;
}

std::string SecondsText(double s) {
  // Whole seconds from 10 s up; tenths below (a 0.5 s allowance is not "0 s" or "1 s").
  return s >= 10 || s == std::floor(s) ? fmt::format("{:.0f}", s) : fmt::format("{:.1f}", s);
}

std::optional<RunnerFinding> RunnerCaseFinding(const json& c, double allowance_s) {
  const std::string status = c.value("status", "");
  if (status == "crashed" || status == "launch_error") {
    return RunnerFinding{Verdict::kCrashed, c.value("message", status)};
  }
  if (status == "plan_error") {  // the driver refused to encode a tensor map of the plan
    return RunnerFinding{Verdict::kPlanError, c.value("message", status)};
  }
  if (status == "timeout") {
    // Said as a whole-run timeout is; the runner's own message has the case's id.
    return RunnerFinding{Verdict::kTimeout, fmt::format("did not finish within its {} s allowance",
                                                        SecondsText(allowance_s))};
  }
  if (status == "guard_violation" || !c.value("guards_intact", true)) {
    return RunnerFinding{Verdict::kWrongAnswer,
                         "wrote outside its output buffers: " +
                             c.value("message", std::string("guard damaged"))};
  }
  if (!c.value("inputs_unchanged", true)) {
    return RunnerFinding{Verdict::kWrongAnswer, "modified its inputs"};
  }
  if (status != "ok") {
    return RunnerFinding{Verdict::kCrashed, fmt::format("runner status '{}': {}", status,
                                                        c.value("message", ""))};
  }
  return std::nullopt;
}

RunnerFinding MissingCaseFinding(const SandboxResult& process, double limit_s, double allowance_s) {
  if (process.timed_out) {
    return {Verdict::kTimeout, fmt::format("did not finish within the limit ({:.0f} s for the "
                                           "whole run)",
                                           limit_s)};
  }
  if (!process.signaled && process.exit_code == runner::kExitCaseTimeout) {
    // The watchdog stopped the case but could not record it (the result file failed).
    return {Verdict::kTimeout, fmt::format("did not finish within its {} s allowance",
                                           SecondsText(allowance_s))};
  }
  return {Verdict::kCrashed,
          fmt::format("the runner died before finishing this case ({}){}", process.Describe(),
                      process.stderr_data.empty() ? "" : ": " + process.stderr_data.substr(0, 500))};
}

std::string DeepModeFailure(const EvalResult& r) {
  for (const auto& [tool, state] : r.deep) {
    if (state.rfind("unavailable", 0) == 0) return tool + ": " + state;
  }
  return "";
}

Result<CompileResult> CompileGpuReference(const ProblemSpec& spec,
                                          const std::map<std::string, std::string>& params,
                                          Arch arch, const EvaluatorOptions& opts) {
  WS_ASSIGN_OR_RETURN(TrustedReference ref,
                      CompileReference(spec, params, arch, CompileOptionsFor(opts)));
  return ref.compile;
}

Result<std::vector<Shape>> VerifyGpuReference(const ProblemSpec& spec,
                                              const std::map<std::string, std::string>& params,
                                              Arch arch, const DeviceInfo& device,
                                              const EvaluatorOptions& opts) {
  WS_ASSIGN_OR_RETURN(TrustedReference ref,
                      CompileReference(spec, params, arch, CompileOptionsFor(opts)));

  std::vector<Shape> shapes = spec.test_shapes;
  shapes.insert(shapes.end(), spec.hidden_shapes.begin(), spec.hidden_shapes.end());
  // The smallest bench shape too: the CPU reference has to recompute all of it.
  const Shape* smallest = nullptr;
  double smallest_bytes = 0;
  for (const auto& s : spec.bench_shapes) {
    WS_ASSIGN_OR_RETURN(Cost c, ShapeCost(spec, BindSymbols(spec, s, params), std::nullopt));
    if (!smallest || c.bytes < smallest_bytes) {
      smallest = &s;
      smallest_bytes = c.bytes;
    }
  }
  if (smallest) shapes.push_back(*smallest);

  WS_ASSIGN_OR_RETURN(std::string scratch, MakeScratch(opts, -1));
  ScratchCleanup cleanup{scratch, opts.keep_scratch};
  json job = {{"cubin", fs::absolute(ref.compile.cubin_path).string()},
              {"result", fs::absolute(scratch + "/reference.result.json").string()},
              {"cases", json::array()}};
  std::vector<SymbolTable> symbols;
  std::vector<uint64_t> seeds;
  for (size_t i = 0; i < shapes.size(); ++i) {
    symbols.push_back(BindSymbols(spec, shapes[i], params));
    seeds.push_back(SecureRandom64());
    WS_ASSIGN_OR_RETURN(ResolvedPlan rp, ResolvePlan(ref.plan, spec, symbols.back(), {}, device.limits));
    WS_ASSIGN_OR_RETURN(json tensors, TensorsJson(spec, symbols.back()));
    job["cases"].push_back({{"id", fmt::format("case-{}", i)},
                            {"launches", LaunchesJson(rp)},
                            {"workspace", {{"bytes", rp.workspace_bytes}, {"zero", rp.workspace_zero}}},
                            {"tensors", tensors},
                            {"input_seeds", {seeds.back()}},
                            {"poison", static_cast<int>(SecureRandom64() % 256)},
                            {"timing", nullptr},
                            {"dump", fs::absolute(fmt::format("{}/case-{}", scratch, i)).string()},
                            {"dump_inputs", true}});
  }
  double budget = opts.startup_timeout_s + opts.case_timeout_s * static_cast<double>(shapes.size()) + 60;
  WS_ASSIGN_OR_RETURN(RunnerOutcome run, RunRunner(opts, scratch + "/reference.job.json", job, budget));

  for (size_t i = 0; i < shapes.size(); ++i) {
    std::string id = fmt::format("case-{}", i);
    auto it = run.cases.find(id);
    if (it == run.cases.end() || it->second.value("status", "") != "ok") {
      return Status::Error("the reference runner failed on shape {} ({}): {}", ShapeText(spec, shapes[i]),
                           run.process.Describe(),
                           it == run.cases.end() ? run.process.stderr_data.substr(0, 1000)
                                                 : it->second.value("message", ""));
    }
    std::string prefix = scratch + "/" + id;
    TensorMap inputs;
    for (const auto& t : spec.tensors) {
      if (t.role != TensorRole::kInput) continue;
      WS_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes,
                          ReadFileBytes(DumpPath(prefix, "input", t.name)));
      WS_ASSIGN_OR_RETURN(auto dims, TensorDims(t, symbols[i]));
      inputs[t.name] = HostTensor{t.dtype, dims, std::move(bytes)};
    }
    // The host's input generation (what custom checkers see) must be the device's, bit for bit;
    // checked where the host regenerates quickly.
    int64_t input_elems = 0;
    for (const auto& [name, t] : inputs) input_elems += t.numel();
    if (input_elems <= kHostRegenerateElems) {
      WS_ASSIGN_OR_RETURN(TensorMap host, GenerateInputs(spec, symbols[i], seeds[i]));
      for (const auto& [name, t] : inputs) {
        const HostTensor& h = host.at(name);
        std::string diff = CompareExact(
            name, t.dims, DTypeSize(t.dtype),
            std::string_view(reinterpret_cast<const char*>(h.bytes.data()), h.bytes.size()),
            std::string_view(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size()));
        if (!diff.empty()) {
          return Status::Error(
              "input generation on the host (problems/init.h) differs from the device's at shape "
              "{} (host got, device expected): {}",
              ShapeText(spec, shapes[i]), diff);
        }
      }
    }
    WS_ASSIGN_OR_RETURN(TensorMap want, RunCpuReference(spec, symbols[i], params, inputs));
    TensorMap got;
    for (const auto& [name, tensor] : want) {
      WS_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes,
                          ReadFileBytes(DumpPath(prefix, "check", name)));
      got[name] = HostTensor{tensor.dtype, tensor.dims, std::move(bytes)};
    }
    // The same tolerance a candidate gets, the GPU reference in the candidate's place.
    WS_ASSIGN_OR_RETURN(std::string diff,
                        CheckOutputs(spec, symbols[i], params, got, want,
                                     [&]() -> Result<TensorMap> { return inputs; }));
    if (!diff.empty()) {
      return Status::Error("the GPU reference disagrees with the CPU reference at shape {}: {}",
                           ShapeText(spec, shapes[i]), diff);
    }
  }
  return shapes;
}

}  // namespace ws

// The evaluator: compile (NVRTC, in a limited child process) -> run (the trusted runner executable,
// one process per candidate) -> check (here, outside every runner) -> time. Verdicts are data.
#pragma once

#include <cstdint>
#include <map>
#include <string_view>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "evaluator/runner/tensor_map.h"
#include "problems/problems.h"

namespace ws {

// ---- Launch plans -------------------------------------------------------------------------------
// A candidate is one CUDA translation unit of device code whose head holds a JSON plan:
//
//   /* warpsmith:plan
//   { "knobs":  { "ROWS": [4, 8, 16] },                // -DROWS=<value>; the first value is default
//     "launch": [ { "kernel": "quantize_rows",
//                   "grid":  ["ceil_div(M, ROWS)"], "block": ["256"], "cluster": ["1"],
//                   "smem":  "0",
//                   "args":  ["x", "q", "scales", "M", "K", {"i64": "M*K"}, "workspace"] } ],
//     "workspace": { "bytes": "0", "zero": false },
//     "tensor_maps": { "tma_x": { "tensor": "x", "dims": ["K", "M"], "box": ["64", "ROWS"],
//                                 "swizzle": 128 } } }
//   */
//
// Expressions may use the shape symbols, parameters (bound to their value index), knobs and
// `num_sms`. Args: a tensor name (device pointer), "workspace", a tensor map's name (the 128-byte
// CUtensorMap by value), an expression (int32, range-checked) or {"i64": expr}. A launch may set
// "pdl": true, or an expression (on where nonzero), for programmatic dependent launch.

struct PlanArg {
  enum class Kind { kTensor, kWorkspace, kI32, kI64, kTensorMap };
  Kind kind = Kind::kI32;
  std::string text;  // tensor name, tensor map name or expression
};

struct PlanLaunch {
  std::string kernel;
  std::vector<std::string> grid, block, cluster;  // 1-3 expressions each; cluster may be empty
  std::string smem = "0";
  std::vector<PlanArg> args;
  std::string pdl;   // PROGRAMMATIC_STREAM_SERIALIZATION where nonzero ("1": true); empty: off
  std::string when;  // launched only where this is nonzero; empty: always
};

/// A TMA descriptor over a whole contiguous row-major tensor (docs/problem-format.md).
struct PlanTensorMap {
  std::string tensor;
  std::vector<std::string> dims, box, element_strides;  // innermost first; strides may be empty
  int swizzle = 0;       // 0, 32, 64, 128 bytes
  bool oob_nan = false;  // "oob_fill": "nan"
  int l2_promotion = 0;  // 0, 64, 128, 256 bytes
};

struct Plan {
  std::map<std::string, std::vector<int64_t>> knobs;  // name -> allowed values (first = default)
  // "knob_scope": knob -> expression over the problem's parameters. Where it is 0 the kernel
  // ignores the knob (a knob of the wgrad form under form=fwd), so the tuner holds it at its
  // default instead of spending evaluations on identical binaries.
  std::map<std::string, std::string> knob_scope;
  std::map<std::string, PlanTensorMap> tensor_maps;  // by name
  std::vector<PlanLaunch> launches;
  std::string workspace_bytes = "0";
  bool workspace_zero = false;
};

/// Extracts and parses the plan comment from a candidate's source. plan_error messages name the
/// field ("launch[0].grid[1]: ...").
Result<Plan> ParsePlan(const std::string& source);

/// The knobs worth searching for one parameter setting: the plan's knobs, each out-of-scope one
/// (its knob_scope expression 0 under `params`) held to its default. Errors name the field.
Result<std::map<std::string, std::vector<int64_t>>> ScopedKnobs(
    const Plan& plan, const ProblemSpec& spec, const std::map<std::string, std::string>& params);

/// Checks a plan against a problem: kernels named, tensors known, every expression parses and
/// only uses known names. Shape-dependent bounds are checked by ResolvePlan.
Status ValidatePlan(const Plan& plan, const ProblemSpec& spec);

/// A plan with every expression evaluated for one shape: what the runner executes.
struct ResolvedLaunch {
  std::string kernel;
  int64_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1}, cluster[3] = {1, 1, 1};
  int64_t smem = 0;
  struct Arg {
    PlanArg::Kind kind;
    std::string tensor;  // kTensor; kTensorMap: the map's name
    int64_t value = 0;   // kI32 / kI64
  };
  std::vector<Arg> args;
  bool pdl = false;
};

struct ResolvedTensorMap {
  std::string tensor;
  runner::TensorMapSpec spec;
};

struct DeviceLimits {
  int num_sms = 132;
  int max_threads_per_block = 1024;
  int64_t max_smem_per_block = 227 * 1024;
  int64_t max_grid[3] = {2147483647, 65535, 65535};
  int max_cluster = 16;
  int64_t max_workspace = int64_t{8} << 30;
};

struct ResolvedPlan {
  std::vector<ResolvedLaunch> launches;
  std::map<std::string, ResolvedTensorMap> tensor_maps;  // the maps the launches name
  int64_t workspace_bytes = 0;
  bool workspace_zero = false;
};

/// Evaluates the plan for one shape and knob setting, bounding every dimension by `limits`.
Result<ResolvedPlan> ResolvePlan(const Plan& plan, const ProblemSpec& spec, const SymbolTable& symbols,
                                 const std::map<std::string, int64_t>& knob_values,
                                 const DeviceLimits& limits);

// ---- Compilation --------------------------------------------------------------------------------

enum class Arch { kSm90a, kSm100a };
std::string_view ArchName(Arch a);  // "sm_90a"
Result<Arch> ParseArch(std::string_view name);

struct ResourceReport {
  struct Kernel {
    std::string name;
    int registers = 0;
    int64_t smem_static = 0;
    int64_t stack_frame = 0;
    int64_t spill_stores = 0, spill_loads = 0;
  };
  std::vector<Kernel> kernels;
};

struct CompileRequest {
  std::string source;
  Arch arch = Arch::kSm90a;
  std::map<std::string, std::string> defines;  // -DNAME=VALUE (knobs, parameters)
  std::vector<std::string> include_dirs;       // extra allowed include directories (absent
                                               // ones find nothing); their files' contents go
                                               // into the cache key
};

struct CompileResult {
  bool ok = false;
  std::string log;          // NVRTC's log, capped
  std::string cubin_path;   // in the cache
  std::string hash;         // content hash of (source, arch, defines, NVRTC version)
  ResourceReport resources;
  bool cached = false;
  std::map<std::string, std::string> sandbox_layers;  // the worker's sandbox (empty when cached)
};

struct CompileOptions {
  std::string cache_dir;            // default: <workspace>/cache
  std::string compile_worker;       // path of ws_compile; default: beside the running binary
  double timeout_s = 60;
  int64_t memory_bytes = int64_t{4} << 30;
};

/// Hex SHA-256 of `data` (kernel identities, the compile cache's keys).
std::string Sha256Hex(std::string_view data);

/// Compiles in a separate, limited process. A compile error is ok() with result.ok == false; an
/// error Status means the compile step itself broke (no worker, cache unwritable).
Result<CompileResult> Compile(const CompileRequest& req, const CompileOptions& opts);

// ---- Evaluation ---------------------------------------------------------------------------------

/// kNotRun: compiled and the plan is valid, but nothing ran (no GPU, or --compile-only).
enum class Verdict {
  kOk, kCompileError, kPlanError, kCrashed, kTimeout, kWrongAnswer, kSuspicious, kNotRun
};
std::string_view VerdictName(Verdict v);

struct Timing {
  double median_us = 0, min_us = 0, p90_us = 0, mean_us = 0, stdev_us = 0;
  int iterations = 0;
  bool graph = false;  // timed as CUDA-graph replays
};

/// One shape's outcome.
struct CaseResult {
  std::string kind;  // "test", "bench", "hidden"
  Shape shape;
  Verdict verdict = Verdict::kOk;
  std::string message;             // first mismatches, crash reason, ...
  std::optional<Timing> timing;    // bench shapes
  double sol_us = 0;               // speed-of-light time for this shape on this GPU (0 if unknown)
  double bytes = 0;                // minimum bytes moved
  std::map<std::string, double> flops;
};

struct DeviceInfo {
  std::string name;        // "NVIDIA H200"
  std::string arch;        // "sm_90a"
  std::string driver;      // "580.159.04"
  int num_sms = 0;
  int64_t l2_bytes = 0;
  int64_t memory_bytes = 0;
  DeviceLimits limits;
};

/// Measured ceilings for one GPU model.
struct DeviceCeilings {
  std::string gpu;
  double copy_bytes_per_s = 0;   // read + write counted
  double bf16_flops_per_s = 0;
  double fp8_flops_per_s = 0;
  std::string measured_at;
};

struct EvalRequest {
  const ProblemSpec* spec = nullptr;
  std::string source;                          // the candidate .cu
  /// A library baseline ("cublaslt:<op>", a spec's "baseline"): evaluated instead of `source`.
  std::string library;
  std::string source_name;                     // for messages
  Arch arch = Arch::kSm90a;
  std::map<std::string, std::string> params;   // resolved parameters
  std::map<std::string, int64_t> knobs;        // overrides; others take their default
  bool compile_only = false;
  bool time_bench = true;                      // time the bench shapes
  bool include_hidden = true;
  bool include_bench = true;                   // false: test (and hidden) shapes only, untimed
  /// Nonempty: only the bench shapes where this expression (the spec's symbols and parameters,
  /// as in a plan) is nonzero, e.g. "M <= 128" to sweep a small-M path. Never ranked.
  std::string bench_where;
  /// Set: every input set of every case comes from this seed (DerivedInputSeed) instead of the
  /// OS's CSPRNG, so two evaluations with the same seed time the same inputs (a paired A/B of
  /// knob variants, e.g. the same expert routing). Poison bytes, the audit iteration and the
  /// digest key stay fresh. Never ranked.
  std::optional<uint64_t> input_seed;
  int timing_iterations = 0;                   // timed launches per bench shape; 0: chosen from
                                               // the speed-of-light time (the ranked protocol)
  std::optional<DeviceCeilings> ceilings;      // for speed-of-light
  std::optional<DeviceInfo> device;            // from ProbeDevice; probed here when empty
  /// Deep mode: after an ok verdict, run the test shapes again (untimed) under compute-sanitizer
  /// memcheck, racecheck and initcheck (docs/deep-mode.md). A finding makes the verdict
  /// wrong_answer; a tool that cannot run makes the verdict not_run and says so in `deep`.
  bool deep = false;
};

/// Device-library headers by path relative to the library ("ws/mx.cuh") -> content.
using LibraryHeaders = std::map<std::string, std::string>;

/// Input set `set` of case `case_id` ("bench-3") under EvalRequest::input_seed: a fixed mix of
/// the three, distinct across cases and sets (set -1: a test case's second run).
uint64_t DerivedInputSeed(uint64_t seed, std::string_view case_id, int set);

struct EvalResult {
  Verdict verdict = Verdict::kOk;
  std::string message;
  CompileResult compile;
  std::vector<CaseResult> cases;
  std::optional<DeviceInfo> device;
  std::map<std::string, int64_t> knobs;        // the knob values used
  double geomean_us = 0;                       // over bench shapes, when timed
  double sol_fraction = 0;                     // geomean of T_SOL / T over bench shapes
  bool ran_on_gpu = false;
  /// The candidate runner's sandbox layers (SandboxResult::layers), or the compile worker's when
  /// nothing ran; "stage" says which.
  std::map<std::string, std::string> sandbox_layers;
  /// Deep mode, when asked for: per tool ("memcheck", "racecheck", "initcheck") "clean",
  /// "3 errors", "2 hazards", "timeout after N s", "unavailable: <why>" or "not run: <why>".
  /// Empty when deep mode was not asked for.
  std::map<std::string, std::string> deep;
  /// Wall seconds per phase ("compile", "reference_compile", "reference_run", "candidate_run",
  /// "check", "deep", "total"): where an evaluation's time goes beyond the timed work. Within the
  /// two runs, as the runners report them: "runner_startup" (CUDA start-up, module loads),
  /// "gpu_wait" (queued for the GPU lock behind other evaluations) and "runner_case_<part>"
  /// summed over their cases (setup, check_run, dump, timing, rehash, total).
  std::map<std::string, double> phase_seconds;
  /// Runs the judge repeated because its own side failed (the trusted reference runner), and why.
  std::vector<std::string> retries;
  /// The runners' scratch folder (job files, results, dumps) when EvaluatorOptions::keep_scratch
  /// kept it; empty otherwise.
  std::string kept_scratch;
  /// The device-library headers the candidate was compiled with (LibraryClosure), as they were.
  LibraryHeaders library_headers;
};

/// Why a deep-mode evaluation could not give its answer ("memcheck: unavailable: ..."), or ""
/// when deep mode was not asked for, ran, or was not run for a reason of its own (no GPU,
/// compile only, an earlier verdict). Callers that asked for deep mode treat a non-empty answer
/// as a failure of the evaluation, never as a pass.
std::string DeepModeFailure(const EvalResult& r);

struct EvaluatorOptions {
  std::string workspace = ".warpsmith";        // cache and scratch live here
  std::string runner;                          // path of ws_runner; default: beside this binary
  std::string compile_worker;                  // path of ws_compile; default: beside this binary
  double startup_timeout_s = 30;               // runner start-up allowance (module loads, NVRTC)
  double case_timeout_s = 5;                   // added per correctness case to the runner's limit
  double compile_timeout_s = 60;
  bool keep_scratch = false;                   // keep runner dumps (for debugging)
  std::string scratch_root;                    // runner scratch folders go here; empty:
                                               // /dev/shm when it has room, else the workspace's
  std::string compute_sanitizer;               // deep mode; default: FindComputeSanitizer()
  double deep_time_factor = 20;                // a sanitizer run's allowance per case, in
                                               // multiples of case_timeout_s
  std::string visible_devices;                 // CUDA_VISIBLE_DEVICES for the runners (empty:
                                               // ours), e.g. one GPU per concurrent evaluation
  std::string kernel_library;                  // the trusted device headers candidates may
                                               // include ("ws/..."); empty: KernelLibraryDir()
  std::string gpu_lock_dir = "/tmp/warpsmith-gpu-locks";  // one runner per GPU at a time across
                                               // the host's processes (gpu_lock.h); empty: off
  double gpu_lock_wait_s = 600;                // a runner's longest wait for its GPU; past it
                                               // the evaluation fails (not the candidate)
  bool overlap_runners = true;                 // the candidate runner starts up while the
                                               // reference runs (gpu_lock.h's TurnGate);
                                               // WARPSMITH_OVERLAP_RUNNERS=0 / 1 overrides it
};

/// `rel` in the source tree beside this binary (build/ sits in the repository; the GPU machine's
/// carried tree) when it exists there, else in the tree the binary was built from.
std::string SourceTreePath(const std::string& rel);

/// The trusted device library (kernels/include: headers under ws/ that every candidate may
/// include): $WARPSMITH_KERNEL_LIBRARY, else kernels/include beside the binary's source tree,
/// else the one of the source tree it was built from. Trusted references never include it, so a
/// bug there cannot hide in the judge too.
std::string KernelLibraryDir();
/// The trusted references' own headers ("ref/...", shared MX rules): `include` beside the
/// problem's folder (problems/include; a bundle's problem/include).
std::string ReferenceLibraryDir(const ProblemSpec& spec);

/// `opts.kernel_library`, or KernelLibraryDir() when that is empty.
std::string KernelLibraryDir(const EvaluatorOptions& opts);

/// The library headers `source` includes ("ws/..."), directly or through one another, read from
/// `library_dir`. A header that is not there is left out: the compile step names it.
LibraryHeaders LibraryClosure(std::string_view source, const std::string& library_dir);

/// Writes `headers` under `library_dir` (ws/... paths), a library folder to compile against:
/// LibraryClosure's inverse, for bundles and re-verification.
Status WriteLibraryHeaders(const LibraryHeaders& headers, const std::string& library_dir);

/// A kernel's identity: the sha256 of its source, and of the library headers it includes when it
/// includes any, so a kernel verified against one version of a header is not confused with the
/// same text compiled against another.
std::string KernelHash(std::string_view source, const LibraryHeaders& headers);

/// `source` made self-contained: each `#include "ws/..."` of a header in `headers` replaced by
/// the header's text (once, as #pragma once would), for exports that must not depend on the
/// library's later versions.
std::string InlineLibrary(std::string_view source, const LibraryHeaders& headers);

/// The -D defines a kernel sees for the problem's parameters: WS_<NAME>=<index of the chosen
/// value> and WS_<NAME>_<VALUE>=<index> for every value (the spec's default where not chosen).
std::map<std::string, std::string> ParamDefines(const ProblemSpec& spec,
                                                const std::map<std::string, std::string>& params);

/// Probes for a usable GPU by running the runner's `devices` command. No GPU is not an error:
/// the result is empty and `why_none` (if given) says why.
Result<std::optional<DeviceInfo>> ProbeDevice(const EvaluatorOptions& opts,
                                              std::string* why_none = nullptr);

/// Measures copy bandwidth and BF16/FP8 matrix rates (through the runner).
Result<DeviceCeilings> MeasureCeilings(const EvaluatorOptions& opts);

/// Compiles the problem's trusted GPU reference the way an evaluation does (its plan validated,
/// the references' library on the include path), without a GPU. An error names the reference.
Result<CompileResult> CompileGpuReference(const ProblemSpec& spec,
                                          const std::map<std::string, std::string>& params,
                                          Arch arch, const EvaluatorOptions& opts);

/// Checks the problem's trusted GPU reference against its CPU reference: the reference runner
/// generates fresh inputs for every test and hidden shape (and the smallest bench shape), dumps
/// them, and the CPU reference recomputes the outputs here. Returns the shapes checked; an error
/// names the first disagreement.
Result<std::vector<Shape>> VerifyGpuReference(const ProblemSpec& spec,
                                              const std::map<std::string, std::string>& params,
                                              Arch arch, const DeviceInfo& device,
                                              const EvaluatorOptions& opts);

/// Compiles, runs, checks and times one candidate. Failures of the candidate are verdicts; an
/// error Status means the evaluator itself could not work (bad request, missing runner).
Result<EvalResult> Evaluate(const EvalRequest& req, const EvaluatorOptions& opts);

}  // namespace ws

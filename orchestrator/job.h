// Jobs: one evaluation as data, so it can run elsewhere (another process, another host). A
// JobSpec names the problem, the candidate and the request's switches; a JobResult carries the
// EvalResult back. Both travel as JSON files (`warpsmith job run SPEC.json`).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "evaluator/evaluator.h"

namespace ws {

/// Compile jobs need CPU cores only; a GPU job holds exactly one GPU while it runs.
enum class JobKind { kCompile, kGpu };
std::string_view JobKindName(JobKind k);  // "compile", "gpu"

struct JobSpec {
  std::string id;  // the logical job id: unique in the store, the same across retries
  int try_number = 1;
  JobKind kind = JobKind::kGpu;
  std::string problem;       // the problem's name
  std::string problems_dir;  // where <problem>/spec.json is found by the job
  std::string source;
  std::string library;
  std::string source_name;
  Arch arch = Arch::kSm90a;
  std::map<std::string, std::string> params;
  std::map<std::string, int64_t> knobs;
  bool compile_only = false;
  bool time_bench = true;
  bool include_hidden = true;
  bool include_bench = true;
  int timing_iterations = 0;
  bool deep = false;
  /// Ceilings of every GPU model the store knows; the job picks its device's.
  std::vector<DeviceCeilings> ceilings;
  /// The device, when the submitter knows which one the job gets (saves a probe).
  std::optional<DeviceInfo> device;
  std::string workspace;    // the job's evaluator workspace (compile cache, scratch)
  std::string result_path;  // where `warpsmith job run` writes the JobResult
};

/// What came back from one try of a job.
struct JobResult {
  std::string job_id;
  int try_number = 1;
  bool ok = false;    // the evaluator worked (the candidate's failures are verdicts in result)
  std::string error;  // why not, when !ok
  EvalResult result;
  double seconds = 0;            // wall time of the evaluation
  std::string node;              // the host that ran it
  std::optional<int> gpu_index;  // the CUDA ordinal on that host (CUDA_VISIBLE_DEVICES)
};

std::string JobSpecJson(const JobSpec& s);
Result<JobSpec> ParseJobSpec(const std::string& json_text);
std::string JobResultJson(const JobResult& r);
Result<JobResult> ParseJobResult(const std::string& json_text);

/// A request as a job spec (`spec` must be set on the request).
JobSpec JobFromRequest(const EvalRequest& req, JobKind kind, const std::string& problems_dir);

/// Evaluates a job in this process (the problem loaded from spec.problems_dir); never fails:
/// an evaluator error is a result with ok == false. Without `eval`, ws::Evaluate.
using JobEvalFn = std::function<Result<EvalResult>(const EvalRequest&, const EvaluatorOptions&)>;
JobResult RunJobInProcess(const JobSpec& spec, const EvaluatorOptions& base,
                          const JobEvalFn& eval = nullptr);

/// `warpsmith job run SPEC.json`: evaluates the job and writes its result (atomically) to
/// spec.result_path, or to `out_path` when given. The GPU index is read from
/// CUDA_VISIBLE_DEVICES (a single ordinal). WARPSMITH_JOB_DELAY_S delays the start (tests: a
/// job long enough to be cancelled mid-way).
Status RunJobFile(const std::string& spec_path, const std::string& out_path,
                  const EvaluatorOptions& base);

/// This host's name.
std::string HostName();

/// The running binary (/proc/self/exe), which executors start as `job run` by default; "" when
/// unreadable.
std::string SelfExecutable();

}  // namespace ws

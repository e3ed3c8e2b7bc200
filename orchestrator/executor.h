// Executors: where evaluations run. The campaign engine hands jobs (orchestrator/job.h) to an
// Executor and records each job's first result once, keyed by the job id (the store refuses a
// second evaluation with the same job id). Compile jobs run wherever there are CPU cores; a GPU
// job holds exactly one GPU while it runs.
//
// Implementations: LocalExecutor (this host: one runner per GPU, compiles on a thread pool) and
// SlurmExecutor (orchestrator/slurm.h). Tests use fakes.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "orchestrator/job.h"

namespace ws {

/// kCancelled, kLost and kFailed are terminal without a result: the job may be retried.
enum class JobState { kQueued, kRunning, kDone, kFailed, kCancelled, kLost };
std::string_view JobStateName(JobState s);  // "queued", "running", "done", ...

struct JobStatus {
  std::string job_id;
  int try_number = 1;
  JobState state = JobState::kQueued;
  std::string external_id;  // the scheduler's id of this try ("1234_5"), "" when none
  std::string node;         // where it runs or ran, when known
  std::optional<int> gpu_index;
  std::string message;  // why it failed or was lost
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual std::string name() const = 0;  // "local", "slurm"
  /// One line for the campaign display ("local: GPUs 0,1; 2 compile threads").
  virtual std::string Describe() const = 0;
  /// GPUs that time at once (0: none; GPU jobs are then refused).
  virtual int gpu_slots() const = 0;

  /// Submits a batch; jobs of one kind may become one job array. Submitting an id again (a
  /// retry: try_number + 1) replaces the earlier try, whose result is still taken if it comes
  /// first.
  virtual Status Submit(const std::vector<JobSpec>& jobs) = 0;
  /// The state of every job submitted and neither collected nor cancelled.
  virtual Result<std::vector<JobStatus>> Poll() = 0;
  /// Stops a job (every try of it); its result, should one still come, is dropped.
  virtual Status Cancel(const std::string& job_id) = 0;
  /// Results that arrived since the last call, at most one per job id; a collected job is
  /// forgotten (other tries of it still running are cancelled).
  virtual Result<std::vector<JobResult>> Collect() = 0;
};

// ---- Running a batch to its end -----------------------------------------------------------------

struct BatchOptions {
  int max_tries = 3;          // a job lost, cancelled by someone else or failed is retried
  double poll_seconds = 0.1;  // between polls when nothing happened
  /// Non-empty: cancel what is left and return (a stopped campaign, a spent budget).
  std::function<std::string()> stop;
  /// Every state change and retry (for the store's jobs table).
  std::function<void(const JobSpec&, const JobStatus&)> on_state;
};

/// What became of a batch: which jobs delivered a result and which were cancelled by `stop`.
struct BatchOutcome {
  int results = 0;
  int cancelled = 0;
  int retries = 0;
  std::string stopped;  // the stop reason, when it stopped early
};

/// Submits `jobs` (unique ids), polls and collects until every job has delivered its first
/// result (handed to `on_result` exactly once per job id, in arrival order) or `stop` says so.
/// A job that ends without a result is resubmitted up to max_tries; after that, or when
/// on_result fails, the batch's remaining jobs are cancelled and the error returned.
Result<BatchOutcome> RunBatch(
    Executor& ex, const std::vector<JobSpec>& jobs, const BatchOptions& opts,
    const std::function<Status(const JobSpec&, const JobResult&)>& on_result);

// ---- The local executor -------------------------------------------------------------------------

struct LocalExecutorOptions {
  /// The GPUs to time on, as CUDA names them (ordinals "0", "1", or UUIDs). Empty: no GPU jobs.
  std::vector<std::string> gpus;
  /// Run each GPU job in its own `job_binary job run` process with CUDA_VISIBLE_DEVICES set to
  /// its GPU (needed with more than one GPU: the evaluator uses its process's first visible
  /// GPU). False: evaluate on the runner's thread (one GPU that this process already sees).
  bool pin_processes = false;
  std::string job_binary;                      // warpsmith; default /proc/self/exe
  std::string scratch_dir;                     // spec and result files of pinned jobs
  std::map<std::string, std::string> job_env;  // added to pinned jobs' environment
  int compile_threads = 0;                     // 0: min(4, CPU cores)
  EvaluatorOptions eval_opts;
  JobEvalFn evaluate;  // in-process evaluation; default ws::Evaluate
};

/// Parses "0,1,3" (or a CUDA_VISIBLE_DEVICES value) into GPU names; "" is none.
std::vector<std::string> ParseGpuList(const std::string& text);

/// Runs jobs on this host: one runner per GPU (never two GPU jobs on one GPU at once) and a pool
/// of compile threads. Thread-safe.
std::unique_ptr<Executor> MakeLocalExecutor(const LocalExecutorOptions& opts);

}  // namespace ws

// The runner's job file (docs/runner-protocol.md), parsed and validated, plus timing statistics.
// Host-only: no CUDA here, so it is tested without a GPU.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "evaluator/runner/sample.h"
#include "evaluator/runner/tensor_map.h"
#include "problems/init.h"

namespace ws::runner {

/// Dtype code (problems/init.h kWsDtype*, the order of ws::DType) for a name such as "bf16",
/// "fp8_e4m3"; -1 when unknown.
int DtypeCode(std::string_view name);

struct TensorJob {
  std::string name;
  int dtype = 0;        // kWsDtype*
  int64_t numel = 0;
  bool input = false;
  int dist = 0;         // kWsDist*
  float p0 = 0, p1 = 1;  // mean/stddev or lo/hi (problems/init.h kWsDist* says which is what)
  float p2 = 0, p3 = 0;
  int64_t n0 = 0, n1 = 0, n2 = 0;
  int tensor_index = 0;  // generation key: the position in the case's "tensors" array
  int64_t bytes() const;
  WsInitParams init() const { return {dist, p0, p1, p2, p3, n0, n1, n2}; }
};

struct ArgJob {
  enum class Kind { kTensor, kWorkspace, kI32, kI64, kTensorMap };
  Kind kind = Kind::kI32;
  int tensor = -1;    // kTensor, kTensorMap: index into CaseJob::tensors
  int64_t value = 0;  // kI32, kI64
  // kTensorMap: the map as the job gives it and, checked against its tensor, what is encoded.
  std::string map_name;
  TensorMapSpec map;
  TensorMapEncoding encoding;
};

struct LaunchJob {
  std::string kernel;
  uint32_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1}, cluster[3] = {1, 1, 1};
  uint32_t smem = 0;
  std::vector<ArgJob> args;
  bool pdl = false;  // programmatic dependent launch (programmatic stream serialization)
  bool clustered() const { return cluster[0] * cluster[1] * cluster[2] > 1; }
};

struct TimingJob {
  int warmup = 0;
  // After `warmup` runs, further warm-up runs (each synchronized) until this much wall time has
  // passed since the first: an idle GPU's clocks take milliseconds to ramp, and a short kernel's
  // few warm-up runs would leave its first timed runs at idle clocks.
  int warmup_ms = 0;
  int iterations = 1;
  int64_t l2_flush_bytes = 0;
  int audit_iteration = 0;
  bool graph = false;  // time replays of a CUDA graph of the plan's launches
  // Fresh inputs: before every warm-up and timed run the runner regenerates the run's input set
  // (its buffers, so addresses still rotate) from FreshRunSeed(fresh_seed, run), so no two runs
  // see the same inputs and a cache keyed by pointer or content replays wrong outputs; the
  // orchestrator checks the audited and the last run against references on their run seeds.
  std::optional<uint64_t> fresh_seed;
};

/// The input seed of run `run` under fresh inputs: timed iteration i is run i, warm-up run w is
/// run -1 - w. Shared by the runner and the orchestrator (which asks the reference for the audited
/// and the last run's inputs).
inline uint64_t FreshRunSeed(uint64_t fresh_seed, int64_t run) {
  return ws_mix64(fresh_seed ^ ws_mix64(static_cast<uint64_t>(run) * 0x9E3779B97F4A7C15ull +
                                        0x632BE59BD9B4E019ull));
}

/// Sampled write-back of large outputs (docs/runner-protocol.md, "sample"): in the runs named,
/// the runner writes back only some rows (last dimension) of each output named, drawn by the key
/// after the run, so the candidate's launches cannot know which. Both runners draw the same rows.
struct SampleJob {
  uint64_t key = 0;
  int every = 16;                 // about one row in `every`
  std::vector<std::string> runs;  // "check", "audit", "last"
  struct Output {
    int tensor = 0;  // index into CaseJob::tensors
    int64_t row_bytes = 0;
  };
  std::vector<Output> outputs;
  bool Samples(const std::string& run) const {
    for (const auto& r : runs) {
      if (r == run) return true;
    }
    return false;
  }
};

/// A library call in place of the plan's launches: a library baseline ("cublaslt:<op>", see
/// evaluator/runner/library_baselines.h). The runner allocates the workspace as usual.
struct LibraryJob {
  std::string op;            // "bf16_gemm", "fp8_rowwise_gemm"
  int64_t m = 0, n = 0, k = 0;
  std::vector<int> tensors;  // indices into CaseJob::tensors, in the op's argument order
};

/// Tensor dtypes (kWsDtype*) a library op takes, in argument order; the last one is the output.
/// Empty for an unknown op (evaluator/runner/library_job.cc).
std::vector<int> LibraryOpDtypes(const std::string& op);

/// Checks a library call against its tensors: known op, arity, dtypes and element counts.
Status ValidateLibraryJob(const LibraryJob& job, const std::vector<TensorJob>& tensors);

struct CaseJob {
  std::string id;
  std::vector<LaunchJob> launches;
  std::optional<LibraryJob> library;  // then `launches` is empty
  int64_t workspace_bytes = 0;
  bool workspace_zero = false;
  std::vector<TensorJob> tensors;
  std::vector<uint64_t> input_seeds;
  uint8_t poison = 0;
  std::optional<TimingJob> timing;
  std::string dump;  // path prefix; empty: no dumps
  bool dump_inputs = false;
  // Outputs (indices into `tensors`) digested under Job::digest_key instead of dumped.
  std::vector<int> digest;
  std::optional<SampleJob> sample;
  // Seconds the case may take from its start (timed runs included) before the runner's watchdog
  // stops the process (watchdog.h); absent: no limit of its own.
  std::optional<double> budget_s;
};

struct Job {
  std::string cubin;  // empty when every case is a library call
  std::string result;
  std::optional<uint64_t> digest_key;  // required when a case digests an output
  // A file to flock before the first case and hold to the end (evaluator/gpu_lock.h), waiting at
  // most gpu_lock_wait_s; empty: run without.
  std::string gpu_lock;
  double gpu_lock_wait_s = 0;
  // The evaluator's turn gate (evaluator/gpu_lock.h's TurnGate): after start-up the runner
  // waits at most turn_wait_s for this file's lock, goes on only if it reads runner::kTurnGo,
  // and only then loads the cubin; empty: no gate.
  std::string turn;
  double turn_wait_s = 0;
  std::vector<CaseJob> cases;
};

/// Parses and validates a job. Errors name the field ("cases[0].tensors[1].dtype: ...").
Result<Job> ParseJob(std::string_view text);

struct TimingStats {
  double median_us = 0, min_us = 0, p90_us = 0, mean_us = 0, stdev_us = 0;
};

/// Median (mean of the two middle values for even counts), min, p90 (nearest rank), mean and
/// sample standard deviation. All zero for an empty input.
TimingStats ComputeStats(std::vector<double> times_us);

}  // namespace ws::runner

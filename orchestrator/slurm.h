// The Slurm executor: jobs through the Slurm CLI (sbatch --parsable with job arrays, squeue,
// scancel). A job runs `warpsmith job run SPEC.json` on a node; specs and results travel through
// a shared directory (docs/scale-out.md).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "orchestrator/executor.h"

namespace ws {

struct SlurmOptions {
  std::string partition;  // sbatch --partition (empty: the cluster's default)
  std::string account;    // sbatch --account
  std::string time;       // sbatch --time per job ("10", "0:30:00")
  /// Seen at the same path by the orchestrator and every node: batches/ (specs, scripts, job
  /// output), results/ and the jobs' evaluator workspace (workspace/: the compile cache).
  std::string shared_dir;
  std::string job_binary;               // warpsmith as the nodes see it; default: this binary
  std::vector<std::string> extra_args;  // more sbatch arguments
  /// How long a job may be gone from the queue before its result file must be there (shared
  /// filesystems publish files late); after that it counts as lost and is retried.
  double lost_grace_s = 5;
  double command_timeout_s = 60;  // per sbatch/squeue/scancel call
};

/// The sbatch arguments for an array of `tasks` jobs of one kind (no program name, no script).
std::vector<std::string> SbatchArgs(const SlurmOptions& opts, JobKind kind, int tasks,
                                    const std::string& output_pattern);

std::unique_ptr<Executor> MakeSlurmExecutor(const SlurmOptions& opts);

/// scancel of Slurm job ids ("1234_5"): jobs a killed orchestrator left behind.
Status ScancelJobs(const std::vector<std::string>& external_ids);

}  // namespace ws

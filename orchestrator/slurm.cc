// The Slurm executor over the CLI. Every batch of one kind is one job array; a retry is an array
// of one. State comes from squeue; a job that leaves the queue without writing its result file
// (cancelled, its node died, it crashed) is lost after a grace period, and the batch driver
// retries it. Results are files, so the first try to deliver one wins and is collected once.
#include "orchestrator/slurm.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "base/files.h"
#include "sandbox/sandbox.h"

namespace ws {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kJobName = "warpsmith";

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

class SlurmExecutor : public Executor {
 public:
  explicit SlurmExecutor(SlurmOptions opts) : opts_(std::move(opts)) {
    if (opts_.job_binary.empty())
      opts_.job_binary = SelfExecutable();
    opts_.shared_dir = fs::absolute(opts_.shared_dir).lexically_normal().string();
    session_ = fmt::format("{}-{}", ::getpid(),
                           std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count());
  }

  ~SlurmExecutor() override {
    // Nothing of ours keeps running after the orchestrator is done with it.
    std::vector<std::string> ids;
    for (const auto& [id, t] : jobs_) {
      for (const auto& tr : t.tries) {
        if (!tr.gone)
          ids.push_back(tr.external_id);
      }
    }
    if (!ids.empty())
      (void)Command("scancel", ids);
  }

  std::string name() const override { return "slurm"; }
  std::string Describe() const override {
    return fmt::format("slurm executor: partition {}, shared dir {}",
                       opts_.partition.empty() ? "(default)" : opts_.partition, opts_.shared_dir);
  }
  // GPUs are the cluster's; the campaign does not size batches by them.
  int gpu_slots() const override { return 1 << 20; }

  Status Submit(const std::vector<JobSpec>& jobs) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (JobKind kind : {JobKind::kCompile, JobKind::kGpu}) {
      std::vector<JobSpec> group;
      for (const auto& j : jobs) {
        if (j.kind == kind)
          group.push_back(j);
      }
      if (!group.empty())
        WS_RETURN_IF_ERROR(SubmitArray(kind, std::move(group)));
    }
    return Status::Ok();
  }

  Result<std::vector<JobStatus>> Poll() override {
    std::lock_guard<std::mutex> lock(mu_);
    WS_ASSIGN_OR_RETURN(auto queue, Queue());
    std::vector<JobStatus> out;
    const auto now = Clock::now();
    for (auto& [id, t] : jobs_) {
      Try& latest = t.tries.back();
      for (auto& tr : t.tries) {
        auto q = queue.find(tr.external_id);
        if (q != queue.end()) {
          tr.state = q->second.first;
          if (!q->second.second.empty())
            tr.node = q->second.second;
          continue;
        }
        if (!tr.gone) {
          tr.gone = true;
          tr.gone_at = now;
        }
      }
      JobStatus st;
      st.job_id = id;
      st.try_number = latest.try_number;
      st.external_id = latest.external_id;
      st.node = latest.node;
      if (!latest.gone) {
        st.state = latest.state;
      } else if (fs::exists(latest.result_path)) {
        st.state = JobState::kDone;
      } else if (std::chrono::duration<double>(now - latest.gone_at).count() < opts_.lost_grace_s) {
        st.state = JobState::kRunning;  // its result may still be on its way
      } else {
        st.state = JobState::kLost;
        st.message = fmt::format(
            "Slurm job {} left the queue without a result (cancelled, its "
            "node failed, or it crashed; see {})",
            latest.external_id, latest.output);
      }
      out.push_back(st);
    }
    return out;
  }

  Status Cancel(const std::string& job_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(job_id);
    if (it == jobs_.end())
      return Status::Ok();
    std::vector<std::string> ids;
    for (const auto& tr : it->second.tries) ids.push_back(tr.external_id);
    jobs_.erase(it);
    Result<std::string> r = Command("scancel", ids);
    return r.ok() ? Status::Ok() : r.status();
  }

  Result<std::vector<JobResult>> Collect() override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<JobResult> out;
    std::vector<std::string> done;
    for (auto& [id, t] : jobs_) {
      for (const auto& tr : t.tries) {
        std::error_code ec;
        if (!fs::exists(tr.result_path, ec))
          continue;
        Result<std::string> text = ReadFile(tr.result_path);
        if (!text.ok())
          continue;  // being written by a filesystem without atomic rename: next poll
        Result<JobResult> r = ParseJobResult(*text);
        if (!r.ok())
          continue;
        if (r->node.empty())
          r->node = tr.node;
        out.push_back(std::move(*r));
        done.push_back(id);
        break;
      }
    }
    std::vector<std::string> stray;  // other tries of collected jobs
    for (const auto& id : done) {
      for (const auto& tr : jobs_[id].tries) {
        if (!tr.gone && !fs::exists(tr.result_path))
          stray.push_back(tr.external_id);
      }
      jobs_.erase(id);
    }
    if (!stray.empty())
      (void)Command("scancel", stray);
    return out;
  }

 private:
  struct Try {
    int try_number = 1;
    std::string external_id;  // "<array job id>_<task>"
    std::string result_path;
    std::string output;  // the job's stdout/stderr file
    JobState state = JobState::kQueued;
    std::string node;
    bool gone = false;  // no longer in squeue
    Clock::time_point gone_at;
  };
  struct Tracked {
    JobSpec spec;
    std::vector<Try> tries;
  };

  Result<std::string> Command(const std::string& program, const std::vector<std::string>& args) {
    SandboxSpec spec;
    spec.argv.push_back(program);
    for (const auto& a : args) spec.argv.push_back(a);
    spec.limits.wall_seconds = opts_.command_timeout_s;
    WS_ASSIGN_OR_RETURN(SandboxResult r, RunSandboxed(spec));
    if (r.signaled || r.exit_code != 0) {
      std::string err = r.stderr_data.substr(0, 500);
      while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
      return Status::Error("{} failed ({}): {}", program, r.Describe(), err);
    }
    return r.stdout_data;
  }

  Status SubmitArray(JobKind kind, std::vector<JobSpec> group) {
    const std::string dir = fmt::format("{}/batches/{}-{}", opts_.shared_dir, session_, ++batch_);
    const std::string results = opts_.shared_dir + "/results";
    std::error_code ec;
    fs::create_directories(dir, ec);
    fs::create_directories(results, ec);
    if (ec)
      return Status::Error("slurm shared dir {}: {}", opts_.shared_dir, ec.message());
    const std::string workspace = opts_.shared_dir + "/workspace";
    for (size_t k = 0; k < group.size(); ++k) {
      JobSpec& s = group[k];
      s.result_path = fmt::format("{}/{}.{}.json", results, s.id, s.try_number);
      s.workspace = workspace;
      s.device.reset();  // the node's GPU is probed there
      fs::remove(s.result_path, ec);
      WS_RETURN_IF_ERROR(WriteFileAtomic(fmt::format("{}/{}.json", dir, k), JobSpecJson(s)));
    }
    const std::string script = dir + "/run.sh";
    WS_RETURN_IF_ERROR(WriteFileAtomic(
        script, fmt::format("#!/bin/sh\n"
                            "# A warpsmith job array: task N evaluates N.json of this folder.\n"
                            "exec {} --workspace {} job run {}/\"${{SLURM_ARRAY_TASK_ID:-0}}\""
                            ".json\n",
                            Quote(opts_.job_binary), Quote(workspace), Quote(dir))));
    fs::permissions(script, fs::perms::owner_all, fs::perm_options::add, ec);
    std::vector<std::string> args =
        SbatchArgs(opts_, kind, static_cast<int>(group.size()), dir + "/%a.out");
    args.push_back(script);
    WS_ASSIGN_OR_RETURN(std::string out, Command("sbatch", args));
    // --parsable: "<id>" or "<id>;<cluster>".
    std::string id = out.substr(0, out.find_first_of(";\n"));
    if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos)
      return Status::Error("sbatch answered '{}', not a job id", out.substr(0, 200));
    for (size_t k = 0; k < group.size(); ++k) {
      Try tr;
      tr.try_number = group[k].try_number;
      tr.external_id = fmt::format("{}_{}", id, k);
      tr.result_path = group[k].result_path;
      tr.output = fmt::format("{}/{}.out", dir, k);
      Tracked& t = jobs_[group[k].id];
      t.spec = group[k];
      t.tries.push_back(tr);
    }
    return Status::Ok();
  }

  // Our jobs in the queue: external id -> (state, node). An unreachable controller is retried
  // for a while before it is an error.
  Result<std::map<std::string, std::pair<JobState, std::string>>> Queue() {
    Result<std::string> text =
        Command("squeue", {"--noheader", "--array", "--name", kJobName, "--format", "%i|%T|%N"});
    if (!text.ok()) {
      if (++squeue_failures_ * 1.0 < 60)
        return last_queue_;
      return text.status();
    }
    squeue_failures_ = 0;
    std::map<std::string, std::pair<JobState, std::string>> q;
    std::istringstream in(*text);
    std::string line;
    while (std::getline(in, line)) {
      size_t a = line.find('|');
      size_t b = line.find('|', a == std::string::npos ? a : a + 1);
      if (a == std::string::npos || b == std::string::npos)
        continue;
      const std::string id = line.substr(0, a), state = line.substr(a + 1, b - a - 1);
      JobState s = state == "PENDING" || state == "CONFIGURING" || state == "REQUEUED"
                       ? JobState::kQueued
                       : JobState::kRunning;
      q[id] = {s, line.substr(b + 1)};
    }
    last_queue_ = q;
    return q;
  }

  SlurmOptions opts_;
  std::string session_;
  int batch_ = 0;
  std::mutex mu_;
  std::map<std::string, Tracked> jobs_;
  std::map<std::string, std::pair<JobState, std::string>> last_queue_;
  int squeue_failures_ = 0;
};

}  // namespace

std::vector<std::string> SbatchArgs(const SlurmOptions& opts, JobKind kind, int tasks,
                                    const std::string& output_pattern) {
  std::vector<std::string> a = {"--parsable",
                                "--no-requeue",
                                "--job-name",
                                kJobName,
                                fmt::format("--array=0-{}", tasks - 1),
                                "--output",
                                output_pattern,
                                "--cpus-per-task=1"};
  // A GPU job holds exactly one GPU; a compile job none.
  if (kind == JobKind::kGpu)
    a.push_back("--gres=gpu:1");
  if (!opts.partition.empty())
    a.push_back("--partition=" + opts.partition);
  if (!opts.account.empty())
    a.push_back("--account=" + opts.account);
  if (!opts.time.empty())
    a.push_back("--time=" + opts.time);
  for (const auto& x : opts.extra_args) a.push_back(x);
  return a;
}

Status ScancelJobs(const std::vector<std::string>& external_ids) {
  if (external_ids.empty())
    return Status::Ok();
  SandboxSpec spec;
  spec.argv = {"scancel"};
  for (const auto& id : external_ids) spec.argv.push_back(id);
  WS_ASSIGN_OR_RETURN(SandboxResult r, RunSandboxed(spec));
  if (r.signaled || r.exit_code != 0)
    return Status::Error("scancel failed ({}): {}", r.Describe(), r.stderr_data.substr(0, 300));
  return Status::Ok();
}

std::unique_ptr<Executor> MakeSlurmExecutor(const SlurmOptions& opts) {
  return std::make_unique<SlurmExecutor>(opts);
}

}  // namespace ws

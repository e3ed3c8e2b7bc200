// The batch driver (retries, exactly-once hand-off) and the local executor.
#include "orchestrator/executor.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "base/files.h"

extern char** environ;

namespace ws {

std::string_view JobStateName(JobState s) {
  switch (s) {
    case JobState::kQueued:
      return "queued";
    case JobState::kRunning:
      return "running";
    case JobState::kDone:
      return "done";
    case JobState::kFailed:
      return "failed";
    case JobState::kCancelled:
      return "cancelled";
    case JobState::kLost:
      return "lost";
  }
  return "unknown";
}

// ---- RunBatch -----------------------------------------------------------------------------------

Result<BatchOutcome> RunBatch(
    Executor& ex, const std::vector<JobSpec>& jobs, const BatchOptions& opts,
    const std::function<Status(const JobSpec&, const JobResult&)>& on_result) {
  BatchOutcome out;
  std::map<std::string, JobSpec> pending;  // id -> its latest try
  std::map<std::string, JobState> last_state;
  for (const auto& j : jobs) {
    if (!pending.emplace(j.id, j).second)
      return Status::Error("job {} is submitted twice in one batch", j.id);
  }
  auto note = [&](const JobSpec& spec, const JobStatus& st) {
    if (opts.on_state)
      opts.on_state(spec, st);
  };
  auto cancel_rest = [&]() {
    for (const auto& [id, spec] : pending) {
      (void)ex.Cancel(id);
      JobStatus st;
      st.job_id = id;
      st.try_number = spec.try_number;
      st.state = JobState::kCancelled;
      st.message = "cancelled by the orchestrator";
      note(spec, st);
      ++out.cancelled;
    }
    pending.clear();
  };
  if (jobs.empty())
    return out;
  if (Status s = ex.Submit(jobs); !s.ok())
    return s;
  for (const auto& j : jobs) {
    JobStatus st;
    st.job_id = j.id;
    st.try_number = j.try_number;
    st.state = JobState::kQueued;
    note(j, st);
    last_state[j.id] = JobState::kQueued;
  }
  auto retry = [&](JobSpec& spec, const std::string& why) -> Status {
    if (spec.try_number >= opts.max_tries) {
      return Status::Error("job {} ({}) gave no result in {} tries: {}", spec.id, spec.source_name,
                           spec.try_number, why);
    }
    ++spec.try_number;
    ++out.retries;
    WS_RETURN_IF_ERROR(ex.Submit({spec}));
    JobStatus st;
    st.job_id = spec.id;
    st.try_number = spec.try_number;
    st.state = JobState::kQueued;
    st.message = "retry after: " + why;
    note(spec, st);
    last_state[spec.id] = JobState::kQueued;
    return Status::Ok();
  };

  while (!pending.empty()) {
    if (opts.stop) {
      if (std::string why = opts.stop(); !why.empty()) {
        out.stopped = why;
        cancel_rest();
        return out;
      }
    }
    bool progressed = false;
    // States first, results second: a job that finishes in between is seen by Collect.
    Result<std::vector<JobStatus>> states = ex.Poll();
    if (!states.ok()) {
      cancel_rest();
      return states.status();
    }
    WS_ASSIGN_OR_RETURN(std::vector<JobResult> results, ex.Collect());
    std::set<std::string> delivered;
    for (const auto& r : results) {
      auto it = pending.find(r.job_id);
      if (it == pending.end())
        continue;  // a late result of a job already counted or cancelled
      progressed = true;
      if (!r.ok) {
        if (Status s = retry(it->second, r.error); !s.ok()) {
          cancel_rest();
          return s;
        }
        continue;
      }
      JobSpec spec = it->second;
      pending.erase(it);
      delivered.insert(r.job_id);
      ++out.results;
      if (Status s = on_result(spec, r); !s.ok()) {
        cancel_rest();
        return s;
      }
      JobStatus st;
      st.job_id = r.job_id;
      st.try_number = r.try_number;
      st.state = JobState::kDone;
      st.node = r.node;
      st.gpu_index = r.gpu_index;
      note(spec, st);
    }
    for (const auto& st : *states) {
      auto it = pending.find(st.job_id);
      if (it == pending.end() || delivered.count(st.job_id) ||
          st.try_number != it->second.try_number)
        continue;
      const bool ended_without_result = st.state == JobState::kCancelled ||
                                        st.state == JobState::kLost ||
                                        st.state == JobState::kFailed;
      if (last_state[st.job_id] != st.state) {
        last_state[st.job_id] = st.state;
        note(it->second, st);
        progressed = true;
      }
      if (ended_without_result) {
        std::string why = fmt::format("{} ({})", JobStateName(st.state),
                                      st.message.empty() ? "no result" : st.message);
        if (Status s = retry(it->second, why); !s.ok()) {
          cancel_rest();
          return s;
        }
      }
    }
    if (!progressed)
      std::this_thread::sleep_for(std::chrono::duration<double>(opts.poll_seconds));
  }
  return out;
}

// ---- The local executor -------------------------------------------------------------------------

std::vector<std::string> ParseGpuList(const std::string& text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item =
        text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty())
      out.push_back(item);
    if (comma == std::string::npos)
      break;
    pos = comma + 1;
  }
  return out;
}

namespace {

namespace fs = std::filesystem;

std::optional<int> GpuOrdinal(const std::string& name) {
  if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::stoi(name);
}

class LocalExecutor : public Executor {
 public:
  explicit LocalExecutor(LocalExecutorOptions opts) : opts_(std::move(opts)) {
    if (opts_.job_binary.empty())
      opts_.job_binary = SelfExecutable();
    if (opts_.scratch_dir.empty())
      opts_.scratch_dir = opts_.eval_opts.workspace + "/jobs";
    int threads =
        opts_.compile_threads > 0
            ? opts_.compile_threads
            : std::min(4, std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
    compile_threads_ = threads;
    for (int t = 0; t < threads; ++t)
      threads_.emplace_back([this] { Work(JobKind::kCompile, ""); });
    for (const auto& gpu : opts_.gpus)
      threads_.emplace_back([this, gpu] { Work(JobKind::kGpu, gpu); });
  }

  ~LocalExecutor() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      shutdown_ = true;
      for (auto& [id, e] : jobs_) {
        if (e.pid > 0)
          ::kill(-e.pid, SIGKILL);
      }
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

  std::string name() const override { return "local"; }

  std::string Describe() const override {
    std::string gpus;
    for (const auto& g : opts_.gpus) gpus += (gpus.empty() ? "" : ",") + g;
    return fmt::format("local executor: {}; {} compile thread(s)",
                       gpus.empty() ? std::string("no GPU") : "GPU " + gpus, compile_threads_);
  }

  int gpu_slots() const override { return static_cast<int>(opts_.gpus.size()); }

  Status Submit(const std::vector<JobSpec>& jobs) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& j : jobs) {
      if (j.kind == JobKind::kGpu && opts_.gpus.empty())
        return Status::Error("job {}: a GPU job, but this executor has no GPU", j.id);
    }
    for (const auto& j : jobs) {
      Entry& e = jobs_[j.id];
      e.spec = j;
      e.state = JobState::kQueued;
      e.gpu_index.reset();
      (j.kind == JobKind::kGpu ? gpu_queue_ : compile_queue_).push_back({j.id, j.try_number});
    }
    cv_.notify_all();
    return Status::Ok();
  }

  Result<std::vector<JobStatus>> Poll() override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<JobStatus> out;
    for (const auto& [id, e] : jobs_) {
      JobStatus st;
      st.job_id = id;
      st.try_number = e.spec.try_number;
      st.state = e.state;
      st.node = HostName();
      st.gpu_index = e.gpu_index;
      st.message = e.message;
      out.push_back(st);
    }
    return out;
  }

  Status Cancel(const std::string& job_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(job_id);
    if (it == jobs_.end())
      return Status::Ok();
    if (it->second.pid > 0)
      ::kill(-it->second.pid, SIGKILL);
    jobs_.erase(it);  // a running in-process evaluation finishes; its result is dropped
    return Status::Ok();
  }

  Result<std::vector<JobResult>> Collect() override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<JobResult> out;
    out.swap(ready_);
    return out;
  }

 private:
  struct Entry {
    JobSpec spec;
    JobState state = JobState::kQueued;
    std::optional<int> gpu_index;
    std::string message;
    pid_t pid = 0;
  };
  struct Ticket {
    std::string id;
    int try_number;
  };

  void Work(JobKind kind, const std::string& gpu) {
    std::deque<Ticket>& queue = kind == JobKind::kGpu ? gpu_queue_ : compile_queue_;
    while (true) {
      JobSpec spec;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return shutdown_ || !queue.empty(); });
        if (shutdown_)
          return;
        Ticket t = queue.front();
        queue.pop_front();
        auto it = jobs_.find(t.id);
        if (it == jobs_.end() || it->second.spec.try_number != t.try_number ||
            it->second.state != JobState::kQueued)
          continue;  // cancelled or replaced while queued
        it->second.state = JobState::kRunning;
        if (kind == JobKind::kGpu)
          it->second.gpu_index = GpuOrdinal(gpu);
        spec = it->second.spec;
      }
      std::optional<JobResult> r;
      std::string lost;
      if (kind == JobKind::kGpu && opts_.pin_processes) {
        r = RunPinned(spec, gpu, &lost);
      } else {
        r = RunJobInProcess(spec, opts_.eval_opts, opts_.evaluate);
        r->gpu_index = kind == JobKind::kGpu ? GpuOrdinal(gpu) : std::nullopt;
      }
      std::lock_guard<std::mutex> lock(mu_);
      auto it = jobs_.find(spec.id);
      if (it == jobs_.end() || it->second.spec.try_number != spec.try_number)
        continue;  // cancelled (or replaced) while it ran: the result is dropped
      it->second.pid = 0;
      if (!r) {
        it->second.state = JobState::kLost;
        it->second.message = lost;
        continue;
      }
      ready_.push_back(std::move(*r));
      jobs_.erase(it);
    }
  }

  // One GPU job in its own process, which sees only its GPU.
  std::optional<JobResult> RunPinned(JobSpec spec, const std::string& gpu, std::string* lost) {
    std::error_code ec;
    fs::create_directories(opts_.scratch_dir, ec);
    const std::string base = fmt::format("{}/{}.{}", opts_.scratch_dir, spec.id, spec.try_number);
    spec.result_path = base + ".result.json";
    spec.device.reset();  // the process probes the GPU it gets
    fs::remove(spec.result_path, ec);
    if (Status s = WriteFileAtomic(base + ".spec.json", JobSpecJson(spec)); !s.ok()) {
      *lost = s.message();
      return std::nullopt;
    }
    std::vector<std::string> args = {
        opts_.job_binary,   "--workspace", opts_.eval_opts.workspace, "job", "run",
        base + ".spec.json"};
    std::vector<std::string> env;
    std::map<std::string, std::string> set = opts_.job_env;
    set["CUDA_VISIBLE_DEVICES"] = gpu;
    for (char** e = environ; *e != nullptr; ++e) {
      std::string_view v(*e);
      if (set.count(std::string(v.substr(0, v.find('=')))) == 0)
        env.push_back(*e);
    }
    for (const auto& [k, v] : set) env.push_back(k + "=" + v);
    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t pid = ::fork();
    if (pid < 0) {
      *lost = "fork failed";
      return std::nullopt;
    }
    if (pid == 0) {
      ::setpgid(0, 0);
      ::execve(argv[0], argv.data(), envp.data());
      ::_exit(127);
    }
    ::setpgid(pid, pid);
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = jobs_.find(spec.id);
      if (it != jobs_.end())
        it->second.pid = pid;
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    Result<std::string> text = ReadFile(spec.result_path);
    if (!text.ok()) {
      *lost = WIFSIGNALED(status) ? fmt::format("killed by signal {}", WTERMSIG(status))
                                  : fmt::format("exit {} without a result", WEXITSTATUS(status));
      return std::nullopt;
    }
    Result<JobResult> r = ParseJobResult(*text);
    if (!r.ok()) {
      *lost = r.status().message();
      return std::nullopt;
    }
    if (!r->gpu_index)  // the job reports the ordinal it was given; else the one we gave
      r->gpu_index = GpuOrdinal(gpu);
    return *r;
  }

  LocalExecutorOptions opts_;
  int compile_threads_ = 1;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Ticket> compile_queue_, gpu_queue_;
  std::map<std::string, Entry> jobs_;
  std::vector<JobResult> ready_;
  bool shutdown_ = false;
  std::vector<std::thread> threads_;  // last: started after everything they use exists
};

}  // namespace

std::unique_ptr<Executor> MakeLocalExecutor(const LocalExecutorOptions& opts) {
  return std::make_unique<LocalExecutor>(opts);
}

}  // namespace ws

// RunSandboxed: fork/exec with a pipe per stdio stream, a poll() loop that feeds stdin and
// drains stdout/stderr, and a wall-clock watchdog that kills the whole process group. Before the
// fork the policy's layers are resolved (layers.h): the child joins the cgroup, sets its rlimits,
// and either loads the seccomp program itself and execs the program, or execs bubblewrap, which
// builds the namespaces and loads the same program (--seccomp) just before it execs the program.
//
// NOTE: the child side of fork() may only make async-signal-safe calls (another thread may hold
// the malloc lock at the time of the fork), so everything it needs is prepared before the fork.
#include "sandbox/sandbox.h"

#include <fcntl.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sandbox/layers.h"

extern char** environ;

namespace ws {
namespace {

using Clock = std::chrono::steady_clock;

// After the child exits, grandchildren are killed with the group; one that escaped the group
// (setsid) may still hold a pipe open, so the final drain is bounded by this grace period.
constexpr double kDrainGraceSeconds = 0.5;
// Without a pidfd the loop cannot sleep until the child exits, so it polls this often.
constexpr int kFallbackPollMs = 10;

// Closes the descriptor when it goes out of scope.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd_(o.Release()) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = o.Release();
    }
    return *this;
  }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release() { return std::exchange(fd_, -1); }
  void Reset() {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

struct Pipe {
  Fd read, write;
};

Result<Pipe> MakePipe() {
  int fds[2];
  // O_CLOEXEC at creation: another thread forking at the same moment must not inherit them.
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return Status::Error("pipe2: {}", strerror(errno));
  Pipe p;
  p.read = Fd(fds[0]);
  p.write = Fd(fds[1]);
  return p;
}

// What the child reports through the CLOEXEC pipe when it fails before or at exec.
enum class ChildStage : int32_t { kChdir = 1, kRlimit, kDup, kExec, kCgroup, kSeccomp };
struct ChildError {
  int32_t stage;
  int32_t err;
};

struct RlimitSetting {
  int resource;
  rlimit value;
};

// Everything the child needs, computed before fork.
struct ChildPlan {
  std::string path;
  std::vector<std::string> argv_storage, env_storage;
  std::vector<char*> argv, envp;
  std::string working_dir;
  std::vector<RlimitSetting> rlimits;
  std::vector<int> cgroup_fds;     // the child writes "0" to each to join the cgroup
  int inherit_fd = -1;             // the seccomp memfd bwrap reads; kept open across exec
  sock_fprog seccomp{0, nullptr};  // loaded by the child itself when len > 0
};

// What RunSandboxed holds for the layers while the child runs.
struct LayerState {
  std::unique_ptr<sandbox_internal::Cgroup> cgroup;
  Fd seccomp_memfd;
  bool namespaces = false;
  std::map<std::string, std::string> layers;
};

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// Resolves argv[0] like execvp, but in the parent so the child need not allocate.
Result<std::string> ResolveProgram(const std::string& name, const std::string& path_var) {
  if (name.empty())
    return Status::Error("empty program name");
  if (name.find('/') != std::string::npos)
    return name;  // exec reports a missing file
  std::string_view rest = path_var;
  while (true) {
    size_t colon = rest.find(':');
    std::string dir(rest.substr(0, colon));
    if (dir.empty())
      dir = ".";
    std::string candidate = dir + "/" + name;
    if (IsExecutableFile(candidate))
      return candidate;
    if (colon == std::string_view::npos)
      break;
    rest.remove_prefix(colon + 1);
  }
  return Status::Error("{}: not found on PATH", name);
}

rlimit Limit(int64_t v) {
  rlimit r;
  r.rlim_cur = r.rlim_max = static_cast<rlim_t>(v);
  return r;
}

// The one place that decides what a requested layer this machine lacks means: recorded as
// degraded when the policy allows it for that layer, otherwise the run fails.
Status LayerUnavailable(const SandboxPolicy& policy, const char* layer, const std::string& why,
                        std::map<std::string, std::string>* layers) {
  if (policy.allow_degraded.count(layer) != 0) {
    (*layers)[layer] = "degraded: " + why;
    return Status::Ok();
  }
  return Status::Error(
      "sandbox layer '{}' is unavailable here: {} (WARPSMITH_SANDBOX=degraded runs without it "
      "and records that; see docs/sandbox.md)",
      layer, why);
}

// Variables a cleared environment keeps from ours.
constexpr const char* kPassedEnv[] = {"LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES",
                                      "CUDA_DEVICE_ORDER", "CUDA_MODULE_LOADING"};

std::string Gib(int64_t b) {
  if (b % (int64_t{1} << 30) == 0)
    return fmt::format("{} GiB", b >> 30);
  return fmt::format("{} MiB", b >> 20);
}

std::string DescribeRlimits(const SandboxLimits& l) {
  std::string d = "core 0";
  if (kSandboxAsanBuild && l.address_space_bytes > 0)
    d += ", as unlimited (AddressSanitizer build)";
  else
    d += ", as " + (l.address_space_bytes > 0 ? Gib(l.address_space_bytes) : "unlimited");
  if (l.cpu_seconds > 0)
    d += fmt::format(", cpu {} s", l.cpu_seconds);
  if (l.file_size_bytes > 0)
    d += ", fsize " + Gib(l.file_size_bytes);
  if (l.open_files > 0)
    d += fmt::format(", nofile {}", l.open_files);
  if (l.processes > 0)
    d += fmt::format(", nproc {}", l.processes);
  return "on: " + d;
}

Result<ChildPlan> MakePlan(const SandboxSpec& spec, LayerState* state) {
  if (spec.argv.empty())
    return Status::Error("empty argv");
  ChildPlan plan;
  const SandboxPolicy& policy = spec.policy;
  std::map<std::string, std::string>& layers = state->layers;
  layers["mode"] = policy.mode;

  // Environment: an allowlist, or the parent's; env_set is added or replaces either way.
  std::map<std::string, std::string> overrides = spec.env_set;
  if (kSandboxAsanBuild && overrides.count("ASAN_OPTIONS") == 0) {
    const char* v = ::getenv("ASAN_OPTIONS");
    overrides["ASAN_OPTIONS"] = std::string(v != nullptr ? v : "") + (v != nullptr ? ":" : "") +
                                "detect_leaks=0";
  }
  if (policy.clear_env) {
    std::map<std::string, std::string> env = {
        {"PATH", "/usr/local/bin:/usr/bin:/bin"},
        {"LANG", "C.UTF-8"},
        {"HOME", policy.scratch_dir.empty() ? "/" : policy.scratch_dir},
        {"TMPDIR", policy.scratch_dir.empty() ? "/tmp" : policy.scratch_dir}};
    for (const char* name : kPassedEnv) {
      if (const char* v = ::getenv(name); v != nullptr)
        env[name] = v;
    }
    // The JIT cache would land in $HOME; runners load cubins and need none.
    if (policy.gpu)
      env["CUDA_CACHE_DISABLE"] = "1";
    for (const auto& [k, v] : overrides) env[k] = v;
    std::string keys;
    for (const auto& [k, v] : env) {
      plan.env_storage.push_back(k + "=" + v);
      keys += (keys.empty() ? "" : " ") + k;
    }
    layers["env"] = "on: allowlist " + keys;
  } else {
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
      std::string_view entry(*e);
      size_t eq = entry.find('=');
      std::string key(entry.substr(0, eq));
      if (overrides.count(key) != 0)
        continue;
      plan.env_storage.emplace_back(entry);
    }
    for (const auto& [k, v] : overrides) plan.env_storage.push_back(k + "=" + v);
    layers["env"] = "off: inherited";
  }

  std::string path_var = "/usr/local/bin:/usr/bin:/bin";
  if (auto it = spec.env_set.find("PATH"); it != spec.env_set.end()) {
    path_var = it->second;
  } else if (const char* p = ::getenv("PATH"); p != nullptr) {
    path_var = p;
  }
  WS_ASSIGN_OR_RETURN(plan.path, ResolveProgram(spec.argv[0], path_var));
  plan.argv_storage = spec.argv;
  const std::string cwd = !spec.working_dir.empty() ? spec.working_dir : policy.scratch_dir;

  // Cgroup: made before the fork, joined by the child before it execs anything.
  if (!policy.cgroup) {
    layers[kLayerCgroup] = "off";
  } else if (auto cg = sandbox_internal::Cgroup::Create(spec.limits); cg.ok()) {
    layers[kLayerCgroup] = "on: " + (*cg)->description();
    plan.cgroup_fds = (*cg)->procs_fds();
    state->cgroup = std::move(*cg);
  } else {
    WS_RETURN_IF_ERROR(LayerUnavailable(policy, kLayerCgroup, cg.status().message(), &layers));
  }

  // Namespaces: decided before seccomp, which bwrap then loads for us.
  sandbox_internal::BwrapInfo bwrap;
  if (!policy.namespaces) {
    layers[kLayerNamespaces] = "off";
  } else if (bwrap = sandbox_internal::ProbeBwrap(); !bwrap.unavailable.empty()) {
    WS_RETURN_IF_ERROR(LayerUnavailable(policy, kLayerNamespaces, bwrap.unavailable, &layers));
  } else {
    state->namespaces = true;
  }

  if (!policy.seccomp) {
    layers[kLayerSeccomp] = "off";
  } else if (auto prog = sandbox_internal::SeccompProgram(); !prog.ok()) {
    WS_RETURN_IF_ERROR(LayerUnavailable(policy, kLayerSeccomp, prog.status().message(), &layers));
  } else if (state->namespaces) {
    // bwrap reads the program from a descriptor and loads it right before its exec.
    const std::vector<sock_filter>& f = **prog;
    state->seccomp_memfd = Fd(::memfd_create("ws-seccomp", MFD_CLOEXEC));
    const size_t bytes = f.size() * sizeof(sock_filter);
    if (!state->seccomp_memfd.valid() ||
        ::write(state->seccomp_memfd.get(), f.data(), bytes) != static_cast<ssize_t>(bytes) ||
        ::lseek(state->seccomp_memfd.get(), 0, SEEK_SET) != 0) {
      return Status::Error("seccomp program to a memfd: {}", strerror(errno));
    }
    plan.inherit_fd = state->seccomp_memfd.get();
    layers[kLayerSeccomp] = "on: " + sandbox_internal::SeccompSummary();
  } else {
    plan.seccomp.len = static_cast<unsigned short>((*prog)->size());
    plan.seccomp.filter = const_cast<sock_filter*>((*prog)->data());
    layers[kLayerSeccomp] = "on: " + sandbox_internal::SeccompSummary();
  }

  if (state->namespaces) {
    std::string gpu_desc;
    WS_ASSIGN_OR_RETURN(
        plan.argv_storage,
        sandbox_internal::BwrapCommand(bwrap, policy, plan.path, spec.argv, cwd.empty() ? "/" : cwd,
                                       plan.inherit_fd, &gpu_desc));
    plan.path = bwrap.path;
    layers[kLayerNamespaces] = fmt::format(
        "on: {} (user, pid, net, ipc, uts, mount; no network; read-only system; uid 65534, no "
        "capabilities; scratch {})",
        bwrap.path, policy.scratch_dir.empty() ? "none" : policy.scratch_dir);
    if (policy.gpu)
      layers["gpu"] = "on: " + gpu_desc;
  } else {
    plan.working_dir = cwd;  // the child changes into it itself
    if (policy.gpu)
      layers["gpu"] = "on: host view (no namespaces)";
  }

  for (auto& a : plan.argv_storage) plan.argv.push_back(a.data());
  plan.argv.push_back(nullptr);
  for (auto& e : plan.env_storage) plan.envp.push_back(e.data());
  plan.envp.push_back(nullptr);

  const SandboxLimits& l = spec.limits;
  plan.rlimits.push_back({RLIMIT_CORE, Limit(0)});
  if (l.address_space_bytes > 0 && !kSandboxAsanBuild)
    plan.rlimits.push_back({RLIMIT_AS, Limit(l.address_space_bytes)});
  if (l.cpu_seconds > 0) {
    // Soft limit first (SIGXCPU), the hard one a second later (SIGKILL).
    rlimit r;
    r.rlim_cur = static_cast<rlim_t>(l.cpu_seconds);
    r.rlim_max = static_cast<rlim_t>(l.cpu_seconds + 1);
    plan.rlimits.push_back({RLIMIT_CPU, r});
  }
  if (l.file_size_bytes > 0)
    plan.rlimits.push_back({RLIMIT_FSIZE, Limit(l.file_size_bytes)});
  if (l.open_files > 0)
    plan.rlimits.push_back({RLIMIT_NOFILE, Limit(l.open_files)});
  if (l.processes > 0)
    plan.rlimits.push_back({RLIMIT_NPROC, Limit(l.processes)});
  layers["rlimits"] = DescribeRlimits(l);
  layers["watchdog"] =
      l.wall_seconds > 0
          ? fmt::format("on: {:g} s wall clock, then the process group is killed", l.wall_seconds)
          : "off";
  return plan;
}

[[noreturn]] void ChildFail(int err_fd, ChildStage stage) {
  ChildError e{static_cast<int32_t>(stage), errno};
  ssize_t n;
  do {
    n = ::write(err_fd, &e, sizeof(e));
  } while (n < 0 && errno == EINTR);
  ::_exit(127);
}

// Runs in the child: async-signal-safe calls only.
[[noreturn]] void ChildMain(const ChildPlan& plan, int in_fd, int out_fd, int err_fd,
                            int report_fd) {
  ::setpgid(0, 0);
  // Into the cgroup first, so everything it starts is held there too.
  for (int fd : plan.cgroup_fds) {
    if (::write(fd, "0", 1) != 1)
      ChildFail(report_fd, ChildStage::kCgroup);
  }
  // Dispositions set to ignore survive exec, and the mask is inherited; start the program clean.
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP)
      ::signal(sig, SIG_DFL);
  }
  sigset_t empty;
  sigemptyset(&empty);
  ::sigprocmask(SIG_SETMASK, &empty, nullptr);

  // dup2 clears O_CLOEXEC on the new descriptor, which is what stdio needs.
  if (::dup2(in_fd, 0) < 0 || ::dup2(out_fd, 1) < 0 || ::dup2(err_fd, 2) < 0) {
    ChildFail(report_fd, ChildStage::kDup);
  }
  // Descriptors other code opened without O_CLOEXEC must not reach untrusted code. Failure
  // (kernel < 5.11) only loses this hardening.
#ifdef SYS_close_range
  ::syscall(SYS_close_range, 3u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */);
#endif
  if (plan.inherit_fd >= 0 && ::fcntl(plan.inherit_fd, F_SETFD, 0) != 0)
    ChildFail(report_fd, ChildStage::kDup);
  if (!plan.working_dir.empty() && ::chdir(plan.working_dir.c_str()) != 0) {
    ChildFail(report_fd, ChildStage::kChdir);
  }
  for (const RlimitSetting& r : plan.rlimits) {
    if (::setrlimit(r.resource, &r.value) != 0)
      ChildFail(report_fd, ChildStage::kRlimit);
  }
  // Last before the exec: from here on the denied calls fail with EPERM.
  if (plan.seccomp.len > 0) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &plan.seccomp) != 0) {
      ChildFail(report_fd, ChildStage::kSeccomp);
    }
  }
  ::execve(plan.path.c_str(), plan.argv.data(), plan.envp.data());
  ChildFail(report_fd, ChildStage::kExec);
}

// Blocks SIGPIPE in the calling thread only (a process-wide SIG_IGN would be global state), and
// swallows a SIGPIPE raised by our own writes to a closed stdin before unblocking.
class ScopedSigpipeBlock {
 public:
  ScopedSigpipeBlock() {
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old_);
  }
  ~ScopedSigpipeBlock() {
    if (!was_pending_) {
      sigset_t pipe_set;
      sigemptyset(&pipe_set);
      sigaddset(&pipe_set, SIGPIPE);
      timespec zero{0, 0};
      while (sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  ScopedSigpipeBlock(const ScopedSigpipeBlock&) = delete;
  ScopedSigpipeBlock& operator=(const ScopedSigpipeBlock&) = delete;

 private:
  sigset_t old_;
  bool was_pending_ = false;
};

// Reads whatever is available into `out`, up to the cap; returns false at EOF or error.
bool DrainOnce(int fd, int64_t cap, std::string* out, int64_t* dropped) {
  std::array<char, 65536> buf;
  ssize_t n = ::read(fd, buf.data(), buf.size());
  if (n < 0)
    return errno == EINTR || errno == EAGAIN;
  if (n == 0)
    return false;
  int64_t room = std::max<int64_t>(0, cap - static_cast<int64_t>(out->size()));
  int64_t keep = std::min<int64_t>(room, n);
  out->append(buf.data(), static_cast<size_t>(keep));
  *dropped += n - keep;
  return true;
}

// True once the child has exited; leaves it unreaped (a zombie) so its pid, and therefore the
// process group id, cannot be reused while we still signal the group.
bool ChildExited(pid_t pid) {
  siginfo_t info;
  info.si_pid = 0;
  int rc;
  do {
    rc = ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
  } while (rc < 0 && errno == EINTR);
  return rc < 0 || info.si_pid == pid;  // rc < 0 (ECHILD): someone else reaped it
}

int Reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR)
      return -1;
  }
  return status;
}

std::string ChildErrorMessage(const ChildError& e, const ChildPlan& plan) {
  const char* what = strerror(e.err);
  switch (static_cast<ChildStage>(e.stage)) {
    case ChildStage::kChdir:
      return fmt::format("chdir to {}: {}", plan.working_dir, what);
    case ChildStage::kRlimit:
      return fmt::format("setrlimit: {}", what);
    case ChildStage::kDup:
      return fmt::format("dup2: {}", what);
    case ChildStage::kExec:
      return fmt::format("exec {}: {}", plan.path, what);
    case ChildStage::kCgroup:
      return fmt::format("joining the cgroup: {}", what);
    case ChildStage::kSeccomp:
      return fmt::format("loading the seccomp filter: {}", what);
  }
  return fmt::format("child setup: {}", what);
}

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

std::string SandboxResult::Describe() const {
  const std::string oom = oom_killed ? " (the cgroup's memory limit)" : "";
  if (timed_out)
    return fmt::format("timed out after {:.1f} s", wall_seconds);
  if (signaled) {
    const char* abbrev = sigabbrev_np(signal);
    if (abbrev == nullptr)
      return fmt::format("killed by signal {}{}", signal, oom);
    return fmt::format("killed by signal {} (SIG{}){}", signal, abbrev, oom);
  }
  // bwrap reports a program killed by signal N as exit 128 + N.
  auto ns = layers.find(kLayerNamespaces);
  if (exit_code > 128 && exit_code < 128 + NSIG && ns != layers.end() &&
      ns->second.rfind("on", 0) == 0) {
    const char* abbrev = sigabbrev_np(exit_code - 128);
    return fmt::format("exit {} (killed by signal {}{}{} inside the sandbox){}", exit_code,
                       exit_code - 128, abbrev ? " SIG" : "", abbrev ? abbrev : "", oom);
  }
  return fmt::format("exit {}{}", exit_code, oom);
}

Result<SandboxMode> SandboxModeFromEnv() {
  const char* v = ::getenv("WARPSMITH_SANDBOX");
  std::string mode = v == nullptr ? "" : v;
  if (mode.empty() || mode == "strict" || mode == "on")
    return SandboxMode::kStrict;
  if (mode == "degraded")
    return SandboxMode::kDegraded;
  if (mode == "off")
    return SandboxMode::kOff;
  return Status::Error("WARPSMITH_SANDBOX='{}': expected strict, degraded or off", mode);
}

SandboxPolicy ConfinedPolicy(SandboxMode mode) {
  SandboxPolicy p;
  p.clear_env = true;
  switch (mode) {
    case SandboxMode::kStrict:
      p.namespaces = p.seccomp = p.cgroup = true;
      // Many machines offer no writable cgroup; its absence is recorded, not fatal.
      p.allow_degraded = {kLayerCgroup};
      p.mode = "strict";
      break;
    case SandboxMode::kDegraded:
      p.namespaces = p.seccomp = p.cgroup = true;
      p.allow_degraded = {kLayerNamespaces, kLayerSeccomp, kLayerCgroup};
      p.mode = "degraded (WARPSMITH_SANDBOX=degraded)";
      break;
    case SandboxMode::kOff:
      p.mode = "off (WARPSMITH_SANDBOX=off)";
      break;
  }
  return p;
}

Result<SandboxPolicy> DefaultSandboxPolicy() {
  WS_ASSIGN_OR_RETURN(SandboxMode mode, SandboxModeFromEnv());
  return ConfinedPolicy(mode);
}

std::string FindBwrap() {
  auto executable = [](const std::string& p) { return IsExecutableFile(p); };
  if (const char* env = ::getenv("WARPSMITH_BWRAP"); env != nullptr && *env != '\0')
    return executable(env) ? std::string(env) : "";
  std::string beside = SelfDir() + "/bwrap";
  if (executable(beside))
    return beside;
  if (const char* path = ::getenv("PATH"); path != nullptr) {
    if (auto found = ResolveProgram("bwrap", path); found.ok())
      return std::filesystem::absolute(*found).string();
  }
  for (const char* p : {"/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"}) {
    if (executable(p))
      return p;
  }
  return "";
}

Result<SandboxResult> RunSandboxed(const SandboxSpec& spec) {
  LayerState layer_state;
  WS_ASSIGN_OR_RETURN(ChildPlan plan, MakePlan(spec, &layer_state));
  WS_ASSIGN_OR_RETURN(Pipe in, MakePipe());
  WS_ASSIGN_OR_RETURN(Pipe out, MakePipe());
  WS_ASSIGN_OR_RETURN(Pipe err, MakePipe());
  WS_ASSIGN_OR_RETURN(Pipe report, MakePipe());

  ScopedSigpipeBlock sigpipe_block;
  const Clock::time_point start = Clock::now();
  const pid_t pid = ::fork();
  if (pid < 0)
    return Status::Error("fork: {}", strerror(errno));
  if (pid == 0)
    ChildMain(plan, in.read.get(), out.write.get(), err.write.get(), report.write.get());

  // Also from the parent, so the group exists before we might signal it.
  ::setpgid(pid, pid);
  in.read.Reset();
  out.write.Reset();
  err.write.Reset();
  report.write.Reset();

  // EOF means exec succeeded (the CLOEXEC end closed); a full record means it failed.
  ChildError child_error{};
  size_t got = 0;
  while (got < sizeof(child_error)) {
    ssize_t n = ::read(report.read.get(), reinterpret_cast<char*>(&child_error) + got,
                       sizeof(child_error) - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    got += static_cast<size_t>(n);
  }
  report.read.Reset();
  if (got == sizeof(child_error)) {
    Reap(pid);
    return Status::Error("starting {}: {}", spec.argv[0], ChildErrorMessage(child_error, plan));
  }

  // A pidfd lets poll() wake the moment the child exits; older kernels fall back to ticking.
  Fd pidfd;
#ifdef SYS_pidfd_open
  pidfd = Fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
#endif

  SandboxResult result;
  const SandboxLimits& limits = spec.limits;
  const bool has_deadline = limits.wall_seconds > 0;
  const Clock::time_point deadline =
      start + std::chrono::duration_cast<Clock::duration>(
                  std::chrono::duration<double>(has_deadline ? limits.wall_seconds : 0));
  const int64_t cap = std::max<int64_t>(0, limits.output_cap_bytes);

  Fd& stdin_fd = in.write;
  size_t stdin_pos = 0;
  if (spec.stdin_data.empty()) {
    stdin_fd.Reset();
  } else {
    ::fcntl(stdin_fd.get(), F_SETFL, ::fcntl(stdin_fd.get(), F_GETFL) | O_NONBLOCK);
  }

  const auto grace = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(kDrainGraceSeconds));
  bool exited = false;
  Clock::time_point drain_until{};
  while (true) {
    if (!exited && ChildExited(pid)) {
      exited = true;
      // Grandchildren left behind in the group die with their parent, and so does anything
      // that left the group but not the cgroup.
      ::kill(-pid, SIGKILL);
      if (layer_state.cgroup)
        layer_state.cgroup->KillAll();
      stdin_fd.Reset();
      drain_until = Clock::now() + grace;
    }
    const Clock::time_point now = Clock::now();
    if (!exited && !result.timed_out && has_deadline && now >= deadline) {
      ::kill(-pid, SIGKILL);
      if (layer_state.cgroup)
        layer_state.cgroup->KillAll();
      result.timed_out = true;
      stdin_fd.Reset();
    }
    if (exited && !out.read.valid() && !err.read.valid())
      break;
    if (exited && now >= drain_until)
      break;

    std::array<pollfd, 4> fds{};
    nfds_t nfds = 0;
    int out_i = -1, err_i = -1, in_i = -1;
    if (out.read.valid())
      fds[out_i = nfds++] = {out.read.get(), POLLIN, 0};
    if (err.read.valid())
      fds[err_i = nfds++] = {err.read.get(), POLLIN, 0};
    if (stdin_fd.valid())
      fds[in_i = nfds++] = {stdin_fd.get(), POLLOUT, 0};
    // Its readiness is picked up by ChildExited at the top of the loop.
    if (!exited && pidfd.valid())
      fds[nfds++] = {pidfd.get(), POLLIN, 0};

    int timeout_ms = -1;
    std::optional<Clock::time_point> wake;
    if (exited) {
      wake = drain_until;
    } else if (has_deadline && !result.timed_out) {
      wake = deadline;
    }
    if (wake) {
      auto ms = std::chrono::ceil<std::chrono::milliseconds>(*wake - now).count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(ms, 0, 1 << 30));
    }
    if (!exited && (!pidfd.valid() || result.timed_out)) {
      timeout_ms = timeout_ms < 0 ? kFallbackPollMs : std::min(timeout_ms, kFallbackPollMs);
    }
    int rc = ::poll(fds.data(), nfds, timeout_ms);
    if (rc < 0) {
      if (errno == EINTR)
        continue;
      const int poll_errno = errno;
      ::kill(-pid, SIGKILL);
      Reap(pid);
      return Status::Error("poll: {}", strerror(poll_errno));
    }
    if (out_i >= 0 && fds[out_i].revents != 0 &&
        !DrainOnce(out.read.get(), cap, &result.stdout_data, &result.stdout_dropped)) {
      out.read.Reset();
    }
    if (err_i >= 0 && fds[err_i].revents != 0 &&
        !DrainOnce(err.read.get(), cap, &result.stderr_data, &result.stderr_dropped)) {
      err.read.Reset();
    }
    if (in_i >= 0 && fds[in_i].revents != 0) {
      if (fds[in_i].revents & (POLLERR | POLLHUP)) {
        stdin_fd.Reset();  // the child closed its stdin; the rest is not wanted
      } else {
        ssize_t n = ::write(stdin_fd.get(), spec.stdin_data.data() + stdin_pos,
                            spec.stdin_data.size() - stdin_pos);
        if (n > 0)
          stdin_pos += static_cast<size_t>(n);
        // EPIPE lands here too, rather than as a SIGPIPE, thanks to the blocked signal.
        if ((n < 0 && errno != EINTR && errno != EAGAIN) || stdin_pos == spec.stdin_data.size()) {
          stdin_fd.Reset();
        }
      }
    }
  }

  const int status = Reap(pid);
  if (status < 0)
    return Status::Error("waitpid: {}", strerror(errno));
  if (WIFSIGNALED(status)) {
    result.signaled = true;
    result.signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  }
  result.wall_seconds = SecondsSince(start);
  if (layer_state.cgroup)
    result.oom_killed = layer_state.cgroup->OomKilled();
  result.layers = std::move(layer_state.layers);
  return result;
}

std::string SelfDir() {
  std::string buf(4096, '\0');
  ssize_t n = ::readlink("/proc/self/exe", buf.data(), buf.size());
  if (n <= 0 || static_cast<size_t>(n) >= buf.size())
    return "";
  buf.resize(static_cast<size_t>(n));
  size_t slash = buf.rfind('/');
  if (slash == std::string::npos)
    return "";
  return slash == 0 ? "/" : buf.substr(0, slash);
}

}  // namespace ws

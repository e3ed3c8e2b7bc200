// The sandbox's layers, each on its own: the seccomp program, the cgroup, the bubblewrap command
// line. RunSandboxed (sandbox.cc) decides which ones to use; nothing outside sandbox/ includes
// this.
#pragma once

#include <linux/filter.h>

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "sandbox/sandbox.h"

namespace ws::sandbox_internal {

// ---- seccomp ----

/// The filter as a BPF program, built once per process with libseccomp. An error says why this
/// machine cannot have it.
Result<const std::vector<sock_filter>*> SeccompProgram();

/// What the filter denies, for reports.
std::string SeccompSummary();

// ---- cgroup ----

/// A fresh memory + pids cgroup (v2, or the v1 memory and pids hierarchies). The child joins it
/// by writing "0" to each of procs_fds() (async-signal-safe). The destructor kills whatever is
/// left in it and removes it.
class Cgroup {
 public:
  /// An error says why no cgroup is available here (not writable, controllers not delegated).
  static Result<std::unique_ptr<Cgroup>> Create(const SandboxLimits& limits);
  ~Cgroup();
  Cgroup(const Cgroup&) = delete;
  Cgroup& operator=(const Cgroup&) = delete;

  const std::vector<int>& procs_fds() const { return procs_fds_; }
  /// "v1 memory+pids (memory 8 GiB, pids 64)"
  const std::string& description() const { return description_; }
  /// True when the memory limit killed a process in it.
  bool OomKilled() const;
  /// Kills every process left in it (processes that escaped the process group).
  void KillAll() const;

 private:
  Cgroup() = default;
  bool v2_ = false;
  std::vector<std::string> dirs_;  // v2: one; v1: memory, pids
  std::vector<int> procs_fds_;
  std::string description_;
};

// ---- bubblewrap ----

struct BwrapInfo {
  std::string path;             // empty: not found
  std::string unavailable;      // why it cannot be used here; empty when it works
  bool disable_userns = false;  // supports --disable-userns
  bool tmpfs_size = false;      // supports --size
};

/// Finds bubblewrap and checks once per process (per path) that it can build namespaces here.
BwrapInfo ProbeBwrap();

/// The bwrap command line that runs `program argv[1..]` inside the policy's view. `seccomp_fd` is
/// passed as --seccomp when >= 0. `cwd` is the directory to start in (inside the sandbox).
/// `gpu_desc` receives the NVIDIA nodes bound, for the report.
Result<std::vector<std::string>> BwrapCommand(const BwrapInfo& bwrap, const SandboxPolicy& policy,
                                              const std::string& program,
                                              const std::vector<std::string>& argv,
                                              const std::string& cwd, int seccomp_fd,
                                              std::string* gpu_desc);

}  // namespace ws::sandbox_internal

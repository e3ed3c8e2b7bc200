// Running work we do not trust (the NVRTC compile, the candidate runner) in a child process with
// its own process group, resource limits, a wall-clock limit and capped output. The full sandbox
// (namespaces, seccomp, cgroups) grows here; callers only see this header.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"

namespace ws {

struct SandboxLimits {
  double wall_seconds = 60;            // the whole process group is killed after this
  int64_t address_space_bytes = 0;     // RLIMIT_AS; 0 = unlimited (CUDA needs >= 16 GiB)
  int64_t cpu_seconds = 0;             // RLIMIT_CPU; 0 = unlimited
  int64_t file_size_bytes = 0;         // RLIMIT_FSIZE; 0 = unlimited
  int64_t open_files = 256;            // RLIMIT_NOFILE
  int64_t processes = 0;               // RLIMIT_NPROC; 0 = unchanged
  int64_t output_cap_bytes = 1 << 20;  // per stream; the rest is dropped and counted
};

struct SandboxSpec {
  std::vector<std::string> argv;       // argv[0] is an absolute path or found on PATH
  std::string working_dir;             // empty: inherit
  std::map<std::string, std::string> env_set;  // added to (or replacing in) the environment
  std::string stdin_data;
  SandboxLimits limits;
};

struct SandboxResult {
  int exit_code = -1;        // valid when !signaled
  bool signaled = false;
  int signal = 0;
  bool timed_out = false;    // killed by the wall-clock limit
  double wall_seconds = 0;
  std::string stdout_data;   // capped
  std::string stderr_data;   // capped
  int64_t stdout_dropped = 0, stderr_dropped = 0;
  /// "exit 0", "exit 3", "killed by signal 9 (timeout after 60 s)", ...
  std::string Describe() const;
};

/// Starts argv in a new process group with the limits, feeds stdin, collects capped output and
/// waits. Never throws; an error Status means the child could not be started at all.
Result<SandboxResult> RunSandboxed(const SandboxSpec& spec);

/// Absolute path of the running executable's directory (for finding ws_runner and ws_compile).
std::string SelfDir();

}  // namespace ws

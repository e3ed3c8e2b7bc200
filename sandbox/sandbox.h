// Running work we do not trust (the NVRTC compile, the candidate runner) in a child process with
// its own process group, resource limits, a wall-clock limit and capped output, and on top of that
// the layers a SandboxPolicy asks for: bubblewrap namespaces (no network, read-only system, one
// writable scratch folder, only the NVIDIA nodes a runner needs), a seccomp filter, and a memory
// and pids cgroup. Every layer's actual state comes back in SandboxResult::layers; a requested
// layer the machine lacks fails the run unless the policy allows that layer to degrade.
// docs/sandbox.md has the details; callers only see this header.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/status.h"

namespace ws {

// An AddressSanitizer build (cmake -DWS_ASAN=ON) maps terabytes of shadow memory at start and
// runs its leak check under ptrace, which the seccomp layer denies: there, children run without
// RLIMIT_AS and with ASAN_OPTIONS detect_leaks=0, and the rlimit layer says so. Other builds are
// unaffected.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSandboxAsanBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSandboxAsanBuild = true;
#else
inline constexpr bool kSandboxAsanBuild = false;
#endif
#else
inline constexpr bool kSandboxAsanBuild = false;
#endif

struct SandboxLimits {
  double wall_seconds = 60;            // the whole process group is killed after this
  int64_t address_space_bytes = 0;     // RLIMIT_AS; 0 = unlimited (CUDA needs >= 16 GiB)
  int64_t cpu_seconds = 0;             // RLIMIT_CPU; 0 = unlimited
  int64_t file_size_bytes = 0;         // RLIMIT_FSIZE; 0 = unlimited
  int64_t open_files = 256;            // RLIMIT_NOFILE
  int64_t processes = 0;               // RLIMIT_NPROC; 0 = unchanged
  int64_t output_cap_bytes = 1 << 20;  // per stream; the rest is dropped and counted
  int64_t cgroup_memory_bytes = 0;     // the cgroup's memory limit (host RAM, page cache); 0 = none
  int64_t cgroup_pids = 0;             // the cgroup's pids.max (threads count); 0 = none
};

/// Layer names, as used in SandboxPolicy::allow_degraded and SandboxResult::layers.
inline constexpr const char* kLayerNamespaces = "namespaces";
inline constexpr const char* kLayerSeccomp = "seccomp";
inline constexpr const char* kLayerCgroup = "cgroup";

/// Which isolation layers to put around the child. The default asks for none (a plain child
/// process with rlimits and the watchdog, as before); ConfinedPolicy() asks for all of them.
struct SandboxPolicy {
  /// bubblewrap: new user, pid, net, ipc, uts and mount namespaces (no network at all); a root of
  /// read-only /usr and /lib*, /etc/ld.so.cache, a private /tmp, /proc, a minimal /dev; the
  /// program and read_only_paths read-only; scratch_dir read-write; uid 65534, no capabilities.
  bool namespaces = false;
  /// A seccomp filter (EPERM for sockets other than AF_UNIX, ptrace, mount and namespace calls,
  /// bpf, perf_event_open, keyctl, module and kexec calls, ...), loaded just before the exec.
  bool seccomp = false;
  /// A fresh memory and pids cgroup (v2, or v1 memory + pids) holding the child and all it
  /// starts; removed afterwards. Limits come from SandboxLimits::cgroup_*.
  bool cgroup = false;
  /// The environment is an allowlist: PATH, HOME, TMPDIR, LANG, a few CUDA variables from ours,
  /// plus env_set. Otherwise our environment is inherited (plus env_set).
  bool clear_env = false;
  /// Requested layers that may be missing on this machine; each degradation is recorded in
  /// SandboxResult::layers as "degraded: <why>". Any other missing layer fails the run.
  std::set<std::string> allow_degraded;

  // ---- the namespace view (used when namespaces are on) ----
  /// Binds /dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools and /dev/nvidiaN (--dev-bind),
  /// the driver library folders (from the ld cache) and /sys read-only.
  bool gpu = false;
  std::vector<int> gpu_indices;              // the N of /dev/nvidiaN; empty: every one present
  std::string scratch_dir;                   // read-write at the same path; the default cwd
  std::vector<std::string> read_only_paths;  // files or folders, read-only at the same paths

  /// Recorded as layers["mode"]: "strict", "degraded (WARPSMITH_SANDBOX=degraded)", ...
  std::string mode = "custom";
};

/// How the evaluator confines its children, from WARPSMITH_SANDBOX (docs/sandbox.md):
/// strict (default; every layer, only the cgroup may be missing), degraded (every layer where the
/// machine has it; each missing one is recorded), off (rlimits, watchdog and a cleared
/// environment only, recorded as off: for machines where bubblewrap cannot work).
enum class SandboxMode { kStrict, kDegraded, kOff };
Result<SandboxMode> SandboxModeFromEnv();

/// All layers for `mode` (see SandboxMode). The one place that decides what may degrade.
SandboxPolicy ConfinedPolicy(SandboxMode mode);

/// ConfinedPolicy(SandboxModeFromEnv()): what compile workers and runners get by default.
Result<SandboxPolicy> DefaultSandboxPolicy();

struct SandboxSpec {
  std::vector<std::string> argv;               // argv[0] is an absolute path or found on PATH
  std::string working_dir;                     // empty: inherit
  std::map<std::string, std::string> env_set;  // added to (or replacing in) the environment
  std::string stdin_data;
  SandboxLimits limits;
  SandboxPolicy policy;
};

struct SandboxResult {
  int exit_code = -1;  // valid when !signaled
  bool signaled = false;
  int signal = 0;
  bool timed_out = false;  // killed by the wall-clock limit
  double wall_seconds = 0;
  std::string stdout_data;  // capped
  std::string stderr_data;  // capped
  int64_t stdout_dropped = 0, stderr_dropped = 0;
  bool oom_killed = false;  // the cgroup's memory limit killed something
  /// Every layer's actual state: "mode", "namespaces", "seccomp", "cgroup", "rlimits", "env",
  /// "watchdog" (and "gpu" when asked for), each "on: ...", "off", or "degraded: <why>".
  std::map<std::string, std::string> layers;
  /// "exit 0", "exit 3", "killed by signal 9 (timeout after 60 s)", ...
  std::string Describe() const;
};

/// Starts argv in a new process group inside the policy's layers with the limits, feeds stdin,
/// collects capped output and waits. Never throws. An error Status means the child could not be
/// started at all, which includes a requested layer this machine lacks (and may not degrade);
/// the message names the layer and why. Thread-safe.
Result<SandboxResult> RunSandboxed(const SandboxSpec& spec);

/// The bubblewrap executable: $WARPSMITH_BWRAP, else `bwrap` beside the running binary, else on
/// PATH or in /usr/bin, /usr/local/bin. Empty when there is none.
std::string FindBwrap();

/// Absolute path of the running executable's directory (for finding ws_runner and ws_compile).
std::string SelfDir();

}  // namespace ws

// One runner at a time on a GPU, across every evaluating process of the host. Without it, two
// evaluations on one GPU time-slice each other's timed runs, and a runner killed mid-kernel (a
// candidate that never returns) can take down the work other contexts have in flight: a soak of
// 16 concurrent evaluations on one H200 saw the trusted reference runner fail with
// CUDA_ERROR_LAUNCH_FAILED that way. A campaign's executor already gives each GPU one job at a
// time; the lock extends that to separate `warpsmith eval` processes and threads of one process.
//
// The runner takes the lock itself, after its CUDA start-up and before its first case (a file
// lock, base/file_lock.h, on a file the sandbox binds read-only): start-up is most of a short
// runner's life and needs no exclusivity. The case watchdog is armed only after the lock is held.
#pragma once

#include <string>

#include "base/file_lock.h"
#include "base/status.h"

namespace ws {

/// The lock file's name for the GPU a runner will use: the first entry of its
/// CUDA_VISIBLE_DEVICES ("0" when that is empty, as CUDA then picks ordinal 0). Processes that
/// name one GPU two ways (an ordinal and a UUID) do not share a lock.
std::string GpuLockName(const std::string& visible_devices);

/// `dir`/`name`, created when missing (`dir` with mode 1777 and the file 0666: evaluations of
/// every user meet there), for a runner to lock.
Result<std::string> PrepareGpuLock(const std::string& dir, const std::string& name);

/// Locks the GPU from this process, waiting as long as it takes (the device probe, which runs no
/// candidate). An empty `dir` holds nothing (locking off).
Result<FileLock> AcquireGpuLock(const std::string& dir, const std::string& name);

/// The candidate runner's turn, within one evaluation: the candidate runner may start up (CUDA,
/// the helper kernels: seconds) while the trusted reference runs, but must load its cubin and
/// take the GPU only after it. The evaluator holds the gate's file locked while the reference
/// runs; the runner waits for that lock after its start-up (the job's `turn`), and goes on only
/// if the file then reads "go". Anything else ("wait": the evaluator died holding it; "abort":
/// the reference failed) sends the runner home before it loads the candidate.
class TurnGate {
 public:
  /// Writes `path` reading "wait" and locks it.
  static Result<TurnGate> Close(const std::string& path);

  TurnGate(TurnGate&&) = default;
  TurnGate& operator=(TurnGate&&) = delete;
  /// Opens the gate with "abort" unless Open was called.
  ~TurnGate() { Open(false); }

  /// Writes "go" (runner::kTurnGo) or "abort" and releases the lock; later calls do nothing.
  /// The word replaces the file whole, so a runner reads either "wait" or the word, and a
  /// failed write leaves "wait": the runner goes home, nothing hangs.
  void Open(bool go);

  const std::string& path() const { return path_; }

 private:
  TurnGate(std::string path, FileLock lock) : path_(std::move(path)), lock_(std::move(lock)) {}
  std::string path_;
  FileLock lock_;
};

}  // namespace ws

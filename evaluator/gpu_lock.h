// One runner per GPU at a time, across every evaluating process of the host. Without it, two
// evaluations on one GPU time-slice each other's timed runs, and a runner killed mid-kernel (a
// candidate that never returns) takes down the work other contexts have in flight: a soak of 16
// concurrent evaluations on one H200 saw the trusted reference runner fail with
// CUDA_ERROR_LAUNCH_FAILED that way. A campaign's executor already gives each GPU one job at a time;
// the lock extends that to separate `warpsmith eval` processes and to threads of one process.
#pragma once

#include <string>

#include "base/status.h"

namespace ws {

/// The lock file's name for the GPU a runner will use: the first entry of its
/// CUDA_VISIBLE_DEVICES ("0" when that is empty, as CUDA then picks ordinal 0). Processes that
/// name one GPU two ways (an ordinal and a UUID) do not share a lock.
std::string GpuLockName(const std::string& visible_devices);

/// An exclusive flock(2) on `dir`/`name`, held until destruction. flock locks belong to the open
/// file, so two locks in threads of one process exclude each other too, and the kernel releases
/// the lock of a process that dies. The file is opened close-on-exec: runners never inherit it.
class GpuLock {
 public:
  /// Blocks until the lock is ours. `dir` is created (mode 1777: processes of every user meet
  /// there) when missing. An empty `dir` holds nothing (locking off).
  static Result<GpuLock> Acquire(const std::string& dir, const std::string& name);

  GpuLock(GpuLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  GpuLock& operator=(GpuLock&& other) noexcept;
  GpuLock(const GpuLock&) = delete;
  GpuLock& operator=(const GpuLock&) = delete;
  ~GpuLock();

  bool held() const { return fd_ >= 0; }

 private:
  explicit GpuLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace ws

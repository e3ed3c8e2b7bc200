// An exclusive flock(2) on a file, held until destruction. flock locks belong to the open file,
// so two locks taken in threads of one process exclude each other too, and the kernel drops the
// lock of a process that dies however it dies. Descriptors are close-on-exec: children never
// inherit a lock.
#pragma once

#include <string>

#include "base/status.h"

namespace ws {

class FileLock {
 public:
  /// Locks the existing file `path`, waiting at most `wait_s` seconds (negative: as long as it
  /// takes). The file is opened read-only, which is enough for flock: a runner locks a file its
  /// sandbox binds read-only.
  static Result<FileLock> Acquire(const std::string& path, double wait_s);

  /// Holds nothing (locking off).
  FileLock() = default;
  FileLock(FileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  ~FileLock();

  bool held() const { return fd_ >= 0; }

  /// Gives the descriptor up to the process: the lock then lasts until the process ends, after
  /// everything its destructors and exit handlers do (a runner's CUDA teardown included).
  void HoldUntilExit() { fd_ = -1; }

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace ws

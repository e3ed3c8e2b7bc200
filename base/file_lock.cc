#include "base/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace ws {

Result<FileLock> FileLock::Acquire(const std::string& path, double wait_s) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Error("cannot open the lock {}: {}", path, std::strerror(errno));
  FileLock lock(fd);  // closes fd on every error path below
  if (wait_s < 0) {
    int rc;
    do {
      rc = ::flock(fd, LOCK_EX);
    } while (rc != 0 && errno == EINTR);
    if (rc != 0) return Status::Error("cannot lock {}: {}", path, std::strerror(errno));
    return lock;
  }
  // A bounded wait: flock has no timeout, so poll (a holder keeps it for seconds, not microseconds).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  for (;;) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return lock;
    if (errno != EWOULDBLOCK && errno != EINTR) {
      return Status::Error("cannot lock {}: {}", path, std::strerror(errno));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::Error("{} stayed locked for {} s", path, wait_s);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the only descriptor releases the flock
}

}  // namespace ws

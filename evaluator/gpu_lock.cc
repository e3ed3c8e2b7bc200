#include "evaluator/gpu_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace ws {

std::string GpuLockName(const std::string& visible_devices) {
  std::string first = visible_devices.substr(0, visible_devices.find(','));
  while (!first.empty() && first.front() == ' ') first.erase(first.begin());
  while (!first.empty() && first.back() == ' ') first.pop_back();
  if (first.empty()) first = "0";
  std::string name = "gpu-";
  for (char c : first) {  // a UUID or an ordinal; anything else becomes '_'
    name += (std::isalnum(static_cast<unsigned char>(c)) || c == '-') ? c : '_';
  }
  return name + ".lock";
}

Result<GpuLock> GpuLock::Acquire(const std::string& dir, const std::string& name) {
  if (dir.empty()) return GpuLock(-1);
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) return Status::Error("cannot create the GPU lock folder {}: {}", dir, ec.message());
    // Another user's evaluations lock the same GPU: anyone may create files, as in /tmp.
    ::chmod(dir.c_str(), 01777);
  }
  const std::string path = dir + "/" + name;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return Status::Error("cannot open the GPU lock {}: {}", path, std::strerror(errno));
  ::fchmod(fd, 0666);  // the umask may have narrowed it; best effort (another user's file)
  int rc;
  do {
    rc = ::flock(fd, LOCK_EX);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int err = errno;
    ::close(fd);
    return Status::Error("cannot lock {}: {}", path, std::strerror(err));
  }
  return GpuLock(fd);
}

GpuLock& GpuLock::operator=(GpuLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

GpuLock::~GpuLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the only descriptor releases the flock
}

}  // namespace ws

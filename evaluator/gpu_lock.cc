#include "evaluator/gpu_lock.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/files.h"
#include "evaluator/runner/commands.h"

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

Result<std::string> PrepareGpuLock(const std::string& dir, const std::string& name) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    std::filesystem::create_directories(dir, ec);
    if (ec) return Status::Error("cannot create the GPU lock folder {}: {}", dir, ec.message());
    ::chmod(dir.c_str(), 01777);  // as /tmp: anyone may add a file, only its owner remove it
  }
  const std::string path = dir + "/" + name;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) {
    // Another user's file that we may not write is still ours to lock.
    if (::access(path.c_str(), R_OK) == 0) return path;
    return Status::Error("cannot create the GPU lock {}: {}", path, std::strerror(errno));
  }
  ::fchmod(fd, 0666);
  ::close(fd);
  return path;
}

Result<FileLock> AcquireGpuLock(const std::string& dir, const std::string& name) {
  if (dir.empty()) return FileLock();
  WS_ASSIGN_OR_RETURN(std::string path, PrepareGpuLock(dir, name));
  return FileLock::Acquire(path, /*wait_s=*/-1);
}

Result<TurnGate> TurnGate::Close(const std::string& path) {
  WS_RETURN_IF_ERROR(WriteFileAtomic(path, "wait"));
  WS_ASSIGN_OR_RETURN(FileLock lock, FileLock::Acquire(path, /*wait_s=*/-1));
  return TurnGate(path, std::move(lock));
}

void TurnGate::Open(bool go) {
  if (!lock_.held()) return;
  (void)WriteFileAtomic(path_, go ? std::string(runner::kTurnGo) : "abort");
  lock_ = FileLock();  // drops the lock
}

}  // namespace ws

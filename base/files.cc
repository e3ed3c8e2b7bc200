#include "base/files.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ws {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Status::Error("cannot read {}: {}", path, std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Status WriteFileAtomic(const std::string& path, std::string_view data) {
  std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return Status::Error("cannot write {}: {}", tmp, std::strerror(errno));
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
    if (!f) return Status::Error("cannot write {}", tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Status::Error("cannot rename {} to {}: {}", tmp, path, ec.message());
  return Status::Ok();
}

}  // namespace ws

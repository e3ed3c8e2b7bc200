#include "base/files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <fstream>

namespace ws {

namespace {

// One allocation and one read for the size the file has: the evaluator reads output dumps of up
// to gigabytes, where a growing stream buffer costs several copies.
template <typename Bytes>
Result<Bytes> ReadInto(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return Status::Error("cannot read {}: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(::fileno(f.get()), &st) != 0)
    return Status::Error("cannot stat {}: {}", path, std::strerror(errno));
  Bytes data;
  if (S_ISREG(st.st_mode)) data.resize(static_cast<size_t>(st.st_size));
  size_t n = data.empty() ? 0 : std::fread(data.data(), 1, data.size(), f.get());
  if (n < data.size()) {
    if (std::ferror(f.get())) return Status::Error("cannot read {}: {}", path, std::strerror(errno));
    data.resize(n);  // the file shrank while being read
  }
  // Whatever stat did not announce (pipes, /proc files, a file that grew).
  char buf[65536];
  while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) data.insert(data.end(), buf, buf + n);
  if (std::ferror(f.get())) return Status::Error("cannot read {}: {}", path, std::strerror(errno));
  return data;
}

}  // namespace

Result<std::string> ReadFile(const std::string& path) { return ReadInto<std::string>(path); }

Result<std::vector<uint8_t>> ReadFileBytes(const std::string& path) {
  return ReadInto<std::vector<uint8_t>>(path);
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

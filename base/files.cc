#include "base/files.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <fstream>
#include <utility>

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

Result<MappedFile> MappedFile::Open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Error("cannot read {}: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return Status::Error("cannot stat {}: {}", path, std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::Error("cannot map {}: not a regular file", path);
  }
  MappedFile m;
  if (st.st_size > 0) {
    void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    const int e = errno;
    ::close(fd);  // the mapping keeps the file
    if (p == MAP_FAILED) return Status::Error("cannot map {}: {}", path, std::strerror(e));
    // The comparison's threads read it all at once, chunk by chunk: have it all read ahead.
    ::madvise(p, static_cast<size_t>(st.st_size), MADV_WILLNEED);
    m.data_ = p;
    m.size_ = static_cast<size_t>(st.st_size);
  } else {
    ::close(fd);
  }
  return m;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_) ::munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
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

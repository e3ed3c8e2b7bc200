// Whole-file reads and atomic writes, with errors that name the file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace ws {

/// The file's bytes.
Result<std::string> ReadFile(const std::string& path);

/// The file's bytes as a byte vector (output dumps: no copy from a string).
Result<std::vector<uint8_t>> ReadFileBytes(const std::string& path);

/// A regular file's bytes mapped read-only: no copy and no fresh memory to fault in, so output
/// dumps of gigabytes are compared straight from the page cache. The file must not shrink while
/// mapped (a read past its new end is a SIGBUS): the evaluator maps a dump only after the process
/// that wrote it has exited.
class MappedFile {
 public:
  static Result<MappedFile> Open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

 private:
  void* data_ = nullptr;  // null for an empty file
  size_t size_ = 0;
};

/// Writes to a temporary file beside `path` and renames it over `path`, so readers never see a
/// half-written file.
Status WriteFileAtomic(const std::string& path, std::string_view data);

}  // namespace ws

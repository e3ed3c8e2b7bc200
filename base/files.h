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

/// Writes to a temporary file beside `path` and renames it over `path`, so readers never see a
/// half-written file.
Status WriteFileAtomic(const std::string& path, std::string_view data);

}  // namespace ws

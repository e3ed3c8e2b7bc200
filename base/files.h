// Whole-file reads and atomic writes, with errors that name the file.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace ws {

/// The file's bytes.
Result<std::string> ReadFile(const std::string& path);

/// Writes to a temporary file beside `path` and renames it over `path`, so readers never see a
/// half-written file.
Status WriteFileAtomic(const std::string& path, std::string_view data);

}  // namespace ws

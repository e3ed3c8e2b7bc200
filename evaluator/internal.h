// Helpers shared by the evaluator's sources; not part of its public header.
#pragma once

#include <string>
#include <string_view>

#include "base/files.h"
#include "base/status.h"
#include "evaluator/evaluator.h"

namespace ws {

/// Registers, shared memory, stack and spills per kernel, from ptxas' verbose log.
ResourceReport ParsePtxasLog(const std::string& log);
std::vector<std::string> DefaultIncludeDirs();

/// One output's comparison: exact bytes. Returns "" when equal, else the first mismatches
/// described with their coordinates ("q[3, 17]: got 0x7e, expected 0x7f; ...").
std::string CompareExact(const std::string& tensor, const std::vector<int64_t>& dims, int elem_size,
                         std::string_view got, std::string_view want, int max_reports = 5);

}  // namespace ws

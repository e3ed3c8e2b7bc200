// ResourceReport as JSON: one format for the compile cache, job results and the store's
// evaluations (compile.cc).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "evaluator/evaluator.h"

namespace ws {

/// An array of one object per kernel, its fields named as in ResourceReport::Kernel.
nlohmann::json ResourcesToJson(const ResourceReport& r);

/// The inverse; a missing field reads as empty or 0.
ResourceReport ResourcesFromJson(const nlohmann::json& kernels);

}  // namespace ws

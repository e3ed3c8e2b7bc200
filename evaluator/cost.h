// Speed of light for one shape, shared by the evaluator (the suspicious-time bound, SOL fractions)
// and `problems show`.
#pragma once

#include <algorithm>
#include <map>
#include <string>

#include "evaluator/evaluator.h"

namespace ws {

/// The slowest of moving `bytes` at the measured copy bandwidth and doing each math class's
/// FLOPs at its measured rate ("fp8" at the FP8 rate, any other class at the BF16 rate), in
/// microseconds; 0 without a copy bandwidth. `bound`, if given, names the limiting resource
/// ("memory", "bf16", "fp8").
inline double SpeedOfLightUs(double bytes, const std::map<std::string, double>& flops,
                             const DeviceCeilings& c, std::string* bound = nullptr) {
  if (c.copy_bytes_per_s <= 0)
    return 0;
  double t = bytes / c.copy_bytes_per_s;
  std::string what = "memory";
  for (const auto& [cls, f] : flops) {
    const double rate = cls == "fp8" ? c.fp8_flops_per_s : c.bf16_flops_per_s;
    if (rate > 0 && f / rate > t) {
      t = f / rate;
      what = cls;
    }
  }
  if (bound)
    *bound = what;
  return t * 1e6;
}

}  // namespace ws

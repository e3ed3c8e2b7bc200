// The tuner: an agent with no LLM. It searches a parent kernel's knobs (the plan's compile-time
// constants): every combination when the space is small, else coordinate descent from the best
// setting seen plus random restarts. It keeps no state between calls: the history of evaluated
// settings (from the store) is its memory, so a resumed campaign continues where it stopped.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ws {

using KnobSetting = std::map<std::string, int64_t>;
using KnobSpace = std::map<std::string, std::vector<int64_t>>;  // name -> allowed values

/// One evaluated setting. `time_us` is 0 when it was not timed (rejected, or compile-only).
struct KnobObservation {
  KnobSetting knobs;
  bool ok = false;
  double time_us = 0;
};

struct TunerOptions {
  int64_t exhaustive_limit = 64;  // spaces up to this many combinations are enumerated
  uint64_t seed = 1;              // random restarts; with the history, fixes the proposals
};

/// Combinations in the space (saturates at INT64_MAX).
int64_t KnobSpaceSize(const KnobSpace& space);

/// The plan's defaults: the first value of every knob.
KnobSetting DefaultKnobs(const KnobSpace& space);

/// "CHUNKS=2 THREADS=512"; stable order (by name).
std::string KnobText(const KnobSetting& knobs);

/// Up to `max` settings not yet in `history`, best first to try; empty when the space is
/// exhausted. Exhaustive spaces go defaults first, then in mixed-radix order. Larger spaces: the
/// unseen neighbours (one knob changed) of the fastest timed setting (the defaults while nothing
/// is timed; a setting timed several times counts at its median); when it has none left, random
/// unseen settings (restarts).
std::vector<KnobSetting> ProposeKnobs(const KnobSpace& space,
                                      const std::vector<KnobObservation>& history, int max,
                                      const TunerOptions& opts);

}  // namespace ws

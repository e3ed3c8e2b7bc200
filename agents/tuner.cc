#include "agents/tuner.h"

#include <algorithm>
#include <limits>
#include <map>
#include <random>
#include <set>

#include <fmt/format.h>

namespace ws {

int64_t KnobSpaceSize(const KnobSpace& space) {
  int64_t n = 1;
  for (const auto& [_, values] : space) {
    const int64_t k = static_cast<int64_t>(values.size());
    if (k == 0)
      return 0;
    if (n > std::numeric_limits<int64_t>::max() / k)
      return std::numeric_limits<int64_t>::max();
    n *= k;
  }
  return n;
}

KnobSetting DefaultKnobs(const KnobSpace& space) {
  KnobSetting s;
  for (const auto& [name, values] : space) {
    if (!values.empty())
      s[name] = values.front();
  }
  return s;
}

std::string KnobText(const KnobSetting& knobs) {
  std::string t;
  for (const auto& [k, v] : knobs) t += fmt::format("{}{}={}", t.empty() ? "" : " ", k, v);
  return t.empty() ? "(no knobs)" : t;
}

namespace {

// The i-th combination in mixed-radix order, the first knob (by name) varying slowest.
KnobSetting NthSetting(const KnobSpace& space, int64_t i) {
  KnobSetting s;
  for (auto it = space.rbegin(); it != space.rend(); ++it) {
    const int64_t k = static_cast<int64_t>(it->second.size());
    s[it->first] = it->second[static_cast<size_t>(i % k)];
    i /= k;
  }
  return s;
}

}  // namespace

std::vector<KnobSetting> ProposeKnobs(const KnobSpace& space,
                                      const std::vector<KnobObservation>& history, int max,
                                      const TunerOptions& opts) {
  std::vector<KnobSetting> out;
  const int64_t size = KnobSpaceSize(space);
  if (max <= 0 || size == 0)
    return out;
  std::set<KnobSetting> seen;
  for (const auto& h : history) seen.insert(h.knobs);
  if (static_cast<int64_t>(seen.size()) >= size)
    return out;
  auto take = [&](const KnobSetting& s) {
    if (static_cast<int>(out.size()) < max && seen.insert(s).second)
      out.push_back(s);
  };

  take(DefaultKnobs(space));
  if (size <= opts.exhaustive_limit) {
    for (int64_t i = 0; i < size && static_cast<int>(out.size()) < max; ++i)
      take(NthSetting(space, i));
    return out;
  }

  // Combination: where a setting's one-knob variants improved on it in several knobs, try all
  // those improvements at once. Separable effects (vector width, threads, unrolling) then take
  // one round of neighbours, not one round per knob.
  // A setting timed more than once (a leader's confirmation runs) counts at its median, as the
  // leaderboard ranks it, not at its luckiest run.
  std::map<KnobSetting, std::vector<double>> runs;
  for (const auto& h : history) {
    if (h.ok && h.time_us > 0) runs[h.knobs].push_back(h.time_us);
  }
  std::map<KnobSetting, double> ok_time;
  for (auto& [knobs, ts] : runs) {
    std::sort(ts.begin(), ts.end());
    ok_time[knobs] = (ts[(ts.size() - 1) / 2] + ts[ts.size() / 2]) / 2;
  }
  for (const auto& [base, base_us] : ok_time) {
    KnobSetting combined = base;
    int improved = 0;
    for (const auto& [name, values] : space) {
      double best_us = base_us;
      for (int64_t v : values) {
        KnobSetting n = base;
        n[name] = v;
        auto it = ok_time.find(n);
        if (it != ok_time.end() && it->second < best_us) {
          best_us = it->second;
          combined[name] = v;
        }
      }
      if (combined[name] != base.at(name)) ++improved;
    }
    if (improved >= 2) take(combined);
  }

  // Coordinate descent: every one-knob change of the fastest setting so far (the first of a tie
  // in the history's order).
  KnobSetting center = DefaultKnobs(space);
  double best = 0;
  for (const auto& h : history) {
    if (!h.ok || h.time_us <= 0) continue;
    const double t = ok_time.at(h.knobs);
    if (best == 0 || t < best) {
      best = t;
      center = h.knobs;
    }
  }
  for (const auto& [name, values] : space) {
    for (int64_t v : values) {
      KnobSetting n = center;
      n[name] = v;
      take(n);
    }
  }
  if (!out.empty())
    return out;

  // A local optimum: restart from random unseen settings. Seeded by the history's size so a
  // resumed run proposes what the killed one would have.
  std::mt19937_64 rng(opts.seed * 0x9E3779B97F4A7C15ull + history.size());
  for (int tries = 0; tries < 64 * max && static_cast<int>(out.size()) < max; ++tries) {
    KnobSetting r;
    for (const auto& [name, values] : space) r[name] = values[rng() % values.size()];
    take(r);
  }
  return out;
}

}  // namespace ws

#include "agents/planner.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>

namespace ws {

bool IsStalled(const ProblemProgress& p, const PlannerOptions& opts) {
  return opts.stall_attempts > 0 && p.attempts_since_improvement >= opts.stall_attempts;
}

double ProblemWeight(const ProblemProgress& p, const PlannerOptions& opts) {
  if (p.exhausted || IsStalled(p, opts))
    return 0;
  const double headroom =
      p.best_sol_fraction > 0 ? std::clamp(1.0 - p.best_sol_fraction, 0.02, 1.0) : 1.0;
  const double progress = 1.0 + opts.progress_weight * std::max(0.0, p.recent_gain);
  const double decay =
      1.0 / (1.0 + static_cast<double>(p.attempts_since_improvement) /
                       static_cast<double>(std::max<int64_t>(opts.stall_attempts, 1)));
  return headroom * progress * decay;
}

int PickProblem(const std::vector<ProblemProgress>& problems, const PlannerOptions& opts,
                double u) {
  double total = 0;
  for (const auto& p : problems) total += ProblemWeight(p, opts);
  if (total <= 0)
    return -1;
  double x = std::clamp(u, 0.0, 0.999999) * total;
  int last = -1;
  for (size_t i = 0; i < problems.size(); ++i) {
    double w = ProblemWeight(problems[i], opts);
    if (w <= 0)
      continue;
    last = static_cast<int>(i);
    if (x < w)
      return last;
    x -= w;
  }
  return last;
}

std::vector<int64_t> PickParents(std::vector<ParentCandidate> candidates, int inspirations,
                                 uint64_t seed) {
  std::vector<int64_t> out;
  if (candidates.empty())
    return out;
  // Ranked: timed kernels fastest first, untimed after them, ties by id (oldest first).
  std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
    const bool at = a.time_us > 0, bt = b.time_us > 0;
    if (at != bt)
      return at;
    if (at && a.time_us != b.time_us)
      return a.time_us < b.time_us;
    return a.kernel_id < b.kernel_id;
  });
  out.push_back(candidates.front().kernel_id);
  std::set<int64_t> used = {candidates.front().kernel_id};
  std::set<int64_t> lineages = {candidates.front().lineage};
  std::mt19937_64 rng(seed);

  // One per other lineage: the fastest of each, lineages in random rank-weighted order.
  std::map<int64_t, const ParentCandidate*> lead;  // lineage -> its fastest kernel
  for (const auto& c : candidates) {
    if (!lineages.count(c.lineage) && !lead.count(c.lineage))
      lead[c.lineage] = &c;
  }
  auto draw = [&](std::vector<const ParentCandidate*>& pool) {
    // Weight 1 / (rank + 1): better kernels more often, every kernel sometimes.
    double total = 0;
    for (size_t i = 0; i < pool.size(); ++i) total += 1.0 / static_cast<double>(i + 1);
    double x = std::uniform_real_distribution<double>(0, total)(rng);
    size_t pick = pool.size() - 1;
    for (size_t i = 0; i < pool.size(); ++i) {
      double w = 1.0 / static_cast<double>(i + 1);
      if (x < w) {
        pick = i;
        break;
      }
      x -= w;
    }
    const ParentCandidate* c = pool[pick];
    pool.erase(pool.begin() + static_cast<std::ptrdiff_t>(pick));
    return c;
  };
  std::vector<const ParentCandidate*> pool;
  for (const auto& c : candidates) {
    auto it = lead.find(c.lineage);
    if (it != lead.end() && it->second == &c)
      pool.push_back(&c);
  }
  while (static_cast<int>(out.size()) <= inspirations && !pool.empty()) {
    const ParentCandidate* c = draw(pool);
    out.push_back(c->kernel_id);
    used.insert(c->kernel_id);
  }
  // Then any other kernel.
  pool.clear();
  for (const auto& c : candidates) {
    if (!used.count(c.kernel_id))
      pool.push_back(&c);
  }
  while (static_cast<int>(out.size()) <= inspirations && !pool.empty()) {
    out.push_back(draw(pool)->kernel_id);
  }
  return out;
}

}  // namespace ws

#include "evaluator/checkers/router_topk.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "problems/router_topk_sigmoid_grouped/reference.h"  // GroupScores, GroupedConfig

namespace ws {
namespace {

constexpr int kMaxReports = 5;
constexpr int64_t kMaxGroupSets = 200000;  // kept-group sets tried per row, past the reference's

template <typename T>
std::vector<T> Values(const HostTensor& t) {
  std::vector<T> v(t.bytes.size() / sizeof(T));
  if (!v.empty())
    std::memcpy(v.data(), t.bytes.data(), v.size() * sizeof(T));
  return v;
}

double Option(const std::map<std::string, double>& options, const char* name, double fallback) {
  const auto it = options.find(name);
  return it == options.end() ? fallback : it->second;
}

int64_t Symbol(const SymbolTable& symbols, const char* name, int64_t fallback) {
  const auto it = symbols.find(name);
  return it == symbols.end() ? fallback : it->second;
}

// One row's fp64 view: selection scores, the weight numerators, the tie margin and groups.
struct RowModel {
  std::vector<double> score;   // what selection ranks (softmax probability or biased score)
  std::vector<double> weight;  // the unnormalized weight numerator of each expert
  double tie_rtol = 1e-6;
  bool absolute_floor = false;  // the margin is at least tie_rtol (biased sigmoid scores)
  int64_t groups = 1, keep = 1;
  std::vector<double> group_score;

  double Margin(double a, double b) const {
    double m = std::max(std::fabs(a), std::fabs(b));
    if (absolute_floor)
      m = std::max(m, 1.0);
    return tie_rtol * m;
  }
  // a is not above b by more than the margin.
  bool NotAbove(double a, double b) const { return a <= b + Margin(a, b); }
};

// The chosen set is acceptable within `kept` (experts of other groups are out of reach): no
// expert left out scores above the lowest chosen one by more than the margin.
bool SetValid(const RowModel& m, const std::vector<int32_t>& chosen,
              const std::vector<bool>& kept_group, int64_t per, int64_t* offender) {
  double lowest = INFINITY;
  for (int32_t c : chosen) lowest = std::min(lowest, m.score[c]);
  const int64_t e = static_cast<int64_t>(m.score.size());
  for (int64_t u = 0; u < e; ++u) {
    if (!kept_group[u / per] || std::find(chosen.begin(), chosen.end(), u) != chosen.end())
      continue;
    if (!m.NotAbove(m.score[u], lowest)) {
      *offender = u;
      return false;
    }
  }
  return true;
}

bool GroupsAcceptable(const RowModel& m, const std::vector<bool>& kept) {
  double lowest_kept = INFINITY, highest_out = -INFINITY;
  for (int64_t g = 0; g < m.groups; ++g) {
    if (kept[g])
      lowest_kept = std::min(lowest_kept, m.group_score[g]);
    else
      highest_out = std::max(highest_out, m.group_score[g]);
  }
  return highest_out == -INFINITY || m.NotAbove(highest_out, lowest_kept);
}

// Is `chosen` a valid choice of the row? Empty string if so, else why not.
std::string CheckChoice(const RowModel& m, const std::vector<int32_t>& chosen) {
  const int64_t e = static_cast<int64_t>(m.score.size());
  const int64_t per = e / m.groups;
  // The reference's kept groups first (score descending, equal scores: lower id).
  std::vector<int64_t> order(m.groups);
  for (int64_t g = 0; g < m.groups; ++g) order[g] = g;
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return m.group_score[a] > m.group_score[b]; });
  std::vector<bool> kept(m.groups, false);
  for (int64_t j = 0; j < m.keep; ++j) kept[order[j]] = true;
  std::vector<bool> touched(m.groups, false);
  int64_t n_touched = 0;
  for (int32_t c : chosen) {
    if (!touched[c / per]) {
      touched[c / per] = true;
      ++n_touched;
    }
  }
  if (n_touched > m.keep)
    return fmt::format("the experts come from {} groups, only {} may be kept", n_touched, m.keep);
  bool fits = true;
  for (int64_t g = 0; g < m.groups; ++g) fits = fits && (!touched[g] || kept[g]);
  int64_t offender = -1;
  if (fits && SetValid(m, chosen, kept, per, &offender))
    return "";
  if (m.groups == 1) {
    return fmt::format(
        "expert {} (score {:.9g}) was left out, above chosen ones (lowest chosen "
        "score {:.9g}) by more than the near-tie margin",
        offender, m.score[offender],
        m.score[*std::min_element(chosen.begin(), chosen.end(),
                                  [&](int a, int b) { return m.score[a] < m.score[b]; })]);
  }
  // Other kept-group sets: those holding every touched group, acceptable by the group margin.
  // Enumerated as TG-subsets in lexicographic order (bounded; near-ties make few acceptable).
  std::vector<int64_t> pick(m.keep);
  for (int64_t j = 0; j < m.keep; ++j) pick[j] = j;
  int64_t tried = 0;
  while (true) {
    std::vector<bool> set(m.groups, false);
    for (int64_t g : pick) set[g] = true;
    bool holds = true;
    for (int64_t g = 0; g < m.groups; ++g) holds = holds && (!touched[g] || set[g]);
    if (holds && GroupsAcceptable(m, set) && SetValid(m, chosen, set, per, &offender))
      return "";
    if (++tried > kMaxGroupSets)
      break;
    int64_t j = m.keep - 1;
    while (j >= 0 && pick[j] == m.groups - m.keep + j) --j;
    if (j < 0)
      break;
    ++pick[j];
    for (int64_t jj = j + 1; jj < m.keep; ++jj) pick[jj] = pick[jj - 1] + 1;
  }
  return fits ? fmt::format(
                    "expert {} (score {:.9g}) of a kept group was left out, above a chosen "
                    "expert by more than the near-tie margin",
                    offender, m.score[offender])
              : "the experts' groups are not a valid choice of kept groups (a group left out "
                "scores above a kept one by more than the near-tie margin)";
}

}  // namespace

std::string CheckRouterTopk(const ProblemSpec& spec, const SymbolTable& symbols,
                            const std::map<std::string, std::string>& params,
                            const std::map<std::string, double>& options, const TensorMap& inputs,
                            const TensorMap& got) {
  const bool grouped = spec.cpu_reference == "router_topk_sigmoid_grouped";
  if (!grouped && spec.cpu_reference != "router_topk_softmax")
    return fmt::format("router_topk: no rules for problem '{}'", spec.name);
  const int64_t t = Symbol(symbols, "T", 0), e = Symbol(symbols, "E", 0),
                k = Symbol(symbols, "K", 0);
  const auto logits_it = inputs.find("logits");
  const auto idx_it = got.find("idx"), w_it = got.find("w"), counts_it = got.find("counts");
  if (logits_it == inputs.end() || idx_it == got.end() || w_it == got.end() ||
      counts_it == got.end() || t < 1 || e < 1 || k < 1)
    return "router_topk: the logits input, the idx, w and counts outputs and T, E, K are needed";
  if (logits_it->second.bytes.size() != static_cast<size_t>(t * e * 4) ||
      idx_it->second.bytes.size() != static_cast<size_t>(t * k * 4) ||
      w_it->second.bytes.size() != static_cast<size_t>(t * k * 4) ||
      counts_it->second.bytes.size() != static_cast<size_t>(e * 4))
    return "router_topk: tensor sizes do not match T, E, K";
  const std::vector<float> logits = Values<float>(logits_it->second);
  const std::vector<int32_t> idx = Values<int32_t>(idx_it->second);
  const std::vector<float> w = Values<float>(w_it->second);
  const std::vector<int32_t> counts = Values<int32_t>(counts_it->second);
  std::vector<float> bias;
  router::GroupedConfig cfg;
  bool renormalize = true;
  if (grouped) {
    const auto bias_it = inputs.find("bias");
    if (bias_it == inputs.end() || bias_it->second.bytes.size() != static_cast<size_t>(e * 4))
      return "router_topk: the bias input [E] is needed";
    bias = Values<float>(bias_it->second);
    cfg = {e, k, Symbol(symbols, "NG", 1), Symbol(symbols, "TG", 1),
           Symbol(symbols, "SCALE_MILLI", 1000)};
    if (cfg.groups < 1 || e % cfg.groups != 0 || cfg.keep_groups < 1 ||
        cfg.keep_groups > cfg.groups)
      return "router_topk: NG and TG do not describe groups of E";
  } else {
    const auto p = params.find("weights");
    const ParamSpec* ps = spec.FindParam("weights");
    const std::string mode = p != params.end() ? p->second : ps ? ps->default_value : "";
    renormalize = mode != "softmax";
  }
  const double tie_rtol = Option(options, "tie_rtol", 1e-6);
  const double w_rtol = Option(options, "w_rtol", 1e-5);
  const double w_atol = Option(options, "w_atol", 1e-12);

  std::string msg;
  int64_t bad_rows = 0;
  auto report = [&](std::string what) {
    if (bad_rows < kMaxReports)
      msg += (msg.empty() ? "" : "; ") + what;
    ++bad_rows;
  };
  RowModel m;
  m.tie_rtol = tie_rtol;
  m.absolute_floor = grouped;
  m.groups = grouped ? cfg.groups : 1;
  m.keep = grouped ? cfg.keep_groups : 1;
  m.score.resize(e);
  m.weight.resize(e);
  m.group_score.assign(m.groups, 0.0);
  for (int64_t row = 0; row < t; ++row) {
    const float* l = logits.data() + row * e;
    if (grouped) {
      for (int64_t i = 0; i < e; ++i) {
        m.weight[i] = 1.0 / (1.0 + std::exp(-static_cast<double>(l[i])));
        m.score[i] = m.weight[i] + static_cast<double>(bias[i]);
      }
      router::GroupScores(m.score.data(), cfg, m.group_score.data());
    } else {
      double mx = l[0];
      for (int64_t i = 1; i < e; ++i) mx = std::max(mx, static_cast<double>(l[i]));
      double sum = 0;
      for (int64_t i = 0; i < e; ++i) {
        m.weight[i] = std::exp(static_cast<double>(l[i]) - mx);
        sum += m.weight[i];
      }
      for (int64_t i = 0; i < e; ++i) m.score[i] = m.weight[i] / sum;
      if (!renormalize)
        m.weight = m.score;
    }
    const int32_t* c = idx.data() + row * k;
    std::vector<int32_t> chosen(c, c + k);
    bool ids_ok = true;
    for (int64_t j = 0; j < k && ids_ok; ++j) {
      if (chosen[j] < 0 || chosen[j] >= e) {
        report(
            fmt::format("idx[{}, {}] = {} is not an expert id in [0, {})", row, j, chosen[j], e));
        ids_ok = false;
      }
      for (int64_t jj = 0; jj < j && ids_ok; ++jj) {
        if (chosen[jj] == chosen[j]) {
          report(fmt::format("idx row {} names expert {} twice (slots {} and {})", row, chosen[j],
                             jj, j));
          ids_ok = false;
        }
      }
    }
    if (!ids_ok)
      continue;
    bool order_ok = true;
    for (int64_t j = 0; j + 1 < k && order_ok; ++j) {
      if (!m.NotAbove(m.score[chosen[j + 1]], m.score[chosen[j]])) {
        report(fmt::format(
            "idx[{}, {}..{}] = {}, {}: not in descending score order ({:.9g} < "
            "{:.9g})",
            row, j, j + 1, chosen[j], chosen[j + 1], m.score[chosen[j]], m.score[chosen[j + 1]]));
        order_ok = false;
      }
    }
    if (!order_ok)
      continue;
    const std::string why = CheckChoice(m, chosen);
    if (!why.empty()) {
      report(fmt::format("idx row {}: {}", row, why));
      continue;
    }
    // Weights of the choice actually made.
    double den = 0;
    for (int32_t x : chosen) den += m.weight[x];
    for (int64_t j = 0; j < k; ++j) {
      double want;
      if (grouped) {
        want = m.weight[chosen[j]] / den * (static_cast<double>(cfg.scale_milli) / 1000.0);
      } else {
        want = renormalize ? m.weight[chosen[j]] / den : m.weight[chosen[j]];
      }
      const double g = w[row * k + j];
      if (!(std::fabs(g - want) <= w_atol + w_rtol * std::fabs(want))) {
        report(fmt::format("w[{}, {}] = {:.9g}, expected {:.9g} (expert {}; rtol {:g})", row, j, g,
                           want, chosen[j], w_rtol));
        break;
      }
    }
  }
  if (bad_rows > 0) {
    return fmt::format("{} ({} of {} rows fail{})", msg, bad_rows, t,
                       bad_rows > kMaxReports ? ", the first shown" : "");
  }
  // Counts: the histogram of the candidate's own (valid) choices.
  std::vector<int64_t> hist(e, 0);
  for (int32_t x : idx) ++hist[x];
  int64_t bad_counts = 0;
  for (int64_t i = 0; i < e; ++i) {
    if (counts[i] == hist[i])
      continue;
    if (bad_counts < kMaxReports) {
      msg += fmt::format("{}counts[{}] = {}, idx names expert {} {} times", msg.empty() ? "" : "; ",
                         i, counts[i], i, hist[i]);
    }
    ++bad_counts;
  }
  if (bad_counts > 0)
    return fmt::format("{} ({} of {} counts differ)", msg, bad_counts, e);
  return "";
}

}  // namespace ws

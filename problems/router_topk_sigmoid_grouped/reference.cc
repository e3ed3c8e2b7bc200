#include "problems/router_topk_sigmoid_grouped/reference.h"

#include <cstring>
#include <vector>

#include "problems/init.h"
#include "problems/reference_util.h"
#include "problems/router_topk_softmax/reference.h"

namespace ws::router {

double BiasedScore(float logit, float bias) {
  return ws_dadd(Sigmoid(static_cast<double>(logit)), static_cast<double>(bias));
}

void GroupScores(const double* biased, const GroupedConfig& c, double* group_scores) {
  const int64_t per = c.experts / c.groups;
  for (int64_t g = 0; g < c.groups; ++g) {
    const double* s = biased + g * per;
    // The two largest values (which of two equal ones does not matter: the sum is the same).
    int64_t first = 0;
    for (int64_t i = 1; i < per; ++i) {
      if (s[i] > s[first])
        first = i;
    }
    if (per == 1) {
      group_scores[g] = s[0];
      continue;
    }
    int64_t second = first == 0 ? 1 : 0;
    for (int64_t i = 0; i < per; ++i) {
      if (i != first && s[i] > s[second])
        second = i;
    }
    group_scores[g] = ws_dadd(s[first], s[second]);
  }
}

void TopkSigmoidGroupedRow(const float* logits, const float* bias, const GroupedConfig& c,
                           int32_t* idx, float* w) {
  std::vector<double> biased(static_cast<size_t>(c.experts));
  for (int64_t i = 0; i < c.experts; ++i) biased[i] = BiasedScore(logits[i], bias[i]);
  std::vector<double> gs(static_cast<size_t>(c.groups));
  GroupScores(biased.data(), c, gs.data());
  std::vector<bool> kept(static_cast<size_t>(c.groups), false);
  for (int64_t j = 0; j < c.keep_groups; ++j) {
    int64_t best = -1;
    for (int64_t g = 0; g < c.groups; ++g) {
      if (!kept[g] && (best < 0 || gs[g] > gs[best]))
        best = g;
    }
    kept[best] = true;
  }
  const int64_t per = c.experts / c.groups;
  std::vector<bool> taken(static_cast<size_t>(c.experts), false);
  for (int64_t j = 0; j < c.k; ++j) {
    int64_t best = -1;
    for (int64_t i = 0; i < c.experts; ++i) {
      if (taken[i] || !kept[i / per])
        continue;
      if (best < 0 || biased[i] > biased[best])
        best = i;
    }
    taken[best] = true;
    idx[j] = static_cast<int32_t>(best);
  }
  // Weights from the unbiased scores.
  double sum = 0.0;
  for (int64_t j = 0; j < c.k; ++j)
    sum = ws_dadd(sum, Sigmoid(static_cast<double>(logits[idx[j]])));
  const double scale = ws_ddiv(static_cast<double>(c.scale_milli), 1000.0);
  for (int64_t j = 0; j < c.k; ++j) {
    const double s = Sigmoid(static_cast<double>(logits[idx[j]]));
    w[j] = ws_d2f(ws_dmul(ws_ddiv(s, sum), scale));
  }
}

void TopkSigmoidGrouped(const float* logits, const float* bias, int64_t t, const GroupedConfig& c,
                        int32_t* idx, float* w, int32_t* counts) {
  for (int64_t i = 0; i < c.experts; ++i) counts[i] = 0;
  for (int64_t row = 0; row < t; ++row) {
    TopkSigmoidGroupedRow(logits + row * c.experts, bias, c, idx + row * c.k, w + row * c.k);
    for (int64_t j = 0; j < c.k; ++j) ++counts[idx[row * c.k + j]];
  }
}

Status RouterTopkSigmoidGroupedReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                         const std::map<std::string, std::string>& params,
                                         const TensorMap& inputs, TensorMap& outputs) {
  (void)spec;
  (void)params;
  WS_ASSIGN_OR_RETURN(const int64_t t, SymbolValue(symbols, "T"));
  GroupedConfig c;
  WS_ASSIGN_OR_RETURN(c.experts, SymbolValue(symbols, "E"));
  WS_ASSIGN_OR_RETURN(c.k, SymbolValue(symbols, "K"));
  WS_ASSIGN_OR_RETURN(c.groups, SymbolValue(symbols, "NG"));
  WS_ASSIGN_OR_RETURN(c.keep_groups, SymbolValue(symbols, "TG"));
  WS_ASSIGN_OR_RETURN(c.scale_milli, SymbolValue(symbols, "SCALE_MILLI"));
  if (t < 1 || c.groups < 1 || c.experts % c.groups != 0 || c.keep_groups < 1 ||
      c.keep_groups > c.groups || c.k < 1 || c.k > c.keep_groups * (c.experts / c.groups)) {
    return Status::Error("T = {}, E = {}, K = {}, NG = {}, TG = {}: not a valid routing shape", t,
                         c.experts, c.k, c.groups, c.keep_groups);
  }
  const std::vector<float> logits = TensorValues<float>(inputs.find("logits")->second);
  const std::vector<float> bias = TensorValues<float>(inputs.find("bias")->second);
  std::vector<int32_t> idx(static_cast<size_t>(t * c.k)), counts(static_cast<size_t>(c.experts));
  std::vector<float> w(static_cast<size_t>(t * c.k));
  TopkSigmoidGrouped(logits.data(), bias.data(), t, c, idx.data(), w.data(), counts.data());
  StoreTensorValues(idx, outputs.find("idx")->second);
  StoreTensorValues(w, outputs.find("w")->second);
  StoreTensorValues(counts, outputs.find("counts")->second);
  return Status::Ok();
}

}  // namespace ws::router

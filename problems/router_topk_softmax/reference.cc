#include "problems/router_topk_softmax/reference.h"

#include <cstring>
#include <limits>
#include <vector>

#include "problems/init.h"
#include "problems/reference_util.h"

namespace ws::router {

double Exp(double x) {
  if (x != x)
    return x;
  if (x > 709.782712893384)
    return std::numeric_limits<double>::infinity();
  if (x < -746.0)
    return 0.0;
  // x = n ln2 + r with |r| <= ln2 / 2 (a little more after rounding). kLn2Hi has 32 significant
  // bits, so n * kLn2Hi is exact for |n| < 2^21.
  constexpr double kInvLn2 = 1.4426950408889634;
  constexpr double kLn2Hi = 6.93147180369123816490e-01;
  constexpr double kLn2Lo = 1.90821492927058770002e-10;
  const double n = ws_rint(ws_dmul(x, kInvLn2));
  const double r = ws_dadd(ws_dadd(x, -ws_dmul(n, kLn2Hi)), -ws_dmul(n, kLn2Lo));
  // e^r = 1 + r (1 + r/2 (1 + r/3 (... (1 + r/13)))): truncation below 1e-17 for |r| < 0.35.
  double p = 1.0;
  for (int i = 13; i >= 1; --i) p = ws_dadd(1.0, ws_ddiv(ws_dmul(r, p), static_cast<double>(i)));
  // 2^n in two factors, so that n in [-1077, 1024] needs no special case.
  const int ni = static_cast<int>(n);
  const int n1 = ni / 2;
  return ws_dmul(ws_dmul(p, ws_pow2(n1)), ws_pow2(ni - n1));
}

double Sigmoid(double x) {
  if (x >= 0)
    return ws_ddiv(1.0, ws_dadd(1.0, Exp(-x)));
  const double e = Exp(x);
  return ws_ddiv(e, ws_dadd(1.0, e));
}

void TopkSoftmaxRow(const float* logits, int64_t e, int64_t k, SoftmaxWeights weights, int32_t* idx,
                    float* w) {
  float m = logits[0];
  for (int64_t i = 1; i < e; ++i) {
    if (logits[i] > m)
      m = logits[i];
  }
  // Selection on the logits: softmax is increasing, so this is the order of the probabilities,
  // and equal logits are the only ties. Scanning in id order with a strict > keeps the lower id.
  for (int64_t j = 0; j < k; ++j) {
    int64_t best = -1;
    for (int64_t i = 0; i < e; ++i) {
      bool taken = false;
      for (int64_t jj = 0; jj < j; ++jj) taken = taken || idx[jj] == i;
      if (taken)
        continue;
      if (best < 0 || logits[i] > logits[best])
        best = i;
    }
    idx[j] = static_cast<int32_t>(best);
  }
  const double dm = static_cast<double>(m);
  double sum = 0.0;
  if (weights == SoftmaxWeights::kRenormalize) {
    for (int64_t j = 0; j < k; ++j)
      sum = ws_dadd(sum, Exp(ws_dadd(static_cast<double>(logits[idx[j]]), -dm)));
  } else {
    for (int64_t i = 0; i < e; ++i)
      sum = ws_dadd(sum, Exp(ws_dadd(static_cast<double>(logits[i]), -dm)));
  }
  for (int64_t j = 0; j < k; ++j) {
    const double p = Exp(ws_dadd(static_cast<double>(logits[idx[j]]), -dm));
    w[j] = ws_d2f(ws_ddiv(p, sum));
  }
}

void TopkSoftmax(const float* logits, int64_t t, int64_t e, int64_t k, SoftmaxWeights weights,
                 int32_t* idx, float* w, int32_t* counts) {
  for (int64_t i = 0; i < e; ++i) counts[i] = 0;
  for (int64_t row = 0; row < t; ++row) {
    TopkSoftmaxRow(logits + row * e, e, k, weights, idx + row * k, w + row * k);
    for (int64_t j = 0; j < k; ++j) ++counts[idx[row * k + j]];
  }
}

Status RouterTopkSoftmaxReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                  const std::map<std::string, std::string>& params,
                                  const TensorMap& inputs, TensorMap& outputs) {
  WS_ASSIGN_OR_RETURN(const int64_t t, SymbolValue(symbols, "T"));
  WS_ASSIGN_OR_RETURN(const int64_t e, SymbolValue(symbols, "E"));
  WS_ASSIGN_OR_RETURN(const int64_t k, SymbolValue(symbols, "K"));
  if (t < 1 || e < 1 || k < 1 || k > e)
    return Status::Error("T = {}, E = {}, K = {}: need T, E >= 1 and 1 <= K <= E", t, e, k);
  const std::string mode = ParamValue(spec, params, "weights");
  SoftmaxWeights weights;
  if (mode == "renormalize") {
    weights = SoftmaxWeights::kRenormalize;
  } else if (mode == "softmax") {
    weights = SoftmaxWeights::kSoftmax;
  } else {
    return Status::Error("unknown weights '{}'", mode);
  }
  const std::vector<float> logits = TensorValues<float>(inputs.find("logits")->second);
  std::vector<int32_t> idx(static_cast<size_t>(t * k)), counts(static_cast<size_t>(e));
  std::vector<float> w(static_cast<size_t>(t * k));
  TopkSoftmax(logits.data(), t, e, k, weights, idx.data(), w.data(), counts.data());
  StoreTensorValues(idx, outputs.find("idx")->second);
  StoreTensorValues(w, outputs.find("w")->second);
  StoreTensorValues(counts, outputs.find("counts")->second);
  return Status::Ok();
}

}  // namespace ws::router

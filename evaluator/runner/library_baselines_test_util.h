// For the library-baseline tests: the runner job of one case, inputs A [M,K] and B [N,K] (fp8:
// with row and column scales far from 1) and output D, dumped under DIR with its inputs.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace ws::runner {

inline nlohmann::json GemmJob(const std::string& op, int64_t m, int64_t n, int64_t k,
                              const std::string& dir) {
  using json = nlohmann::json;
  const bool fp8 = op == "fp8_rowwise_gemm";
  const std::string in = fp8 ? "fp8_e4m3" : "bf16";
  json tensors = json::array(
      {{{"name", "A"}, {"dtype", in}, {"numel", m * k}, {"role", "input"},
        {"init", {{"dist", "normal"}, {"mean", 0}, {"stddev", 1}}}},
       {{"name", "B"}, {"dtype", in}, {"numel", n * k}, {"role", "input"},
        {"init", {{"dist", "normal"}, {"mean", 0}, {"stddev", 1}}}}});
  json names = json::array({"A", "B"});
  if (fp8) {
    // Scales far from 1 and different per row and column, so a swap shows.
    tensors.push_back({{"name", "a_scale"}, {"dtype", "f32"}, {"numel", m}, {"role", "input"},
                       {"init", {{"dist", "uniform"}, {"lo", 0.25}, {"hi", 4}}}});
    tensors.push_back({{"name", "b_scale"}, {"dtype", "f32"}, {"numel", n}, {"role", "input"},
                       {"init", {{"dist", "uniform"}, {"lo", 0.001}, {"hi", 0.01}}}});
    names.push_back("a_scale");
    names.push_back("b_scale");
  }
  tensors.push_back({{"name", "D"}, {"dtype", "bf16"}, {"numel", m * n}, {"role", "output"}});
  names.push_back("D");
  json c = {{"id", op},
            {"launches", json::array()},
            {"library", {{"op", op}, {"m", m}, {"n", n}, {"k", k}, {"tensors", names}}},
            {"workspace", {{"bytes", 32 << 20}, {"zero", false}}},
            {"tensors", tensors},
            {"input_seeds", {12345, 678}},
            {"poison", 0x7F},
            {"timing", {{"warmup", 2}, {"iterations", 6}, {"l2_flush_bytes", 1 << 20},
                        {"audit_iteration", 3}, {"graph", true}}},
            {"dump", dir + "/" + op},
            {"dump_inputs", true}};
  return {{"cubin", ""}, {"result", dir + "/result.json"}, {"cases", {c}}};
}

}  // namespace ws::runner

// CPU reference for bf16_grouped_gemm, and the grouped-GEMM core the other grouped problems share:
// rows (tokens) are split into E consecutive groups by END offsets; group g uses expert g.
//   fwd:   out[r,n]   = sum_k a[r,k] * b[g(r),n,k]         a [M,K], b [E,N,K] -> out [M,N]
//   dgrad: out[r,k]   = sum_n a[r,n] * b[g(r),n,k]         a [M,N], b [E,N,K] -> out [M,K]
//   wgrad: out[g,n,k] = sum_{r in g} a[r,n] * b[r,k]       a [M,N], b [M,K]   -> out [E,N,K]
// Sums exact in double; an empty group's wgrad block is 0.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "problems/problems.h"

namespace ws::gemm {

enum class GroupedForm { kFwd, kDgrad, kWgrad };

/// On double operands, out in double. offs: E END offsets, non-decreasing, last == m.
Status GroupedGemmDouble(GroupedForm form, const double* a, const double* b,
                         const std::vector<int32_t>& offs, int64_t m, int64_t n, int64_t k,
                         double* out);

/// bf16 bit patterns in and out.
Status Bf16GroupedGemm(GroupedForm form, const uint16_t* a, const uint16_t* b,
                       const std::vector<int32_t>& offs, int64_t m, int64_t n, int64_t k,
                       uint16_t* out);

/// The registered reference ("bf16_grouped_gemm"): param form; inputs a, b, offs; output out.
Status Bf16GroupedGemmReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                const std::map<std::string, std::string>& params,
                                const TensorMap& inputs, TensorMap& outputs);

}  // namespace ws::gemm

// Shared by the GEMM problems' CPU references (bf16_gemm, fp8_rowwise_gemm, the grouped GEMMs,
// moe_decode_fused): operands decoded exactly to double, products summed in double, one rounding
// at the output. Raw tensors are little-endian bytes (HostTensor).
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "problems/problems.h"

namespace ws::gemm {

/// Exact values of the storage formats. NaN encodings give NaN (E4M3 S.1111.111, E8M0 0xFF).
double Bf16ToDouble(uint16_t bits);
double E4M3ToDouble(uint8_t bits);
double E8M0ToDouble(uint8_t bits);  // 2^(s-127); 0 is 2^-127

/// double -> bf16 bits, rounded once to nearest even (bf16 subnormals kept, overflow to +-Inf),
/// NaN -> 0x7FC0.
uint16_t DoubleToBf16(double v);

/// d[m,n] = sum_k a[m*lda + k] * b[n*ldb + k] in double (row-major, K contiguous in both).
void GemmABt(const double* a, int64_t lda, const double* b, int64_t ldb, int64_t m, int64_t n,
             int64_t k, double* d);

/// Little-endian element access to raw tensor bytes.
uint16_t LoadU16(const std::vector<uint8_t>& t, int64_t i);
float LoadF32(const std::vector<uint8_t>& t, int64_t i);
int32_t LoadI32(const std::vector<uint8_t>& t, int64_t i);
void StoreU16(std::vector<uint8_t>& t, int64_t i, uint16_t v);
void StoreF32(std::vector<uint8_t>& t, int64_t i, float v);

/// Group bounds from cumulative END offsets (torch._grouped_mm `offs`): group g holds rows
/// [start[g], start[g+1]). Errors unless offsets are non-decreasing, >= 0, multiples of `align`,
/// and the last one equals `total`.
Result<std::vector<int64_t>> GroupStarts(const std::vector<int32_t>& offs, int64_t total,
                                         int64_t align);

/// The named symbol of a shape, or an error naming it.
Result<int64_t> Symbol(const SymbolTable& symbols, std::string_view name);

/// A tensor of `inputs` / `outputs` by name (RunCpuReference has checked they exist).
const HostTensor& In(const TensorMap& inputs, std::string_view name);
HostTensor& Out(TensorMap& outputs, std::string_view name);

}  // namespace ws::gemm

// TMA tensor maps: a plan's resolved description of one map, its checks, and the exact arguments
// the runner passes to cuTensorMapEncodeTiled. Host-only and header-only: the evaluator checks a
// plan with the same function the trusted runner checks its job with, and neither links CUDA for it.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "problems/init.h"

namespace ws::runner {

inline constexpr int kMaxTensorMapRank = 5;
inline constexpr int64_t kMaxTensorMapBox = 256;
inline constexpr int64_t kMaxTensorMapElementStride = 8;

/// One map with every expression evaluated; innermost (contiguous) dimension first.
struct TensorMapSpec {
  int rank = 0;
  int64_t dims[kMaxTensorMapRank] = {};
  int64_t box[kMaxTensorMapRank] = {};
  int64_t element_strides[kMaxTensorMapRank] = {1, 1, 1, 1, 1};
  int swizzle = 0;       // bytes: 0 (none), 32, 64, 128
  int l2_promotion = 0;  // bytes: 0, 64, 128, 256
  bool oob_nan = false;  // out-of-bounds elements read as NaN instead of zero
};

/// The arguments of cuTensorMapEncodeTiled (less the map and the address), as the driver's enum
/// values (CUtensorMapDataType, ...Interleave, ...Swizzle, ...L2promotion, ...FloatOOBfill;
/// run.cc static_asserts the values). `empty`: the tensor has no elements, so nothing is encoded
/// and the kernel gets 128 zero bytes.
struct TensorMapEncoding {
  bool empty = false;
  int data_type = 0;
  uint32_t rank = 0;
  uint64_t global_dim[kMaxTensorMapRank] = {};
  uint64_t global_strides[kMaxTensorMapRank - 1] = {};  // bytes, of dims 1..rank-1
  uint32_t box_dim[kMaxTensorMapRank] = {};
  uint32_t element_strides[kMaxTensorMapRank] = {};
  int interleave = 0;
  int swizzle = 0;
  int l2_promotion = 0;
  int oob_fill = 0;
};

// CUtensorMapDataType values (cuda.h), for the dtypes a problem tensor can have.
inline constexpr int kTmaUint8 = 0, kTmaInt32 = 3, kTmaInt64 = 5, kTmaFloat16 = 6,
                     kTmaFloat32 = 7, kTmaBfloat16 = 9;

/// Checks a map of a contiguous row-major tensor of `numel` elements of `dtype` (kWsDtype*) and
/// computes the encoding. Errors name the field ("box[0]: ...") without the map's name.
inline Result<TensorMapEncoding> ComputeTensorMapEncoding(int dtype, int64_t numel,
                                                          const TensorMapSpec& m) {
  TensorMapEncoding e;
  switch (dtype) {
    case kWsDtypeBF16: e.data_type = kTmaBfloat16; break;
    case kWsDtypeF16: e.data_type = kTmaFloat16; break;
    case kWsDtypeF32: e.data_type = kTmaFloat32; break;
    case kWsDtypeI32: e.data_type = kTmaInt32; break;
    case kWsDtypeI64: e.data_type = kTmaInt64; break;
    case kWsDtypeFP8E4M3: case kWsDtypeFP8E5M2: case kWsDtypeE8M0: case kWsDtypeU8:
      e.data_type = kTmaUint8;
      break;
    default: return Status::Error("tensor: dtype code {} has no TMA data type", dtype);
  }
  const int64_t esize = ws_dtype_size(dtype);
  if (m.rank < 1 || m.rank > kMaxTensorMapRank) {
    return Status::Error("dims: {} dimensions; a map has 1 to {}", m.rank, kMaxTensorMapRank);
  }
  bool zero = false;
  for (int d = 0; d < m.rank; ++d) {
    if (m.dims[d] < 0) return Status::Error("dims[{}] = {} is negative", d, m.dims[d]);
    if (m.dims[d] > (int64_t{1} << 32)) {
      return Status::Error("dims[{}] = {} is above 2^32", d, m.dims[d]);
    }
    zero = zero || m.dims[d] == 0;
  }
  int64_t product = zero ? 0 : 1;
  for (int d = 0; d < m.rank && !zero; ++d) {
    if (__builtin_mul_overflow(product, m.dims[d], &product)) {
      return Status::Error("dims: the product overflows int64");
    }
  }
  if (product != numel) {
    return Status::Error("dims: the product is {}, the tensor has {} elements", product, numel);
  }
  for (int d = 0; d < m.rank; ++d) {
    if (m.box[d] < 1 || m.box[d] > kMaxTensorMapBox) {
      return Status::Error("box[{}] = {} is outside [1, {}]", d, m.box[d], kMaxTensorMapBox);
    }
    if (m.element_strides[d] < 1 || m.element_strides[d] > kMaxTensorMapElementStride) {
      return Status::Error("element_strides[{}] = {} is outside [1, {}]", d, m.element_strides[d],
                           kMaxTensorMapElementStride);
    }
  }
  const int64_t inner_bytes = m.box[0] * esize;
  if (inner_bytes % 16 != 0) {
    return Status::Error("box[0] = {}: {} bytes, not a multiple of 16", m.box[0], inner_bytes);
  }
  switch (m.swizzle) {
    case 0: e.swizzle = 0; break;
    case 32: e.swizzle = 1; break;
    case 64: e.swizzle = 2; break;
    case 128: e.swizzle = 3; break;
    default: return Status::Error("swizzle: {} is not one of 0, 32, 64, 128", m.swizzle);
  }
  if (m.swizzle != 0 && inner_bytes > m.swizzle) {
    return Status::Error("box[0] = {}: {} bytes, more than the {}-byte swizzle span", m.box[0],
                         inner_bytes, m.swizzle);
  }
  switch (m.l2_promotion) {
    case 0: e.l2_promotion = 0; break;
    case 64: e.l2_promotion = 1; break;
    case 128: e.l2_promotion = 2; break;
    case 256: e.l2_promotion = 3; break;
    default:
      return Status::Error("l2_promotion: {} is not one of 0, 64, 128, 256", m.l2_promotion);
  }
  if (m.oob_nan && e.data_type != kTmaBfloat16 && e.data_type != kTmaFloat16 &&
      e.data_type != kTmaFloat32) {
    return Status::Error("oob_fill: \"nan\" needs a bf16, f16 or f32 tensor");
  }
  e.oob_fill = m.oob_nan ? 1 : 0;
  e.interleave = 0;
  e.rank = static_cast<uint32_t>(m.rank);
  int64_t stride = esize;
  for (int d = 0; d < m.rank; ++d) {
    e.global_dim[d] = static_cast<uint64_t>(m.dims[d]);
    e.box_dim[d] = static_cast<uint32_t>(m.box[d]);
    e.element_strides[d] = static_cast<uint32_t>(m.element_strides[d]);
    if (d == 0) {
      stride *= m.dims[0];
      continue;
    }
    // Strides are only constrained where there is data to address.
    if (!zero && (stride % 16 != 0 || stride >= (int64_t{1} << 40))) {
      return Status::Error(
          "dims: the stride of dimension {} is {} bytes; TMA needs a multiple of 16 below 2^40 "
          "(pad the inner dimensions)",
          d, stride);
    }
    e.global_strides[d - 1] = static_cast<uint64_t>(stride);
    if (!zero) stride *= m.dims[d];
  }
  e.empty = zero;
  return e;
}

}  // namespace ws::runner

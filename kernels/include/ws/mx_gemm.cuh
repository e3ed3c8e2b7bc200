// warpsmith device library: MXFP8 operand arithmetic for GEMMs (OCP MX v1.0): E8M0 scales as fp32
// factors and the exact E4M3 -> BF16 dequantization with the block scale folded in.
// E4M3 is OCP FN (max 448, S.1111.111 NaN, subnormals m * 2^-9); an E8M0 byte S is 2^(S-127),
// 0xFF is NaN. The problems' references are the judge; they never include this file.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace ws {
namespace mx {

/// 2^(S-127) as fp32, exactly (S = 0 is the subnormal 2^-127), and NaN for S = 0xFF so that the
/// block's products become NaN whatever the data (0 * NaN = NaN).
__device__ __forceinline__ float e8m0_to_f32(unsigned s) {
  return __uint_as_float(s == 0xFFu ? 0x7FC00000u : s != 0 ? s << 23 : 0x00400000u);
}

/// Two E4M3 bytes (lo in the low byte) -> two exact fp16 (lo in the low half); NaN stays NaN and
/// E4M3 subnormals (>= 2^-9) are fp16 normals.
__device__ __forceinline__ unsigned cvt_e4m3x2_f16x2(unsigned short pair) {
  unsigned d;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(d) : "h"(pair));
  return d;
}

/// Two E4M3 bytes times scale, as a bf16 pair (lo in the low half). Exact (the products are the MX
/// products) while |e4m3 * scale| is zero or within bf16's normal range, i.e. for block scales
/// from about 2^-117 to 2^119; a NaN byte or a NaN scale gives NaN.
__device__ __forceinline__ unsigned dequant_bf16x2(unsigned short pair, float scale) {
  const unsigned h = cvt_e4m3x2_f16x2(pair);
  const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&h));
  const __nv_bfloat162 b = __floats2bfloat162_rn(f.x * scale, f.y * scale);
  return *reinterpret_cast<const unsigned*>(&b);
}

/// 16 E4M3 bytes (element i in byte i) times scale -> 16 bf16 (element i in half i of out).
__device__ __forceinline__ void dequant16_bf16(uint4 raw, float scale, uint4 (&out)[2]) {
  const unsigned w[4] = {raw.x, raw.y, raw.z, raw.w};
  unsigned o[8];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    o[2 * i] = dequant_bf16x2(static_cast<unsigned short>(w[i] & 0xFFFFu), scale);
    o[2 * i + 1] = dequant_bf16x2(static_cast<unsigned short>(w[i] >> 16), scale);
  }
  out[0] = make_uint4(o[0], o[1], o[2], o[3]);
  out[1] = make_uint4(o[4], o[5], o[6], o[7]);
}

}  // namespace mx
}  // namespace ws

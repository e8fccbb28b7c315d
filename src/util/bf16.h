// bfloat16 <-> fp32, scalar: the top 16 bits of an fp32 (same exponent range, 8 significant bits). The one
// definition of the rounding every bf16 value in Frontier goes through: the GEMM's packing (kernels/gemm.h),
// the bf16 gradient exchange (dist/), safetensors export (export/) and the tests.
//
//   uint16_t h = to_bf16(x);      // round to nearest even, as vcvtneps2bf16 and torch's .to(bfloat16) do
//   float y = from_bf16(h);       // exact: bf16 values are fp32 values
//   float r = round_bf16(x);      // both: x as bf16 would hold it (relative error <= 2^-9)
#pragma once

#include <cstdint>

namespace frontier {

// fp32 -> bf16, round to nearest even. NaN stays NaN: the quiet bit is set, so dropping the low bits of its
// payload cannot turn it into inf.
inline uint16_t to_bf16(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float from_bf16(uint16_t h) {
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}
inline float round_bf16(float f) { return from_bf16(to_bf16(f)); }

}  // namespace frontier

// Packing of GEMM operands into the microkernel's panel layout (gemm.h), the portable algorithm written once and
// compiled into each tier's folder with that tier's flags (BLIS's packm kernels per micro-architecture): the same
// loops, vectorised by the compiler for AVX2 or AVX-512. Everything here has internal linkage (an anonymous
// namespace), so each tier's copy stays its own: no instruction of one tier can reach another's callers through
// the linker's merging of inline functions (tests/isa_test.cpp checks the binary for that).
//
//   template instantiations: pack_a<float> / pack_b<float> (fp32 panels), pack_a<uint16_t> / pack_b<uint16_t>
//   (bf16 pairs along k, rounded to nearest even). Signatures are GemmPackA / GemmPackB (gemm.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace frontier {
namespace {

// fp32 -> bf16 bits, round to nearest even, NaN kept quiet: the same function as to_bf16 (gemm.h), written
// branch-free so the packing loops vectorise, and kept as this internal-linkage copy on purpose: an inline function
// with external linkage used here would be compiled with each tier's flags and merged by the linker (see the top).
inline uint16_t pack_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t nan = (u >> 16) | 0x40u;
  return static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

template <typename T>
inline T pack_convert(float x) {
  if constexpr (sizeof(T) == 4) return x;
  else return pack_to_bf16(x);
}

// Elements per k-group: 1 for fp32, 2 (a bf16 pair) for bf16.
template <typename T>
constexpr int kPackK = 4 / static_cast<int>(sizeof(T));

// Rows [i0, i0+mc) x depth [p0, p0+kc) of op(A) into micro-panels of MR rows; element (k, i) of a panel at
// (k / kp) * kp * MR + i * kp + k % kp; zero-padded rows and odd k.
template <typename T>
void pack_a(int MR, bool trans, const float* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
            void* out_v) {
  constexpr int kp = kPackK<T>;
  T* out = static_cast<T*>(out_v);
  const int64_t kcp = (kc + kp - 1) / kp * kp;
  for (int64_t ip = 0; ip < mc; ip += MR) {
    const int64_t mr = std::min<int64_t>(MR, mc - ip);
    T* dst = out + ip * kcp;
    if (!trans) {
      for (int64_t i = 0; i < mr; i++) {
        const float* src = A + (i0 + ip + i) * lda + p0;
        for (int64_t k = 0; k < kc; k++) dst[(k / kp) * kp * MR + i * kp + k % kp] = pack_convert<T>(src[k]);
      }
    } else {
      for (int64_t k = 0; k < kc; k++) {
        const float* src = A + (p0 + k) * lda + i0 + ip;
        T* d = dst + (k / kp) * kp * MR + k % kp;
        for (int64_t i = 0; i < mr; i++) d[i * kp] = pack_convert<T>(src[i]);
      }
    }
    for (int64_t k = kc; k < kcp; k++)
      for (int64_t i = 0; i < mr; i++) dst[(k / kp) * kp * MR + i * kp + k % kp] = T(0);
    for (int64_t i = mr; i < MR; i++)
      for (int64_t k = 0; k < kcp; k++) dst[(k / kp) * kp * MR + i * kp + k % kp] = T(0);
  }
}

// Depth [p0, p0+kc) x columns [j0, j0+nr) of op(B) into one micro-panel of NR columns, zero-padded.
template <typename T>
void pack_b(int NR, bool trans, const float* B, int64_t ldb, int64_t j0, int64_t nr, int64_t p0, int64_t kc,
            void* dst_v) {
  constexpr int kp = kPackK<T>;
  T* dst = static_cast<T*>(dst_v);
  const int64_t kcp = (kc + kp - 1) / kp * kp;
  if (!trans) {
    for (int64_t k = 0; k < kc; k++) {
      const float* src = B + (p0 + k) * ldb + j0;
      T* d = dst + (k / kp) * kp * NR + k % kp;
      for (int64_t j = 0; j < nr; j++) d[j * kp] = pack_convert<T>(src[j]);
    }
  } else {
    for (int64_t j = 0; j < nr; j++) {
      const float* src = B + (j0 + j) * ldb + p0;
      for (int64_t k = 0; k < kc; k++) dst[(k / kp) * kp * NR + j * kp + k % kp] = pack_convert<T>(src[k]);
    }
  }
  for (int64_t k = kc; k < kcp; k++)
    for (int64_t j = 0; j < nr; j++) dst[(k / kp) * kp * NR + j * kp + k % kp] = T(0);
  for (int64_t k = 0; k < kcp; k++)
    for (int64_t j = nr; j < NR; j++) dst[(k / kp) * kp * NR + j * kp + k % kp] = T(0);
}

}  // namespace
}  // namespace frontier

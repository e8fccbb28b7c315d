// AVX512_BF16 microkernel, 12 x 32: vdpbf16ps multiplies pairs along k (acc += a[2p+1] b[2p+1] + a[2p] b[2p],
// exact bf16 products, fp32 sums). A pair of A (one 32-bit word) is broadcast to 16 lanes; a row pair of B is 2
// zmm (32 columns x 2 k). Per pair: 2 loads + 12 broadcasts + 24 vdpbf16ps = 64 FLOPs per instruction, twice an
// fp32 FMA's, with the same 24 accumulators as the fp32 12 x 32 kernel.
// Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512bf16 only; called only where the CPU has them.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/gemm_kernels.h"
#include "kernels/gemm_pack.h"

namespace frontier::tier_avx512bf16 {

namespace {

constexpr int kMR = 12, kNR = 32;

void ukernel_avx512bf16_12x32(int64_t kc, const void* ap, const void* bp, float* c, int64_t ldc, float alpha,
                              float beta) {
  const int32_t* a = static_cast<const int32_t*>(ap);  // one int32 = a (k, k+1) pair of bf16
  const __m512i* b = static_cast<const __m512i*>(bp);
  __m512 acc[kMR][2];
  for (int i = 0; i < kMR; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  const int64_t pairs = (kc + 1) / 2;
  for (int64_t p = 0; p < pairs; p++) {
    const __m512bh b0 = (__m512bh)_mm512_load_si512(b), b1 = (__m512bh)_mm512_load_si512(b + 1);
#pragma GCC unroll 12
    for (int i = 0; i < kMR; i++) {
      const __m512bh ai = (__m512bh)_mm512_set1_epi32(a[i]);
      acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);
      acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
    }
    a += kMR;
    b += 2;
  }
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 12
  for (int i = 0; i < kMR; i++)
    for (int h = 0; h < 2; h++) {
      float* q = c + i * ldc + 16 * h;
      if (beta == 0.f) _mm512_storeu_ps(q, _mm512_mul_ps(va, acc[i][h]));
      else _mm512_storeu_ps(q, _mm512_fmadd_ps(va, acc[i][h], _mm512_mul_ps(vb, _mm512_loadu_ps(q))));
    }
}

// Packing with the conversion unit: vcvtne2ps2bf16 rounds 32 floats to bf16 (nearest even, as pack_to_bf16; it
// reads fp32 denormals as zero, which vdpbf16ps would do to them anyway) in one instruction. Full panels with an
// even depth take these paths; edges go to the portable loops (gemm_pack.h).

// 32 consecutive floats along k -> 16 pair words (k, k+1), in k order.
inline __m512i pairs_from_run(const float* src) {
  return (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + 16), _mm512_loadu_ps(src));
}
// Two rows k, k+1 of 16 floats along i -> 16 pair words (row k in the low half of each word).
inline __m512i pairs_from_rows(__m512 r0, __m512 r1) {
  const __m512i e = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(r0));
  const __m512i o = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(r1));
  return _mm512_or_si512(e, _mm512_slli_epi32(o, 16));
}
// A run along k of length kc (even) into pair words dst[q * stride], q = 0 .. kc/2.
inline void run_to_strided_pairs(const float* src, int64_t kc, uint32_t* dst, int64_t stride) {
  int64_t k = 0;
  alignas(64) uint32_t w[16];
  for (; k + 32 <= kc; k += 32) {
    _mm512_store_si512(w, pairs_from_run(src + k));
#pragma GCC unroll 16
    for (int q = 0; q < 16; q++) dst[(k / 2 + q) * stride] = w[q];
  }
  for (; k < kc; k += 2)
    dst[(k / 2) * stride] = pack_to_bf16(src[k]) | (static_cast<uint32_t>(pack_to_bf16(src[k + 1])) << 16);
}

void pack_a_bf16(int MR, bool trans, const float* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
                 void* out) {
  const int64_t pairs = (kc + 1) / 2;
  for (int64_t ip = 0; ip < mc; ip += MR) {
    const int64_t mr = std::min<int64_t>(MR, mc - ip);
    uint32_t* dst = static_cast<uint32_t*>(out) + ip * pairs;  // panel ip / MR: pairs x MR words
    if (MR != kMR || mr < MR || (kc & 1)) {
      pack_a<uint16_t>(MR, trans, A, lda, i0 + ip, mr, p0, kc, dst);
      continue;
    }
    if (!trans) {
      for (int i = 0; i < kMR; i++) run_to_strided_pairs(A + (i0 + ip + i) * lda + p0, kc, dst + i, kMR);
    } else {
      const __mmask16 m = (1u << kMR) - 1;
      for (int64_t p = 0; p < pairs; p++) {
        const float* r0 = A + (p0 + 2 * p) * lda + i0 + ip;
        _mm512_mask_storeu_epi32(dst + p * kMR, m,
                                 pairs_from_rows(_mm512_maskz_loadu_ps(m, r0), _mm512_maskz_loadu_ps(m, r0 + lda)));
      }
    }
  }
}

void pack_b_bf16(int NR, bool trans, const float* B, int64_t ldb, int64_t j0, int64_t nr, int64_t p0, int64_t kc,
                 void* out) {
  if (NR != kNR || nr < NR || (kc & 1)) return pack_b<uint16_t>(NR, trans, B, ldb, j0, nr, p0, kc, out);
  uint32_t* dst = static_cast<uint32_t*>(out);
  if (!trans) {
    for (int64_t p = 0; p < kc / 2; p++) {
      const float* r0 = B + (p0 + 2 * p) * ldb + j0;
      _mm512_storeu_si512(dst + p * kNR, pairs_from_rows(_mm512_loadu_ps(r0), _mm512_loadu_ps(r0 + ldb)));
      _mm512_storeu_si512(dst + p * kNR + 16,
                          pairs_from_rows(_mm512_loadu_ps(r0 + 16), _mm512_loadu_ps(r0 + ldb + 16)));
    }
  } else {
    for (int j = 0; j < kNR; j++) run_to_strided_pairs(B + (j0 + j) * ldb + p0, kc, dst + j, kNR);
  }
}

}  // namespace

}  // namespace frontier::tier_avx512bf16

namespace frontier {

const GemmKernel& gemm_kernel_avx512bf16_bf16() {
  // KC x NR B micro-panel: 768 x 32 x 2 B = 48 KiB (L1 + L2); MC x KC A block 96 x 768 x 2 B = 144 KiB (L2).
  // KC = 768 over 512: fewer depth blocks (C reloads, A re-packs) on the K >= 2048 products, +5-15% on those in
  // alternating runs on the Zen 4 here (KC 256-1024, MC 48-192 tried); K = 512 products are one block either way.
  static const GemmKernel k{"avx512bf16 12x32", Precision::kBf16,
                                 tier_avx512bf16::ukernel_avx512bf16_12x32, tier_avx512bf16::kMR, tier_avx512bf16::kNR, 768, 96, 2048, tier_avx512bf16::pack_a_bf16,
                                 tier_avx512bf16::pack_b_bf16};
  return k;
}

}  // namespace frontier

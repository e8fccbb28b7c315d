// The portable microkernels (BLIS ref_kernels): plain loops over a 4 x 8 tile, the contract of gemm.h. Every tier
// is tested against these; they also run bf16 GEMMs on CPUs without native bf16 (slowly, with the same numbers).
#include <cmath>
#include <cstring>

#include "kernels/gemm_kernels.h"
#include "kernels/gemm_pack.h"

namespace frontier::tier_ref {

namespace {

constexpr int kMR = 4, kNR = 8;

void store_tile(const float (&acc)[kMR][kNR], float* c, int64_t ldc, float alpha, float beta) {
  for (int i = 0; i < kMR; i++)
    for (int j = 0; j < kNR; j++) {
      float* cij = c + i * ldc + j;
      *cij = beta == 0.f ? alpha * acc[i][j] : std::fma(alpha, acc[i][j], beta * *cij);
    }
}

void ukernel_ref_4x8(int64_t kc, const void* ap, const void* bp, float* c, int64_t ldc, float alpha, float beta) {
  const float* a = static_cast<const float*>(ap);
  const float* b = static_cast<const float*>(bp);
  float acc[kMR][kNR] = {};
  for (int64_t k = 0; k < kc; k++)
    for (int i = 0; i < kMR; i++)
      for (int j = 0; j < kNR; j++) acc[i][j] = std::fma(a[k * kMR + i], b[k * kNR + j], acc[i][j]);
  store_tile(acc, c, ldc, alpha, beta);
}

// bf16 -> fp32 with denormals read as zero (vdpbf16ps's DAZ).
float bf16_daz(uint16_t h) {
  if ((h & 0x7f80u) == 0) h &= 0x8000u;
  return from_bf16(h);
}

// vdpbf16ps's arithmetic, one lane: acc += a[2p+1] * b[2p+1], then acc += a[2p] * b[2p], each product exact in fp32
// (8-bit significands) and each sum rounded to nearest even.
void ukernel_ref_bf16_4x8(int64_t kc, const void* ap, const void* bp, float* c, int64_t ldc, float alpha,
                          float beta) {
  const uint16_t* a = static_cast<const uint16_t*>(ap);
  const uint16_t* b = static_cast<const uint16_t*>(bp);
  float acc[kMR][kNR] = {};
  for (int64_t p = 0; p < (kc + 1) / 2; p++)
    for (int i = 0; i < kMR; i++)
      for (int j = 0; j < kNR; j++) {
        const uint16_t* ai = a + p * 2 * kMR + 2 * i;
        const uint16_t* bj = b + p * 2 * kNR + 2 * j;
        acc[i][j] = std::fma(bf16_daz(ai[1]), bf16_daz(bj[1]), acc[i][j]);
        acc[i][j] = std::fma(bf16_daz(ai[0]), bf16_daz(bj[0]), acc[i][j]);
      }
  store_tile(acc, c, ldc, alpha, beta);
}

}  // namespace

}  // namespace frontier::tier_ref

namespace frontier {

const GemmKernel& gemm_kernel_ref_fp32() {
  static const GemmKernel k{"ref 4x8", Precision::kFp32,
                                 tier_ref::ukernel_ref_4x8, tier_ref::kMR, tier_ref::kNR, 256, 128, 2048, pack_a<float>, pack_b<float>};
  return k;
}

const GemmKernel& gemm_kernel_ref_bf16() {
  static const GemmKernel k{"ref-bf16 4x8", Precision::kBf16,
                                 tier_ref::ukernel_ref_bf16_4x8, tier_ref::kMR, tier_ref::kNR, 256, 128, 2048, pack_a<uint16_t>, pack_b<uint16_t>};
  return k;
}

}  // namespace frontier

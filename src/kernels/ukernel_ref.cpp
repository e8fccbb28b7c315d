// The portable microkernel (BLIS ref_kernels): plain loops over a 4 x 8 tile, the contract of gemm.h.
#include <cmath>

#include "kernels/gemm.h"

namespace frontier {

namespace {

constexpr int kMR = 4, kNR = 8;

void ukernel_ref_4x8(int64_t kc, const float* a, const float* b, float* c, int64_t ldc, float alpha, float beta) {
  float acc[kMR][kNR] = {};
  for (int64_t k = 0; k < kc; k++)
    for (int i = 0; i < kMR; i++)
      for (int j = 0; j < kNR; j++) acc[i][j] = std::fma(a[k * kMR + i], b[k * kNR + j], acc[i][j]);
  for (int i = 0; i < kMR; i++)
    for (int j = 0; j < kNR; j++) {
      float* cij = c + i * ldc + j;
      *cij = beta == 0.f ? alpha * acc[i][j] : std::fma(alpha, acc[i][j], beta * *cij);
    }
}

}  // namespace

const GemmBlocking& gemm_blocking_ref() {
  static const GemmBlocking bs{"ref 4x8", ukernel_ref_4x8, kMR, kNR, 256, 128, 2048};
  return bs;
}

}  // namespace frontier

// The AVX2 tier's fp32 packing (pack_avx2.cpp): GemmPackA / GemmPackB (gemm.h) for the 6 x 16 microkernel, the
// portable gemm_pack.h loops for edge panels and any other MR / NR.
#pragma once

#include <cstdint>

namespace frontier::tier_avx2 {

void pack_a_avx2(int MR, bool trans, const float* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
                 void* out);
void pack_b_avx2(int NR, bool trans, const float* B, int64_t ldb, int64_t j0, int64_t nr, int64_t p0, int64_t kc,
                 void* dst);

}  // namespace frontier::tier_avx2

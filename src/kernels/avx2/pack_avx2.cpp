// AVX2 packing of fp32 operands into the 6 x 16 microkernel's panels (BLIS's packm kernels per micro-architecture:
// the portable loops in gemm_pack.h are the reference and serve every edge panel). The portable loops copy one
// element at a time, strided on one side, and re-read A^T once per 6-row panel. Measured on the Zen 3 here (one
// thread, operands in L2, best of 200, ns per element, portable -> these): A rows 0.59 -> 0.14, A^T 1.0 -> 0.16-0.27,
// B^T 0.68-1.38 -> 0.15-0.34, B rows 0.37-0.40 -> 0.19-0.29; attention's fwd+bwd at T 512 (1 thread, best of 8
// alternating) 17-18% faster, its packing 25% -> 13% of perf's samples.
//   A, not transposed (x, dO, P rows): 6 rows x 8 depths loaded, transposed in registers (8 x 8 with two zero
//     rows), each depth's 6 values stored contiguously.
//   A transposed (g^T, P^T, dS^T): each depth is a contiguous row of A; taken row by row over all panels, so a row
//     is read once (the portable loop re-read every row per panel), 6 values per panel per depth.
//   B, transposed (W^T, K^T, V^T): 16 rows of 8 depths loaded, two 8 x 8 transposes, 16 values stored per depth.
//   B, not transposed: 16 contiguous values per depth, two loads and two stores.
// Compiled with -mavx2 -mfma only (CMakeLists.txt), called only where the CPU has them.
#include "kernels/avx2/pack_avx2.h"

#include <immintrin.h>

#include <algorithm>

#include "kernels/gemm_pack.h"

namespace frontier::tier_avx2 {

namespace {

// r[0..7] <- its transpose (r[i][j] -> r[j][i]).
inline void transpose8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; i++) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

// 6 floats: 4 + 2, never touching the 2 after them.
inline void store6(float* d, __m256 v) {
  _mm_storeu_ps(d, _mm256_castps256_ps128(v));
  _mm_storel_pi(reinterpret_cast<__m64*>(d + 4), _mm256_extractf128_ps(v, 1));
}

// One full panel of 6 rows of A (row stride lda, from column p0), depth kc, into d (element (k, i) at k * 6 + i).
void pack_a_rows6(const float* A, int64_t lda, int64_t kc, float* d) {
  const float* s[6];
  for (int i = 0; i < 6; i++) s[i] = A + i * lda;
  int64_t k = 0;
  for (; k + 8 <= kc; k += 8) {
    __m256 r[8];
    for (int i = 0; i < 6; i++) r[i] = _mm256_loadu_ps(s[i] + k);
    r[6] = r[7] = _mm256_setzero_ps();
    transpose8(r);
    // Depths k .. k+7 fill 48 contiguous floats: 8-wide stores, each overwriting the previous one's 2 spare lanes
    // (zeros), the last one 6 wide so nothing past depth k + 7 is touched.
    for (int j = 0; j < 7; j++) _mm256_storeu_ps(d + (k + j) * 6, r[j]);
    store6(d + (k + 7) * 6, r[7]);
  }
  for (; k < kc; k++)
    for (int i = 0; i < 6; i++) d[k * 6 + i] = s[i][k];
}

// One full panel of 16 columns of op(B) = B^T (B rows j0 .. j0+15, row stride ldb, from column p0), depth kc.
void pack_bt_cols16(const float* B, int64_t ldb, int64_t kc, float* d) {
  int64_t k = 0;
  for (; k + 8 <= kc; k += 8) {
    for (int h = 0; h < 2; h++) {  // columns 8h .. 8h+7
      __m256 r[8];
      for (int j = 0; j < 8; j++) r[j] = _mm256_loadu_ps(B + (8 * h + j) * ldb + k);
      transpose8(r);
      for (int kk = 0; kk < 8; kk++) _mm256_store_ps(d + (k + kk) * 16 + 8 * h, r[kk]);
    }
  }
  for (; k < kc; k++)
    for (int j = 0; j < 16; j++) d[k * 16 + j] = B[j * ldb + k];
}

}  // namespace

void pack_a_avx2(int MR, bool trans, const float* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
                 void* out_v) {
  float* out = static_cast<float*>(out_v);
  const int64_t full = MR == 6 ? mc / 6 * 6 : 0;  // rows in whole panels; the rest (an edge) goes the portable way
  if (!trans) {
    for (int64_t ip = 0; ip < full; ip += 6) pack_a_rows6(A + (i0 + ip) * lda + p0, lda, kc, out + ip * kc);
  } else {
    // Blocks of 8 depths: 8 rows of A, read across all panels while they sit in L1, each panel's 48 values
    // written contiguously (a depth at a time over all panels writes 16 streams 12 KiB apart: 4K aliasing).
    for (int64_t k0 = 0; k0 < kc; k0 += 8) {
      const int64_t k1 = std::min<int64_t>(kc, k0 + 8);
      for (int64_t ip = 0; ip < full; ip += 6) {
        float* d = out + ip * kc;
        for (int64_t k = k0; k < k1; k++) {
          const float* src = A + (p0 + k) * lda + i0 + ip;
          _mm_storeu_ps(d + k * 6, _mm_loadu_ps(src));
          _mm_storel_pi(reinterpret_cast<__m64*>(d + k * 6 + 4),
                        _mm_loadl_pi(_mm_setzero_ps(), reinterpret_cast<const __m64*>(src + 4)));
        }
      }
    }
  }
  if (full < mc) pack_a<float>(MR, trans, A, lda, i0 + full, mc - full, p0, kc, out + full * kc);
}

void pack_b_avx2(int NR, bool trans, const float* B, int64_t ldb, int64_t j0, int64_t nr, int64_t p0, int64_t kc,
                 void* dst_v) {
  float* d = static_cast<float*>(dst_v);
  if (NR != 16 || nr != 16) return pack_b<float>(NR, trans, B, ldb, j0, nr, p0, kc, dst_v);
  if (trans) return pack_bt_cols16(B + j0 * ldb + p0, ldb, kc, d);
  const float* s = B + p0 * ldb + j0;
  for (int64_t k = 0; k < kc; k++, s += ldb) {
    _mm256_store_ps(d + k * 16, _mm256_loadu_ps(s));
    _mm256_store_ps(d + k * 16 + 8, _mm256_loadu_ps(s + 8));
  }
}

}  // namespace frontier::tier_avx2

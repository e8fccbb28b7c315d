// AVX2 packing of fp32 operands into microkernel panels (BLIS's packm kernels per micro-architecture): whole panels
// here, edge panels by the portable loops of gemm_pack.h, which are also the reference these match bit for bit
// (tests/gemm_test.cpp). Any panel width; the AVX2 tier's 6 x 16 and the avx512 fp32 tier's 12 x 32 are compiled
// for their widths. The portable loops copy an element at a time, strided on one side, and re-read A^T once per
// panel. Measured on the Zen 3 here (one thread, operands in L2, best of 200, ns per element, portable -> these):
// A 0.59 -> 0.14, A^T 1.0 -> 0.15-0.27, B^T 0.68-1.38 -> 0.13-0.34, B 0.37-0.40 -> 0.17-0.29; attention's fwd+bwd at
// T 512 (1 thread, best of 8 alternating) 17-18% faster, its packing 25% -> 13% of perf's samples.
//   A (x, dO, P rows): up to 8 rows x 8 depths loaded, transposed in registers (zero rows for a short group), each
//     depth's values stored contiguously.
//   A^T (g^T, P^T, dS^T): depth k of a panel is MR contiguous values of row k of A; 8 rows at a time across all
//     panels, so each row is read once and each panel written contiguously.
//   B^T (W^T, K^T, V^T): 8 rows of 8 depths loaded per 8 columns, transposed, NR values stored per depth.
//   B: NR contiguous values per depth, whole-vector loads and stores.
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

// The first n (1..8) lanes of v to d, nothing after them.
inline void store_n(float* d, __m256 v, int n) {
  if (n == 8) return _mm256_storeu_ps(d, v);
  __m128 part = _mm256_castps256_ps128(v);
  if (n >= 4) {
    _mm_storeu_ps(d, part);
    d += 4, n -= 4, part = _mm256_extractf128_ps(v, 1);
  }
  if (n >= 2) {
    _mm_storel_pi(reinterpret_cast<__m64*>(d), part);
    d += 2, n -= 2, part = _mm_movehl_ps(part, part);
  }
  if (n == 1) _mm_store_ss(d, part);
}

// One full panel of MR rows of A (row stride lda), depth kc, into d (element (k, i) at k * MR + i): groups of up
// to 8 rows, each loaded 8 depths at a time, transposed in registers (zero rows for a short group), and stored as
// that group's values of each depth. kMR > 0: the width known at compile time (loops unrolled: a runtime width of
// 6 packed 1.5x slower here, A^T 3x).
template <int kMR>
void pack_a_rows(int mr, const float* A, int64_t lda, int64_t kc, float* d) {
  const int MR = kMR > 0 ? kMR : mr;
  for (int g0 = 0; g0 < MR; g0 += 8) {
    const int rows = std::min(8, MR - g0);
    const float* s = A + g0 * lda;
    int64_t k = 0;
    for (; k + 8 <= kc; k += 8) {
      __m256 r[8];
      for (int i = 0; i < 8; i++) r[i] = i < rows ? _mm256_loadu_ps(s + i * lda + k) : _mm256_setzero_ps();
      transpose8(r);
      if (MR == rows && MR >= 4) {
        // The group is the panel: depths k .. k+7 fill 8 * MR contiguous floats, so 8-wide stores, each
        // overwriting the previous one's spare lanes (zeros), the last one exact (MR >= 4: the one before it
        // ends by depth k + 7's end).
        for (int j = 0; j < 7; j++) _mm256_storeu_ps(d + (k + j) * MR, r[j]);
        store_n(d + (k + 7) * MR, r[7], rows);
      } else {
        for (int j = 0; j < 8; j++) store_n(d + (k + j) * MR + g0, r[j], rows);
      }
    }
    for (; k < kc; k++)
      for (int i = 0; i < rows; i++) d[k * MR + g0 + i] = s[i * lda + k];
  }
}

// Depth k of a panel of A^T: MR contiguous values of a row of A.
template <int kMR>
inline void copy_row(const float* src, int mr, float* d) {
  const int MR = kMR > 0 ? kMR : mr;
  int i = 0;
  for (; i + 8 <= MR; i += 8) _mm256_storeu_ps(d + i, _mm256_loadu_ps(src + i));
  for (; i + 4 <= MR; i += 4) _mm_storeu_ps(d + i, _mm_loadu_ps(src + i));
  for (; i + 2 <= MR; i += 2)
    _mm_storel_pi(reinterpret_cast<__m64*>(d + i),
                  _mm_loadl_pi(_mm_setzero_ps(), reinterpret_cast<const __m64*>(src + i)));
  for (; i < MR; i++) d[i] = src[i];
}

// One full panel of NR (a multiple of 8) columns of op(B) = B^T (B rows j0 .. j0+NR-1, row stride ldb), depth kc.
template <int kNR>
void pack_bt_cols(int nr, const float* B, int64_t ldb, int64_t kc, float* d) {
  const int NR = kNR > 0 ? kNR : nr;
  int64_t k = 0;
  for (; k + 8 <= kc; k += 8) {
    for (int h = 0; h < NR; h += 8) {  // columns h .. h+7
      __m256 r[8];
      for (int j = 0; j < 8; j++) r[j] = _mm256_loadu_ps(B + (h + j) * ldb + k);
      transpose8(r);
      for (int kk = 0; kk < 8; kk++) _mm256_store_ps(d + (k + kk) * NR + h, r[kk]);
    }
  }
  for (; k < kc; k++)
    for (int j = 0; j < NR; j++) d[k * NR + j] = B[j * ldb + k];
}

// Whole panels of op(A): rows [i0, i0 + full), full a multiple of MR.
template <int kMR>
void pack_a_panels(int mr, bool trans, const float* A, int64_t lda, int64_t i0, int64_t full, int64_t p0, int64_t kc,
                   float* out) {
  const int MR = kMR > 0 ? kMR : mr;
  if (!trans) {
    for (int64_t ip = 0; ip < full; ip += MR) pack_a_rows<kMR>(MR, A + (i0 + ip) * lda + p0, lda, kc, out + ip * kc);
    return;
  }
  // Blocks of 8 depths: 8 rows of A, read across all panels while they sit in L1, each panel's 8 * MR values
  // written contiguously (a depth at a time over all panels writes 16 streams 12 KiB apart: 4K aliasing).
  for (int64_t k0 = 0; k0 < kc; k0 += 8) {
    const int64_t k1 = std::min<int64_t>(kc, k0 + 8);
    for (int64_t ip = 0; ip < full; ip += MR)
      for (int64_t k = k0; k < k1; k++) copy_row<kMR>(A + (p0 + k) * lda + i0 + ip, MR, out + ip * kc + k * MR);
  }
}

}  // namespace

void pack_a_avx2(int MR, bool trans, const float* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
                 void* out_v) {
  float* out = static_cast<float*>(out_v);
  const int64_t full = mc / MR * MR;  // rows in whole panels; an edge panel goes the portable way
  switch (MR) {
    case 6: pack_a_panels<6>(MR, trans, A, lda, i0, full, p0, kc, out); break;
    case 12: pack_a_panels<12>(MR, trans, A, lda, i0, full, p0, kc, out); break;
    default: pack_a_panels<0>(MR, trans, A, lda, i0, full, p0, kc, out);
  }
  if (full < mc) pack_a<float>(MR, trans, A, lda, i0 + full, mc - full, p0, kc, out + full * kc);
}

void pack_b_avx2(int NR, bool trans, const float* B, int64_t ldb, int64_t j0, int64_t nr, int64_t p0, int64_t kc,
                 void* dst_v) {
  float* d = static_cast<float*>(dst_v);
  if (NR % 8 != 0 || nr != NR) return pack_b<float>(NR, trans, B, ldb, j0, nr, p0, kc, dst_v);
  if (trans) {
    if (NR == 16) return pack_bt_cols<16>(NR, B + j0 * ldb + p0, ldb, kc, d);
    if (NR == 32) return pack_bt_cols<32>(NR, B + j0 * ldb + p0, ldb, kc, d);
    return pack_bt_cols<0>(NR, B + j0 * ldb + p0, ldb, kc, d);
  }
  const float* s = B + p0 * ldb + j0;
  for (int64_t k = 0; k < kc; k++, s += ldb)
    for (int j = 0; j < NR; j += 8) _mm256_store_ps(d + k * NR + j, _mm256_loadu_ps(s + j));
}

}  // namespace frontier::tier_avx2

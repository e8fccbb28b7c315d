// The fast GEMM: microkernels tested directly (BLIS test_gemm_ukr style), then the driver in all transpose forms on
// random shapes with edge tiles, odd block sizes, leading dimensions, alpha/beta, and thread-count independence.
// Reference: the same products accumulated in double. Tolerance: |err| <= 4 * K * 2^-24 * sum_k |a_ik b_kj| (the
// fp32 summation bound with FMA), plus 1e-30.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "kernels/gemm.h"

namespace frontier {
namespace {

std::vector<float> rand_vec(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

void check_ukernel(const GemmBlocking& bs) {
  const int MR = bs.MR, NR = bs.NR;
  for (int64_t kc : {1, 3, 64, 256}) {
    auto a = rand_vec(kc * MR, 1), b = rand_vec(kc * NR, 2);
    // 64-byte aligned copies: the AVX2 kernel loads packed B with aligned loads.
    std::vector<float> abuf(kc * MR + 64), bbuf(kc * NR + 64);
    float* pa = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(abuf.data()) + 63) & ~uintptr_t(63));
    float* pb = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(bbuf.data()) + 63) & ~uintptr_t(63));
    std::copy(a.begin(), a.end(), pa);
    std::copy(b.begin(), b.end(), pb);
    const int64_t ldc = NR + 3;
    for (float beta : {0.f, 1.f, -0.5f}) {
      auto c0 = rand_vec(MR * ldc, 3);
      auto c = c0;
      if (beta == 0.f) std::fill(c.begin(), c.end(), NAN);  // beta == 0 must not read C
      bs.ukernel(kc, pa, pb, c.data(), ldc, 0.75f, beta);
      for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j++) {
          double ref = 0, mag = 0;
          for (int64_t k = 0; k < kc; k++) {
            ref += double(a[k * MR + i]) * b[k * NR + j];
            mag += std::fabs(double(a[k * MR + i]) * b[k * NR + j]);
          }
          ref = 0.75 * ref + (beta == 0.f ? 0.0 : beta * double(c0[i * ldc + j]));
          double tol = 4.0 * kc * 0x1p-24 * (mag + std::fabs(c0[i * ldc + j])) + 1e-30;
          ASSERT_NEAR(c[i * ldc + j], ref, tol) << bs.name << " kc=" << kc << " i=" << i << " j=" << j;
        }
      for (int i = 0; i < MR; i++)  // columns past NR untouched
        for (int64_t j = NR; j < ldc; j++)
          if (beta != 0.f) { ASSERT_EQ(c[i * ldc + j], c0[i * ldc + j]); }
    }
  }
}

TEST(Gemm, MicrokernelFast) { check_ukernel(gemm_blocking()); }
TEST(Gemm, MicrokernelReference) { check_ukernel(gemm_blocking_ref()); }

// op(A) (M, K), op(B) (K, N); checks C = alpha op(A) op(B) + beta C against double.
void check_gemm(const GemmBlocking& bs, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, float beta,
                int64_t pad = 0) {
  const int64_t lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
  auto A = rand_vec((ta ? K : M) * lda, 11), B = rand_vec((tb ? N : K) * ldb, 12), C0 = rand_vec(M * ldc, 13);
  auto C = C0;
  sgemm_with(bs, ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double ref = 0, mag = 0;
      for (int64_t k = 0; k < K; k++) {
        double x = ta ? A[k * lda + i] : A[i * lda + k], y = tb ? B[j * ldb + k] : B[k * ldb + j];
        ref += x * y;
        mag += std::fabs(x * y);
      }
      ref = alpha * ref + (beta == 0.f ? 0.0 : beta * double(C0[i * ldc + j]));
      double tol = 4.0 * (K + 2) * 0x1p-24 * (std::fabs(alpha) * mag + std::fabs(C0[i * ldc + j])) + 1e-30;
      ASSERT_NEAR(C[i * ldc + j], ref, tol) << bs.name << " ta=" << ta << " tb=" << tb << " M=" << M << " N=" << N
                                            << " K=" << K << " at " << i << "," << j;
    }
  for (int64_t i = 0; i < M; i++)  // padding columns of C untouched
    for (int64_t j = N; j < ldc; j++) ASSERT_EQ(C[i * ldc + j], C0[i * ldc + j]);
}

TEST(Gemm, AllFormsRandomShapesWithEdgeTiles) {
  const int64_t shapes[][3] = {{1, 1, 1},   {6, 16, 8},   {7, 17, 9},    {5, 3, 300},  {13, 33, 257},
                               {100, 50, 64}, {150, 20, 513}, {37, 200, 31}, {290, 47, 12}};
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (const auto& s : shapes) {
        check_gemm(gemm_blocking(), ta, tb, s[0], s[1], s[2], 1.f, 0.f);
        check_gemm(gemm_blocking(), ta, tb, s[0], s[1], s[2], -0.5f, 1.f, 3);
      }
}

TEST(Gemm, SmallBlockSizesExerciseEveryLoop) {
  // KC, MC, NC far below the shapes: several pc (beta accumulation), ic and jc blocks, and edge tiles in each.
  GemmBlocking fast = gemm_blocking();
  fast.KC = 7, fast.MC = 2 * fast.MR, fast.NC = 3 * fast.NR;
  GemmBlocking ref = gemm_blocking_ref();
  ref.KC = 5, ref.MC = 3 * ref.MR, ref.NC = 2 * ref.NR;
  for (const auto* bs : {&fast, &ref})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        check_gemm(*bs, ta, tb, 41, 75, 30, 1.f, 0.f, 1);
        check_gemm(*bs, ta, tb, 41, 75, 30, 2.f, 0.5f);
      }
}

TEST(Gemm, ZeroDepthScalesC) {
  std::vector<float> C = {1, 2, 3, 4};
  sgemm(false, false, 2, 2, 0, 1.f, nullptr, 0, nullptr, 2, 0.5f, C.data(), 2);
  EXPECT_EQ(C, (std::vector<float>{0.5f, 1, 1.5f, 2}));
}

TEST(Gemm, ThreadCountDoesNotChangeBits) {
  const int64_t M = 300, N = 520, K = 700;
  auto A = rand_vec(M * K, 21), B = rand_vec(N * K, 22);
  std::vector<float> c1(M * N), c2(M * N);
  int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  sgemm(false, true, M, N, K, 1.f, A.data(), K, B.data(), K, 0.f, c1.data(), N);
  omp_set_num_threads(2);
  sgemm(false, true, M, N, K, 1.f, A.data(), K, B.data(), K, 0.f, c2.data(), N);
  omp_set_num_threads(saved);
  EXPECT_EQ(c1, c2);
}

// sgemm_symmetric computes the lower tiles and mirrors: bit-identical to sgemm for the symmetric products Muon uses
// (X X^T, X^T X, and b S + c S S with S symmetric), at sizes with edge tiles.
TEST(Gemm, SymmetricEqualsFullProductBitwise) {
  for (int64_t M : {5, 37, 100, 257}) {
    const int64_t K = 3 * M + 11;
    auto X = rand_vec(M * K, 31);
    std::vector<float> full(M * M), sym(M * M, 7.f);
    sgemm(false, true, M, M, K, 1.f, X.data(), K, X.data(), K, 0.f, full.data(), M);  // X X^T
    sgemm_symmetric(false, true, M, K, 1.f, X.data(), K, X.data(), K, 0.f, sym.data(), M);
    ASSERT_EQ(full, sym) << "X X^T, M=" << M;
    sgemm(true, false, M, M, K, 1.f, X.data(), M, X.data(), M, 0.f, full.data(), M);  // X^T X, X (K, M)
    sgemm_symmetric(true, false, M, K, 1.f, X.data(), M, X.data(), M, 0.f, sym.data(), M);
    ASSERT_EQ(full, sym) << "X^T X, M=" << M;
    const std::vector<float> S = full;  // symmetric
    std::vector<float> c_full = S, c_sym = S;
    sgemm(false, false, M, M, M, 0.7f, S.data(), M, S.data(), M, -1.3f, c_full.data(), M);  // -1.3 S + 0.7 S S
    sgemm_symmetric(false, false, M, M, 0.7f, S.data(), M, S.data(), M, -1.3f, c_sym.data(), M);
    ASSERT_EQ(c_full, c_sym) << "S S, M=" << M;
  }
}

// A B packed once (sgemm_pack_b over (Kp, Np)) and used through a prefix (K <= Kp rows, N <= Np columns) gives
// the same bits as sgemm on that prefix: the same K blocking and per-element order. Both layouts of A and of B.
TEST(Gemm, PrepackedBPrefixEqualsSgemm) {
  const int64_t Kp = 700, Np = 77;  // Kp > KC: two depth blocks; Np: a partial last panel
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{13, 77, 700}, {100, 40, 333}, {7, 16, 1}}) {
        const int64_t ldb = tb ? Kp : Np, lda = ta ? M : K;
        auto A = rand_vec(M * K, 41), Bfull = rand_vec((tb ? Np : Kp) * ldb, 42);
        float* Bp = static_cast<float*>(std::aligned_alloc(64, sgemm_packed_b_floats(Kp, Np) * sizeof(float)));
        sgemm_pack_b(tb, Kp, Np, Bfull.data(), ldb, Bp);
        std::vector<float> want(M * N, 1.f), got(M * N, 1.f);
        sgemm(ta, tb, M, N, K, 0.5f, A.data(), lda, Bfull.data(), ldb, 2.f, want.data(), N);
        sgemm_prepacked_b(ta, M, N, K, 0.5f, A.data(), lda, Bp, Kp, 2.f, got.data(), N);
        std::free(Bp);
        EXPECT_EQ(want, got) << "ta=" << ta << " tb=" << tb << " M=" << M << " N=" << N << " K=" << K;
      }
}

}  // namespace
}  // namespace frontier

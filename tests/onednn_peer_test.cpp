// oneDNN's bf16 matmul (bench/onednn_peer.h), the peer `frontier bench` times our bf16 GEMM against: it must
// compute the same product as frontier::gemm(Precision::kBf16, ...) in every transpose form, so that the
// bench compares equal work. oneDNN is installed by scripts/install_deps.sh, so a missing library fails (not
// skips). Reference: the bf16-rounded inputs multiplied and summed in double. Tolerance, per element of C:
//   |err| <= 4 * K * 2^-24 * sum_k |a_ik b_kj| + 1e-6
// Both sides multiply the same bf16 values (their products are exact in fp32) and differ only in the order
// and rounding of the fp32 sums (bound ~ K * 2^-24 * sum |ab| each); 1e-6 absorbs flushed denormal products.
#include "bench/onednn_peer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "kernels/gemm.h"
#include "test_util.h"

namespace frontier {
namespace {

std::vector<float> rand_vec(size_t n, uint32_t seed) { return testing::rand_floats(n, seed); }

struct Shape {
  int64_t M, N, K;
  int64_t pad;  // added to every leading dimension (exercises the strides)
};

TEST(OneDnnPeer, LoadsOrExplainsTheFix) {
  OneDnnMatmul dnnl;
  ASSERT_TRUE(dnnl.available()) << dnnl.error()
                                << "\n(oneDNN is a project dependency: run scripts/install_deps.sh)";
  EXPECT_TRUE(dnnl.error().empty());
  EXPECT_NE(dnnl.description().find("oneDNN "), std::string::npos) << dnnl.description();
  std::printf("[ info ] %s\n", dnnl.description().c_str());
}

TEST(OneDnnPeer, MissingLibraryIsAnErrorNotACrash) {
  OneDnnMatmul dnnl("libdnnl_does_not_exist.so.9");
  EXPECT_FALSE(dnnl.available());
  EXPECT_NE(dnnl.error().find("install_deps.sh"), std::string::npos) << dnnl.error();
  const float x[4] = {1, 2, 3, 4};
  float c[4];
  EXPECT_FALSE(dnnl.prepare(false, false, 2, 2, 2, x, 2, x, 2, 2).ok());
  EXPECT_FALSE(dnnl.run(c).ok());
}

TEST(OneDnnPeer, RunBeforePrepareIsAnError) {
  OneDnnMatmul dnnl;
  ASSERT_TRUE(dnnl.available()) << dnnl.error()
                                << "\n(oneDNN is a project dependency: run scripts/install_deps.sh)";
  float c[1];
  Status s = dnnl.run(c);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("prepare"), std::string::npos) << s.message();
}

TEST(OneDnnPeer, MatchesFrontierBf16GemmInEveryTransposeForm) {
  OneDnnMatmul dnnl;
  ASSERT_TRUE(dnnl.available()) << dnnl.error()
                                << "\n(oneDNN is a project dependency: run scripts/install_deps.sh)";
  const Shape shapes[] = {{37, 70, 129, 0}, {64, 256, 512, 0}, {37, 70, 129, 3}};
  uint32_t seed = 1;
  for (const Shape& sh : shapes) {
    for (int t = 0; t < 4; t++) {
      const bool ta = t & 1, tb = t & 2;
      const int64_t M = sh.M, N = sh.N, K = sh.K;
      const int64_t lda = (ta ? M : K) + sh.pad, ldb = (tb ? K : N) + sh.pad, ldc = N + sh.pad;
      SCOPED_TRACE(::testing::Message() << "M=" << M << " N=" << N << " K=" << K << " trans_a=" << ta
                                        << " trans_b=" << tb << " pad=" << sh.pad);
      const std::vector<float> A = rand_vec((ta ? K : M) * lda, seed++);  // (M, K) or, trans_a, (K, M)
      const std::vector<float> B = rand_vec((tb ? N : K) * ldb, seed++);  // (K, N) or, trans_b, (N, K)
      auto a_at = [&](int64_t i, int64_t k) { return round_bf16(ta ? A[k * lda + i] : A[i * lda + k]); };
      auto b_at = [&](int64_t k, int64_t j) { return round_bf16(tb ? B[j * ldb + k] : B[k * ldb + j]); };

      std::vector<float> c_dnnl(M * ldc, NAN), c_ours(M * ldc, NAN);
      gemm(Precision::kBf16, ta, tb, M, N, K, 1.f, A.data(), lda, B.data(), ldb, 0.f, c_ours.data(), ldc);
      Status s = dnnl.prepare(ta, tb, M, N, K, A.data(), lda, B.data(), ldb, ldc);
      if (!isa_supported(Isa::kAvx512)) {
        // oneDNN 2.6 has bf16 matmul only from AVX-512 up: on an AVX2-only CPU (the Zen 3 EPYC, 2026-12-07) it
        // must refuse with "unimplemented", which `frontier bench` prints as the missing peer; ours is still
        // checked against the reference, oneDNN's result standing in as ours.
        ASSERT_FALSE(s.ok());
        EXPECT_NE(s.message().find("unimplemented"), std::string::npos) << s.message();
        c_dnnl = c_ours;
      } else {
        ASSERT_TRUE(s.ok()) << s.message();
        s = dnnl.run(c_dnnl.data());
        ASSERT_TRUE(s.ok()) << s.message();
      }

      double worst_dnnl = 0, worst_ours = 0, worst_pair = 0;  // err / tolerance
      for (int64_t i = 0; i < M; i++) {
        for (int64_t j = 0; j < N; j++) {
          double ref = 0, mag = 0;
          for (int64_t k = 0; k < K; k++) {
            const double p = static_cast<double>(a_at(i, k)) * b_at(k, j);
            ref += p;
            mag += std::fabs(p);
          }
          const double tol = 4.0 * K * std::ldexp(1.0, -24) * mag + 1e-6;
          const double d = c_dnnl[i * ldc + j], o = c_ours[i * ldc + j];
          worst_dnnl = std::max(worst_dnnl, std::fabs(d - ref) / tol);
          worst_ours = std::max(worst_ours, std::fabs(o - ref) / tol);
          worst_pair = std::max(worst_pair, std::fabs(d - o) / tol);
          ASSERT_LE(std::fabs(d - ref), tol) << "oneDNN vs reference at (" << i << ", " << j << ")";
          ASSERT_LE(std::fabs(o - ref), tol) << "frontier::gemm vs reference at (" << i << ", " << j << ")";
          ASSERT_LE(std::fabs(d - o), tol) << "oneDNN vs frontier::gemm at (" << i << ", " << j << ")";
        }
      }
      std::printf(
          "[ info ] M=%lld N=%lld K=%lld ta=%d tb=%d pad=%lld: max err/tol oneDNN %.2g, ours %.2g, "
          "oneDNN-ours %.2g (%s)\n",
          (long long)M, (long long)N, (long long)K, ta, tb, (long long)sh.pad, worst_dnnl, worst_ours,
          worst_pair, dnnl.impl().c_str());
    }
  }
}

}  // namespace
}  // namespace frontier

// The fast GEMM, at every instruction-set tier this CPU supports and in both precisions: microkernels tested
// directly (BLIS test_gemm_ukr style), then the driver in all transpose forms on random shapes with edge tiles, odd
// block sizes, leading dimensions, alpha/beta, and thread-count independence.
// Reference: the same products accumulated in double, from the inputs as the kernel sees them (rounded to bf16 for
// bf16 kernels: bf16 products are exact in fp32, so only the fp32 summation rounds). Tolerance: |err| <= 4 * K *
// 2^-24 * sum_k |a_ik b_kj| (the fp32 summation bound with FMA), plus 1e-30.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/gemm.h"
#include "test_util.h"
#include "kernels/gemm_kernels.h"
#include "kernels/avx2/pack_avx2.h"

namespace frontier {
namespace {

std::vector<float> rand_vec(size_t n, uint32_t seed) { return testing::rand_floats(n, seed); }

// Every microkernel this CPU can run, with its tier (the reference ones at Isa::kRef).
std::vector<std::pair<Isa, const GemmKernel*>> kernels_here() {
  std::vector<std::pair<Isa, const GemmKernel*>> ks = {{Isa::kRef, &gemm_kernel_ref_fp32()},
                                                       {Isa::kRef, &gemm_kernel_ref_bf16()}};
  if (isa_supported(Isa::kAvx2)) ks.push_back({Isa::kAvx2, &gemm_kernel_avx2_fp32()});
  if (isa_supported(Isa::kAvx512)) ks.push_back({Isa::kAvx512, &gemm_kernel_avx512_fp32()});
  if (isa_supported(Isa::kAvx512Bf16)) ks.push_back({Isa::kAvx512Bf16, &gemm_kernel_avx512bf16_bf16()});
  if (isa_supported(Isa::kAmx)) ks.push_back({Isa::kAmx, &gemm_kernel_amx_bf16()});
  return ks;
}

float as_seen(const GemmKernel& k, float x) { return k.prec == Precision::kBf16 ? round_bf16(x) : x; }

// 64-byte aligned storage for packed panels (kernels load them aligned).
struct Aligned {
  void* p;
  explicit Aligned(size_t bytes) : p(std::aligned_alloc(64, (bytes + 63) / 64 * 64)) {}
  ~Aligned() { std::free(p); }
};

// Packs a (kc, MR) k-major matrix into the kernel's panel layout (gemm.h), rounding to bf16 for bf16 kernels.
// A kernel with its own layout (k_align: AMX's row-major A panels) packs with its own packers: x is then op(A)^T
// stored (K, M), and op(B) stored (K, N).
void pack_panel(const GemmKernel& k, const std::vector<float>& x, int64_t kc, int R, void* out, bool is_a) {
  if (k.k_align) {
    if (is_a) k.pack_a(R, true, x.data(), R, 0, R, 0, kc, out);
    else k.pack_b(R, false, x.data(), R, 0, R, 0, kc, out);
    return;
  }
  const int kp = k.kp();
  const int64_t kcp = (kc + kp - 1) / kp * kp;
  for (int64_t kk = 0; kk < kcp; kk++)
    for (int r = 0; r < R; r++) {
      const int64_t at = (kk / kp) * kp * R + r * kp + kk % kp;
      const float v = kk < kc ? x[kk * R + r] : 0.f;
      if (kp == 2) static_cast<uint16_t*>(out)[at] = to_bf16(v);
      else static_cast<float*>(out)[at] = v;
    }
}

void check_ukernel(const GemmKernel& bs) {
  const int MR = bs.MR, NR = bs.NR;
  for (int64_t kc : {1, 3, 64, 255, 256}) {
    auto a = rand_vec(kc * MR, 1), b = rand_vec(kc * NR, 2);
    Aligned pa((kc + 32) * MR * 4), pb((kc + 32) * NR * 4);
    pack_panel(bs, a, kc, MR, pa.p, true);
    pack_panel(bs, b, kc, NR, pb.p, false);
    const int64_t ldc = NR + 3;
    // alpha 1 with beta 0 or 1: the AMX kernel's direct path (C is the accumulator)
    for (auto [alpha, beta] : {std::pair{0.75f, 0.f}, {0.75f, 1.f}, {0.75f, -0.5f}, {1.f, 0.f}, {1.f, 1.f}}) {
      auto c0 = rand_vec(MR * ldc, 3);
      auto c = c0;
      if (beta == 0.f) std::fill(c.begin(), c.end(), NAN);  // beta == 0 must not read C
      if (bs.begin) bs.begin();
      bs.ukernel(kc, pa.p, pb.p, c.data(), ldc, alpha, beta);
      for (int i = 0; i < MR; i++)
        for (int j = 0; j < NR; j++) {
          double ref = 0, mag = 0;
          for (int64_t k = 0; k < kc; k++) {
            const double p = double(as_seen(bs, a[k * MR + i])) * as_seen(bs, b[k * NR + j]);
            ref += p;
            mag += std::fabs(p);
          }
          ref = alpha * ref + (beta == 0.f ? 0.0 : beta * double(c0[i * ldc + j]));
          double tol = 4.0 * kc * 0x1p-24 * (mag + std::fabs(c0[i * ldc + j])) + 1e-30;
          ASSERT_NEAR(c[i * ldc + j], ref, tol) << bs.name << " kc=" << kc << " i=" << i << " j=" << j;
        }
      for (int i = 0; i < MR; i++)  // columns past NR untouched
        for (int64_t j = NR; j < ldc; j++)
          if (beta != 0.f) { ASSERT_EQ(c[i * ldc + j], c0[i * ldc + j]); }
    }
  }
}

TEST(Gemm, EveryMicrokernelOnThisCpu) {
  for (auto [isa, k] : kernels_here()) {
    SCOPED_TRACE(k->name);
    check_ukernel(*k);
  }
}

// The native bf16 kernel does vdpbf16ps's arithmetic, which the reference bf16 kernel writes out (odd product
// first, each sum rounded): the whole driver agrees bit for bit on random data, edge tiles and several KC blocks.
TEST(Gemm, NativeBf16MatchesReferenceBf16Bitwise) {
  if (!isa_supported(Isa::kAvx512Bf16)) GTEST_SKIP() << "no avx512bf16 on this CPU (the ref kernel is tested alone)";
  const GemmKernel& nat = gemm_kernel_avx512bf16_bf16();
  GemmKernel ref = gemm_kernel_ref_bf16();
  ref.KC = nat.KC;  // same depth blocking, so the same summation order per element
  for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{37, 70, 1100}, {12, 32, 3}, {100, 33, 512}}) {
    auto A = rand_vec(M * K, 5), B = rand_vec(K * N, 6);
    std::vector<float> c1(M * N), c2(M * N);
    gemm_with(nat, false, false, M, N, K, 1.f, A.data(), K, B.data(), N, 0.f, c1.data(), N);
    gemm_with(ref, false, false, M, N, K, 1.f, A.data(), K, B.data(), N, 0.f, c2.data(), N);
    int64_t differ = 0;
    for (size_t i = 0; i < c1.size(); i++) differ += std::memcmp(&c1[i], &c2[i], 4) != 0;
    EXPECT_EQ(differ, 0) << "M=" << M << " N=" << N << " K=" << K;
  }
}

// op(A) (M, K), op(B) (K, N); checks C = alpha op(A) op(B) + beta C against double.
void check_gemm(const GemmKernel& bs, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, float beta,
                int64_t pad = 0) {
  const int64_t lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
  auto A = rand_vec((ta ? K : M) * lda, 11), B = rand_vec((tb ? N : K) * ldb, 12), C0 = rand_vec(M * ldc, 13);
  auto C = C0;
  gemm_with(bs, ta, tb, M, N, K, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double ref = 0, mag = 0;
      for (int64_t k = 0; k < K; k++) {
        double x = as_seen(bs, ta ? A[k * lda + i] : A[i * lda + k]);
        double y = as_seen(bs, tb ? B[j * ldb + k] : B[k * ldb + j]);
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

TEST(Gemm, AllFormsRandomShapesWithEdgeTilesEveryKernel) {
  const int64_t shapes[][3] = {{1, 1, 1},   {6, 16, 8},   {7, 17, 9},    {5, 3, 300},  {13, 33, 257},
                               {100, 50, 64}, {150, 20, 513}, {37, 200, 31}, {290, 47, 12}};
  for (auto [isa, k] : kernels_here())
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (const auto& s : shapes) {
          check_gemm(*k, ta, tb, s[0], s[1], s[2], 1.f, 0.f);
          check_gemm(*k, ta, tb, s[0], s[1], s[2], -0.5f, 1.f, 3);
        }
}

// Packs n floats with `fast` and with `portable` into buffers of NaN sentinels: both must write the same n floats,
// and `fast` nothing in the guard after them. Exact: packing is a copy.
template <class Fast, class Portable>
void expect_same_packing(int64_t n, Fast&& fast, Portable&& portable) {
  const int64_t guard = 64;
  Aligned fa((n + guard) * 4), pa((n + guard) * 4);
  float *f = static_cast<float*>(fa.p), *p = static_cast<float*>(pa.p);
  std::fill(f, f + n + guard, NAN), std::fill(p, p + n + guard, NAN);
  fast(f), portable(p);
  ASSERT_EQ(std::memcmp(f, p, n * 4), 0) << "packed panels differ";
  for (int64_t i = n; i < n + guard; i++) ASSERT_TRUE(std::isnan(f[i])) << "wrote past its panels";
}

// A tier's own packing (the AVX2 tier's transposing packers) lays panels out exactly as the portable loops do, for
// every form, offset, edge panel and depth not a multiple of its vector width.
TEST(Gemm, TierPackingEqualsPortablePackingBitwise) {
  const GemmKernel& ref = gemm_kernel_ref_fp32();
  for (const auto& tier : kernels_here()) {
    const GemmKernel* k = tier.second;  // (a plain variable: C++17 lambdas cannot capture a structured binding)
    if (k->prec != Precision::kFp32 || tier.first == Isa::kRef) continue;
    const int64_t ld = 700;
    const auto src = rand_vec(ld * 600, 11);
    for (bool trans : {false, true})
      for (int64_t kc : {1, 7, 8, 9, 31, 512})
        for (int64_t off : {0, 3}) {
          for (int64_t mc : {1, 5, 6, 7, 13, 96}) {
            SCOPED_TRACE(::testing::Message() << k->name << " pack_a trans=" << trans << " mc=" << mc << " kc=" << kc);
            expect_same_packing(
                (mc + k->MR - 1) / k->MR * k->MR * kc,
                [&](float* d) { k->pack_a(k->MR, trans, src.data(), ld, off, mc, 2 * off, kc, d); },
                [&](float* d) { ref.pack_a(k->MR, trans, src.data(), ld, off, mc, 2 * off, kc, d); });
          }
          for (int64_t nr : {int64_t(1), int64_t(9), int64_t(k->NR)}) {
            SCOPED_TRACE(::testing::Message() << k->name << " pack_b trans=" << trans << " nr=" << nr << " kc=" << kc);
            expect_same_packing(
                k->NR * kc, [&](float* d) { k->pack_b(k->NR, trans, src.data(), ld, off, nr, 2 * off, kc, d); },
                [&](float* d) { ref.pack_b(k->NR, trans, src.data(), ld, off, nr, 2 * off, kc, d); });
          }
        }
  }
}

// The AVX2 packers serve any panel width (the avx512 tier's 12 x 32 too): each width against the portable loops.
TEST(Gemm, Avx2PackingEveryPanelWidthEqualsPortableBitwise) {
  if (!isa_supported(Isa::kAvx2)) GTEST_SKIP() << "no AVX2 on this CPU: the AVX2 packers cannot run";
  const GemmKernel& ref = gemm_kernel_ref_fp32();
  const int64_t ld = 300;
  const auto src = rand_vec(ld * 300, 12);
  for (int R : {2, 3, 4, 5, 6, 8, 12, 16, 24, 32})
    for (bool trans : {false, true})
      for (int64_t kc : {1, 8, 13, 64})
        for (int64_t m : {int64_t(1), int64_t(R), int64_t(2 * R + 1)}) {
          SCOPED_TRACE(::testing::Message() << "R=" << R << " trans=" << trans << " kc=" << kc << " m=" << m);
          expect_same_packing(
              (m + R - 1) / R * R * kc,
              [&](float* d) { tier_avx2::pack_a_avx2(R, trans, src.data(), ld, 1, m, 2, kc, d); },
              [&](float* d) { ref.pack_a(R, trans, src.data(), ld, 1, m, 2, kc, d); });
          if (m > R) continue;  // pack_b packs one panel of at most R columns
          expect_same_packing(
              R * kc, [&](float* d) { tier_avx2::pack_b_avx2(R, trans, src.data(), ld, 1, m, 2, kc, d); },
              [&](float* d) { ref.pack_b(R, trans, src.data(), ld, 1, m, 2, kc, d); });
        }
}

TEST(Gemm, SmallBlockSizesExerciseEveryLoop) {
  // KC, MC, NC far below the shapes: several pc (beta accumulation), ic and jc blocks, and edge tiles in each.
  for (auto [isa, k] : kernels_here()) {
    GemmKernel bs = *k;
    bs.KC = k->k_align ? k->k_align : 6, bs.MC = 2 * bs.MR, bs.NC = 3 * bs.NR;  // AMX: one tile deep
    bs.KC_ta = 2 * bs.KC;  // transposed A: its own depth block, also several per product
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        check_gemm(bs, ta, tb, 41, 75, 31, 1.f, 0.f, 1);
        check_gemm(bs, ta, tb, 41, 75, 31, 2.f, 0.5f);
        check_gemm(bs, ta, tb, 70, 75, 101, 2.f, 0.5f);  // AMX: 4 depth blocks, the last partial
      }
  }
}

TEST(Gemm, ZeroDepthScalesC) {
  for (Precision p : {Precision::kFp32, Precision::kBf16}) {
    std::vector<float> C = {1, 2, 3, 4};
    gemm(p, false, false, 2, 2, 0, 1.f, nullptr, 0, nullptr, 2, 0.5f, C.data(), 2);
    EXPECT_EQ(C, (std::vector<float>{0.5f, 1, 1.5f, 2}));
  }
}

// The tier in use: FRONTIER_ISA (CTest runs the suite once per tier this CPU has) or the best one.
TEST(Gemm, ActiveTierIsTheRequestedOne) {
  Isa want;
  ASSERT_TRUE(isa_from_env(&want).ok());
  EXPECT_EQ(active_isa(), want);
  EXPECT_EQ(&gemm_kernel(Precision::kFp32), &gemm_kernel_for(want, Precision::kFp32));
  std::printf("tier %s: %s\n", isa_name(active_isa()), kernels_banner().c_str());
}

TEST(Gemm, ThreadCountDoesNotChangeBits) {
  const int64_t M = 300, N = 520, K = 700;
  auto A = rand_vec(M * K, 21), B = rand_vec(N * K, 22);
  for (Precision p : {Precision::kFp32, Precision::kBf16}) {
    std::vector<float> c1(M * N), c2(M * N);
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    gemm(p, false, true, M, N, K, 1.f, A.data(), K, B.data(), K, 0.f, c1.data(), N);
    omp_set_num_threads(2);
    gemm(p, false, true, M, N, K, 1.f, A.data(), K, B.data(), K, 0.f, c2.data(), N);
    omp_set_num_threads(saved);
    EXPECT_EQ(c1, c2) << precision_name(p);
  }
}

// gemm_symmetric computes the lower tiles and mirrors: bit-identical to gemm for the symmetric products Muon uses
// (X X^T, X^T X, and b S + c S S with S symmetric), at sizes with edge tiles, in both precisions.
TEST(Gemm, SymmetricEqualsFullProductBitwise) {
  for (Precision p : {Precision::kFp32, Precision::kBf16})
    for (int64_t M : {5, 37, 100, 257}) {
      const int64_t K = 3 * M + 11;
      auto X = rand_vec(M * K, 31);
      std::vector<float> full(M * M), sym(M * M, 7.f);
      gemm(p, false, true, M, M, K, 1.f, X.data(), K, X.data(), K, 0.f, full.data(), M);  // X X^T
      gemm_symmetric(p, false, true, M, K, 1.f, X.data(), K, X.data(), K, 0.f, sym.data(), M);
      ASSERT_EQ(full, sym) << "X X^T, M=" << M << " " << precision_name(p);
      gemm(p, true, false, M, M, K, 1.f, X.data(), M, X.data(), M, 0.f, full.data(), M);  // X^T X, X (K, M)
      gemm_symmetric(p, true, false, M, K, 1.f, X.data(), M, X.data(), M, 0.f, sym.data(), M);
      ASSERT_EQ(full, sym) << "X^T X, M=" << M << " " << precision_name(p);
      const std::vector<float> S = full;  // symmetric
      std::vector<float> c_full = S, c_sym = S;
      gemm(p, false, false, M, M, M, 0.7f, S.data(), M, S.data(), M, -1.3f, c_full.data(), M);  // -1.3 S + 0.7 S S
      gemm_symmetric(p, false, false, M, M, 0.7f, S.data(), M, S.data(), M, -1.3f, c_sym.data(), M);
      ASSERT_EQ(c_full, c_sym) << "S S, M=" << M << " " << precision_name(p);
    }
}

// A B packed once (gemm_pack_b over (Kp, Np)) and used through a prefix (K <= Kp rows, N <= Np columns) gives
// the same bits as gemm on that prefix: the same K blocking and per-element order. Both layouts of A and of B, both
// precisions (bf16: odd K reads half a pair against A's zero padding; AMX: a prefix reads to its next 32 rows,
// the panel's next data or the zeroed slack after the last panel, against the same padding).
TEST(Gemm, PrepackedBPrefixEqualsGemm) {
  const int64_t Kp = 1101, Np = 77;  // Kp > KC: several depth blocks; Np: a partial last panel
  for (Precision p : {Precision::kFp32, Precision::kBf16})
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{13, 77, 1101}, {100, 40, 333}, {7, 16, 1}}) {
          const int64_t ldb = tb ? Kp : Np, lda = ta ? M : K;
          auto A = rand_vec(M * K, 41), Bfull = rand_vec((tb ? Np : Kp) * ldb, 42);
          Aligned Bp(gemm_packed_b_bytes(p, Kp, Np));
          gemm_pack_b(p, tb, Kp, Np, Bfull.data(), ldb, Bp.p);
          std::vector<float> want(M * N, 1.f), got(M * N, 1.f);
          gemm_with(gemm_kernel(p), ta, tb, M, N, K, 0.5f, A.data(), lda, Bfull.data(), ldb, 2.f,
                    want.data(), N);
          gemm_prepacked_b(p, ta, M, N, K, 0.5f, A.data(), lda, Bp.p, Kp, 2.f, got.data(), N);
          EXPECT_EQ(want, got) << precision_name(p) << " ta=" << ta << " tb=" << tb << " M=" << M << " N=" << N
                               << " K=" << K;
        }
}

TEST(Gemm, Bf16RoundingIsNearestEven) {
  EXPECT_EQ(to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(to_bf16(1.0f + 0x1p-8f), 0x3f80);             // halfway, even below: down
  EXPECT_EQ(to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);         // halfway, odd below: up
  EXPECT_EQ(to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);  // above halfway: up
  EXPECT_EQ(to_bf16(-2.5f), 0xc020);
  EXPECT_TRUE(std::isnan(from_bf16(to_bf16(NAN))));
  EXPECT_EQ(from_bf16(to_bf16(INFINITY)), INFINITY);
  EXPECT_EQ(to_bf16(3.4e38f), 0x7f80);  // rounds up to inf, as vcvtneps2bf16 does
}

}  // namespace
}  // namespace frontier

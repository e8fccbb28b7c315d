// The portable 5-loop GEMM driver (BLIS frame/3/gemm): jc over NC columns of C, pc over KC of the depth (pack a
// KC x NC block of op(B) once), then tasks of (MC rows x a group of NR panels) in parallel, each packing its MC x KC
// block of op(A) and running the microkernel over MR x NR tiles. Edge tiles go through a zero-padded tile buffer.
// Cost: 2*M*N*K FLOPs; packing moves M*K*ceil(N/NC) + K*N floats, negligible at the model's shapes.
#include "kernels/gemm.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "util/status.h"

namespace frontier {

namespace {

// 64-byte aligned scratch that only grows; one per thread (packed A) and one per calling thread (packed B).
struct AlignedBuf {
  float* p = nullptr;
  size_t n = 0;
  float* get(size_t want) {
    if (want > n) {
      std::free(p);
      n = (want + 15) & ~size_t(15);
      p = static_cast<float*>(std::aligned_alloc(64, n * sizeof(float)));
      FRONTIER_CHECK(p != nullptr);
    }
    return p;
  }
  ~AlignedBuf() { std::free(p); }
};

// Packs rows [i0, i0+mc) x depth [p0, p0+kc) of op(A) into micro-panels of MR rows, k-major, zero-padded.
void pack_a(const GemmBlocking& bs, bool trans, const float* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0,
            int64_t kc, float* out) {
  const int MR = bs.MR;
  for (int64_t ip = 0; ip < mc; ip += MR) {
    const int64_t mr = std::min<int64_t>(MR, mc - ip);
    float* dst = out + ip * kc;
    if (!trans) {
      for (int64_t i = 0; i < mr; i++) {
        const float* src = A + (i0 + ip + i) * lda + p0;
        for (int64_t k = 0; k < kc; k++) dst[k * MR + i] = src[k];
      }
    } else {
      for (int64_t k = 0; k < kc; k++) {
        const float* src = A + (p0 + k) * lda + i0 + ip;
        for (int64_t i = 0; i < mr; i++) dst[k * MR + i] = src[i];
      }
    }
    for (int64_t i = mr; i < MR; i++)
      for (int64_t k = 0; k < kc; k++) dst[k * MR + i] = 0.f;
  }
}

// Packs depth [p0, p0+kc) x columns [j0, j0+nc) of op(B) into micro-panels of NR columns, k-major, zero-padded.
void pack_b_panel(const GemmBlocking& bs, bool trans, const float* B, int64_t ldb, int64_t j0, int64_t nr,
                  int64_t p0, int64_t kc, float* dst) {
  const int NR = bs.NR;
  if (!trans) {
    for (int64_t k = 0; k < kc; k++) {
      const float* src = B + (p0 + k) * ldb + j0;
      float* d = dst + k * NR;
      for (int64_t j = 0; j < nr; j++) d[j] = src[j];
      for (int64_t j = nr; j < NR; j++) d[j] = 0.f;
    }
  } else {
    for (int64_t j = 0; j < nr; j++) {
      const float* src = B + (j0 + j) * ldb + p0;
      for (int64_t k = 0; k < kc; k++) dst[k * NR + j] = src[k];
    }
    for (int64_t j = nr; j < NR; j++)
      for (int64_t k = 0; k < kc; k++) dst[k * NR + j] = 0.f;
  }
}

// The macro-kernel (BLIS's loops 2 and 1): C rows [ic, ic+mc) x the columns of B panels [q0, q1) (panel q covers
// columns jc + q*NR, at Bp + q*panel_stride) from packed A (mc, kc). Edge tiles go through a zero-padded tile.
// lower: tiles strictly above the diagonal are skipped.
void macro_kernel(const GemmBlocking& bs, bool lower, int64_t kc, const float* Ap, int64_t mc, int64_t ic,
                  const float* Bp, int64_t panel_stride, int64_t q0, int64_t q1, int64_t jc, int64_t N, float alpha,
                  float beta_k, float* C, int64_t ldc) {
  const int MR = bs.MR, NR = bs.NR;
  alignas(64) float tile[16 * 32];
  FRONTIER_CHECK(MR * NR <= 16 * 32);
  for (int64_t q = q0; q < q1; q++) {
    const int64_t j = jc + q * NR, nr = std::min<int64_t>(NR, N - j);
    for (int64_t ip = 0; ip < mc; ip += MR) {
      const int64_t mr = std::min<int64_t>(MR, mc - ip);
      if (lower && j >= ic + ip + mr) continue;  // strictly above the diagonal
      float* c = C + (ic + ip) * ldc + j;
      const float* a = Ap + ip * kc;
      const float* b = Bp + q * panel_stride;
      if (mr == MR && nr == NR) {
        bs.ukernel(kc, a, b, c, ldc, alpha, beta_k);
      } else {  // edge tile: compute the full tile into scratch, then combine the valid part
        bs.ukernel(kc, a, b, tile, NR, 1.f, 0.f);
        for (int64_t i = 0; i < mr; i++)
          for (int64_t jj = 0; jj < nr; jj++) {
            float* cij = c + i * ldc + jj;
            float acc = tile[i * NR + jj];
            *cij = beta_k == 0.f ? alpha * acc : std::fma(alpha, acc, beta_k * *cij);
          }
      }
    }
  }
}

// The driver. lower: only tiles with an element on or below the diagonal are computed (symmetric products).
void gemm_driver(const GemmBlocking& bs, bool lower, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                 const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  FRONTIER_CHECK(M >= 0 && N >= 0 && K >= 0 && ldc >= N);
  FRONTIER_CHECK(lda >= (ta ? M : K) && ldb >= (tb ? K : N));
  if (M == 0 || N == 0) return;
  if (K == 0 || alpha == 0.f) {  // C = beta * C
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) C[i * ldc + j] = beta == 0.f ? 0.f : beta * C[i * ldc + j];
    return;
  }
  const int MR = bs.MR, NR = bs.NR;
  const int64_t KC = bs.KC, MC = bs.MC, NC = bs.NC;
  static thread_local AlignedBuf bbuf;
  (void)MR;
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  const int64_t n_ic = (M + MC - 1) / MC;
  for (int64_t jc = 0; jc < N; jc += NC) {
    const int64_t nc = std::min(NC, N - jc);
    const int64_t n_panels = (nc + NR - 1) / NR;
    // Split the panels into groups when M is small, so that the dynamic schedule can even out a short last MC
    // block: at least 4 tasks per thread, groups of at least 8 panels (each task re-packs its A block). Measured
    // (alternating runs): M = 512 products +7-8% over 2 tasks per thread. Symmetric (lower) products keep 2 per
    // thread: their tasks already differ in size and more groups measured slower.
    const int64_t groups =
        lower ? std::clamp<int64_t>((2 * threads + n_ic - 1) / n_ic, 1, n_panels)
              : std::clamp<int64_t>((4 * threads + n_ic - 1) / n_ic, 1, std::max<int64_t>(1, n_panels / 8));
    const int64_t per_group = (n_panels + groups - 1) / groups;
    for (int64_t pc = 0; pc < K; pc += KC) {
      const int64_t kc = std::min(KC, K - pc);
      const float beta_k = pc == 0 ? beta : 1.f;
      float* Bp = bbuf.get(static_cast<size_t>(n_panels) * NR * kc);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && n_panels > 1)
      for (int64_t q = 0; q < n_panels; q++)
        pack_b_panel(bs, tb, B, ldb, jc + q * NR, std::min<int64_t>(NR, nc - q * NR), pc, kc, Bp + q * NR * kc);
      const int64_t tasks = n_ic * groups;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1 && tasks > 1)
      for (int64_t t = 0; t < tasks; t++) {
        static thread_local AlignedBuf abuf;
        const int64_t ic = (t / groups) * MC, g = t % groups;
        const int64_t mc = std::min(MC, M - ic);
        const int64_t q0 = g * per_group, q1 = std::min(n_panels, q0 + per_group);
        if (q0 >= q1) continue;
        float* Ap = abuf.get(static_cast<size_t>((mc + MR - 1) / MR) * MR * kc);
        pack_a(bs, ta, A, lda, ic, mc, pc, kc, Ap);
        macro_kernel(bs, lower, kc, Ap, mc, ic, Bp, NR * kc, q0, q1, jc, N, alpha, beta_k, C, ldc);
      }
    }
  }
}

}  // namespace

void sgemm_with(const GemmBlocking& bs, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  gemm_driver(bs, false, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void sgemm_symmetric(bool ta, bool tb, int64_t M, int64_t K, float alpha, const float* A, int64_t lda,
                     const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  gemm_driver(gemm_blocking(), true, ta, tb, M, M, K, alpha, A, lda, B, ldb, beta, C, ldc);
  // Mirror the lower triangle; rows in parallel (each writes only its own row's upper part).
#pragma omp parallel for schedule(dynamic, 16) if (M >= 128 && !omp_in_parallel())
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = i + 1; j < M; j++) C[i * ldc + j] = C[j * ldc + i];
}

int64_t sgemm_packed_b_floats(int64_t K, int64_t N) {
  const int NR = gemm_blocking().NR;
  return (N + NR - 1) / NR * NR * K;
}

void sgemm_pack_b(bool tb, int64_t K, int64_t N, const float* B, int64_t ldb, float* Bp) {
  const GemmBlocking& bs = gemm_blocking();
  for (int64_t q = 0; q * bs.NR < N; q++)
    pack_b_panel(bs, tb, B, ldb, q * bs.NR, std::min<int64_t>(bs.NR, N - q * bs.NR), 0, K, Bp + q * bs.NR * K);
}

void sgemm_prepacked_b(bool ta, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                       const float* Bp, int64_t Kp, float beta, float* C, int64_t ldc) {
  FRONTIER_CHECK(M >= 0 && N >= 0 && K >= 0 && K <= Kp && ldc >= N && lda >= (ta ? M : K));
  const GemmBlocking& bs = gemm_blocking();
  if (M == 0 || N == 0) return;
  if (K == 0) {
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++) C[i * ldc + j] = beta == 0.f ? 0.f : beta * C[i * ldc + j];
    return;
  }
  static thread_local AlignedBuf abuf;
  const int64_t n_panels = (N + bs.NR - 1) / bs.NR;
  for (int64_t pc = 0; pc < K; pc += bs.KC) {
    const int64_t kc = std::min<int64_t>(bs.KC, K - pc);
    const float beta_k = pc == 0 ? beta : 1.f;
    for (int64_t ic = 0; ic < M; ic += bs.MC) {
      const int64_t mc = std::min<int64_t>(bs.MC, M - ic);
      float* Ap = abuf.get(static_cast<size_t>((mc + bs.MR - 1) / bs.MR) * bs.MR * kc);
      pack_a(bs, ta, A, lda, ic, mc, pc, kc, Ap);
      // Panel q's depth pc starts pc rows into it: the micro-panel is k-major with NR floats per k.
      macro_kernel(bs, false, kc, Ap, mc, ic, Bp + pc * bs.NR, bs.NR * Kp, 0, n_panels, 0, N, alpha, beta_k, C, ldc);
    }
  }
}

void sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
           const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  sgemm_with(gemm_blocking(), ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace frontier

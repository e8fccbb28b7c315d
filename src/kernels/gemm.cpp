// The portable 5-loop GEMM driver (BLIS frame/3/gemm): jc over NC columns of C, pc over KC of the depth (pack a
// KC x NC block of op(B) once), then tasks of (MC rows x a group of NR panels) in parallel, each packing its MC x KC
// block of op(A) and running the microkernel over MR x NR tiles. Edge tiles go through a zero-padded tile buffer.
// Packing is where bf16 operands are made: fp32 is rounded to bf16 and laid out in k pairs (gemm.h).
// Cost: 2*M*N*K FLOPs; packing moves M*K*ceil(N/NC) + K*N elements, negligible at the model's shapes.
#include "kernels/gemm.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/gemm_kernels.h"
#include "util/status.h"

namespace frontier {

namespace {

// 64-byte aligned scratch that only grows; one per thread (packed A) and one per calling thread (packed B).
struct AlignedBuf {
  void* p = nullptr;
  size_t n = 0;
  template <typename T>
  T* get(size_t elems) {
    const size_t want = elems * sizeof(T);
    if (want > n) {
      std::free(p);
      n = (want + 63) & ~size_t(63);
      p = std::aligned_alloc(64, n);
      FRONTIER_CHECK(p != nullptr);
    }
    return static_cast<T*>(p);
  }
  ~AlignedBuf() { std::free(p); }
};

inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// The macro-kernel (BLIS's loops 2 and 1): C rows [ic, ic+mc) x the columns of B panels [q0, q1) (panel q covers
// columns jc + q*NR, at Bp + q*panel_stride elements) from packed A (mc, kc). Edge tiles go through a zero-padded
// tile. lower: tiles strictly above the diagonal are skipped.
void macro_kernel(const GemmKernel& bs, bool lower, int64_t kc, const char* Ap, int64_t mc, int64_t ic,
                  const char* Bp, int64_t panel_stride, int64_t q0, int64_t q1, int64_t jc, int64_t N, float alpha,
                  float beta_k, float* C, int64_t ldc) {
  const int MR = bs.MR, NR = bs.NR, eb = bs.elem_bytes();
  const int64_t kcp = round_up(kc, bs.kp());
  alignas(64) float tile[32 * 32];
  FRONTIER_CHECK(MR * NR <= 32 * 32);
  if (bs.begin) bs.begin();
  for (int64_t q = q0; q < q1; q++) {
    const int64_t j = jc + q * NR, nr = std::min<int64_t>(NR, N - j);
    for (int64_t ip = 0; ip < mc; ip += MR) {
      const int64_t mr = std::min<int64_t>(MR, mc - ip);
      if (lower && j >= ic + ip + mr) continue;  // strictly above the diagonal
      float* c = C + (ic + ip) * ldc + j;
      const char* a = Ap + ip * kcp * eb;
      const char* b = Bp + q * panel_stride * eb;
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

void scale_c(int64_t M, int64_t N, float beta, float* C, int64_t ldc) {  // C = beta * C
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) C[i * ldc + j] = beta == 0.f ? 0.f : beta * C[i * ldc + j];
}

// The depth block of a product: KC, or KC_ta when op(A) is transposed and the kernel sets one.
int64_t depth_block(const GemmKernel& bs, bool ta) { return ta && bs.KC_ta > 0 ? bs.KC_ta : bs.KC; }

// The driver. lower: only tiles with an element on or below the diagonal are computed (symmetric products).
void gemm_driver(const GemmKernel& bs, bool lower, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
                 const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  FRONTIER_CHECK(M >= 0 && N >= 0 && K >= 0 && ldc >= N);
  FRONTIER_CHECK(lda >= (ta ? M : K) && ldb >= (tb ? K : N));
  FRONTIER_CHECK(bs.KC % 2 == 0);
  if (M == 0 || N == 0) return;
  if (K == 0 || alpha == 0.f) return scale_c(M, N, beta, C, ldc);
  const int MR = bs.MR, NR = bs.NR, eb = bs.elem_bytes();
  const int64_t KC = depth_block(bs, ta), MC = bs.MC, NC = bs.NC;
  static thread_local AlignedBuf bbuf;
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
      const int64_t kc = std::min(KC, K - pc), kcp = round_up(kc, bs.kp());
      const float beta_k = pc == 0 ? beta : 1.f;
      char* Bp = bbuf.get<char>(static_cast<size_t>(n_panels) * NR * kcp * eb);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1 && n_panels > 1)
      for (int64_t q = 0; q < n_panels; q++)
        bs.pack_b(NR, tb, B, ldb, jc + q * NR, std::min<int64_t>(NR, nc - q * NR), pc, kc, Bp + q * NR * kcp * eb);
      const int64_t tasks = n_ic * groups;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1 && tasks > 1)
      for (int64_t t = 0; t < tasks; t++) {
        static thread_local AlignedBuf abuf;
        const int64_t ic = (t / groups) * MC, g = t % groups;
        const int64_t mc = std::min(MC, M - ic);
        const int64_t q0 = g * per_group, q1 = std::min(n_panels, q0 + per_group);
        if (q0 >= q1) continue;
        char* Ap = abuf.get<char>(static_cast<size_t>((mc + MR - 1) / MR) * MR * kcp * eb);
        bs.pack_a(MR, ta, A, lda, ic, mc, pc, kc, Ap);
        macro_kernel(bs, lower, kc, Ap, mc, ic, Bp, NR * kcp, q0, q1, jc, N, alpha, beta_k, C, ldc);
      }
    }
  }
}

// The slack after the last panel (gemm_packed_b_bytes): a kernel that pads depth to whole tiles (k_align, AMX's
// 32) reads a product's depth rounded up to a tile from wherever it starts in a panel, so a product over rows
// [k0, k0 + K') of a packed buffer reads up to a tile past k0 + K': the next rows of the panel (finite data, times
// A's zero depth padding: exact zeros), the next panel's first rows, or, after the last panel, this zeroed slack.
int64_t slack_bytes(const GemmKernel& bs) { return static_cast<int64_t>(bs.k_align) * bs.NR * bs.elem_bytes(); }

void pack_b_all(const GemmKernel& bs, bool tb, int64_t K, int64_t N, const float* B, int64_t ldb, char* Bp) {
  const int64_t Kpad = round_up(K, bs.kp());
  int64_t q = 0;
  for (; q * bs.NR < N; q++)
    bs.pack_b(bs.NR, tb, B, ldb, q * bs.NR, std::min<int64_t>(bs.NR, N - q * bs.NR), 0, K,
              Bp + q * bs.NR * Kpad * bs.elem_bytes());
  std::memset(Bp + q * bs.NR * Kpad * bs.elem_bytes(), 0, static_cast<size_t>(slack_bytes(bs)));
}

void prepacked(const GemmKernel& bs, bool ta, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
               int64_t lda, const char* Bp, int64_t Kp, float beta, float* C, int64_t ldc) {
  static thread_local AlignedBuf abuf;
  const int eb = bs.elem_bytes();
  const int64_t n_panels = (N + bs.NR - 1) / bs.NR, Kpad = round_up(Kp, bs.kp());
  const int64_t KC = depth_block(bs, ta);  // as gemm_driver's, so that both sum in the same order
  for (int64_t pc = 0; pc < K; pc += KC) {
    const int64_t kc = std::min<int64_t>(KC, K - pc), kcp = round_up(kc, bs.kp());
    const float beta_k = pc == 0 ? beta : 1.f;
    for (int64_t ic = 0; ic < M; ic += bs.MC) {
      const int64_t mc = std::min<int64_t>(bs.MC, M - ic);
      char* Ap = abuf.get<char>(static_cast<size_t>((mc + bs.MR - 1) / bs.MR) * bs.MR * kcp * eb);
      bs.pack_a(bs.MR, ta, A, lda, ic, mc, pc, kc, Ap);
      // Panel q's depth pc starts pc rows into it (pc is even, so on a pair boundary): NR elements per k.
      macro_kernel(bs, false, kc, Ap, mc, ic, Bp + pc * bs.NR * eb, bs.NR * Kpad, 0, n_panels, 0, N, alpha, beta_k,
                   C, ldc);
    }
  }
}

}  // namespace

const GemmKernel& gemm_kernel_for(Isa t, Precision p) {
  if (p == Precision::kBf16)
    return t == Isa::kAmx ? gemm_kernel_amx_bf16()
           : t == Isa::kAvx512Bf16 ? gemm_kernel_avx512bf16_bf16()
                                   : gemm_kernel_ref_bf16();
  switch (t) {
    case Isa::kRef: return gemm_kernel_ref_fp32();
    case Isa::kAvx2: return gemm_kernel_avx2_fp32();
    case Isa::kAvx512:
    case Isa::kAvx512Bf16:
    case Isa::kAmx: return gemm_kernel_avx512_fp32();
  }
  return gemm_kernel_ref_fp32();
}

const GemmKernel& gemm_kernel(Precision p) { return gemm_kernel_for(active_isa(), p); }

const GemmKernel& gemm_kernel_ref(Precision p) {
  return p == Precision::kBf16 ? gemm_kernel_ref_bf16() : gemm_kernel_ref_fp32();
}

void gemm_with(const GemmKernel& bs, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
               int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  gemm_driver(bs, false, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm(Precision p, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  gemm_driver(gemm_kernel(p), false, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm_symmetric(Precision p, bool ta, bool tb, int64_t M, int64_t K, float alpha, const float* A, int64_t lda,
                    const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  gemm_driver(gemm_kernel(p), true, ta, tb, M, M, K, alpha, A, lda, B, ldb, beta, C, ldc);
  // Mirror the lower triangle in 32 x 32 blocks, each copied by rows into a buffer in L1 and written out by rows
  // (row by row, each upper row read a column of C: a cache line per element, 7% of a 512 x 2048 Polar Express);
  // block rows in parallel (each writes only its own rows' upper part).
  constexpr int64_t kB = 32;
#pragma omp parallel for schedule(dynamic, 1) if (M >= 128 && !omp_in_parallel())
  for (int64_t i0 = 0; i0 < M; i0 += kB) {
    const int64_t ni = std::min(kB, M - i0);
    for (int64_t i = i0; i < i0 + ni; i++)  // the diagonal block
      for (int64_t j = i + 1; j < i0 + ni; j++) C[i * ldc + j] = C[j * ldc + i];
    for (int64_t j0 = i0 + kB; j0 < M; j0 += kB) {
      const int64_t nj = std::min(kB, M - j0);
      float t[kB][kB];  // the lower block, read by rows (contiguous), written out by columns from L1
      for (int64_t j = 0; j < nj; j++)
        for (int64_t i = 0; i < ni; i++) t[j][i] = C[(j0 + j) * ldc + i0 + i];
      for (int64_t i = 0; i < ni; i++)
        for (int64_t j = 0; j < nj; j++) C[(i0 + i) * ldc + j0 + j] = t[j][i];
    }
  }
}

int64_t gemm_packed_b_bytes(Precision p, int64_t K, int64_t N) {
  const GemmKernel& bs = gemm_kernel(p);
  return gemm_packed_b_offset(p, K, N) + slack_bytes(bs);
}

int64_t gemm_packed_b_offset(Precision p, int64_t K, int64_t j) {
  const GemmKernel& bs = gemm_kernel(p);
  return (j + bs.NR - 1) / bs.NR * bs.NR * round_up(K, bs.kp()) * bs.elem_bytes();
}

void gemm_pack_b(Precision p, bool tb, int64_t K, int64_t N, const float* B, int64_t ldb, void* Bp) {
  pack_b_all(gemm_kernel(p), tb, K, N, B, ldb, static_cast<char*>(Bp));
}

void gemm_prepacked_b(Precision p, bool ta, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                      int64_t lda, const void* Bp, int64_t Kp, float beta, float* C, int64_t ldc) {
  FRONTIER_CHECK(M >= 0 && N >= 0 && K >= 0 && K <= Kp && ldc >= N && lda >= (ta ? M : K));
  const GemmKernel& bs = gemm_kernel(p);
  if (M == 0 || N == 0) return;
  if (K == 0) return scale_c(M, N, beta, C, ldc);
  prepacked(bs, ta, M, N, K, alpha, A, lda, static_cast<const char*>(Bp), Kp, beta, C, ldc);
}

}  // namespace frontier

#include "kernels/attention.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <vector>

#include "kernels/gemm.h"
#include "kernels/vmath.h"
#include "util/status.h"

namespace frontier {

namespace {

// 64-byte aligned bytes for packed B panels (the microkernel loads them aligned).
struct AlignedBytes {
  void* p;
  explicit AlignedBytes(int64_t n) : p(std::aligned_alloc(64, static_cast<size_t>((n + 63) / 64 * 64))) {
    FRONTIER_CHECK(p != nullptr);
  }
  ~AlignedBytes() { std::free(p); }
  AlignedBytes(const AlignedBytes&) = delete;
  AlignedBytes& operator=(const AlignedBytes&) = delete;
  void* data() { return p; }
};

// Query rows per block (the scratch of scores is kBlock x its key range) and per strip (the unit of the masked
// triangles: products run strip by strip over the keys each strip sees, for_each_strip / for_each_key_strip).
// Strips are a multiple of the microkernel's MR (4, 6, 12: 24; AMX's 32: 32, a whole tile of rows, since a strip of
// 24 would run every tile through the edge path) and blocks a multiple of both. Measured here (Xeon, 2 threads,
// fp32, T 2048, W 512, best of 40 interleaved): blocks of 96 without strips 0.54 of the full layer's fwd+bwd time;
// 96 / 24 0.52; 192 / 24 0.50; 192 / 48 0.52. The full layer's own time did not move.
constexpr int64_t kBlock = 192;
int64_t strip_rows(Precision prec) {
  const int MR = gemm_kernel(prec).MR;
  return 24 % MR == 0 ? 24 : MR;
}

// P (bq, nk) <- softmax over the keys row r sees, of S (already scaled) whose column j is key s0 + j: query
// t = i0 + r sees keys [lo, t], lo = max(0, t - window) with a window, else 0; every other entry becomes 0.
// Writes lse[r] = max + log(sum) when lse_out is given, else uses lse_in (backward recompute).
void causal_softmax_rows(float* P, int64_t bq, int64_t nk, int64_t i0, int64_t s0, int64_t window, float* lse_out,
                         const float* lse_in) {
  for (int64_t r = 0; r < bq; r++) {
    float* p = P + r * nk;
    const int64_t t = i0 + r, lo = (window > 0 ? std::max<int64_t>(0, t - window) : 0) - s0;
    const int64_t hi = t + 1 - s0;  // visible columns [lo, hi)
    for (int64_t j = 0; j < lo; j++) p[j] = 0.f;
    float* pv = p + lo;
    const int64_t n = hi - lo;
    if (lse_in) {
      vmath::exp_shift_sum(pv, pv, -lse_in[r], n);
    } else {
      const float mx = vmath::max_value(pv, n);
      const float sum = vmath::exp_shift_sum(pv, pv, -mx, n), inv = 1.f / sum;
      for (int64_t j = 0; j < n; j++) pv[j] *= inv;
      lse_out[r] = mx + std::log(sum);
    }
    for (int64_t j = hi; j < nk; j++) p[j] = 0.f;
  }
}

// sum of a[i] * b[i] in 8 lanes (lane l takes i = l, l + 8, ...; added in order at the end), so that it vectorises:
// one running sum is a chain of dependent adds (the softmax backward's rowsum(dO * O), D long, once per row).
float row_dot(const float* a, const float* b, int64_t n) {
  float lane[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; l++) lane[l] += a[i + l] * b[i + l];
  float acc = 0;
  for (int l = 0; l < 8; l++) acc += lane[l];
  for (; i < n; i++) acc += a[i] * b[i];
  return acc;
}

// Where a query block's keys start in the packed K^T / V: the first key any row of [i0, ...) sees,
// max(0, i0 - window), rounded down to a multiple of align. Keys before it are never touched, so a layer with
// window W costs O(T (W + kBlock)) instead of O(T^2 / 2). align = lcm(16, NR) keeps both offsets into the packed
// buffers legal: whole NR-column panels of K^T (starting at s0 * Kpad elements, 64-byte aligned since s0 % 16 == 0)
// and s0 rows into every NR-wide panel of V (even, on a bf16 pair, and 64-byte aligned).
int64_t first_key(int64_t i0, int64_t window, int64_t align) {
  return window > 0 && i0 > window ? (i0 - window) / align * align : 0;
}

// The query block [i0, i0 + bq) in strips of `strip` rows, each with the keys it sees: f(r0, m, a0, ka) for rows
// [i0 + r0, i0 + r0 + m) and keys [a0, a0 + ka), a0 = first_key of the strip (>= s0, the block's). The products
// whose rows are queries (S = Q K^T, dP = dO V^T; P V and dS K over their keys) run strip by strip, so the masked
// triangles at both edges of a block's key range cost one strip each instead of the whole block; entries of a row
// outside its strip's keys are never written, and the softmax zeroes everything outside the row's own keys.
template <class F>
void for_each_strip(int64_t i0, int64_t bq, int64_t s0, int64_t window, int64_t align, int64_t strip, F&& f) {
  for (int64_t r0 = 0; r0 < bq; r0 += strip) {
    const int64_t m = std::min(strip, bq - r0), a0 = std::max(s0, first_key(i0 + r0, window, align));
    f(r0, m, a0, i0 + r0 + m - a0);
  }
}

// Byte offset of key s0 (s0 % NR == 0) in a buffer packed by gemm_pack_b with keys as its columns (K^T: D x T):
// s0 / NR whole panels.
int64_t packed_col_offset(Precision prec, int64_t D, int64_t s0) { return gemm_packed_b_offset(prec, D, s0); }

// Byte offset of key s0 (even) in a buffer packed with keys as its rows (V: T x D): s0 rows into the first panel.
// gemm_prepacked_b given that pointer and the full packed depth T keeps the panel stride, so every panel is read
// from its row s0 on (gemm.h: panel q at q * NR * Kpad elements, depth k at k * NR into it).
int64_t packed_row_offset(Precision prec, int64_t s0) {
  const GemmKernel& gk = gemm_kernel(prec);
  return s0 * gk.NR * gk.elem_bytes();
}

// The products whose rows are keys (dV += P^T dO, dK += dS^T Q) over the block's keys [s0, s0 + nk) in strips
// of strip_rows keys, each with the query rows that see one of them: R (bq rows of the block, D wide, row stride
// ldr) is packed once as B into Rp, then f(c0, m, r0, kr, Bp) for keys [s0 + c0, s0 + c0 + m) and block rows
// [r0, r0 + kr), Bp pointing at packed row r0 (r0 even, for bf16 pairs: the row before is a masked one, P = 0
// there).
template <class F>
void for_each_key_strip(int64_t i0, int64_t bq, int64_t s0, int64_t nk, int64_t window, Precision prec,
                        int64_t D, const float* R, int64_t ldr, void* Rp, F&& f) {
  const GemmKernel& gk = gemm_kernel(prec);
  const int64_t row_align = std::max<int64_t>(2, 64 / (gk.NR * gk.elem_bytes()));
  gemm_pack_b(prec, false, bq, D, R, ldr, Rp);
  const int64_t strip = strip_rows(prec);
  for (int64_t c0 = 0; c0 < nk; c0 += strip) {
    const int64_t m = std::min(strip, nk - c0), s = s0 + c0;  // keys [s, s + m)
    const int64_t lo = std::max(i0, s) - i0, hi = (window > 0 ? std::min(i0 + bq, s + m + window) : i0 + bq) - i0;
    if (hi <= lo) continue;
    const int64_t r0 = lo / row_align * row_align;
    f(c0, m, r0, hi - r0, static_cast<const char*>(Rp) + packed_row_offset(prec, r0));
  }
}

}  // namespace

void flash_attention_forward(float* out, float* lse, const float* q, const float* k, const float* v, int64_t B,
                             int64_t T, int64_t H, int64_t Hkv, int64_t D, Precision prec, float scale,
                             int64_t window) {
  FRONTIER_CHECK(H % Hkv == 0 && window >= 0);
  const int64_t g = H / Hkv, nblk = (T + kBlock - 1) / kBlock;
  const int64_t align = std::lcm<int64_t>(16, gemm_kernel(prec).NR), strip = strip_rows(prec);
  const int64_t max_nk = window > 0 ? std::min(T, window + kBlock + align) : T;  // widest key range of a block
  if (scale == 0.f) scale = 1.f / std::sqrt(static_cast<float>(D));
#pragma omp parallel
  {
    std::vector<float> S(kBlock * max_nk);
    AlignedBytes Kt(gemm_packed_b_bytes(prec, D, T)), Vp(gemm_packed_b_bytes(prec, T, D));
#pragma omp for schedule(dynamic, 1)
    for (int64_t bh = 0; bh < B * H; bh++) {  // a task: one (batch, head), all its query blocks
      const int64_t b = bh / H, h = bh % H, hk = h / g;
      const float* K = k + (b * T * Hkv + hk) * D;  // rows stride Hkv*D
      const float* V = v + (b * T * Hkv + hk) * D;
      // K^T and V packed once for every query block (a block's keys [s0, i1) are a range of panels / rows).
      gemm_pack_b(prec, true, D, T, K, Hkv * D, Kt.data());
      gemm_pack_b(prec, false, T, D, V, Hkv * D, Vp.data());
      const char *Ktp = static_cast<const char*>(Kt.data()), *Vpp = static_cast<const char*>(Vp.data());
      for (int64_t blk = 0; blk < nblk; blk++) {
        const int64_t i0 = blk * kBlock, i1 = std::min(T, i0 + kBlock), bq = i1 - i0;
        const int64_t s0 = first_key(i0, window, align), nk = i1 - s0;  // keys [s0, i1)
        const float* Q = q + ((b * T + i0) * H + h) * D;  // rows stride H*D
        // A strip at a time: its scores, their softmax and P V while its rows of S are in L1 / L2 (three passes
        // over the whole block's S streamed it from L3 at T 2048: 192 x 2048 floats).
        for_each_strip(i0, bq, s0, window, align, strip, [&](int64_t r0, int64_t m, int64_t a0, int64_t ka) {
          float* Sr = S.data() + r0 * nk;
          gemm_prepacked_b(prec, false, m, ka, D, scale, Q + r0 * H * D, H * D,
                           Ktp + packed_col_offset(prec, D, a0), D, 0.f, Sr + (a0 - s0), nk);
          causal_softmax_rows(Sr, m, nk, i0 + r0, s0, window, lse + (b * H + h) * T + i0 + r0, nullptr);
          gemm_prepacked_b(prec, false, m, D, ka, 1.f, Sr + (a0 - s0), nk, Vpp + packed_row_offset(prec, a0), T, 0.f,
                           out + ((b * T + i0 + r0) * H + h) * D, H * D);
        });
      }
    }
  }
}

void flash_attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* out, const float* lse,
                              const float* q, const float* k, const float* v, int64_t B, int64_t T, int64_t H,
                              int64_t Hkv, int64_t D, Precision prec, float scale, int64_t window) {
  FRONTIER_CHECK(H % Hkv == 0 && window >= 0);
  const int64_t g = H / Hkv, nblk = (T + kBlock - 1) / kBlock;
  const int64_t align = std::lcm<int64_t>(16, gemm_kernel(prec).NR), strip = strip_rows(prec);
  const int64_t max_nk = window > 0 ? std::min(T, window + kBlock + align) : T;  // widest key range of a block
  if (scale == 0.f) scale = 1.f / std::sqrt(static_cast<float>(D));
#pragma omp parallel
  {
    std::vector<float> P(kBlock * max_nk), dP(kBlock * max_nk);
    AlignedBytes Kt(gemm_packed_b_bytes(prec, D, T)), Vt(gemm_packed_b_bytes(prec, D, T)), Kp(gemm_packed_b_bytes(prec, T, D));
    AlignedBytes Rp(gemm_packed_b_bytes(prec, kBlock, D));  // a block's dO, then its Q, as B of dV / dK
#pragma omp for schedule(dynamic, 1)
    for (int64_t task = 0; task < B * Hkv; task++) {  // a task owns dk, dv of one (b, kv head)
      const int64_t b = task / Hkv, hk = task % Hkv;
      const float* K = k + (b * T * Hkv + hk) * D;
      const float* V = v + (b * T * Hkv + hk) * D;
      float* dK = dk + (b * T * Hkv + hk) * D;
      float* dV = dv + (b * T * Hkv + hk) * D;
      gemm_pack_b(prec, true, D, T, K, Hkv * D, Kt.data());   // S = Q K^T
      gemm_pack_b(prec, true, D, T, V, Hkv * D, Vt.data());   // dP = dO V^T
      gemm_pack_b(prec, false, T, D, K, Hkv * D, Kp.data());  // dQ = dS K
      const char *Ktp = static_cast<const char*>(Kt.data()), *Vtp = static_cast<const char*>(Vt.data());
      const char* Kpp = static_cast<const char*>(Kp.data());
      for (int64_t h = hk * g; h < (hk + 1) * g; h++)
        for (int64_t blk = 0; blk < nblk; blk++) {
          const int64_t i0 = blk * kBlock, i1 = std::min(T, i0 + kBlock), bq = i1 - i0;
          const int64_t s0 = first_key(i0, window, align), nk = i1 - s0;  // keys [s0, i1)
          const int64_t row0 = ((b * T + i0) * H + h) * D;  // rows stride H*D
          const float *Q = q + row0, *dO = dout + row0, *O = out + row0;
          float* dQ = dq + row0;
          // Query strips first, each while its rows are in L1 / L2: P (recomputed), dP = dO V^T, dS = P * (dP -
          // rowsum(dO * O)) * scale written over dP, dQ += dS K. Then key strips over the block: dV += P^T dO,
          // dK += dS^T Q. (Whole-block passes for each step streamed P and dP from L3 at T 2048.)
          for_each_strip(i0, bq, s0, window, align, strip, [&](int64_t r0, int64_t m, int64_t a0, int64_t ka) {
            float *Pr = P.data() + r0 * nk, *dSr = dP.data() + r0 * nk;
            gemm_prepacked_b(prec, false, m, ka, D, scale, Q + r0 * H * D, H * D,
                             Ktp + packed_col_offset(prec, D, a0), D, 0.f, Pr + (a0 - s0), nk);
            causal_softmax_rows(Pr, m, nk, i0 + r0, s0, window, nullptr, lse + (b * H + h) * T + i0 + r0);
            gemm_prepacked_b(prec, false, m, ka, D, 1.f, dO + r0 * H * D, H * D,
                             Vtp + packed_col_offset(prec, D, a0), D, 0.f, dSr + (a0 - s0), nk);  // dP
            for (int64_t r = r0; r < r0 + m; r++) {
              const float acc = row_dot(dO + r * H * D, O + r * H * D, D);
              const float* pr = P.data() + r * nk;
              float* ds = dP.data() + r * nk;
              const int64_t t = i0 + r, lo = (window > 0 ? std::max<int64_t>(0, t - window) : 0) - s0;
              const int64_t hi = t + 1 - s0;
              // dS is 0 outside [lo, hi), as P is: the key strips below read rows over their own key ranges.
              for (int64_t s = 0; s < lo; s++) ds[s] = 0.f;
              for (int64_t s = lo; s < hi; s++) ds[s] = pr[s] * (ds[s] - acc) * scale;
              for (int64_t s = hi; s < nk; s++) ds[s] = 0.f;
            }
            gemm_prepacked_b(prec, false, m, D, ka, 1.f, dSr + (a0 - s0), nk, Kpp + packed_row_offset(prec, a0), T,
                             1.f, dQ + r0 * H * D, H * D);  // dQ += dS K
          });
          for_each_key_strip(i0, bq, s0, nk, window, prec, D, dO, H * D, Rp.data(),
                             [&](int64_t c0, int64_t m, int64_t r0, int64_t kr, const void* Bp) {
                               gemm_prepacked_b(prec, true, m, D, kr, 1.f, P.data() + r0 * nk + c0, nk, Bp, bq, 1.f,
                                                dV + (s0 + c0) * Hkv * D, Hkv * D);  // dV += P^T dO
                             });
          for_each_key_strip(i0, bq, s0, nk, window, prec, D, Q, H * D, Rp.data(),
                             [&](int64_t c0, int64_t m, int64_t r0, int64_t kr, const void* Bp) {
                               gemm_prepacked_b(prec, true, m, D, kr, 1.f, dP.data() + r0 * nk + c0, nk, Bp, bq, 1.f,
                                                dK + (s0 + c0) * Hkv * D, Hkv * D);  // dK += dS^T Q
                             });
        }
    }
  }
}

}  // namespace frontier

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

// Query rows per block and per strip (the unit of the masked triangles: a tile that not every row of the block sees
// whole runs strip by strip over the keys each strip sees, for_each_key_strip likewise for the key side). Strips are
// a multiple of the microkernel's MR (4, 6, 12: 24; AMX's 32: 32, a whole tile of rows, since a strip of 24 would run
// every tile through the edge path) and blocks a multiple of both. Measured (Xeon, 2 threads, fp32, T 2048, W 512,
// best of 40 interleaved, before the key tiles): blocks of 96 without strips 0.54 of the full layer's fwd+bwd time;
// 96 / 24 0.52; 192 / 24 0.50; 192 / 48 0.52.
constexpr int64_t kBlock = 192;
// Keys per tile (rounded up to the packed layout's granule): the scores (kBlock x kKeyTile), the tile's packed keys
// and values and the block's output stay in L2 (512 KiB on the Zen 3) while the block's rows pass over it. Measured
// (Zen 3 AVX2, fp32, B 2, T 2048, H 4, D 128, 2 threads, best of 12-15 alternating with the untiled kernel): in a
// loaded hour of the host fwd+bwd 112 (untiled) / 109 (128 keys) / 129 (256) GFLOP/s; in a quiet one 145 / 146 (256)
// / 150 (512): the tiles keep the work off L3, which the host's other tenants share.
constexpr int64_t kKeyTile = 256;
static_assert(kKeyTile >= kBlock, "the diagonal tile, a block's own keys, must fit the scratch");

// The key tiles of the block [i0, i1): kt keys at a time up to the block's first row, then the block's own keys (the
// diagonal, run by strips) as one tile; returns the end of the tile that starts at key a.
int64_t tile_end(int64_t a, int64_t i0, int64_t i1, int64_t kt) { return a < i0 ? std::min(a + kt, i0) : i1; }

int64_t strip_rows(Precision prec) {
  const int MR = gemm_kernel(prec).MR;
  return 24 % MR == 0 ? 24 : MR;
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

// The key tiles of the block [i0, i1) whose keys start at s0 and, in each, the query rows that see its keys:
// rows(a, r0, m, c0, c1) for block rows [r0, r0 + m) against keys a + [c0, c1): every row at once when every row
// sees the whole tile, else a strip of rows at a time from the strip's first key; then tile(a, ka, whole).
template <class Rows, class Tile>
void for_each_tile(int64_t i0, int64_t i1, int64_t s0, int64_t window, int64_t align, int64_t kt, int64_t strip,
                   Rows&& rows, Tile&& tile) {
  const int64_t bq = i1 - i0;
  for (int64_t a = s0, e; a < i1; a = e) {
    e = tile_end(a, i0, i1, kt);
    const int64_t ka = e - a;
    const bool whole = a + ka - 1 <= i0 && (window == 0 || a >= i1 - 1 - window);
    for (int64_t r0 = 0; r0 < bq; r0 += whole ? bq : strip) {
      const int64_t m = whole ? bq : std::min(strip, bq - r0);
      const int64_t c0 = whole ? 0 : std::max(a, first_key(i0 + r0, window, align)) - a;
      const int64_t c1 = whole ? ka : std::min(a + ka, i0 + r0 + m) - a;
      if (c1 > c0) rows(a, r0, m, c0, c1);
    }
    tile(a, ka, whole);
  }
}

// The keys a + [v0, v1) query t sees among a + [c0, c1) (v0 == v1: none).
void visible_keys(int64_t t, int64_t window, int64_t a, int64_t c0, int64_t c1, int64_t* v0, int64_t* v1) {
  const int64_t lo = window > 0 ? std::max<int64_t>(0, t - window) : 0;
  *v0 = std::clamp(lo - a, c0, c1);
  *v1 = std::clamp(t + 1 - a, *v0, c1);
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

// The products whose rows are keys (dV += P^T dO, dK += dS^T Q) over the tile's keys [a, a + ka) in strips of
// `strip` keys, each with the query rows of the block [i0, i0 + bq) that see one of them: f(c, m, r0, kr) for keys
// [a + c, a + c + m) and block rows [r0, r0 + kr), r0 rounded down to an even row for bf16 pairs, its packed row
// granule (the row before is a masked one, P = 0 there). A strip of ka keys is the whole tile.
template <class F>
void for_each_key_strip(int64_t i0, int64_t bq, int64_t a, int64_t ka, int64_t window, Precision prec,
                        int64_t strip, F&& f) {
  const GemmKernel& gk = gemm_kernel(prec);
  const int64_t row_align = std::max<int64_t>(2, 64 / (gk.NR * gk.elem_bytes()));
  for (int64_t c = 0; c < ka; c += strip) {
    const int64_t m = std::min(strip, ka - c), s = a + c;  // keys [s, s + m)
    const int64_t lo = std::max(i0, s) - i0, hi = (window > 0 ? std::min(i0 + bq, s + m + window) : i0 + bq) - i0;
    if (hi <= lo) continue;
    const int64_t r0 = lo / row_align * row_align;
    f(c, m, r0, hi - r0);
  }
}

}  // namespace

void flash_attention_forward(float* out, float* lse, const float* q, const float* k, const float* v, int64_t B,
                             int64_t T, int64_t H, int64_t Hkv, int64_t D, Precision prec, float scale,
                             int64_t window) {
  FRONTIER_CHECK(H % Hkv == 0 && window >= 0);
  const int64_t g = H / Hkv, nblk = (T + kBlock - 1) / kBlock;
  const int64_t align = std::lcm<int64_t>(16, gemm_kernel(prec).NR), strip = strip_rows(prec);
  const int64_t kt = (kKeyTile + align - 1) / align * align;  // keys per tile, a whole number of packed granules
  if (scale == 0.f) scale = 1.f / std::sqrt(static_cast<float>(D));
#pragma omp parallel
  {
    std::vector<float> S(kBlock * kt), mrow(kBlock), lrow(kBlock);
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
        const int64_t s0 = first_key(i0, window, align);  // keys [s0, i1)
        const float* Q = q + ((b * T + i0) * H + h) * D;  // rows stride H*D
        float* O = out + ((b * T + i0) * H + h) * D;
        std::fill(mrow.begin(), mrow.end(), -INFINITY);
        std::fill(lrow.begin(), lrow.end(), 0.f);
        for (int64_t r = 0; r < bq; r++) std::fill_n(O + r * H * D, D, 0.f);
        // Rows [r0, r0 + m) of S hold scores against keys a + [c0, c1) of the tile (columns c0.. of S): each row's
        // keys outside its own range become 0, the rest exp(S - running max); the running sum and O follow.
        auto online_softmax = [&](int64_t r0, int64_t m, int64_t a, int64_t c0, int64_t c1) {
          for (int64_t r = r0; r < r0 + m; r++) {
            float* srow = S.data() + r * kt;
            int64_t v0, v1;
            visible_keys(i0 + r, window, a, c0, c1, &v0, &v1);
            std::fill(srow + c0, srow + v0, 0.f);
            std::fill(srow + v1, srow + c1, 0.f);
            if (v1 == v0) continue;
            const float mx = std::max(mrow[r], vmath::max_value(srow + v0, v1 - v0));
            if (mx > mrow[r] && lrow[r] > 0.f) {  // rescale what the earlier tiles gave this row
              const float corr = std::exp(mrow[r] - mx);
              lrow[r] *= corr;
              for (int64_t d = 0; d < D; d++) O[r * H * D + d] *= corr;
            }
            mrow[r] = mx;
            lrow[r] += vmath::exp_shift_sum(srow + v0, srow + v0, -mx, v1 - v0);
          }
        };
        // Key tiles (tile_end), each in cache while every row of the block uses it: S = Q K^T, the online softmax,
        // O += P V (FlashAttention's loop). A tile that every row sees whole runs as one product of bq rows; the
        // others (the diagonal, a window's left edge) a strip at a time over the keys the strip sees.
        for_each_tile(
            i0, i1, s0, window, align, kt, strip,
            [&](int64_t a, int64_t r0, int64_t m, int64_t c0, int64_t c1) {
              gemm_prepacked_b(prec, false, m, c1 - c0, D, scale, Q + r0 * H * D, H * D,
                               Ktp + packed_col_offset(prec, D, a + c0), D, 0.f, S.data() + r0 * kt + c0, kt);
              online_softmax(r0, m, a, c0, c1);
              gemm_prepacked_b(prec, false, m, D, c1 - c0, 1.f, S.data() + r0 * kt + c0, kt,
                               Vpp + packed_row_offset(prec, a + c0), T, 1.f, O + r0 * H * D, H * D);
            },
            [](int64_t, int64_t, bool) {});
        float* L = lse + (b * H + h) * T + i0;
        for (int64_t r = 0; r < bq; r++) {
          const float inv = 1.f / lrow[r];
          for (int64_t d = 0; d < D; d++) O[r * H * D + d] *= inv;
          L[r] = mrow[r] + std::log(lrow[r]);
        }
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
  const int64_t kt = (kKeyTile + align - 1) / align * align;
  if (scale == 0.f) scale = 1.f / std::sqrt(static_cast<float>(D));
#pragma omp parallel
  {
    std::vector<float> P(kBlock * kt), dS(kBlock * kt), Dr(kBlock);
    AlignedBytes Kt(gemm_packed_b_bytes(prec, D, T)), Vt(gemm_packed_b_bytes(prec, D, T)), Kp(gemm_packed_b_bytes(prec, T, D));
    // A block's dO and Q, packed once as B of dV += P^T dO and dK += dS^T Q.
    AlignedBytes dOp(gemm_packed_b_bytes(prec, kBlock, D)), Qp(gemm_packed_b_bytes(prec, kBlock, D));
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
          const int64_t s0 = first_key(i0, window, align);  // keys [s0, i1)
          const int64_t row0 = ((b * T + i0) * H + h) * D;  // rows stride H*D
          const float *Q = q + row0, *dO = dout + row0, *O = out + row0;
          const float* L = lse + (b * H + h) * T + i0;
          float* dQ = dq + row0;
          for (int64_t r = 0; r < bq; r++) Dr[r] = row_dot(dO + r * H * D, O + r * H * D, D);  // rowsum(dO * O)
          gemm_pack_b(prec, false, bq, D, dO, H * D, dOp.data());
          gemm_pack_b(prec, false, bq, D, Q, H * D, Qp.data());
          // Key tiles as in the forward, each in cache while the block's rows pass over it. Query side, a tile
          // whole or a strip at a time: P (recomputed from lse), dP = dO V^T, dS = P * (dP - rowsum(dO * O)) *
          // scale, dQ += dS K; each row's P and dS are 0 over the rest of the tile. Key side: dV += P^T dO, dK +=
          // dS^T Q over the tile whole, or a strip of keys at a time over the rows that see them.
          auto query_rows = [&](int64_t a, int64_t r0, int64_t m, int64_t c0, int64_t c1) {
            const int64_t ka = tile_end(a, i0, i1, kt) - a;
            float *Pr = P.data() + r0 * kt, *dSr = dS.data() + r0 * kt;
            gemm_prepacked_b(prec, false, m, c1 - c0, D, scale, Q + r0 * H * D, H * D,
                             Ktp + packed_col_offset(prec, D, a + c0), D, 0.f, Pr + c0, kt);
            gemm_prepacked_b(prec, false, m, c1 - c0, D, 1.f, dO + r0 * H * D, H * D,
                             Vtp + packed_col_offset(prec, D, a + c0), D, 0.f, dSr + c0, kt);  // dP
            for (int64_t r = r0; r < r0 + m; r++) {
              float *pr = P.data() + r * kt, *ds = dS.data() + r * kt;
              int64_t v0, v1;
              visible_keys(i0 + r, window, a, c0, c1, &v0, &v1);
              vmath::exp_shift_sum(pr + v0, pr + v0, -L[r], v1 - v0);
              const float acc = Dr[r];
              for (int64_t j = v0; j < v1; j++) ds[j] = pr[j] * (ds[j] - acc) * scale;
              std::fill(pr, pr + v0, 0.f), std::fill(ds, ds + v0, 0.f);
              std::fill(pr + v1, pr + ka, 0.f), std::fill(ds + v1, ds + ka, 0.f);
            }
            gemm_prepacked_b(prec, false, m, D, c1 - c0, 1.f, dSr + c0, kt, Kpp + packed_row_offset(prec, a + c0),
                             T, 1.f, dQ + r0 * H * D, H * D);  // dQ += dS K
          };
          for_each_tile(i0, i1, s0, window, align, kt, strip, query_rows, [&](int64_t a, int64_t ka, bool whole) {
            for_each_key_strip(i0, bq, a, ka, window, prec, whole ? ka : strip,
                               [&](int64_t c, int64_t m, int64_t r0, int64_t kr) {
                                 gemm_prepacked_b(prec, true, m, D, kr, 1.f, P.data() + r0 * kt + c, kt,
                                                  static_cast<const char*>(dOp.data()) + packed_row_offset(prec, r0),
                                                  bq, 1.f, dV + (a + c) * Hkv * D, Hkv * D);  // dV += P^T dO
                                 gemm_prepacked_b(prec, true, m, D, kr, 1.f, dS.data() + r0 * kt + c, kt,
                                                  static_cast<const char*>(Qp.data()) + packed_row_offset(prec, r0),
                                                  bq, 1.f, dK + (a + c) * Hkv * D, Hkv * D);  // dK += dS^T Q
                               });
          });
        }
    }
  }
}

}  // namespace frontier

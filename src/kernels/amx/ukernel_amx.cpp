// AMX bf16 microkernel, 32 x 32: the tile unit's TDPBF16PS multiplies a 16 x 32 bf16 tile of A by a 32 x 16 bf16
// tile of B (in k pairs, VNNI layout) into a 16 x 16 fp32 tile: 16 K FLOPs per instruction, 256 times vdpbf16ps's.
// The 8 tile registers hold the C tile as 2 x 2 accumulators (tmm0-3), two A tiles (tmm4-5) and two B tiles
// (tmm6-7); per 32 of depth: 4 tile loads, 4 products.
//
// Layouts (gemm.h's contract with kp = 32, GemmKernel::k_align):
//   A micro-panel: 32 rows x kcp bf16, row-major (row i's depth contiguous: a tile row is 64 bytes of one row);
//   B micro-panel: kcp / 2 pair-rows of 32 columns x 2 bf16 (the avx512bf16 tier's layout), so tile row p holds
//     pair p of 16 columns: a B tile is 16 pair-rows 128 bytes apart;
//   kcp = kc rounded up to 32, padding zero (the tail of a product multiplies zeros).
// Numerics: exact bf16 products summed in fp32, as vdpbf16ps, in another order inside each 32-deep chunk (the
// hardware's); packing rounds fp32 to bf16 to nearest even, as every bf16 tier. Results do not depend on threads.
//
// The tile configuration is per thread and other code (oneDNN, in `frontier bench`) may load its own in the same
// OpenMP workers, so the driver loads ours (GemmKernel::begin) at the start of every macro-kernel, before its run
// of microkernel calls: LDTILECFG per call measured 1,760 against 2,430 GFLOP/s for a 32 x 32 x 256 tile in L1.
// Compiled with -mamx-tile -mamx-bf16 and the avx512bf16 tier's flags; called only where the CPU has AMX and the
// kernel granted this process the tile state (kernels/isa.cpp).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/amx/tile_config.h"
#include "kernels/gemm_kernels.h"
#include "kernels/gemm_pack.h"

namespace frontier::tier_amx {

namespace {

constexpr int kMR = 32, kNR = 32, kDepth = 32;  // k per tile product

void ukernel_amx_32x32(int64_t kc, const void* ap, const void* bp, float* c, int64_t ldc, float alpha, float beta) {
  const int64_t kcp = (kc + kDepth - 1) / kDepth * kDepth;
  const char* a = static_cast<const char*>(ap);
  const char* b = static_cast<const char*>(bp);
  // alpha 1 and beta 0 or 1 (every product of the model: a forward, a gradient accumulated over depth blocks and
  // micro-batches): C itself is the accumulator, loaded into the tiles or zeroed, and stored back from them.
  const bool direct = alpha == 1.f && (beta == 0.f || beta == 1.f);
  if (direct && beta == 1.f) {
    _tile_loadd(0, c, ldc * 4);
    _tile_loadd(1, c + 16, ldc * 4);
    _tile_loadd(2, c + 16 * ldc, ldc * 4);
    _tile_loadd(3, c + 16 * ldc + 16, ldc * 4);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  const int64_t a_stride = kcp * 2, b_stride = kNR * 4;
  for (int64_t k = 0; k < kcp; k += kDepth) {
    _tile_loadd(4, a + k * 2, a_stride);                   // rows 0-15, depth [k, k+32)
    _tile_loadd(5, a + 16 * a_stride + k * 2, a_stride);   // rows 16-31
    _tile_loadd(6, b + (k / 2) * b_stride, b_stride);      // pairs [k/2, k/2+16), columns 0-15
    _tile_loadd(7, b + (k / 2) * b_stride + 64, b_stride);  // columns 16-31
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  if (direct) {
    _tile_stored(0, c, ldc * 4);
    _tile_stored(1, c + 16, ldc * 4);
    _tile_stored(2, c + 16 * ldc, ldc * 4);
    _tile_stored(3, c + 16 * ldc + 16, ldc * 4);
    return;
  }
  alignas(64) float acc[kMR * kNR];
  _tile_stored(0, acc, kNR * 4);
  _tile_stored(1, acc + 16, kNR * 4);
  _tile_stored(2, acc + 16 * kNR, kNR * 4);
  _tile_stored(3, acc + 16 * kNR + 16, kNR * 4);
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
  for (int i = 0; i < kMR; i++)
    for (int h = 0; h < 2; h++) {
      float* q = c + i * ldc + 16 * h;
      const __m512 x = _mm512_load_ps(acc + i * kNR + 16 * h);
      if (beta == 0.f) _mm512_storeu_ps(q, _mm512_mul_ps(va, x));
      else _mm512_storeu_ps(q, _mm512_fmadd_ps(va, x, _mm512_mul_ps(vb, _mm512_loadu_ps(q))));
    }
}

// 32 consecutive floats -> 32 bf16 in order (vcvtne2ps2bf16: nearest even, as pack_to_bf16).
inline __m512i bf16_run(const float* src) {
  return (__m512i)_mm512_cvtne2ps_pbh(_mm512_loadu_ps(src + 16), _mm512_loadu_ps(src));
}
inline __m512i bf16_run_masked(const float* src, int64_t n) {  // n < 32 floats, the rest zero
  const __mmask16 lo = n >= 16 ? 0xffff : static_cast<__mmask16>((1u << n) - 1);
  const __mmask16 hi = n <= 16 ? 0 : static_cast<__mmask16>((1u << (n - 16)) - 1);
  return (__m512i)_mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(hi, src + 16), _mm512_maskz_loadu_ps(lo, src));
}
// Two rows k, k+1 of 16 floats -> 16 pair words (row k in the low half of each word).
inline __m512i pairs_from_rows(__m512 r0, __m512 r1) {
  const __m512i e = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(r0));
  const __m512i o = _mm512_cvtepu16_epi32((__m256i)_mm512_cvtneps_pbh(r1));
  return _mm512_or_si512(e, _mm512_slli_epi32(o, 16));
}

// 16 x 16 32-bit transpose in registers: r[p] lane i -> r[i] lane p (unpacks within 128-bit lanes, then two rounds
// of 128-bit lane shuffles).
inline void transpose_16x16(__m512i r[16]) {
  __m512i t[16], u[16];
  for (int j = 0; j < 16; j += 2) {
    t[j] = _mm512_unpacklo_epi32(r[j], r[j + 1]);
    t[j + 1] = _mm512_unpackhi_epi32(r[j], r[j + 1]);
  }
  for (int j = 0; j < 16; j += 4) {  // u[j + q], lane L: rows j..j+3 of column 4L + q
    u[j] = _mm512_unpacklo_epi64(t[j], t[j + 2]);
    u[j + 1] = _mm512_unpackhi_epi64(t[j], t[j + 2]);
    u[j + 2] = _mm512_unpacklo_epi64(t[j + 1], t[j + 3]);
    u[j + 3] = _mm512_unpackhi_epi64(t[j + 1], t[j + 3]);
  }
  for (int q = 0; q < 4; q++) {
    const __m512i v02 = _mm512_shuffle_i32x4(u[q], u[4 + q], 0x88), v13 = _mm512_shuffle_i32x4(u[q], u[4 + q], 0xdd);
    const __m512i w02 = _mm512_shuffle_i32x4(u[8 + q], u[12 + q], 0x88),
                  w13 = _mm512_shuffle_i32x4(u[8 + q], u[12 + q], 0xdd);
    r[q] = _mm512_shuffle_i32x4(v02, w02, 0x88);
    r[8 + q] = _mm512_shuffle_i32x4(v02, w02, 0xdd);
    r[4 + q] = _mm512_shuffle_i32x4(v13, w13, 0x88);
    r[12 + q] = _mm512_shuffle_i32x4(v13, w13, 0xdd);
  }
}

// A: rows [i0, i0+mc) x depth [p0, p0+kc) of op(A) into 32-row panels, each row's kcp bf16 contiguous.
// Not transposed: a row's depth is a run of floats. Transposed (op(A) = A^T, depth along A's rows): two rows of
// A (k, k+1) give the pair words of 16 output rows, transposed 16 x 16 in registers.
void pack_a_amx(int MR, bool trans, const float* A, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
                void* out) {
  const int64_t kcp = (kc + kDepth - 1) / kDepth * kDepth;
  uint16_t* base = static_cast<uint16_t*>(out);
  for (int64_t ip = 0; ip < mc; ip += MR) {
    const int64_t mr = std::min<int64_t>(MR, mc - ip);
    uint16_t* dst = base + ip * kcp;  // panel ip / MR: MR rows x kcp
    if (!trans) {
      for (int64_t i = 0; i < mr; i++) {
        const float* src = A + (i0 + ip + i) * lda + p0;
        uint16_t* d = dst + i * kcp;
        int64_t k = 0;
        for (; k + 32 <= kc; k += 32) _mm512_storeu_si512(d + k, bf16_run(src + k));
        if (k < kc) _mm512_storeu_si512(d + k, bf16_run_masked(src + k, kc - k)), k += 32;
        for (; k < kcp; k += 32) _mm512_storeu_si512(d + k, _mm512_setzero_si512());
      }
    } else {
      // 16 rows x 32 of depth at a time: the pair words of 16 k pairs (one vector per pair, a lane per row),
      // transposed in registers so each row's 16 words are one 64-byte store (a scatter per pair measured 2-3x
      // slower on the weight-gradient products, whose A is transposed). Depth past kc reads as zero: padding.
      for (int64_t h = 0; h < mr; h += 16) {
        const int64_t n = std::min<int64_t>(16, mr - h);
        const __mmask16 m = n == 16 ? 0xffff : static_cast<__mmask16>((1u << n) - 1);
        for (int64_t k = 0; k < kcp; k += 32) {
          __m512i r[16];
          for (int p = 0; p < 16; p++) {
            const int64_t k0 = k + 2 * p;
            const float* r0 = A + (p0 + k0) * lda + i0 + ip + h;
            const __m512 v0 = k0 < kc ? _mm512_maskz_loadu_ps(m, r0) : _mm512_setzero_ps();
            const __m512 v1 = k0 + 1 < kc ? _mm512_maskz_loadu_ps(m, r0 + lda) : _mm512_setzero_ps();
            r[p] = pairs_from_rows(v0, v1);
          }
          transpose_16x16(r);
          for (int64_t i = 0; i < n; i++) _mm512_storeu_si512(dst + (h + i) * kcp + k, r[i]);
        }
      }
    }
    for (int64_t i = mr; i < MR; i++) std::memset(dst + i * kcp, 0, kcp * 2);  // padding rows
  }
}

// B: depth [p0, p0+kc) x columns [j0, j0+nr) of op(B) into one 32-column panel of pair rows, kcp / 2 of them.
void pack_b_amx(int NR, bool trans, const float* B, int64_t ldb, int64_t j0, int64_t nr, int64_t p0, int64_t kc,
                void* out) {
  const int64_t kcp = (kc + kDepth - 1) / kDepth * kDepth;
  uint32_t* dst = static_cast<uint32_t*>(out);
  int64_t done = 0;  // pair rows written
  if (NR == kNR && nr == NR && !trans) {
    for (int64_t p = 0; p < kc / 2; p++) {
      const float* r0 = B + (p0 + 2 * p) * ldb + j0;
      _mm512_storeu_si512(dst + p * kNR, pairs_from_rows(_mm512_loadu_ps(r0), _mm512_loadu_ps(r0 + ldb)));
      _mm512_storeu_si512(dst + p * kNR + 16,
                          pairs_from_rows(_mm512_loadu_ps(r0 + 16), _mm512_loadu_ps(r0 + ldb + 16)));
    }
    done = kc / 2;
    if (kc & 1) {  // the last row alone: its pair partner is zero
      const float* r0 = B + (p0 + kc - 1) * ldb + j0;
      _mm512_storeu_si512(dst + done * kNR, pairs_from_rows(_mm512_loadu_ps(r0), _mm512_setzero_ps()));
      _mm512_storeu_si512(dst + done * kNR + 16, pairs_from_rows(_mm512_loadu_ps(r0 + 16), _mm512_setzero_ps()));
      done++;
    }
  } else if (NR == kNR && nr == NR) {  // transposed: column j's depth is a run along B's row j
    // 16 columns x 32 of depth at a time: each column's 16 pair words (a vector), transposed in registers so that
    // each pair row's 16 words are one 64-byte store (a word at a time, this packing was a fifth of a 512 x 2048
    // Polar Express, whose X X^T reads X as a transposed B).
    const int64_t kfull = kc / 32 * 32;
    for (int h = 0; h < kNR; h += 16) {
      for (int64_t k = 0; k < kfull; k += 32) {
        __m512i r[16];
        for (int j = 0; j < 16; j++) r[j] = bf16_run(B + (j0 + h + j) * ldb + p0 + k);
        transpose_16x16(r);
        for (int q = 0; q < 16; q++) _mm512_storeu_si512(dst + (k / 2 + q) * kNR + h, r[q]);
      }
    }
    for (int j = 0; j < kNR; j++) {
      const float* src = B + (j0 + j) * ldb + p0;
      for (int64_t k = kfull; k < kc; k += 2) {
        const uint32_t lo = pack_to_bf16(src[k]), hi = k + 1 < kc ? pack_to_bf16(src[k + 1]) : 0;
        dst[(k / 2) * kNR + j] = lo | (hi << 16);
      }
    }
    done = (kc + 1) / 2;
  } else {
    pack_b<uint16_t>(NR, trans, B, ldb, j0, nr, p0, kc, out);  // edges: the portable loops (pairs, zero-padded)
    done = (kc + 1) / 2;
  }
  std::memset(dst + done * NR, 0, (kcp / 2 - done) * NR * 4);  // depth padding to a whole tile
}

void begin_amx() { _tile_loadconfig(&tile_config()); }

}  // namespace

}  // namespace frontier::tier_amx

namespace frontier {

const GemmKernel& gemm_kernel_amx_bf16() {
  // Block sizes measured on the Xeon of 2026-12-07 (one thread, best of 7, every model and Polar Express shape at
  // depth 8, KC 128-1024 x MC 32-128 x NC 512-2048): MC 32 (one A micro-panel per task, kept in L1 while the B
  // micro-panels stream from L2) and NC 1024 (a packed B block of KC x NC x 2 B = 1 MiB, half of L2; at 2048 it
  // did not stay there for a short M) over the 64 / 2048 of before: +11-44% on the forward and data-gradient
  // products (4096 x 2048 x 512: 794 -> 1,145 GFLOP/s; Polar Express's 512 x 2048 x 512: 685 -> 857); KC 512 over
  // 768 for those. The weight gradients (op(A) transposed, depth 4096) take KC 256: 617-713 -> 783-820 against
  // 641-786 at 512. On two threads, the same shapes, two rounds: +3-28% on every one (docs/performance.md). KC and
  // KC_ta are multiples of the tile depth (32).
  static const GemmKernel k{"amx 32x32", Precision::kBf16, tier_amx::ukernel_amx_32x32, tier_amx::kMR, tier_amx::kNR,
                            512, 32, 1024, tier_amx::pack_a_amx, tier_amx::pack_b_amx, tier_amx::kDepth,
                            tier_amx::begin_amx, 256};
  return k;
}

}  // namespace frontier

// Causal attention on the fast GEMM, tiled over query blocks (flash-attention style): no (T, T) matrix is kept.
// Forward stores out and the per-row log-sum-exp; backward recomputes each block's probabilities from them.
//
//   q (B, T, H, D); k, v (B, T, Hkv, D), H % Hkv == 0 (query head h reads kv head h / (H / Hkv)).
//   flash_attention_forward(out, lse, q, k, v, B, T, H, Hkv, D, prec);     // out (B, T, H, D), lse (B, H, T)
//   flash_attention_backward(dq, dk, dv, dout, out, lse, q, k, v, B, T, H, Hkv, D, prec);   // accumulates (+=)
//   flash_attention_forward(out, lse, q, k, v, B, T, H, Hkv, D, prec, 0.f, 512);   // sliding window of 512
//
// Scores are scale * q.k, scale = 0 meaning 1/sqrt(D). window W > 0: query t sees keys max(0, t - W) <= s <= t
// (FlashAttention's window_size=(W, 0), causal), W = 0 or W >= T the full causal attention (bit-identical to
// leaving it out). Backward takes the forward's scale and window.
//
// prec = kBf16 runs the five products (Q K^T, P V; backward also dO V^T, dS K, P^T dO, dS^T Q) as bf16 GEMMs;
// softmax, the log-sum-exp and dS = P (dP - rowsum(dO O)) stay fp32 (as PyTorch's bf16 autocast keeps softmax).
//
// A block of kBlock query rows [i0, i1) attends to keys [s0, i1) a key tile at a time (FlashAttention's loop): the
// tile's scores S = scale Q K^T (kBlock x kKeyTile) in a per-thread scratch, an online softmax (each row's running
// max and sum; what earlier tiles added to its output rescaled when the max grows), O += P V; so FLOPs are about
// half of the full T x T product, all on the GEMM microkernel, and the scores, the tile's keys and the block's
// output stay in L2. The backward walks the same tiles: P recomputed from the log-sum-exp, dP = dO V^T, dS, dQ +=
// dS K, dV += P^T dO, dK += dS^T Q, the tile's dK and dV accumulated in place. K^T, V (and V^T, K in backward) are
// packed once per task into the GEMM's B layout and reused by every query block (gemm_prepacked_b, from the panel
// or row of the tile's first key): re-packing them per block cost about a third of the time. Work splits over
// (batch, head) forward and (batch, kv head) backward, so every output element is written by one task in a fixed
// order: results do not depend on the thread count. Matches ref::attention_* (reference/attention.h).
//
// The masked triangles are skipped a strip at a time: a tile that every row of the block sees whole runs as one
// product of the block's rows; the others (the diagonal, a window's left edge) run the products whose rows are
// queries (Q K^T, P V, dO V^T, dS K) over strips of query rows (24; 32, a tile's rows, at the amx tier), each from
// its own first key, and those whose rows are keys (P^T dO, dS^T Q) over strips of as many keys, each over the query
// rows that see them. A strip's first key is max(0, i - W) rounded down to the packed layout's granule (16 keys,
// or NR if larger), so a layer with window W costs O(T (W + strip) D), not O(T^2 D). Measured (Xeon, 2 cores,
// fp32, B 1, T 2048, H 4, D 128, best of 40, a loaded machine, before the key tiles): W = 512 takes 0.50 of the full
// layer's fwd+bwd time (0.54 with 96-row blocks and no strips) for 0.44 of its FLOPs; packing all T keys (5 T D per
// head) does not shrink with W.
#pragma once

#include <cstdint>

#include "kernels/precision.h"

namespace frontier {

void flash_attention_forward(float* out, float* lse, const float* q, const float* k, const float* v, int64_t B,
                             int64_t T, int64_t H, int64_t Hkv, int64_t D, Precision prec = Precision::kFp32,
                             float scale = 0.f, int64_t window = 0);

void flash_attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* out, const float* lse,
                              const float* q, const float* k, const float* v, int64_t B, int64_t T, int64_t H,
                              int64_t Hkv, int64_t D, Precision prec = Precision::kFp32, float scale = 0.f,
                              int64_t window = 0);

}  // namespace frontier

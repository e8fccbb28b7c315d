// Causal attention on the fast GEMM, tiled over query blocks (flash-attention style): no (T, T) matrix is kept.
// Forward stores out and the per-row log-sum-exp; backward recomputes each block's probabilities from them.
//
//   q (B, T, H, D); k, v (B, T, Hkv, D), H % Hkv == 0 (query head h reads kv head h / (H / Hkv)); scale 1/sqrt(D).
//   flash_attention_forward(out, lse, q, k, v, B, T, H, Hkv, D, prec);     // out (B, T, H, D), lse (B, H, T)
//   flash_attention_backward(dq, dk, dv, dout, out, lse, q, k, v, B, T, H, Hkv, D, prec);   // accumulates (+=)
//
// prec = kBf16 runs the five products (Q K^T, P V; backward also dO V^T, dS K, P^T dO, dS^T Q) as bf16 GEMMs;
// softmax, the log-sum-exp and dS = P (dP - rowsum(dO O)) stay fp32 (as PyTorch's bf16 autocast keeps softmax).
//
// A block of kBlock query rows [i0, i1) attends to keys [0, i1): S = scale Q K^T (kBlock x i1) in a per-thread
// scratch, masked softmax, O = P V; so FLOPs are about half of the full T x T product, all on the GEMM microkernel.
// K^T, V (and V^T, K in backward) are packed once per task into the GEMM's B layout and reused by every query
// block (gemm_prepacked_b): re-packing them per block cost about a third of the time. Work splits over
// (batch, head) forward and (batch, kv head) backward, so every output element is written
// by one task in a fixed order: results do not depend on the thread count. Matches ref::attention_* (ops/attention.h).
#pragma once

#include <cstdint>

#include "kernels/precision.h"

namespace frontier {

void flash_attention_forward(float* out, float* lse, const float* q, const float* k, const float* v, int64_t B,
                             int64_t T, int64_t H, int64_t Hkv, int64_t D, Precision prec = Precision::kFp32);

void flash_attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* out, const float* lse,
                              const float* q, const float* k, const float* v, int64_t B, int64_t T, int64_t H,
                              int64_t Hkv, int64_t D, Precision prec = Precision::kFp32);

}  // namespace frontier

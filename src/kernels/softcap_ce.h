// Logit softcap + cross-entropy, fast and fused: one pass per row computes c = cap * tanh(z / cap) (kept for
// backward, so tanh is never recomputed) and the log-sum-exp; backward needs one exp per logit. Since |c| <= cap,
// exp(c - cap) cannot overflow, so no max pass is needed. Rows split over threads; each row in a fixed order.
// Same contract as ref::softcap_ce_* (reference/cross_entropy.h): targets < 0 are ignored, the loss is the mean over
// counted rows (summed in double, in row order), per-row losses (nats) go to `losses` if given.
//
//   std::vector<float> capped(N * V), lse(N);
//   float loss = softcap_ce_forward(losses, capped.data(), lse.data(), z, targets, N, V, 15.f);
//   softcap_ce_backward(dz, 1.f, capped.data(), lse.data(), targets, N, V, 15.f);   // dz += dloss * dL/dz
#pragma once

#include <cstdint>

#include "kernels/precision.h"

namespace frontier {

float softcap_ce_forward(float* losses, float* capped, float* lse, const float* z, const int32_t* targets,
                         int64_t N, int64_t V, float cap);

// accumulate false: dz is written, not added to (every element, ignored rows' zeros included).
void softcap_ce_backward(float* dz, float dloss, const float* capped, const float* lse, const int32_t* targets,
                         int64_t N, int64_t V, float cap, bool accumulate = true);

// The lm_head GEMM fused with the softcap cross-entropy, chunked over the vocabulary: logits = x @ W^T are made
// vc columns at a time (N x vc floats live, never N x V), softcapped, and summed as exp(c - cap) (c <= cap, so no
// running max is needed); backward recomputes each chunk's logits (one more lm_head forward GEMM, +50% of the
// lm_head's FLOPs) and accumulates dx += dz W_chunk and dW_chunk += dz^T x. x (N, C), W (V, C); lse (N) saved.
// prec: the precision of the three GEMMs. Same contract as softcap_ce_forward / _backward otherwise (mean over targets >= 0; backward accumulates).
float lm_head_ce_forward(float* losses, float* lse, const float* x, const float* W, const int32_t* targets, int64_t N,
                         int64_t C, int64_t V, float cap, int64_t vchunk, Precision prec = Precision::kFp32);
void lm_head_ce_backward(float* dx, float* dW, float dloss, const float* lse, const float* x, const float* W,
                         const int32_t* targets, int64_t N, int64_t C, int64_t V, float cap, int64_t vchunk, Precision prec = Precision::kFp32);

}  // namespace frontier

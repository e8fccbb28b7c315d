// Fast kernels of the embedding and loss variants (autograd/embed_ops.cpp), with the contracts of their
// reference kernels (reference/ngram.h, reference/softcap_ce_multi.h). Multi-threaded and deterministic: every output
// element is written by one thread in a fixed order, so results do not depend on the thread count (and no
// float atomics).
//
//   NgramIndex ix = ngram_index(idx, B, T, 2, buckets);  // idx (B, T); once per batch, kept for backward
//   ngram_embedding_forward(out, table, ix, C);           // out (B*T, C) from table (buckets, C)
//   ngram_embedding_backward(dtable, dout, ix, C);        // dtable (buckets, C) += scatter of dout (B*T, C)
//
//   std::vector<float> capped(N * V), lse(N);
//   const int32_t* tg[2] = {next_token, token_after};         // (N,) each, -1 = ignore
//   float w[2] = {1.f, 0.5f};
//   float loss = softcap_ce_multi_forward(nullptr, capped.data(), lse.data(), z, tg, w, 2, N, V, 15.f);
//   softcap_ce_multi_backward(dz, 1.f, capped.data(), lse.data(), tg, w, 2, N, V, 15.f);   // dz += dL/dz
#pragma once

#include <cstdint>
#include <vector>

namespace frontier {

// The positions of a batch grouped by bucket. The backward's scatter-add is a gather per bucket: one thread
// owns a run of positions sharing a bucket (and a block of columns) and sums them in position order, which is
// the reference's order, so the fast gradient equals ref::ngram_embedding_backward exactly. Building it costs
// one sort of the B*T positions (a millisecond at B*T = 32k), once per forward.
struct NgramIndex {
  int64_t rows = 0;             // B*T
  std::vector<int64_t> bucket;  // (B*T,) bucket of each position, -1 where t < n-1 (a zero row)
  std::vector<int64_t> order;   // (M,) the positions with a bucket, sorted by (bucket, position)
  std::vector<int64_t> run;     // (R+1,) order[run[r] .. run[r+1]) share one bucket
};

// idx (B, Tn) token ids; 1 <= n <= kNgramMax (reference/ngram.h), buckets >= 1.
NgramIndex ngram_index(const int32_t* idx, int64_t B, int64_t Tn, int n, int64_t buckets);
void ngram_embedding_forward(float* out, const float* table, const NgramIndex& ix, int64_t C);
void ngram_embedding_backward(float* dtable, const float* dout, const NgramIndex& ix, int64_t C);

// Multi-token prediction cross-entropy on shared logits z (N, V), as ref::softcap_ce_multi_*: targets[k] (N,)
// for k < K, -1 = ignore; weights (K,). One pass per row computes the capped logits and the log-sum-exp,
// shared by all K targets; backward needs one exp per logit whatever K is. cap > 0: capped (N, V) receives c
// = cap*tanh(z/cap) and backward takes it as c (as softcap_ce_forward: |c| <= cap, so no max pass). cap == 0:
// no softcap; capped is not written (may be null) and backward takes z itself as c. lse (N) is saved for
// backward. Per-row losses of k = 0 (nats, 0 for ignored rows) go to `losses` if given. With K = 1 and weight
// 1 the loss and gradient are bit-identical to softcap_ce_forward / _backward (kernels/softcap_ce.h), which
// do not take cap == 0.
float softcap_ce_multi_forward(float* losses, float* capped, float* lse, const float* z,
                               const int32_t* const* targets, const float* weights, int K, int64_t N,
                               int64_t V, float cap);
void softcap_ce_multi_backward(float* dz, float dloss, const float* c, const float* lse,
                               const int32_t* const* targets, const float* weights, int K, int64_t N,
                               int64_t V, float cap);

}  // namespace frontier

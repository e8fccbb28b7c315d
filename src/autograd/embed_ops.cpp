// Autograd ops of the embedding and loss variants (architecture experiments): hashed n-gram embeddings and
// the multi-token prediction loss. Fast kernels in kernels/embed_kernels.h; ref:: in reference/ngram.h and
// reference/softcap_ce_multi.h stays the ground truth in the tests (tests/embed_ops_test.cpp).
#include <memory>
#include <vector>

#include "autograd/tape.h"
#include "kernels/embed_kernels.h"
#include "reference/ngram.h"
#include "util/status.h"
#include "util/trace.h"

namespace frontier {

namespace {
constexpr double kF = 4.0;  // bytes per float, for the profile scopes' compulsory traffic (as ops.cpp)
}  // namespace

// The bucket index (positions sorted by bucket) is built once here and kept for backward's scatter-add.
Var ngram_embedding(Tape& t, const int32_t* idx, int64_t B, int64_t T, int n, int64_t buckets, Var table) {
  FRONTIER_CHECK(t.shape(table).size() == 2 && t.shape(table)[0] == buckets);
  FRONTIER_CHECK(n >= 1 && n <= kNgramMax && B >= 0 && T >= 0);
  const int64_t C = t.shape(table)[1], rows = B * T;
  ProfScope ps("ngram_embedding", "fwd", 0, kF * 2 * rows * C);
  Var out = t.make({rows, C}, t.requires_grad(table));
  auto ix = std::make_shared<NgramIndex>(ngram_index(idx, B, T, n, buckets));
  ngram_embedding_forward(t.value(out), t.value(table), *ix, C);
  if (t.requires_grad(table))
    t.node(out).backward = [&t, out, table, ix, C]() {
      const double m = static_cast<double>(ix->order.size());
      ProfScope ps("ngram_embedding", "bwd", m * C, kF * 3 * m * C);
      ngram_embedding_backward(t.grad(table), t.grad(out), *ix, C);
    };
  return out;
}

// Keeps the capped logits (N, V) (cap > 0; cap == 0 reads the logits node itself) and the row log-sum-exps.
Var softcap_ce_multi(Tape& t, Var logits, const std::vector<const int32_t*>& targets,
                     const std::vector<float>& weights, float cap, float* row_losses) {
  const int64_t V = t.shape(logits).back(), N = t.numel(logits) / V;
  const int K = static_cast<int>(targets.size());
  FRONTIER_CHECK(K >= 1 && weights.size() == targets.size() && cap >= 0.f);
  ProfScope ps("softcap_ce_multi", "fwd", 5.0 * N * V, kF * 2 * N * V);
  auto tg = std::make_shared<std::vector<int32_t>>(K * N);  // (K, N)
  for (int k = 0; k < K; k++)
    for (int64_t i = 0; i < N; i++) {
      FRONTIER_CHECK(targets[k][i] < V);
      (*tg)[k * N + i] = targets[k][i];
    }
  auto rows = std::make_shared<std::vector<const int32_t*>>(K);
  for (int k = 0; k < K; k++) (*rows)[k] = tg->data() + k * N;
  auto w = std::make_shared<std::vector<float>>(weights);
  auto capped = std::make_shared<PooledBuffer>(cap > 0.f ? N * V : 0, false);  // (N, V), all written
  auto lse = std::make_shared<std::vector<float>>(N);
  Var out = t.make({1}, t.requires_grad(logits));
  t.value(out)[0] = softcap_ce_multi_forward(row_losses, capped->data(), lse->data(), t.value(logits),
                                             rows->data(), w->data(), K, N, V, cap);
  if (t.requires_grad(logits))
    t.node(out).backward = [&t, out, logits, tg, rows, w, capped, lse, K, N, V, cap]() {
      ProfScope ps("softcap_ce_multi", "bwd", 4.0 * N * V, kF * 3 * N * V);
      const float* c = cap > 0.f ? capped->data() : t.value(logits);
      softcap_ce_multi_backward(t.grad(logits), t.grad(out)[0], c, lse->data(), rows->data(), w->data(), K, N,
                                V, cap);
    };
  return out;
}

}  // namespace frontier

#include "kernels/embed_kernels.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "kernels/vmath.h"
#include "reference/ngram.h"
#include "util/status.h"

namespace frontier {

NgramIndex ngram_index(const int32_t* idx, int64_t B, int64_t Tn, int n, int64_t buckets) {
  FRONTIER_CHECK(n >= 1 && n <= kNgramMax && buckets >= 1 && B >= 0 && Tn >= 0);
  NgramIndex ix;
  ix.rows = B * Tn;
  ix.bucket.resize(ix.rows);
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; b++) ngram_buckets(ix.bucket.data() + b * Tn, idx + b * Tn, 1, Tn, n, buckets);
  std::vector<std::pair<int64_t, int64_t>> key;  // (bucket, position): unique, so the sort order is total
  key.reserve(ix.rows);
  for (int64_t p = 0; p < ix.rows; p++)
    if (ix.bucket[p] >= 0) key.emplace_back(ix.bucket[p], p);
  std::sort(key.begin(), key.end());
  ix.order.resize(key.size());
  for (size_t i = 0; i < key.size(); i++) {
    ix.order[i] = key[i].second;
    if (i == 0 || key[i].first != key[i - 1].first) ix.run.push_back(static_cast<int64_t>(i));
  }
  ix.run.push_back(static_cast<int64_t>(key.size()));
  return ix;
}

void ngram_embedding_forward(float* out, const float* table, const NgramIndex& ix, int64_t C) {
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < ix.rows; p++) {
    float* o = out + p * C;
    if (ix.bucket[p] < 0)
      std::fill(o, o + C, 0.f);
    else
      std::copy(table + ix.bucket[p] * C, table + (ix.bucket[p] + 1) * C, o);
  }
}

void ngram_embedding_backward(float* dtable, const float* dout, const NgramIndex& ix, int64_t C) {
  // Tasks are (run, column block): a frequent n-gram's long run still splits over columns. Runs differ in
  // length (n-gram frequencies are Zipfian), hence the dynamic schedule; who runs a task never changes its
  // result.
  const int64_t runs = static_cast<int64_t>(ix.run.size()) - 1, cb = 64, blocks = (C + cb - 1) / cb;
#pragma omp parallel for collapse(2) schedule(dynamic, 8)
  for (int64_t r = 0; r < runs; r++)
    for (int64_t blk = 0; blk < blocks; blk++) {
      const int64_t c0 = blk * cb, c1 = std::min(C, c0 + cb);
      float* d = dtable + ix.bucket[ix.order[ix.run[r]]] * C;
      for (int64_t i = ix.run[r]; i < ix.run[r + 1]; i++) {
        const float* g = dout + ix.order[i] * C;
#pragma omp simd
        for (int64_t c = c0; c < c1; c++) d[c] += g[c];
      }
    }
}

float softcap_ce_multi_forward(float* losses, float* capped, float* lse, const float* z,
                               const int32_t* const* targets, const float* weights, int K, int64_t N,
                               int64_t V, float cap) {
  FRONTIER_CHECK(K >= 1 && cap >= 0.f && (cap == 0.f || capped));
  std::vector<float> row_loss(K * N);  // (K, N)
#pragma omp parallel
  {
    std::vector<float> e(V);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < N; i++) {
      const float* c = z + i * V;
      if (cap > 0.f) {  // the arithmetic of softcap_ce_forward, so K = 1 matches it bit for bit
        float* ci = capped + i * V;
        vmath::softcap(ci, c, cap, V);
        lse[i] = cap + std::log(vmath::exp_shift_sum(e.data(), ci, -cap, V));
        c = ci;
      } else {  // unbounded logits: shift by the row max
        const float mx = vmath::max_value(c, V);
        lse[i] = mx + std::log(vmath::exp_shift_sum(e.data(), c, -mx, V));
      }
      for (int k = 0; k < K; k++) {
        const int32_t tk = targets[k][i];
        row_loss[k * N + i] = tk < 0 ? 0.f : lse[i] - c[tk];
      }
    }
  }
  if (losses) std::copy(row_loss.begin(), row_loss.begin() + N, losses);
  double loss = 0;
  for (int k = 0; k < K; k++) {
    double total = 0;
    int64_t count = 0;
    for (int64_t i = 0; i < N; i++)
      if (targets[k][i] >= 0) total += row_loss[k * N + i], count++;
    if (count) loss += weights[k] * (total / count);
  }
  return static_cast<float>(loss);
}

void softcap_ce_multi_backward(float* dz, float dloss, const float* c, const float* lse,
                               const int32_t* const* targets, const float* weights, int K, int64_t N,
                               int64_t V, float cap) {
  std::vector<float> coef(K, 0.f);  // dloss * w_k / n_k: the weight of target k's softmax - onehot in a row
  for (int k = 0; k < K; k++) {
    int64_t count = 0;
    for (int64_t i = 0; i < N; i++) count += targets[k][i] >= 0;
    if (count) coef[k] = dloss * weights[k] / static_cast<float>(count);
  }
  const float inv_cap2 = cap > 0.f ? 1.f / (cap * cap) : 0.f;  // cap == 0: dc/dz = 1
#pragma omp parallel
  {
    std::vector<float> p(V);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < N; i++) {
      float a = 0.f;  // sum of the row's coefficients: the weight of its softmax
      bool any = false;
      for (int k = 0; k < K; k++)
        if (targets[k][i] >= 0) a += coef[k], any = true;
      if (!any) continue;
      const float* ci = c + i * V;
      float* d = dz + i * V;
      if (a == 0.f) {  // the softmax terms cancel (weights of opposite signs): the one-hot terms remain
        for (int k = 0; k < K; k++) {
          const int32_t tk = targets[k][i];
          if (tk >= 0) d[tk] -= coef[k] * (1.f - ci[tk] * ci[tk] * inv_cap2);
        }
        continue;
      }
      // d += a * (softmax - sum_k coef_k / a * onehot_k) * dc/dz. With K = 1, coef / a = 1 exactly: the
      // arithmetic of softcap_ce_backward.
      vmath::exp_shift_sum(p.data(), ci, -lse[i], V);  // softmax probabilities
      for (int k = 0; k < K; k++)
        if (targets[k][i] >= 0) p[targets[k][i]] -= coef[k] / a;
#pragma omp simd
      for (int64_t v = 0; v < V; v++) d[v] += a * p[v] * (1.f - ci[v] * ci[v] * inv_cap2);
    }
  }
}

}  // namespace frontier

// Hashed n-gram embedding: position t of row b looks up the table row of the hash of its last n token ids,
// idx[b, t-n+1 .. t]; the first n-1 positions of a row have no complete n-gram and get a zero row. The hash
// is FNV-1a style over the ids (+1, so id 0 still mixes), newest first, with 64-bit wrap-around, and drops
// the 17 low bits (the least mixed) before the modulo:
//
//   uint64_t h = 0;
//   for (j = 0; j < n; j++) h = (h ^ (uint64_t)(idx[b][t-j] + 1)) * 0x100000001B3;
//   bucket = (h >> 17) % buckets;
//
// python/frontier_ngram.py reproduces it bit for bit in PyTorch (ngram_buckets). Layout idx (B, T),
// table (buckets, C), out (B*T, C). The op is linear in the table: backward scatter-adds dout rows into it.
#pragma once

#include <cstdint>

namespace frontier {

constexpr int kNgramMax = 16;  // the longest n the kernels take (a stack buffer of ids); callers check

// ids[0] is the newest id (position t), ids[j] the one at t - j; n >= 1, buckets >= 1.
inline int64_t ngram_bucket(const int32_t* ids_newest_first, int n, int64_t buckets) {
  uint64_t h = 0;
  for (int j = 0; j < n; j++)
    h = (h ^ static_cast<uint64_t>(static_cast<int64_t>(ids_newest_first[j]) + 1)) * 0x100000001B3ull;
  return static_cast<int64_t>((h >> 17) % static_cast<uint64_t>(buckets));
}

// bucket (B, Tn): the bucket of each position, -1 where t < n - 1. n <= kNgramMax.
inline void ngram_buckets(int64_t* bucket, const int32_t* idx, int64_t B, int64_t Tn, int n,
                          int64_t buckets) {
  int32_t ids[kNgramMax];
  for (int64_t b = 0; b < B; b++)
    for (int64_t t = 0; t < Tn; t++) {
      if (t < n - 1) {
        bucket[b * Tn + t] = -1;
        continue;
      }
      for (int j = 0; j < n; j++) ids[j] = idx[b * Tn + t - j];
      bucket[b * Tn + t] = ngram_bucket(ids, n, buckets);
    }
}

}  // namespace frontier

namespace frontier::ref {

// out (B*Tn, C) = table[bucket] per position, zero rows where t < n - 1. n <= kNgramMax.
template <typename T>
void ngram_embedding_forward(T* out, const T* table, const int32_t* idx, int64_t B, int64_t Tn, int n,
                             int64_t buckets, int64_t C) {
  int32_t ids[kNgramMax];
  for (int64_t b = 0; b < B; b++)
    for (int64_t t = 0; t < Tn; t++) {
      T* o = out + (b * Tn + t) * C;
      if (t < n - 1) {
        for (int64_t c = 0; c < C; c++) o[c] = T(0);
        continue;
      }
      for (int j = 0; j < n; j++) ids[j] = idx[b * Tn + t - j];
      const T* w = table + ngram_bucket(ids, n, buckets) * C;
      for (int64_t c = 0; c < C; c++) o[c] = w[c];
    }
}

// dtable (buckets, C) += scatter of dout (B*Tn, C) rows, in position order.
template <typename T>
void ngram_embedding_backward(T* dtable, const T* dout, const int32_t* idx, int64_t B, int64_t Tn, int n,
                              int64_t buckets, int64_t C) {
  int32_t ids[kNgramMax];
  for (int64_t b = 0; b < B; b++)
    for (int64_t t = n - 1; t < Tn; t++) {
      for (int j = 0; j < n; j++) ids[j] = idx[b * Tn + t - j];
      T* d = dtable + ngram_bucket(ids, n, buckets) * C;
      const T* g = dout + (b * Tn + t) * C;
      for (int64_t c = 0; c < C; c++) d[c] += g[c];
    }
}

}  // namespace frontier::ref

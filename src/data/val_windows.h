// The rows val_bpb scores: the validation split's documents in order, each cut into consecutive windows of at most
// T targets, every target token scored once, until eval_tokens targets (or the whole split). The same text for
// every T and B, so models of different sequence lengths are scored on the same tokens, as the arena's frozen
// evaluator does (arena/evaluator.cpp: windows of the served context).
//
// Why not the training loader (nanochat's evaluate_bpb reads the val split through its best-fit loader at the
// model's T): that loader crops a document that does not fit and discards its tail, so at T = 128 it scores the first
// 128 tokens of each document and at T = 512 the first 512: the validation text changed with the sequence length,
// which made `frontier advise` compare T = 128 and T = 512 on different text.
//
// A window starting at s holds inputs tokens[s, s+m) and targets tokens[s+1, s+m], m <= T; the first window of a
// document starts at its BOS, later ones restart the context mid-document (as the arena's). A row holds one window;
// the rest of the row is BOS, whose target is BOS: 0 bytes in token_bytes, so val_bpb skips it. Rows are grouped
// B to a batch; the last batch is padded with such rows.
//
//   ValWindows w;
//   FRONTIER_RETURN_IF_ERROR(w.init(shards, /*T=*/512, /*eval_tokens=*/32768));
//   while (w.next(B, x.data(), y.data())) { ...forward (B, T)... }
#pragma once

#include <cstdint>
#include <vector>

#include "data/shard.h"

namespace frontier {

class ValWindows {
 public:
  Status init(const std::vector<Shard>& shards, int T, int64_t eval_tokens);
  // Fills x, y: (B, T). False when every window was given out (x, y untouched).
  bool next(int B, int32_t* x, int32_t* y);
  int64_t targets() const { return targets_; }  // target tokens the windows score (<= eval_tokens)
  int64_t rows() const { return static_cast<int64_t>(windows_.size()); }

 private:
  struct Window {
    uint32_t shard;
    uint64_t begin;  // token index of the first input
    uint32_t m;      // targets (= inputs)
  };
  const std::vector<Shard>* shards_ = nullptr;
  int T_ = 0;
  uint32_t bos_ = 0;
  int64_t targets_ = 0;
  size_t cursor_ = 0;
  std::vector<Window> windows_;
};

}  // namespace frontier

#include "data/val_windows.h"

#include <algorithm>

namespace frontier {

Status ValWindows::init(const std::vector<Shard>& shards, int T, int64_t eval_tokens) {
  if (T < 1) return Status::error("val_bpb needs a sequence length >= 1");
  if (eval_tokens < 1) return Status::error("eval.tokens must be >= 1 (got " + std::to_string(eval_tokens) + ")");
  if (shards.empty()) return Status::error("the validation split has no shards");
  shards_ = &shards;
  T_ = T;
  bos_ = shards[0].header().bos_id;
  targets_ = 0;
  cursor_ = 0;
  windows_.clear();
  for (uint32_t s = 0; s < shards.size() && targets_ < eval_tokens; s++) {
    const Shard& sh = shards[s];
    for (uint64_t d = 0; d < sh.n_docs() && targets_ < eval_tokens; d++) {
      const uint64_t b = sh.doc_begin(d), n = sh.doc_len(d);
      for (uint64_t i = 0; i + 1 < n && targets_ < eval_tokens;) {
        const uint64_t m = std::min<uint64_t>({static_cast<uint64_t>(T), n - 1 - i,
                                               static_cast<uint64_t>(eval_tokens - targets_)});
        windows_.push_back({s, b + i, static_cast<uint32_t>(m)});
        targets_ += static_cast<int64_t>(m);
        i += m;
      }
    }
  }
  if (targets_ == 0) return Status::error("the validation split has no tokens to score (documents of BOS alone)");
  return ok_status();
}

bool ValWindows::next(int B, int32_t* x, int32_t* y) {
  if (cursor_ >= windows_.size()) return false;
  std::fill(x, x + static_cast<size_t>(B) * T_, static_cast<int32_t>(bos_));
  std::fill(y, y + static_cast<size_t>(B) * T_, static_cast<int32_t>(bos_));
  for (int r = 0; r < B && cursor_ < windows_.size(); r++, cursor_++) {
    const Window& w = windows_[cursor_];
    const Shard& sh = (*shards_)[w.shard];
    sh.copy_tokens(w.begin, w.m, x + static_cast<size_t>(r) * T_);
    sh.copy_tokens(w.begin + 1, w.m, y + static_cast<size_t>(r) * T_);
  }
  return true;
}

}  // namespace frontier

// Byte-level BPE training with the incremental pair-count algorithm (as nanochat's rustbpe and HF tokenizers).
//
//   BpeTrainer trainer(kNanochatPattern);          // 1. count the pieces of the training text
//   for (const auto& doc : docs) FRONTIER_RETURN_IF_ERROR(trainer.add_document(doc));   // (or add_documents)
//   Tokenizer tok;                                 // 2. merge until vocab_size, specials appended after merges
//   FRONTIER_RETURN_IF_ERROR(trainer.train(8192, default_special_tokens(), &tok));
//
// Cost: counting is one regex pass over the text (parallel over documents). Training keeps, per adjacent pair,
// its count (weighted by piece frequency) and the list of pieces containing it, plus a max-heap with lazy
// refresh; each merge touches only the pieces that contain the merged pair. No rescan per merge.
// Ties (equal counts) go to the smaller pair (a, b), so training is deterministic whatever the thread count.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace frontier {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using PieceCounts = std::unordered_map<std::string, uint64_t, StringHash, std::equal_to<>>;

class BpeTrainer {
 public:
  explicit BpeTrainer(const std::string& pattern);
  Status status() const { return status_; }  // pattern compile result

  // text: valid UTF-8. An error when the split pattern fails on it (tokenizer/regex_split.h); the pieces before the
  // failure were counted.
  Status add_document(std::string_view text);
  // Parallel (OpenMP) over documents. On an error, *failed (if given) is the index of the first document that
  // failed, and no document of the batch is counted.
  Status add_documents(const std::vector<std::string>& docs, size_t* failed = nullptr);
  uint64_t n_unique_pieces() const { return counts_.size(); }
  uint64_t n_bytes() const { return n_bytes_; }

  // vocab_size counts the specials, which get the ids after the merges (<|bos|> first).
  Status train(uint32_t vocab_size, const std::vector<std::string>& specials, Tokenizer* out, bool verbose = true);

 private:
  std::string pattern_;
  RegexSplitter splitter_;
  Status status_;
  PieceCounts counts_;
  uint64_t n_bytes_ = 0;
};

}  // namespace frontier

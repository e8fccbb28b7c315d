// Byte-level BPE tokenizer with tiktoken's semantics.
//
// A tokenizer is (ranks, split pattern, special tokens). ranks[i] is the byte string of token i; the 256 single
// bytes are always present. Encoding splits text with the pattern, then merges each piece exactly as tiktoken's
// _byte_pair_merge does: repeatedly join the adjacent pair whose concatenation has the lowest rank (leftmost on
// ties). Ordinary text never produces special tokens; they are added explicitly (prepare prepends <|bos|>).
//
//   Tokenizer tok;
//   FRONTIER_RETURN_IF_ERROR(tok.load("data/default/tokenizer"));
//   std::vector<uint32_t> ids;
//   FRONTIER_RETURN_IF_ERROR(tok.encode_ordinary("Hello world", &ids));
//   std::string back = tok.decode(ids);     // byte-exact: "Hello world"
//
// On disk (a directory):
//   tokenizer.tiktoken  tiktoken's rank file: "<base64 bytes> <rank>\n" per token, rank order
//   tokenizer.json      {"pattern": ..., "special_tokens": {"<|bos|>": 8183, ...}, "vocab_size": 8192, ...}
// so it loads in tiktoken: new Tiktoken(ranks_text, special_tokens, pattern).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/regex_split.h"
#include "util/status.h"

namespace frontier {

// nanochat's special tokens; <|bos|> comes first and delimits documents.
inline const std::vector<std::string>& default_special_tokens() {
  static const std::vector<std::string> s = {"<|bos|>",         "<|user_start|>",      "<|user_end|>",
                                             "<|assistant_start|>", "<|assistant_end|>", "<|python_start|>",
                                             "<|python_end|>",  "<|output_start|>",    "<|output_end|>"};
  return s;
}

class Tokenizer {
 public:
  Tokenizer();
  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  // ranks[i] = bytes of token i (an empty string marks an unused id). Specials are (name, id); their ids must
  // not collide with ranks. Fails on duplicate byte strings, missing single bytes or a bad pattern.
  static Status create(std::vector<std::string> ranks, const std::string& pattern,
                       const std::vector<std::pair<std::string, uint32_t>>& specials, Tokenizer* out);

  Status load(const std::string& dir);
  Status save(const std::string& dir) const;
  // Reads just a tiktoken rank file (e.g. OpenAI's cl100k_base.tiktoken).
  static Status read_rank_file(const std::string& path, std::vector<std::string>* ranks);

  // text must be valid UTF-8. Appends to *out. An error when the split pattern fails on this text (PCRE2 gave up,
  // or bytes fell in no piece: tokenizer/regex_split.h); *out then holds the tokens of the pieces before it.
  Status encode_ordinary(std::string_view text, std::vector<uint32_t>* out) const;
  // The BPE of one piece (no splitting); exposed for tests.
  void encode_piece(std::string_view piece, std::vector<uint32_t>* out) const;
  std::string decode(std::span<const uint32_t> ids) const;  // specials decode to their names

  uint32_t vocab_size() const;   // max id + 1, specials included
  uint32_t n_ranks() const { return static_cast<uint32_t>(ranks_.size()); }
  const std::string& token(uint32_t id) const;  // bytes (or the special's name)
  bool is_special(uint32_t id) const;
  int64_t special_id(const std::string& name) const;  // -1 if absent
  uint32_t bos_id() const;  // CHECKs that <|bos|> exists
  const std::string& pattern() const { return splitter_->pattern(); }
  const std::vector<std::pair<std::string, uint32_t>>& specials() const { return specials_; }
  std::string fingerprint() const;  // SHA-256 over ranks, pattern and specials

  // Pieces longer than this use the heap merge (O(n log n)); shorter ones tiktoken's linear scan. Same result.
  static constexpr size_t kHeapMergeMin = 64;
  void set_heap_merge_min(size_t n) { heap_merge_min_ = n; }  // tests force one path or the other

 private:
  struct RankTable;
  int64_t rank_of(std::string_view bytes) const;
  void merge_linear(std::string_view piece, std::vector<uint32_t>* out) const;
  void merge_heap(std::string_view piece, std::vector<uint32_t>* out) const;

  std::vector<std::string> ranks_;
  std::vector<std::pair<std::string, uint32_t>> specials_;
  std::unique_ptr<RankTable> table_;
  std::unique_ptr<RegexSplitter> splitter_;
  size_t heap_merge_min_ = kHeapMergeMin;
};

}  // namespace frontier

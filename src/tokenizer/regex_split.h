// Pre-tokenisation: split text into the pieces BPE works within, with a PCRE2 (JIT) regex in UTF + UCP mode.
// This is the same leftmost-first, backtracking match that tiktoken's fancy-regex performs, so the pieces (and
// hence the tokens) agree with tiktoken; tests/tiktoken_parity_test.cpp proves it on real and adversarial text.
//
//   RegexSplitter split;
//   FRONTIER_RETURN_IF_ERROR(split.compile(kNanochatPattern));
//   split.for_each("Hello world", [](std::string_view piece) { ... });   // "Hello", " world"
//
// Input must be valid UTF-8 (see util/utf8.h); validity is not re-checked per match, for speed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "util/status.h"

namespace frontier {

// nanochat's split pattern: GPT-4's, with digits in runs of at most 2.
inline constexpr const char* kNanochatPattern =
    R"('(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)";
// OpenAI's cl100k_base pattern, exactly as tiktoken ships it; used by the parity tests.
inline constexpr const char* kCl100kPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

class RegexSplitter {
 public:
  RegexSplitter() = default;
  ~RegexSplitter();
  RegexSplitter(const RegexSplitter&) = delete;
  RegexSplitter& operator=(const RegexSplitter&) = delete;

  Status compile(const std::string& pattern);
  const std::string& pattern() const { return pattern_; }

  // Calls fn for every piece, in order. Thread-safe: each thread gets its own match data.
  template <typename Fn>
  void for_each(std::string_view text, Fn&& fn) const {
    size_t pos = 0, start, end;
    while (next(text, &pos, &start, &end)) fn(text.substr(start, end - start));
  }
  // Finds the next match at or after *pos; advances *pos. False when there is none.
  bool next(std::string_view text, size_t* pos, size_t* start, size_t* end) const;

 private:
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code*
  uint64_t id_ = 0;       // unique per compile, keys the per-thread match data
};

}  // namespace frontier

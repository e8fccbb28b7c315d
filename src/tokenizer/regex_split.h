// Pre-tokenisation: split text into the pieces BPE works within, with a PCRE2 (JIT) regex in UTF + UCP mode.
// This is the same leftmost-first, backtracking match that tiktoken's fancy-regex performs, so the pieces (and
// hence the tokens) agree with tiktoken; tests/tiktoken_parity_test.cpp proves it on real and adversarial text.
//
//   RegexSplitter split;
//   FRONTIER_RETURN_IF_ERROR(split.compile(kNanochatPattern));
//   FRONTIER_RETURN_IF_ERROR(split.for_each("Hello world", [](std::string_view piece) { ... }));  // "Hello", " world"
//
// Input must be valid UTF-8 (see util/utf8.h); validity is not re-checked per match, for speed.
//
// Two promises, both checked rather than assumed:
//  - The pieces cover the text: every byte is in exactly one piece, in order. compile() refuses a pattern that
//    skips bytes of a probe text (round trip), and a text on which it skips any byte anyway is an error, not a
//    silent loss (tiktoken drops such bytes).
//  - PCRE2's limits are an error, never an abort. A match gets PCRE2's default match limit (10 M) and an 8 MiB JIT
//    stack; when it runs out, it is retried with a limit proportional to the rest of the text (kMatchStepsPerByte)
//    and a 256 MiB stack. The nanochat pattern costs about one step per byte of a whitespace run (`\s*[\r\n]`
//    backtracks over it), so a 100 MB run of spaces splits exactly as an unlimited engine would; a pattern that
//    backtracks exponentially still fails, as a Status naming the pattern and the offset.
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

  // Errors: not a valid PCRE2 pattern, one that can match the empty string, or one that skips bytes of the probe.
  Status compile(const std::string& pattern);
  const std::string& pattern() const { return pattern_; }

  // Calls fn for every piece, in order. Thread-safe: each thread gets its own match data. An error (PCRE2 gave up,
  // or the pattern skipped bytes) after the pieces before it were passed to fn.
  template <typename Fn>
  Status for_each(std::string_view text, Fn&& fn) const {
    size_t pos = 0, start, end;
    int rc;
    while ((rc = next(text, &pos, &start, &end)) > 0) fn(text.substr(start, end - start));
    return rc == 0 ? ok_status() : error(rc, text, pos);
  }
  // The piece at *pos: returns 1 with [*start, *end) = [*pos, new *pos); 0 at the end of the text; a negative code
  // (a PCRE2 error, or kSkipsBytes) on failure, which error() explains.
  int next(std::string_view text, size_t* pos, size_t* start, size_t* end) const;
  static constexpr int kSkipsBytes = -100000;  // the match began after *pos, was empty, or there was none
  Status error(int code, std::string_view text, size_t pos) const;

  // Steps per byte of the remaining text allowed on the retry (see the top of this file).
  static constexpr uint64_t kMatchStepsPerByte = 32;

 private:
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code*
  uint64_t id_ = 0;       // unique per compile, keys the per-thread match data
};

}  // namespace frontier

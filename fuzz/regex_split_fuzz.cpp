// The regex pre-splitter (tokenizer/regex_split.h) on hostile patterns and long runs. Byte 0 picks the mode:
//   even: the rest is PATTERN '\n' TEXT (a pattern of at most 256 bytes, a UTF-8 text of at most 128: a pattern
//         may cost PCRE2's 10 M steps at each position, so a longer text only finds timeouts we accept);
//   odd:  the nanochat (byte 1 even) or cl100k pattern on PREFIX + UNIT x N + SUFFIX, a run of 128 KiB to 16 MiB made
//         of the input's first few characters (whitespace, newlines, digits, marks, ...), where a real crawl's long
//         whitespace run once reached PCRE2's match limit and aborted (10 M spaces did).
// Asserted beyond "no crash": a split that succeeds covers its text exactly (the pieces concatenate to it), and the
// two shipped patterns never give up on a run.
// Seeds: fuzz/corpus/regex_split_fuzz/. Dictionary: fuzz/dicts/regex.dict (scripts/sanitize.sh passes it on).
#include <cstdint>
#include <string>
#include <string_view>

#include "tokenizer/regex_split.h"
#include "util/utf8.h"

using namespace frontier;

namespace {

// Splits text; true if the split succeeded, in which case the pieces must be the text.
bool split_covers(const RegexSplitter& sp, std::string_view text) {
  std::string joined;
  Status s = sp.for_each(text, [&](std::string_view piece) {
    FRONTIER_CHECK(!piece.empty());
    FRONTIER_CHECK(piece.data() == text.data() + joined.size());  // in order, no gap
    joined.append(piece);
  });
  if (s.ok()) FRONTIER_CHECK(joined == text);
  return s.ok();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) == 0) {
    const size_t nl = rest.find('\n');
    if (nl == std::string_view::npos || nl > 256) return 0;
    const std::string pattern(rest.substr(0, nl));
    const std::string_view text = rest.substr(nl + 1);
    if (text.size() > 128 || utf8_first_invalid(text) != std::string::npos) return 0;  // for_each needs UTF-8
    RegexSplitter sp;
    if (!sp.compile(pattern).ok()) return 0;
    split_covers(sp, text);
    return 0;
  }
  static RegexSplitter nanochat, cl100k;
  static const bool compiled = nanochat.compile(kNanochatPattern).ok() && cl100k.compile(kCl100kPattern).ok();
  FRONTIER_CHECK(compiled);
  const RegexSplitter& sp = (rest[0] & 1) ? cl100k : nanochat;
  // rest[1..]: PREFIX '\x01' UNIT '\x01' SUFFIX (missing parts empty); the run is UNIT repeated to ~len bytes.
  std::string_view body = rest.substr(1);
  std::string_view parts[3];
  for (int i = 0; i < 3; i++) {
    size_t p = i < 2 ? body.find('\x01') : std::string_view::npos;
    parts[i] = body.substr(0, p);
    body = p == std::string_view::npos ? std::string_view() : body.substr(p + 1);
  }
  if (parts[1].empty()) parts[1] = " ";
  if (parts[1].size() > 8) parts[1] = parts[1].substr(0, 8);
  const size_t len = (size_t(1) << 17) << (rest[0] >> 1 & 7);  // 128 KiB .. 16 MiB
  std::string text(parts[0]);
  text.reserve(len + 16);
  while (text.size() < len) text.append(parts[1]);
  text.append(parts[2]);
  if (utf8_first_invalid(text) != std::string::npos) return 0;
  FRONTIER_CHECK(split_covers(sp, text));  // the shipped patterns are linear on runs: they must not give up
  return 0;
}

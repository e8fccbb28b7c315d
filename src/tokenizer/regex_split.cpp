#include "tokenizer/regex_split.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <atomic>
#include <cstdio>

namespace frontier {

namespace {

constexpr size_t kStackMax = 8 << 20;           // JIT stack for the first try
constexpr size_t kBigStackMax = size_t(256) << 20;  // and for the retry (address space; pages are touched as used)
constexpr uint64_t kMatchLimit = 10000000;       // PCRE2's default

// Per-thread match data and JIT stacks: created once per thread, reused for every match. The retry's context (a
// larger stack, a per-text match limit) is made only when a match first needs it.
struct ThreadMatch {
  pcre2_match_data* md = nullptr;
  pcre2_jit_stack* stack = nullptr;
  pcre2_match_context* ctx = nullptr;
  pcre2_jit_stack* big_stack = nullptr;
  pcre2_match_context* big_ctx = nullptr;
  uint64_t owner = 0;
  ~ThreadMatch() { reset(); }
  void reset() {
    if (md) pcre2_match_data_free(md);
    if (ctx) pcre2_match_context_free(ctx);
    if (stack) pcre2_jit_stack_free(stack);
    if (big_ctx) pcre2_match_context_free(big_ctx);
    if (big_stack) pcre2_jit_stack_free(big_stack);
    md = nullptr;
    ctx = big_ctx = nullptr;
    stack = big_stack = nullptr;
  }
};

// Text for an error message: at most n bytes, control characters escaped, cut at a UTF-8 boundary.
std::string excerpt(std::string_view s, size_t n) {
  std::string out;
  size_t i = 0;
  for (; i < s.size() && out.size() < n; i++) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c < 0x20 || c == 0x7f) {
      char b[8];
      std::snprintf(b, sizeof(b), "\\x%02x", c);
      out += b;
    } else out += static_cast<char>(c);
  }
  while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) out += s[i++];  // finish a character
  if (i < s.size()) out += "...";
  return out;
}

// The round-trip probe of compile(): every ASCII character but NUL, whitespace runs, and letters, digits, marks,
// symbols and spaces of other scripts. A pattern that leaves any byte of it out of every piece is refused.
const std::string& probe_text() {
  static const std::string t = [] {
    std::string s;
    for (int c = 1; c < 128; c++) s += static_cast<char>(c);
    s += " Hello world! It's 2024-12-03, they'll've   x  \t\r\n\r\n\n  y\n";
    s += "ca\xc3\xa7\xc3\xa3o \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xd9\xa3\xd9\xa4 \xf0\x9f\x98\x80\xf0\x9f\x91\x8d "
         "e\xcc\x81 \xc2\xa0\xe2\x80\xa8\xe3\x80\x80 \xc2\xbd \xe2\x82\xac" "5 \xce\xa9\xcf\x89 \xf0\x9d\x94\x98 "
         "\xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d\xef\xbb\xbf\xe2\x80\x8b end";
    return s;
  }();
  return t;
}

}  // namespace

RegexSplitter::~RegexSplitter() {
  if (code_) pcre2_code_free(static_cast<pcre2_code*>(code_));
}

Status RegexSplitter::compile(const std::string& pattern) {
  int err;
  PCRE2_SIZE off;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.c_str()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &err, &off, nullptr);
  if (!code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof(msg));
    return Status::error("invalid split pattern at offset " + std::to_string(off) + ": " +
                         reinterpret_cast<char*>(msg));
  }
  // A pattern that can match the empty string would give empty pieces (no bytes to encode); most such patterns are
  // a mistake ("\p{N}{0,2}"), so say so here. The few PCRE2 cannot bound (lookarounds, \K) skip bytes, which the
  // probe below and next() catch.
  uint32_t min_length = 0;
  pcre2_pattern_info(code, PCRE2_INFO_MINLENGTH, &min_length);
  if (min_length == 0) {
    pcre2_code_free(code);
    return Status::error("the split pattern can match the empty string (each alternative must consume a character)");
  }
  if (pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) != 0) {
    pcre2_code_free(code);
    return Status::error("PCRE2 JIT is unavailable for the split pattern (rebuild libpcre2 with JIT)");
  }
  // The round trip: the pieces of the probe must be the probe. A pattern that drops bytes would make tokens that
  // decode to less than the text (tiktoken silently drops them); refuse it before it is saved or used. The new
  // pattern is installed for the probe and the old one put back if it fails.
  void* old_code = code_;
  const uint64_t old_id = id_;
  std::string old_pattern = std::move(pattern_);
  static std::atomic<uint64_t> next_id{1};
  code_ = code;
  id_ = next_id++;
  pattern_ = pattern;
  size_t covered = 0;
  Status s = for_each(probe_text(), [&](std::string_view piece) { covered += piece.size(); });
  if (!s.ok()) {
    pcre2_code_free(code);
    code_ = old_code;
    id_ = old_id;
    pattern_ = std::move(old_pattern);
    return Status::error(s.message() + " (checked when the tokenizer is built or loaded)");
  }
  FRONTIER_CHECK(covered == probe_text().size());
  if (old_code) pcre2_code_free(static_cast<pcre2_code*>(old_code));
  return ok_status();
}

int RegexSplitter::next(std::string_view text, size_t* pos, size_t* start, size_t* end) const {
  FRONTIER_CHECK(code_ != nullptr);
  if (*pos >= text.size()) return 0;
  thread_local ThreadMatch tm;
  pcre2_code* code = static_cast<pcre2_code*>(code_);
  if (tm.owner != id_) {
    tm.reset();
    tm.md = pcre2_match_data_create_from_pattern(code, nullptr);
    tm.stack = pcre2_jit_stack_create(32 * 1024, kStackMax, nullptr);
    tm.ctx = pcre2_match_context_create(nullptr);
    FRONTIER_CHECK(tm.md && tm.stack && tm.ctx);  // allocation failures of a few KiB
    pcre2_jit_stack_assign(tm.ctx, nullptr, tm.stack);
    tm.owner = id_;
  }
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  int rc = pcre2_jit_match(code, subject, text.size(), *pos, PCRE2_NO_UTF_CHECK, tm.md, tm.ctx);
  if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_JIT_STACKLIMIT) {
    // Out of steps or stack: again, with room in proportion to the rest of the text (the top of regex_split.h).
    if (!tm.big_ctx) {
      tm.big_stack = pcre2_jit_stack_create(32 * 1024, kBigStackMax, nullptr);
      tm.big_ctx = pcre2_match_context_create(nullptr);
      if (!tm.big_stack || !tm.big_ctx) return rc;
      pcre2_jit_stack_assign(tm.big_ctx, nullptr, tm.big_stack);
    }
    const uint64_t want = kMatchLimit + kMatchStepsPerByte * static_cast<uint64_t>(text.size() - *pos);
    pcre2_set_match_limit(tm.big_ctx, static_cast<uint32_t>(std::min<uint64_t>(want, UINT32_MAX)));
    rc = pcre2_jit_match(code, subject, text.size(), *pos, PCRE2_NO_UTF_CHECK, tm.md, tm.big_ctx);
  }
  if (rc == PCRE2_ERROR_NOMATCH) return kSkipsBytes;  // text is left that no piece covers
  if (rc < 0) return rc;
  PCRE2_SIZE* ov = pcre2_get_ovector_pointer(tm.md);
  // A piece must begin where the last one ended and hold a byte: a later start (or an empty match, as with "x\K")
  // means bytes that are in no piece.
  if (ov[0] != *pos || ov[1] <= ov[0]) return kSkipsBytes;
  *start = ov[0];
  *end = ov[1];
  *pos = *end;
  return 1;
}

Status RegexSplitter::error(int code, std::string_view text, size_t pos) const {
  const std::string where = "the split pattern \"" + excerpt(pattern_, 120) + "\" ";
  const std::string at = " at byte " + std::to_string(pos) + " of a " + std::to_string(text.size()) + "-byte text";
  if (code == kSkipsBytes)
    return Status::error(where + "leaves bytes out of every piece" + at + " (\"" + excerpt(text.substr(pos), 24) +
                         "\"): every byte must fall in a piece, or it would not be encoded; add a catch-all "
                         "alternative such as |\\s+|[^\\s]+");
  PCRE2_UCHAR msg[256];
  pcre2_get_error_message(code, msg, sizeof(msg));
  return Status::error(where + "gave up" + at + ": PCRE2 " + reinterpret_cast<char*>(msg) + " (even at " +
                       std::to_string(kMatchStepsPerByte) + " steps per byte of the text: the pattern backtracks "
                       "too much; make its quantifiers possessive, e.g. ++ and *+, or split such documents)");
}

}  // namespace frontier

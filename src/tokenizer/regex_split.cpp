#include "tokenizer/regex_split.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <atomic>

namespace frontier {

namespace {

// Per-thread match data and JIT stack: created once per thread, reused for every match.
struct ThreadMatch {
  pcre2_match_data* md = nullptr;
  pcre2_jit_stack* stack = nullptr;
  pcre2_match_context* ctx = nullptr;
  uint64_t owner = 0;
  ~ThreadMatch() { reset(); }
  void reset() {
    if (md) pcre2_match_data_free(md);
    if (ctx) pcre2_match_context_free(ctx);
    if (stack) pcre2_jit_stack_free(stack);
    md = nullptr;
    ctx = nullptr;
    stack = nullptr;
  }
};

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
  // a mistake ("\p{N}{0,2}"), so say so here. The few PCRE2 cannot bound (lookarounds, \K) are handled in next().
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
  if (code_) pcre2_code_free(static_cast<pcre2_code*>(code_));
  code_ = code;
  static std::atomic<uint64_t> next_id{1};
  id_ = next_id++;
  pattern_ = pattern;
  return ok_status();
}

bool RegexSplitter::next(std::string_view text, size_t* pos, size_t* start, size_t* end) const {
  FRONTIER_CHECK(code_ != nullptr);
  thread_local ThreadMatch tm;
  if (tm.owner != id_) {
    tm.reset();
    tm.md = pcre2_match_data_create_from_pattern(static_cast<pcre2_code*>(code_), nullptr);
    tm.stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
    tm.ctx = pcre2_match_context_create(nullptr);
    pcre2_jit_stack_assign(tm.ctx, nullptr, tm.stack);
    tm.owner = id_;
  }
  while (*pos < text.size()) {
    int rc = pcre2_jit_match(static_cast<pcre2_code*>(code_), reinterpret_cast<PCRE2_SPTR>(text.data()),
                             text.size(), *pos, PCRE2_NO_UTF_CHECK, tm.md, tm.ctx);
    if (rc < 0) {
      FRONTIER_CHECK(rc == PCRE2_ERROR_NOMATCH);
      return false;
    }
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(tm.md);
    if (ov[1] > ov[0]) {
      *start = ov[0];
      *end = ov[1];
      *pos = *end;
      return true;
    }
    // An empty match, which compile() cannot rule out for every pattern ("x\K"): no piece. Search again from its
    // end, or from the next character when that is where this search began.
    size_t p = ov[1] > *pos ? ov[1] : *pos + 1;
    while (p < text.size() && (static_cast<uint8_t>(text[p]) & 0xC0) == 0x80) p++;
    *pos = p;
  }
  return false;
}

}  // namespace frontier

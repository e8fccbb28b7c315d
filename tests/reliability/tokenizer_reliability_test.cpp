// Issue 33 (1 and 8): the tokenizer on hostile text and hostile split patterns, through the CLI. A long whitespace
// run in a document (real crawls have them) reached PCRE2's match limit and aborted `prepare`, `tokenizer`, training
// and `arena score`; now it splits as without a limit. A pattern that backtracks without bound is a one-line error
// naming the pattern, the document and the fix; a pattern that drops bytes is refused when the tokenizer loads;
// `tokenizer --decode` refuses a word that is not a token id instead of stopping there with exit 0.
#include <nlohmann/json.hpp>

#include "../train_fixture.h"
#include "reliability_util.h"

namespace frontier::testing {

namespace {

namespace fs = std::filesystem;

// A copy of the fixture's tokenizer (it has <|bos|>, so prepare --tokenizer takes it) with another split pattern.
std::string tokenizer_with_pattern(const std::string& pattern) {
  std::string dir = make_temp_dir("tokrel") + "/tok";
  fs::copy(dataset() + "/data/tokenizer", dir, fs::copy_options::recursive);
  nlohmann::json j = nlohmann::json::parse(Child::slurp(dir + "/tokenizer.json"));
  j["pattern"] = pattern;
  write_text(dir + "/tokenizer.json", j.dump(2));
  return dir;
}

// n ordinary JSON lines, then `extra` lines as given.
std::string corpus(int n, const std::vector<std::string>& extra = {}) {
  std::string s;
  for (int i = 0; i < n; i++)
    s += nlohmann::json({{"text", "Document " + std::to_string(i) + ": the quick brown fox jumps over the lazy dog, "
                                  "and it's 2024 again."}}).dump() + "\n";
  for (const auto& e : extra) s += e + "\n";
  return s;
}

Outcome encode(const std::string& tok, const std::string& text) {
  return run_argv({frontier_bin(), "tokenizer", "--dir", tok, "--text", text}, 60);
}

constexpr const char* kBacktracking = "(a+)+b|\\s|[^\\s]";  // exponential on "aaa...c"

}  // namespace

TEST(TokenizerReliability, MillionsOfSpacesInOneDocumentPrepare) {
  // "x" + 12 M spaces + "y" in one document: PCRE2's match limit, FRONTIER_CHECK, SIGABRT (prepare exit 134).
  std::string d = make_temp_dir("tokrel_run");
  write_text(d + "/c.jsonl", corpus(60, {nlohmann::json({{"text", "x" + std::string(12 << 20, ' ') + "y"}}).dump()}));
  Outcome o = run_argv({frontier_bin(), "prepare", "--quiet", "--train", d + "/c.jsonl", "--vocab-size", "300",
                        "--out", d + "/out"}, 300);
  EXPECT_EQ(o.signal, 0) << o.err;
  ASSERT_EQ(o.rc, 0) << o.err;
  Outcome i = run_argv({frontier_bin(), "inspect", "--data", d + "/out"}, 120);
  EXPECT_EQ(i.rc, 0) << i.err;
  fs::remove_all(d);
}

TEST(TokenizerReliability, BacktrackingSplitPatternIsACleanError) {
  const std::string tok = tokenizer_with_pattern(kBacktracking);
  const std::string hostile = std::string(40, 'a') + "c";
  // `frontier tokenizer`: it aborted; now the error names the pattern, where, and what to change.
  Outcome o = encode(tok, "x " + hostile);
  EXPECT_CLEAN_ERROR(o, "the split pattern \"(a+)+b|\\s|[^\\s]\" gave up at byte 2 of a 43-byte text: PCRE2 match "
                        "limit exceeded");
  EXPECT_NE(o.last_err_line().find("make its quantifiers possessive"), std::string::npos) << o.last_err_line();
  // `frontier prepare --tokenizer`: the error names the file and line of the document.
  std::string d = make_temp_dir("tokrel_bt");
  write_text(d + "/c.jsonl", corpus(5, {nlohmann::json({{"text", hostile}}).dump()}) + corpus(5));
  Outcome p = run_argv({frontier_bin(), "prepare", "--quiet", "--train", d + "/c.jsonl", "--tokenizer", tok,
                        "--out", d + "/out"}, 120);
  EXPECT_CLEAN_ERROR(p, d + "/c.jsonl:6 (the train split, a 41-byte document): the split pattern");
  EXPECT_NE(p.last_err_line().find("gave up at byte 0 of a 41-byte text"), std::string::npos) << p.last_err_line();
  EXPECT_FALSE(fs::exists(d + "/.out.prepare")) << "the staging directory was left behind";
  fs::remove_all(d);
  fs::remove_all(fs::path(tok).parent_path());
}

TEST(TokenizerReliability, SplitPatternThatDropsBytesIsRefusedAtLoad) {
  // No alternative for punctuation or digits: "Hello, 42" encoded as "Hello " and decoded without the rest, exit 0.
  const std::string tok = tokenizer_with_pattern("\\p{L}+|\\s+");
  Outcome o = encode(tok, "Hello, 42");
  EXPECT_CLEAN_ERROR(o, tok + ": the split pattern \"\\p{L}+|\\s+\" leaves bytes out of every piece at byte 0");
  EXPECT_NE(o.last_err_line().find("(checked when the tokenizer is built or loaded)"), std::string::npos);
  std::string d = make_temp_dir("tokrel_drop");
  write_text(d + "/c.jsonl", corpus(10));
  EXPECT_CLEAN_ERROR(run_argv({frontier_bin(), "prepare", "--quiet", "--train", d + "/c.jsonl", "--tokenizer", tok,
                               "--out", d + "/out"}, 120),
                     "leaves bytes out of every piece");
  fs::remove_all(d);
  fs::remove_all(fs::path(tok).parent_path());
}

TEST(TokenizerReliability, DecodeRefusesAWordThatIsNotATokenId) {
  const std::string tok = dataset() + "/data/tokenizer";
  auto decode = [&](const std::string& ids) {
    return run_argv({frontier_bin(), "tokenizer", "--dir", tok, "--decode", "--text", ids}, 60);
  };
  Outcome ok = decode("72 101 108");
  ASSERT_EQ(ok.rc, 0) << ok.err;
  EXPECT_EQ(ok.out, "Hel");
  // "x" ended the input: "He" printed, exit 0.
  EXPECT_CLEAN_ERROR(decode("72 101 x 108"), "--decode: word 3 \"x\" is not a token id (0 to 399");
  EXPECT_CLEAN_ERROR(decode("72 12abc"), "word 2 \"12abc\" is not a token id");
  EXPECT_CLEAN_ERROR(decode("-1"), "word 1 \"-1\" is not a token id");
  EXPECT_CLEAN_ERROR(decode("400"), "word 1 \"400\" is not a token id (0 to 399");
  EXPECT_CLEAN_ERROR(decode("99999999999999999999999"), "is not a token id");
}

}  // namespace frontier::testing

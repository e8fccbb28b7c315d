#include <omp.h>

#include <random>

#include "test_util.h"
#include "tokenizer/bpe_trainer.h"
#include "tokenizer/tokenizer.h"

using namespace frontier;
using namespace frontier::testing;

namespace {

Tokenizer train_on(const std::vector<std::string>& docs, uint32_t vocab) {
  BpeTrainer t(kNanochatPattern);
  EXPECT_TRUE(t.status().ok());
  EXPECT_TRUE(t.add_documents(docs).ok());
  Tokenizer tok;
  Status s = t.train(vocab, default_special_tokens(), &tok, false);
  EXPECT_TRUE(s.ok()) << s.message();
  return tok;
}

std::vector<std::string> some_text() {
  std::vector<std::string> docs;
  std::mt19937 rng(3);
  const char* words[] = {"the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "it's", "we'll",
                         "2026", "1234567", "  ", "\n", "naïve", "日本語", "🙂", "x-ray", "  \n\n", "!!!"};
  for (int d = 0; d < 200; d++) {
    std::string s;
    for (int w = 0; w < 200; w++) {
      s += words[rng() % 20];
      if (rng() % 3) s += ' ';
    }
    docs.push_back(s);
  }
  return docs;
}

}  // namespace

TEST(RegexSplit, NanochatPatternPieces) {
  RegexSplitter sp;
  ASSERT_TRUE(sp.compile(kNanochatPattern).ok());
  std::vector<std::string> got;
  sp.for_each("Hello world's 12345  \n\nfoo!!", [&](std::string_view p) { got.emplace_back(p); });
  std::vector<std::string> want = {"Hello", " world", "'s", " ", "12", "34", "5", "  \n\n", "foo", "!!"};
  EXPECT_EQ(got, want);
  EXPECT_FALSE(sp.compile("(unclosed").ok());
}

// Issue 33: a run of millions of whitespace characters (real crawls have them) reached PCRE2's default match limit
// (10 M steps: "\s*[\r\n]" backtracks over the whole run) and aborted the process at a FRONTIER_CHECK. The retry
// with a limit in proportion to the text splits it exactly as an unlimited engine does: the pieces have the same
// shape at 1 K and 1 M characters (first try) as at 12 M (the retry), for both shipped patterns.
TEST(RegexSplit, LongWhitespaceRunSplitsAsWithoutALimit) {
  for (const char* pattern : {kNanochatPattern, kCl100kPattern}) {
    RegexSplitter sp;
    ASSERT_TRUE(sp.compile(pattern).ok());
    for (size_t n : {size_t(1000), size_t(1) << 20, size_t(12) << 20}) {
      for (char c : {' ', '\t'}) {
        const std::string run(n, c);
        std::vector<std::string_view> got;
        auto pieces = [&](const std::string& text) {
          got.clear();
          Status s = sp.for_each(text, [&](std::string_view p) { got.push_back(p); });
          EXPECT_TRUE(s.ok()) << n << ": " << s.message();
          return got.size();
        };
        const std::string between = "a" + run + "b";  // the run's last character goes with the next word
        ASSERT_EQ(pieces(between), 3u) << n;
        EXPECT_EQ(got[0], "a");
        EXPECT_EQ(got[1].size(), n - 1);
        EXPECT_EQ(got[2], std::string(1, c) + "b");
        const std::string at_end = "a" + run;  // the whole run is one piece
        ASSERT_EQ(pieces(at_end), 2u) << n;
        EXPECT_EQ(got[1].size(), n);
        const std::string before_newline = "a" + run + "\nb";  // "\s*[\r\n]": the run and its newline
        ASSERT_EQ(pieces(before_newline), 3u) << n;
        EXPECT_EQ(got[1].size(), n + 1);
        EXPECT_EQ(got[2], "b");
      }
    }
  }
}

// A pattern that backtracks exponentially gives up even with the retry's limit: a Status naming the pattern and
// where, not an abort. The pieces before the failure were delivered.
TEST(RegexSplit, BacktrackingPatternIsAnErrorNotAnAbort) {
  RegexSplitter sp;
  ASSERT_TRUE(sp.compile("(a+)+b|\\s|[^\\s]").ok());
  std::vector<std::string> got;
  Status s = sp.for_each("x " + std::string(40, 'a') + "c", [&](std::string_view p) { got.emplace_back(p); });
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("the split pattern \"(a+)+b|\\s|[^\\s]\" gave up at byte 2 of a 43-byte text: PCRE2 "
                             "match limit exceeded"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(got, (std::vector<std::string>{"x", " "}));
}

// Issue 33 (8): a pattern that leaves bytes out of every piece lost them silently (tiktoken does too). It is refused
// when compiled (the round trip of a probe text), and a text on which a pattern skips bytes anyway is an error.
TEST(RegexSplit, PatternThatDropsBytesIsRefused) {
  RegexSplitter sp;
  ASSERT_TRUE(sp.compile(kNanochatPattern).ok());
  Status s = sp.compile("\\p{L}+|\\s+");  // no alternative for punctuation or digits
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("leaves bytes out of every piece at byte 0"), std::string::npos) << s.message();
  EXPECT_EQ(sp.pattern(), kNanochatPattern);  // a refused pattern leaves the splitter as it was
  EXPECT_TRUE(sp.for_each("a, b", [](std::string_view) {}).ok());
  s = sp.compile("x\\K|\\p{L}+|\\s+|\\p{N}+|[^\\s\\p{L}\\p{N}]+");  // \K: "x" matches, but empty
  EXPECT_NE(s.message().find("leaves bytes out of every piece"), std::string::npos) << s.message();
  // Covers the probe (ASCII and the scripts in it) but not Georgian letters, which \p{L} would: refused on use.
  ASSERT_TRUE(sp.compile("[\\x01-\\x7f]+|[\\x{80}-\\x{10cf}]+|[\\x{1100}-\\x{10ffff}]+").ok());
  std::vector<std::string> got;
  s = sp.for_each("ok \xe1\x83\x90", [&](std::string_view p) { got.emplace_back(p); });  // U+10D0 is in the gap
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("leaves bytes out of every piece at byte 3 of a 6-byte text"), std::string::npos)
      << s.message();
}

// The textbook example: "aaabdaaabac" merges "aa" first.
TEST(BpeTrainer, MergesMostFrequentPairFirst) {
  BpeTrainer t(R"(\S+|\s+)");
  ASSERT_TRUE(t.add_document("aaabdaaabac").ok());
  Tokenizer tok;
  ASSERT_TRUE(t.train(256 + 3, {}, &tok, false).ok());
  EXPECT_EQ(tok.token(256), "aa");
  // Then (aa, a) and (a, b) tie at 2: the smaller pair, (97, 98), wins.
  EXPECT_EQ(tok.token(257), "ab");
  EXPECT_EQ(tok.token(258), "aaab");
}

TEST(BpeTrainer, DeterministicAcrossThreadCounts) {
  auto docs = some_text();
  omp_set_num_threads(1);
  Tokenizer a = train_on(docs, 600);
  omp_set_num_threads(2);
  Tokenizer b = train_on(docs, 600);
  EXPECT_EQ(a.fingerprint(), b.fingerprint());
  EXPECT_EQ(a.vocab_size(), 600u);
  EXPECT_EQ(a.bos_id(), 600u - 9);
}

// A document the split pattern gives up on is an error naming its index in the batch (prepare turns it into the
// document's file and line), the first in document order whatever the thread count, and nothing of the batch counts.
TEST(BpeTrainer, ADocumentThePatternGivesUpOnIsAnErrorWithItsIndex) {
  for (int threads : {1, 2}) {
    omp_set_num_threads(threads);
    BpeTrainer t("(a+)+b|\\s|[^\\s]");
    ASSERT_TRUE(t.status().ok()) << t.status().message();
    const std::string bad = std::string(40, 'a') + "c";
    size_t failed = 99;
    Status s = t.add_documents({"fine", "also fine", bad, "x", bad}, &failed);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(failed, 2u) << threads;
    EXPECT_NE(s.message().find("gave up at byte 0 of a 41-byte text"), std::string::npos) << s.message();
    EXPECT_EQ(t.n_bytes(), 0u);
    EXPECT_EQ(t.n_unique_pieces(), 0u);
  }
}

TEST(BpeTrainer, RejectsTinyVocabAndTinyCorpus) {
  BpeTrainer t(kNanochatPattern);
  ASSERT_TRUE(t.add_document("abc").ok());
  Tokenizer tok;
  Status s = t.train(260, default_special_tokens(), &tok, false);
  EXPECT_NE(s.message().find("below 256 bytes + 9 special tokens"), std::string::npos) << s.message();
  s = t.train(4000, default_special_tokens(), &tok, false);
  EXPECT_NE(s.message().find("too small for vocab_size 4000"), std::string::npos) << s.message();
}

TEST(Tokenizer, RoundTripSaveLoadAndBothMergePaths) {
  auto docs = some_text();
  Tokenizer tok = train_on(docs, 700);
  std::string dir = make_temp_dir("tok");
  ASSERT_TRUE(tok.save(dir).ok());
  Tokenizer back;
  ASSERT_TRUE(back.load(dir).ok());
  EXPECT_EQ(back.fingerprint(), tok.fingerprint());
  Tokenizer heap;
  ASSERT_TRUE(heap.load(dir).ok());
  heap.set_heap_merge_min(2);  // every piece through the heap merge
  std::mt19937 rng(11);
  for (int t = 0; t < 200; t++) {
    std::string s = docs[rng() % docs.size()].substr(rng() % 100, 1 + rng() % 400);
    // Cut at a UTF-8 boundary.
    while (!s.empty() && (static_cast<unsigned char>(s.back()) & 0xC0) == 0x80) s.pop_back();
    while (!s.empty() && static_cast<unsigned char>(s.back()) >= 0xC0) s.pop_back();
    std::vector<uint32_t> a, b;
    ASSERT_TRUE(tok.encode_ordinary(s, &a).ok());
    ASSERT_TRUE(heap.encode_ordinary(s, &b).ok());
    ASSERT_EQ(a, b) << s;
    ASSERT_EQ(tok.decode(a), s);
  }
  // A long run (one regex piece of 5,000 letters) exercises the heap path at its intended size.
  std::string run;
  for (int i = 0; i < 5000; i++) run += "thequickbrownfox"[rng() % 16];
  std::vector<uint32_t> a, b;
  tok.set_heap_merge_min(1u << 30);
  ASSERT_TRUE(tok.encode_ordinary(run, &a).ok());
  ASSERT_TRUE(heap.encode_ordinary(run, &b).ok());
  EXPECT_EQ(a, b);
  EXPECT_EQ(tok.decode(a), run);
  std::filesystem::remove_all(dir);
}

TEST(Tokenizer, LoadErrors) {
  std::string dir = make_temp_dir("tokbad");
  Tokenizer t;
  Status s = t.load(dir);
  EXPECT_NE(s.message().find("no tokenizer in"), std::string::npos) << s.message();
  write_text(dir + "/tokenizer.json", "{\"pattern\": \"\\\\S+\", \"special_tokens\": {}}");
  write_text(dir + "/tokenizer.tiktoken", "QQ== 0\nnot-base64!! 1\n");
  s = t.load(dir);
  EXPECT_NE(s.message().find("tokenizer.tiktoken:2: not a tiktoken rank line"), std::string::npos) << s.message();
  write_text(dir + "/tokenizer.tiktoken", "QQ== 0\n");
  s = t.load(dir);
  EXPECT_NE(s.message().find("lacks the single byte"), std::string::npos) << s.message();
  std::filesystem::remove_all(dir);
}

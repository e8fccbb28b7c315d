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
  t.add_documents(docs);
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

// The textbook example: "aaabdaaabac" merges "aa" first.
TEST(BpeTrainer, MergesMostFrequentPairFirst) {
  BpeTrainer t(R"(\S+|\s+)");
  t.add_document("aaabdaaabac");
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

TEST(BpeTrainer, RejectsTinyVocabAndTinyCorpus) {
  BpeTrainer t(kNanochatPattern);
  t.add_document("abc");
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
    tok.encode_ordinary(s, &a);
    heap.encode_ordinary(s, &b);
    ASSERT_EQ(a, b) << s;
    ASSERT_EQ(tok.decode(a), s);
  }
  // A long run (one regex piece of 5,000 letters) exercises the heap path at its intended size.
  std::string run;
  for (int i = 0; i < 5000; i++) run += "thequickbrownfox"[rng() % 16];
  std::vector<uint32_t> a, b;
  tok.set_heap_merge_min(1u << 30);
  tok.encode_ordinary(run, &a);
  heap.encode_ordinary(run, &b);
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

// Encoding parity with the real tiktoken (npm `tiktoken`, WASM build of OpenAI's Rust core), run through node.
//
// Three tokenizers x one text set: OpenAI's cl100k_base ranks with its own pattern, the same ranks with
// nanochat's pattern, and a tokenizer Frontier trains here, loaded into tiktoken from Frontier's rank file.
// Texts: Brown (default corpus) and Wikipedia documents, plus hand-written Unicode, whitespace, digit and
// contraction cases. Invalid UTF-8 is stated behaviour: Frontier's replacement (U+FFFD per maximal subpart) must
// give the same bytes as JavaScript's TextDecoder and then the same ids. Tolerance: exact equality of every id.
#include <nlohmann/json.hpp>

#include "data/corpus.h"
#include "data/default_corpus.h"
#include "test_util.h"
#include "tokenizer/bpe_trainer.h"
#include "tokenizer/tokenizer.h"
#include "util/base64.h"
#include "util/file.h"
#include "util/utf8.h"

using namespace frontier;
using namespace frontier::testing;
using json = nlohmann::json;

namespace {

std::vector<std::string> handwritten() {
  return {
      "Hello, world! It's a test. We'll see; they're here, I'd say, you've been, I'm fine.",
      "IT'S LOUD. WE'LL SHOUT. THEY'RE HERE. I'D. YOU'VE. I'M. 'S 'T 'Ll 'vE",
      "numbers: 1 12 123 1234 12345 3.14159 1,000,000 2026-12-02 0x1F 1e-9 ٣٤٥ १२३",
      "whitespace:  two   three    four\t\ttabs\n\nnewlines\r\n\r\nCRLF \n \n  \n   trailing   ",
      "   leading spaces and a final newline\n",
      "\n\n\n",
      "    ",
      "CJK: 日本語のテキスト、中文文本，한국어 텍스트。",
      "emoji: 🙂👍🏽👨‍👩‍👧‍👦🇩🇰 ❤️ 🤖",
      "combining: e\xCC\x81 n\xCC\x83 a\xCC\x8A\xCC\x81 Z\xCD\x91\xCD\x97\xCD\xA4 ḍ̇ q̣̇",
      "RTL: שלום עולם، مرحبا بالعالم! ‏mixed‏ עברית123",
      "punctuation runs: ...!!!??? --- ((([[[{{{ }}}]]]))) \"quoted\" 'single' `back` ~~~ @#$%^&*",
      "code: for (int i = 0; i < n; ++i) { x[i] += y[i] * 2; }\n\treturn 0;\n",
      "long s: ſtraße Kelvin K ﬁne ǅ İstanbul ΣΊΣΥΦΟΣ",
      "nbsp:\xC2\xA0\xC2\xA0x ideographic\xE3\x80\x80space en\xE2\x80\x82space line\xE2\x80\xA8sep",
      "a",
      std::string(3000, 'a') + " " + std::string(500, ' ') + "end",
      "mixed123abc456def 42nd 1st 2nd 3rd 99problems",
  };
}

// Invalid UTF-8 inputs: Frontier repairs them (utf8_replace_invalid); the peer decodes with TextDecoder.
std::vector<std::string> invalid_utf8() {
  return {"bad \xFF byte", "truncated \xE2\x82", "overlong \xC0\xAF slash", "surrogate \xED\xA0\x80 half",
          "too big \xF4\x90\x80\x80", "lone cont \x80\x80 x", "mix \xF0\x9F\x98 ok \xF0\x9F\x98\x80"};
}

std::vector<std::string> corpus_sample(std::unique_ptr<DocumentSource> src, size_t n, size_t max_bytes) {
  std::vector<std::string> out;
  std::string d;
  bool eof = false;
  size_t k = 0;
  while (out.size() < n && src->next(&d, &eof).ok() && !eof) {
    if (k++ % 3 == 0) out.push_back(d.substr(0, max_bytes));
  }
  for (auto& s : out) s = utf8_replace_invalid(s);  // substr may cut a code point
  return out;
}

std::vector<std::vector<uint32_t>> tiktoken_encode(json req, const std::vector<std::string>& texts,
                                                   const std::string& dir, std::vector<std::string>* peer_texts) {
  req["texts_b64"] = json::array();
  for (auto& t : texts) req["texts_b64"].push_back(base64_encode(t));
  EXPECT_TRUE(write_file_atomic(dir + "/req.json", req.dump()).ok());
  auto r = run_cmd("node " + source_dir() + "/tests/tiktoken/encode.mjs " + dir + "/req.json " + dir + "/resp.json");
  EXPECT_EQ(r.rc, 0) << "node/tiktoken failed (run scripts/install_deps.sh): " << r.out;
  std::string text;
  EXPECT_TRUE(read_file(dir + "/resp.json", &text).ok());
  json resp = json::parse(text);
  std::vector<std::vector<uint32_t>> ids;
  for (auto& v : resp["ids"]) ids.push_back(v.get<std::vector<uint32_t>>());
  if (peer_texts) {
    peer_texts->clear();
    std::string b;
    for (auto& v : resp["texts_b64"]) {
      base64_decode(v.get<std::string>(), &b);
      peer_texts->push_back(b);
    }
  }
  return ids;
}

class TiktokenParity : public ::testing::Test {
 protected:
  // Failures here are recorded and reported by every test (a fatal failure in SetUpTestSuite would mark the
  // tests skipped, and a missing peer or data set must fail, not skip).
  static void SetUpTestSuite() {
    dir_ = make_temp_dir("tiktoken");
    texts_ = handwritten();
    std::unique_ptr<DocumentSource> brown;
    Status s = open_default_corpus(&brown);
    if (!s.ok()) {
      setup_error_ = "default corpus missing: " + s.message();
      return;
    }
    for (auto& t : corpus_sample(std::move(brown), 60, 20000)) texts_.push_back(t);
    if (!std::filesystem::exists(wiki_dir() + "/wiki_07.jsonl.zst")) {
      setup_error_ = "shared data missing at " + wiki_dir() + " (this test needs ../shared/data)";
      return;
    }
    std::unique_ptr<DocumentSource> wiki;
    s = open_files({wiki_dir() + "/wiki_07.jsonl.zst"}, Utf8Policy::kError, &wiki);
    if (!s.ok()) {
      setup_error_ = s.message();
      return;
    }
    for (auto& t : corpus_sample(std::move(wiki), 120, 30000)) texts_.push_back(t);
    n_valid_ = texts_.size();
    for (auto& t : invalid_utf8()) texts_.push_back(t);
  }
  void SetUp() override { ASSERT_TRUE(setup_error_.empty()) << setup_error_; }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }

  // Encodes every text with tok (invalid ones repaired first) and with tiktoken; all ids must agree.
  void check(const Tokenizer& tok, const json& req) {
    std::vector<std::string> peer_texts;
    auto want = tiktoken_encode(req, texts_, dir_, &peer_texts);
    ASSERT_EQ(want.size(), texts_.size());
    size_t n_tokens = 0, n_bytes = 0;
    for (size_t i = 0; i < texts_.size(); i++) {
      std::string text = utf8_replace_invalid(texts_[i]);
      ASSERT_EQ(text, peer_texts[i]) << "U+FFFD replacement differs from TextDecoder on case " << i;
      std::vector<uint32_t> got;
      ASSERT_TRUE(tok.encode_ordinary(text, &got).ok()) << "encoding text " << i;
      ASSERT_EQ(got, want[i]) << "token ids differ on text " << i << ": " << text.substr(0, 200);
      ASSERT_EQ(tok.decode(got), text) << "decode is not byte-exact on text " << i;
      n_tokens += got.size();
      n_bytes += text.size();
    }
    std::printf("[parity] %zu texts (%zu with invalid UTF-8), %.2f MB, %zu tokens: identical ids\n",
                texts_.size(), texts_.size() - n_valid_, n_bytes / 1e6, n_tokens);
  }

  static Tokenizer cl100k(const std::string& pattern) {
    json req = {{"encoding", "cl100k_base"}, {"cl100k_out", dir_ + "/cl100k.tiktoken"}};
    tiktoken_encode(req, {"x"}, dir_, nullptr);
    std::vector<std::string> ranks;
    Status s = Tokenizer::read_rank_file(dir_ + "/cl100k.tiktoken", &ranks);
    EXPECT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(ranks.size(), 100256u);
    Tokenizer tok;
    s = Tokenizer::create(ranks, pattern, {{"<|endoftext|>", 100257}}, &tok);
    EXPECT_TRUE(s.ok()) << s.message();
    return tok;
  }

  static inline std::string dir_;
  static inline std::vector<std::string> texts_;
  static inline size_t n_valid_ = 0;
  static inline std::string setup_error_;
};

}  // namespace

TEST_F(TiktokenParity, Cl100kBaseWithItsOwnPattern) {
  Tokenizer tok = cl100k(kCl100kPattern);
  check(tok, {{"encoding", "cl100k_base"}});
}

TEST_F(TiktokenParity, Cl100kRanksWithNanochatPattern) {
  Tokenizer tok = cl100k(kNanochatPattern);
  check(tok, {{"encoding", "cl100k_base"}, {"pattern", kNanochatPattern}});
}

TEST_F(TiktokenParity, FrontierTrainedTokenizerLoadsInTiktoken) {
  std::unique_ptr<DocumentSource> src;
  ASSERT_TRUE(open_default_corpus(&src).ok());
  BpeTrainer trainer(kNanochatPattern);
  std::vector<std::string> docs;
  std::string d;
  bool eof = false;
  while (src->next(&d, &eof).ok() && !eof) docs.push_back(d);
  trainer.add_documents(docs);
  Tokenizer tok;
  ASSERT_TRUE(trainer.train(8192, default_special_tokens(), &tok, false).ok());
  ASSERT_TRUE(tok.save(dir_ + "/trained").ok());
  json specials = json::object();
  for (auto& [name, id] : tok.specials()) specials[name] = id;
  check(tok, {{"encoding", nullptr},
              {"ranks_file", dir_ + "/trained/tokenizer.tiktoken"},
              {"pattern", tok.pattern()},
              {"specials", specials}});
}

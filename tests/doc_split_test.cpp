// split_document (data/doc_split.h): pieces within the limit, concatenating to the document, cut at the strongest
// boundary available; and prepare's --max-doc-bytes (hold-out per source document, before the split).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/doc_split.h"
#include "data/prepare.h"
#include "test_util.h"

using namespace frontier;
using namespace frontier::testing;

namespace {

std::vector<std::string> split(const std::string& doc, size_t max_bytes) {
  std::vector<std::string_view> v;
  split_document(doc, max_bytes, &v);
  std::string joined;
  for (auto p : v) {
    EXPECT_FALSE(p.empty());
    if (max_bytes > 0) {
      EXPECT_LE(p.size(), max_bytes) << p;
    }
    joined += p;
  }
  EXPECT_EQ(joined, doc);  // the pieces give the document back byte for byte
  return {v.begin(), v.end()};
}

// n random lowercase words of 2-8 letters, space-separated.
std::string words(uint32_t* x, int n) {
  std::string out;
  for (int i = 0; i < n; i++) {
    if (i) out += ' ';
    *x = *x * 1103515245u + 12345u;
    int len = 2 + static_cast<int>((*x >> 16) % 7);
    for (int k = 0; k < len; k++) {
      *x = *x * 1103515245u + 12345u;
      out += static_cast<char>('a' + (*x >> 16) % 26);
    }
  }
  return out;
}

}  // namespace

TEST(DocSplit, ShortOrUnlimitedDocumentsStayWhole) {
  EXPECT_EQ(split("short text.", 100), std::vector<std::string>{"short text."});
  EXPECT_EQ(split(std::string(5000, 'a'), 0).size(), 1u);
  EXPECT_EQ(split("exactly ten", 11).size(), 1u);
}

TEST(DocSplit, PrefersParagraphThenLineThenSentenceThenSpace) {
  // A paragraph break within the limit wins over a later sentence end.
  EXPECT_EQ(split("Para one. Still one.\n\nPara two. More text here. And more.", 40),
            (std::vector<std::string>{"Para one. Still one.\n\n", "Para two. More text here. And more."}));
  // No paragraph break: the last line break.
  EXPECT_EQ(split("line one\nline two\nline three is long", 25),
            (std::vector<std::string>{"line one\nline two\n", "line three is long"}));
  // No newline: the last sentence end (closing quote included), not the last space.
  EXPECT_EQ(split("He said \"stop.\" Then he went away quickly", 30),
            (std::vector<std::string>{"He said \"stop.\" ", "Then he went away quickly"}));
  EXPECT_EQ(split("Is it? Yes it is really so", 20), (std::vector<std::string>{"Is it? ", "Yes it is really so"}));
  // No sentence end: the last space.
  EXPECT_EQ(split("alpha beta gamma delta", 12), (std::vector<std::string>{"alpha beta ", "gamma delta"}));
  // A run of newlines after a paragraph stays with the piece before it.
  EXPECT_EQ(split("abc\n\n\n\ndef ghi", 8), (std::vector<std::string>{"abc\n\n\n\n", "def ghi"}));
}

TEST(DocSplit, NeverSplitsAUtf8Character) {
  std::string doc;
  for (int i = 0; i < 200; i++) doc += "東京🙂é";  // 3 + 4 + 2 bytes, no boundary at all
  for (size_t max_bytes : {4, 5, 7, 10, 64, 1000}) {
    for (const auto& p : split(doc, max_bytes)) {
      ASSERT_FALSE(p.empty());
      EXPECT_NE(static_cast<unsigned char>(p[0]) & 0xC0, 0x80) << "a piece starts inside a character";
    }
  }
}

TEST(DocSplit, LongTextPiecesAreNearTheLimit) {
  // Sentences of 20-60 bytes: every cut but the last is a sentence end, and pieces use most of the limit.
  std::string doc;
  uint32_t x = 7;
  for (int s = 0; s < 400; s++) doc += words(&x, 4 + s % 8) + ". ";
  auto pieces = split(doc, 512);
  ASSERT_GT(pieces.size(), 10u);
  for (size_t i = 0; i + 1 < pieces.size(); i++) {
    EXPECT_EQ(pieces[i].substr(pieces[i].size() - 2), ". ");
    EXPECT_GT(pieces[i].size(), 512u - 100) << "a piece far below the limit: the cut was not the last boundary";
  }
}

TEST(Prepare, MaxDocBytesSplitsAfterTheHoldOut) {
  std::string d = make_temp_dir("prep_split");
  std::filesystem::create_directories(d + "/corpus");
  // 40 documents of about 3 KB, in paragraphs: every 10th is held out whole, the others split into pieces.
  std::vector<std::string> docs;
  std::string jsonl;
  uint32_t x = 11;
  for (int i = 0; i < 40; i++) {
    std::string doc;
    for (int p = 0; p < 12; p++) doc += words(&x, 40) + ".\n\n";
    docs.push_back(doc);
    jsonl += nlohmann::json({{"text", doc}}).dump() + "\n";
  }
  write_text(d + "/corpus/part.jsonl", jsonl);
  PrepareOptions o;
  o.train_inputs = {d + "/corpus"};
  o.out_dir = d + "/out";
  o.vocab_size = 400;
  o.val_every = 10;
  o.progress = false;
  o.max_doc_bytes = 1000;
  PrepareResult r;
  Status s = prepare(o, &r);
  ASSERT_TRUE(s.ok()) << s.message();
  // Pieces of each source document: what split_document gives; the held-out documents are 9, 19, 29, 39.
  std::vector<std::string> want_train, want_val;
  for (size_t i = 0; i < docs.size(); i++)
    for (auto& p : split(docs[i], 1000)) ((i % 10 == 9) ? want_val : want_train).push_back(p);
  EXPECT_EQ(r.train.docs, want_train.size());
  EXPECT_EQ(r.val.docs, want_val.size());
  EXPECT_GT(r.train.docs, 36u * 3) << "3 KB documents at 1,000 bytes should give at least 3 pieces each";
  PreparedData data;
  ASSERT_TRUE(data.open(o.out_dir).ok());
  for (const char* name : {"train", "val"}) {
    std::vector<Shard> shards;
    ASSERT_TRUE(data.open_split(name, &shards).ok());
    auto& want = std::string(name) == "train" ? want_train : want_val;
    size_t k = 0;
    for (auto& sh : shards)
      for (uint64_t doc = 0; doc < sh.n_docs(); doc++, k++) {
        std::vector<uint32_t> ids;
        for (uint64_t t = sh.doc_begin(doc) + 1; t < sh.doc_begin(doc) + sh.doc_len(doc); t++) ids.push_back(sh.token(t));
        ASSERT_LT(k, want.size());
        EXPECT_EQ(data.tokenizer().decode(ids), want[k]) << name << " piece " << k;
      }
    EXPECT_EQ(k, want.size());
  }
  // The manifest records the setting, and changing it rebuilds.
  std::string manifest;
  ASSERT_TRUE(read_file(o.out_dir + "/manifest.json", &manifest).ok());
  EXPECT_NE(manifest.find("\"max_doc_bytes\": 1000"), std::string::npos);
  o.max_doc_bytes = 0;
  ASSERT_TRUE(prepare(o, &r).ok());
  EXPECT_FALSE(r.up_to_date);
  EXPECT_EQ(r.train.docs, 36u);
  std::filesystem::remove_all(d);
}

#include <zstd.h>

#include "data/corpus.h"
#include "data/default_corpus.h"
#include "test_util.h"

using namespace frontier;
using namespace frontier::testing;

namespace {

std::vector<std::string> read_all(const std::vector<std::string>& specs, Status* st,
                                  Utf8Policy policy = Utf8Policy::kError) {
  std::vector<std::string> files, docs;
  *st = expand_inputs(specs, &files);
  if (!st->ok()) return docs;
  std::unique_ptr<DocumentSource> src;
  *st = open_files(files, policy, &src);
  if (!st->ok()) return docs;
  std::string d;
  bool eof = false;
  while (true) {
    *st = src->next(&d, &eof);
    if (!st->ok() || eof) break;
    docs.push_back(d);
  }
  return docs;
}

std::string zstd_compress(const std::string& s) {
  std::string out(ZSTD_compressBound(s.size()), 0);
  size_t n = ZSTD_compress(out.data(), out.size(), s.data(), s.size(), 3);
  out.resize(n);
  return out;
}

}  // namespace

TEST(Corpus, ReadsTxtJsonlAndZstInOrder) {
  std::string d = make_temp_dir("corpus");
  std::filesystem::create_directories(d + "/sub");
  write_text(d + "/a.txt", "first document\nwith two lines");
  write_text(d + "/b.jsonl", "{\"id\": 1, \"text\": \"json one\"}\n\n{\"text\": \"json \\u00e9 two\", \"x\": [1]}\n");
  write_text(d + "/sub/c.jsonl.zst", zstd_compress("{\"text\": \"zst doc\"}\n{\"text\": \"\"}\n{\"text\": \"last\"}"));
  write_text(d + "/ignored.csv", "not read");
  Status st;
  auto docs = read_all({d}, &st);
  ASSERT_TRUE(st.ok()) << st.message();
  std::vector<std::string> want = {"first document\nwith two lines", "json one", "json \xC3\xA9 two", "zst doc", "last"};
  EXPECT_EQ(docs, want);  // empty "text" is skipped
  auto globbed = read_all({d + "/*.jsonl"}, &st);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(globbed.size(), 2u);
  std::filesystem::remove_all(d);
}

TEST(Corpus, StreamsLargeZstWithBoundedChunks) {
  std::string d = make_temp_dir("corpus_big");
  std::string jsonl;
  for (int i = 0; i < 20000; i++) jsonl += "{\"text\": \"document number " + std::to_string(i) + " " +
                                           std::string(200, 'x') + "\"}\n";
  write_text(d + "/big.jsonl.zst", zstd_compress(jsonl));
  Status st;
  auto docs = read_all({d + "/big.jsonl.zst"}, &st);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(docs.size(), 20000u);
  EXPECT_EQ(docs[12345].substr(0, 21), "document number 12345");
  std::filesystem::remove_all(d);
}

TEST(Corpus, BadInputErrorsNameTheProblem) {
  std::string d = make_temp_dir("corpus_bad");
  Status st;
  read_all({d + "/nope.jsonl"}, &st);
  EXPECT_NE(st.message().find("input not found"), std::string::npos) << st.message();
  write_text(d + "/x.csv", "a,b\n");
  read_all({d + "/x.csv"}, &st);
  EXPECT_NE(st.message().find("unknown input format"), std::string::npos) << st.message();
  write_text(d + "/x.parquet", "PAR1");
  read_all({d + "/x.parquet"}, &st);
  EXPECT_NE(st.message().find("x.parquet: not a Parquet file (4 bytes"), std::string::npos) << st.message();
  std::filesystem::create_directories(d + "/empty");
  read_all({d + "/empty"}, &st);
  EXPECT_NE(st.message().find("no .txt, .jsonl, .jsonl.zst or .parquet files"), std::string::npos)
      << st.message();
  write_text(d + "/notext.jsonl", "{\"text\": \"ok\"}\n{\"title\": \"no text here\"}\n");
  read_all({d + "/notext.jsonl"}, &st);
  EXPECT_NE(st.message().find("notext.jsonl:2: no \"text\" field"), std::string::npos) << st.message();
  write_text(d + "/badjson.jsonl", "{\"text\": \"ok\"}\n{not json\n");
  read_all({d + "/badjson.jsonl"}, &st);
  EXPECT_NE(st.message().find("badjson.jsonl:2: not a JSON object"), std::string::npos) << st.message();
  write_text(d + "/badutf.txt", "good \xFF bad");
  read_all({d + "/badutf.txt"}, &st);
  EXPECT_NE(st.message().find("invalid UTF-8 at byte 5"), std::string::npos) << st.message();
  auto fixed = read_all({d + "/badutf.txt"}, &st, Utf8Policy::kReplace);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(fixed[0], "good \xEF\xBF\xBD bad");
  write_text(d + "/trunc.jsonl.zst", zstd_compress("{\"text\": \"abc\"}\n").substr(0, 10));
  read_all({d + "/trunc.jsonl.zst"}, &st);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("trunc.jsonl.zst"), std::string::npos) << st.message();
  std::filesystem::remove_all(d);
}

TEST(DefaultCorpus, BrownDetokenization) {
  std::string tagged =
      "\n\n\tThe/at jury/nn said/vbd ``/`` no/at evidence/nn ''/'' ,/, and/cc it/pps didn't/dod* (/( see/vb )/) "
      "it/ppo ./.\nIt/pps was/bedz $/$ 5/cd ./.\n\n\n\t``/`` Only/rb this/dt ''/'' ./.\n";
  EXPECT_EQ(brown_detokenize(tagged),
            "The jury said \"no evidence\", and it didn't (see) it. It was $5.\n\n\"Only this\".");
}

TEST(DefaultCorpus, InstalledAndReadsAsEnglish) {
  std::vector<std::string> files;
  Status st = default_corpus_files(&files);
  ASSERT_TRUE(st.ok()) << st.message() << " (run scripts/install_deps.sh)";
  EXPECT_EQ(files.size(), 600u);
  std::unique_ptr<DocumentSource> src;
  ASSERT_TRUE(open_default_corpus(&src).ok());
  std::string doc;
  bool eof = false;
  int n = 0;
  std::string first;
  while (true) {
    ASSERT_TRUE(src->next(&doc, &eof).ok());
    if (eof) break;
    if (n == 0) first = doc;
    EXPECT_EQ(doc.find("/nn "), std::string::npos) << "tags left in document " << n;
    n++;
  }
  EXPECT_EQ(n, 500 + 1000);
  EXPECT_EQ(first.substr(0, 60), "The Fulton County Grand Jury said Friday an investigation of");
}

#include <nlohmann/json.hpp>

#include "data/dataset.h"
#include "data/prepare.h"
#include "test_util.h"
#include "util/file.h"

using namespace frontier;
using namespace frontier::testing;

namespace {

// A small corpus of varied documents: jsonl + txt.
std::vector<std::string> write_corpus(const std::string& dir, int n) {
  std::filesystem::create_directories(dir);
  std::vector<std::string> docs;
  std::string jsonl;
  const char* words[] = {"river", "mountain", "the", "of", "a", "city", "1987", "it's", "north", "café", "Zürich",
                         "population", "was", "in", "and", "—", "\"quoted\"", "(1,234)", "東京", "🙂"};
  uint32_t x = 1;
  for (int i = 0; i < n; i++) {
    std::string d = "Document " + std::to_string(i) + ".";
    int len = 20 + i % 37;
    for (int w = 0; w < len; w++) {
      x = x * 1103515245u + 12345u;
      d += (w % 9 == 8) ? "\n" : " ";
      d += words[(x >> 16) % 20];
    }
    docs.push_back(d);
    jsonl += nlohmann::json({{"text", d}, {"id", i}}).dump() + "\n";
  }
  write_text(dir + "/part.jsonl", jsonl);
  return docs;
}

PrepareOptions small_opts(const std::string& corpus, const std::string& out) {
  PrepareOptions o;
  o.train_inputs = {corpus};
  o.out_dir = out;
  o.vocab_size = 400;
  o.val_every = 10;
  o.shard_tokens = 2000;  // several shards
  o.progress = false;
  return o;
}

}  // namespace

TEST(Prepare, ShardsDecodeBackToTheDocumentsInOrder) {
  std::string d = make_temp_dir("prep");
  auto docs = write_corpus(d + "/corpus", 300);
  PrepareResult r;
  Status s = prepare(small_opts(d + "/corpus", d + "/out"), &r);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_FALSE(r.up_to_date);
  EXPECT_EQ(r.train.docs, 270u);
  EXPECT_EQ(r.val.docs, 30u);
  EXPECT_GT(r.train.shards.size(), 2u);
  PreparedData data;
  ASSERT_TRUE(data.open(d + "/out").ok());
  EXPECT_EQ(data.tokenizer().vocab_size(), 400u);
  EXPECT_EQ(data.token_bytes().size(), 400u);
  EXPECT_EQ(data.token_bytes()[data.tokenizer().bos_id()], 0);
  EXPECT_EQ(data.token_bytes()[65], 1);
  size_t train_i = 0, val_i = 0;
  std::vector<std::string> train_docs, val_docs;
  for (size_t i = 0; i < docs.size(); i++) ((i % 10 == 9) ? val_docs : train_docs).push_back(docs[i]);
  for (const char* split : {"train", "val"}) {
    std::vector<Shard> shards;
    ASSERT_TRUE(data.open_split(split, &shards).ok());
    auto& want = std::string(split) == "train" ? train_docs : val_docs;
    size_t& k = std::string(split) == "train" ? train_i : val_i;
    for (auto& sh : shards) {
      for (uint64_t doc = 0; doc < sh.n_docs(); doc++) {
        std::vector<uint32_t> ids;
        for (uint64_t t = sh.doc_begin(doc) + 1; t < sh.doc_begin(doc) + sh.doc_len(doc); t++)
          ids.push_back(sh.token(t));
        ASSERT_LT(k, want.size());
        ASSERT_EQ(data.tokenizer().decode(ids), want[k]) << split << " doc " << k;
        k++;
      }
    }
  }
  EXPECT_EQ(train_i, train_docs.size());
  EXPECT_EQ(val_i, val_docs.size());
  std::filesystem::remove_all(d);
}

TEST(Prepare, RerunIsANoOpAndChangedInputRebuilds) {
  std::string d = make_temp_dir("prep_noop");
  write_corpus(d + "/corpus", 120);
  auto opt = small_opts(d + "/corpus", d + "/out");
  PrepareResult r;
  ASSERT_TRUE(prepare(opt, &r).ok());
  auto mtime = std::filesystem::last_write_time(d + "/out/train_000.bin");
  ASSERT_TRUE(prepare(opt, &r).ok());
  EXPECT_TRUE(r.up_to_date);
  EXPECT_EQ(std::filesystem::last_write_time(d + "/out/train_000.bin"), mtime);
  write_text(d + "/corpus/more.txt", "A new document arrives and changes the inputs.");
  ASSERT_TRUE(prepare(opt, &r).ok());
  EXPECT_FALSE(r.up_to_date);
  std::filesystem::remove_all(d);
}

TEST(Prepare, InterruptedOrCorruptOutputIsNeverTrusted) {
  std::string d = make_temp_dir("prep_corrupt");
  write_corpus(d + "/corpus", 120);
  auto opt = small_opts(d + "/corpus", d + "/out");
  PrepareResult r;
  ASSERT_TRUE(prepare(opt, &r).ok());
  // Flip one byte of a shard: the SHA-256 check names the file.
  std::string bytes;
  ASSERT_TRUE(read_file(d + "/out/train_001.bin", &bytes).ok());
  bytes[100] ^= 1;
  write_text(d + "/out/train_001.bin", bytes);
  PreparedData data;
  Status s = data.open(d + "/out");
  EXPECT_NE(s.message().find("train_001.bin does not match its SHA-256"), std::string::npos) << s.message();
  // Truncation is caught by size even without hashing.
  write_text(d + "/out/train_001.bin", bytes.substr(0, 50));
  s = data.open(d + "/out", /*verify=*/false);
  EXPECT_NE(s.message().find("wrong size"), std::string::npos) << s.message();
  // A run killed before its manifest: stale .tmp files and no manifest -> not a dataset, and prepare rebuilds.
  std::filesystem::remove(d + "/out/manifest.json");
  write_text(d + "/out/train_002.bin.tmp", "half written");
  s = data.open(d + "/out");
  EXPECT_NE(s.message().find("manifest.json missing"), std::string::npos) << s.message();
  ASSERT_TRUE(prepare(opt, &r).ok());
  EXPECT_FALSE(r.up_to_date);
  EXPECT_TRUE(data.open(d + "/out").ok());
  std::filesystem::remove_all(d);
}

TEST(Prepare, TokenizerDataMismatchIsAnError) {
  std::string d = make_temp_dir("prep_mismatch");
  write_corpus(d + "/corpus", 120);
  PrepareResult r;
  ASSERT_TRUE(prepare(small_opts(d + "/corpus", d + "/a"), &r).ok());
  auto ob = small_opts(d + "/corpus", d + "/b");
  ob.vocab_size = 350;
  ASSERT_TRUE(prepare(ob, &r).ok());
  // Swap in the other tokenizer: the manifest fingerprint no longer matches (sizes differ, so it is caught first
  // by size, or by fingerprint when sizes happen to agree).
  std::filesystem::remove_all(d + "/a/tokenizer");
  std::filesystem::copy(d + "/b/tokenizer", d + "/a/tokenizer");
  PreparedData data;
  Status s = data.open(d + "/a", /*verify=*/false);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(s.message().find("wrong size") != std::string::npos ||
              s.message().find("not the one the shards were made with") != std::string::npos)
      << s.message();
  // Reusing a tokenizer: --tokenizer b gives shards with b's vocab.
  auto oc = small_opts(d + "/corpus", d + "/c");
  oc.tokenizer_dir = d + "/b/tokenizer";
  ASSERT_TRUE(prepare(oc, &r).ok());
  EXPECT_EQ(r.vocab_size, 350u);
  std::vector<Shard> shards;
  ASSERT_TRUE(data.open(d + "/c").ok());
  ASSERT_TRUE(data.open_split("train", &shards).ok());
  Shard wrong;
  s = wrong.open(d + "/c/train_000.bin", 400);
  EXPECT_NE(s.message().find("has vocab_size 350 but the tokenizer has 400"), std::string::npos) << s.message();
  std::filesystem::remove_all(d);
}

// The CLI: bad input gets one line "error: ..." and a non-zero exit.
TEST(PrepareCli, BadInputOneLineErrors) {
  std::string d = make_temp_dir("prep_cli");
  write_corpus(d + "/corpus", 50);
  write_text(d + "/empty.jsonl", "");
  write_text(d + "/bad.jsonl", "{\"title\": \"x\"}\n");
  write_text(d + "/badutf.txt", "abc \xC3 def");
  struct Case {
    std::string args, expect;
  };
  std::vector<Case> cases = {
      {"--train " + d + "/missing.jsonl", "input not found"},
      {"--train " + d + "/empty.jsonl", "has no documents"},
      {"--train " + d + "/bad.jsonl", "bad.jsonl:1: no \"text\" field"},
      {"--train " + d + "/badutf.txt", "invalid UTF-8 at byte 4"},
      {"--train " + d + "/corpus --vocab-size 200", "below 256 bytes + 9 special tokens"},
      {"--train " + d + "/corpus --vocab-size 100000", "too small for vocab_size 100000"},
      {"--train " + d + "/corpus --out /proc/frontier_cannot_write", "cannot create directory"},
      {"--train " + d + "/corpus --tokenizer " + d + "/none", "no tokenizer in"},
  };
  for (auto& c : cases) {
    std::string out = c.args.find("--out") == std::string::npos ? " --out " + d + "/out " : " ";
    auto r = run_cmd(frontier_bin() + " prepare --quiet" + out + c.args);
    EXPECT_NE(r.rc, 0) << c.args;
    EXPECT_NE(r.out.find("error: "), std::string::npos) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.expect), std::string::npos) << c.args << "\n" << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << "one line: " << r.out;
  }
  auto r = run_cmd(frontier_bin() + " prepare --no-such-flag");
  EXPECT_NE(r.rc, 0);
  r = run_cmd(frontier_bin() + " prepare --quiet --train " + d + "/badutf.txt --invalid-utf8 replace --vocab-size 266 "
              "--val-every 2 --out " + d + "/fixed");
  // One document cannot be split into train and val: a clear error, not a crash.
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("has no documents"), std::string::npos) << r.out;
  std::filesystem::remove_all(d);
}

// The benchmark corpus end to end: Wikipedia train shard -> tokenizer + shards, pinned validation shard.
TEST(PrepareWikipedia, TrainShardAndPinnedValidation) {
  REQUIRE_SHARED_DATA();
  std::string d = make_temp_dir("prep_wiki");
  PrepareOptions o;
  o.train_inputs = {wiki_dir() + "/wiki_00.jsonl.zst"};
  o.val_inputs = {wiki_dir() + "/wiki_07.jsonl.zst"};
  o.out_dir = d + "/out";
  o.progress = false;
  PrepareResult r;
  Status s = prepare(o, &r);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(r.vocab_size, 8192u);
  EXPECT_EQ(r.val.docs, 1619u);  // every article of wiki_07
  double bpt = static_cast<double>(r.val.bytes) / r.val.tokens;
  std::printf("[wiki] train %.1f MB -> %.2fM tokens; val %.2fM tokens, %.3f bytes/token\n", r.train.bytes / 1e6,
              r.train.tokens / 1e6, r.val.tokens / 1e6, bpt);
  EXPECT_GT(bpt, 3.0);  // an 8k BPE on English Wikipedia compresses to about 3.8 bytes per token
  std::filesystem::remove_all(d);
}

// A real interruption: SIGKILL in the middle of encoding. Nothing left behind is trusted; the rerun rebuilds.
TEST(PrepareCli, KilledRunIsNotTrustedAndRerunRecovers) {
  REQUIRE_SHARED_DATA();
  std::string d = make_temp_dir("prep_kill");
  // Three train shards (~75 MB of text) on one thread: several seconds of work, so the kill lands mid-run.
  std::string cmd = frontier_bin() + " prepare --quiet --threads 1 --train '" + wiki_dir() +
                    "/wiki_0[0-2].jsonl.zst' --val " + wiki_dir() + "/wiki_07.jsonl.zst --out " + d + "/out";
  auto r = run_cmd("timeout -s KILL 1.5 " + cmd);
  EXPECT_NE(r.rc, 0) << "prepare finished before it could be killed; the test needs a longer job";
  PreparedData data;
  Status s = data.open(d + "/out", false);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("manifest.json missing"), std::string::npos) << s.message();
  r = run_cmd(cmd);
  ASSERT_EQ(r.rc, 0) << r.out;
  s = data.open(d + "/out");
  EXPECT_TRUE(s.ok()) << s.message();
  for (auto& e : std::filesystem::directory_iterator(d + "/out"))
    EXPECT_NE(e.path().extension(), ".tmp") << e.path();
  std::filesystem::remove_all(d);
}

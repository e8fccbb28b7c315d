#include <set>

#include "data/loader.h"
#include "data/shard.h"
#include "test_util.h"

using namespace frontier;
using namespace frontier::testing;

namespace {

constexpr uint32_t kBos = 1;

// Writes a shard of the given documents (each gets BOS prepended) and opens it.
Shard make_shard(const std::string& path, const std::vector<std::vector<uint32_t>>& docs, uint32_t vocab = 5000) {
  std::vector<uint32_t> toks;
  std::vector<uint64_t> off = {0};
  for (auto& d : docs) {
    toks.push_back(kBos);
    toks.insert(toks.end(), d.begin(), d.end());
    off.push_back(toks.size());
  }
  EXPECT_TRUE(write_shard(path, vocab, kBos, toks, off).ok());
  Shard s;
  Status st = s.open(path, vocab);
  EXPECT_TRUE(st.ok()) << st.message();
  return s;
}

// Documents whose second token is a unique id (100 + index), of varied lengths.
std::vector<std::vector<uint32_t>> varied_docs(int n, uint32_t seed) {
  std::vector<std::vector<uint32_t>> docs;
  uint32_t x = seed;
  for (int i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    std::vector<uint32_t> d = {static_cast<uint32_t>(100 + i)};
    int len = 1 + (x >> 16) % 90;
    for (int k = 0; k < len; k++) d.push_back(2 + (x + k) % 50);
    docs.push_back(d);
  }
  return docs;
}

}  // namespace

TEST(Shard, RoundTripAndCorruptionIsAnError) {
  std::string d = make_temp_dir("shard");
  Shard s = make_shard(d + "/a.bin", {{5, 6, 7}, {8}});
  EXPECT_EQ(s.n_docs(), 2u);
  EXPECT_EQ(s.n_tokens(), 6u);
  EXPECT_EQ(s.header().token_width, 2u);
  EXPECT_EQ(s.doc_len(0), 4u);
  std::vector<int32_t> t(6);
  s.copy_tokens(0, 6, t.data());
  EXPECT_EQ(t, (std::vector<int32_t>{1, 5, 6, 7, 1, 8}));
  std::string bytes;
  ASSERT_TRUE(read_file(d + "/a.bin", &bytes).ok());
  auto expect_error = [&](std::string data, const std::string& what, uint32_t vocab = 5000) {
    write_text(d + "/b.bin", data);
    Shard b;
    Status st = b.open(d + "/b.bin", vocab);
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find(what), std::string::npos) << st.message();
  };
  std::string m = bytes;
  m[0] = 'X';
  expect_error(m, "bad magic");
  m = bytes;
  m[8] = 9;
  expect_error(m, "version 9");
  expect_error(bytes.substr(0, bytes.size() - 3), "header implies");
  expect_error(bytes.substr(0, 20), "shorter than the 64-byte header");
  expect_error(bytes, "has vocab_size 5000 but the tokenizer has 8192", 8192);
  m = bytes;
  m[64 + 2 * 1] = static_cast<char>(0xFF);  // token 1 -> 0x??FF, still < 65536 but >= vocab 5000
  m[64 + 2 * 1 + 1] = static_cast<char>(0xFF);
  expect_error(m, ">= vocab_size");
  std::filesystem::remove_all(d);
}

// A hand-traced case of nanochat's rule: largest doc that fits, else crop the shortest; first on ties.
TEST(BestFitLoader, MatchesHandTracedPacking) {
  std::string d = make_temp_dir("loader_hand");
  std::vector<Shard> shards;
  shards.push_back(make_shard(d + "/s.bin", {{10, 11, 12}, {20}, {30, 31}}));  // lengths 4, 2, 3 with BOS
  BestFitLoader L;
  LoaderConfig cfg;
  cfg.B = 4;
  cfg.T = 2;  // rows of 3 tokens
  cfg.shuffle = false;
  cfg.buffer_size = 3;
  cfg.doc_batch = 3;
  cfg.min_one_batch = false;  // 9 tokens for a 12-token batch: this trace wraps on purpose
  ASSERT_TRUE(L.init(shards, cfg).ok());
  std::vector<int32_t> x(8), y(8);
  L.next(x.data(), y.data());
  // Rows: d2 | d2 (after refill) | d1 + crop(d1 -> BOS) | d2.
  EXPECT_EQ(x, (std::vector<int32_t>{1, 30, 1, 30, 1, 20, 1, 30}));
  EXPECT_EQ(y, (std::vector<int32_t>{30, 31, 30, 31, 20, 1, 30, 31}));
  EXPECT_EQ(L.tokens_cropped(), 1u);
  std::filesystem::remove_all(d);
}

TEST(BestFitLoader, RowsStartWithBosAndHoldWholeDocsThenOneCrop) {
  std::string d = make_temp_dir("loader_prop");
  auto docs = varied_docs(700, 5);
  std::vector<Shard> shards;
  shards.push_back(make_shard(d + "/s0.bin", {docs.begin(), docs.begin() + 300}));
  shards.push_back(make_shard(d + "/s1.bin", {docs.begin() + 300, docs.end()}));
  BestFitLoader L;
  LoaderConfig cfg;
  cfg.B = 4;
  cfg.T = 64;
  cfg.buffer_size = 50;
  cfg.doc_batch = 16;
  cfg.seed = 3;
  ASSERT_TRUE(L.init(shards, cfg).ok());
  std::vector<int32_t> x(4 * 64), y(4 * 64);
  for (int step = 0; step < 30; step++) {
    L.next(x.data(), y.data());
    for (int r = 0; r < 4; r++) {
      std::vector<int32_t> row(x.begin() + r * 64, x.begin() + (r + 1) * 64);
      row.push_back(y[r * 64 + 63]);
      for (int t = 0; t < 63; t++) ASSERT_EQ(y[r * 64 + t], x[r * 64 + t + 1]);
      ASSERT_EQ(row[0], static_cast<int32_t>(kBos));
      // Split the row at BOS; every segment but the last is a whole document, the last is a prefix of one.
      std::vector<std::pair<size_t, size_t>> segs;
      for (size_t i = 0; i < row.size(); i++)
        if (row[i] == static_cast<int32_t>(kBos)) segs.push_back({i, row.size()});
      for (size_t k = 0; k + 1 < segs.size(); k++) segs[k].second = segs[k + 1].first;
      for (size_t k = 0; k < segs.size(); k++) {
        auto [b, e] = segs[k];
        if (e - b < 2) {
          ASSERT_EQ(k, segs.size() - 1);  // a crop of length 1 (just BOS)
          continue;
        }
        const auto& doc = docs[row[b + 1] - 100];
        size_t len = e - b - 1;
        if (k + 1 < segs.size()) ASSERT_EQ(len, doc.size()) << "a middle segment must be a whole document";
        ASSERT_LE(len, doc.size());
        for (size_t i = 0; i < len; i++) ASSERT_EQ(row[b + 1 + i], static_cast<int32_t>(doc[i]));
      }
    }
  }
  std::filesystem::remove_all(d);
}

TEST(BestFitLoader, DeterministicResumableAndShardedAcrossRanks) {
  std::string d = make_temp_dir("loader_det");
  auto docs = varied_docs(2000, 9);
  std::vector<Shard> shards;
  shards.push_back(make_shard(d + "/s0.bin", docs));
  LoaderConfig cfg;
  cfg.B = 2;
  cfg.T = 32;
  cfg.buffer_size = 40;
  cfg.doc_batch = 8;
  cfg.seed = 11;
  auto run = [&](BestFitLoader& L, int steps) {
    std::vector<int32_t> all, x(64), y(64);
    for (int s = 0; s < steps; s++) {
      L.next(x.data(), y.data());
      all.insert(all.end(), x.begin(), x.end());
    }
    return all;
  };
  BestFitLoader a, b, c;
  ASSERT_TRUE(a.init(shards, cfg).ok());
  ASSERT_TRUE(b.init(shards, cfg).ok());
  EXPECT_EQ(run(a, 50), run(b, 50));
  LoaderConfig other = cfg;
  other.seed = 12;
  ASSERT_TRUE(c.init(shards, other).ok());
  BestFitLoader a2;
  ASSERT_TRUE(a2.init(shards, cfg).ok());
  EXPECT_NE(run(c, 50), run(a2, 50));

  // Resume: state after 20 steps, through JSON, into a fresh loader; the next 200 steps (across an epoch
  // boundary) are identical.
  std::vector<Shard> small;
  small.push_back(make_shard(d + "/small.bin", varied_docs(300, 4)));
  BestFitLoader full, first;
  ASSERT_TRUE(full.init(small, cfg).ok());
  ASSERT_TRUE(first.init(small, cfg).ok());
  run(full, 20);
  run(first, 20);
  LoaderState st;
  ASSERT_TRUE(LoaderState::from_json(nlohmann::json::parse(first.state().to_json().dump()), &st).ok());
  BestFitLoader resumed;
  ASSERT_TRUE(resumed.init(small, cfg).ok());
  ASSERT_TRUE(resumed.restore(st).ok());
  EXPECT_EQ(run(full, 600), run(resumed, 600));
  EXPECT_GE(full.epoch(), 1u);

  // Two ranks draw disjoint documents within the first epoch.
  std::set<int32_t> seen[2];
  for (int r = 0; r < 2; r++) {
    LoaderConfig rc = cfg;
    rc.rank = r;
    rc.world = 2;
    BestFitLoader L;
    ASSERT_TRUE(L.init(shards, rc).ok());
    std::vector<int32_t> x(64), y(64);
    for (int s = 0; s < 40; s++) {
      L.next(x.data(), y.data());
      for (int i = 0; i + 1 < 64; i++)
        if (x[i] == static_cast<int32_t>(kBos) && x[i + 1] >= 100) seen[r].insert(x[i + 1]);
    }
    EXPECT_EQ(L.epoch(), 0u);
  }
  for (int id : seen[0]) EXPECT_EQ(seen[1].count(id), 0u) << "document " << id << " on both ranks";
  EXPECT_GT(seen[0].size(), 50u);

  LoaderConfig bad = cfg;
  bad.rank = 2;
  bad.world = 2;
  BestFitLoader L;
  EXPECT_FALSE(L.init(shards, bad).ok());
  std::filesystem::remove_all(d);
}

// The sequence-length warm-up changes the rows' length mid-stream (set_rows): the buffer and position stay, so every
// token emitted or cropped belongs to a document taken once (in the first epoch, unshuffled: the documents read are
// the first cursor x doc_batch, less those still buffered), and a loader restored from the state after the change,
// given the same rows, continues identically.
TEST(BestFitLoader, RowLengthChangesKeepEveryDocument) {
  std::string d = make_temp_dir("loader_rows");
  auto docs = varied_docs(600, 13);
  std::vector<Shard> shards;
  shards.push_back(make_shard(d + "/s0.bin", docs));
  LoaderConfig cfg;
  cfg.B = 2;
  cfg.T = 32;
  cfg.buffer_size = 30;
  cfg.doc_batch = 8;
  cfg.shuffle = false;
  BestFitLoader L;
  ASSERT_TRUE(L.init(shards, cfg).ok());
  std::vector<int32_t> x(64), y(64);
  auto read = [&](BestFitLoader& l, int steps, int B, int T) {
    std::vector<int32_t> all;
    for (int s = 0; s < steps; s++) {
      l.next(x.data(), y.data());
      for (int i = 0; i < B * T; i++)
        if (i % T != T - 1) EXPECT_EQ(y[i], x[i + 1]);
      all.insert(all.end(), x.begin(), x.begin() + B * T);
    }
    return all;
  };
  L.set_rows(8, 8);  // short rows first, as B x T / 8 of them
  read(L, 10, 8, 8);
  L.set_rows(2, 32);
  read(L, 7, 2, 32);
  L.set_rows(8, 8);
  read(L, 3, 8, 8);
  const LoaderState st = L.state();
  ASSERT_EQ(st.epoch, 0u);
  std::set<uint64_t> buffered(st.buffer.begin(), st.buffer.end());
  uint64_t taken_tokens = 0;
  for (uint64_t doc = 0; doc < st.cursor * cfg.doc_batch; doc++)
    if (!buffered.count(doc)) taken_tokens += shards[0].doc_len(doc);
  EXPECT_EQ(L.tokens_emitted(), 10u * 8 * 9 + 7u * 2 * 33 + 3u * 8 * 9);
  EXPECT_EQ(L.tokens_emitted() + L.tokens_cropped(), taken_tokens) << "a document was repeated or dropped";

  BestFitLoader resumed;
  ASSERT_TRUE(resumed.init(shards, cfg).ok());
  ASSERT_TRUE(resumed.restore(st).ok());
  resumed.set_rows(8, 8);
  EXPECT_EQ(read(L, 5, 8, 8), read(resumed, 5, 8, 8));
  L.set_rows(2, 32);
  resumed.set_rows(2, 32);
  EXPECT_EQ(read(L, 5, 2, 32), read(resumed, 5, 2, 32));
  std::filesystem::remove_all(d);
}

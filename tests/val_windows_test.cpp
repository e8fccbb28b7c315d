// ValWindows (data/val_windows.h): val_bpb scores the same target tokens at every sequence length, each once.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "data/shard.h"
#include "data/val_windows.h"
#include "test_util.h"

using namespace frontier;
using namespace frontier::testing;

namespace {

constexpr uint32_t kBos = 99, kVocab = 100;

// Documents of the given lengths (BOS + len - 1 tokens), token values encode (doc, position) mod 90.
std::vector<Shard> make_shards(const std::string& dir, const std::vector<std::vector<int>>& docs_per_shard) {
  std::filesystem::create_directories(dir);
  std::vector<Shard> shards;
  shards.reserve(docs_per_shard.size());  // Shard holds a mapping: no reallocation after open
  int doc_id = 0;
  for (size_t s = 0; s < docs_per_shard.size(); s++) {
    std::vector<uint32_t> tokens;
    std::vector<uint64_t> offsets = {0};
    for (int len : docs_per_shard[s]) {
      tokens.push_back(kBos);
      for (int i = 1; i < len; i++) tokens.push_back(static_cast<uint32_t>((doc_id * 7 + i) % 90));
      offsets.push_back(tokens.size());
      doc_id++;
    }
    std::string path = dir + "/val_" + std::to_string(s) + ".bin";
    EXPECT_TRUE(write_shard(path, kVocab, kBos, tokens, offsets).ok());
    shards.emplace_back();
    EXPECT_TRUE(shards.back().open(path, kVocab).ok());
  }
  return shards;
}

// (shard-independent) multiset of (previous token, target) pairs scored, and the rows' shapes checked.
std::map<std::pair<int, int>, int> scored(std::vector<Shard>& shards, int T, int B, int64_t eval_tokens,
                                          int64_t* targets) {
  ValWindows w;
  EXPECT_TRUE(w.init(shards, T, eval_tokens).ok());
  *targets = w.targets();
  std::vector<int32_t> x(B * T), y(B * T);
  std::map<std::pair<int, int>, int> seen;
  int64_t n = 0;
  while (w.next(B, x.data(), y.data())) {
    for (int r = 0; r < B; r++) {
      bool pad = false;
      for (int t = 0; t < T; t++) {
        int xi = x[r * T + t], yi = y[r * T + t];
        if (yi == static_cast<int>(kBos)) {  // padding: the rest of the row is BOS -> BOS
          pad = true;
          EXPECT_EQ(xi, static_cast<int>(kBos));
          continue;
        }
        EXPECT_FALSE(pad) << "a target after the padding began";
        if (t > 0) {
          EXPECT_EQ(xi, y[r * T + t - 1]) << "inputs are the targets shifted by one";
        }
        seen[{xi, yi}]++;
        n++;
      }
    }
  }
  EXPECT_EQ(n, *targets);
  return seen;
}

}  // namespace

TEST(ValWindows, SameTargetsAtEverySequenceLength) {
  std::string d = make_temp_dir("valwin");
  auto shards = make_shards(d, {{50, 7, 130, 2}, {1, 64, 65, 300}});
  int64_t all = 0;
  for (auto& sh : shards)
    for (uint64_t i = 0; i < sh.n_docs(); i++) all += static_cast<int64_t>(sh.doc_len(i)) - 1;
  int64_t t16 = 0, t64 = 0, t512 = 0;
  auto a = scored(shards, 16, 3, 1 << 20, &t16);
  auto b = scored(shards, 64, 2, 1 << 20, &t64);
  auto c = scored(shards, 512, 4, 1 << 20, &t512);
  EXPECT_EQ(t16, all);  // the whole split, each target once
  EXPECT_EQ(t64, all);
  EXPECT_EQ(t512, all);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a, c);
  // eval_tokens cuts the split at the same token whatever T.
  auto p = scored(shards, 16, 2, 200, &t16);
  auto q = scored(shards, 100, 1, 200, &t64);
  EXPECT_EQ(t16, 200);
  EXPECT_EQ(t64, 200);
  EXPECT_EQ(p, q);
  std::filesystem::remove_all(d);
}

TEST(ValWindows, WindowsStartAtBosThenRestartMidDocument) {
  std::string d = make_temp_dir("valwin2");
  auto shards = make_shards(d, {{40}});  // BOS + 39 tokens: windows of 16, 16, 7 targets at T = 16
  ValWindows w;
  ASSERT_TRUE(w.init(shards, 16, 1000).ok());
  EXPECT_EQ(w.rows(), 3);
  EXPECT_EQ(w.targets(), 39);
  std::vector<int32_t> x(3 * 16), y(3 * 16);
  ASSERT_TRUE(w.next(3, x.data(), y.data()));
  EXPECT_EQ(x[0], static_cast<int>(kBos));         // the first window starts at the document's BOS
  EXPECT_EQ(x[16], y[15]);                          // the second continues the text (a fresh context)
  EXPECT_EQ(y[32 + 6], shards[0].token(39));        // the third ends at the document's last token
  EXPECT_EQ(y[32 + 7], static_cast<int>(kBos));     // then padding
  EXPECT_FALSE(w.next(3, x.data(), y.data()));
  // Bad input: one line each.
  EXPECT_FALSE(w.init(shards, 0, 10).ok());
  EXPECT_FALSE(w.init(shards, 16, 0).ok());
  auto empty = make_shards(d + "/e", {{1, 1}});
  Status s = w.init(empty, 16, 10);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("no tokens to score"), std::string::npos) << s.message();
  std::filesystem::remove_all(d);
}

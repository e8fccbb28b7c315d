// CORE's batching of an item's choices into one forward: each row's per-position losses and greedy predictions
// equal those of the row run alone (padding sits after every scored position and is masked by causality).
// Tolerance: 1e-6 relative.
#include <cmath>

#include "eval/core_eval.h"
#include "model/gpt.h"
#include "model/model_config.h"
#include "test_util.h"

using namespace frontier;

TEST(CoreBatch, BatchedChoicesEqualOneAtATime) {
  ConfigSchema s;
  add_model_keys(&s);
  Config c = s.defaults();
  for (const char* kv : {"model.depth=2", "model.vocab_size=300", "model.seq_len=100"})
    ASSERT_TRUE(s.apply_set(kv, &c).ok());
  ModelShape m;
  ASSERT_TRUE(derive_model_shape(c, &m).ok());
  Gpt g(m);
  g.init_nanochat(9);
  std::vector<std::vector<uint32_t>> seqs;
  for (int len : {5, 17, 70, 66, 2}) {
    std::vector<uint32_t> q;
    for (int t = 0; t < len; t++) q.push_back(static_cast<uint32_t>((t * 31 + len * 7) % 300));
    seqs.push_back(q);
  }
  std::vector<std::vector<float>> bl;
  std::vector<std::vector<int>> ba;
  core_batch_losses(g, seqs, &bl, &ba);
  for (size_t i = 0; i < seqs.size(); i++) {
    std::vector<float> l;
    std::vector<int> a;
    core_sequence_losses(g, seqs[i], &l, &a);
    ASSERT_EQ(l.size(), bl[i].size());
    for (size_t t = 0; t < l.size(); t++) EXPECT_NEAR(bl[i][t], l[t], 1e-6 * std::fabs(l[t])) << i << "," << t;
    EXPECT_EQ(a, ba[i]) << "row " << i;
  }
}

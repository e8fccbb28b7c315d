// Sampling with a KV cache: the cached one-token-at-a-time forward reproduces Gpt::forward's softcapped logits at
// every position (relative tolerance 2e-5 of the largest logit), greedy decoding equals the full forward's argmax,
// and a seed fixes the sampled sequence.
#include <cmath>
#include <random>

#include "autograd/tape.h"
#include "model/gpt.h"
#include "model/model_config.h"
#include "model/sampler.h"
#include "test_util.h"

using namespace frontier;

namespace {

std::unique_ptr<Gpt> random_gpt(const std::string& kv_heads, const std::vector<std::string>& extra = {}) {
  ConfigSchema s;
  add_model_keys(&s);
  Config c = s.defaults();
  for (const char* kv : {"model.depth=3", "model.vocab_size=300", "model.aspect_ratio=32", "model.head_dim=32",
                         "model.seq_len=40"})
    EXPECT_TRUE(s.apply_set(kv, &c).ok());
  EXPECT_TRUE(s.apply_set("model.n_kv_head=" + kv_heads, &c).ok()) << kv_heads;
  for (const auto& kv : extra) EXPECT_TRUE(s.apply_set(kv, &c).ok()) << kv;
  ModelShape m;
  EXPECT_TRUE(derive_model_shape(c, &m).ok());
  auto g = std::make_unique<Gpt>(m);
  g->init_nanochat(3);
  // Give the zero-initialised projections and gates weights too, so every path is exercised.
  std::mt19937 rng(5);
  std::normal_distribution<float> d(0.f, 0.05f);
  for (const auto& p : g->params())
    if (p.name.find("c_proj") != std::string::npos || p.name.find("ve_gate") != std::string::npos ||
        p.name == "lm_head" || p.name.rfind("ngram", 0) == 0 || p.name.rfind("smear", 0) == 0)
      for (int64_t i = 0; i < p.numel(); i++) g->weights()[p.offset + i] = d(rng);
  return g;
}

// The sampler's logits at every position against the full forward's (softcapped as the model's arch says): the
// worst difference, relative to the position's largest logit.
double worst_sampler_difference(Gpt& g) {
  const int T = g.shape().seq_len, V = g.shape().vocab_size;
  const double cap = g.shape().arch.softcap;
  auto capped = [cap](double z) { return cap > 0 ? cap * std::tanh(z / cap) : z; };
  std::vector<int32_t> idx(T), tgt(T, 0);
  for (int t = 0; t < T; t++) idx[t] = (t * 37 + 11) % V;
  Tape tape;
  Var logits;
  std::vector<float> rows(T);
  g.forward(tape, idx.data(), tgt.data(), 1, T, &logits, rows.data());
  const float* z = tape.value(logits);
  Sampler s(g);
  std::vector<float> got;
  double worst = 0;
  for (int t = 0; t < T; t++) {
    s.push(static_cast<uint32_t>(idx[t]), &got);
    double mx = 0;
    for (int v = 0; v < V; v++) mx = std::max(mx, std::fabs(capped(z[t * V + v])));
    for (int v = 0; v < V; v++) worst = std::max(worst, std::fabs(got[v] - capped(z[t * V + v])) / mx);
  }
  return worst;
}

}  // namespace

TEST(Sampler, KvCacheLogitsMatchFullForward) {
  for (const std::string kv : {"0", "1"}) {  // 0: as many kv heads as heads; 1: GQA
    auto g = random_gpt(kv);
    const double worst = worst_sampler_difference(*g);
    std::printf("[sampler] n_kv_head=%s: worst logit difference %.2g of the largest logit over %d positions\n",
                kv.c_str(), worst, g->shape().seq_len);
    EXPECT_LT(worst, 2e-5);
  }
}

TEST(Sampler, GreedyAndSeededSamplingAreDeterministic) {
  auto g = random_gpt("0");
  auto run = [&](float temp, uint64_t seed) {
    Sampler s(*g);
    Rng rng{seed};
    std::vector<float> logits;
    std::vector<uint32_t> out;
    uint32_t tok = 0;
    for (int i = 0; i < 20; i++) {
      s.push(tok, &logits);
      tok = Sampler::sample(logits, temp, 10, &rng);
      out.push_back(tok);
    }
    return out;
  };
  EXPECT_EQ(run(0.8f, 7), run(0.8f, 7));
  EXPECT_NE(run(0.8f, 7), run(0.8f, 8));
  // Greedy: each token is the argmax of the full forward over the sequence so far.
  auto greedy = run(0.f, 1);
  std::vector<int32_t> seq = {0};
  for (size_t i = 0; i < greedy.size(); i++) {
    std::vector<int32_t> tgt(seq.size(), 0);
    Tape tape;
    Var logits;
    g->forward(tape, seq.data(), tgt.data(), 1, static_cast<int>(seq.size()), &logits);
    const int V = g->shape().vocab_size;
    const float* z = tape.value(logits) + (seq.size() - 1) * V;
    EXPECT_EQ(greedy[i], static_cast<uint32_t>(std::max_element(z, z + V) - z)) << "token " << i;
    seq.push_back(static_cast<int32_t>(greedy[i]));
  }
}

TEST(Sampler, TopKOneIsGreedy) {
  std::vector<float> logits = {0.1f, 2.f, 1.9f, -3.f};
  Rng rng{1};
  for (int i = 0; i < 10; i++) EXPECT_EQ(Sampler::sample(logits, 1.f, 1, &rng), 1u);
}

// The architecture levers: the KV-cache path (windows, QK scale, partial RoPE, value-embedding layout and gate, MLP
// width, softcap, tied head) and the full-forward path (smear, backout, n-gram tables, key offset, gated MLPs,
// experts) give the training forward's logits at every position.
TEST(Sampler, ArchitectureVariantsMatchFullForward) {
  const std::vector<std::vector<std::string>> cases = {
      {"model.window_pattern=SL", "model.short_window=7", "model.qk_scale=1.2", "model.rope_fraction=0.5",
       "model.value_embeds=all", "model.ve_gate_channels=12", "model.ve_gate_scale=3", "model.mlp_ratio=3",
       "model.softcap=30", "model.tie_embeddings=true"},
      {"model.softcap=0", "model.value_embeds=none"},
      {"model.smear=true", "model.backout=true", "model.ngram_orders=2", "model.ngram_buckets=101",
       "model.rope_fraction=0.5", "model.key_offset=true", "model.mlp=swiglu"},
      {"model.moe_experts=3", "model.moe_top_k=2", "model.mlp=leaky_relu2", "model.window_pattern=SSL",
       "model.short_window=5"}};
  for (const auto& extra : cases) {
    auto g = random_gpt("1", extra);
    const double worst = worst_sampler_difference(*g);
    std::printf("[sampler] %s ...: worst logit difference %.2g of the largest\n", extra[0].c_str(), worst);
    EXPECT_LT(worst, 2e-5) << extra[0];
  }
}

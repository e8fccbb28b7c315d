// Every architecture variant against PyTorch: the model is written as a model directory (config.json with its
// "frontier"."architecture", model.safetensors with nanochat's names), loaded by python/frontier_torch.py as a user
// would, and its loss (with multi-token prediction's extra targets where set), logits and every parameter gradient
// (with the MoE load-balance term where set) compared with Frontier's, fp32 on both sides.
// Tolerance: relative error <= 1e-4 per tensor (max |diff| / max |torch|), as tests/gpt_torch_test.cpp: fp32
// accumulation orders differ between the GEMMs (blocked, K up to a few hundred: ~1e-6 relative per product) and
// grow through 3 layers and the softmax backward; 1e-4 is ~30x the largest difference measured and far below what
// any semantic difference (a wrong window edge, scale, gate or shift) produces (>= 1e-2).
#include <nlohmann/json.hpp>
#include <random>

#include "export/nanochat_names.h"
#include "export/safetensors.h"
#include "model/gpt.h"
#include "grad_check.h"
#include "test_util.h"
#include "util/file.h"

using namespace frontier;
using namespace frontier::testing;

namespace {

ModelShape shape_of(const std::vector<std::string>& sets) {
  ConfigSchema schema;
  add_model_keys(&schema);
  Config cfg = schema.defaults();
  std::vector<std::string> all = {"model.depth=3", "model.dim=64", "model.head_dim=16", "model.n_kv_head=2",
                                  "model.vocab_size=300", "model.seq_len=24"};
  all.insert(all.end(), sets.begin(), sets.end());
  for (const auto& kv : all) {
    Status st = schema.apply_set(kv, &cfg);
    EXPECT_TRUE(st.ok()) << st.message();
  }
  ModelShape s;
  Status st = derive_model_shape(cfg, &s);
  EXPECT_TRUE(st.ok()) << st.message();
  return s;
}

// Writes gpt as a model directory (no tokenizer: the peer needs none).
void write_model_dir(const Gpt& gpt, const std::string& dir) {
  const ModelShape& s = gpt.shape();
  std::vector<StTensorIn> ts;
  for (const auto& p : gpt.params())
    ts.push_back({nanochat_name(p.name), p.shape, const_cast<Gpt&>(gpt).weights().data() + p.offset, StDtype::kF32});
  ASSERT_TRUE(write_safetensors(dir + "/model.safetensors", ts, {{"format", "pt"}}).ok());
  nlohmann::json j = nanochat_gpt_config(s);
  j["frontier"] = {{"format", 1}, {"architecture", frontier_architecture(s)}};
  ASSERT_TRUE(write_file_atomic(dir + "/config.json", j.dump(2)).ok());
}

void run_variant(const std::vector<std::string>& sets, const std::vector<float>& mtp = {}) {
  const ModelShape s = shape_of(sets);
  Gpt gpt(s);
  // Random weights (not nanochat's init, whose zero projections would make many gradients trivially zero).
  std::mt19937 rng(321);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (const auto& p : gpt.params()) {
    const bool scalar = p.group == ParamGroup::kScalar && p.name != "smear_gate";
    const float sd = scalar ? 0.3f : p.group == ParamGroup::kEmbedding || p.group == ParamGroup::kValueEmbed
                                         ? 0.8f
                                         : 1.f / std::sqrt(static_cast<float>(p.shape.back()));
    float* w = gpt.weights().data() + p.offset;
    for (int64_t i = 0; i < p.numel(); i++) w[i] = nd(rng) * sd + (scalar ? 0.7f : 0.f);
  }
  const int B = 2, T = s.seq_len, V = s.vocab_size;
  std::vector<int32_t> idx(B * T), tgt(B * T);
  for (int i = 0; i < B * T; i++) {
    idx[i] = static_cast<int32_t>(rng() % V);
    tgt[i] = i % 7 == 3 ? -1 : static_cast<int32_t>(rng() % V);
  }
  // Frontier: logits from an evaluation forward; loss and gradients from a training forward (MTP applies there).
  Tape et;
  Var logits;
  std::vector<float> rows(B * T);
  gpt.forward(et, idx.data(), tgt.data(), B, T, &logits, rows.data());
  Tape tape;
  gpt.mtp_weights() = mtp;
  gpt.zero_grad();
  Var loss = gpt.forward(tape, idx.data(), tgt.data(), B, T);
  tape.backward(loss);

  const std::string d = make_temp_dir("variant_torch");
  write_model_dir(gpt, d);
  nlohmann::json spec = {{"B", B}, {"T", T}, {"mtp_weights", mtp}, {"params", nlohmann::json::array()},
                         {"moe_aux_weight", s.arch.moe_experts ? s.arch.moe_aux_weight : 0.0}};
  for (const auto& p : gpt.params())
    spec["params"].push_back({{"name", nanochat_name(p.name)}, {"offset", p.offset}, {"numel", p.numel()},
                              {"rows", has_vocab_rows(p) ? p.shape[0] : 0}});
  std::vector<int32_t> batch = idx;
  batch.insert(batch.end(), tgt.begin(), tgt.end());
  ASSERT_TRUE(write_file_atomic(d + "/spec.json", spec.dump()).ok());
  ASSERT_TRUE(write_file_atomic(d + "/b.i32", std::string_view(reinterpret_cast<const char*>(batch.data()),
                                                                batch.size() * 4)).ok());
  auto r = run_cmd("/usr/bin/python3 " + source_dir() + "/tests/torch/variant_peer.py " + d + " " + d +
                   "/spec.json " + d + "/b.i32 " + d + "/out.f32");
  ASSERT_EQ(r.rc, 0) << "PyTorch peer failed (Debian python3-torch; run scripts/install_deps.sh): " << r.out;
  std::string out;
  ASSERT_TRUE(read_file(d + "/out.f32", &out).ok());
  const int64_t NV = int64_t(B) * T * V;
  ASSERT_EQ(out.size(), (1 + NV + gpt.grads().size()) * 4);
  const float* o = reinterpret_cast<const float*>(out.data());
  const double le = std::abs(tape.value(loss)[0] - o[0]) / std::abs(o[0]);
  EXPECT_LE(le, 1e-4) << "loss " << tape.value(loss)[0] << " vs " << o[0];
  const double lg = rel_err(et.value(logits), o + 1, NV);
  EXPECT_LE(lg, 1e-4) << "logits";
  double worst = 0;
  std::string worst_name;
  for (const auto& p : gpt.params()) {
    const double e = rel_err(gpt.grads().data() + p.offset, o + 1 + NV + p.offset, p.numel());
    EXPECT_LE(e, 1e-4) << "gradient of " << p.name;
    if (e > worst) worst = e, worst_name = p.name;
  }
  std::string what;
  for (const auto& kv : sets) what += kv + " ";
  std::printf("[variant-torch] %s: loss rel %.2g, logits rel %.2g, worst gradient rel %.2g (%s) over %zu tensors\n",
              what.c_str(), le, lg, worst, worst_name.c_str(), gpt.params().size());
  std::filesystem::remove_all(d);
}

}  // namespace

TEST(VariantTorch, Baseline) { run_variant({}); }
TEST(VariantTorch, SlidingWindows) { run_variant({"model.window_pattern=SL", "model.short_window=5"}); }
TEST(VariantTorch, QkScaleRopeBaseSoftcap) {
  run_variant({"model.qk_scale=1.2", "model.rope_base=10000", "model.softcap=30"});
}
TEST(VariantTorch, NoSoftcap) { run_variant({"model.softcap=0"}); }
TEST(VariantTorch, PartialRopeAndKeyOffset) {
  run_variant({"model.rope_fraction=0.5", "model.key_offset=true", "model.window_pattern=SL", "model.short_window=7"});
}
TEST(VariantTorch, SmearAndBackout) { run_variant({"model.smear=true", "model.backout=true"}); }
TEST(VariantTorch, ValueEmbedLayoutAndGate) {
  run_variant({"model.value_embeds=all", "model.ve_gate_channels=12", "model.ve_gate_scale=3"});
}
TEST(VariantTorch, NoValueEmbeds) { run_variant({"model.value_embeds=none"}); }
TEST(VariantTorch, LeakyRelu2) { run_variant({"model.mlp=leaky_relu2", "model.mlp_slope=0.1"}); }
TEST(VariantTorch, Swiglu) { run_variant({"model.mlp=swiglu", "model.mlp_ratio=2.6667"}); }
TEST(VariantTorch, Geglu) { run_variant({"model.mlp=geglu", "model.mlp_ratio=3"}); }
TEST(VariantTorch, TiedEmbeddings) { run_variant({"model.tie_embeddings=true"}); }
TEST(VariantTorch, NgramTables) { run_variant({"model.ngram_orders=2,3", "model.ngram_buckets=97"}); }
TEST(VariantTorch, MultiTokenPrediction) { run_variant({"model.mtp_heads=2"}, {0.5f, 0.25f}); }
TEST(VariantTorch, MultiTokenPredictionWithoutSoftcap) { run_variant({"model.mtp_heads=1", "model.softcap=0"}, {0.3f}); }
TEST(VariantTorch, MixtureOfExperts) {
  run_variant({"model.moe_experts=4", "model.moe_top_k=2", "model.moe_layers=alternate"});
}
TEST(VariantTorch, MixtureOfExpertsLeaky) {
  run_variant({"model.moe_experts=3", "model.moe_top_k=1", "model.mlp=leaky_relu2", "model.moe_hidden=40"});
}
// nanochat's current GPT (configs/nanochat.toml's levers).
TEST(VariantTorch, NanochatCurrent) {
  run_variant({"model.window_pattern=SSSL", "model.short_window=8", "model.smear=true", "model.backout=true",
               "model.ve_gate_channels=12", "model.ve_gate_scale=3", "model.qk_scale=1.2"});
}

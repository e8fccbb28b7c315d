#include "config/config.h"
#include <cmath>

#include "model/gpt.h"
#include "model/model_config.h"
#include "test_util.h"

using namespace frontier;
using namespace frontier::testing;

namespace {
ConfigSchema schema() {
  ConfigSchema s;
  add_model_keys(&s);
  s.add_float("optim.matrix_lr", 0.02, "Muon learning rate");
  s.add_bool("train.compile", false, "x");
  s.add_string("train.data", "data/default", "prepared dataset");
  return s;
}
}  // namespace

TEST(Config, TomlSetAndRoundTrip) {
  auto s = schema();
  Config c = s.defaults();
  ASSERT_TRUE(s.load_toml_string("[model]\ndepth = 4\n[optim]\nmatrix_lr = 1\n", "a.toml", &c).ok());
  EXPECT_EQ(c.get_int("model.depth"), 4);
  EXPECT_DOUBLE_EQ(c.get_float("optim.matrix_lr"), 1.0);  // integer literal accepted for a float key
  ASSERT_TRUE(s.apply_set("model.seq_len=256", &c).ok());
  ASSERT_TRUE(s.apply_set("train.data=data/wiki", &c).ok());  // bare word = string
  ASSERT_TRUE(s.apply_set("train.compile=true", &c).ok());
  EXPECT_EQ(c.get_int("model.seq_len"), 256);
  EXPECT_EQ(c.get_string("train.data"), "data/wiki");
  Config back = s.defaults();
  Status st = s.load_toml_string(c.to_toml(), "resolved.toml", &back);
  ASSERT_TRUE(st.ok()) << st.message() << "\n" << c.to_toml();
  EXPECT_EQ(back.values(), c.values());
}

TEST(Config, UnknownKeysNameTheClosestAndTypesAreChecked) {
  auto s = schema();
  Config c = s.defaults();
  Status st = s.load_toml_string("[model]\ndept = 4\n", "b.toml", &c);
  EXPECT_NE(st.message().find("b.toml:2: unknown config key 'model.dept' (did you mean 'model.depth'?"),
            std::string::npos)
      << st.message();
  st = s.apply_set("depth=3", &c);
  EXPECT_NE(st.message().find("did you mean 'model.depth'"), std::string::npos) << st.message();
  st = s.apply_set("optim.matrix_lr", &c);
  EXPECT_NE(st.message().find("is not key=value"), std::string::npos) << st.message();
  st = s.apply_set("model.depth=deep", &c);
  EXPECT_NE(st.message().find("'model.depth' needs type integer, got string"), std::string::npos) << st.message();
  st = s.load_toml_string("[model\n", "c.toml", &c);
  EXPECT_NE(st.message().find("c.toml:1"), std::string::npos) << st.message();
}

TEST(ModelShape, OneDialDerivation) {
  auto s = schema();
  Config c = s.defaults();
  ModelShape m;
  ASSERT_TRUE(derive_model_shape(c, &m).ok());
  EXPECT_EQ(m.dim, 512);  // the baseline: depth 8 -> 512 wide, 4 heads of 128
  EXPECT_EQ(m.n_head, 4);
  EXPECT_EQ(m.n_kv_head, 4);
  EXPECT_EQ(m.mlp_dim, 2048);
  ASSERT_TRUE(s.apply_set("model.depth=3", &c).ok());
  ASSERT_TRUE(derive_model_shape(c, &m).ok());
  EXPECT_EQ(m.dim, 256);  // 192 rounded up to a multiple of 128
  ASSERT_TRUE(s.apply_set("model.dim=300", &c).ok());
  Status st = derive_model_shape(c, &m);
  EXPECT_NE(st.message().find("model.dim 300 is not divisible by model.head_dim 128"), std::string::npos)
      << st.message();
  ASSERT_TRUE(s.apply_set("model.dim=0", &c).ok());
  ASSERT_TRUE(s.apply_set("model.n_kv_head=3", &c).ok());
  EXPECT_FALSE(derive_model_shape(c, &m).ok());
}

TEST(GptInit, NanochatInitialisation) {
  ConfigSchema s;
  add_model_keys(&s);
  Config c = s.defaults();
  ASSERT_TRUE(s.apply_set("model.depth=4", &c).ok());
  ASSERT_TRUE(s.apply_set("model.vocab_size=512", &c).ok());
  ModelShape m;
  ASSERT_TRUE(derive_model_shape(c, &m).ok());
  Gpt g(m);
  g.init_nanochat(1);
  const float* r = g.data("resid_lambdas");
  const float* x0 = g.data("x0_lambdas");
  EXPECT_FLOAT_EQ(r[0], 1.15f);
  EXPECT_FLOAT_EQ(r[3], 1.05f);
  EXPECT_FLOAT_EQ(x0[0], 0.20f);
  EXPECT_FLOAT_EQ(x0[3], 0.05f);
  auto stats = [&](const std::string& name, double* mean, double* sd, float* maxabs) {
    const ParamInfo& p = g.param(name);
    const float* w = g.data(name);
    double s1 = 0, s2 = 0;
    *maxabs = 0;
    for (int64_t i = 0; i < p.numel(); i++) {
      s1 += w[i];
      s2 += double(w[i]) * w[i];
      *maxabs = std::max(*maxabs, std::abs(w[i]));
    }
    *mean = s1 / p.numel();
    *sd = std::sqrt(s2 / p.numel() - *mean * *mean);
  };
  double mean, sd;
  float mx;
  stats("wte", &mean, &sd, &mx);
  EXPECT_NEAR(sd, 0.8, 0.01);
  stats("lm_head", &mean, &sd, &mx);
  EXPECT_NEAR(sd, 0.001, 2e-5);
  stats("h.0.attn.c_q", &mean, &sd, &mx);  // U(-s, s), s = sqrt(3/dim): std 1/sqrt(dim)
  EXPECT_NEAR(sd, 1 / std::sqrt(256.0), 0.002);
  EXPECT_LE(mx, std::sqrt(3.0 / 256));
  stats("h.0.mlp.c_fc", &mean, &sd, &mx);
  EXPECT_NEAR(sd, 0.4 / std::sqrt(256.0), 0.001);
  stats("h.0.attn.c_proj", &mean, &sd, &mx);
  EXPECT_EQ(mx, 0.f);
  stats("h.3.attn.ve_gate", &mean, &sd, &mx);  // layer 3 = the last: has a value embedding
  EXPECT_EQ(mx, 0.f);
  EXPECT_TRUE(has_value_embed(3, 4) && has_value_embed(1, 4) && !has_value_embed(0, 4));
}

// nanochat's initialisation: distributions per parameter and the lambda schedules over depth.
#include <cmath>

#include "model/gpt.h"
#include "model/model_config.h"
#include "test_util.h"

using namespace frontier;

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

#include "config/config.h"
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


// Every architecture key's bad values are one-line errors naming the key and what it allows; the derived values
// (windows per layer, the rounded MLP width, resolved defaults) come out as documented.
TEST(ModelShape, ArchitectureKeysDeriveAndRefuseBadValues) {
  auto s = schema();
  auto derive = [&](const std::vector<std::string>& sets, ModelShape* m) {
    Config c = s.defaults();
    for (const auto& kv : sets) {
      Status st = s.apply_set(kv, &c);
      if (!st.ok()) return st;
    }
    return derive_model_shape(c, m);
  };
  ModelShape m;
  ASSERT_TRUE(derive({"model.window_pattern=sssl", "model.mlp=swiglu", "model.mlp_ratio=2.6667"}, &m).ok());
  EXPECT_EQ(m.arch.window_pattern, "SSSL");
  EXPECT_EQ(m.arch.short_window, 128);  // nanochat's ceil(512/4/128)*128
  EXPECT_EQ(m.window(0), 128);
  EXPECT_EQ(m.window(3), 0);
  EXPECT_EQ(m.window(7), 0);          // the last layer is always L
  EXPECT_EQ(m.mlp_dim, 1376);         // 2.6667 x 512 = 1365.4, rounded up to a multiple of 32
  EXPECT_NE(m.describe_arch().find("windows SSSLSSSL"), std::string::npos) << m.describe_arch();
  ASSERT_TRUE(derive({}, &m).ok());
  EXPECT_EQ(m.describe_arch(), "");   // the defaults: today's model
  struct Bad {
    std::vector<std::string> sets;
    const char* want;
  };
  const Bad bad[] = {
      {{"model.window_pattern=SXL"}, "model.window_pattern is 'SXL'; use the letters L (full context) and S"},
      {{"model.short_window=512"}, "model.short_window 512 is not below model.seq_len 512"},
      {{"model.moe_experts=2", "model.moe_top_k=3"}, "model.moe_top_k 3 is above model.moe_experts 2"},
      {{"model.mlp=gelu"}, "model.mlp is 'gelu'; use relu2, leaky_relu2, swiglu or geglu"},
      {{"model.value_embeds=some"}, "model.value_embeds is 'some'; use alternate, all or none"},
      {{"model.ngram_orders=2,x"}, "model.ngram_orders is '2,x'; use a comma-separated list of orders in 2..8"},
      {{"model.ngram_orders=2,2"}, "model.ngram_orders is '2,2'; each order once"},
      {{"model.key_offset=true"}, "model.key_offset shifts the un-rotated key dims"},
      {{"model.moe_experts=4", "model.mlp=swiglu"}, "experts use relu2 or leaky_relu2"},
      {{"model.moe_experts=4", "model.moe_layers=2"}, "model.moe_layers is '2'; use all, alternate"},
      {{"model.rope_fraction=1.5"}, "model.rope_fraction"},
      {{"model.mtp_heads=9"}, "model.mtp_heads"},
  };
  for (const auto& b : bad) {
    Status st = derive(b.sets, &m);
    ASSERT_FALSE(st.ok()) << b.sets[0];
    EXPECT_NE(st.message().find(b.want), std::string::npos) << st.message();
    EXPECT_EQ(st.message().find('\n'), std::string::npos) << st.message();
  }
}

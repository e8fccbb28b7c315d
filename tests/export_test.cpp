// Models out and in (export/): the safetensors reader and writer, the PyTorch loader
// (python/frontier_torch.py) reproducing Frontier's logits from an exported directory, export -> import round
// trips, and bad input.
//
// The model: depth 3 (value embeddings on layers 0 and 2), dim 64, 2 heads of 32, GQA with 1 kv head,
// vocabulary 400 (padded to 448 in the file, as nanochat allocates it), random weights in every tensor
// (nanochat's init zeroes the output projections and gates, which would hide a wrong name or transpose).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>

#include "data/dataset.h"
#include "export/model_dir.h"
#include "export/nanochat_names.h"
#include "export/safetensors.h"
#include "model/gpt.h"
#include "train/checkpoint.h"
#include "train/identity.h"
#include "train/schema.h"
#include "train_fixture.h"
#include "util/bf16.h"
#include "util/file.h"

using namespace frontier;
using namespace frontier::testing;

namespace {

constexpr int kT = 16;

Config model_config(const std::string& data, const std::vector<std::string>& extra = {}) {
  ConfigSchema schema = train_schema();
  Config cfg = schema.defaults();
  std::vector<std::string> sets = {"model.depth=3", "model.dim=64", "model.head_dim=32", "model.n_kv_head=1",
                                   "model.vocab_size=400", "model.seq_len=16", "train.micro_batch=4",
                                   "eval.tokens=512", "eval.batch=4"};
  sets.insert(sets.end(), extra.begin(), extra.end());
  for (const std::string& kv : sets) {
    Status s = schema.apply_set(kv, &cfg);
    EXPECT_TRUE(s.ok()) << s.message();
  }
  cfg.set("train.data", data);
  return cfg;
}

// RUN/model.ckpt of a random-weight model trained (notionally) on the fixture dataset, with its identity.
std::unique_ptr<Gpt> make_checkpoint(const std::string& run, Config* cfg_out,
                                     const std::vector<std::string>& extra = {}) {
  const std::string data = dataset() + "/data";
  Config cfg = model_config(data, extra);
  ModelShape shape;
  EXPECT_TRUE(derive_model_shape(cfg, &shape).ok());
  auto gpt = std::make_unique<Gpt>(shape);
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (const auto& p : gpt->params()) {
    const float sd = p.group == ParamGroup::kScalar   ? 0.3f
                     : p.group == ParamGroup::kMatrix ? 1.f / std::sqrt(static_cast<float>(p.shape[1]))
                                                      : 0.8f;
    float* w = gpt->weights().data() + p.offset;
    for (int64_t i = 0; i < p.numel(); i++)
      w[i] = nd(rng) * sd + (p.group == ParamGroup::kScalar ? 0.7f : 0.f);
  }
  PreparedData pd;
  EXPECT_TRUE(pd.open(data).ok());
  nlohmann::json meta = {{"identity", RunIdentity::of(pd).to_json()}};
  std::filesystem::create_directories(run);
  Status s = save_checkpoint(run + "/model.ckpt", cfg.to_toml(), meta.dump(), gpt->weights(), {});
  EXPECT_TRUE(s.ok()) << s.message();
  if (cfg_out) *cfg_out = cfg;
  return gpt;
}

std::vector<int32_t> fixed_tokens(int V, int T = kT) {
  std::vector<int32_t> t(T);
  for (int i = 0; i < T; i++) t[i] = (i * 131 + 7) % V;
  t[0] = 391;  // <|bos|> of a 400-token vocabulary (256 + 135 merges + 9 specials)
  return t;
}

// Softcapped logits (T, V), as nanochat's forward returns them.
std::vector<float> frontier_logits(Gpt& gpt, const std::vector<int32_t>& idx) {
  Tape tape;
  Var logits;
  std::vector<int32_t> tgt(idx.size(), 0);
  gpt.forward(tape, idx.data(), tgt.data(), 1, static_cast<int>(idx.size()), &logits);
  const float* x = tape.value(logits);
  std::vector<float> out(idx.size() * gpt.shape().vocab_size);
  for (size_t i = 0; i < out.size(); i++) out[i] = static_cast<float>(kDefaultSoftcap * std::tanh(x[i] / kDefaultSoftcap));
  return out;
}

// The PyTorch loader's logits for idx, from a model directory.
bool torch_logits(const std::string& dir, const std::vector<int32_t>& idx, std::vector<float>* out) {
  const std::string tok = dir + "/../tokens.i32", lg = dir + "/../logits.f32";
  EXPECT_TRUE(
      write_file_atomic(tok, std::string_view(reinterpret_cast<const char*>(idx.data()), idx.size() * 4))
          .ok());
  auto r = run_cmd("/usr/bin/python3 " + source_dir() + "/python/frontier_torch.py " + dir +
                   " --tokens-file " + tok + " --out " + lg + " --threads 1");
  EXPECT_EQ(r.rc, 0) << "the PyTorch loader failed (Debian python3-torch; scripts/install_deps.sh): "
                     << r.out;
  std::string bytes;
  if (r.rc != 0 || !read_file(lg, &bytes).ok()) return false;
  out->resize(bytes.size() / 4);
  std::memcpy(out->data(), bytes.data(), bytes.size());
  return true;
}

double rel_err(const std::vector<float>& a, const std::vector<float>& b) {  // max |a - b| / max |b|
  double err = 0, mx = 0;
  for (size_t i = 0; i < a.size(); i++) {
    err = std::max(err, std::abs(static_cast<double>(a[i]) - b[i]));
    mx = std::max(mx, std::abs(static_cast<double>(b[i])));
  }
  return mx > 0 ? err / mx : err;
}

std::unique_ptr<Gpt> gpt_from_checkpoint(const std::string& ckpt) {
  Config cfg;
  std::unique_ptr<Gpt> gpt;
  Status s = load_trained_model(ckpt, &cfg, &gpt);
  EXPECT_TRUE(s.ok()) << s.message();
  return gpt;
}

// A safetensors file from a header's text and data bytes; the length field is the header's unless given.
std::string craft(const std::string& dir, const std::string& header, const std::string& data,
                  uint64_t length = UINT64_MAX) {
  const uint64_t n = length != UINT64_MAX ? length : header.size();
  std::string bytes(reinterpret_cast<const char*>(&n), 8);
  bytes += header + data;
  const std::string path = dir + "/bad.safetensors";
  EXPECT_TRUE(write_file_atomic(path, bytes).ok());
  return path;
}

std::string open_error(const std::string& path) {
  SafetensorsFile f;
  Status s = f.open(path);
  return s.ok() ? "(accepted)" : s.message();
}

}  // namespace

TEST(Safetensors, WritesAndReadsF32Bf16F16) {
  const std::string d = make_temp_dir("st");
  std::vector<float> a = rand_floats(6, 1), b = rand_floats(5, 2);
  std::vector<float> c = {1.f, -2.f, 65504.f, 1e-7f, 1.f / 3, std::ldexp(1.f, -24), 70000.f, 0.f};
  ASSERT_TRUE(write_safetensors(d + "/m.safetensors",
                                {{"a", {2, 3}, a.data(), StDtype::kF32},
                                 {"b", {5}, b.data(), StDtype::kBF16},
                                 {"c", {8}, c.data(), StDtype::kF16},
                                 {"empty", {0, 4}, nullptr, StDtype::kF32}},
                                {{"format", "pt"}})
                  .ok());
  SafetensorsFile f;
  Status s = f.open(d + "/m.safetensors");
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(f.metadata().at("format"), "pt");
  ASSERT_EQ(f.tensors().size(), 4u);
  std::string raw;
  ASSERT_TRUE(read_file(d + "/m.safetensors", &raw).ok());
  uint64_t n;
  std::memcpy(&n, raw.data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u) << "the data starts 8-byte aligned";
  std::vector<float> x(8);
  f.read_f32(*f.find("a"), x.data());
  EXPECT_EQ(0, std::memcmp(x.data(), a.data(), 6 * 4));
  EXPECT_EQ(f.find("a")->shape, (std::vector<int64_t>{2, 3}));
  f.read_f32(*f.find("b"), x.data());
  for (int i = 0; i < 5; i++) EXPECT_EQ(x[i], round_bf16(b[i]));
  f.read_f32(*f.find("c"), x.data());
  // f16: exact values stay, 1e-7 rounds to the nearest subnormal (2 x 2^-24), 1/3 to nearest even, 70000
  // overflows
  EXPECT_EQ(x[0], 1.f);
  EXPECT_EQ(x[1], -2.f);
  EXPECT_EQ(x[2], 65504.f);
  EXPECT_EQ(x[3], std::ldexp(2.f, -24));
  EXPECT_EQ(x[4], 0.333251953125f);
  EXPECT_EQ(x[5], std::ldexp(1.f, -24));
  EXPECT_TRUE(std::isinf(x[6]));
  EXPECT_EQ(x[7], 0.f);
  EXPECT_EQ(f.find("empty")->numel(), 0);
  std::filesystem::remove_all(d);
}

// Each lie a header can tell is a one-line error naming the file and the problem.
TEST(Safetensors, BadHeadersAreOneLineErrors) {
  const std::string d = make_temp_dir("st_bad");
  const std::string eight(8, '\0'), sixteen(16, '\0');
  auto expect = [&](const std::string& path, const std::string& what) {
    const std::string e = open_error(path);
    EXPECT_EQ(e.rfind(path + ": ", 0), 0u) << e;
    EXPECT_NE(e.find(what), std::string::npos) << "want '" << what << "' in: " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  };
  const std::string ok_a = R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  EXPECT_EQ(open_error(craft(d, "{" + ok_a + "}", eight)), "(accepted)");
  expect(craft(d, "{" + ok_a + "}", eight, 1 << 20), "header length 1048576 is larger than the file");
  expect(craft(d, "{" + ok_a + "}", eight, UINT64_MAX - 1), "is larger than the file");
  {
    const std::string p = d + "/short.safetensors";
    ASSERT_TRUE(write_file_atomic(p, "abc").ok());
    expect(p, "shorter than the 8-byte header length");
  }
  expect(craft(d, "{" + ok_a + ",}", eight), "the header is not valid JSON");
  expect(craft(d, "[1, 2]", ""), "not an object of tensors");
  expect(craft(d, R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,1e999]}})", eight),
         "the header is not valid JSON (number overflow");  // fuzz/regressions/safetensors_fuzz/
  expect(craft(d, R"({"a":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}})", eight), "unknown dtype 'Q7'");
  expect(craft(d, R"({"a":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})", eight),
         "dtype I64 is not supported");
  expect(craft(d, R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", eight),
         "shape [3] of F32 needs 12 bytes, but data_offsets [0, 8) hold 8");
  expect(craft(d, R"({"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,8]}})", eight), "needs 4 bytes");
  // Offsets out of the file, overlapping, not covering the data.
  expect(craft(d, R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", eight),
         "data_offsets [8, 16) reach past the end of the data (8 bytes");
  expect(craft(d,
               R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
               R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
               sixteen),
         "tensors 'a' [0, 8) and 'b' [4, 12) overlap");
  expect(craft(d, R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", sixteen),
         "data bytes [0, 8) belong to no tensor");
  expect(craft(d, "{" + ok_a + "}", sixteen), "data bytes [8, 16) after the last tensor belong to no tensor");
  expect(craft(d, R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", eight),
         "end before they begin");
  expect(craft(d, R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", eight),
         "not an integer in [0, 2^40]");
  expect(
      craft(d, R"({"a":{"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,8]}})", eight),
      "shape overflows 64 bits");
  expect(craft(d, R"({"a":{"dtype":"F32","shape":[2]}})", eight), "lacks data_offsets");
  expect(craft(d, R"({"__metadata__":{"k":1}})", ""), "__metadata__ 'k' is not a string");
  std::filesystem::remove_all(d);
}

TEST(NanochatNames, MapFrontierParametersToNanochatKeys) {
  EXPECT_EQ(nanochat_name("wte"), "transformer.wte.weight");
  EXPECT_EQ(nanochat_name("h.3.attn.c_q"), "transformer.h.3.attn.c_q.weight");
  EXPECT_EQ(nanochat_name("h.0.attn.ve_gate"), "transformer.h.0.attn.ve_gate.weight");
  EXPECT_EQ(nanochat_name("h.1.mlp.c_proj"), "transformer.h.1.mlp.c_proj.weight");
  EXPECT_EQ(nanochat_name("value_embeds.2"), "value_embeds.2.weight");
  EXPECT_EQ(nanochat_name("lm_head"), "lm_head.weight");
  EXPECT_EQ(nanochat_name("resid_lambdas"), "resid_lambdas");
  EXPECT_EQ(nanochat_name("x0_lambdas"), "x0_lambdas");
  EXPECT_EQ(nanochat_padded_vocab(400), 448);
  EXPECT_EQ(nanochat_padded_vocab(8192), 8192);
}

// fp32: the loader computes the same model from the same fp32 weights; only the summation order differs
// (torch's GEMM vs Frontier's, softmax, reductions), so logits agree to ~1e-6 of their largest value
// (measured 1e-7 to 1e-6): tolerance 2e-5, as the golden GPT test's.
TEST(Export, PyTorchLoaderReproducesLogitsFp32) {
  const std::string d = make_temp_dir("export_fp32");
  auto gpt = make_checkpoint(d + "/run", nullptr);
  ExportResult er;
  Status s = export_model({d + "/run/model.ckpt", d + "/out", "", false}, &er);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(er.n_tensors, gpt->params().size());
  const auto idx = fixed_tokens(400);
  std::vector<float> torch;
  ASSERT_TRUE(torch_logits(d + "/out", idx, &torch));
  const std::vector<float> ours = frontier_logits(*gpt, idx);
  ASSERT_EQ(torch.size(), ours.size());
  const double e = rel_err(ours, torch);
  std::printf(
      "[export] fp32: PyTorch loader vs Frontier logits (%d x 400): max |diff| / max |logit| = %.2g\n", kT,
      e);
  EXPECT_LE(e, 2e-5);
  std::filesystem::remove_all(d);
}

// bf16: the file holds the weights rounded to bf16. Against Frontier's forward on those same rounded weights
// (what importing the bf16 file gives) the tolerance is fp32's; against the original fp32 model the rounding
// (relative 2^-9 per weight) moves the logits by about 1% of their largest value: tolerance 5e-2.
TEST(Export, PyTorchLoaderReproducesLogitsBf16) {
  const std::string d = make_temp_dir("export_bf16");
  auto gpt = make_checkpoint(d + "/run", nullptr);
  ExportResult er;
  Status s = export_model({d + "/run/model.ckpt", d + "/out", "", true}, &er);
  ASSERT_TRUE(s.ok()) << s.message();
  const auto idx = fixed_tokens(400);
  std::vector<float> torch;
  ASSERT_TRUE(torch_logits(d + "/out", idx, &torch));
  ImportResult ir;
  s = import_model({d + "/out", d + "/imported", "", {}, false}, &ir);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(ir.dtype, "BF16");
  auto rounded = gpt_from_checkpoint(ir.checkpoint);
  for (size_t i = 0; i < gpt->weights().size(); i++)
    ASSERT_EQ(rounded->weights()[i], round_bf16(gpt->weights()[i])) << "weight " << i;
  const double e_same = rel_err(frontier_logits(*rounded, idx), torch);
  const double e_orig = rel_err(frontier_logits(*gpt, idx), torch);
  std::printf(
      "[export] bf16: PyTorch loader vs Frontier on the bf16 weights %.2g, vs the fp32 original %.2g\n",
      e_same, e_orig);
  EXPECT_LE(e_same, 2e-5);
  EXPECT_LE(e_orig, 5e-2);
  std::filesystem::remove_all(d);
}

// Export -> import in fp32 is bit-exact: every parameter byte, so every logit; the run's config and identity
// come back, and `eval bpb` prints the same number for both checkpoints.
TEST(Export, ImportRoundTripIsBitExactFp32) {
  const std::string d = make_temp_dir("export_rt");
  Config cfg;
  auto gpt = make_checkpoint(d + "/run", &cfg);
  auto r = run_cmd(frontier_bin() + " export --checkpoint " + d + "/run/model.ckpt --out " + d + "/out");
  ASSERT_EQ(r.rc, 0) << r.out;
  r = run_cmd(frontier_bin() + " import " + d + "/out --out " + d + "/back");
  ASSERT_EQ(r.rc, 0) << r.out;
  std::string toml, meta;
  std::vector<float> w, st;
  ASSERT_TRUE(load_checkpoint(d + "/back/model.ckpt", &toml, &meta, &w, &st).ok());
  ASSERT_EQ(w.size(), gpt->weights().size());
  EXPECT_EQ(0, std::memcmp(w.data(), gpt->weights().data(), w.size() * 4))
      << "weights differ after the round trip";
  Config back_cfg;
  std::unique_ptr<Gpt> back;
  RunIdentity id, id0;
  ASSERT_TRUE(load_trained_model(d + "/back/model.ckpt", &back_cfg, &back, &id).ok());
  ASSERT_TRUE(load_trained_model(d + "/run/model.ckpt", &cfg, &gpt, &id0).ok());
  EXPECT_EQ(id.tokenizer, id0.tokenizer);
  EXPECT_EQ(id.data, id0.data);
  EXPECT_EQ(back_cfg.get_int("train.micro_batch"), 4);  // the exporter's train config came back
  const auto idx = fixed_tokens(400);
  const auto a = frontier_logits(*gpt, idx), b = frontier_logits(*back, idx);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4)) << "logits differ after the round trip";
  const std::string bpb = " eval bpb --data " + dataset() + "/data --checkpoint ";
  auto e0 = run_cmd(frontier_bin() + bpb + d + "/run/model.ckpt"),
       e1 = run_cmd(frontier_bin() + bpb + d + "/back/model.ckpt");
  ASSERT_EQ(e0.rc, 0) << e0.out;
  ASSERT_EQ(e1.rc, 0) << e1.out;
  EXPECT_EQ(e0.out, e1.out);
  std::filesystem::remove_all(d);
}

// import --data writes a training state at step 0: `train --resume` trains the imported weights further, and
// `eval bpb` and `sample` take the checkpoint without other flags.
TEST(Export, ImportWithDataTrainsFurther) {
  const std::string d = make_temp_dir("export_train");
  make_checkpoint(d + "/run", nullptr);
  ExportResult er;
  ASSERT_TRUE(export_model({d + "/run/model.ckpt", d + "/out", "", false}, &er).ok());
  auto r =
      run_cmd(frontier_bin() + " import " + d + "/out --out " + d + "/cont --data " + dataset() +
              "/data --set train.max_steps=2 --set train.budget_seconds=1000 --set train.peak_gflops=100");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("frontier train --resume"), std::string::npos) << r.out;
  r = run_cmd(frontier_bin() + " train --resume " + d + "/cont");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("resumed " + d + "/cont at step 0"), std::string::npos) << r.out;
  EXPECT_EQ(summary_value(r.out, "num_steps"), 2) << r.out;
  r = run_cmd(frontier_bin() + " sample --checkpoint " + d + "/cont/model.ckpt --tokens 4 --prompt ab");
  EXPECT_EQ(r.rc, 0) << r.out;
  // Without --data: a model to evaluate (its tokenizer is the directory's), not a training state.
  r = run_cmd(frontier_bin() + " import " + d + "/out --out " + d + "/plain");
  ASSERT_EQ(r.rc, 0) << r.out;
  r = run_cmd(frontier_bin() + " sample --checkpoint " + d + "/plain/model.ckpt --tokens 4 --prompt ab");
  EXPECT_EQ(r.rc, 0) << r.out;
  r = run_cmd(frontier_bin() + " import " + d + "/out --out " + d + "/plain");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("already holds a run"), std::string::npos) << r.out;
  std::filesystem::remove_all(d);
}

// A config.json that does not match the weights, or is not what it claims, is a one-line error naming the
// file.
TEST(Export, ImportRefusesMismatchedConfigAndWeights) {
  const std::string d = make_temp_dir("export_bad");
  make_checkpoint(d + "/run", nullptr);
  ExportResult er;
  ASSERT_TRUE(export_model({d + "/run/model.ckpt", d + "/out", "", false}, &er).ok());
  std::string good;
  ASSERT_TRUE(read_file(d + "/out/config.json", &good).ok());
  const std::string cfg_path = d + "/out/config.json", st_path = d + "/out/model.safetensors";
  auto import_error = [&](const std::string& config) {
    EXPECT_TRUE(write_file_atomic(cfg_path, config).ok());
    ImportResult ir;
    Status s = import_model({d + "/out", d + "/imp", "", {}, true}, &ir);
    return s.ok() ? std::string("(accepted)") : s.message();
  };
  auto edit = [&](const std::function<void(nlohmann::json&)>& f) {
    nlohmann::json j = nlohmann::json::parse(good);
    f(j);
    return j.dump();
  };
  auto expect = [](const std::string& e, const std::string& file, const std::string& what) {
    EXPECT_EQ(e.rfind(file + ": ", 0), 0u) << e;
    EXPECT_NE(e.find(what), std::string::npos) << "want '" << what << "' in: " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  };
  EXPECT_EQ(import_error(good), "(accepted)");
  expect(import_error(edit([](auto& j) { j["n_kv_head"] = 2; })), st_path,
         "tensor 'transformer.h.0.attn.c_k.weight' has shape [32, 64], but config.json's model");
  expect(import_error(edit([](auto& j) { j["n_layer"] = 5; })), st_path,
         "no tensor 'transformer.h.3.attn.c_q.weight'");
  expect(
      import_error(edit([](auto& j) { j["n_layer"] = 2; })), st_path,
      "no tensor 'transformer.h.1.attn.ve_gate.weight'");  // value embeddings sit on other layers at depth 2
  expect(import_error(edit([](auto& j) { j.erase("n_embd"); })), cfg_path, "field 'n_embd' is missing");
  expect(import_error(edit([](auto& j) { j["n_head"] = 3; })), cfg_path,
         "n_embd 64 is not divisible by n_head 3");
  expect(import_error(edit([](auto& j) { j["frontier"]["architecture"]["mlp"] = "gelu"; })), cfg_path,
         "frontier.architecture: model.mlp is 'gelu'; use relu2, leaky_relu2, swiglu or geglu");
  expect(import_error(edit([](auto& j) { j["frontier"]["architecture"]["rotary_v2"] = 1; })), cfg_path,
         "frontier.architecture has 'rotary_v2', which this build's model does not know");
  expect(import_error(edit([](auto& j) { j["frontier"]["architecture"]["padded_vocab_size"] = 512; })), cfg_path,
         "frontier.architecture padded_vocab_size is 512");
  expect(import_error(edit([](auto& j) { j["window_pattern"] = "SXL"; })), cfg_path,
         "window_pattern 'SXL' has a character other than L and S");
  // A lever's value changes which tensors the model has: smear on, without its tensors.
  expect(import_error(edit([](auto& j) { j["frontier"]["architecture"]["smear"] = true; })), st_path,
         "no tensor 'smear_gate.weight'");
  expect(import_error(good.substr(0, good.size() / 2)), cfg_path, "not valid JSON");
  // Missing and extra tensors: rewrite the weights without one, or with one more.
  ASSERT_TRUE(write_file_atomic(cfg_path, good).ok());
  std::vector<std::vector<float>> keep;
  auto rewrite = [&](const std::string& drop, const std::string& add) {
    SafetensorsFile f;
    ASSERT_TRUE(f.open(st_path).ok());
    std::vector<StTensorIn> ts;
    keep.clear();
    keep.reserve(f.tensors().size() + 1);
    for (const auto& t : f.tensors()) {
      if (t.name == drop) continue;
      keep.emplace_back(t.numel());
      f.read_f32(t, keep.back().data());
      ts.push_back({t.name, t.shape, keep.back().data(), t.dtype});
    }
    keep.emplace_back(1, 0.2f);
    if (!add.empty()) ts.push_back({add, {1}, keep.back().data(), StDtype::kF32});
    ASSERT_TRUE(write_safetensors(st_path + ".new", ts, {}).ok());
    std::filesystem::rename(st_path + ".new", st_path);
  };
  const std::string original = d + "/original.safetensors";
  std::filesystem::copy_file(st_path, original);
  rewrite("lm_head.weight", "");
  expect(import_error(good), st_path, "no tensor 'lm_head.weight', which config.json's model");
  std::filesystem::copy_file(original, st_path, std::filesystem::copy_options::overwrite_existing);
  rewrite("", "backout_lambda");
  expect(import_error(good), st_path, "1 tensor that config.json's model (depth 3");
  // The CLI: one line, exit status 1.
  auto r = run_cmd(frontier_bin() + " import " + d + "/out --out " + d + "/imp2");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(r.out.rfind("error: " + st_path + ": ", 0), 0u) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  r = run_cmd(frontier_bin() + " export --checkpoint " + d + "/nope.ckpt --out " + d + "/x");
  EXPECT_EQ(r.rc, 1);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  std::filesystem::remove_all(d);
}

// nanochat's own directory of its current GPT (92d63d4: window_pattern SSSL, smear, backout, a 12-channel 3*sigmoid
// value-embedding gate, Q/K x 1.2): config.json with GPTConfig's fields only, smear_gate.weight among the tensors.
// It imports as that model (every lever recognised) and scores the same val_bpb as the model it was written from.
// seq_len 160: nanochat's short window is then ceil(160/4/128)*128 = 128 tokens, so the S layers do mask keys.
TEST(Export, NanochatCurrentDirectoryImportsAndScoresTheSame) {
  const std::string d = make_temp_dir("export_nanochat");
  Config cfg;
  auto gpt = make_checkpoint(d + "/run", &cfg,
                             {"model.seq_len=160", "model.window_pattern=SSSL", "model.smear=true",
                              "model.backout=true", "model.ve_gate_channels=12", "model.ve_gate_scale=3",
                              "model.ve_gate_init=0.02", "model.qk_scale=1.2", "eval.tokens=1280"});
  EXPECT_EQ(gpt->shape().window(0), 128);
  auto r = run_cmd(frontier_bin() + " export --checkpoint " + d + "/run/model.ckpt --out " + d + "/out");
  ASSERT_EQ(r.rc, 0) << r.out;
  std::string text;
  ASSERT_TRUE(read_file(d + "/out/config.json", &text).ok());
  nlohmann::json j = nlohmann::json::parse(text);
  EXPECT_EQ(j["window_pattern"], "SSSL");
  j.erase("frontier");  // as nanochat writes it
  ASSERT_TRUE(write_file_atomic(d + "/out/config.json", j.dump(2)).ok());
  r = run_cmd(frontier_bin() + " import " + d + "/out --out " + d + "/back");
  ASSERT_EQ(r.rc, 0) << r.out;
  Config back_cfg;
  std::unique_ptr<Gpt> back;
  RunIdentity id;
  ASSERT_TRUE(load_trained_model(d + "/back/model.ckpt", &back_cfg, &back, &id).ok());
  EXPECT_EQ(frontier_architecture(back->shape()), frontier_architecture(gpt->shape()));
  EXPECT_EQ(back_cfg.get_string("model.window_pattern"), "SSSL");
  EXPECT_TRUE(back_cfg.get_bool("model.smear"));
  const auto idx = fixed_tokens(400, 160);
  const auto a = frontier_logits(*gpt, idx), b = frontier_logits(*back, idx);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4)) << "logits differ after the round trip";
  const std::string bpb = " eval bpb --data " + dataset() + "/data --tokens 1280 --checkpoint ";
  auto e0 = run_cmd(frontier_bin() + bpb + d + "/run/model.ckpt"),
       e1 = run_cmd(frontier_bin() + bpb + d + "/back/model.ckpt --cross-data");  // nanochat records no data
  ASSERT_EQ(e0.rc, 0) << e0.out;
  ASSERT_EQ(e1.rc, 0) << e1.out;
  auto bpb_line = [](const std::string& out) {
    const size_t at = out.find("val_bpb");
    return at == std::string::npos ? std::string("(none)") : out.substr(at, out.find(')', at) + 1 - at);
  };
  EXPECT_NE(bpb_line(e0.out), "(none)") << e0.out;
  EXPECT_EQ(bpb_line(e0.out), bpb_line(e1.out)) << e0.out << e1.out;
  std::filesystem::remove_all(d);
}

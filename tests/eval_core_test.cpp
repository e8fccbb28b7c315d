// `frontier eval core` on the real bundle, its bad-input errors, and per-item parity with PyTorch.
#include <cstring>
#include <nlohmann/json.hpp>

#include "data/dataset.h"
#include "data/loader.h"
#include "eval/core_eval.h"
#include "model/gpt.h"
#include "tokenizer/tokenizer.h"
#include "torch_peer.h"
#include "train/checkpoint.h"
#include "train_fixture.h"
#include "util/file.h"

using namespace frontier;
using namespace frontier::testing;

// `frontier eval core` end to end on the real bundle with a small checkpoint, and its bad-input errors.
TEST(EvalCore, RealBundleEndToEndAndBadInput) {
  REQUIRE_SHARED_DATA();
  std::string run = dataset() + "/core_run";
  auto r = run_cmd(train_cmd("--budget 1000 --set train.max_steps=2 --set train.run_dir=" + run));
  ASSERT_EQ(r.rc, 0) << r.out;
  std::string bundle = shared_data() + "/eval_bundle";
  std::string cmd = frontier_bin() + " eval core --checkpoint " + run + "/model.ckpt --max-per-task 2 --bundle ";
  r = run_cmd(cmd + bundle + " --json " + run + "/core.json");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("CORE (20/22 tasks): "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("squad                             missing"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("coqa                              missing"), std::string::npos) << r.out;
  std::string text;
  ASSERT_TRUE(read_file(run + "/core.json", &text).ok());
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["tasks"].size(), 22u);
  EXPECT_EQ(j["tasks_present"].get<int>(), 20);
  double sum = 0;
  for (auto& t : j["tasks"])
    if (t["present"].get<bool>()) {
      EXPECT_EQ(t["items"].get<int>(), 2) << t["label"];
      sum += t["centered"].get<double>();
    }
  EXPECT_NEAR(j["core"].get<double>(), sum / 20, 1e-12);  // CORE is the mean centered accuracy
  auto again = run_cmd(cmd + bundle);
  EXPECT_EQ(again.out.substr(again.out.find("CORE")), r.out.substr(r.out.find("CORE")));  // deterministic

  // Bad input: a copy of the bundle with one defect at a time.
  std::string bad = dataset() + "/bad_bundle";
  auto fresh = [&]() {
    std::filesystem::remove_all(bad);
    std::filesystem::create_directories(bad + "/eval_data/world_knowledge");
    std::filesystem::copy_file(bundle + "/eval_meta_data.csv", bad + "/eval_meta_data.csv");
    write_text(bad + "/core.yaml", "icl_tasks:\n-\n  label: arc_easy\n  dataset_uri: world_knowledge/arc_easy.jsonl\n"
                                   "  num_fewshot: [0]\n  icl_task_type: multiple_choice\n");
    write_text(bad + "/eval_data/world_knowledge/arc_easy.jsonl",
               "{\"query\": \"Q?\", \"choices\": [\"a\", \"b\"], \"gold\": 1}\n");
  };
  fresh();
  r = run_cmd(cmd + bad);
  EXPECT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("CORE (1/1 tasks)"), std::string::npos) << r.out;
  write_text(bad + "/eval_data/world_knowledge/arc_easy.jsonl",
             "{\"query\": \"Q?\", \"choices\": [\"a\", \"b\"], \"gold\": 1}\n{\"query\": \"no choices\"}\n");
  r = run_cmd(cmd + bad);
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("arc_easy.jsonl:2: missing list field \"choices\""), std::string::npos) << r.out;
  fresh();
  write_text(bad + "/core.yaml", "icl_tasks:\n-\n  label: arc_easy\n  dataset_uri: x.jsonl\n  num_fewshot: [0]\n"
                                 "  icl_task_type: ranking\n");
  r = run_cmd(cmd + bad);
  EXPECT_NE(r.out.find("core.yaml:3: unknown icl_task_type 'ranking'"), std::string::npos) << r.out;
  write_text(bad + "/core.yaml", "icl_tasks: [\n  {label: x\n");
  r = run_cmd(cmd + bad);
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("core.yaml:"), std::string::npos) << r.out;
  // A checkpoint whose vocabulary does not match the tokenizer, and a tokenizer that is not there.
  PrepareOptions o;
  o.train_inputs = {dataset() + "/c.jsonl"};
  o.out_dir = dataset() + "/data350";
  o.vocab_size = 350;
  o.progress = false;
  PrepareResult pr;
  ASSERT_TRUE(prepare(o, &pr).ok());
  r = run_cmd(frontier_bin() + " eval core --checkpoint " + run + "/model.ckpt --data " + o.out_dir + " --bundle " +
              bundle);
  EXPECT_NE(r.rc, 0);
  // The tokenizer identity recorded in the checkpoint catches it (before the vocabulary sizes are compared).
  EXPECT_NE(r.out.find("was trained with tokenizer"), std::string::npos) << r.out;
  r = run_cmd(frontier_bin() + " eval core --checkpoint " + run + "/model.ckpt --data " +
              source_dir() + "/no_such_data --bundle " + bundle);
  EXPECT_NE(r.rc, 0);
  EXPECT_NE(r.out.find("no tokenizer in"), std::string::npos) << r.out;
}

// CORE per-item scores against the PyTorch model: for real bundle items (MC with few-shot, schema, LM), the mean
// continuation loss of every option from Frontier and from tests/torch/gpt_ref.py on the same sequences agree to
// relative 1e-5 (fp32 both sides), and so do the decisions.
TEST(EvalCore, PerItemLossesMatchPyTorch) {
  REQUIRE_SHARED_DATA();
  std::string run = dataset() + "/core_parity_run";
  auto r = run_cmd(train_cmd("--budget 1000 --set train.max_steps=3 --set train.run_dir=" + run));
  ASSERT_EQ(r.rc, 0) << r.out;
  Config cfg;
  std::unique_ptr<Gpt> gpt;
  ASSERT_TRUE(load_trained_model(run + "/model.ckpt", &cfg, &gpt).ok());
  Tokenizer tok;
  ASSERT_TRUE(tok.load(dataset() + "/data/tokenizer").ok());
  CoreBundle bundle;
  Status s = load_core_bundle(shared_data() + "/eval_bundle", &bundle);
  ASSERT_TRUE(s.ok()) << s.message();
  std::vector<CoreSequences> items;
  for (const char* label : {"arc_easy", "winogrande", "lambada_openai", "jeopardy"}) {
    const CoreTask* task = nullptr;
    for (const auto& t : bundle.tasks)
      if (t.label == label) task = &t;
    ASSERT_NE(task, nullptr) << label;
    std::vector<CoreItem> data(task->rows.begin(), task->rows.begin() + 30);
    int taken = 0;
    for (size_t idx = 0; idx < data.size() && taken < 3; idx++) {
      CoreSequences seq;
      ASSERT_TRUE(core_item_sequences(*gpt, tok, *task, data, idx, &seq)) << label;
      if (!seq.answer_fits) continue;  // not scored (its answer does not fit T = 32): no span to compare
      items.push_back(seq);
      taken++;
    }
    EXPECT_GT(taken, 0) << label << ": no item of the first 30 fits the context";
  }
  nlohmann::json seqs = nlohmann::json::array();
  for (const auto& it : items)
    for (const auto& t : it.tokens) seqs.push_back(t);
  const int T = gpt->shape().seq_len;
  std::vector<int32_t> dummy(T, 0);
  std::string d = make_temp_dir("core_torch"), out;
  ASSERT_TRUE(run_gpt_peer(*gpt, gpt->weights(), 1, T, dummy, dummy, {{"sequences", seqs}}, d, &out));
  const double* want = reinterpret_cast<const double*>(out.data());
  size_t off = 0, n_checked = 0;
  double worst = 0;
  for (const auto& it : items)
    for (size_t c = 0; c < it.tokens.size(); c++) {
      std::vector<float> losses;
      std::vector<int> pred;
      core_sequence_losses(*gpt, it.tokens[c], &losses, &pred);
      ASSERT_LE((off + losses.size()) * 8, out.size());
      double a = 0, b = 0;
      for (int64_t t = it.start[c]; t < it.end[c]; t++) {
        a += losses[t - 1];
        b += want[off + t - 1];
      }
      double rel = std::abs(a - b) / std::abs(b);
      worst = std::max(worst, rel);
      EXPECT_LE(rel, 1e-5) << "sequence " << n_checked;
      off += losses.size();
      n_checked++;
    }
  EXPECT_EQ(off * 8, out.size());
  std::printf("[core-torch] %zu sequences of %zu items: worst relative difference of continuation loss %.2g\n",
              n_checked, items.size(), worst);
  std::filesystem::remove_all(d);
}

// The CORE harness on a model with every lever that changes its forward (windows, key offset, smear, backout, a
// tied head, n-gram tables, experts, a gated MLP elsewhere): it scores, over the same 20 tasks.
TEST(EvalCore, ArchitectureVariantsScore) {
  REQUIRE_SHARED_DATA();
  const std::vector<std::string> sets = {
      "--set model.depth=3 --set model.window_pattern=SL --set model.short_window=8 --set model.rope_fraction=0.5 "
      "--set model.key_offset=true --set model.smear=true --set model.backout=true --set model.tie_embeddings=true "
      "--set model.ngram_orders=2,3 --set model.ngram_buckets=500 --set model.moe_experts=4 --set model.mlp=leaky_relu2",
      "--set model.depth=2 --set model.mlp=swiglu --set model.mlp_ratio=2.6667 --set model.softcap=0 "
      "--set model.qk_scale=1.2 --set model.mtp_heads=2"};
  for (size_t v = 0; v < sets.size(); v++) {
    const std::string run = dataset() + "/core_arch" + std::to_string(v);
    auto r = run_cmd(train_cmd("--budget 1000 --set train.max_steps=2 --set train.run_dir=" + run + " " + sets[v]));
    ASSERT_EQ(r.rc, 0) << r.out;
    r = run_cmd(frontier_bin() + " eval core --checkpoint " + run + "/model.ckpt --max-per-task 1 --bundle " +
                shared_data() + "/eval_bundle");
    ASSERT_EQ(r.rc, 0) << r.out;
    EXPECT_NE(r.out.find("CORE (20/22 tasks): "), std::string::npos) << r.out;
  }
}

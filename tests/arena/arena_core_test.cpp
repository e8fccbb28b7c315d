// The frozen evaluator's CORE (a composite phase) against `frontier eval core` in process, and the submit lock.
// Both fast next to the end-to-end competition (arena_test.cpp): one small model, a few CORE items per task.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "../train_fixture.h"
#include "arena/competition.h"
#include "arena/evaluator.h"
#include "arena/record.h"
#include "eval/core_eval.h"
#include "eval/score.h"
#include "model/gpt.h"
#include "tokenizer/tokenizer.h"
#include "train/checkpoint.h"
#include "util/file.h"

namespace frontier::testing {
namespace {

namespace fs = std::filesystem;

// CORE through the protocol makes the decisions `frontier eval core` makes in process, on the same checkpoint.
// Tolerance: the decisions are one function (decide_core_item); only its inputs differ by float rounding (served
// rows are a float32 log_softmax of the softcapped logits, written per request; in process the losses come from the
// model's fused cross-entropy over an item's options batched in one forward): per-position losses agree to about
// 1e-6 nats. A multiple-choice decision can only differ where the two best options' mean losses are closer than
// that, so items whose in-process margin is below 1e-4 nats are counted as near ties and a task's correct count may
// differ by at most its near ties; every other count (items, cropped, too long) and every LM decision (argmax over
// distinct float logits) must be equal. With no near tie (the usual case), CORE is equal exactly.
TEST(ArenaCore, ServedCoreEqualsEvalCoreInProcess) {
  const std::string bundle_dir = shared_data() + "/eval_bundle";
  ASSERT_TRUE(fs::exists(bundle_dir + "/core.yaml")) << "the CORE bundle is missing at " << bundle_dir
                                                     << " (this test needs ../shared/data)";
  const std::string run = make_temp_dir("arena_core");
  // seq_len 256, so that most items fit (a 400-token vocabulary spends 2-3 tokens per English word).
  RunResult tr = run_cmd(frontier_bin() + " train --data " + dataset() + "/data --budget 1000 --set model.vocab_size=400 "
                         "--set model.depth=1 --set model.dim=64 --set model.head_dim=32 --set model.seq_len=256 "
                         "--set train.micro_batch=2 --set train.max_steps=30 --set eval.tokens=512 --set eval.batch=1 "
                         "--set train.peak_gflops=100 --set train.run_dir=" + run);
  ASSERT_EQ(tr.rc, 0) << tr.out;
  const std::string ckpt = run + "/model.ckpt";
  Config cfg;
  std::unique_ptr<Gpt> gpt;
  ASSERT_TRUE(load_trained_model(ckpt, &cfg, &gpt).ok());
  Tokenizer tok;
  ASSERT_TRUE(tok.load(dataset() + "/data/tokenizer").ok());
  CoreBundle bundle;
  Status s = load_core_bundle(bundle_dir, &bundle);
  ASSERT_TRUE(s.ok()) << s.message();
  const int64_t kItems = 4;

  CoreReport local;
  ASSERT_TRUE(evaluate_core(*gpt, tok, bundle, kItems, &local, false).ok());

  EvalInputs in;
  in.docs = {"the quick brown fox jumps over the lazy dog. " + std::string(200, 'a'), "second document, short."};
  in.core = &bundle;
  in.core_max_per_task = kItems;
  EvalChecks checks;
  checks.seed = 7;
  checks.probes = 8;
  EvalOutcome o;
  s = evaluate_served({frontier_bin(), "serve-logprobs", "--checkpoint", ckpt}, tok, in, checks, run + "/eval", 600, &o);
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(o.verdict, "ok") << o.reason;
  ASSERT_TRUE(o.has_core);
  EXPECT_GT(o.core_requests, 100);
  EXPECT_EQ(o.causal_requests, 4);
  EXPECT_LE(o.worst_causal_change, 1e-4);  // an honest server: streamed rows equal batch rows
  EXPECT_LE(o.worst_probe_change, 1e-4);
  EXPECT_NEAR(o.composite, composite_score(o.val_bpb, o.core.core), 1e-12);

  // Near ties in process: items whose two best options' mean losses are within 1e-4 nats.
  ASSERT_EQ(local.tasks.size(), o.core.tasks.size());
  int64_t scored = 0, near_total = 0;
  double allowed = 0;
  for (size_t t = 0; t < bundle.tasks.size(); t++) {
    const CoreTask& task = bundle.tasks[t];
    const CoreTaskResult &a = local.tasks[t], &b = o.core.tasks[t];
    EXPECT_EQ(a.label, b.label);
    EXPECT_EQ(a.present, b.present) << a.label;
    if (!task.present) continue;
    CoreTaskPlan plan;
    ASSERT_TRUE(plan_core_task(tok, task, kItems, gpt->shape().seq_len, &plan).ok());
    int64_t near = 0;
    for (size_t i = 0; i < plan.items.size(); i++) {
      if (!plan.scored(i)) continue;
      scored++;
      if (task.type == CoreTaskType::kLanguageModeling) continue;
      std::vector<std::vector<float>> losses;
      std::vector<std::vector<int>> pred;
      ASSERT_TRUE(core_batch_losses(*gpt, plan.items[i].tokens, &losses, &pred).ok());
      std::vector<double> means;
      const CoreSequences& q = plan.items[i];
      for (size_t c = 0; c < q.tokens.size(); c++) {
        double sum = 0;
        for (int64_t k = q.start[c]; k < q.end[c]; k++) sum += losses[c][k - 1];
        means.push_back(sum / static_cast<double>(q.end[c] - q.start[c]));
      }
      std::sort(means.begin(), means.end());
      near += means[1] - means[0] < 1e-4;
    }
    near_total += near;
    EXPECT_EQ(a.n, b.n) << a.label;
    EXPECT_EQ(a.cropped, b.cropped) << a.label;
    EXPECT_EQ(a.too_long, b.too_long) << a.label;
    EXPECT_LE(std::llabs(a.correct - b.correct), near) << a.label;
    allowed += static_cast<double>(near) / a.n / (1 - 0.01 * task.random_baseline);
  }
  EXPECT_GT(scored, 40);  // most items fit the context: the comparison is not vacuous
  EXPECT_LE(std::fabs(local.core - o.core.core), allowed / local.n_present + 1e-12)
      << "in process " << local.core << ", served " << o.core.core << ", near ties " << near_total;
  std::printf("CORE (%d/%d tasks, %lld items per task, %lld scored): in process %.6f, through the protocol %.6f; "
              "near ties %lld; %lld CORE requests, eval %.1f s\n", local.n_present, local.n_total,
              static_cast<long long>(kItems), static_cast<long long>(scored), local.core, o.core.core,
              static_cast<long long>(near_total), static_cast<long long>(o.core_requests), o.seconds);
  fs::remove_all(run);
}

// Two (here four) `arena submit` processes with identical content at the same moment: one accepted, the others
// duplicates, one submission folder, a chain that verifies. Five rounds, each with its own config.
TEST(ArenaSubmit, ConcurrentIdenticalSubmitsAcceptOne) {
  const std::string d = make_temp_dir("arena_lock");
  write_text(d + "/competition.toml", "name = \"lock\"\ntrain_data = \"data\"\nhidden_val = \"h.jsonl\"\n"
                                      "[[phase]]\nname = \"p\"\nbudget_seconds = 5\n");
  const int kRounds = 5, kProcs = 4;
  for (int round = 0; round < kRounds; round++) {
    const std::string cfg = d + "/c" + std::to_string(round) + ".toml";
    write_text(cfg, "[model]\ndepth = 1\n[train]\nseed = " + std::to_string(round + 1) + "\n");
    std::string cmd;
    for (int p = 0; p < kProcs; p++)
      cmd += frontier_bin() + " arena submit --competition " + d + "/competition.toml --team t" + std::to_string(p) +
             " --config " + cfg + " > " + d + "/out_" + std::to_string(round) + "_" + std::to_string(p) + " 2>&1 & ";
    RunResult r = run_cmd("sh -c '" + cmd + "wait'");
    ASSERT_EQ(r.rc, 0) << r.out;
  }
  Record rec;
  ASSERT_TRUE(rec.open(d + "/record.sqlite").ok());
  std::vector<RecordRow> rows;
  ASSERT_TRUE(rec.rows(&rows).ok());
  ASSERT_EQ(rows.size(), static_cast<size_t>(kRounds * kProcs));
  std::map<std::string, std::map<std::string, int>> by_hash;  // submission -> status -> count
  for (const auto& r : rows) by_hash[r.submission][r.status]++;
  EXPECT_EQ(by_hash.size(), static_cast<size_t>(kRounds));
  for (const auto& [h, st] : by_hash) {
    EXPECT_EQ(st.count("accepted") ? st.at("accepted") : 0, 1) << h;
    EXPECT_EQ(st.count("duplicate") ? st.at("duplicate") : 0, kProcs - 1) << h;
    EXPECT_TRUE(fs::exists(d + "/submissions/" + h + "/submission.json")) << h;
  }
  int dirs = 0;
  for (const auto& e : fs::directory_iterator(d + "/submissions")) dirs += e.is_directory();
  EXPECT_EQ(dirs, kRounds);  // no leftover incoming folder
  VerifyReport v;
  ASSERT_TRUE(rec.verify(&v).ok());
  EXPECT_TRUE(v.ok);
  fs::remove_all(d);
}

}  // namespace
}  // namespace frontier::testing

// frontier eval: core (the CORE benchmark, eval/core_eval.h), score (the composite leaderboard score,
// eval/score.h) and bpb (val_bpb of a checkpoint, optionally paired against another) on a trained checkpoint.
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "eval/bpb.h"
#include "eval/core_eval.h"
#include "eval/score.h"
#include "model/gpt.h"
#include "train/checkpoint.h"
#include "train/eval_checkpoint.h"
#include "train/identity.h"
#include "util/file.h"

namespace frontier::cli {
namespace {

struct CoreArgs {
  std::string ckpt, bundle = "../shared/data/eval_bundle", data, json;
  int64_t max = 0;
};

struct ScoreArgs {
  std::string ckpt, bundle = "../shared/data/eval_bundle", data, json;
  int64_t max = 0;
  bool cross = false;
};

struct BpbArgs {
  std::string ckpt, data, split = "val", against;
  int64_t tokens = 0;
  bool cross = false;
};

int run_core(const CoreArgs& a) {
  EvalCheckpoint ec;
  Status s = open_checkpoint_for_eval(a.ckpt, a.data, EvalNeeds::kTokenizer, false, &ec);
  if (!s.ok()) return fail(s);
  CoreBundle bundle;
  if (!(s = load_core_bundle(a.bundle, &bundle)).ok()) return fail(s);
  CoreReport rep;
  if (!(s = evaluate_core(*ec.gpt, ec.tok, bundle, a.max, &rep)).ok()) return fail(s);
  std::printf("%s", rep.table().c_str());
  if (!a.json.empty()) {
    nlohmann::json j = rep.json();
    if (!(s = write_file_atomic(a.json, j.dump(2) + "\n")).ok()) return fail(s);
  }
  return 0;
}

int run_score(const ScoreArgs& a) {
  EvalCheckpoint ec;
  Status s = open_checkpoint_for_eval(a.ckpt, a.data, EvalNeeds::kData, a.cross, &ec);
  if (!s.ok()) return fail(s);
  std::unique_ptr<Gpt>& gpt = ec.gpt;
  const PreparedData& data = ec.data;
  const std::string& cross = ec.note;
  double bpb = 0;
  if (!(s = evaluate_bpb(*gpt, data, ec.set.eval_tokens, static_cast<int>(ec.set.eval_batch),
                         gpt->shape().seq_len, &bpb)).ok())
    return fail(s);
  CoreBundle bundle;
  if (!(s = load_core_bundle(a.bundle, &bundle)).ok()) return fail(s);
  CoreReport rep;
  if (!(s = evaluate_core(*gpt, data.tokenizer(), bundle, a.max, &rep)).ok()) return fail(s);
  std::printf("%s", rep.table().c_str());
  const double comp = composite_score(bpb, rep.core);
  std::printf("val_bpb:   %.6f  (bpb_score 1 - val_bpb/8 = %.6f)%s\n", bpb, bpb_score(bpb),
              cross.empty() ? "" : ("  [" + cross + "]").c_str());
  std::printf("CORE (%d/%d tasks%s): %.6f\n", rep.n_present, rep.n_total,
              a.max > 0 ? (", " + std::to_string(a.max) + " items per task").c_str() : "", rep.core);
  std::printf("composite: %.6f  (0.5 bpb_score + 0.5 CORE)\n", comp);
  if (!a.json.empty()) {
    nlohmann::json j = rep.json();  // core, tasks, crop counts
    j.update({{"val_bpb", bpb}, {"bpb_score", bpb_score(bpb)}, {"max_per_task", a.max}, {"composite", comp}});
    if (!cross.empty()) j["cross_data"] = cross;
    if (!(s = write_file_atomic(a.json, j.dump(2) + "\n")).ok()) return fail(s);
  }
  return 0;
}

// --against: the other model on the same windows `wa` of `n` tokens, and the paired difference.
int print_against(const BpbArgs& a, EvalCheckpoint& ec, int64_t n, const BpbWindows& wa) {
  Gpt& gpt = *ec.gpt;
  Config cfg_b;
  std::unique_ptr<Gpt> gpt_b;
  RunIdentity id_b;
  Status s;
  if (!(s = load_trained_model(a.against, &cfg_b, &gpt_b, &id_b)).ok()) return fail(s);
  if (gpt_b->shape().seq_len != gpt.shape().seq_len || gpt_b->shape().vocab_size != gpt.shape().vocab_size ||
      (!id_b.tokenizer.empty() && !ec.id.tokenizer.empty() && id_b.tokenizer != ec.id.tokenizer))
    return fail(Status::error("--against " + a.against + " has seq_len " +
                              std::to_string(gpt_b->shape().seq_len) + " and vocab_size " +
                              std::to_string(gpt_b->shape().vocab_size) + " (or another tokenizer); the paired "
                              "comparison needs the same windows: seq_len " +
                              std::to_string(gpt.shape().seq_len) + ", the same tokenizer"));
  double bpb_b = 0, se_b = 0, diff = 0, dse = 0;
  BpbWindows wb;
  if (!(s = evaluate_bpb(*gpt_b, ec.data, n, static_cast<int>(ec.set.eval_batch), gpt.shape().seq_len,
                         &bpb_b, a.split, nullptr, &se_b, &wb)).ok())
    return fail(s);
  if (!bpb_difference(wa, wb, &diff, &dse))
    return fail(Status::error("the paired comparison needs one process (not under mpirun)"));
  std::printf("against:  %.6f  (%s; standard error of the sample %.6f)\n", bpb_b, a.against.c_str(), se_b);
  std::printf("difference: %+.6f  (paired standard error %.6f over %zu windows: %.1f standard errors)\n", diff,
              dse, wa.nats.size(), dse > 0 ? diff / dse : 0.0);
  return 0;
}

int run_bpb(const BpbArgs& a) {
  EvalCheckpoint ec;
  Status s = open_checkpoint_for_eval(a.ckpt, a.data, EvalNeeds::kData, a.cross, &ec);
  if (!s.ok()) return fail(s);
  Gpt& gpt = *ec.gpt;
  const std::string& cross = ec.note;
  int64_t n = a.tokens > 0 ? a.tokens : ec.set.eval_tokens;
  double bpb = 0, se = 0;
  BpbWindows wa;
  if (!(s = evaluate_bpb(gpt, ec.data, n, static_cast<int>(ec.set.eval_batch), gpt.shape().seq_len, &bpb,
                         a.split, &n, &se, &wa)).ok())
    return fail(s);
  std::printf("%s_bpb: %.6f  (%lld tokens at seq_len %d; standard error of the sample %.6f)%s\n",
              a.split.c_str(), bpb, static_cast<long long>(n), gpt.shape().seq_len, se,
              cross.empty() ? "" : ("  [" + cross + "]").c_str());
  if (!a.against.empty()) return print_against(a, ec, n, wa);  // the other model on the same windows
  return 0;
}

void add_core(CLI::App* ev, Commands& cmds) {
  auto a = std::make_shared<CoreArgs>();
  auto* ev_core = ev->add_subcommand("core", "The CORE benchmark (DCLM, 22 tasks) as nanochat computes it");
  ev_core->add_option("--checkpoint", a->ckpt, "RUN_DIR/model.ckpt from frontier train")->required();
  ev_core->add_option("--bundle", a->bundle, "Eval bundle in nanochat's layout")->capture_default_str();
  ev_core->add_option("--data", a->data, "Prepared dataset whose tokenizer to use (default: the run's train.data)");
  ev_core->add_option("--max-per-task", a->max, "At most N items per task (0 = all)")
      ->check(number_in(0))
      ->capture_default_str();
  ev_core->add_option("--json", a->json, "Also write the per-task results as JSON here");
  cmds.push_back({ev_core, [a] { return run_core(*a); }});
}

void add_score(CLI::App* ev, Commands& cmds) {
  auto a = std::make_shared<ScoreArgs>();
  auto* ev_score = ev->add_subcommand("score", "The composite leaderboard score: 0.5 (1 - val_bpb/8) + 0.5 CORE "
                                               "(docs/scoring.md), with val_bpb and CORE on their frozen settings");
  ev_score->add_option("--checkpoint", a->ckpt, "RUN_DIR/model.ckpt from frontier train")->required();
  ev_score->add_option("--bundle", a->bundle, "Eval bundle in nanochat's layout")->capture_default_str();
  ev_score->add_option("--data", a->data, "Prepared dataset (default: the run's train.data)");
  ev_score->add_flag("--cross-data", a->cross, "Allow --data to be a dataset other than the run's (same tokenizer); "
                     "said so in the result");
  ev_score->add_option("--max-per-task", a->max, "At most N CORE items per task (0 = all; the leaderboard uses 0)")
      ->check(number_in(0))
      ->capture_default_str();
  ev_score->add_option("--json", a->json, "Also write val_bpb, CORE, the composite and the per-task table as JSON");
  cmds.push_back({ev_score, [a] { return run_score(*a); }});
}

void add_bpb(CLI::App* ev, Commands& cmds) {
  auto a = std::make_shared<BpbArgs>();
  auto* ev_bpb = ev->add_subcommand("bpb", "val_bpb (nanochat's evaluate_bpb) of a checkpoint on a prepared split");
  ev_bpb->add_option("--checkpoint", a->ckpt, "RUN_DIR/model.ckpt from frontier train")->required();
  ev_bpb->add_option("--data", a->data, "Prepared dataset (default: the run's train.data)");
  ev_bpb->add_flag("--cross-data", a->cross, "Allow --data to be a dataset other than the run's (same tokenizer): a "
                   "deliberate cross-data evaluation, said so in the result");
  ev_bpb->add_option("--split", a->split, "Split to score")
      ->check(CLI::IsMember({"val", "train"}))
      ->capture_default_str();
  ev_bpb->add_option("--tokens", a->tokens, "Tokens to score (0 = the run's eval.tokens)")->check(number_in(0))
      ->capture_default_str();
  ev_bpb->add_option("--against", a->against,
                     "Another checkpoint (same seq_len and tokenizer) scored on the same windows: prints the "
                     "difference and its paired standard error, far smaller than either score's own");
  cmds.push_back({ev_bpb, [a] { return run_bpb(*a); }});
}

}  // namespace

void add_eval_commands(CLI::App& app, Commands& cmds) {
  auto* ev = app.add_subcommand("eval", "Evaluate a trained checkpoint");
  ev->require_subcommand(1);
  add_core(ev, cmds);
  add_score(ev, cmds);
  add_bpb(ev, cmds);
}

}  // namespace frontier::cli

// frontier train: train the GPT under a wall-clock budget (train/train.h).
#include <cmath>
#include <cstdio>
#include <memory>

#include "commands.h"
#include "dist/comm.h"
#include "train/schema.h"
#include "train/train.h"

namespace frontier::cli {
namespace {

struct TrainArgs {
  std::string config, data, resume;
  double budget = 0;
  std::vector<std::string> sets;
  bool list_keys = false, force = false;
  CLI::App* sub = nullptr;  // to tell a given --budget from the default
};

// Trains and prints the summary, also when the run stopped early with results to show (interrupted, a file not
// saved): then the error follows it, and the exit status is 128 + the signal for an interrupted run, else 1.
// Under mpirun rank 0 prints; an error every rank shares (Comm::agreed) is printed once and the ranks end normally,
// any other (a rank gone, a collective timed out) ends the whole job from here.
int train_and_report(const Config& cfg, const TrainOptions& to) {
  TrainSummary sum;
  Status s = train(cfg, &sum, to);
  Comm& comm = Comm::world();
  if (sum.has_summary && comm.root()) {
    std::printf("%s", sum.format().c_str());
    std::printf("run_dir:          %s\n", sum.run_dir.c_str());
    std::fflush(stdout);
  }
  if (!s.ok()) {
    if (comm.distributed() && !comm.agreed()) {
      fail(s);
      Comm::abort_job(1);
    }
    if (!comm.quiet_errors()) fail(s);
    return sum.signal ? 128 + sum.signal : 1;
  }
  return 0;
}

int resume_run(const TrainArgs& a, const ConfigSchema& schema, Config* cfg) {
  if (!a.config.empty() || !a.sets.empty() || a.sub->count("--budget") || !a.data.empty())
    return fail(Status::error("--resume takes the run's own config.toml; drop --config/--set/--budget/--data"));
  Status s = schema.load_toml(a.resume + "/config.toml", cfg);
  if (!s.ok()) return fail(s);
  TrainOptions to;
  to.resume_dir = a.resume;
  return train_and_report(*cfg, to);
}

int run_train(const TrainArgs& a) {
  ConfigSchema schema = train_schema();
  if (a.list_keys) {
    std::printf("%s", schema.help().c_str());
    return 0;
  }
  Config cfg = schema.defaults();
  if (!a.resume.empty()) return resume_run(a, schema, &cfg);
  Status s;
  if (!a.config.empty() && !(s = schema.load_toml(a.config, &cfg)).ok()) return fail(s);
  for (const auto& kv : a.sets)
    if (!(s = schema.apply_set(kv, &cfg)).ok()) return fail(s);
  if (a.sub->count("--budget")) {  // the key's bounds are checked again when training starts
    if (!std::isfinite(a.budget) || a.budget <= 0)
      return fail(Status::error("--budget must be a finite number of seconds > 0 (got " + std::to_string(a.budget) +
                                ")"));
    cfg.set("train.budget_seconds", a.budget);
  }
  if (!a.data.empty()) cfg.set("train.data", a.data);
  TrainOptions to;
  to.force = a.force;
  return train_and_report(cfg, to);
}

}  // namespace

void add_train_command(CLI::App& app, Commands& cmds) {
  auto a = std::make_shared<TrainArgs>();
  auto* tr = app.add_subcommand("train",
                                "Train the GPT on a prepared dataset under a wall-clock budget, then print val_bpb "
                                "and a summary. Config: TOML file, then --set overrides; unknown keys are errors.");
  a->sub = tr;
  tr->add_option("--config", a->config, "TOML config (e.g. configs/baseline.toml); defaults apply without it");
  tr->add_option("--budget", a->budget,
                 "Training budget in seconds (overrides train.budget_seconds; default: the config's)");
  tr->add_option("--data", a->data, "Prepared dataset directory (overrides train.data)");
  tr->add_option("--set", a->sets, "key=value override, repeatable (e.g. --set model.depth=4)");
  tr->add_option("--resume", a->resume,
                 "Continue an interrupted run from RUN_DIR/model.ckpt (uses RUN_DIR/config.toml)");
  tr->add_flag("--list-keys", a->list_keys, "List every config key with its type, default and meaning, then exit");
  tr->add_flag("--force", a->force, "Overwrite a train.run_dir that already holds a run (finished or not)");
  cmds.push_back({tr, [a] { return run_train(*a); }, /*under_mpirun=*/true});
}

}  // namespace frontier::cli

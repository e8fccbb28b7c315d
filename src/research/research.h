// `frontier research`: the autoresearch loop. Each trial is a separate `frontier train` process under the fixed
// budget (a crash, NaN or out-of-memory in a trial never kills the loop); its val_bpb is compared with the best so
// far and the change is kept or discarded.
//
//   ResearchOptions o;  o.base = "configs/tiny.toml";  o.space = "configs/space.toml";  o.budget = 60;
//   o.out_dir = "research/s1";  o.max_trials = 8;
//   FRONTIER_RETURN_IF_ERROR(run_research(o));   // resumes if o.out_dir already holds a ledger
//
// Session directory: results.tsv (autoresearch's columns: id, val_bpb, memory_gb, status, description),
// ledger.jsonl (every trial: its overrides, summary, timings), progress.svg (val_bpb per trial, running best,
// kept trials marked), trials/NNN/ (each trial's run directory and log). Both ledgers are rewritten atomically
// after every trial; an interrupted session resumes at the next trial.
//
// Noise-aware keep rule: the base config runs `repeats` times first (different seeds); spread = max - min of
// those val_bpb. A trial is kept only if val_bpb < best - max(spread, min_delta).
// Frozen evaluation: keys that change the metric, the validation data or the budget accounting (eval.*,
// train.data, train.budget_seconds, train.max_steps, train.warmup_steps_excluded, train.run_dir) cannot appear in
// the space or in a proposal; such proposals are recorded as "rejected" and never run.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "util/status.h"

namespace frontier {

// One searchable key: either choices, or a numeric range [lo, hi] (log-uniform when log; integers when is_int).
struct SpaceDim {
  std::string key;
  std::vector<std::string> choices;  // values as --set text
  double lo = 0, hi = 0;
  bool log = false, is_int = false, is_range = false;
};

// Parses a space TOML: one table per config key, e.g.
//   ["optim.matrix_lr"]  min = 0.01  max = 0.06  log = true
//   ["model.depth"]      choices = [2, 3]
// Unknown keys (against train_schema) and frozen keys are errors.
Status load_space(const std::string& path, std::vector<SpaceDim>* out);
bool is_frozen_key(const std::string& key);

struct ResearchOptions {
  std::string base, space, out_dir;
  std::string proposer = "mutate";  // random | mutate | halving | an external command (see docs/agents.md)
  double budget = 60;               // seconds per full trial
  double hours = 0;                 // stop after this wall time (0 = no limit)
  int max_trials = 8;               // stop after this many trials in the ledger (0 = no limit)
  int repeats = 2;                  // base-config repeats that measure the seed-to-seed spread
  double min_delta = 0.0;           // the keep threshold is max(spread, min_delta)
  uint64_t seed = 1;
  std::string git_repo;             // git mode: commit each kept config to this repository
  std::string data;                 // overrides train.data of the base (optional)
  std::vector<std::string> extra_sets;  // applied to every trial (e.g. model.vocab_size for a dataset)
  std::string frontier_bin;         // the frontier executable to run trials with (default /proc/self/exe)
};

Status run_research(const ResearchOptions& o);

}  // namespace frontier

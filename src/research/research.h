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
// before a trial starts (its entry has status "running") and after it ends.
//
// Ownership and interruption: the loop holds DIR/.lock (util/file_lock.h) for its lifetime, so a second loop on
// the same session is refused with the holder's pid. Each trial and the external proposer run in their own process
// group and die with the loop, even by SIGKILL (util/subprocess.h; under SIGKILL only the direct child is covered,
// which for a trial is all of it). SIGINT or SIGTERM stops the current trial (SIGTERM to its group, SIGKILL 5 s
// later), records it as "interrupted", prints the summary and returns an error. A loop that was killed leaves its
// last entry "running"; the next loop on the session records it as "interrupted" and goes on with the next id (a
// trial directory is never reused).
//
// Noise-aware keep rule: the base config runs `repeats` times first (different seeds); spread = max - min of
// those val_bpb. A trial is kept only if val_bpb < best - max(spread, min_delta).
// Frozen evaluation: keys that change the metric, the validation data or the budget accounting (the one list in
// config/frozen_keys.h, shared with the arena: eval.*, train.data, train.budget_seconds, train.max_steps,
// train.warmup_steps_excluded, train.budget_mode, train.probe_step_seconds, train.run_dir, train.peak_gflops)
// cannot appear in the space, in --set or in a proposal; such proposals are recorded as "rejected" and never run.
// The base config may not set the ones that would reach every trial (the budget mode, the probe step time, eval.*).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
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
bool is_frozen_key(const std::string& key);  // frozen_key(key) with research set (config/frozen_keys.h)

struct ResearchOptions {
  std::string base, space, out_dir;
  std::string proposer = "mutate";  // random | mutate | halving | an external command (see docs/agents.md)
  double proposer_timeout = 300;    // seconds an external proposer may take; then its process group is killed
  double budget = 60;               // seconds per full trial
  double hours = 0;                 // stop after this wall time (0 = no limit)
  int max_trials = 8;               // stop after this many trials in the ledger (0 = no limit)
  int repeats = 2;                  // base-config repeats that measure the seed-to-seed spread
  double min_delta = 0.0;           // the keep threshold is max(spread, min_delta)
  uint64_t seed = 1;
  std::string git_repo;             // git mode: commit each kept config to branch frontier/research-<session> of this
                                    // repository, through a private index (its checkout, index and HEAD untouched)
  std::string data;                 // overrides train.data of the base (optional)
  std::vector<std::string> extra_sets;  // applied to every trial (e.g. model.vocab_size for a dataset)
  std::string frontier_bin;         // the frontier executable to run trials with (default /proc/self/exe)
  int ranks = 1;                    // > 1: each trial runs under `mpirun -np ranks` (docs/distributed.md)
  // probe (default): every trial trains budget / step-time steps (train.budget_mode = probe), and trials whose
  // speed-relevant keys (model.*, batch, precision, threads) are the same share one measured step time, so their
  // step counts are equal and a difference in val_bpb is the change's, not the machine's. wall: wall-clock budgets.
  std::string budget_mode = "probe";
  std::string mpirun = "mpirun";    // the launcher (found on PATH)
};

// One `frontier train` run of o.base (+ o.data, o.extra_sets, set, train.seed, train.run_dir = dir/run) under
// `budget` seconds, in its own process group (o.ranks > 1: under mpirun), its output in dir/train.log. Never throws
// and never returns early: a crash, a non-zero exit, a summary without a valid val_bpb or a hang (3 x budget +
// 300 s) is status "crash" with the error; a stop signal is "interrupted". The advisor (advise/) runs its sweep
// and validation runs through it too.
struct TrialResult {
  std::string status;  // ok | crash | interrupted
  double val_bpb = 0, memory_gb = 0, seconds = 0;
  nlohmann::json summary = nlohmann::json::object();  // the summary block, parsed ("num_steps": 80, ...)
  std::string error;
};
TrialResult run_trial(const ResearchOptions& o, const std::map<std::string, std::string>& set, double budget,
                      uint64_t seed, const std::string& dir);

// Every numeric option is checked first (finite, in range: an error names the option).
Status run_research(const ResearchOptions& o);

// Reads a session's ledger.jsonl as untrusted data: any bytes give either the entries or an error naming the file
// and the first bad line ("<path>:<line>: <why>"); nothing is skipped, since a dropped line would renumber the
// trials. Blank lines are ignored. Each entry is a JSON object (nested at most 32 deep) with "id" equal to its
// position (0, 1, ...), "status" one of keep|discard|crash|rejected|screen|interrupted|running, a string
// "description", and where present: strings "phase", "error", "dir"; finite numbers "val_bpb" (required for
// keep|discard|screen), "memory_gb", "seconds", "budget", "improvement"; "set" an object of strings; "summary"
// an object. Files over 256 MiB are refused. Whatever it returns, the loop can use without further checks.
Status read_ledger(const std::string& path, std::vector<nlohmann::json>* out);

}  // namespace frontier

// A competition's definition (TOML), read once by every `frontier arena` command.
//
//   Competition c;
//   FRONTIER_RETURN_IF_ERROR(load_competition("arena/competition.toml", &c));
//   const Phase* p = c.phase("phase1");
//
// Relative paths in the file are relative to the file's own directory, so an arena is one movable folder:
//
//   name = "Frontier arena"
//   train_data = "data"              # the prepared dataset every run trains on (frontier prepare --out)
//   hidden_val = "hidden.jsonl"      # the organiser's hidden validation text (.jsonl "text" fields, or .txt)
//   core_bundle = ""                 # CORE bundle for a composite phase (required by one; unused by val_bpb)
//   grace_seconds = 30               # the run is killed at budget + grace, by the scorer's clock
//   record = "record.sqlite"         # the append-only, hash-chained record (arena/record.h)
//   [build]   cmake_args = [...], jobs = 2, timeout_seconds = 1800   # how forks are built
//   [checks]  normalisation_tolerance = 1e-3, lookahead_probes = 16, lookahead_tolerance = 1e-4,
//             causal_requests = 4, causal_positions = 4
//   [[phase]] name = "phase1", budget_seconds = 300, ranks = 1, threads = 0, metric = "val_bpb", grace_seconds = 30
//   [[phase]] name = "phase2", ..., metric = "composite", core_max_per_task = 0   # 0: every CORE item
//
// Unknown keys are errors (a typo in a definition must not silently change the rules). docs/arena.md has the
// full format.
#pragma once

#include <string>
#include <vector>

#include "util/status.h"

namespace frontier {

struct Phase {
  std::string name;            // "phase1"
  double budget_seconds = 0;   // training budget (the team's optimizer-step time; the scorer adds grace)
  int ranks = 1;               // processes: > 1 runs `mpirun -np ranks`
  int threads = 0;             // threads per process (0 = all cores)
  std::string metric;          // "val_bpb" (lower is better) | "composite" (docs/scoring.md; higher is better)
  int core_max_per_task = 0;   // composite: CORE items per task (0 = all)
  double grace_seconds = -1;   // killed at budget + this (the definition's grace_seconds unless the phase sets it)
  bool lower_is_better() const { return metric == "val_bpb"; }
};

struct Competition {
  std::string path, dir;  // the definition file and its directory
  std::string name;
  std::string train_data, hidden_val, core_bundle;  // absolute
  std::string record, submissions_dir, work_dir;     // absolute
  std::string calibration;  // optional: the reference machine's `frontier calibrate` file, recorded with each run
  double grace_seconds = 30;
  double eval_timeout_seconds = 1800;  // the team's server, all of its calls together
  // The evaluation runs in a child process (arena/scorer.h) killed at eval_timeout_seconds + grace_seconds, with an
  // address-space limit (0: 3/4 of this machine's memory) and a file-size limit, both inherited by the team's server.
  double eval_memory_mb = 0;
  double eval_file_mb = 4096;
  // Fork builds.
  std::vector<std::string> cmake_args = {"-DCMAKE_BUILD_TYPE=Release", "-DBUILD_TESTING=OFF"};
  int build_jobs = 2;
  double build_timeout_seconds = 1800;
  // The evaluator's checks (arena/evaluator.h).
  double normalisation_tolerance = 1e-3;  // |sum_v exp(logp_v) - 1| per position
  int lookahead_probes = 16;              // positions re-queried with the following tokens changed
  double lookahead_tolerance = 1e-4;      // max |logp change| allowed at a probed (or streamed) position
  int causal_requests = 4;                // requests streamed one position at a time (arena/causal.h)
  int causal_positions = 4;               // positions per streamed request
  std::vector<Phase> phases;
  std::string sha256;  // of the definition file's bytes, recorded with every run

  const Phase* phase(const std::string& name) const;  // nullptr if absent
};

Status load_competition(const std::string& path, Competition* out);

}  // namespace frontier

// The scorer: builds a submission in a clean directory, trains it under the phase's budget with the scorer's own
// clock, and scores its checkpoint with the frozen evaluator (arena/evaluator.h). One record row per scored run.
//
//   ScoreOptions o;  o.organiser_binary = "/opt/frontier/bin/frontier";
//   std::vector<RecordRow> done;
//   FRONTIER_RETURN_IF_ERROR(score_pending(competition, record, o, &done));   // every accepted, unscored entry
//
// Per submission, in WORK_DIR/<hash12>-<phase>/ (removed and recreated: nothing of an earlier attempt is reused):
//  - fork: `git clone` of the submission's stored repository, `git checkout --detach COMMIT`, `cmake -S src -B
//    build [cmake_args]` and `cmake --build build --target frontier -j jobs` under [build].timeout_seconds;
//    failure: "build_failed" with the compiler's first error line. A config submission uses the organiser's binary.
//  - train: `BIN train --config config.toml --budget B --data TRAIN_DATA --set train.run_dir=run --set
//    train.threads=N --set eval.tokens=1` (under `mpirun -np R` when the phase has ranks > 1; eval.tokens=1 cuts
//    the team's own end-of-run evaluation, which the scorer does not use, to one batch), output to train.log. The
//    scorer's clock is the process's wall time: past budget + grace the whole process group is killed and the run
//    is "overstayed"; a non-zero exit or a signal is "crashed", with the last error line as the reason.
//  - evaluate: the team's binary serves (`BIN serve-logprobs --checkpoint run/model.ckpt`) and the organiser's code
//    tokenizes with the team's tokenizer (run/tokenizer/ if the run wrote one, else the training data's), checks and
//    computes val_bpb (and, in a composite phase, CORE from the same server and the composite, the row's score):
//    "ok" with the score, "disqualified" with the evidence, or "eval_failed" (missing or corrupt
//    checkpoint, the server crashed or broke the protocol). All of it runs in a child process, the evaluation
//    worker (`frontier arena evaluate`, evaluation_worker below), under an address-space and a file-size limit and
//    killed at eval_timeout_seconds + grace_seconds: the team's tokenizer files are loaded there, never here, so a
//    loader that hangs (a FIFO), a leak (a file that never ends) or a server that kills its parent is that
//    submission's "eval_failed" ("timeout", "out of memory", "crashed (signal 11)") and the next one is scored.
// Nothing the submission does ends the scorer: every outcome is a row.
//
// Public and private text: a row's reason is published (the leaderboard), so it is a fixed vocabulary in the
// organiser's words ("crashed (signal 6)", "build failed (build: exit code 2)", "server error (exit code 1)",
// "protocol error", "tokenizer error", "timeout", or the evaluator's own disqualification sentence). What the team's
// processes printed (compiler errors, the training log's error line, the server's stderr, which can be the hidden
// text it was asked about) goes only to the organiser's private log, private_log_path(c), one JSON line per failure.
#pragma once

#include <string>
#include <vector>

#include "arena/competition.h"
#include "arena/record.h"
#include "arena/submission.h"

namespace frontier {

struct ScoreOptions {
  std::string organiser_binary;  // the organiser's build of `frontier` (config submissions); default: this binary
  std::string evaluator_binary;  // the `frontier` that runs the evaluation worker; default: this binary
  uint64_t seed = 0;             // the evaluator's probe seed (0: random per run, recorded)
  bool progress = true;          // one line per step to stderr
};

// Scores one submission; fills *row (status, reason, metrics, timings, details) without appending it.
void score_submission(const Competition& c, const Submission& s, const ScoreOptions& o, RecordRow* row);

// Scores every accepted submission without a run row yet (only `hash` when not empty), appending each row as it
// finishes. *done: the rows appended.
Status score_pending(const Competition& c, Record& rec, const ScoreOptions& o, const std::string& hash,
                     std::vector<RecordRow>* done);

// The evaluation worker's body (`frontier arena evaluate`; the scorer runs it as a child process): sets its limits
// (RLIMIT_AS = eval_memory_mb, RLIMIT_FSIZE = eval_file_mb, no core files), loads the team's tokenizer from
// WORK/run, evaluates WORK/run/model.ckpt through BIN's server, and writes WORK/eval_result.json: verdict ("ok" |
// "disqualified" | "failed"), public_reason, private_reason, eval (EvalOutcome::json), val_bpb, score, core.
Status evaluation_worker(const Competition& c, const std::string& phase, const std::string& work,
                         const std::string& bin, uint64_t seed);

// The organiser's private log of what the teams' processes printed: RECORD.private.jsonl.
std::string private_log_path(const Competition& c);

// The machine a run is scored on: the competition's calibration file (else this machine's `frontier calibrate`
// file, else none), the CPU and thread count, as compact JSON.
std::string machine_summary(const Competition& c);

}  // namespace frontier

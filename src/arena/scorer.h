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
//    checkpoint, the server crashed or broke the protocol).
// Nothing the submission does ends the scorer: every outcome is a row.
#pragma once

#include <string>
#include <vector>

#include "arena/competition.h"
#include "arena/record.h"
#include "arena/submission.h"

namespace frontier {

struct ScoreOptions {
  std::string organiser_binary;  // the organiser's build of `frontier` (config submissions); default: this binary
  uint64_t seed = 0;             // the evaluator's probe seed (0: random per run, recorded)
  bool progress = true;          // one line per step to stderr
};

// Scores one submission; fills *row (status, reason, metrics, timings, details) without appending it.
void score_submission(const Competition& c, const Submission& s, const ScoreOptions& o, RecordRow* row);

// Scores every accepted submission without a run row yet (only `hash` when not empty), appending each row as it
// finishes. *done: the rows appended.
Status score_pending(const Competition& c, Record& rec, const ScoreOptions& o, const std::string& hash,
                     std::vector<RecordRow>* done);

// The machine a run is scored on: the competition's calibration file (else this machine's `frontier calibrate`
// file, else none), the CPU and thread count, as compact JSON.
std::string machine_summary(const Competition& c);

}  // namespace frontier

// Submissions: a team's entry to a phase, content-addressed and recorded.
//
//   SubmitRequest q;  q.team = "alpha"; q.phase = "phase1"; q.config_path = "mine.toml";
//   q.repo = "https://.../frontier-fork.git"; q.commit = "a1b2c3";   // both empty: the organiser's build
//   Submission s;  RecordRow row;
//   Status st = submit(competition, record, q, &s, &row);   // row.status: accepted | rejected | duplicate
//
// Two kinds: "config" (a config for the organiser's build of Frontier) and "fork" (a git repository and commit of
// the team's fork, plus a config for it). The hash is SHA-256 over the phase, the kind, the full commit id and the
// config's bytes; a git commit id already hashes every file of the fork, so nothing else can change unseen. The
// fork's repository is cloned (bare) into the submission's folder at submit time, so a later change or deletion of
// the team's repository cannot change what is scored.
//
// Every outcome is appended to the record, bad input included (an unknown or frozen config key, a repository or
// commit that does not exist, an unknown phase, a duplicate of an accepted submission: status "rejected" or
// "duplicate" with the reason), and submit() returns an error naming the reason for those.
#pragma once

#include <string>

#include "arena/competition.h"
#include "arena/record.h"
#include "util/status.h"

namespace frontier {

struct SubmitRequest {
  std::string team, phase, config_path, repo, commit;
};

struct Submission {
  std::string hash, team, kind, phase;
  std::string repo, commit;  // fork: where it came from, the full commit id
  std::string config_text;
  std::string submitted_at;
  std::string dir;  // submissions_dir/<hash>: submission.json, config.toml, repo.git (a fork)
};

// Keys a submission's config may not set (config/frozen_keys.h, the list research shares): the frozen evaluator
// (eval.*) and what the phase or the scorer decides (train.data, the budget and its accounting: max_steps, the
// excluded warm-up, budget_mode, probe_step_seconds; the run directory, threads). "" when none is set.
std::string frozen_key_in(const std::string& config_text, const std::string& origin, Status* parse);

Status submit(const Competition& c, Record& rec, const SubmitRequest& q, Submission* out, RecordRow* row);
Status load_submission(const Competition& c, const std::string& hash, Submission* out);

}  // namespace frontier

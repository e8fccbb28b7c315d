// The competition's record: every submission and every scored run, in SQLite, append-only, hash-chained.
//
//   Record rec;
//   FRONTIER_RETURN_IF_ERROR(rec.open("arena/record.sqlite"));
//   RecordRow row;  row.team = "a"; row.status = "ok"; ...
//   FRONTIER_RETURN_IF_ERROR(rec.append(&row));          // fills seq, recorded_at, prev_hash, row_hash
//   VerifyReport v;
//   FRONTIER_RETURN_IF_ERROR(rec.verify(&v));            // v.ok, v.problems: "row 3 was changed ..."
//   FRONTIER_RETURN_IF_ERROR(v.status(rec.path()));      // before publishing: one line naming the first problem
//
// Chain: row_hash = SHA-256 of the canonical JSON of the row's content (every column but row_hash, prev_hash
// included), and prev_hash = the previous row's row_hash ("0" x 64 for row 1). Changing a row breaks its own hash;
// deleting one leaves a gap in seq and a prev_hash that no longer matches; deleting the newest rows is caught by
// the head file (RECORD.head: "seq row_hash", rewritten atomically after each append) and by the chain head the
// leaderboard publishes. Triggers refuse UPDATE and DELETE, so only a deliberate edit of the file changes history.
// Appends are serialised by SQLite's write lock (BEGIN IMMEDIATE); append_checked verifies the chain and decides
// inside that lock (a broken chain is never extended; two concurrent submits of the same content: one is accepted,
// the other is a duplicate).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "util/status.h"

namespace frontier {

struct RecordRow {
  int64_t seq = 0;               // 1, 2, ... (set by append)
  std::string recorded_at;       // UTC, ISO 8601 (set by append)
  std::string event;             // "submission" | "run"
  std::string team, submission;  // submission: the content hash (arena/submission.h)
  std::string kind;              // "config" | "fork"
  std::string phase, metric;
  // submission: "accepted" | "rejected" | "duplicate"; run: "ok" | "crashed" | "overstayed" | "disqualified" |
  // "build_failed" | "eval_failed" | "rejected"
  std::string status;
  std::string reason;                       // one line: why it is not "ok"/"accepted"
  double score = NAN, val_bpb = NAN, core = NAN;  // NaN: none (stored as NULL)
  double budget_s = NAN, train_s = NAN, build_s = NAN, eval_s = NAN;  // scorer's clock; train_s: the whole process
  std::string machine;     // calibration summary (JSON)
  std::string log_sha256;  // of the training log
  std::string details;     // JSON: the checks' evidence, commit, the team's own summary, ...
  std::string started_at, finished_at;
  std::string prev_hash, row_hash;

  std::string content_hash() const;  // what row_hash must be
};

struct VerifyReport {
  bool ok = true;
  int64_t rows = 0;
  std::string head;                   // the last row's hash
  std::vector<std::string> problems;  // each names a row
  // ok, or one line naming the first problem: what every publication (leaderboard, serve) and every append refuses
  // with, so a tampered record is never published or extended.
  Status status(const std::string& record_path) const;
};

class Record {
 public:
  Record() = default;
  ~Record();
  Record(const Record&) = delete;
  Record& operator=(const Record&) = delete;
  Status open(const std::string& path);  // creates the file and schema if absent
  Status append(RecordRow* row);
  // Appends *row in one write transaction (BEGIN IMMEDIATE: other appenders wait) after decide(rows so far, row)
  // ran inside it: decide may change the row (e.g. "accepted" to "duplicate") and do file work that must not
  // interleave with another process's decision (moving a submission's files into place). An error from decide
  // appends nothing and is returned; so does a chain that fails verify() (VerifyReport::status's line).
  Status append_checked(RecordRow* row,
                        const std::function<Status(const std::vector<RecordRow>& rows, RecordRow* row)>& decide);
  Status rows(std::vector<RecordRow>* out) const;  // in seq order
  // Checks the chain and the head file under the write lock (BEGIN IMMEDIATE, then ROLLBACK), so that an append in
  // flight (its head file written, its row not yet committed) is never seen half done; a record that cannot be
  // locked (a read-only copy) is checked as it is.
  Status verify(VerifyReport* out) const;
  const std::string& path() const { return path_; }

 private:
  Status verify_unlocked(VerifyReport* out) const;
  std::string path_;
  void* db_ = nullptr;  // sqlite3*
};

std::string utc_now();  // "2026-12-04T10:11:12Z"

}  // namespace frontier

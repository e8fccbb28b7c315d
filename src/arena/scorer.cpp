#include "arena/scorer.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "arena/evaluator.h"
#include "calibrate/calibrate.h"
#include "kernels/isa.h"
#include "tokenizer/tokenizer.h"
#include "util/file.h"
#include "util/file_lock.h"
#include "util/sha256.h"
#include "util/subprocess.h"
#include "util/utf8.h"

namespace frontier {

namespace fs = std::filesystem;

namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// The reason a log gives: its first line with "error" in it (compilers, CMake, `frontier`'s "error: ..."), else its
// last line; printable and at most 300 bytes.
std::string log_reason(const std::string& path, bool first_error) {
  std::string s;
  if (!read_file(path, &s).ok()) return "";
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < s.size()) {
    size_t nl = s.find('\n', start);
    std::string l = s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    start = nl == std::string::npos ? s.size() : nl + 1;
    if (l.find_first_not_of(" \t\r") != std::string::npos) lines.push_back(l);
  }
  std::string pick;
  if (first_error) {
    for (const auto& l : lines)
      if (l.find("error") != std::string::npos || l.find("Error") != std::string::npos) {
        pick = l;
        break;
      }
  } else {
    for (auto it = lines.rbegin(); it != lines.rend() && pick.empty(); ++it)
      if (it->rfind("error: ", 0) == 0) pick = *it;
  }
  if (pick.empty() && !lines.empty()) pick = lines.back();
  while (!pick.empty() && (pick.back() == '\r' || pick.back() == ' ')) pick.pop_back();
  if (pick.size() > 300) pick = pick.substr(0, 300) + "...";
  return utf8_replace_invalid(pick);
}

// The team's own summary lines ("key: value"), kept as information: the score is the evaluator's, not these.
nlohmann::json team_summary(const std::string& log) {
  std::string s;
  nlohmann::json j = nlohmann::json::object();
  if (!read_file(log, &s).ok()) return j;
  for (const char* key : {"val_bpb", "training_seconds", "num_steps", "total_tokens_M", "num_params_M", "tokens_per_sec"}) {
    size_t p = s.rfind(std::string("\n") + key + ":");
    if (p == std::string::npos) continue;
    size_t b = s.find(':', p) + 1, e = s.find('\n', b);
    try {
      j[key] = std::stod(s.substr(b, e - b));
    } catch (...) {
    }
  }
  return j;
}

struct Step {
  bool ok = false;
  std::string why;  // describe() + the log's reason
  double seconds = 0;
  bool timed_out = false;
};

Step run_logged(std::vector<std::string> argv, const std::string& cwd, const std::string& log, double timeout_s,
                bool first_error, bool append = false) {
  Step st;
  Subprocess p;
  p.argv = std::move(argv);
  p.cwd = cwd;
  const std::string out = append ? log + ".part" : log;
  p.stdout_path = out;
  p.stderr_to_stdout = true;
  p.timeout_s = timeout_s;
  SubprocessResult r;
  Status s = run_subprocess(p, &r);
  if (append) {  // keep one log for the configure and build steps
    std::string a, b;
    read_file(log, &a);
    read_file(out, &b);
    write_file_atomic(log, a + b);
    std::remove(out.c_str());
  }
  st.seconds = r.seconds;
  if (!s.ok()) {
    st.why = s.message();
    return st;
  }
  st.ok = r.ok();
  st.timed_out = r.timed_out;
  if (!st.ok) {
    std::string why = log_reason(log, first_error);
    st.why = r.describe(p) + (why.empty() ? "" : ": " + why);
  }
  return st;
}

void say(const ScoreOptions& o, const std::string& msg) {
  if (o.progress) std::fprintf(stderr, "[arena] %s\n", msg.c_str());
}

}  // namespace

std::string machine_summary(const Competition& c) {
  nlohmann::json j = {{"cpu", kernels_banner()}, {"cores", std::thread::hardware_concurrency()}};
  std::string path = !c.calibration.empty() ? c.calibration : calibration_path(), text;
  if (read_file(path, &text).ok()) {
    nlohmann::json cal = nlohmann::json::parse(text, nullptr, false);
    if (!cal.is_discarded()) j["calibration"] = cal;
    j["calibration_file"] = path;
  } else {
    j["calibration"] = nullptr;  // not calibrated: `frontier calibrate` (or [calibration] in the definition)
  }
  return j.dump();
}

void score_submission(const Competition& c, const Submission& s, const ScoreOptions& o, RecordRow* row) {
  RecordRow& r = *row;
  r.event = "run";
  r.team = s.team;
  r.submission = s.hash;
  r.kind = s.kind;
  r.phase = s.phase;
  r.started_at = utc_now();
  r.machine = machine_summary(c);
  nlohmann::json details = {{"competition_sha256", c.sha256}, {"commit", s.commit}, {"repo", s.repo}};
  auto done = [&](const std::string& status, const std::string& reason) {
    r.status = status;
    r.reason = reason;
    r.details = details.dump();
    r.finished_at = utc_now();
    say(o, s.team + " " + s.hash.substr(0, 12) + ": " + status + (reason.empty() ? "" : " (" + reason + ")"));
  };
  const Phase* ph = c.phase(s.phase);
  if (!ph) return done("rejected", "the competition has no phase '" + s.phase + "' any more");
  r.metric = ph->metric;
  r.budget_s = ph->budget_seconds;
  Status parse;
  std::string frozen = frozen_key_in(s.config_text, "config.toml", &parse);
  if (!parse.ok()) return done("rejected", "config: " + parse.message());
  if (!frozen.empty()) return done("rejected", "config sets " + frozen + ", which the competition fixes");

  const std::string work = c.work_dir + "/" + s.hash.substr(0, 12) + "-" + s.phase;
  std::error_code ec;
  fs::remove_all(work, ec);
  Status st = make_dirs(work);
  if (st.ok()) st = write_file_atomic(work + "/config.toml", s.config_text);
  if (!st.ok()) return done("eval_failed", "scorer: " + st.message());
  details["work_dir"] = work;

  // The binary: the organiser's build, or the fork built from its commit in a clean directory.
  std::string bin = o.organiser_binary;
  if (s.kind == "fork") {
    say(o, s.team + " " + s.hash.substr(0, 12) + ": building the fork at " + s.commit.substr(0, 12));
    const auto t0 = std::chrono::steady_clock::now();
    const std::string log = work + "/build.log";
    double left = c.build_timeout_seconds;
    Step b = run_logged({"git", "clone", "--quiet", "--no-hardlinks", s.dir + "/repo.git", work + "/src"}, "", log,
                        left, true, true);
    if (b.ok) b = run_logged({"git", "-C", work + "/src", "checkout", "--quiet", "--detach", s.commit}, "", log,
                             left - since(t0), true, true);
    if (b.ok) {
      std::vector<std::string> cfg = {"cmake", "-S", work + "/src", "-B", work + "/build"};
      cfg.insert(cfg.end(), c.cmake_args.begin(), c.cmake_args.end());
      b = run_logged(cfg, "", log, std::max(1.0, left - since(t0)), true, true);
    }
    if (b.ok)
      b = run_logged({"cmake", "--build", work + "/build", "--target", "frontier", "-j", std::to_string(c.build_jobs)},
                     "", log, std::max(1.0, left - since(t0)), true, true);
    r.build_s = since(t0);
    std::string digest;
    if (sha256_file(log, &digest).ok()) details["build_log_sha256"] = digest;
    if (!b.ok) return done("build_failed", b.timed_out ? "the build took longer than " +
                                                            std::to_string(static_cast<int>(c.build_timeout_seconds)) +
                                                            " s" : b.why);
    bin = work + "/build/frontier";
    if (!file_exists(bin)) return done("build_failed", "the build made no build/frontier");
  }

  // Training, on the scorer's clock.
  say(o, s.team + " " + s.hash.substr(0, 12) + ": training (" + std::to_string(ph->budget_seconds) + " s budget)");
  const std::string run_dir = work + "/run", log = work + "/train.log";
  std::vector<std::string> argv = {bin,     "train", "--config", work + "/config.toml", "--budget",
                                   std::to_string(ph->budget_seconds), "--data", c.train_data,
                                   "--set", "train.run_dir=" + run_dir, "--set", "train.threads=" + std::to_string(ph->threads),
                                   // the team's own end-of-run val_bpb is not used: one batch, not the grace's time
                                   "--set", "eval.tokens=1"};
  if (ph->ranks > 1) {
    std::vector<std::string> launch = {"mpirun", "-np", std::to_string(ph->ranks)};
    if (geteuid() == 0) launch.push_back("--allow-run-as-root");
    argv.insert(argv.begin(), launch.begin(), launch.end());
  }
  const double limit = ph->budget_seconds + c.grace_seconds;
  Step t = run_logged(argv, work, log, limit, false);
  r.train_s = t.seconds;
  std::string digest;
  if (sha256_file(log, &digest).ok()) r.log_sha256 = digest;
  details["team_summary"] = team_summary(log);
  char buf[160];
  if (t.timed_out) {
    std::snprintf(buf, sizeof(buf), "killed after %.1f s by the scorer's clock: past the budget %g s + grace %g s",
                  t.seconds, ph->budget_seconds, c.grace_seconds);
    return done("overstayed", buf);
  }
  if (!t.ok) return done("crashed", "training " + t.why);
  const std::string ckpt = run_dir + "/model.ckpt";
  if (!file_exists(ckpt)) return done("eval_failed", "training ended without a checkpoint (no run/model.ckpt)");

  // The frozen evaluator: the team serves, the organiser tokenizes, checks and computes.
  say(o, s.team + " " + s.hash.substr(0, 12) + ": evaluating through the team's server");
  Tokenizer tok;
  const std::string tok_dir = fs::is_directory(run_dir + "/tokenizer") ? run_dir + "/tokenizer" : c.train_data + "/tokenizer";
  st = tok.load(tok_dir);
  if (!st.ok()) return done("eval_failed", "the team's tokenizer (" + tok_dir + "): " + st.message());
  EvalInputs in;
  st = load_hidden_text(c.hidden_val, &in.docs);
  if (!st.ok()) return done("eval_failed", "organiser: " + st.message());
  CoreBundle bundle;
  if (ph->metric == "composite") {
    st = load_core_bundle(c.core_bundle, &bundle);
    if (!st.ok()) return done("eval_failed", "organiser: the CORE bundle: " + st.message());
    in.core = &bundle;
    in.core_max_per_task = ph->core_max_per_task;
  }
  EvalChecks checks;
  checks.normalisation_tolerance = c.normalisation_tolerance;
  checks.probes = c.lookahead_probes;
  checks.lookahead_tolerance = c.lookahead_tolerance;
  checks.causal_requests = c.causal_requests;
  checks.causal_positions = c.causal_positions;
  checks.seed = o.seed;
  EvalOutcome e;
  st = evaluate_served({bin, "serve-logprobs", "--checkpoint", ckpt}, tok, in, checks, work + "/eval",
                       c.eval_timeout_seconds, &e);
  r.eval_s = e.seconds;
  if (!st.ok()) return done("eval_failed", st.message());
  details["eval"] = e.json();
  details["tokenizer"] = tok_dir;
  if (e.verdict != "ok") return done("disqualified", e.reason);
  r.val_bpb = e.val_bpb;
  r.score = e.val_bpb;
  if (e.has_core) {
    r.core = e.core.core;
    r.score = e.composite;
  }
  return done("ok", "");
}

Status score_pending(const Competition& c, Record& rec, const ScoreOptions& o, const std::string& hash,
                     std::vector<RecordRow>* done) {
  // One scorer per competition: a second would score the same submissions twice (and share the machine).
  FRONTIER_RETURN_IF_ERROR(make_dirs(c.work_dir));
  DirLock lock;
  FRONTIER_RETURN_IF_ERROR(lock.acquire(c.work_dir, "work_dir in " + c.path));
  std::vector<RecordRow> rows;
  FRONTIER_RETURN_IF_ERROR(rec.rows(&rows));
  std::vector<std::string> todo;
  for (const auto& r : rows) {
    if (r.event != "submission" || r.status != "accepted") continue;
    if (!hash.empty() && r.submission.rfind(hash, 0) != 0) continue;
    bool scored = false;
    for (const auto& x : rows) scored |= x.event == "run" && x.submission == r.submission;
    if (!scored) todo.push_back(r.submission);
  }
  if (!hash.empty() && todo.empty())
    return Status::error("no accepted, unscored submission starts with " + hash + " (see `frontier arena leaderboard`)");
  ScoreOptions opts = o;
  if (opts.organiser_binary.empty()) opts.organiser_binary = fs::read_symlink("/proc/self/exe").string();
  for (const auto& h : todo) {
    RecordRow row;
    Submission s;
    Status st = load_submission(c, h, &s);
    if (!st.ok()) {  // recorded too: the submission's files are gone or altered
      row.event = "run";
      row.submission = h;
      row.status = "eval_failed";
      row.reason = st.message();
      for (const auto& r : rows)
        if (r.submission == h && r.event == "submission") row.team = r.team, row.phase = r.phase, row.kind = r.kind;
      row.started_at = row.finished_at = utc_now();
    } else {
      score_submission(c, s, opts, &row);
    }
    FRONTIER_RETURN_IF_ERROR(rec.append(&row));
    done->push_back(row);
  }
  return ok_status();
}

}  // namespace frontier

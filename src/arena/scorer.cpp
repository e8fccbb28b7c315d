#include "arena/scorer.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
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

// At most the last `max` bytes of a file a team's process wrote: it can be any size, and it can have been replaced
// by a FIFO or a device (opened without blocking; anything but a regular file reads as empty).
std::string read_tail(const std::string& path, size_t max = 1 << 20) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat st;
  std::string s;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    const off_t from = st.st_size > static_cast<off_t>(max) ? st.st_size - static_cast<off_t>(max) : 0;
    s.resize(static_cast<size_t>(st.st_size - from));
    ssize_t n = ::pread(fd, s.data(), s.size(), from);
    s.resize(n > 0 ? static_cast<size_t>(n) : 0);
  }
  ::close(fd);
  return s;
}

// The reason a log gives: its first line with "error" in it (compilers, CMake, `frontier`'s "error: ..."), else its
// last line; printable and at most 300 bytes. Organiser-private (the private log): it is what the team's process
// printed.
std::string log_reason(const std::string& path, bool first_error) {
  std::string s = read_tail(path);
  if (s.empty()) return "";
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
  const std::string s = read_tail(log, 64 << 10);
  nlohmann::json j = nlohmann::json::object();
  if (s.empty()) return j;
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
  std::string ended;  // public: how the process ended ("exit code 2", "signal 6", "timeout"), from its status only
  std::string why;    // private: describe() + the log's reason (what the process printed)
  double seconds = 0;
  bool timed_out = false;
};

// How a process the team controls ended, in the record's fixed vocabulary: from its exit status, never its output.
std::string ended_by(const SubprocessResult& r) {
  if (r.timed_out) return "timeout";
  if (r.signal) return "signal " + std::to_string(r.signal);
  if (r.output_truncated) return "too much output";
  return "exit code " + std::to_string(r.exit_code);
}

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
    std::string a = read_tail(log, 8 << 20), b = read_tail(out, 8 << 20);
    write_file_atomic(log, a + b);
    std::remove(out.c_str());
  }
  st.seconds = r.seconds;
  if (!s.ok()) {
    st.ended = "not started";
    st.why = s.message();
    return st;
  }
  st.ok = r.ok();
  st.timed_out = r.timed_out;
  if (!st.ok) {
    st.ended = ended_by(r);
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

namespace {

// The record and the leaderboard are public; what a team's process printed is not (a server can print the hidden
// text it was asked about). Each failure's raw text goes here, one JSON line per failure, beside the record.
void private_note(const Competition& c, const RecordRow& r, const std::string& raw) {
  if (raw.empty()) return;
  nlohmann::json j = {{"at", utc_now()}, {"team", r.team},     {"submission", r.submission},
                      {"phase", r.phase}, {"status", r.status}, {"reason", r.reason}, {"detail", raw}};
  std::ofstream(private_log_path(c), std::ios::app) << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                                                    << "\n";
}

// The public reason for an evaluation the worker could not do, from the organiser's own message heads
// (arena/evaluator.cpp, arena/causal.cpp): the fixed vocabulary, never the text after them.
std::string public_eval_reason(const std::string& m) {
  auto starts = [&](const char* head) { return m.rfind(head, 0) == 0; };
  if (starts("the team's server failed (")) {
    const std::string how = m.substr(std::strlen("the team's server failed ("));
    int n = 0;
    if (how.rfind("timed out", 0) == 0) return "server timeout";
    if (std::sscanf(how.c_str(), "killed by signal %d", &n) == 1) return "server crashed (signal " + std::to_string(n) + ")";
    if (std::sscanf(how.c_str(), "exit code %d", &n) == 1) return "server error (exit code " + std::to_string(n) + ")";
    return "server error";
  }
  if (starts("causal check")) return "server error (causal check)";
  if (starts("the team's server broke the protocol") || starts("the team's server has a vocabulary") ||
      starts("the team's server declares") || starts("val_bpb is not finite") || starts("a served log-probability"))
    return "protocol error";
  if (starts("the team's tokenizer")) return "tokenizer error";
  return "evaluation error";
}

void set_limit(int resource, double bytes) {
  struct rlimit l;
  l.rlim_cur = l.rlim_max = static_cast<rlim_t>(bytes);
  ::setrlimit(resource, &l);
}

}  // namespace

std::string private_log_path(const Competition& c) { return c.record + ".private.jsonl"; }

Status evaluation_worker(const Competition& c, const std::string& phase, const std::string& work,
                         const std::string& bin, uint64_t seed) {
  const Phase* ph = c.phase(phase);
  if (!ph) return Status::error("the competition has no phase '" + phase + "'");
  // The limits, before anything of the team's is opened; the team's server inherits them.
  double mem = c.eval_memory_mb * 1048576.0;
  if (mem <= 0) mem = 0.75 * static_cast<double>(::sysconf(_SC_PHYS_PAGES)) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  set_limit(RLIMIT_AS, mem);
  set_limit(RLIMIT_FSIZE, c.eval_file_mb * 1048576.0);
  set_limit(RLIMIT_CORE, 0);
  const std::string run_dir = work + "/run", ckpt = run_dir + "/model.ckpt";
  nlohmann::json res;
  auto finish = [&](const std::string& verdict, const std::string& pub, const std::string& raw) {
    res["verdict"] = verdict;  // ok | disqualified | failed
    res["public_reason"] = pub;
    res["private_reason"] = raw;
    return write_file_atomic(work + "/eval_result.json", res.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  };
  try {
    Tokenizer tok;
    const std::string tok_dir =
        fs::is_directory(run_dir + "/tokenizer") ? run_dir + "/tokenizer" : c.train_data + "/tokenizer";
    res["tokenizer"] = tok_dir;
    Status st = tok.load(tok_dir);
    if (!st.ok()) return finish("failed", "tokenizer error", "the team's tokenizer (" + tok_dir + "): " + st.message());
    EvalInputs in;
    st = load_hidden_text(c.hidden_val, &in.docs);
    if (!st.ok()) return finish("failed", "scorer error", "organiser: " + st.message());
    CoreBundle bundle;
    if (ph->metric == "composite") {
      st = load_core_bundle(c.core_bundle, &bundle);
      if (!st.ok()) return finish("failed", "scorer error", "organiser: the CORE bundle: " + st.message());
      in.core = &bundle;
      in.core_max_per_task = ph->core_max_per_task;
    }
    EvalChecks checks;
    checks.normalisation_tolerance = c.normalisation_tolerance;
    checks.probes = c.lookahead_probes;
    checks.lookahead_tolerance = c.lookahead_tolerance;
    checks.causal_requests = c.causal_requests;
    checks.causal_positions = c.causal_positions;
    checks.seed = seed;
    EvalOutcome e;
    st = evaluate_served({bin, "serve-logprobs", "--checkpoint", ckpt}, tok, in, checks, work + "/eval",
                         c.eval_timeout_seconds, &e);
    if (!st.ok()) return finish("failed", public_eval_reason(st.message()), st.message());
    res["eval"] = e.json();
    res["seconds"] = e.seconds;
    if (e.verdict == "ok") {
      res["val_bpb"] = e.val_bpb;
      res["score"] = e.has_core ? e.composite : e.val_bpb;
      if (e.has_core) res["core"] = e.core.core;
    }
    // A disqualification's reason is the evaluator's own sentence (positions, numbers, the check's name).
    return finish(e.verdict, e.verdict == "ok" ? "" : e.reason, "");
  } catch (const std::bad_alloc&) {  // past the address-space limit: the team's artifact asked for too much
    return finish("failed", "out of memory", "the evaluation ran out of memory (eval_memory_mb)");
  }
}

namespace {

// One submission through the scorer, phase by phase: the checks and the work directory, the fork's build (a fork),
// the training on the scorer's clock, the evaluation in a worker process. A phase returns true to go on; done()
// fills in the row's outcome and returns false, so that a phase ends the run with `return done(...)`.
class ScoredRun {
 public:
  ScoredRun(const Competition& c, const Submission& s, const ScoreOptions& o, RecordRow* row)
      : c_(c), s_(s), o_(o), r_(*row), bin_(o.organiser_binary) {}
  void run();

 private:
  // reason: public (the fixed vocabulary of the organiser's own words); raw: what the team's process printed, for
  // the private log only.
  bool done(const std::string& status, const std::string& reason, const std::string& raw = "");
  std::string who() const { return s_.team + " " + s_.hash.substr(0, 12); }
  bool check_and_prepare();
  bool build_fork();
  bool train();
  bool evaluate();

  const Competition& c_;
  const Submission& s_;
  const ScoreOptions& o_;
  RecordRow& r_;
  nlohmann::json details_;
  const Phase* ph_ = nullptr;
  std::string work_;  // the submission's work directory
  std::string bin_;   // the frontier that trains and serves: the organiser's build, or the fork's
};

void ScoredRun::run() {
  r_.event = "run";
  r_.team = s_.team;
  r_.submission = s_.hash;
  r_.kind = s_.kind;
  r_.phase = s_.phase;
  r_.started_at = utc_now();
  r_.machine = machine_summary(c_);
  details_ = {{"competition_sha256", c_.sha256}, {"commit", s_.commit}, {"repo", s_.repo}};
  if (!check_and_prepare()) return;
  if (s_.kind == "fork" && !build_fork()) return;
  if (!train()) return;
  evaluate();
}

bool ScoredRun::done(const std::string& status, const std::string& reason, const std::string& raw) {
  r_.status = status;
  r_.reason = reason;
  r_.details = details_.dump();
  r_.finished_at = utc_now();
  private_note(c_, r_, raw);
  say(o_, who() + ": " + status + (reason.empty() ? "" : " (" + reason + ")"));
  return false;
}

// The phase and the config (no frozen key), then a fresh work directory with the config in it.
bool ScoredRun::check_and_prepare() {
  ph_ = c_.phase(s_.phase);
  if (!ph_) return done("rejected", "the competition has no phase '" + s_.phase + "' any more");
  r_.metric = ph_->metric;
  r_.budget_s = ph_->budget_seconds;
  Status parse;
  std::string frozen = frozen_key_in(s_.config_text, "config.toml", &parse);
  if (!parse.ok()) return done("rejected", "config: " + parse.message());
  if (!frozen.empty()) return done("rejected", "config sets " + frozen + ", which the competition fixes");

  work_ = c_.work_dir + "/" + s_.hash.substr(0, 12) + "-" + s_.phase;
  std::error_code ec;
  fs::remove_all(work_, ec);
  Status st = make_dirs(work_);
  if (st.ok()) st = write_file_atomic(work_ + "/config.toml", s_.config_text);
  if (!st.ok()) return done("eval_failed", "scorer error", "scorer: " + st.message());
  details_["work_dir"] = work_;
  return true;
}

// The fork built from its commit in a clean directory: clone, checkout, configure, build, under one timeout.
bool ScoredRun::build_fork() {
  say(o_, who() + ": building the fork at " + s_.commit.substr(0, 12));
  const auto t0 = std::chrono::steady_clock::now();
  const std::string log = work_ + "/build.log";
  double left = c_.build_timeout_seconds;
  const char* stage = "clone";
  Step b = run_logged({"git", "clone", "--quiet", "--no-hardlinks", s_.dir + "/repo.git", work_ + "/src"}, "", log,
                      left, true, true);
  if (b.ok) {
    stage = "checkout";
    b = run_logged({"git", "-C", work_ + "/src", "checkout", "--quiet", "--detach", s_.commit}, "", log,
                   left - since(t0), true, true);
  }
  if (b.ok) {
    stage = "configure";
    std::vector<std::string> cfg = {"cmake", "-S", work_ + "/src", "-B", work_ + "/build"};
    cfg.insert(cfg.end(), c_.cmake_args.begin(), c_.cmake_args.end());
    b = run_logged(cfg, "", log, std::max(1.0, left - since(t0)), true, true);
  }
  if (b.ok) {
    stage = "build";
    b = run_logged({"cmake", "--build", work_ + "/build", "--target", "frontier", "-j", std::to_string(c_.build_jobs)},
                   "", log, std::max(1.0, left - since(t0)), true, true);
  }
  r_.build_s = since(t0);
  std::string digest;
  if (sha256_file(log, &digest).ok()) details_["build_log_sha256"] = digest;
  if (!b.ok)
    return done("build_failed", b.timed_out ? "the build took longer than " +
                                                  std::to_string(static_cast<int>(c_.build_timeout_seconds)) + " s"
                                            : "build failed (" + std::string(stage) + ": " + b.ended + ")",
                b.why);
  bin_ = work_ + "/build/frontier";
  if (!file_exists(bin_)) return done("build_failed", "the build made no build/frontier");
  return true;
}

// Training, on the scorer's clock: killed past the budget + grace; it must leave a checkpoint.
bool ScoredRun::train() {
  say(o_, who() + ": training (" + std::to_string(ph_->budget_seconds) + " s budget)");
  const std::string run_dir = work_ + "/run", log = work_ + "/train.log";
  std::vector<std::string> argv = {bin_,     "train", "--config", work_ + "/config.toml", "--budget",
                                   std::to_string(ph_->budget_seconds), "--data", c_.train_data,
                                   "--set", "train.run_dir=" + run_dir,
                                   "--set", "train.threads=" + std::to_string(ph_->threads),
                                   // the team's own end-of-run val_bpb is not used: one batch, not the grace's time
                                   "--set", "eval.tokens=1"};
  if (ph_->ranks > 1) {
    std::vector<std::string> launch = {"mpirun", "-np", std::to_string(ph_->ranks)};
    if (geteuid() == 0) launch.push_back("--allow-run-as-root");
    argv.insert(argv.begin(), launch.begin(), launch.end());
  }
  const double limit = ph_->budget_seconds + ph_->grace_seconds;
  Step t = run_logged(argv, work_, log, limit, false);
  r_.train_s = t.seconds;
  std::string digest;
  if (sha256_file(log, &digest).ok()) r_.log_sha256 = digest;
  details_["team_summary"] = team_summary(log);
  char buf[160];
  if (t.timed_out) {
    std::snprintf(buf, sizeof(buf), "killed after %.1f s by the scorer's clock: past the budget %g s + grace %g s",
                  t.seconds, ph_->budget_seconds, ph_->grace_seconds);
    return done("overstayed", buf);
  }
  if (!t.ok) return done("crashed", "crashed (" + t.ended + ")", "training " + t.why);
  const std::string ckpt = run_dir + "/model.ckpt";
  if (!file_exists(ckpt)) return done("eval_failed", "training ended without a checkpoint (no run/model.ckpt)");
  return true;
}

// The frozen evaluator, in a child process of the organiser's binary (evaluation_worker): the team's tokenizer
// and server are loaded and run there, under limits, so a tokenizer that hangs the loader, one that asks for all
// the memory, or a server that kills the process that started it ends that child, never this scorer.
bool ScoredRun::evaluate() {
  say(o_, who() + ": evaluating through the team's server");
  Subprocess w;
  w.argv = {o_.evaluator_binary, "arena", "evaluate", "--competition", c_.path, "--phase", s_.phase, "--work", work_,
            "--binary", bin_, "--seed", std::to_string(o_.seed)};
  w.stdout_path = work_ + "/eval_worker.log";
  w.stderr_to_stdout = true;
  w.timeout_s = c_.eval_timeout_seconds + c_.grace_seconds;
  std::remove((work_ + "/eval_result.json").c_str());
  SubprocessResult wr;
  Status st = run_subprocess(w, &wr);
  r_.eval_s = wr.seconds;
  if (!st.ok()) return done("eval_failed", "scorer error", "evaluation worker: " + st.message());
  if (wr.timed_out) return done("eval_failed", "timeout", "the evaluation passed eval_timeout_seconds + grace_seconds");
  if (wr.signal) return done("eval_failed", "crashed (signal " + std::to_string(wr.signal) + ")",
                             "evaluation worker " + wr.describe(w) + ": " + log_reason(w.stdout_path, false));
  nlohmann::json res = nlohmann::json::parse(read_tail(work_ + "/eval_result.json", 64 << 20), nullptr, false);
  if (!wr.ok() || !res.is_object() || !res.contains("verdict") || !res["verdict"].is_string() ||
      !res.value("public_reason", nlohmann::json()).is_string())
    return done("eval_failed", "evaluation error (" + ended_by(wr) + ")",
                "evaluation worker " + wr.describe(w) + ": " + log_reason(w.stdout_path, false));
  const std::string verdict = res["verdict"], pub = res["public_reason"];
  if (res.contains("eval")) details_["eval"] = res["eval"];
  if (res.contains("tokenizer")) details_["tokenizer"] = res["tokenizer"];
  if (verdict == "failed") return done("eval_failed", pub, res.value("private_reason", ""));
  if (verdict != "ok") return done("disqualified", pub);
  const double kNaN = std::nan("");  // a double: value(key, NAN) would read the numbers back as float
  r_.val_bpb = res.value("val_bpb", kNaN);
  r_.score = res.value("score", kNaN);
  if (res.contains("core")) r_.core = res.value("core", kNaN);
  return done("ok", "");
}

}  // namespace

void score_submission(const Competition& c, const Submission& s, const ScoreOptions& o, RecordRow* row) {
  ScoredRun(c, s, o, row).run();
}

Status score_pending(const Competition& c, Record& rec, const ScoreOptions& o, const std::string& hash,
                     std::vector<RecordRow>* done) {
  // One scorer per competition: a second would score the same submissions twice (and share the machine).
  FRONTIER_RETURN_IF_ERROR(make_dirs(c.work_dir));
  DirLock lock;
  FRONTIER_RETURN_IF_ERROR(lock.acquire(c.work_dir, "work_dir in " + c.path));
  // Scored runs go into a chain that verifies (append checks it again): found before hours of training, not after.
  VerifyReport v;
  FRONTIER_RETURN_IF_ERROR(rec.verify(&v));
  FRONTIER_RETURN_IF_ERROR(v.status(rec.path()));
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
  if (opts.evaluator_binary.empty()) opts.evaluator_binary = fs::read_symlink("/proc/self/exe").string();
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

#include "research/research.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string_view>

#include "config/frozen_keys.h"
#include "config/tomlpp.h"  // not <toml++/toml.h>: see there
#include "research/chart.h"
#include "train/schema.h"
#include "util/file.h"
#include "util/stop_signal.h"
#include "util/file_lock.h"
#include "util/rng.h"
#include "util/subprocess.h"

namespace frontier {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// Limits on what the loop reads back from its children and its own files (all data, never trusted).
constexpr size_t kLogTailBytes = 64 << 10;         // of a trial's train.log: its last error line and summary
constexpr size_t kSummaryKeys = 64;                // summary lines kept
constexpr size_t kProposerOutputBytes = 1 << 20;   // a proposer's stdout
constexpr size_t kProposalKeys = 256;              // keys in one proposal's "set"
constexpr int kProposerFailuresInARow = 3;         // then the session stops
constexpr uintmax_t kLedgerMaxBytes = 256u << 20;  // ledger.jsonl
constexpr int kJsonMaxDepth = 32;                  // nesting of one ledger line (dump() recurses)

// SIGINT / SIGTERM during run_research stop the loop (util/stop_signal.h); the trial gets SIGTERM.
std::string stop_signal_name() { return StopSignals::received() == SIGINT ? "SIGINT" : "SIGTERM"; }

// Untrusted text made fit for a one-line message: at most max bytes, control bytes and non-ASCII as '?'.
std::string printable(const std::string& s, size_t max = 200) {
  std::string o;
  for (size_t i = 0; i < s.size() && o.size() < max; i++) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    o += c == '\n' || c == '\t' ? ' ' : (c < 0x20 || c >= 0x7f) ? '?' : static_cast<char>(c);
  }
  if (s.size() > max) o += "...";
  return o;
}

std::string fmt_number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

// JSON as the ledger writes it: invalid UTF-8 (a trial's log line, say) becomes U+FFFD instead of an exception.
std::string dump_json(const json& j, int indent = -1) {
  return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

// The last max bytes of a file (a trial's log can be long; its summary and error are at the end).
Status read_tail(const std::string& path, size_t max, std::string* out) {
  out->clear();
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return Status::error("cannot open " + path);
  if (std::fseek(f, 0, SEEK_END) == 0) {
    long size = std::ftell(f);
    if (size > static_cast<long>(max)) std::fseek(f, size - static_cast<long>(max), SEEK_SET);
    else std::fseek(f, 0, SEEK_SET);
  }
  out->resize(max);
  size_t n = std::fread(out->data(), 1, max, f);
  out->resize(n);
  std::fclose(f);
  return ok_status();
}

std::string fmt_value(const toml::node& n) {
  if (auto v = n.as_integer()) return std::to_string(v->get());
  if (auto v = n.as_floating_point()) {
    std::ostringstream s;
    s.precision(9);
    s << v->get();
    return s.str();
  }
  if (auto v = n.as_boolean()) return v->get() ? "true" : "false";
  if (auto v = n.as_string()) return v->get();
  return "";
}

std::string sample_dim(const SpaceDim& d, Rng& r) {
  if (!d.is_range) return d.choices[r.pick(d.choices.size())];
  double u = r.uniform();
  double v = d.log ? std::exp(std::log(d.lo) + u * (std::log(d.hi) - std::log(d.lo))) : d.lo + u * (d.hi - d.lo);
  if (d.is_int) return std::to_string(static_cast<int64_t>(std::llround(v)));
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.4g", v);
  return buf;
}

// A neighbour of value cur in dimension d: the next or previous choice, or x0.7 / x1.4 (log) or +-15% of the range.
std::string mutate_dim(const SpaceDim& d, const std::string& cur, Rng& r) {
  if (!d.is_range) {
    auto it = std::find(d.choices.begin(), d.choices.end(), cur);
    if (it == d.choices.end() || d.choices.size() < 2) return sample_dim(d, r);
    size_t i = it - d.choices.begin();
    if (i == 0) return d.choices[1];
    if (i + 1 == d.choices.size()) return d.choices[i - 1];
    return d.choices[r.uniform() < 0.5 ? i - 1 : i + 1];
  }
  char* end = nullptr;
  double v = std::strtod(cur.c_str(), &end);
  if (end == cur.c_str()) return sample_dim(d, r);
  bool up = r.uniform() < 0.5;
  v = d.log ? v * (up ? 1.4 : 0.7) : v + (up ? 0.15 : -0.15) * (d.hi - d.lo);
  v = std::clamp(v, d.lo, d.hi);
  if (d.is_int) return std::to_string(static_cast<int64_t>(std::llround(v)));
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.4g", v);
  return buf;
}

std::string describe(const std::map<std::string, std::string>& set) {
  std::string s;
  for (const auto& [k, v] : set) s += (s.empty() ? "" : ", ") + k + "=" + v;
  return s.empty() ? "base config" : s;
}

// The summary block `frontier train` prints last ("---", then "key: value" lines), parsed as data: at most
// kSummaryKeys keys of [A-Za-z0-9_] (64 bytes at most), values of 256 bytes at most; a value is a number when all of
// it parses as a finite double, else a string. False when the text has no summary block.
bool parse_summary(const std::string& log, json* out) {
  size_t p = log.rfind("\n---\n");
  size_t start = p != std::string::npos ? p + 5 : log.rfind("---\n", 0) == 0 ? 4 : std::string::npos;
  if (start == std::string::npos) return false;
  *out = json::object();
  std::istringstream in(log.substr(start));
  std::string line;
  while (std::getline(in, line) && out->size() < kSummaryKeys) {
    size_t c = line.find(':');
    if (c == std::string::npos || c == 0 || c > 64) continue;
    std::string k = line.substr(0, c);
    if (k.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != std::string::npos)
      continue;  // total_tokens_M and num_params_M have capitals
    size_t v0 = line.find_first_not_of(' ', c + 1);
    std::string v = v0 == std::string::npos ? "" : line.substr(v0, 256);
    while (!v.empty() && (v.back() == ' ' || v.back() == '\r')) v.pop_back();
    char* end = nullptr;
    double d = std::strtod(v.c_str(), &end);
    (*out)[k] = !v.empty() && *end == 0 && std::isfinite(d) ? json(d) : json(v);
  }
  return true;
}

// What follows the last "error: " of a log, to the end of its line; "" when there is none.
std::string last_error_line(const std::string& log) {
  size_t e = log.rfind("error: ");
  if (e == std::string::npos) return "";
  size_t nl = log.find('\n', e);
  return log.substr(e + 7, nl == std::string::npos ? std::string::npos : nl - e - 7);
}

}  // namespace

// Runs `frontier train` in its own process group (util/subprocess.h); its stdout and stderr go to dir/train.log.
// A crash, a non-zero exit, a summary without a valid val_bpb or a hang (3x the budget + 300 s, then the group is
// killed) is a "crash" result, never an exception in the loop; a stop signal to the loop makes it "interrupted".
TrialResult run_trial(const ResearchOptions& o, const std::map<std::string, std::string>& set, double budget,
                      uint64_t seed, const std::string& dir) {
  TrialResult res;
  res.status = "crash";
  Subprocess p;
  p.argv = {o.frontier_bin, "train", "--config", o.base, "--budget", std::to_string(budget)};
  if (!o.data.empty()) p.argv.insert(p.argv.end(), {"--data", o.data});
  for (const auto& kv : o.extra_sets) p.argv.insert(p.argv.end(), {"--set", kv});
  for (const auto& [k, v] : set) p.argv.insert(p.argv.end(), {"--set", k + "=" + v});
  p.argv.insert(p.argv.end(),
                {"--set", "train.seed=" + std::to_string(seed), "--set", "train.run_dir=" + dir + "/run"});
  if (o.ranks > 1) {  // the trial under mpirun; as root OpenMPI wants to be told that this is intended
    std::vector<std::string> launch = {o.mpirun, "-np", std::to_string(o.ranks)};
    if (geteuid() == 0) launch.push_back("--allow-run-as-root");
    p.argv.insert(p.argv.begin(), launch.begin(), launch.end());
  }
  const std::string log = dir + "/train.log";
  p.stdout_path = log;
  p.stderr_to_stdout = true;
  p.timeout_s = 3 * budget + 300;
  p.stop = StopSignals::flag();
  SubprocessResult r;
  Status s = make_dirs(dir);
  if (s.ok()) s = run_subprocess(p, &r);
  res.seconds = r.seconds;
  if (!s.ok()) {
    res.error = s.message();
    return res;
  }
  if (r.stopped) {
    res.status = "interrupted";
    res.error = "stopped by " + stop_signal_name() + " to the research loop";
    return res;
  }
  std::string out;
  read_tail(log, kLogTailBytes, &out);
  if (!r.ok()) {
    std::string e = last_error_line(out);
    res.error = r.timed_out || e.empty() ? r.describe(p) : printable(e, 300);
    return res;
  }
  if (!parse_summary(out, &res.summary)) {
    res.error = "no summary at the end of " + log;
    return res;
  }
  auto v = res.summary.find("val_bpb");
  if (v == res.summary.end() || !v->is_number() || !(v->get<double>() > 0)) {
    res.error = "the summary in " + log + " has no valid val_bpb";
    return res;
  }
  res.status = "ok";
  res.val_bpb = v->get<double>();
  auto m = res.summary.find("peak_mem_mb");
  res.memory_gb = m != res.summary.end() && m->is_number() ? m->get<double>() / 1024.0 : 0.0;
  return res;
}

namespace {

// The external proposer (docs/agents.md): `/bin/sh -c PROPOSER`, the command line exactly as the user typed it;
// nothing from the session is ever pasted into it. The state goes in as JSON on stdin (also the file
// $FRONTIER_PROPOSER_INPUT), the session directory as $FRONTIER_SESSION; the answer is one JSON object on stdout,
// {"set": {"key": value, ...}, "description": "..."}, read with the limits above. Runs in its own process group,
// killed after o.proposer_timeout seconds. Any failure is an error naming the proposer and the reason.
Status external_proposal(const ResearchOptions& o, const json& state, std::map<std::string, std::string>* set,
                         std::string* desc) {
  const std::string in = o.out_dir + "/proposer_input.json";
  FRONTIER_RETURN_IF_ERROR(write_file_atomic(in, dump_json(state, 2) + "\n"));
  Subprocess p;
  p.argv = {"/bin/sh", "-c", o.proposer};
  p.env = {"FRONTIER_SESSION=" + o.out_dir, "FRONTIER_PROPOSER_INPUT=" + in};
  p.stdin_path = in;
  p.max_output = kProposerOutputBytes;
  p.timeout_s = o.proposer_timeout;
  p.stop = StopSignals::flag();
  SubprocessResult r;
  const std::string who = "proposer '" + printable(o.proposer, 80) + "'";
  FRONTIER_RETURN_IF_ERROR(run_subprocess(p, &r));
  if (!r.ok()) return Status::error(who + " " + r.describe(p));
  const std::string want = " must print one JSON object {\"set\": {\"key\": value, ...}, \"description\": \"...\"}";
  json j = json::parse(r.out, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::error(who + want + "; got: " + printable(r.out));
  auto s = j.find("set");
  if (s == j.end() || !s->is_object()) return Status::error(who + want + "; \"set\" is missing or not an object");
  if (s->size() > kProposalKeys)
    return Status::error(who + " proposed " + std::to_string(s->size()) + " keys; at most " +
                         std::to_string(kProposalKeys));
  set->clear();
  for (auto& [k, v] : s->items()) {
    if (!v.is_string() && !v.is_number() && !v.is_boolean())
      return Status::error(who + ": the value of \"" + printable(k, 80) + "\" must be a string, number or boolean");
    (*set)[k] = v.is_string() ? v.get<std::string>() : v.dump();
  }
  auto d = j.find("description");
  if (d != j.end() && !d->is_string()) return Status::error(who + ": \"description\" must be a string");
  *desc = d != j.end() ? d->get<std::string>().substr(0, 500) : describe(*set);
  return ok_status();
}

// A git branch name from a session directory's name: [A-Za-z0-9_-] kept, anything else '_'.
std::string branch_name(std::string out_dir) {
  while (out_dir.size() > 1 && out_dir.back() == '/') out_dir.pop_back();
  std::string name = std::filesystem::path(out_dir).filename().string(), b;
  for (char c : name) b += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ? c : '_';
  return "frontier/research-" + (b.empty() ? std::string("session") : b);
}

// git -C repo ARGS (an argument vector: no shell), as "frontier <frontier@localhost>", output captured, 120 s at
// most. *what: "git ARGS[0] (exit code N): <its last output line>", for an error message.
// index_file: GIT_INDEX_FILE for the call (git_commit's private index), else the repository's own.
Status git(const std::string& repo, const std::vector<std::string>& args, SubprocessResult* r, std::string* what,
           const std::string& index_file = "") {
  Subprocess p;
  p.argv = {"git", "-C", repo};
  p.argv.insert(p.argv.end(), args.begin(), args.end());
  p.env = {"GIT_AUTHOR_NAME=frontier", "GIT_AUTHOR_EMAIL=frontier@localhost", "GIT_COMMITTER_NAME=frontier",
           "GIT_COMMITTER_EMAIL=frontier@localhost"};
  if (!index_file.empty()) p.env.push_back("GIT_INDEX_FILE=" + index_file);
  p.stderr_to_stdout = true;
  p.max_output = 64 << 10;
  p.timeout_s = 120;
  FRONTIER_RETURN_IF_ERROR(run_subprocess(p, r));
  std::string out = r->out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  size_t nl = out.rfind('\n');
  *what = "git " + args[0] + " (" + r->describe(p) + ")" +
          (out.empty() ? "" : ": " + printable(nl == std::string::npos ? out : out.substr(nl + 1)));
  return ok_status();
}

// Commits toml as frontier_best.toml on `branch` without touching the user's checkout: git's plumbing with a private
// index file in the session directory (read-tree of the branch's tip, or of HEAD for a new branch; update-index;
// write-tree; commit-tree; update-ref with the old tip, so a concurrent change of the branch fails instead of being
// overwritten). The user's HEAD, current branch, index (staged work) and working tree are never read or written,
// which a `git checkout` + `git commit` in their repository did (it committed their staged work and left them on the
// research branch). It also works in a repository without commits, where a `git worktree` cannot be made.
Status git_commit(const std::string& repo, const std::string& session_dir, const std::string& branch,
                  const std::string& toml, const std::string& msg) {
  SubprocessResult r;
  std::string what;
  const std::string where = "git mode: in " + repo + ": ";
  const std::string dir = std::filesystem::absolute(session_dir).string();
  const std::string index = dir + "/git.index", file = dir + "/frontier_best.toml";
  auto out_of = [&] {
    std::string o = r.out;
    while (!o.empty() && (o.back() == '\n' || o.back() == '\r')) o.pop_back();
    return o;
  };
  auto step = [&](const std::vector<std::string>& args, std::string* out, const std::string& idx = "") -> Status {
    FRONTIER_RETURN_IF_ERROR(git(repo, args, &r, &what, idx));
    if (!r.ok()) return Status::error(where + what);
    if (out) *out = out_of();
    return ok_status();
  };
  // The parent: the branch's tip, else (a new branch) HEAD, else none (a repository without commits).
  std::string tip, parent;
  FRONTIER_RETURN_IF_ERROR(git(repo, {"rev-parse", "--verify", "--quiet", "refs/heads/" + branch}, &r, &what));
  if (r.ok()) tip = parent = out_of();
  if (parent.empty()) {
    FRONTIER_RETURN_IF_ERROR(git(repo, {"rev-parse", "--verify", "--quiet", "HEAD^{commit}"}, &r, &what));
    if (r.ok()) parent = out_of();
  }
  FRONTIER_RETURN_IF_ERROR(write_file_atomic(file, toml));
  std::string blob, tree, commit;
  FRONTIER_RETURN_IF_ERROR(step({"hash-object", "-w", "--", file}, &blob));
  std::remove(index.c_str());
  FRONTIER_RETURN_IF_ERROR(step(parent.empty() ? std::vector<std::string>{"read-tree", "--empty"}
                                               : std::vector<std::string>{"read-tree", parent},
                                nullptr, index));
  FRONTIER_RETURN_IF_ERROR(
      step({"update-index", "--add", "--cacheinfo", "100644," + blob + ",frontier_best.toml"}, nullptr, index));
  FRONTIER_RETURN_IF_ERROR(step({"write-tree"}, &tree, index));
  std::remove(index.c_str());
  std::vector<std::string> ct = {"commit-tree", tree, "-m", msg};
  if (!parent.empty()) ct.insert(ct.end(), {"-p", parent});
  FRONTIER_RETURN_IF_ERROR(step(ct, &commit));
  // The old value: the tip read above, or "" (the branch must not exist yet).
  FRONTIER_RETURN_IF_ERROR(step({"update-ref", "-m", "frontier research", "refs/heads/" + branch, commit,
                                 tip.empty() ? std::string(40, '0') : tip},
                                nullptr));
  return ok_status();
}

// Numeric options: finite and in range, each error naming its option (the CLI checks too; the library is also
// called directly).
Status check_options(const ResearchOptions& o) {
  auto bad = [](const char* opt, const char* want, double v) {
    return Status::error(std::string(opt) + " must be " + want + " (got " + fmt_number(v) + ")");
  };
  if (!std::isfinite(o.budget) || o.budget <= 0) return bad("--budget", "a finite number of seconds > 0", o.budget);
  if (!std::isfinite(o.hours) || o.hours < 0) return bad("--hours", "a finite number >= 0 (0 = no limit)", o.hours);
  if (o.max_trials < 0) return bad("--trials", "an integer >= 0 (0 = no limit)", o.max_trials);
  if (o.repeats < 0) return bad("--repeats", "an integer >= 0", o.repeats);
  if (!std::isfinite(o.min_delta) || o.min_delta < 0) return bad("--min-delta", "a finite number >= 0", o.min_delta);
  if (!std::isfinite(o.proposer_timeout) || o.proposer_timeout <= 0)
    return bad("--proposer-timeout", "a finite number of seconds > 0", o.proposer_timeout);
  if (o.out_dir.empty()) return Status::error("--out is required: the session directory");
  if (o.proposer.empty()) return Status::error("--proposer must be random, mutate, halving or a command");
  return ok_status();
}

// Why e cannot be ledger entry number `index`, or "" when it can (the contract in research.h).
std::string check_entry(const json& e, size_t index) {
  if (!e.is_object()) return "not a JSON object";
  auto id = e.find("id");
  if (id == e.end() || !id->is_number_integer() || id->get<int64_t>() != static_cast<int64_t>(index))
    return "\"id\" must be " + std::to_string(index) + " (trials are numbered in order from 0)";
  auto st = e.find("status");
  static const char* kStatuses[] = {"keep", "discard", "crash", "rejected", "screen", "interrupted", "running"};
  if (st == e.end() || !st->is_string() ||
      std::find(std::begin(kStatuses), std::end(kStatuses), st->get<std::string>()) == std::end(kStatuses))
    return "\"status\" must be one of keep, discard, crash, rejected, screen, interrupted, running";
  auto d = e.find("description");
  if (d == e.end() || !d->is_string()) return "\"description\" must be a string";
  for (const char* k : {"phase", "error", "dir"}) {
    auto v = e.find(k);
    if (v != e.end() && !v->is_string()) return std::string("\"") + k + "\" must be a string";
  }
  for (const char* k : {"val_bpb", "memory_gb", "seconds", "budget", "improvement"}) {
    auto v = e.find(k);
    if (v != e.end() && (!v->is_number() || !std::isfinite(v->get<double>())))
      return std::string("\"") + k + "\" must be a finite number";
  }
  const std::string s = st->get<std::string>();
  if ((s == "keep" || s == "discard" || s == "screen") && !e.contains("val_bpb"))
    return "a \"" + s + "\" entry needs \"val_bpb\"";
  auto set = e.find("set");
  if (set != e.end()) {
    if (!set->is_object()) return "\"set\" must be an object";
    for (const auto& v : *set)
      if (!v.is_string()) return "every value in \"set\" must be a string";
  }
  auto sum = e.find("summary");
  if (sum != e.end() && !sum->is_object()) return "\"summary\" must be an object";
  return "";
}

// The deepest nesting of [ and { in a JSON text, outside strings (a cheap guard before parsing).
int json_depth(std::string_view s) {
  int depth = 0, max_depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); i++) {
    char c = s[i];
    if (in_string) {
      if (c == '\\') i++;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      max_depth = std::max(max_depth, ++depth);
    } else if (c == ']' || c == '}') {
      depth--;
    }
  }
  return max_depth;
}

}  // namespace

bool is_frozen_key(const std::string& k) {
  const FrozenKey* f = frozen_key(k);  // config/frozen_keys.h: the one list, shared with the arena
  return f && f->research;
}

Status load_space(const std::string& path, std::vector<SpaceDim>* out) {
  out->clear();
  toml::table t;
  try {
    t = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    return Status::error(path + ":" + std::to_string(e.source().begin.line) + ": " + std::string(e.description()));
  }
  ConfigSchema schema = train_schema();
  Config probe = schema.defaults();
  for (auto& [key, node] : t) {
    std::string k(key.str());
    const std::string where = path + ": [\"" + k + "\"]";
    if (!probe.values().count(k)) return Status::error(where + ": unknown config key (did you mean '" +
                                                       schema.closest_key(k) + "'?)");
    if (is_frozen_key(k))
      return Status::error(where + ": frozen by the evaluator (the metric, validation data and budget cannot be "
                           "searched)");
    auto* tbl = node.as_table();
    if (!tbl) return Status::error(where + ": must be a table with choices = [...] or min/max");
    SpaceDim d;
    d.key = k;
    if (auto* ch = (*tbl)["choices"].as_array()) {
      for (auto& v : *ch) d.choices.push_back(fmt_value(v));
      if (d.choices.empty()) return Status::error(where + ": empty choices");
    } else if ((*tbl)["min"] && (*tbl)["max"]) {
      d.is_range = true;
      auto lo = (*tbl)["min"].value<double>(), hi = (*tbl)["max"].value<double>();
      if (!lo || !hi) return Status::error(where + ": min and max must be numbers");
      d.lo = *lo;
      d.hi = *hi;
      if (!std::isfinite(d.lo) || !std::isfinite(d.hi))
        return Status::error(where + ": min and max must be finite numbers (got min = " + fmt_number(d.lo) +
                             ", max = " + fmt_number(d.hi) + ")");
      d.log = (*tbl)["log"].value_or(false);
      d.is_int = (*tbl)["min"].is_integer() && (*tbl)["max"].is_integer();
      if (!(d.lo < d.hi) || (d.log && d.lo <= 0)) return Status::error(where + ": need min < max (and min > 0 with log)");
    } else {
      return Status::error(where + ": needs choices = [...] or min = ... and max = ...");
    }
    // Every value must be accepted by the schema.
    Config c = schema.defaults();
    for (const auto& v : d.choices) FRONTIER_RETURN_IF_ERROR(schema.apply_set(k + "=" + v, &c));
    for (double v : d.is_range ? std::vector<double>{d.lo, d.hi} : std::vector<double>{}) {  // both ends
      char buf[64];
      std::snprintf(buf, sizeof(buf), d.is_int ? "%.0f" : "%.17g", v);
      Status s = schema.apply_set(k + "=" + buf, &c);
      if (!s.ok()) return Status::error(where + ": " + s.message());
    }
    out->push_back(d);
  }
  if (out->empty()) return Status::error(path + ": the space has no keys");
  return ok_status();
}

Status read_ledger(const std::string& path, std::vector<json>* out) {
  out->clear();
  std::error_code ec;
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (!ec && size > kLedgerMaxBytes)
    return Status::error(path + ": " + std::to_string(size >> 20) + " MiB; a ledger is at most " +
                         std::to_string(kLedgerMaxBytes >> 20) + " MiB");
  std::string text;
  FRONTIER_RETURN_IF_ERROR(read_file(path, &text));
  size_t a = 0, line_no = 0;
  while (a < text.size()) {
    size_t b = text.find('\n', a);
    if (b == std::string::npos) b = text.size();
    const std::string_view line(text.data() + a, b - a);
    a = b + 1;
    line_no++;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string where = path + ":" + std::to_string(line_no) + ": ";
    if (json_depth(line) > kJsonMaxDepth)
      return Status::error(where + "nested deeper than " + std::to_string(kJsonMaxDepth) + " levels");
    json e = json::parse(line.begin(), line.end(), nullptr, false);
    if (e.is_discarded()) return Status::error(where + "not valid JSON");
    std::string why = check_entry(e, out->size());
    if (!why.empty()) return Status::error(where + why);
    out->push_back(std::move(e));
  }
  return ok_status();
}

namespace {

// budget_mode = probe: one measured step time per speed signature (the keys that change a step's time), taken
// from the first trial that measured it (also after a restart: from the ledger's summaries).
std::string speed_signature(const std::map<std::string, std::string>& set) {
  std::string sig;
  for (const auto& [k, v] : set)
    if (k.rfind("model.", 0) == 0 || k == "train.micro_batch" || k == "train.total_batch_tokens" ||
        k == "train.precision" || k == "train.threads" || k == "train.data_streams")
      sig += k + "=" + v + ";";
  return sig;
}

// A config value as --set text (the mutate proposer's current value of a key the best config does not set).
std::string value_text(const Config& c, const std::string& key) {
  return std::visit([](const auto& x) {
    std::ostringstream s;
    s.precision(9);
    s << std::boolalpha << x;
    return s.str();
  }, c.values().at(key));
}

// What a phase returns when a stop signal cut it short; run_research replaces it with the message naming the signal.
Status stopped() { return Status::error("stopped"); }

// One research session, in the order run_research calls its phases: setup (options, base, space, the session's
// lock, the ledger of an earlier loop), baseline (the noise floor), proposals (until done), finish (the summary,
// also after a stop signal). The ledger is the state: best, spread and the best config are recomputed from it.
class ResearchLoop {
 public:
  explicit ResearchLoop(const ResearchOptions& opt) : o_(opt) {}
  Status setup();
  Status baseline();   // 1. base-config repeats: the noise floor
  Status proposals();  // 2. proposals until done()
  Status finish(const Status& s);  // 3. the summary; the stop signal's message

 private:
  Status check_inputs();
  Status open_session();
  Status save() const;
  void recompute();
  double threshold() const { return std::max(spread_, o_.min_delta); }
  bool out_of_time() const;
  bool done() const;
  Status record(json e, bool replaces_running);
  void learn_probe(const json& e);
  Status run_one(const std::map<std::string, std::string>& set, const std::string& desc, double budget,
                 uint64_t seed, const std::string& phase, TrialResult* r, json* e);
  Status evaluate(const std::map<std::string, std::string>& set, const std::string& desc, const std::string& phase,
                  double budget);
  std::map<std::string, std::string> with_best(std::map<std::string, std::string> set) const;
  Status propose_random();
  Status propose_mutate();
  Status propose_halving();
  Status propose_external();
  void summary() const;

  ResearchOptions o_;  // a copy: frontier_bin filled in
  ConfigSchema schema_ = train_schema();
  Config base_ = schema_.defaults();
  std::vector<SpaceDim> space_;
  DirLock lock_;                                // one loop per session, for its whole lifetime
  std::optional<StopSignals> stop_signals_;     // a second signal quits at once; the trial dies with the loop
  std::vector<json> ledger_;
  double spread_ = 0, best_ = INFINITY;
  std::map<std::string, std::string> best_set_;
  Rng rng_{0};
  std::string branch_;
  Clock::time_point t_start_;
  std::map<std::string, double> probes_;  // speed signature -> measured step seconds
  int interrupted_id_ = -1;               // the trial a stop signal cut short
  int proposer_failures_ = 0;             // in a row
};

Status ResearchLoop::setup() {
  FRONTIER_RETURN_IF_ERROR(check_inputs());
  FRONTIER_RETURN_IF_ERROR(open_session());
  recompute();
  rng_ = Rng{o_.seed * 7919 + ledger_.size()};
  branch_ = branch_name(o_.out_dir);
  t_start_ = Clock::now();
  std::printf("research: base %s, space %s (%zu keys), proposer %s, budget %.0fs per trial\n", o_.base.c_str(),
              o_.space.c_str(), space_.size(), o_.proposer.c_str(), o_.budget);
  std::fflush(stdout);
  for (const auto& e : ledger_) learn_probe(e);
  return ok_status();
}

// The options, the executable, the base config and the space: everything checked before the session is touched.
Status ResearchLoop::check_inputs() {
  FRONTIER_RETURN_IF_ERROR(check_options(o_));
  if (o_.frontier_bin.empty()) {
    std::error_code ec;
    o_.frontier_bin = std::filesystem::read_symlink("/proc/self/exe", ec).string();
    if (ec) return Status::error("cannot find the frontier executable (/proc/self/exe): " + ec.message());
  }
  if (!file_exists(o_.base)) return Status::error("--base " + o_.base + " does not exist");
  FRONTIER_RETURN_IF_ERROR(schema_.load_toml(o_.base, &base_));
  // The base may name its data, run dir, budget and peak (the loop overrides or only reports them), but not a key
  // that survives into every trial and changes what the budget buys (a probe step time of its own, its own mode).
  for (const auto& [k, v] : base_.values()) {
    const FrozenKey* f = frozen_key(k);
    if (f && f->research && !(v == schema_.defaults().values().at(k)) && k != "train.data" && k != "train.run_dir" &&
        k != "train.budget_seconds" && k != "train.peak_gflops")
      return Status::error(o_.base + ": sets " + k + ", which research does not allow (" + f->why + "); remove it");
  }
  for (const auto& kv : o_.extra_sets) {
    std::string k = kv.substr(0, kv.find('='));
    if (is_frozen_key(k)) return Status::error("--set " + kv + ": " + k + " is frozen by the evaluator");
  }
  return load_space(o_.space, &space_);
}

// The session directory, its lock, the stop signals and, on resume, the ledger (a "running" entry recorded as
// interrupted).
Status ResearchLoop::open_session() {
  FRONTIER_RETURN_IF_ERROR(make_dirs(o_.out_dir + "/trials", "--out"));
  FRONTIER_RETURN_IF_ERROR(lock_.acquire(o_.out_dir, "--out"));
  stop_signals_.emplace();
  const std::string ledger_path = o_.out_dir + "/ledger.jsonl";
  if (!file_exists(ledger_path)) return ok_status();
  Status s = read_ledger(ledger_path, &ledger_);
  if (!s.ok()) return Status::error(s.message() + "; repair that line, or move the ledger away to start over");
  bool changed = false;
  for (auto& e : ledger_)
    if (e["status"] == "running") {  // the loop that ran it was killed (its trial died with it)
      e["status"] = "interrupted";
      e["error"] = "the research loop stopped during this trial; recorded on resume";
      changed = true;
      std::printf("research: trial %03d was unfinished (its loop was stopped); recorded as interrupted\n",
                  e["id"].get<int>());
    }
  if (changed) FRONTIER_RETURN_IF_ERROR(save());
  if (!ledger_.empty())
    std::printf("research: resuming %s after trial %d\n", o_.out_dir.c_str(), ledger_.back()["id"].get<int>());
  return ok_status();
}

Status ResearchLoop::save() const {
  auto cell = [](std::string s) {  // a description may hold tabs or newlines; the TSV may not
    for (auto& c : s)
      if (c == '\t' || c == '\n' || c == '\r') c = ' ';
    return s;
  };
  std::string tsv = "id\tval_bpb\tmemory_gb\tstatus\tdescription\n", jl;
  for (const auto& e : ledger_) {
    char buf[128];
    std::snprintf(buf, sizeof(buf), "%03d\t%.6f\t%.2f\t", e["id"].get<int>(), e.value("val_bpb", 0.0),
                  e.value("memory_gb", 0.0));
    tsv += buf + e["status"].get<std::string>() + "\t" + cell(e["description"].get<std::string>()) + "\n";
    jl += dump_json(e) + "\n";
  }
  FRONTIER_RETURN_IF_ERROR(write_file_atomic(o_.out_dir + "/results.tsv", tsv));
  FRONTIER_RETURN_IF_ERROR(write_file_atomic(o_.out_dir + "/ledger.jsonl", jl));
  return write_file_atomic(o_.out_dir + "/progress.svg", progress_svg(ledger_));
}

// Rebuilds best, spread and the best config from the ledger (after a resume, or as trials land).
void ResearchLoop::recompute() {
  std::vector<double> base;
  best_ = INFINITY;
  best_set_.clear();
  for (const auto& e : ledger_)
    if (e.value("phase", "") == "baseline" && e["status"] == "keep") base.push_back(e["val_bpb"].get<double>());
  if (!base.empty()) {
    double s = 0;
    for (double b : base) s += b;
    best_ = s / base.size();
    spread_ = *std::max_element(base.begin(), base.end()) - *std::min_element(base.begin(), base.end());
  }
  for (const auto& e : ledger_)
    if (e["status"] == "keep" && e.value("phase", "") != "baseline") {
      best_ = e["val_bpb"].get<double>();
      best_set_ = e.contains("set") ? e["set"].get<std::map<std::string, std::string>>()
                                    : std::map<std::string, std::string>{};
    }
}

bool ResearchLoop::out_of_time() const {
  return o_.hours > 0 && std::chrono::duration<double>(Clock::now() - t_start_).count() > o_.hours * 3600;
}

bool ResearchLoop::done() const {
  return StopSignals::received() != 0 || (o_.max_trials > 0 && static_cast<int>(ledger_.size()) >= o_.max_trials) ||
         out_of_time();
}

// A finished entry: appended (a rejected proposal) or replacing the trial's "running" entry.
Status ResearchLoop::record(json e, bool replaces_running) {
  e["id"] = static_cast<int>(replaces_running ? ledger_.size() - 1 : ledger_.size());
  if (replaces_running) ledger_.back() = e;
  else ledger_.push_back(e);
  recompute();
  FRONTIER_RETURN_IF_ERROR(save());
  std::printf("trial %03d  %-7s  val_bpb %.6f  best %.6f  %s\n", e["id"].get<int>(),
              e["status"].get<std::string>().c_str(), e.value("val_bpb", 0.0), best_,
              e["description"].get<std::string>().c_str());
  std::fflush(stdout);
  return ok_status();
}

void ResearchLoop::learn_probe(const json& e) {
  if (!e.contains("summary") || !e["summary"].is_object() || !e.contains("set") || !e["set"].is_object()) return;
  auto p = e["summary"].find("probe_step_seconds");
  if (p == e["summary"].end() || !p->is_number() || !(p->get<double>() > 0)) return;
  std::map<std::string, std::string> set;
  for (auto it = e["set"].begin(); it != e["set"].end(); ++it)
    set[it.key()] = it->is_string() ? it->get<std::string>() : it->dump();
  probes_.emplace(speed_signature(set), p->get<double>());
}

// Runs one trial: its "running" entry is saved first, so a killed loop leaves a trace the next one records.
Status ResearchLoop::run_one(const std::map<std::string, std::string>& set, const std::string& desc, double budget,
                             uint64_t seed, const std::string& phase, TrialResult* r, json* e) {
  char id[16];
  std::snprintf(id, sizeof(id), "%03zu", ledger_.size());
  const std::string dir = o_.out_dir + "/trials/" + id;
  *e = json{{"id", static_cast<int>(ledger_.size())}, {"set", set}, {"description", desc}, {"budget", budget},
            {"seed", seed}, {"phase", phase}, {"status", "running"}, {"val_bpb", 0.0}, {"memory_gb", 0.0},
            {"dir", dir}, {"loop_pid", static_cast<int64_t>(getpid())}};
  ledger_.push_back(*e);
  FRONTIER_RETURN_IF_ERROR(save());
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);  // a directory no ledger entry owns (ids are never reused)
  std::map<std::string, std::string> run_set = set;
  if (o_.budget_mode == "probe") {
    run_set["train.budget_mode"] = "probe";
    auto known = probes_.find(speed_signature(set));
    if (known != probes_.end()) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%.17g", known->second);
      run_set["train.probe_step_seconds"] = buf;
    }
  }
  *r = run_trial(o_, run_set, budget, seed, dir);
  if (r->status == "interrupted") interrupted_id_ = (*e)["id"].get<int>();
  e->erase("loop_pid");
  (*e)["val_bpb"] = r->val_bpb;
  (*e)["memory_gb"] = r->memory_gb;
  (*e)["seconds"] = r->seconds;
  (*e)["summary"] = r->summary;
  (*e)["error"] = r->error;
  learn_probe(*e);
  return ok_status();
}

Status ResearchLoop::baseline() {
  int have_base = 0;
  for (const auto& e : ledger_) have_base += e.value("phase", "") == "baseline" && e["status"] == "keep";
  while (have_base < o_.repeats && !done()) {
    TrialResult r;
    json e;
    FRONTIER_RETURN_IF_ERROR(run_one({}, "base config (seed " + std::to_string(o_.seed + have_base) + ")", o_.budget,
                                     o_.seed + have_base, "baseline", &r, &e));
    e["status"] = r.status == "ok" ? "keep" : r.status;
    FRONTIER_RETURN_IF_ERROR(record(e, true));
    if (r.status == "interrupted") return stopped();
    if (r.status != "ok")
      return Status::error("the base config crashed (" + r.error + "); see " + e["dir"].get<std::string>() +
                           "/train.log");
    have_base++;
  }
  if (have_base > 0)
    std::printf("research: baseline val_bpb %.6f over %d runs, seed spread %.6f; keep rule: val_bpb < best - "
                "%.6f\n", best_, have_base, spread_, threshold());
  return ok_status();
}

// One proposal: rejected without a run when a key is frozen or a value is refused by the schema; else a trial,
// kept by the noise-aware rule (a "screen" trial is never kept) and, in git mode, committed.
Status ResearchLoop::evaluate(const std::map<std::string, std::string>& set, const std::string& desc,
                              const std::string& phase, double budget) {
  for (const auto& [k, v] : set) {
    Config c = schema_.defaults();
    Status s =
        is_frozen_key(k) ? Status::error(k + " is frozen by the evaluator") : schema_.apply_set(k + "=" + v, &c);
    if (!s.ok()) {
      json e = {{"set", set}, {"description", desc}, {"phase", phase}, {"status", "rejected"}, {"error", s.message()},
                {"val_bpb", 0.0}, {"memory_gb", 0.0}};
      return record(e, false);
    }
  }
  TrialResult r;
  json e;
  FRONTIER_RETURN_IF_ERROR(run_one(set, desc, budget, o_.seed, phase, &r, &e));
  const bool keep = r.status == "ok" && phase != "screen" && r.val_bpb < best_ - threshold();
  e["status"] = r.status != "ok" ? r.status : phase == "screen" ? "screen" : keep ? "keep" : "discard";
  if (keep && std::isfinite(best_)) e["improvement"] = best_ - r.val_bpb;  // none for a first, unmeasured best
  FRONTIER_RETURN_IF_ERROR(record(e, true));
  if (r.status == "interrupted") return stopped();
  if (keep && !o_.git_repo.empty()) {
    Config c = base_;
    for (const auto& [k, v] : set) schema_.apply_set(k + "=" + v, &c);
    FRONTIER_RETURN_IF_ERROR(git_commit(o_.git_repo, o_.out_dir, branch_, c.to_toml(),
                                        "frontier research: val_bpb " + std::to_string(r.val_bpb) + ": " + desc));
  }
  return ok_status();
}

std::map<std::string, std::string> ResearchLoop::with_best(std::map<std::string, std::string> set) const {
  for (const auto& [k, v] : best_set_)
    if (!set.count(k)) set[k] = v;
  return set;
}

Status ResearchLoop::proposals() {
  while (!done()) {
    Status s = o_.proposer == "random"    ? propose_random()
               : o_.proposer == "mutate"  ? propose_mutate()
               : o_.proposer == "halving" ? propose_halving()
                                          : propose_external();
    FRONTIER_RETURN_IF_ERROR(s);
  }
  return ok_status();
}

// Every key of the space drawn afresh.
Status ResearchLoop::propose_random() {
  std::map<std::string, std::string> set;
  for (const auto& d : space_) set[d.key] = sample_dim(d, rng_);
  return evaluate(set, describe(set), "trial", o_.budget);
}

// The best config with one key moved to a neighbour of its value.
Status ResearchLoop::propose_mutate() {
  const SpaceDim& d = space_[rng_.pick(space_.size())];
  std::map<std::string, std::string> set = best_set_;
  std::string cur = set.count(d.key) ? set[d.key] : value_text(base_, d.key);
  set[d.key] = mutate_dim(d, cur, rng_);
  return evaluate(set, d.key + ": " + cur + " -> " + set[d.key], "trial", o_.budget);
}

// Successive halving: 4 random neighbours of the best at a third of the budget, the best 2 of them at a full
// budget against the keep rule.
Status ResearchLoop::propose_halving() {
  std::vector<std::pair<double, std::map<std::string, std::string>>> rung;
  for (int i = 0; i < 4 && !done(); i++) {
    auto s = best_set_;
    const SpaceDim& d = space_[rng_.pick(space_.size())];
    s[d.key] = sample_dim(d, rng_);
    FRONTIER_RETURN_IF_ERROR(evaluate(s, "screen: " + describe(s), "screen", o_.budget / 3));
    const auto& e = ledger_.back();
    if (e["status"] == "screen") rung.push_back({e["val_bpb"].get<double>(), s});
  }
  std::sort(rung.begin(), rung.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < std::min<size_t>(2, rung.size()) && !done(); i++)
    FRONTIER_RETURN_IF_ERROR(evaluate(rung[i].second, "promoted: " + describe(rung[i].second), "trial", o_.budget));
  return ok_status();
}

// The external proposer, given the session's state. A failure is recorded and the loop asks again; a proposer that
// keeps failing stops the session.
Status ResearchLoop::propose_external() {
  json st = {{"best_val_bpb", best_}, {"best_set", best_set_}, {"spread", spread_},
             {"keep_threshold", threshold()}, {"base", base_.to_toml()}, {"space", json::array()},
             {"ledger", ledger_}};
  for (const auto& d : space_)
    st["space"].push_back({{"key", d.key}, {"choices", d.choices}, {"min", d.lo}, {"max", d.hi},
                           {"log", d.log}, {"range", d.is_range}});
  std::map<std::string, std::string> set;
  std::string desc;
  Status s = external_proposal(o_, st, &set, &desc);
  if (StopSignals::received()) return stopped();
  if (!s.ok()) {
    json e = {{"set", json::object()}, {"description", "failed proposal"}, {"phase", "proposal"},
              {"status", "rejected"}, {"error", s.message()}, {"val_bpb", 0.0}, {"memory_gb", 0.0}};
    FRONTIER_RETURN_IF_ERROR(record(e, false));
    if (++proposer_failures_ >= kProposerFailuresInARow)
      return Status::error(s.message() + " (" + std::to_string(proposer_failures_) + " failed proposals in a "
                           "row; fix the proposer and run the same command to resume)");
    return ok_status();
  }
  proposer_failures_ = 0;
  return evaluate(with_best(set), desc, "trial", o_.budget);
}

// What helped most (also after a stop signal).
void ResearchLoop::summary() const {
  std::vector<const json*> kept;
  for (const auto& e : ledger_)
    if (e["status"] == "keep" && e.contains("improvement")) kept.push_back(&e);
  std::sort(kept.begin(), kept.end(), [](const json* a, const json* b) {
    return (*a)["improvement"].get<double>() > (*b)["improvement"].get<double>();
  });
  int crashes = 0, n_base = 0, interrupted = 0;
  for (const auto& e : ledger_) {
    crashes += e["status"] == "crash";
    interrupted += e["status"] == "interrupted";
    n_base += e.value("phase", "") == "baseline";
  }
  std::printf("---\nresearch: %zu trials (%d baseline, %zu kept, %d crashed, %d interrupted); best val_bpb %.6f "
              "(noise floor %.6f)\n", ledger_.size(), n_base, kept.size(), crashes, interrupted, best_,
              threshold());
  std::printf("best config: %s\n", describe(best_set_).c_str());
  for (const json* e : kept)
    std::printf("  helped: -%.6f  %s\n", (*e)["improvement"].get<double>(),
                (*e)["description"].get<std::string>().c_str());
  std::printf("ledger: %s/results.tsv, %s/ledger.jsonl; chart: %s/progress.svg\n", o_.out_dir.c_str(),
              o_.out_dir.c_str(), o_.out_dir.c_str());
  std::fflush(stdout);
}

Status ResearchLoop::finish(const Status& s) {
  if (StopSignals::received()) {
    summary();
    std::string msg = "stopped by " + stop_signal_name();
    if (interrupted_id_ >= 0) msg += "; trial " + std::to_string(interrupted_id_) + " recorded as interrupted";
    return Status::error(msg + "; run the same command to resume the session");
  }
  if (!s.ok()) return s;
  summary();
  return ok_status();
}

}  // namespace

Status run_research(const ResearchOptions& opt) {
  ResearchLoop loop(opt);
  FRONTIER_RETURN_IF_ERROR(loop.setup());
  Status s = loop.baseline();
  if (s.ok()) s = loop.proposals();
  return loop.finish(s);
}

}  // namespace frontier

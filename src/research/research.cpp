#include "research/research.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <toml++/toml.h>

#include "research/chart.h"
#include "train/train.h"
#include "util/file.h"

namespace frontier {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

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

struct Rng {  // splitmix64
  uint64_t s;
  double uniform() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (z >> 11) * (1.0 / 9007199254740992.0);
  }
  size_t pick(size_t n) { return std::min(n - 1, static_cast<size_t>(uniform() * n)); }
};

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

struct TrialResult {
  std::string status;  // ok | crash
  double val_bpb = 0, memory_gb = 0, seconds = 0;
  json summary = json::object();
  std::string error;
};

// Runs `frontier train` as a child process; its output goes to dir/train.log. A crash, a non-zero exit or a hang
// (3x the budget + 300 s) is a "crash" result, never an exception in the loop.
TrialResult run_trial(const ResearchOptions& o, const std::map<std::string, std::string>& set, double budget,
                      uint64_t seed, const std::string& dir) {
  TrialResult res;
  std::filesystem::create_directories(dir);
  std::vector<std::string> args = {o.frontier_bin, "train", "--config", o.base, "--budget", std::to_string(budget)};
  if (!o.data.empty()) args.insert(args.end(), {"--data", o.data});
  for (const auto& kv : o.extra_sets) args.insert(args.end(), {"--set", kv});
  for (const auto& [k, v] : set) args.insert(args.end(), {"--set", k + "=" + v});
  args.insert(args.end(), {"--set", "train.seed=" + std::to_string(seed), "--set", "train.run_dir=" + dir + "/run"});
  const std::string log = dir + "/train.log";
  auto t0 = Clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    std::vector<char*> av;
    for (auto& a : args) av.push_back(a.data());
    av.push_back(nullptr);
    execv(av[0], av.data());
    _exit(127);
  }
  int st = 0;
  const double limit = 3 * budget + 300;
  while (true) {
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid) break;
    if (std::chrono::duration<double>(Clock::now() - t0).count() > limit) {
      kill(pid, SIGKILL);
      waitpid(pid, &st, 0);
      res.error = "timed out";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  std::string out;
  read_file(log, &out);
  if (res.error.empty() && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
    size_t e = out.rfind("error: ");
    res.error = e != std::string::npos ? out.substr(e + 7, out.find('\n', e) - e - 7)
                : WIFSIGNALED(st)      ? "killed by signal " + std::to_string(WTERMSIG(st))
                                       : "exit code " + std::to_string(WEXITSTATUS(st));
  }
  size_t p = out.rfind("\n---\n");
  if (res.error.empty() && p != std::string::npos) {
    std::istringstream in(out.substr(p + 5));
    std::string line;
    while (std::getline(in, line)) {
      size_t c = line.find(':');
      if (c == std::string::npos) continue;
      std::string k = line.substr(0, c), v = line.substr(line.find_first_not_of(' ', c + 1));
      char* end = nullptr;
      double d = std::strtod(v.c_str(), &end);
      res.summary[k] = (end != v.c_str() && *end == 0) ? json(d) : json(v);
    }
  }
  if (res.error.empty() && res.summary.contains("val_bpb") && res.summary["val_bpb"].is_number()) {
    res.status = "ok";
    res.val_bpb = res.summary["val_bpb"].get<double>();
    res.memory_gb = res.summary.value("peak_mem_mb", 0.0) / 1024.0;
  } else {
    res.status = "crash";
    if (res.error.empty()) res.error = "no summary in " + log;
  }
  return res;
}

struct Session {
  const ResearchOptions& o;
  std::vector<json> ledger;
  double spread = 0, best = INFINITY;
  std::map<std::string, std::string> best_set;

  Status save() {
    std::string tsv = "id\tval_bpb\tmemory_gb\tstatus\tdescription\n", jl;
    for (const auto& e : ledger) {
      char buf[128];
      std::snprintf(buf, sizeof(buf), "%03d\t%.6f\t%.2f\t", e["id"].get<int>(), e.value("val_bpb", 0.0),
                    e.value("memory_gb", 0.0));
      tsv += buf + e["status"].get<std::string>() + "\t" + e["description"].get<std::string>() + "\n";
      jl += e.dump() + "\n";
    }
    FRONTIER_RETURN_IF_ERROR(write_file_atomic(o.out_dir + "/results.tsv", tsv));
    FRONTIER_RETURN_IF_ERROR(write_file_atomic(o.out_dir + "/ledger.jsonl", jl));
    return write_file_atomic(o.out_dir + "/progress.svg", progress_svg(ledger));
  }
  // Rebuilds best, spread and the best config from the ledger (after a resume, or as trials land).
  void recompute() {
    std::vector<double> base;
    best = INFINITY;
    best_set.clear();
    for (const auto& e : ledger) {
      const std::string st = e["status"];
      if (e.value("phase", "") == "baseline" && st != "crash") base.push_back(e["val_bpb"].get<double>());
    }
    if (!base.empty()) {
      double s = 0;
      for (double b : base) s += b;
      best = s / base.size();
      spread = *std::max_element(base.begin(), base.end()) - *std::min_element(base.begin(), base.end());
    }
    for (const auto& e : ledger)
      if (e["status"] == "keep" && e.value("phase", "") != "baseline") {
        best = e["val_bpb"].get<double>();
        best_set = e["set"].get<std::map<std::string, std::string>>();
      }
  }
  double threshold() const { return std::max(spread, o.min_delta); }
};

// The external proposer: CMD gets {"best", "best_set", "spread", "space", "ledger"} as JSON on stdin and answers
// {"set": {"key": value, ...}, "description": "..."} on stdout.
Status external_proposal(const std::string& cmd, const json& state, const std::string& dir,
                         std::map<std::string, std::string>* set, std::string* desc) {
  const std::string in = dir + "/proposer_input.json";
  FRONTIER_RETURN_IF_ERROR(write_file_atomic(in, state.dump(2) + "\n"));
  FILE* p = popen(("(" + cmd + ") < '" + in + "'").c_str(), "r");
  if (!p) return Status::error("cannot run proposer: " + cmd);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  int st = pclose(p);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) return Status::error("proposer '" + cmd + "' failed (exit status)");
  json j = json::parse(out, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("set") || !j["set"].is_object())
    return Status::error("proposer '" + cmd + "' must print {\"set\": {...}, \"description\": \"...\"}; got: " +
                         out.substr(0, 200));
  set->clear();
  for (auto& [k, v] : j["set"].items()) (*set)[k] = v.is_string() ? v.get<std::string>() : v.dump();
  *desc = j.value("description", describe(*set));
  return ok_status();
}

Status git_commit(const std::string& repo, const std::string& branch, const std::string& toml,
                  const std::string& msg) {
  FRONTIER_RETURN_IF_ERROR(write_file_atomic(repo + "/frontier_best.toml", toml));
  std::string q = "'" + repo + "'";
  std::string m = msg;
  for (auto& c : m)
    if (c == '\'') c = '"';
  std::string cmd = "cd " + q + " && (git checkout -q " + branch + " 2>/dev/null || git checkout -q -b " + branch +
                    ") && git add frontier_best.toml && git -c user.name=frontier -c user.email=frontier@localhost "
                    "commit -q -m '" + m + "' >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) return Status::error("git mode: committing to " + repo + " failed");
  return ok_status();
}

}  // namespace

bool is_frozen_key(const std::string& k) {
  return k.rfind("eval.", 0) == 0 || k == "train.data" || k == "train.budget_seconds" || k == "train.max_steps" ||
         k == "train.warmup_steps_excluded" || k == "train.run_dir" || k == "train.peak_gflops";
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
      d.lo = (*tbl)["min"].value<double>().value_or(0);
      d.hi = (*tbl)["max"].value<double>().value_or(0);
      d.log = (*tbl)["log"].value_or(false);
      d.is_int = (*tbl)["min"].is_integer() && (*tbl)["max"].is_integer();
      if (!(d.lo < d.hi) || (d.log && d.lo <= 0)) return Status::error(where + ": need min < max (and min > 0 with log)");
    } else {
      return Status::error(where + ": needs choices = [...] or min = ... and max = ...");
    }
    // Every value must be accepted by the schema.
    Config c = schema.defaults();
    for (const auto& v : d.choices) FRONTIER_RETURN_IF_ERROR(schema.apply_set(k + "=" + v, &c));
    if (d.is_range) {
      FRONTIER_RETURN_IF_ERROR(schema.apply_set(k + "=" + (d.is_int ? std::to_string(int64_t(d.lo)) : std::to_string(d.lo)), &c));
    }
    out->push_back(d);
  }
  if (out->empty()) return Status::error(path + ": the space has no keys");
  return ok_status();
}

Status run_research(const ResearchOptions& opt) {
  ResearchOptions o = opt;
  if (o.frontier_bin.empty()) o.frontier_bin = std::filesystem::read_symlink("/proc/self/exe").string();
  if (!file_exists(o.base)) return Status::error("--base " + o.base + " does not exist");
  ConfigSchema schema = train_schema();
  Config base = schema.defaults();
  FRONTIER_RETURN_IF_ERROR(schema.load_toml(o.base, &base));
  for (const auto& [k, v] : base.values())
    if (k.rfind("eval.", 0) == 0 && !(v == schema.defaults().values().at(k)))
      return Status::error(o.base + ": sets " + k + ", which the frozen evaluator does not allow; remove it");
  for (const auto& kv : o.extra_sets) {
    std::string k = kv.substr(0, kv.find('='));
    if (is_frozen_key(k)) return Status::error("--set " + kv + ": " + k + " is frozen by the evaluator");
  }
  std::vector<SpaceDim> space;
  FRONTIER_RETURN_IF_ERROR(load_space(o.space, &space));
  if (!(o.budget > 0)) return Status::error("--budget must be > 0");
  FRONTIER_RETURN_IF_ERROR(make_dirs(o.out_dir + "/trials"));

  Session S{o};
  std::string prior;
  if (read_file(o.out_dir + "/ledger.jsonl", &prior).ok()) {
    std::istringstream in(prior);
    std::string line;
    while (std::getline(in, line)) {
      json e = json::parse(line, nullptr, false);
      if (e.is_discarded()) return Status::error(o.out_dir + "/ledger.jsonl: corrupt line; move the file away to start over");
      S.ledger.push_back(e);
    }
    if (!S.ledger.empty())
      std::printf("research: resuming %s after trial %d\n", o.out_dir.c_str(), S.ledger.back()["id"].get<int>());
  }
  S.recompute();
  Rng rng{o.seed * 7919 + S.ledger.size()};
  const std::string branch = "frontier/research-" + std::filesystem::path(o.out_dir).filename().string();
  auto t_start = Clock::now();
  auto out_of_time = [&] {
    return o.hours > 0 && std::chrono::duration<double>(Clock::now() - t_start).count() > o.hours * 3600;
  };
  auto done = [&] { return (o.max_trials > 0 && static_cast<int>(S.ledger.size()) >= o.max_trials) || out_of_time(); };
  std::printf("research: base %s, space %s (%zu keys), proposer %s, budget %.0fs per trial\n", o.base.c_str(),
              o.space.c_str(), space.size(), o.proposer.c_str(), o.budget);

  auto record = [&](json e) -> Status {
    e["id"] = static_cast<int>(S.ledger.size());
    S.ledger.push_back(e);
    S.recompute();
    FRONTIER_RETURN_IF_ERROR(S.save());
    std::printf("trial %03d  %-7s  val_bpb %.6f  best %.6f  %s\n", e["id"].get<int>(),
                e["status"].get<std::string>().c_str(), e.value("val_bpb", 0.0), S.best,
                e["description"].get<std::string>().c_str());
    std::fflush(stdout);
    return ok_status();
  };
  auto trial_json = [&](const std::map<std::string, std::string>& set, const std::string& desc, double budget,
                        uint64_t seed, const std::string& phase, TrialResult* r) {
    const std::string dir = o.out_dir + "/trials/" + [&] {
      char b[16];
      std::snprintf(b, sizeof(b), "%03zu", S.ledger.size());
      return std::string(b);
    }();
    std::filesystem::remove_all(dir);  // debris of an interrupted trial
    *r = run_trial(o, set, budget, seed, dir);
    return json{{"set", set},        {"description", desc}, {"budget", budget},     {"seed", seed},
                {"phase", phase},    {"val_bpb", r->val_bpb}, {"memory_gb", r->memory_gb},
                {"seconds", r->seconds}, {"summary", r->summary}, {"error", r->error}, {"dir", dir}};
  };

  // 1. Baseline repeats: the noise floor.
  int have_base = 0;
  for (const auto& e : S.ledger) have_base += e.value("phase", "") == "baseline";
  while (have_base < o.repeats && !done()) {
    TrialResult r;
    json e = trial_json({}, "base config (seed " + std::to_string(o.seed + have_base) + ")", o.budget,
                        o.seed + have_base, "baseline", &r);
    e["status"] = r.status == "ok" ? "keep" : "crash";
    FRONTIER_RETURN_IF_ERROR(record(e));
    if (r.status != "ok") return Status::error("the base config crashed (" + r.error + "); see " + e["dir"].get<std::string>() + "/train.log");
    have_base++;
    S.recompute();
  }
  if (have_base > 0)
    std::printf("research: baseline val_bpb %.6f over %d runs, seed spread %.6f; keep rule: val_bpb < best - "
                "%.6f\n", S.best, have_base, S.spread, S.threshold());

  // 2. Proposals.
  auto evaluate = [&](const std::map<std::string, std::string>& set, const std::string& desc,
                      const std::string& phase, double budget) -> Status {
    for (const auto& [k, v] : set) {
      Config c = schema.defaults();
      Status s = is_frozen_key(k) ? Status::error(k + " is frozen by the evaluator") : schema.apply_set(k + "=" + v, &c);
      if (!s.ok()) {
        json e = {{"set", set}, {"description", desc}, {"phase", phase}, {"status", "rejected"}, {"error", s.message()},
                  {"val_bpb", 0.0}, {"memory_gb", 0.0}};
        return record(e);
      }
    }
    TrialResult r;
    json e = trial_json(set, desc, budget, o.seed, phase, &r);
    if (r.status != "ok") {
      e["status"] = "crash";
    } else if (phase == "screen") {
      e["status"] = "screen";
    } else if (r.val_bpb < S.best - S.threshold()) {
      e["status"] = "keep";
      e["improvement"] = S.best - r.val_bpb;
      if (!o.git_repo.empty()) {
        Config c = base;
        for (const auto& [k, v] : set) schema.apply_set(k + "=" + v, &c);
        FRONTIER_RETURN_IF_ERROR(git_commit(o.git_repo, branch, c.to_toml(),
                                            "frontier research: val_bpb " + std::to_string(r.val_bpb) + ": " + desc));
      }
    } else {
      e["status"] = "discard";
    }
    FRONTIER_RETURN_IF_ERROR(record(e));
    S.recompute();
    return ok_status();
  };
  auto with_best = [&](std::map<std::string, std::string> set) {
    for (const auto& [k, v] : S.best_set)
      if (!set.count(k)) set[k] = v;
    return set;
  };
  while (!done()) {
    std::map<std::string, std::string> set;
    std::string desc;
    if (o.proposer == "random") {
      for (const auto& d : space) set[d.key] = sample_dim(d, rng);
      FRONTIER_RETURN_IF_ERROR(evaluate(set, describe(set), "trial", o.budget));
    } else if (o.proposer == "mutate") {
      const SpaceDim& d = space[rng.pick(space.size())];
      set = S.best_set;
      std::string cur = set.count(d.key) ? set[d.key] : [&] {
        const auto& v = base.values().at(d.key);
        return std::visit([](const auto& x) {
          std::ostringstream s;
          s.precision(9);
          s << std::boolalpha << x;
          return s.str();
        }, v);
      }();
      set[d.key] = mutate_dim(d, cur, rng);
      FRONTIER_RETURN_IF_ERROR(evaluate(set, d.key + ": " + cur + " -> " + set[d.key], "trial", o.budget));
    } else if (o.proposer == "halving") {
      // Successive halving: 4 random neighbours of the best at a third of the budget, the best 2 of them at a
      // full budget against the keep rule.
      std::vector<std::pair<double, std::map<std::string, std::string>>> rung;
      for (int i = 0; i < 4 && !done(); i++) {
        auto s = S.best_set;
        const SpaceDim& d = space[rng.pick(space.size())];
        s[d.key] = sample_dim(d, rng);
        FRONTIER_RETURN_IF_ERROR(evaluate(s, "screen: " + describe(s), "screen", o.budget / 3));
        const auto& e = S.ledger.back();
        if (e["status"] == "screen") rung.push_back({e["val_bpb"].get<double>(), s});
      }
      std::sort(rung.begin(), rung.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      for (size_t i = 0; i < std::min<size_t>(2, rung.size()) && !done(); i++)
        FRONTIER_RETURN_IF_ERROR(evaluate(rung[i].second, "promoted: " + describe(rung[i].second), "trial", o.budget));
    } else {
      json st = {{"best_val_bpb", S.best}, {"best_set", S.best_set}, {"spread", S.spread},
                 {"keep_threshold", S.threshold()}, {"base", base.to_toml()}, {"space", json::array()},
                 {"ledger", S.ledger}};
      for (const auto& d : space)
        st["space"].push_back({{"key", d.key}, {"choices", d.choices}, {"min", d.lo}, {"max", d.hi}, {"log", d.log},
                               {"range", d.is_range}});
      Status s = external_proposal(o.proposer, st, o.out_dir, &set, &desc);
      if (!s.ok()) return s;
      FRONTIER_RETURN_IF_ERROR(evaluate(with_best(set), desc, "trial", o.budget));
    }
  }

  // 3. Summary: what helped most.
  std::vector<const json*> kept;
  for (const auto& e : S.ledger)
    if (e["status"] == "keep" && e.contains("improvement")) kept.push_back(&e);
  std::sort(kept.begin(), kept.end(), [](const json* a, const json* b) {
    return (*a)["improvement"].get<double>() > (*b)["improvement"].get<double>();
  });
  int crashes = 0, n_base = 0;
  for (const auto& e : S.ledger) crashes += e["status"] == "crash", n_base += e.value("phase", "") == "baseline";
  std::printf("---\nresearch: %zu trials (%d baseline, %zu kept, %d crashed); best val_bpb %.6f (noise floor %.6f)\n",
              S.ledger.size(), n_base, kept.size(), crashes, S.best, S.threshold());
  std::printf("best config: %s\n", describe(S.best_set).c_str());
  for (const json* e : kept)
    std::printf("  helped: -%.6f  %s\n", (*e)["improvement"].get<double>(), (*e)["description"].get<std::string>().c_str());
  std::printf("ledger: %s/results.tsv, %s/ledger.jsonl; chart: %s/progress.svg\n", o.out_dir.c_str(),
              o.out_dir.c_str(), o.out_dir.c_str());
  return ok_status();
}

}  // namespace frontier

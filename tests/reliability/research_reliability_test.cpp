// `frontier research` under faults and bad input (issue 17): one loop per session (DirLock), a trial dies with its
// loop (SIGKILL) or is stopped with it (SIGTERM) and is then recorded as interrupted, no session path or data is
// ever run as shell code (proposer, git mode), a stuck or babbling proposer is a failed proposal, numeric options
// are checked, and the ledger and a trial's summary are read as untrusted data.
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <thread>

#include "../train_fixture.h"
#include "reliability_util.h"
#include "research/research.h"
#include "util/file.h"
#include "util/file_lock.h"

namespace frontier::testing {

namespace {

using json = nlohmann::json;

// A session's inputs: the tiny model of tests/research_test.cpp (a trial trains in about a second per budget
// second) and a one-key space.
struct Inputs {
  std::string dir, base, space;
  Inputs() {
    dir = make_temp_dir("research_rel");
    base = dir + "/base.toml";
    space = dir + "/space.toml";
    write_text(base, "[model]\nvocab_size = 400\ndepth = 1\ndim = 64\nhead_dim = 32\nseq_len = 32\n[train]\n"
                     "data = \"" + dataset() + "/data\"\nmicro_batch = 4\npeak_gflops = 100.0\n");
    write_text(space, "[\"optim.matrix_lr\"]\nmin = 0.005\nmax = 0.05\nlog = true\n");
  }
  ~Inputs() { std::filesystem::remove_all(dir); }
  std::vector<std::string> argv(const std::string& out, const std::vector<std::string>& extra) const {
    std::vector<std::string> a = {frontier_bin(), "research", "--base", base, "--space", space, "--out", out};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
};

// Starts argv in the background (its own process group, stdout and stderr to files); wait_exit collects it.
pid_t spawn(const std::vector<std::string>& argv, const std::string& log_prefix) {
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    int out = open((log_prefix + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open((log_prefix + ".err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int in = open("/dev/null", O_RDONLY);
    dup2(in, 0);
    dup2(out, 1);
    dup2(err, 2);
    std::vector<char*> av;
    for (const auto& a : argv) av.push_back(const_cast<char*>(a.c_str()));
    av.push_back(nullptr);
    execv(av[0], av.data());
    _exit(127);
  }
  return pid;
}

std::string slurp(const std::string& path) {
  std::string s;
  read_file(path, &s);
  return s;
}

Outcome wait_exit(pid_t pid, double timeout_s, const std::string& log_prefix) {
  Outcome o;
  auto t0 = std::chrono::steady_clock::now();
  int st = 0;
  while (waitpid(pid, &st, WNOHANG) == 0) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > timeout_s) {
      o.timed_out = true;
      kill(-pid, SIGKILL);
      waitpid(pid, &st, 0);
      break;
    }
    usleep(20000);
  }
  if (WIFEXITED(st)) o.rc = WEXITSTATUS(st);
  if (WIFSIGNALED(st)) o.signal = WTERMSIG(st);
  o.out = slurp(log_prefix + ".out");
  o.err = slurp(log_prefix + ".err");
  return o;
}

// /proc/PID/stat: state, parent and process group (state 0 when there is no such process).
struct ProcStat {
  char state = 0;
  pid_t ppid = 0, pgrp = 0;
};
ProcStat proc_stat(pid_t pid) {
  ProcStat s;
  std::string text = slurp("/proc/" + std::to_string(pid) + "/stat");
  size_t p = text.rfind(')');
  if (p == std::string::npos) return s;
  std::istringstream in(text.substr(p + 2));
  in >> s.state >> s.ppid >> s.pgrp;
  return s;
}

std::vector<pid_t> all_pids() {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  while (dirent* e = d ? readdir(d) : nullptr)
    if (e->d_name[0] >= '1' && e->d_name[0] <= '9') out.push_back(std::atoi(e->d_name));
  if (d) closedir(d);
  return out;
}

std::vector<std::string> cmdline(pid_t pid) {
  std::string s = slurp("/proc/" + std::to_string(pid) + "/cmdline");
  std::vector<std::string> out;
  size_t a = 0, b;
  while ((b = s.find('\0', a)) != std::string::npos) out.push_back(s.substr(a, b - a)), a = b + 1;
  return out;
}

// A live (not zombie) process in process group pgrp.
bool group_alive(pid_t pgrp) {
  for (pid_t p : all_pids()) {
    ProcStat s = proc_stat(p);
    if (s.pgrp == pgrp && s.state != 'Z' && s.state != 'X' && s.state != 0) return true;
  }
  return false;
}

// The loop's trial: its child that has become `frontier train`, or 0 after timeout_s.
pid_t wait_for_trial(pid_t loop, double timeout_s) {
  pid_t trial = 0;
  wait_until([&] {
    for (pid_t p : all_pids())
      if (proc_stat(p).ppid == loop) {
        auto c = cmdline(p);
        if (c.size() > 1 && c[1] == "train") trial = p;
      }
    return trial != 0;
  }, timeout_s);
  return trial;
}

std::vector<json> ledger_of(const std::string& out) {
  std::vector<json> L;
  Status s = read_ledger(out + "/ledger.jsonl", &L);
  EXPECT_TRUE(s.ok()) << s.message();
  return L;
}

// Any file or directory named PWNED under dir.
bool pwned_under(const std::string& dir) {
  for (auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.path().filename() == "PWNED") return true;
  return false;
}

}  // namespace

TEST(ResearchReliability, SecondLoopOnALockedSessionIsRefused) {
  Inputs in;
  const std::string out = in.dir + "/s";
  // Loop A waits in its proposer, holding the session.
  pid_t a = spawn(in.argv(out, {"--repeats", "0", "--trials", "0", "--proposer-timeout", "60", "--proposer",
                                "echo $$ > \"$FRONTIER_SESSION/proposer_pid\"; sleep 30; true"}),
                  in.dir + "/a");
  ASSERT_TRUE(wait_until([&] { return !slurp(out + "/proposer_pid").empty(); }, 30)) << slurp(in.dir + "/a.err");
  const pid_t proposer = std::atoi(slurp(out + "/proposer_pid").c_str());
  EXPECT_EQ(dir_lock_holder(out), a);
  DirSnapshot before = DirSnapshot::of(out);
  Outcome b = run_argv(in.argv(out, {"--repeats", "0", "--trials", "1", "--proposer", "random"}), 60);
  EXPECT_CLEAN_ERROR(b, "in use by another frontier process (pid " + std::to_string(a) + ")");
  EXPECT_CLEAN_ERROR(b, "--out");
  EXPECT_TRUE(before.lost_or_changed(DirSnapshot::of(out)).empty());
  kill(a, SIGTERM);  // A stops its proposer and exits cleanly
  Outcome ao = wait_exit(a, 30, in.dir + "/a");
  EXPECT_CLEAN_ERROR(ao, "stopped by SIGTERM");
  EXPECT_FALSE(group_alive(proposer)) << "the proposer's shell and its sleep must be stopped with the loop";
}

TEST(ResearchReliability, SigkillOfTheLoopKillsItsTrial) {
  Inputs in;
  const std::string out = in.dir + "/s";
  pid_t a = spawn(in.argv(out, {"--budget", "60", "--repeats", "1", "--trials", "1", "--proposer", "random"}),
                  in.dir + "/a");
  pid_t trial = wait_for_trial(a, 30);
  ASSERT_GT(trial, 0) << slurp(in.dir + "/a.err");
  EXPECT_EQ(proc_stat(trial).pgrp, trial) << "the trial must lead its own process group";
  kill(a, SIGKILL);
  waitpid(a, nullptr, 0);
  EXPECT_TRUE(wait_until([&] { return !group_alive(trial); }, 10))
      << "the trial (pid " << trial << ") outlived its SIGKILLed loop";
  auto L = ledger_of(out);
  ASSERT_EQ(L.size(), 1u);
  EXPECT_EQ(L[0]["status"], "running");  // the trace a restarted loop records as interrupted
}

TEST(ResearchReliability, ResumeRecordsAnUnfinishedTrialAsInterrupted) {
  Inputs in;
  const std::string out = in.dir + "/s";
  pid_t a = spawn(in.argv(out, {"--budget", "60", "--repeats", "1", "--trials", "1", "--proposer", "random"}),
                  in.dir + "/a");
  ASSERT_GT(wait_for_trial(a, 30), 0) << slurp(in.dir + "/a.err");
  kill(a, SIGKILL);
  waitpid(a, nullptr, 0);
  // The restarted loop records trial 0 as interrupted and runs the baseline again as trial 1 (a short one).
  Outcome r = run_argv(in.argv(out, {"--budget", "1", "--repeats", "1", "--trials", "2", "--proposer", "random"}),
                       120);
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("trial 000 was unfinished (its loop was stopped); recorded as interrupted"), std::string::npos)
      << r.out;
  auto L = ledger_of(out);
  ASSERT_EQ(L.size(), 2u);
  EXPECT_EQ(L[0]["status"], "interrupted");
  EXPECT_NE(L[0]["error"].get<std::string>().find("stopped during this trial"), std::string::npos) << L[0].dump();
  EXPECT_EQ(L[1]["phase"], "baseline");
  EXPECT_EQ(L[1]["status"], "keep") << L[1].dump();
  EXPECT_EQ(L[1]["dir"], out + "/trials/001");  // a trial directory is never reused
  EXPECT_TRUE(std::filesystem::exists(out + "/trials/000/train.log"));
  std::string tsv = slurp(out + "/results.tsv");
  EXPECT_NE(tsv.find("000\t0.000000\t0.00\tinterrupted\t"), std::string::npos) << tsv;
}

TEST(ResearchReliability, SigtermStopsTheTrialAndRecordsItInterrupted) {
  Inputs in;
  const std::string out = in.dir + "/s";
  pid_t a = spawn(in.argv(out, {"--budget", "60", "--repeats", "1", "--trials", "3", "--proposer", "random"}),
                  in.dir + "/a");
  pid_t trial = wait_for_trial(a, 30);
  ASSERT_GT(trial, 0) << slurp(in.dir + "/a.err");
  kill(a, SIGTERM);
  Outcome o = wait_exit(a, 30, in.dir + "/a");
  EXPECT_CLEAN_ERROR(o, "stopped by SIGTERM; trial 0 recorded as interrupted; run the same command to resume");
  EXPECT_NE(o.out.find("research: 1 trials (1 baseline, 0 kept, 0 crashed, 1 interrupted)"), std::string::npos)
      << o.out;
  EXPECT_FALSE(group_alive(trial));
  auto L = ledger_of(out);
  ASSERT_EQ(L.size(), 1u);
  EXPECT_EQ(L[0]["status"], "interrupted");
  EXPECT_NE(L[0]["error"].get<std::string>().find("SIGTERM"), std::string::npos) << L[0].dump();
}

TEST(ResearchReliability, SessionPathWithShellMetacharactersRunsNoCode) {
  Inputs in;
  const std::string out = in.dir + "/s'; touch PWNED; '$(touch PWNED)`touch PWNED`";
  // The proposer sees the session only through its environment; a frozen key makes a quick "rejected" proposal.
  const std::string proposer = "test -f \"$FRONTIER_PROPOSER_INPUT\" && test -d \"$FRONTIER_SESSION\" && "
                               "echo '{\"set\": {\"eval.tokens\": 64}, \"description\": \"frozen key\"}'";
  Outcome o = run_argv(in.argv(out, {"--repeats", "0", "--trials", "2", "--proposer", proposer}), 60, {}, in.dir);
  ASSERT_EQ(o.rc, 0) << o.out << o.err;
  auto L = ledger_of(out);
  ASSERT_EQ(L.size(), 2u);
  for (const auto& e : L) {
    EXPECT_EQ(e["status"], "rejected") << e.dump();
    EXPECT_NE(e["error"].get<std::string>().find("frozen"), std::string::npos) << e.dump();
  }
  EXPECT_FALSE(pwned_under(in.dir));
}

TEST(ResearchReliability, GitModeRunsNoShell) {
  Inputs in;
  const std::string weird = "'; touch PWNED; '$(touch PWNED)`touch PWNED`";
  const std::string repo = in.dir + "/repo" + weird, out = in.dir + "/s" + weird;
  std::filesystem::create_directories(repo);
  ASSERT_EQ(run_argv({"/usr/bin/git", "init", "-q", repo}, 30).rc, 0);
  // No baseline: the first trial is kept, and committed.
  Outcome o = run_argv(in.argv(out, {"--budget", "1", "--repeats", "0", "--trials", "1", "--git", repo,
                                     "--proposer", "echo '{\"set\": {\"optim.matrix_lr\": 0.03}}'"}),
                       120, {}, in.dir);
  ASSERT_EQ(o.rc, 0) << o.out << o.err;
  auto L = ledger_of(out);
  ASSERT_EQ(L.size(), 1u);
  EXPECT_EQ(L[0]["status"], "keep") << L[0].dump();
  Outcome log = run_argv({"/usr/bin/git", "-C", repo, "log", "--all", "--format=%D|%s"}, 30);
  EXPECT_NE(log.out.find("frontier/research-s___touch_PWNED_____touch_PWNED__touch_PWNED_|frontier research: "
                         "val_bpb"), std::string::npos) << log.out << log.err;
  // The best config is committed on the session's branch, never written into the user's checkout.
  EXPECT_FALSE(std::filesystem::exists(repo + "/frontier_best.toml"));
  Outcome best = run_argv({"/usr/bin/git", "-C", repo, "show",
                           "frontier/research-s___touch_PWNED_____touch_PWNED__touch_PWNED_:frontier_best.toml"}, 30);
  EXPECT_EQ(best.rc, 0) << best.out << best.err;
  EXPECT_FALSE(pwned_under(in.dir));
}

TEST(ResearchReliability, StuckProposerIsStoppedByTheTimeout) {
  Inputs in;
  const std::string out = in.dir + "/s";
  auto t0 = std::chrono::steady_clock::now();
  // `; true` keeps the shell waiting on sleep, so the timeout must kill a group of two.
  Outcome o = run_argv(in.argv(out, {"--repeats", "0", "--trials", "0", "--proposer-timeout", "1", "--proposer",
                                     "sleep 987; true"}), 60);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_CLEAN_ERROR(o, "proposer 'sleep 987; true' timed out after 1 s (its process group was killed)");
  EXPECT_CLEAN_ERROR(o, "3 failed proposals in a row");
  EXPECT_LT(secs, 20);
  auto L = ledger_of(out);  // each failure is recorded, and the loop asked again
  ASSERT_EQ(L.size(), 3u);
  for (const auto& e : L) {
    EXPECT_EQ(e["status"], "rejected");
    EXPECT_EQ(e["phase"], "proposal");
    EXPECT_NE(e["error"].get<std::string>().find("timed out after 1 s"), std::string::npos) << e.dump();
  }
  for (pid_t p : all_pids()) {
    auto c = cmdline(p);
    ProcStat s = proc_stat(p);
    EXPECT_FALSE(c.size() == 2 && c[0] == "sleep" && c[1] == "987" && s.state != 'Z') << "pid " << p << " survived";
  }
}

TEST(ResearchReliability, GarbageProposerOutputIsAFailedProposal) {
  Inputs in;
  const std::string out = in.dir + "/s";
  Outcome o = run_argv(in.argv(out, {"--repeats", "0", "--trials", "0", "--proposer",
                                     "printf 'not json \\377\\n{\"set\": [1]}'"}), 60);
  EXPECT_CLEAN_ERROR(o, "must print one JSON object {\"set\": {\"key\": value, ...}, \"description\": \"...\"}; "
                        "got: not json ?");
  EXPECT_EQ(ledger_of(out).size(), 3u);
  // Valid JSON of the wrong shapes: a failed proposal too, never an exception.
  for (const char* bad : {"{\"set\": {\"optim.matrix_lr\": [1]}}", "{\"set\": {}, \"description\": 5}",
                          "{\"set\": null}", "[1, 2]"}) {
    std::filesystem::remove_all(out);
    Outcome b = run_argv(in.argv(out, {"--repeats", "0", "--trials", "0", "--proposer",
                                       std::string("echo '") + bad + "'"}), 60);
    EXPECT_CLEAN_ERROR(b, "3 failed proposals in a row");
  }
}

TEST(ResearchReliability, HugeProposerOutputIsCutAtTheLimit) {
  Inputs in;
  const std::string out = in.dir + "/s";
  auto t0 = std::chrono::steady_clock::now();
  Outcome o = run_argv(in.argv(out, {"--repeats", "0", "--trials", "0", "--proposer",
                                     "head -c 10000000 /dev/zero | tr '\\000' x"}), 60);
  EXPECT_CLEAN_ERROR(o, "printed more than 1048576 bytes on stdout (the limit)");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20);
  EXPECT_LT(std::filesystem::file_size(out + "/ledger.jsonl"), 10000u) << "the output must not reach the ledger";
}

TEST(ResearchReliability, BadNumericOptionsAreOneLineErrors) {
  Inputs in;
  const std::string out = in.dir + "/s";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--budget", "-1"},   {"--budget", "nan"},    {"--budget", "inf"},    {"--budget", "0"},
      {"--hours", "-1"},    {"--hours", "nan"},     {"--trials", "-1"},     {"--repeats", "-2"},
      {"--min-delta", "nan"}, {"--min-delta", "-0.1"}, {"--proposer-timeout", "0"}, {"--proposer-timeout", "nan"}};
  for (const auto& [opt, v] : cases) {
    // CLI11 refuses these ("--budget: Value nan is not a finite number > 0"), as the app's one-line error.
    Outcome o = run_argv(in.argv(out, {opt, v, "--proposer", "random"}), 60);
    SCOPED_TRACE(opt + " " + v);
    EXPECT_CLEAN_ERROR(o, opt + ": Value " + v + " ");
  }
  EXPECT_FALSE(std::filesystem::exists(out)) << "nothing may be created before the options are checked";
  // The library checks the same when called directly: a one-line error naming the option.
  auto message = [&](auto set) {
    ResearchOptions ro;
    ro.out_dir = out;
    set(ro);
    return run_research(ro).message();
  };
  EXPECT_EQ(message([](ResearchOptions& r) { r.budget = INFINITY; }),
            "--budget must be a finite number of seconds > 0 (got inf)");
  EXPECT_EQ(message([](ResearchOptions& r) { r.budget = NAN; }),
            "--budget must be a finite number of seconds > 0 (got nan)");
  EXPECT_EQ(message([](ResearchOptions& r) { r.hours = -1; }),
            "--hours must be a finite number >= 0 (0 = no limit) (got -1)");
  EXPECT_EQ(message([](ResearchOptions& r) { r.max_trials = -3; }), "--trials must be an integer >= 0 (0 = no limit) "
                                                                     "(got -3)");
  EXPECT_EQ(message([](ResearchOptions& r) { r.repeats = -1; }), "--repeats must be an integer >= 0 (got -1)");
  EXPECT_EQ(message([](ResearchOptions& r) { r.min_delta = NAN; }), "--min-delta must be a finite number >= 0 "
                                                                     "(got nan)");
  EXPECT_EQ(message([](ResearchOptions& r) { r.proposer_timeout = -INFINITY; }),
            "--proposer-timeout must be a finite number of seconds > 0 (got -inf)");
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(ResearchReliability, NonFiniteSpaceRangesAreOneLineErrors) {
  Inputs in;
  for (const char* range : {"min = nan\nmax = 0.05\n", "min = 0.005\nmax = inf\n", "min = -inf\nmax = 0.05\n"}) {
    write_text(in.space, std::string("[\"optim.matrix_lr\"]\n") + range);
    Outcome o = run_argv(in.argv(in.dir + "/s", {"--proposer", "random"}), 60);
    EXPECT_CLEAN_ERROR(o, "[\"optim.matrix_lr\"]: min and max must be finite numbers");
  }
  write_text(in.space, "[\"optim.matrix_lr\"]\nmin = \"a\"\nmax = 0.05\n");
  EXPECT_CLEAN_ERROR(run_argv(in.argv(in.dir + "/s", {"--proposer", "random"}), 60), "min and max must be numbers");
}

// A trial's output is data: a malformed summary is a crash with a reason (the old parser threw on "key:"), and a
// long log is read from its tail. The `frontier train` of these trials is a script.
TEST(ResearchReliability, MalformedTrialSummaryIsACrashWithAReason) {
  Inputs in;
  const std::string fake = in.dir + "/fake_train.sh";
  write_text(fake, "#!/bin/sh\nprintf -- '---\\nval_bpb: nan\\npeak_mem_mb:\\n: x\\nbad key: 1\\n'\n");
  std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
  ResearchOptions ro;
  ro.base = in.base;
  ro.space = in.space;
  ro.out_dir = in.dir + "/s";
  ro.budget = 1;
  ro.repeats = 1;
  ro.frontier_bin = fake;
  Status s = run_research(ro);
  EXPECT_NE(s.message().find("the base config crashed (the summary in " + ro.out_dir +
                             "/trials/000/train.log has no valid val_bpb)"), std::string::npos) << s.message();
  auto L = ledger_of(ro.out_dir);
  ASSERT_EQ(L.size(), 1u);
  EXPECT_EQ(L[0]["status"], "crash");
  EXPECT_EQ(L[0]["summary"]["val_bpb"], "nan") << L[0].dump();
  EXPECT_EQ(L[0]["summary"]["peak_mem_mb"], "");

  // 8 MB of log (invalid UTF-8 included) before a good summary: read from the tail, kept in the ledger as JSON.
  write_text(fake, "#!/bin/sh\nhead -c 8000000 /dev/zero | tr '\\000' '\\377'\n"
                   "printf -- '\\n---\\nval_bpb: 2.5\\npeak_mem_mb: 512\\nnote: \\377\\n'\n");
  std::filesystem::remove_all(ro.out_dir);
  ro.max_trials = 1;
  s = run_research(ro);
  ASSERT_TRUE(s.ok()) << s.message();
  L = ledger_of(ro.out_dir);
  ASSERT_EQ(L.size(), 1u);
  EXPECT_EQ(L[0]["status"], "keep");
  EXPECT_EQ(L[0]["val_bpb"], 2.5);
  EXPECT_EQ(L[0]["memory_gb"], 0.5);
}

TEST(ReadLedger, MalformedFilesAreErrorsNamingTheLine) {
  std::string d = make_temp_dir("ledger");
  const std::string p = d + "/ledger.jsonl";
  const std::string good0 = R"({"id": 0, "status": "keep", "phase": "baseline", "val_bpb": 2.5, "description": "b"})";
  const std::string good1 = R"({"id": 1, "status": "rejected", "description": "x", "set": {"a": "1"}})";
  std::vector<json> L;
  write_text(p, good0 + "\n\n" + good1 + "\n");  // blank lines are ignored
  ASSERT_TRUE(read_ledger(p, &L).ok());
  EXPECT_EQ(L.size(), 2u);
  write_text(p, "");
  ASSERT_TRUE(read_ledger(p, &L).ok());
  EXPECT_TRUE(L.empty());

  const std::vector<std::pair<std::string, std::string>> cases = {
      {good0 + "\n{\"id\": 1, \"status\": \"keep\"", ":2: not valid JSON"},
      {std::string("\xff\xfe\x00garbage", 10), ":1: not valid JSON"},
      {"[1, 2]", ":1: not a JSON object"},
      {good1, ":1: \"id\" must be 0"},
      {good0 + "\n" + good0, ":2: \"id\" must be 1"},
      {R"({"id": 0, "status": "won", "description": "x"})", ":1: \"status\" must be one of"},
      {R"({"id": 0, "status": "keep", "description": 7, "val_bpb": 1})", ":1: \"description\" must be a string"},
      {R"({"id": 0, "status": "keep", "description": "x"})", ":1: a \"keep\" entry needs \"val_bpb\""},
      {R"({"id": 0, "status": "keep", "description": "x", "val_bpb": "2"})", ":1: \"val_bpb\" must be a finite"},
      {R"({"id": 0, "status": "keep", "description": "x", "val_bpb": 1e999})", ":1: not valid JSON"},  // overflow
      {R"({"id": 0, "status": "keep", "description": "x", "val_bpb": 1, "set": {"a": 1}})", ":1: every value in"},
      {R"({"id": 0, "status": "keep", "description": "x", "val_bpb": 1, "phase": []})", ":1: \"phase\" must be"},
      {R"({"id": 0, "status": "crash", "description": "x", "summary": 3})", ":1: \"summary\" must be an object"},
      {R"({"id": 0, "status": "crash", "description": "x", "summary": )" + std::string(100000, '[') +
           std::string(100000, ']') + "}",
       ":1: nested deeper than 32 levels"},
      {R"({"id": 18446744073709551615, "status": "crash", "description": "x"})", ":1: \"id\" must be 0"},
  };
  for (const auto& [text, want] : cases) {
    SCOPED_TRACE(text.substr(0, 100));
    write_text(p, text);
    Status s = read_ledger(p, &L);
    ASSERT_FALSE(s.ok()) << text.substr(0, 100);
    EXPECT_EQ(s.message().rfind(p, 0), 0u) << s.message();
    EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
    EXPECT_EQ(s.message().find('\n'), std::string::npos);
  }
  EXPECT_FALSE(read_ledger(d + "/missing.jsonl", &L).ok());

  // A session whose ledger is corrupt: the loop refuses it with that line, and changes nothing.
  write_text(p, good0 + "\n{oops\n");
  std::string base = d + "/base.toml", space = d + "/space.toml";
  write_text(base, "[model]\ndepth = 1\n");
  write_text(space, "[\"optim.matrix_lr\"]\nmin = 0.005\nmax = 0.05\n");
  DirSnapshot before = DirSnapshot::of(d);
  Outcome o = run_argv({frontier_bin(), "research", "--base", base, "--space", space, "--out", d}, 60);
  EXPECT_CLEAN_ERROR(o, p + ":2: not valid JSON; repair that line, or move the ledger away to start over");
  EXPECT_TRUE(before.lost_or_changed(DirSnapshot::of(d), {".lock"}).empty());
  std::filesystem::remove_all(d);
}

}  // namespace frontier::testing

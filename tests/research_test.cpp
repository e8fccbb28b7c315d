// `frontier research` end to end on the tiny test dataset: baseline repeats, an external proposer whose
// proposals include a crashing config and a frozen key, the ledgers and chart; then an interruption of the loop
// itself (SIGKILL mid-session) and a resume that completes the session with contiguous trial ids (the trial the
// kill cut short is recorded as interrupted: tests/reliability/research_reliability_test.cpp).
#include <signal.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "research/research.h"
#include "train_fixture.h"
#include "util/file.h"

using namespace frontier;
using namespace frontier::testing;

namespace {

// One thread per trial: under a parallel test suite, a 2-thread trial's OpenMP barriers spin while the other
// thread waits for a core, and the 1-ms step of this model timed 0.44 s six times in a row (CI, 2026-12-06), far
// past the 100x that train allows between research's shared probe and its own timing of the step.
std::string base_toml(const std::string& dir) {
  std::string p = dir + "/base.toml";
  write_text(p, "[model]\nvocab_size = 400\ndepth = 1\ndim = 64\nhead_dim = 32\nseq_len = 32\n[train]\ndata = \"" +
                    dataset() + "/data\"\nmicro_batch = 4\npeak_gflops = 100.0\nthreads = 1\n");
  return p;
}

std::vector<nlohmann::json> read_ledger(const std::string& dir) {
  std::string text;
  std::vector<nlohmann::json> out;
  if (!read_file(dir + "/ledger.jsonl", &text).ok()) return out;
  size_t a = 0, b;
  while ((b = text.find('\n', a)) != std::string::npos) {
    out.push_back(nlohmann::json::parse(text.substr(a, b - a)));
    a = b + 1;
  }
  return out;
}

}  // namespace

TEST(Research, SpaceValidation) {
  std::string d = make_temp_dir("space");
  std::vector<SpaceDim> sp;
  write_text(d + "/a.toml", "[\"optim.matrix_lr\"]\nmin = 0.01\nmax = 0.1\nlog = true\n[\"model.depth\"]\nchoices = [1, 2]\n");
  ASSERT_TRUE(load_space(d + "/a.toml", &sp).ok());
  EXPECT_EQ(sp.size(), 2u);
  write_text(d + "/b.toml", "[\"optim.matrx_lr\"]\nchoices = [0.1]\n");
  Status s = load_space(d + "/b.toml", &sp);
  EXPECT_NE(s.message().find("did you mean 'optim.matrix_lr'"), std::string::npos) << s.message();
  write_text(d + "/c.toml", "[\"eval.tokens\"]\nchoices = [100]\n");
  s = load_space(d + "/c.toml", &sp);
  EXPECT_NE(s.message().find("frozen"), std::string::npos) << s.message();
  write_text(d + "/e.toml", "[\"model.depth\"]\nchoices = [\"deep\"]\n");
  EXPECT_FALSE(load_space(d + "/e.toml", &sp).ok());
  std::filesystem::remove_all(d);
}

TEST(Research, SessionSurvivesCrashAndRejectsFrozenKeys) {
  std::string d = make_temp_dir("research");
  std::string base = base_toml(d);
  write_text(d + "/space.toml", "[\"optim.matrix_lr\"]\nmin = 0.005\nmax = 0.05\nlog = true\n");
  // The proposer: a crash (n_kv_head does not divide n_head), a frozen key, then an ordinary change.
  write_text(d + "/agent.py",
             "import json, sys\nst = json.load(sys.stdin)\nn = len(st['ledger'])\n"
             "props = [{'set': {'model.n_kv_head': 3}, 'description': 'bad heads'},\n"
             "         {'set': {'eval.tokens': 64}, 'description': 'cheat'},\n"
             "         {'set': {'optim.matrix_lr': 0.03}, 'description': 'matrix lr 0.03'}]\n"
             "print(json.dumps(props[(n - 2) % 3]))\n");
  std::string out = d + "/s";
  auto r = run_cmd(frontier_bin() + " research --base " + base + " --space " + d + "/space.toml --budget 1 "
                   "--trials 5 --repeats 2 --proposer '/usr/bin/python3 " + d + "/agent.py' --out " + out);
  ASSERT_EQ(r.rc, 0) << r.out;
  auto L = read_ledger(out);
  ASSERT_EQ(L.size(), 5u) << r.out;
  EXPECT_EQ(L[0]["phase"], "baseline");
  EXPECT_EQ(L[1]["phase"], "baseline");
  EXPECT_EQ(L[2]["status"], "crash") << L[2].dump();
  EXPECT_NE(L[2]["error"].get<std::string>().find("n_kv_head"), std::string::npos) << L[2].dump();
  EXPECT_EQ(L[3]["status"], "rejected") << L[3].dump();
  EXPECT_TRUE(L[4]["status"] == "keep" || L[4]["status"] == "discard") << L[4].dump();
  EXPECT_FALSE(std::filesystem::exists(out + "/trials/003")) << "a rejected proposal must not run";
  std::string tsv, svg;
  ASSERT_TRUE(read_file(out + "/results.tsv", &tsv).ok());
  EXPECT_EQ(tsv.rfind("id\tval_bpb\tmemory_gb\tstatus\tdescription\n", 0), 0u);
  EXPECT_EQ(std::count(tsv.begin(), tsv.end(), '\n'), 6);
  ASSERT_TRUE(read_file(out + "/progress.svg", &svg).ok());
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(r.out.find("keep rule: val_bpb < best - "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("research: 5 trials"), std::string::npos) << r.out;
  std::filesystem::remove_all(d);
}

TEST(Research, InterruptedSessionResumes) {
  std::string d = make_temp_dir("research_kill");
  std::string base = base_toml(d);
  write_text(d + "/space.toml", "[\"optim.matrix_lr\"]\nmin = 0.005\nmax = 0.05\nlog = true\n"
                                "[\"train.warmdown_ratio\"]\nchoices = [0.3, 0.5]\n");
  std::string out = d + "/s";
  std::string cmd = frontier_bin() + " research --base " + base + " --space " + d + "/space.toml --budget 1 "
                    "--trials 6 --repeats 2 --proposer random --out " + out;
  pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", ("exec " + cmd + " > " + d + "/first.log 2>&1").c_str(), nullptr);
    _exit(127);
  }
  auto t0 = std::chrono::steady_clock::now();
  while (read_ledger(out).size() < 3 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120))
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  kill(pid, SIGKILL);  // the loop dies mid-session (its current trial dies with it; the resume records it)
  int st;
  waitpid(pid, &st, 0);
  size_t before = read_ledger(out).size();
  ASSERT_GE(before, 3u);
  ASSERT_LT(before, 6u) << "the session finished before the kill; the test needs a longer session";
  auto r = run_cmd(cmd);
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("resuming"), std::string::npos) << r.out;
  auto L = read_ledger(out);
  ASSERT_EQ(L.size(), 6u);
  for (size_t i = 0; i < L.size(); i++) EXPECT_EQ(L[i]["id"].get<int>(), static_cast<int>(i));
  std::filesystem::remove_all(d);
}

// Git mode commits the kept config on its own branch and leaves the user's repository as it was: the current branch,
// the staged work (not swept into research's commit) and the working tree.
TEST(Research, GitModeLeavesTheUsersCheckoutAlone) {
  std::string d = make_temp_dir("research_git");
  std::string base = base_toml(d);
  write_text(d + "/space.toml", "[\"optim.matrix_lr\"]\nmin = 0.005\nmax = 0.05\nlog = true\n");
  const std::string repo = d + "/repo", git = "git -C " + repo + " -c user.name=u -c user.email=u@u ";
  auto sh = [](const std::string& cmd) {
    RunResult r = run_cmd(cmd);
    EXPECT_EQ(r.rc, 0) << cmd << "\n" << r.out;
    while (!r.out.empty() && r.out.back() == '\n') r.out.pop_back();
    return r.out;
  };
  sh("git init -q -b mywork " + repo);
  write_text(repo + "/notes.txt", "first\n");
  sh(git + "add notes.txt && " + git + "commit -q -m first");
  const std::string head = sh(git + "rev-parse HEAD");
  write_text(repo + "/notes.txt", "first\nstaged, not ready\n");
  sh(git + "add notes.txt");  // the user's staged work
  write_text(repo + "/scratch.txt", "untracked\n");

  RunResult r = run_cmd(frontier_bin() + " research --base " + base + " --space " + d + "/space.toml --out " + d +
                        "/s --budget 1 --repeats 0 --trials 1 --git " + repo +
                        " --proposer \"echo '{\\\"set\\\": {\\\"optim.matrix_lr\\\": 0.03}}'\"");
  ASSERT_EQ(r.rc, 0) << r.out;
  auto L = read_ledger(d + "/s");
  ASSERT_EQ(L.size(), 1u);
  ASSERT_EQ(L[0]["status"], "keep") << L[0].dump();
  // The user's side: same branch, same HEAD, the staged change still staged, nothing new in the working tree.
  EXPECT_EQ(sh(git + "symbolic-ref --short HEAD"), "mywork");
  EXPECT_EQ(sh(git + "rev-parse HEAD"), head);
  EXPECT_EQ(sh(git + "diff --cached --name-only"), "notes.txt");
  EXPECT_EQ(sh(git + "status --porcelain"), "M  notes.txt\n?? scratch.txt");
  EXPECT_FALSE(std::filesystem::exists(repo + "/frontier_best.toml"));
  // Research's side: one commit on its branch, on top of the user's HEAD, with the config and without the staged work.
  const std::string branch = "frontier/research-s";
  EXPECT_EQ(sh(git + "rev-parse " + branch + "^"), head);
  EXPECT_NE(sh(git + "show " + branch + ":frontier_best.toml").find("matrix_lr = 0.03"), std::string::npos);
  EXPECT_EQ(sh(git + "show " + branch + ":notes.txt"), "first");
  EXPECT_EQ(sh(git + "diff --name-only " + head + " " + branch), "frontier_best.toml");
  std::filesystem::remove_all(d);
}

// Hostile forks (issue 33): the scorer loads nothing of a team's in its own process, so a fork that crashes, hangs or
// exhausts the evaluation is that submission's failure and the next submission is still scored; and what a team's
// server prints (here: the hidden text it was asked about) never reaches the record's public fields or the page.
// The forks are the stand-in of tests/arena/fake_fork/ (built by the scorer in about a second each); the honest
// submission after them is a config for the organiser's build. One `arena score` for all of it, about 80 s (the hang is
// the evaluation's time limit).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>

#include "../train_fixture.h"
#include "arena_util.h"
#include "arena/record.h"
#include "util/file.h"

namespace frontier::testing {
namespace {

namespace fs = std::filesystem;

// The hidden text: words no training document has, so any of it on a public page is a leak.
const char* kHidden[] = {"quixotic zephyr marmalade obsidian quixotic zephyr lanterns murmur beneath obsidian skies",
                         "marmalade lanterns drift over quixotic harbours while zephyr murmurs obsidian secrets"};

std::string g_hostile_dir;  // removed when the test program exits, unless FRONTIER_ARENA_KEEP is set

struct RemoveHostile : ::testing::Environment {
  void TearDown() override {
    if (!g_hostile_dir.empty() && !std::getenv("FRONTIER_ARENA_KEEP")) fs::remove_all(g_hostile_dir);
  }
};
const auto* g_remove_hostile = ::testing::AddGlobalTestEnvironment(new RemoveHostile);

struct Hostile {
  std::string dir, comp, score_out;
  int score_rc = -1;
  std::map<std::string, RecordRow> run;  // team -> its run row
  std::vector<RecordRow> rows;
};

Hostile& hostile() {
  static Hostile h = [] {
    Hostile h;
    h.dir = make_temp_dir("arena_hostile");
    g_hostile_dir = h.dir;
    std::string hidden;
    for (const char* d : kHidden) hidden += nlohmann::json({{"text", d}}).dump() + "\n";
    write_text(h.dir + "/hidden.jsonl", hidden);
    h.comp = h.dir + "/competition.toml";
    // Small limits, so the hang and the leak end soon: the evaluation is killed at 60 + 5 s and may map 2 GiB. The
    // phase's own grace is long: the honest run is never killed for a loaded machine's slowness.
    write_text(h.comp, "name = \"hostile\"\ntrain_data = \"" + dataset() + "/data\"\nhidden_val = \"hidden.jsonl\"\n"
               "grace_seconds = 5\neval_timeout_seconds = 60\neval_memory_mb = 2048\n"
               "[build]\njobs = 1\ntimeout_seconds = 600\n"
               "[checks]\nlookahead_probes = 2\ncausal_requests = 0\n"
               "[[phase]]\nname = \"phase1\"\nbudget_seconds = 1\ngrace_seconds = 300\n");
    write_text(h.dir + "/stock.toml", "[model]\ndepth = 1\ndim = 64\nhead_dim = 32\nseq_len = 32\n[train]\n"
                                      "micro_batch = 4\npeak_gflops = 100\n");
    const std::string fake = h.dir + "/fake";
    fs::create_directories(fake);
    for (const char* f : {"CMakeLists.txt", "fake_frontier.cpp"})
      fs::copy_file(source_dir() + "/tests/arena/fake_fork/" + f, fake + "/" + f);
    write_text(fake + "/stock.txt", frontier_bin() + "\n");
    sh("git init -q " + fake);
    const std::vector<std::pair<std::string, std::string>> forks = {
        {"crasher", "kill_parent"}, {"hanger", "tokenizer_fifo"}, {"leaker", "tokenizer_endless"},
        {"echoer", "echo_hidden"}};
    for (const auto& [team, mode] : forks) {
      write_text(fake + "/mode.txt", mode + "\n");
      sh("git -C " + fake + " add -A && git -C " + fake + " -c user.name=t -c user.email=t@t commit -q -m " + mode +
         " && git -C " + fake + " tag " + mode);
    }
    const std::string submit = frontier_bin() + " arena submit --competition " + h.comp + " --config " + h.dir +
                               "/stock.toml --team ";
    for (const auto& [team, mode] : forks) sh(submit + team + " --repo " + fake + " --commit " + mode);
    sh(submit + "honest");  // queued behind every hostile fork
    RunResult r = run_cmd(frontier_bin() + " arena score --competition " + h.comp + " --seed 7");
    h.score_rc = r.rc;
    h.score_out = r.out;
    Record rec;
    EXPECT_TRUE(rec.open(h.dir + "/record.sqlite").ok());
    EXPECT_TRUE(rec.rows(&h.rows).ok());
    for (const auto& row : h.rows)
      if (row.event == "run") h.run[row.team] = row;
    return h;
  }();
  return h;
}

// One test, not two: CTest runs each test in its own process, and the fixture (one `arena score` of every fork) is
// the cost.
TEST(ArenaHostile, FailedForksAreRecordedTheNextIsScoredAndNothingPrintedIsPublished) {
  Hostile& h = hostile();
  SCOPED_TRACE(h.score_out);
  EXPECT_EQ(h.score_rc, 0);  // the scorer itself never fails for a submission's sake
  auto expect = [&](const std::string& team, const std::string& status, const std::string& reason) {
    ASSERT_TRUE(h.run.count(team)) << "no run row for " << team;
    EXPECT_EQ(h.run.at(team).status, status) << team << ": " << h.run.at(team).reason;
    EXPECT_EQ(h.run.at(team).reason, reason) << team;
  };
  // The server signals the process that started it: that is the evaluation worker, not the scorer.
  expect("crasher", "eval_failed", "crashed (signal 11)");
  // run/tokenizer/tokenizer.json is a FIFO: the loader blocks until the worker is killed.
  expect("hanger", "eval_failed", "timeout");
  // ... a link to /dev/zero: read until the address-space limit.
  expect("leaker", "eval_failed", "out of memory");
  // Queued behind all of them, scored as usual.
  expect("honest", "ok", "");
  EXPECT_TRUE(std::isfinite(h.run.at("honest").val_bpb));
  // Every submission has exactly one run row, and a second score has nothing left to do.
  EXPECT_EQ(h.run.size(), 5u);
  EXPECT_NE(run_cmd(frontier_bin() + " arena score --competition " + h.comp).out.find("nothing to score"),
            std::string::npos);

  // The echoing server: its line (the hidden text) is in the organiser's private log and nowhere public.
  ASSERT_TRUE(h.run.count("echoer"));
  const RecordRow& r = h.run.at("echoer");
  EXPECT_EQ(r.status, "eval_failed");
  EXPECT_EQ(r.reason, "server error (exit code 1)");  // the fixed vocabulary, not the server's line
  // The server did print hidden text (the organiser's private log has it), so the test has teeth.
  std::string echoed;
  std::ifstream log(h.dir + "/record.sqlite.private.jsonl");
  for (std::string line; std::getline(log, line);) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("team", "") == "echoer") echoed = j.value("detail", "");
  }
  const std::string head = "cannot serve the request ";
  ASSERT_NE(echoed.find(head), std::string::npos) << echoed;
  const std::string leaked = echoed.substr(echoed.find(head) + head.size());
  ASSERT_GE(leaked.size(), 40u) << echoed;
  std::vector<std::string> words = {"quixotic", "zephyr", "marmalade", "obsidian", "lanterns"};
  bool has_a_word = false;
  for (const auto& w : words) has_a_word |= leaked.find(w) != std::string::npos;
  ASSERT_TRUE(has_a_word) << leaked;
  // Nowhere public: not the record's row (any column), not the page, not the terminal leaderboard.
  RunResult lb = run_cmd(frontier_bin() + " arena leaderboard --competition " + h.comp + " --html " + h.dir + "/lb.html");
  ASSERT_EQ(lb.rc, 0) << lb.out;
  const std::string page = slurp(h.dir + "/lb.html");
  for (const auto& row : h.rows) {
    for (const std::string* field : {&row.reason, &row.details, &row.machine}) {
      EXPECT_EQ(field->find(leaked), std::string::npos) << row.team << ": " << *field;
      for (const auto& w : words) EXPECT_EQ(field->find(w), std::string::npos) << row.team << ": " << w;
    }
  }
  EXPECT_EQ(page.find(leaked), std::string::npos);
  EXPECT_EQ(lb.out.find(leaked), std::string::npos);
  for (const auto& w : words) {
    EXPECT_EQ(page.find(w), std::string::npos) << w;
    EXPECT_EQ(lb.out.find(w), std::string::npos) << w;
  }
}

}  // namespace
}  // namespace frontier::testing

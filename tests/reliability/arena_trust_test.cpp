// Trust under attack (issue 33), the cases that need no training: the budget cannot be bought (one list of frozen
// keys for the arena and research; a supplied probe step time is checked against a measurement), a tampered record
// is neither published nor extended, and one slow client of the leaderboard server does not hold an honest request.
// The cases that train and score (a crashing, hanging or leaking fork; a server echoing the hidden text) are in
// tests/arena/arena_hostile_test.cpp.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <atomic>
#include <thread>

#include "../train_fixture.h"
#include "arena/record.h"
#include "arena/submission.h"
#include "config/frozen_keys.h"
#include "reliability_util.h"
#include "research/research.h"
#include "util/file.h"

namespace frontier::testing {
namespace {

using json = nlohmann::json;

const char* kTiny = "[model]\nvocab_size = 400\ndepth = 1\ndim = 64\nhead_dim = 32\nseq_len = 32\n[train]\n"
                    "micro_batch = 4\npeak_gflops = 100.0\n";

// A competition that needs no data to take submissions and publish: DIR/competition.toml, record beside it.
struct MiniArena {
  std::string dir, comp;
  MiniArena() {
    dir = make_temp_dir("arena_trust");
    comp = dir + "/competition.toml";
    write_text(comp, "name = \"trust\"\ntrain_data = \"data\"\nhidden_val = \"hidden.jsonl\"\n"
                     "[[phase]]\nname = \"phase1\"\nbudget_seconds = 2\n");
    write_text(dir + "/stock.toml", kTiny);
  }
  ~MiniArena() { std::filesystem::remove_all(dir); }
  Outcome arena(const std::vector<std::string>& args, double timeout_s = 60) const {
    std::vector<std::string> a = {frontier_bin(), "arena"};
    a.insert(a.end(), args.begin(), args.end());
    if (args[0] != "evaluate") a.insert(a.begin() + 3, {"--competition", comp});
    return run_argv(a, timeout_s);
  }
  std::vector<RecordRow> rows() const {
    Record rec;
    std::vector<RecordRow> r;
    EXPECT_TRUE(rec.open(dir + "/record.sqlite").ok());
    EXPECT_TRUE(rec.rows(&r).ok());
    return r;
  }
};

// ---- §3: the budget cannot be bought ----

TEST(ArenaTrust, FrozenKeysAreOneListForArenaAndResearch) {
  // Every key that changes how many steps a budget buys or how time is counted, frozen for both.
  for (const char* k : {"train.budget_seconds", "train.max_steps", "train.warmup_steps_excluded", "train.budget_mode",
                        "train.probe_step_seconds", "train.data", "train.run_dir", "eval.tokens", "eval.batch"}) {
    const FrozenKey* f = frozen_key(k);
    ASSERT_NE(f, nullptr) << k;
    EXPECT_TRUE(f->arena) << k;
    EXPECT_TRUE(f->research) << k;
    EXPECT_TRUE(is_frozen_key(k)) << k;
    Status parse;
    const std::string key(k), table = key.substr(0, key.find('.')), name = key.substr(key.find('.') + 1);
    EXPECT_EQ(frozen_key_in("[" + table + "]\n" + name + " = 1\n", "c.toml", &parse), key);
  }
  EXPECT_EQ(frozen_key("optim.matrix_lr"), nullptr);
  EXPECT_FALSE(is_frozen_key("train.threads"));  // research may search threads; the arena's phase decides them
  EXPECT_TRUE(frozen_key("train.threads")->arena);
  EXPECT_FALSE(frozen_key("train.peak_gflops")->arena);  // only the reported MFU
  // The probe check: far below the measurement is refused and names it; within the slack is fine.
  Status s = check_probe_step_seconds(1e-6, 0.05);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("measured time 0.05 s"), std::string::npos) << s.message();
  EXPECT_TRUE(check_probe_step_seconds(0.001, 0.05).ok());  // 50x: load noise, not an attack
  EXPECT_FALSE(check_probe_step_seconds(0.0001, 0.05).ok());
  EXPECT_TRUE(check_probe_step_seconds(0.5, 0.05).ok());
}

TEST(ArenaTrust, ConfigSettingItsOwnProbeTimeIsRejected) {
  MiniArena a;
  for (const char* key : {"probe_step_seconds = 0.0001", "budget_mode = \"probe\""}) {
    write_text(a.dir + "/buy.toml", std::string(kTiny) + key + "\n");
    Outcome o = a.arena({"submit", "--team", "buyer", "--config", a.dir + "/buy.toml"});
    EXPECT_CLEAN_ERROR(o, "submission rejected");
    EXPECT_CLEAN_ERROR(o, std::string("train.") + std::string(key).substr(0, std::string(key).find(' ')));
    EXPECT_CLEAN_ERROR(o, "which the competition fixes");
  }
  auto rows = a.rows();
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& r : rows) {
    EXPECT_EQ(r.status, "rejected");
    EXPECT_NE(r.reason.find("budget"), std::string::npos) << r.reason;
  }
  // The same config without the key is accepted: only the key is refused.
  Outcome ok = a.arena({"submit", "--team", "honest", "--config", a.dir + "/stock.toml"});
  EXPECT_EQ(ok.rc, 0) << ok.err;
}

TEST(ArenaTrust, ResearchProposalOfAProbeTimeIsRejected) {
  const std::string d = make_temp_dir("research_trust");
  write_text(d + "/base.toml", std::string(kTiny) + "data = \"" + dataset() + "/data\"\n");
  write_text(d + "/space.toml", "[\"optim.matrix_lr\"]\nmin = 0.005\nmax = 0.05\nlog = true\n");
  auto research = [&](const std::string& out, const std::vector<std::string>& extra) {
    std::vector<std::string> a = {frontier_bin(), "research", "--base", d + "/base.toml", "--space", d + "/space.toml",
                                  "--out", out};
    a.insert(a.end(), extra.begin(), extra.end());
    return run_argv(a, 120);
  };
  // A proposer that buys steps: recorded "rejected", never run (no baseline: --repeats 0, so no training at all).
  for (const char* set : {"{\"train.probe_step_seconds\": 0.0001}", "{\"train.budget_mode\": \"wall\"}"}) {
    const std::string out = d + "/s" + std::to_string(set[8] == 'p');
    Outcome o = research(out, {"--repeats", "0", "--trials", "1", "--proposer",
                               std::string("echo '{\"set\": ") + set + ", \"description\": \"buy steps\"}'"});
    ASSERT_EQ(o.rc, 0) << o.out << o.err;
    std::vector<json> ledger;
    ASSERT_TRUE(read_ledger(out + "/ledger.jsonl", &ledger).ok());
    ASSERT_EQ(ledger.size(), 1u);
    EXPECT_EQ(ledger[0]["status"], "rejected") << ledger[0].dump();
    EXPECT_NE(ledger[0]["error"].get<std::string>().find("frozen"), std::string::npos) << ledger[0].dump();
    EXPECT_FALSE(std::filesystem::exists(out + "/trials/000"));
  }
  // The same through the space, --set and the base config: refused before any trial.
  write_text(d + "/space2.toml", "[\"train.probe_step_seconds\"]\nchoices = [0.0001]\n");
  Outcome sp = run_argv({frontier_bin(), "research", "--base", d + "/base.toml", "--space", d + "/space2.toml", "--out",
                         d + "/s2", "--repeats", "0", "--trials", "1"}, 60);
  EXPECT_CLEAN_ERROR(sp, "frozen");
  Outcome st = research(d + "/s3", {"--repeats", "0", "--trials", "1", "--set", "train.probe_step_seconds=0.0001"});
  EXPECT_CLEAN_ERROR(st, "train.probe_step_seconds is frozen");
  write_text(d + "/base.toml", std::string(kTiny) + "data = \"" + dataset() + "/data\"\nprobe_step_seconds = 0.0001\n");
  Outcome base = research(d + "/s4", {"--repeats", "0", "--trials", "1"});
  EXPECT_CLEAN_ERROR(base, "sets train.probe_step_seconds, which research does not allow");
  std::filesystem::remove_all(d);
}

// A probe time given on the command line is checked against a measurement of the same step (train.cpp's probe
// calls check_probe_step_seconds): 1e-7 s would plan tens of millions of steps for a 5-s budget.
TEST(ArenaTrust, CliProbeTimeFarBelowTheMeasurementIsRefused) {
  const std::string d = make_temp_dir("probe_cli");
  Outcome o = run_argv({frontier_bin(), "train", "--data", dataset() + "/data", "--budget", "5", "--set",
                        "model.vocab_size=400", "--set", "model.depth=1", "--set", "model.dim=64", "--set",
                        "model.head_dim=32", "--set", "model.seq_len=32", "--set", "train.micro_batch=4", "--set",
                        "train.peak_gflops=100", "--set", "train.budget_mode=probe", "--set",
                        "train.probe_step_seconds=1e-7", "--set", "train.run_dir=" + d + "/run"},
                       60);
  EXPECT_CLEAN_ERROR(o, "train.probe_step_seconds = 1e-07 s is far below this step's measured time");
  std::filesystem::remove_all(d);
}

// ---- §6: a tampered record is never published or extended ----

TEST(ArenaTrust, TamperedRecordIsNeverPublishedOrExtended) {
  MiniArena a;
  ASSERT_EQ(a.arena({"submit", "--team", "alpha", "--config", a.dir + "/stock.toml"}).rc, 0);
  {  // a scored run, as the scorer appends it
    Record rec;
    ASSERT_TRUE(rec.open(a.dir + "/record.sqlite").ok());
    RecordRow r;
    r.event = "run", r.team = "alpha", r.phase = "phase1", r.metric = "val_bpb", r.status = "ok", r.score = 2.5,
    r.val_bpb = 2.5, r.submission = a.rows()[0].submission;
    ASSERT_TRUE(rec.append(&r).ok());
  }
  Outcome lb = a.arena({"leaderboard", "--html", a.dir + "/ok.html"});
  ASSERT_EQ(lb.rc, 0) << lb.err;
  EXPECT_NE(lb.out.find("2.500000"), std::string::npos) << lb.out;
  // The tamper: a better score, written past the triggers.
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open((a.dir + "/record.sqlite").c_str(), &h), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(h, "DROP TRIGGER runs_no_update; UPDATE runs SET score = 0.5, val_bpb = 0.5 WHERE event = 'run'",
                         nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(h);
  const size_t before = a.rows().size();

  Outcome l2 = a.arena({"leaderboard", "--html", a.dir + "/tampered.html"});
  EXPECT_CLEAN_ERROR(l2, "failed verification: row 2 (run, team alpha, ok) was changed");
  EXPECT_EQ(l2.out.find("0.500000"), std::string::npos) << l2.out;
  EXPECT_FALSE(std::filesystem::exists(a.dir + "/tampered.html"));

  Outcome sv = a.arena({"serve", "--port", "1"}, 30);  // refused before it listens (port 1 is never reached)
  EXPECT_CLEAN_ERROR(sv, "failed verification");

  Outcome sub = a.arena({"submit", "--team", "beta", "--config", a.dir + "/stock.toml"});
  EXPECT_CLEAN_ERROR(sub, "failed verification");
  Outcome sc = a.arena({"score"});
  EXPECT_CLEAN_ERROR(sc, "failed verification");
  EXPECT_EQ(a.rows().size(), before);  // nothing appended to the broken chain

  Outcome v = a.arena({"verify"});
  EXPECT_EQ(v.rc, 2);
}

// ---- §7: one slow client does not hold an honest request ----

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in s{};
  s.sin_family = AF_INET;
  s.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&s), sizeof(s));
  socklen_t n = sizeof(s);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&s), &n);
  ::close(fd);
  return ntohs(s.sin_port);
}

int connect_to(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in s{};
  s.sin_family = AF_INET;
  s.sin_port = htons(static_cast<uint16_t>(port));
  s.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&s), sizeof(s)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST(ArenaTrust, SlowClientDoesNotHoldAnHonestRequest) {
  MiniArena a;
  ASSERT_EQ(a.arena({"submit", "--team", "alpha", "--config", a.dir + "/stock.toml"}).rc, 0);
  const int port = free_port();
  Child server({frontier_bin(), "arena", "serve", "--competition", a.comp, "--port", std::to_string(port)});
  ASSERT_TRUE(wait_until([&] { return server.err_so_far().find("serving") != std::string::npos; }, 30))
      << server.err_so_far();
  // The slow client: connects, starts a request and trickles one header byte at a time, for as long as the test
  // runs (a server that reads it to the end of its headers before anything else never gets to the next client).
  std::atomic<bool> stop{false};
  int slow = -1;
  ASSERT_TRUE(wait_until([&] { return (slow = connect_to(port)) >= 0; }, 10));
  std::thread trickle([&] {
    ::send(slow, "GET / HTTP/1.1\r\n", 16, MSG_NOSIGNAL);
    while (!stop) {
      ::send(slow, "X", 1, MSG_NOSIGNAL);
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the slow client is first in line
  // The honest request, with a generous deadline of its own: it gets the page while the slow client still holds on.
  int fd = connect_to(port);
  ASSERT_GE(fd, 0);
  timeval tv{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  const std::string req = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string resp;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;) resp.append(buf, static_cast<size_t>(n));
  ::close(fd);
  const bool slow_still_open = !stop;
  stop = true;
  trickle.join();
  ::close(slow);
  EXPECT_EQ(resp.rfind("HTTP/1.1 200", 0), 0u) << resp.substr(0, 200);
  EXPECT_NE(resp.find("<!DOCTYPE html>"), std::string::npos);
  EXPECT_TRUE(slow_still_open);
  server.signal(SIGTERM);
  Outcome o = server.wait(30);
  EXPECT_EQ(o.rc, 0) << o.err;
}

}  // namespace
}  // namespace frontier::testing

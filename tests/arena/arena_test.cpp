// The arena end to end (issue 16): a small competition through the CLI, as an organiser runs it. One real fork of
// this tree is built (the costly part: one build, -O0, only the `frontier` target); the misbehaving submissions
// are a stand-in fork of a few hundred lines (tests/arena/fake_fork/) built the same way in seconds. Then the
// record, the leaderboard in headless Chromium, and tampering caught by `verify`.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <thread>

#include "../train_fixture.h"
#include "arena_util.h"
#include "arena/competition.h"
#include "arena/evaluator.h"
#include "arena/leaderboard.h"
#include "arena/protocol.h"
#include "arena/record.h"
#include "eval/core_eval.h"
#include "model/gpt.h"
#include "tokenizer/tokenizer.h"
#include "train/checkpoint.h"
#include "util/file.h"
#include "util/subprocess.h"

namespace frontier::testing {
namespace {

namespace fs = std::filesystem;

std::string git_commit_all(const std::string& repo, const std::string& msg) {
  sh("git -C " + repo + " add -A && git -C " + repo + " -c user.name=t -c user.email=t@t commit -q -m '" + msg + "'");
  std::string id = sh("git -C " + repo + " rev-parse HEAD");
  return id.substr(0, id.find('\n'));
}

std::string read(const std::string& p) {
  std::string s;
  EXPECT_TRUE(read_file(p, &s).ok()) << p;
  return s;
}

const char* kStock = "[model]\ndepth = 1\ndim = 64\nhead_dim = 32\nseq_len = 32\n[train]\nmicro_batch = 4\n"
                     "peak_gflops = 100\n";

std::string g_arena_dir;  // removed when the test program exits, unless FRONTIER_ARENA_KEEP is set

struct RemoveArena : ::testing::Environment {
  void TearDown() override {
    if (!g_arena_dir.empty() && !std::getenv("FRONTIER_ARENA_KEEP")) std::filesystem::remove_all(g_arena_dir);
  }
};
const auto* g_remove_arena = ::testing::AddGlobalTestEnvironment(new RemoveArena);

// The competition, run once for the suite.
struct Arena {
  std::string dir, comp, fork_commit;
  std::map<std::string, RecordRow> run;     // team -> its run row
  std::map<std::string, RecordRow> subrow;  // team -> its submission row
  std::map<std::string, std::string> submit_out;
  std::string score_out;
  std::vector<RecordRow> rows;
};

Arena& arena() {
  static Arena a = [] {
    Arena a;
    a.dir = make_temp_dir("arena");
    g_arena_dir = a.dir;
    const std::string data = dataset() + "/data";
    // Hidden text: the fixture's words in new orders (documents the model never saw as such).
    std::ifstream in(dataset() + "/c.jsonl");
    std::string line, hidden;
    std::vector<std::string> lines;
    while (std::getline(in, line)) lines.push_back(line);
    for (size_t i = lines.size() - 20; i < lines.size(); i++) {
      std::string t = nlohmann::json::parse(lines[i])["text"];
      std::vector<std::string> w;
      std::istringstream ws(t);
      for (std::string x; ws >> x;) w.push_back(x);
      std::reverse(w.begin(), w.end());
      std::string d;
      for (auto& x : w) d += (d.empty() ? "" : " ") + x;
      hidden += nlohmann::json({{"text", d}}).dump() + "\n";
    }
    write_text(a.dir + "/hidden.jsonl", hidden);
    a.comp = a.dir + "/competition.toml";
    write_text(a.comp, "name = \"Arena CI\"\ntrain_data = \"" + data + "\"\nhidden_val = \"hidden.jsonl\"\n"
               "grace_seconds = 300\neval_timeout_seconds = 600\n"
               "core_bundle = \"" + shared_data() + "/eval_bundle\"\n"
               "[build]\ncmake_args = [\"-DCMAKE_BUILD_TYPE=ArenaCI\", \"-DCMAKE_CXX_FLAGS_ARENACI=-O0 -march=x86-64-v3\", "
               "\"-DBUILD_TESTING=OFF\", \"-DFRONTIER_MPI=OFF\"]\njobs = 2\ntimeout_seconds = 1200\n"
               "[checks]\nlookahead_probes = 8\n"
               "[[phase]]\nname = \"phase1\"\nbudget_seconds = 2\n"
               "[[phase]]\nname = \"phase2\"\nbudget_seconds = 2\nmetric = \"composite\"\ncore_max_per_task = 2\n"
               "[[phase]]\nname = \"sprint\"\nbudget_seconds = 2\ngrace_seconds = 5\n");
    write_text(a.dir + "/stock.toml", kStock);
    write_text(a.dir + "/changed.toml", "[model]\ndepth = 1\ndim = 64\nhead_dim = 32\nseq_len = 32\n[optim]\n"
               "matrix_lr = 0.04\nembedding_lr = 0.3\n[train]\nmicro_batch = 4\npeak_gflops = 100\nseed = 7\n");
    write_text(a.dir + "/typo.toml", std::string(kStock) + "[optim]\nmatrix_lrr = 0.03\n");
    write_text(a.dir + "/peek.toml", std::string(kStock) + "[eval]\ntokens = 64\n");

    // The real fork: this working tree (tracked and untracked, not ignored) with a visible change to the model.
    const std::string fork = a.dir + "/fork";
    std::string files = sh("git -C " + source_dir() + " ls-files -co --exclude-standard");
    std::istringstream fl(files);
    for (std::string f; std::getline(fl, f);) {
      if (f.empty() || !fs::is_regular_file(source_dir() + "/" + f)) continue;
      fs::create_directories(fs::path(fork + "/" + f).parent_path());
      fs::copy_file(source_dir() + "/" + f, fork + "/" + f, fs::copy_options::overwrite_existing);
    }
    std::string gpt_h = read(fork + "/src/model/model_config.h");
    const std::string from = "constexpr double kDefaultSoftcap = 15.0;";
    EXPECT_NE(gpt_h.find(from), std::string::npos);
    gpt_h.replace(gpt_h.find(from), from.size(), "constexpr double kDefaultSoftcap = 30.0;  // fork: a wider softcap");
    write_text(fork + "/src/model/model_config.h", gpt_h);
    sh("git init -q " + fork);
    a.fork_commit = git_commit_all(fork, "fork: softcap 30");

    // The stand-in fork: one tagged commit per misbehaviour.
    const std::string fake = a.dir + "/fake";
    fs::create_directories(fake);
    for (const char* f : {"CMakeLists.txt", "fake_frontier.cpp"})
      fs::copy_file(source_dir() + "/tests/arena/fake_fork/" + f, fake + "/" + f);
    write_text(fake + "/stock.txt", frontier_bin() + "\n");
    sh("git init -q " + fake);
    for (const char* mode : {"crash", "overstay", "lookahead", "prefix_cache", "unnormalised", "no_checkpoint",
                             "corrupt_checkpoint", "build_fails"}) {
      write_text(fake + "/mode.txt", std::string(mode) + "\n");
      git_commit_all(fake, mode);
      sh("git -C " + fake + " tag " + mode);
    }

    // Submissions, one command each; bad ones are refused and recorded.
    const std::string submit = frontier_bin() + " arena submit --competition " + a.comp + " --team ";
    auto sub = [&](const std::string& team, const std::string& rest) {
      a.submit_out[team] = run_cmd(submit + team + " " + rest).out;
    };
    sub("alpha", "--config " + a.dir + "/stock.toml");
    sub("beta", "--config " + a.dir + "/changed.toml");
    sub("gamma", "--config " + a.dir + "/stock.toml --repo " + fork + " --commit " + a.fork_commit.substr(0, 10));
    const std::map<std::string, std::string> fakes = {
        {"crashy", "crash"},          {"slowpoke", "overstay"},      {"cheater", "lookahead"},
        {"hoarder", "prefix_cache"},
        {"sloppy", "unnormalised"},   {"nockpt", "no_checkpoint"},   {"corrupt", "corrupt_checkpoint"},
        {"broken", "build_fails"}};
    for (const auto& [team, tag] : fakes)
      sub(team, std::string(team == "slowpoke" ? "--phase sprint " : "") + "--config " + a.dir + "/stock.toml --repo " +
                    fake + " --commit " + tag);
    sub("typo", "--config " + a.dir + "/typo.toml");
    sub("peeker", "--config " + a.dir + "/peek.toml");
    sub("ghostrepo", "--config " + a.dir + "/stock.toml --repo " + a.dir + "/no-such-repo --commit main");
    sub("ghostcommit", "--config " + a.dir + "/stock.toml --repo " + fake + " --commit deadbeefdeadbeef");
    sub("copycat", "--config " + a.dir + "/stock.toml");  // alpha's submission again
    // Phase 2 (composite: val_bpb and CORE, both through the team's server), with a context CORE items fit in.
    write_text(a.dir + "/long.toml", "[model]\ndepth = 1\ndim = 64\nhead_dim = 32\nseq_len = 256\n[train]\n"
               "micro_batch = 1\npeak_gflops = 100\n");
    sub("delta", "--phase phase2 --config " + a.dir + "/long.toml");

    // The organiser scores everything (the fixed seed makes the probe positions reproducible here).
    a.score_out = run_cmd(frontier_bin() + " arena score --competition " + a.comp + " --seed 1234").out;
    Record rec;
    EXPECT_TRUE(rec.open(a.dir + "/record.sqlite").ok());
    EXPECT_TRUE(rec.rows(&a.rows).ok());
    for (const auto& r : a.rows) (r.event == "run" ? a.run : a.subrow)[r.team] = r;
    return a;
  }();
  return a;
}

TEST(ArenaE2E, EveryOutcomeIsRecordedWithItsReason) {
  Arena& a = arena();
  SCOPED_TRACE(a.score_out);
  auto expect_run = [&](const std::string& team, const std::string& status, const std::string& reason_part) {
    ASSERT_TRUE(a.run.count(team)) << "no run row for " << team;
    const RecordRow& r = a.run.at(team);
    EXPECT_EQ(r.status, status) << team << ": " << r.reason;
    EXPECT_NE(r.reason.find(reason_part), std::string::npos) << team << ": " << r.reason;
    if (status == "ok") {
      EXPECT_TRUE(std::isfinite(r.val_bpb) && r.val_bpb > 0.5 && r.val_bpb < 8) << team << " " << r.val_bpb;
    } else {
      EXPECT_FALSE(std::isfinite(r.score)) << team;
    }
  };
  expect_run("alpha", "ok", "");
  expect_run("beta", "ok", "");
  expect_run("gamma", "ok", "");
  expect_run("crashy", "crashed", "signal 6");
  expect_run("slowpoke", "overstayed", "past the budget 2 s + grace 5 s");
  expect_run("cheater", "disqualified", "looks ahead");
  expect_run("hoarder", "disqualified", "when streamed, before the following tokens were sent");
  expect_run("sloppy", "disqualified", "not normalised");
  expect_run("nockpt", "eval_failed", "without a checkpoint");
  expect_run("corrupt", "eval_failed", "server error (exit code");
  expect_run("broken", "build_failed", "build failed (build: exit code");
  // The scorer's clock: killed at budget + grace (the phase's own short grace), never before. (No upper bound: how
  // soon after the limit the kill lands depends on the machine's load, which a test must not assume.)
  EXPECT_GE(a.run.at("slowpoke").train_s, 6.5);
  // The look-ahead evidence names the probed position and the changed token.
  nlohmann::json ev = nlohmann::json::parse(a.run.at("cheater").details)["eval"]["evidence"];
  EXPECT_EQ(ev["check"], "lookahead");
  EXPECT_GT(ev["max_abs_change"].get<double>(), 0.1);
  EXPECT_NE(ev["next_token_original"], ev["next_token_probe"]);
  // The prefix-caching server passes the probes (it replays the first row it served for a prefix) and is caught by
  // the causal check: the streamed row (no future sent yet) differs from the batch row, most on the next token.
  nlohmann::json hoard = nlohmann::json::parse(a.run.at("hoarder").details)["eval"];
  EXPECT_EQ(hoard["evidence"]["check"], "causal");
  EXPECT_LE(hoard["worst_probe_change"].get<double>(), 1e-4);
  // The fake mixes half of the next token into each row it serves with the future known (p' = p/2 + 1/2) and the
  // streamed row is the honest one, so the evidence pins the batch figure exactly. (A fixed gap such as 0.1 does
  // not hold: the gain log((p + 1) / 2) - log p shrinks as the trained model's p grows, and a faster tier trains
  // further in the same budget: measured 0.09 at p 0.84 on the AMX tier, 2026-12-06.)
  const double streamed = hoard["evidence"]["next_token_logp_streamed"].get<double>();
  const double batch = hoard["evidence"]["next_token_logp_batch"].get<double>();
  EXPECT_GT(batch, streamed);
  EXPECT_NEAR(batch, std::log(0.5 * std::exp(streamed) + 0.5), 1e-3) << hoard.dump();  // two runs of one model
  // Phase 2: the composite from the organiser's own val_bpb and CORE.
  ASSERT_TRUE(a.run.count("delta"));
  const RecordRow& dr = a.run.at("delta");
  EXPECT_EQ(dr.status, "ok") << dr.reason;
  EXPECT_EQ(dr.metric, "composite");
  EXPECT_TRUE(std::isfinite(dr.core) && dr.core > -1 && dr.core < 1) << dr.core;
  EXPECT_NEAR(dr.score, 0.5 * std::clamp(1 - dr.val_bpb / 8, 0.0, 1.0) + 0.5 * dr.core, 1e-12);
  nlohmann::json de = nlohmann::json::parse(dr.details)["eval"];
  EXPECT_GT(de["core_requests"].get<int>(), 20);
  EXPECT_EQ(de["core_report"]["tasks_present"].get<int>(), 20);
  EXPECT_LE(de["worst_causal_change"].get<double>(), 1e-4);
  // Honest servers change nothing at a probed position (one fp32 forward per request: bit-identical here).
  for (const char* t : {"alpha", "beta", "gamma"}) {
    nlohmann::json e = nlohmann::json::parse(a.run.at(t).details).value("eval", nlohmann::json::object());
    EXPECT_EQ(e.value("probes", 0), 8) << t;
    EXPECT_LE(e.value("worst_probe_change", 1.0), 1e-4) << t;
    EXPECT_LE(e.value("worst_normalisation", 1.0), 1e-3) << t;
  }
  // Bad input: refused at submission, recorded, never scored.
  auto expect_refused = [&](const std::string& team, const std::string& status, const std::string& reason_part) {
    ASSERT_TRUE(a.subrow.count(team)) << team << ": " << a.submit_out[team];
    EXPECT_EQ(a.subrow.at(team).status, status) << team;
    EXPECT_NE(a.subrow.at(team).reason.find(reason_part), std::string::npos) << a.subrow.at(team).reason;
    EXPECT_NE(a.submit_out[team].find("error: submission " + status), std::string::npos) << a.submit_out[team];
    EXPECT_FALSE(a.run.count(team)) << team;
  };
  expect_refused("typo", "rejected", "unknown config key 'optim.matrix_lrr'");
  expect_refused("peeker", "rejected", "eval.tokens");
  expect_refused("ghostrepo", "rejected", "cannot be cloned");
  expect_refused("ghostcommit", "rejected", "commit deadbeefdeadbeef does not exist");
  expect_refused("copycat", "duplicate", "identical to submission");
  // Every submission has exactly one row, every accepted one exactly one run.
  int submissions = 0, runs = 0;
  for (const auto& r : a.rows) (r.event == "submission" ? submissions : runs)++;
  EXPECT_EQ(submissions, 17);
  EXPECT_EQ(runs, 12);
  // A second score finds nothing left to do.
  EXPECT_NE(run_cmd(frontier_bin() + " arena score --competition " + a.comp).out.find("nothing to score"),
            std::string::npos);
}

TEST(ArenaE2E, ForkIsBuiltFromItsCommit) {
  Arena& a = arena();
  ASSERT_TRUE(a.run.count("gamma"));
  const RecordRow& r = a.run.at("gamma");
  EXPECT_EQ(r.kind, "fork");
  nlohmann::json d = nlohmann::json::parse(r.details);
  EXPECT_EQ(d["commit"], a.fork_commit);  // the short id given was resolved and recorded in full
  EXPECT_GT(r.build_s, 0);
  const std::string src = d["work_dir"].get<std::string>() + "/src/src/model/model_config.h";
  EXPECT_NE(read(src).find("kDefaultSoftcap = 30.0"), std::string::npos);
  EXPECT_TRUE(fs::exists(d["work_dir"].get<std::string>() + "/build/frontier"));
  EXPECT_EQ(r.log_sha256.size(), 64u);
}

// The served score equals the model's own losses on the same windows, counted over the hidden text's bytes.
TEST(ArenaE2E, ServedScoreMatchesTheModel) {
  Arena& a = arena();
  ASSERT_TRUE(a.run.count("alpha"));
  nlohmann::json d = nlohmann::json::parse(a.run.at("alpha").details);
  Config cfg;
  std::unique_ptr<Gpt> gpt;
  ASSERT_TRUE(load_trained_model(d["work_dir"].get<std::string>() + "/run/model.ckpt", &cfg, &gpt).ok());
  Tokenizer tok;
  ASSERT_TRUE(tok.load(dataset() + "/data/tokenizer").ok());
  std::vector<std::string> docs;
  ASSERT_TRUE(load_hidden_text(a.dir + "/hidden.jsonl", &docs).ok());
  const int64_t T = gpt->shape().seq_len;
  double nats = 0, bytes = 0;
  for (const auto& doc : docs) {
    std::vector<uint32_t> ids = {tok.bos_id()};
    tok.encode_ordinary(doc, &ids);
    bytes += doc.size();
    for (int64_t s = 0; s + 1 < static_cast<int64_t>(ids.size());) {
      const int64_t m = std::min<int64_t>(T, static_cast<int64_t>(ids.size()) - 1 - s);
      std::vector<uint32_t> w(ids.begin() + s, ids.begin() + s + m + 1);  // inputs and the last target
      std::vector<float> losses;
      std::vector<int> argmax;
      ASSERT_TRUE(core_sequence_losses(*gpt, w, &losses, &argmax).ok());
      for (float l : losses) nats += l;
      s += m;
    }
  }
  const double bpb = nats / std::log(2.0) / bytes;
  EXPECT_NEAR(a.run.at("alpha").val_bpb, bpb, 1e-5 * bpb);
  EXPECT_EQ(d["eval"]["bytes"].get<double>(), bytes);
}

std::string chromium() {
  for (const char* c : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (fs::exists(c)) return c;
  return "";
}

std::string browser(const std::string& dir, const std::string& args) {
  return "(" + chromium() + " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars "
         "--user-data-dir=" + dir + "/chromium-profile " + args + " 2>/dev/null)";
}

// What a person sees, from the DOM the browser built: the standings in order, the numbers, the chart.
void check_page(const std::string& dom, Arena& a) {
  std::regex row("<tr class=\"standing[^\"]*\" data-rank=\"(\\d+)\" data-team=\"([^\"]+)\" data-score=\"([0-9.]+)\"");
  std::vector<std::tuple<int, std::string, double>> got;
  const size_t p2 = dom.find("<section id=\"phase-phase2\"");
  ASSERT_NE(p2, std::string::npos);
  const std::string phase1 = dom.substr(0, p2), phase2 = dom.substr(p2);
  for (auto it = std::sregex_iterator(phase1.begin(), phase1.end(), row); it != std::sregex_iterator(); ++it)
    got.emplace_back(std::stoi((*it)[1]), (*it)[2], std::stod((*it)[3]));
  ASSERT_EQ(got.size(), 3u) << dom.substr(0, 3000);
  std::vector<std::pair<double, std::string>> want;
  for (const char* t : {"alpha", "beta", "gamma"}) want.emplace_back(a.run.at(t).score, t);
  std::sort(want.begin(), want.end());
  for (size_t i = 0; i < 3; i++) {
    EXPECT_EQ(std::get<0>(got[i]), static_cast<int>(i) + 1);
    EXPECT_EQ(std::get<1>(got[i]), want[i].second);
    EXPECT_NEAR(std::get<2>(got[i]), want[i].first, 1e-6);
  }
  EXPECT_NE(dom.find("<svg id=\"chart-phase1\""), std::string::npos);
  size_t lines = 0;
  for (size_t p = 0; (p = dom.find("<polyline class=\"series\"", p)) != std::string::npos; p++) lines++;
  EXPECT_EQ(lines, 4u);  // phase 1's three teams, phase 2's one
  // Phase 2's table: delta first, its composite, val_bpb and CORE as recorded.
  const RecordRow& d = a.run.at("delta");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(phase2, m, row)) << phase2.substr(0, 2000);
  EXPECT_EQ(m[1], "1");
  EXPECT_EQ(m[2], "delta");
  EXPECT_NEAR(std::stod(m[3]), d.score, 1e-6);
  EXPECT_NE(phase2.find("<th>val_bpb</th><th>CORE</th>"), std::string::npos);
  char core[32];
  std::snprintf(core, sizeof(core), "%.6f", d.core);
  EXPECT_NE(phase2.find(core), std::string::npos) << core;
  EXPECT_NE(dom.find("data-status=\"disqualified\" data-team=\"cheater\""), std::string::npos);
  EXPECT_NE(dom.find("looks ahead"), std::string::npos);
  EXPECT_NE(dom.find("Record verified"), std::string::npos);
  EXPECT_NE(dom.find("name=\"viewport\""), std::string::npos);
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t n = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n);
  ::close(fd);
  return ntohs(a.sin_port);
}

TEST(ArenaE2E, LeaderboardInHeadlessChromium) {
  Arena& a = arena();
  ASSERT_FALSE(chromium().empty()) << "headless Chromium is missing: scripts/install_deps.sh installs `chromium`";
  // The static export.
  const std::string html = a.dir + "/leaderboard.html";
  RunResult lb = run_cmd(frontier_bin() + " arena leaderboard --competition " + a.comp + " --html " + html);
  ASSERT_EQ(lb.rc, 0) << lb.out;
  EXPECT_NE(lb.out.find("1     "), std::string::npos) << lb.out;
  check_page(run_cmd(browser(a.dir, "--dump-dom file://" + html)).out, a);
  // The server, in the background, until the test stops it.
  const int port = std::max(1, free_port());
  volatile std::sig_atomic_t stop = 0;
  Subprocess p;
  p.argv = {frontier_bin(), "arena", "serve", "--competition", a.comp, "--port", std::to_string(port)};
  p.stdout_path = a.dir + "/serve.log";
  p.stderr_to_stdout = true;
  p.timeout_s = 900;  // CTest runs this beside other suites: a slow Chromium start must not outlive the server
  p.stop = &stop;
  SubprocessResult sr;
  std::thread server([&] { run_subprocess(p, &sr); });
  std::string log;
  // Until it says it listens (it verifies the record first), however long a loaded machine takes: a fixed wait here
  // let Chromium meet a closed port.
  for (int i = 0; i < 3000 && log.find("serving") == std::string::npos; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    read_file(a.dir + "/serve.log", &log);
  }
  const bool listening = log.find("serving") != std::string::npos;
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/";
  if (listening) check_page(run_cmd(browser(a.dir, "--dump-dom " + url)).out, a);
  stop = 1;
  server.join();
  ASSERT_TRUE(listening) << log;
  // A phone-width screenshot of the static page (the same HTML the server sends, checked above): 390 CSS pixels (an
  // iPhone 12). Desktop Chromium's windows are at least 500 px wide, so the page is laid out in a 390-px frame and
  // the screenshot cropped to it; the virtual time budget lets the frame finish loading under a busy machine.
  const std::string png = a.dir + "/arena-leaderboard.png", phone = a.dir + "/phone.html";
  write_text(phone, "<!DOCTYPE html><html><body style=\"margin:0\"><iframe src=\"file://" + html +
                        "\" style=\"width:390px;height:1500px;border:0\"></iframe></body></html>");
  run_cmd(browser(a.dir, "--window-size=390,1500 --virtual-time-budget=10000 --allow-file-access-from-files "
                         "--screenshot=" + png + " file://" + phone));
  ASSERT_TRUE(fs::exists(png));
  EXPECT_GT(fs::file_size(png), 20000u);  // a rendered page, not a blank one
  if (const char* keep = std::getenv("FRONTIER_ARENA_SCREENSHOT"))  // refresh docs/arena-leaderboard.png
    fs::copy_file(png, keep, fs::copy_options::overwrite_existing);
}

// verify names the row that was changed or deleted; the triggers refuse ordinary edits.
TEST(ArenaE2E, VerifyCatchesTampering) {
  Arena& a = arena();
  auto copy = [&](const std::string& name) {
    const std::string d = a.dir + "/" + name;
    fs::create_directories(d);
    fs::copy_file(a.dir + "/record.sqlite", d + "/record.sqlite", fs::copy_options::overwrite_existing);
    fs::copy_file(a.dir + "/record.sqlite.head", d + "/record.sqlite.head", fs::copy_options::overwrite_existing);
    std::string c = read(a.comp);
    write_text(d + "/competition.toml", c);  // same definition, record next to it
    fs::create_symlink(a.dir + "/hidden.jsonl", d + "/hidden.jsonl");
    return d;
  };
  auto sql = [](const std::string& db, const std::string& q) {
    sqlite3* h = nullptr;
    EXPECT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
    char* err = nullptr;
    int rc = sqlite3_exec(h, q.c_str(), nullptr, nullptr, &err);
    std::string e = err ? err : "";
    sqlite3_free(err);
    sqlite3_close(h);
    return rc == SQLITE_OK ? std::string() : e;
  };
  auto verify = [&](const std::string& d) { return run_cmd(frontier_bin() + " arena verify --competition " + d + "/competition.toml"); };

  RunResult ok = verify(copy("intact"));
  EXPECT_EQ(ok.rc, 0) << ok.out;
  EXPECT_NE(ok.out.find("ok: 29 rows"), std::string::npos) << ok.out;

  std::string d = copy("edited");
  EXPECT_NE(sql(d + "/record.sqlite", "UPDATE runs SET score = 0.5 WHERE team = 'beta'").find("append-only"),
            std::string::npos);
  EXPECT_EQ(sql(d + "/record.sqlite", "DROP TRIGGER runs_no_update; UPDATE runs SET score = 0.5, val_bpb = 0.5 "
                                      "WHERE team = 'beta' AND event = 'run'"), "");
  RunResult r = verify(d);
  EXPECT_EQ(r.rc, 2) << r.out;
  const std::string beta_row = "row " + std::to_string(a.run.at("beta").seq) + " (run, team beta, ok) was changed";
  EXPECT_NE(r.out.find(beta_row), std::string::npos) << r.out;

  d = copy("deleted");
  const int64_t victim = a.subrow.at("typo").seq;
  EXPECT_EQ(sql(d + "/record.sqlite", "DROP TRIGGER runs_no_delete; DELETE FROM runs WHERE seq = " +
                                          std::to_string(victim)), "");
  r = verify(d);
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("row " + std::to_string(victim) + " is missing (deleted)"), std::string::npos) << r.out;

  d = copy("truncated");
  EXPECT_EQ(sql(d + "/record.sqlite", "DROP TRIGGER runs_no_delete; DELETE FROM runs WHERE seq = 29"), "");
  r = verify(d);
  EXPECT_EQ(r.rc, 2) << r.out;
  EXPECT_NE(r.out.find("rows 29..29 are missing: the head file says the record ends at row 29"), std::string::npos)
      << r.out;
}

// ---- pieces on their own (fast) ----

TEST(ArenaProtocol, ParseRefusesWhatIsNotTheProtocol) {
  std::string out(kLogprobMagic, 8);
  uint32_t V = 3, L = 4, n = 2;
  out.append(reinterpret_cast<char*>(&V), 4).append(reinterpret_cast<char*>(&L), 4);
  out.append(reinterpret_cast<char*>(&n), 4);
  std::vector<float> rows(6, std::log(1.f / 3));
  out.append(reinterpret_cast<char*>(rows.data()), 24);
  ServedResponses r;
  auto parse = [&](const std::string& s, std::vector<size_t> lens) {
    return parse_responses(reinterpret_cast<const uint8_t*>(s.data()), s.size(), lens, &r);
  };
  EXPECT_TRUE(parse(out, {2}).ok());
  EXPECT_EQ(r.header.vocab_size, 3u);
  EXPECT_NE(parse(out, {3}).message().find("has 2 rows for a request of 3"), std::string::npos);
  EXPECT_NE(parse(out, {2, 1}).message().find("answered 1 of 2"), std::string::npos);
  EXPECT_NE(parse(out.substr(0, out.size() - 4), {2}).message().find("cut short"), std::string::npos);
  EXPECT_NE(parse(out + "x", {2}).message().find("after the last response"), std::string::npos);
  EXPECT_NE(parse("hello world, not it", {2}).message().find("FLPROB01"), std::string::npos);
  EXPECT_EQ(encode_requests({{1, 2}, {3}}).size(), 4u + 8 + 4 + 4);
}

TEST(ArenaCompetition, DefinitionErrorsNameTheKey) {
  const std::string d = make_temp_dir("arena_def");
  auto load = [&](const std::string& text) {
    write_text(d + "/c.toml", text);
    Competition c;
    return load_competition(d + "/c.toml", &c);
  };
  const std::string base = "name = \"x\"\ntrain_data = \"data\"\nhidden_val = \"h.jsonl\"\n";
  EXPECT_TRUE(load(base + "[[phase]]\nname = \"p\"\nbudget_seconds = 5\n").ok());
  EXPECT_NE(load(base + "budget = 3\n[[phase]]\nname = \"p\"\nbudget_seconds = 5\n").message().find("unknown key budget"),
            std::string::npos);
  EXPECT_NE(load(base + "[[phase]]\nname = \"p\"\nbudget_seconds = 5\nmetrc = \"val_bpb\"\n").message().find(
                "unknown key [[phase]] p: metrc"),
            std::string::npos);
  EXPECT_NE(load(base).message().find("no [[phase]]"), std::string::npos);
  EXPECT_NE(load(base + "[[phase]]\nname = \"p\"\nbudget_seconds = -1\n").message().find("budget_seconds"),
            std::string::npos);
  EXPECT_NE(load(base + "[[phase]]\nname = \"p\"\nbudget_seconds = 5\nmetric = \"loss\"\n").message().find("metric"),
            std::string::npos);
  // A composite phase needs the CORE bundle the organiser scores with.
  const std::string composite = "[[phase]]\nname = \"p2\"\nbudget_seconds = 5\nmetric = \"composite\"\n";
  EXPECT_NE(load(base + composite).message().find("metric \"composite\" needs the definition's core_bundle"),
            std::string::npos);
  EXPECT_TRUE(load(base + "core_bundle = \"eval_bundle\"\n" + composite + "core_max_per_task = 3\n").ok());
  EXPECT_NE(load(base + "[checks]\ncausal_positions = 0\n" + composite).message().find("causal_positions"),
            std::string::npos);
  fs::remove_all(d);
}

TEST(ArenaRecord, TiesShareARank) {
  Competition c;
  c.phases.push_back({"p", 5, 1, 0, "val_bpb", 0});
  std::vector<RecordRow> rows;
  auto add = [&](const std::string& team, double score, const std::string& at) {
    RecordRow r;
    r.event = "run", r.phase = "p", r.team = team, r.status = "ok", r.score = score, r.recorded_at = at;
    rows.push_back(r);
  };
  add("a", 3.0, "t1");
  add("b", 2.5, "t2");
  add("c", 2.5000001, "t3");  // equal at the displayed precision
  add("a", 2.9, "t4");        // a's best improves
  add("d", 3.5, "t5");
  auto boards = build_leaderboard(c, rows);
  ASSERT_EQ(boards[0].standings.size(), 4u);
  const auto& s = boards[0].standings;
  EXPECT_EQ(s[0].team, "b");
  EXPECT_EQ(s[0].rank, 1);
  EXPECT_TRUE(s[0].tie);
  EXPECT_EQ(s[1].team, "c");
  EXPECT_EQ(s[1].rank, 1);
  EXPECT_EQ(s[2].team, "a");
  EXPECT_EQ(s[2].rank, 3);
  EXPECT_DOUBLE_EQ(s[2].score, 2.9);
  EXPECT_EQ(s[2].runs, 2);
  EXPECT_EQ(s[3].rank, 4);
}

}  // namespace
}  // namespace frontier::testing

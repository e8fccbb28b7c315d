// Issue 17 for `frontier train` and the commands that load its checkpoints: who owns a run directory, which
// tokenizer and data a number belongs to, nothing computed is lost (signals, a kill during evaluation, a full
// disk), no aborts (memory, bad numbers). Each case asserts the exit status, no signal, the one-line error and that
// no file that existed was lost or changed.
#include <signal.h>

#include <nlohmann/json.hpp>

#include "../train_fixture.h"
#include "reliability_util.h"
#include "train/checkpoint.h"
#include "util/file.h"

namespace frontier::testing {

namespace {

// The tiny model of train_fixture.h as an argument vector (no shell), on the fixture's dataset unless extra has
// --data.
std::vector<std::string> train_argv(const std::vector<std::string>& extra) {
  std::vector<std::string> a = {frontier_bin(), "train"};
  bool has_data = false, has_budget = false;
  for (const auto& e : extra) has_data |= e == "--data", has_budget |= e == "--budget";
  if (!has_data) a.insert(a.end(), {"--data", dataset() + "/data"});
  if (!has_budget) a.insert(a.end(), {"--budget", "30"});
  for (const char* kv : {"model.vocab_size=400", "model.depth=1", "model.dim=64", "model.head_dim=32",
                         "model.seq_len=32", "train.micro_batch=4", "eval.tokens=512", "eval.batch=4",
                         "train.peak_gflops=100"})
    a.insert(a.end(), {"--set", kv});
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// Steps written to a run's log so far.
int logged_steps(const std::string& run) {
  std::string log = Child::slurp(run + "/log.jsonl");
  return static_cast<int>(std::count(log.begin(), log.end(), '\n'));
}

std::string line_of(const std::string& out, const std::string& key) {
  size_t p = out.find(key + ":");
  return p == std::string::npos ? "missing " + key : out.substr(p, out.find('\n', p) - p);
}

// Another dataset in the fixture's 400-token format: with its own tokenizer (other_tokenizer) or with the
// fixture's tokenizer on other text.
std::string other_dataset(bool other_tokenizer) {
  static std::string dirs[2];
  std::string& d = dirs[other_tokenizer];
  if (!d.empty()) return d;
  d = dataset() + (other_tokenizer ? "/other_tok" : "/other_text");
  std::filesystem::create_directories(d);
  std::string jsonl;
  uint32_t x = other_tokenizer ? 99 : 12345;
  auto rnd = [&x] { return (x = x * 1103515245u + 12345u) >> 16; };
  for (int i = 0; i < 200; i++) {
    std::string doc;
    for (int w = 0; w < 60; w++) {
      std::string word;
      for (int k = 0; k < 3 + static_cast<int>(rnd() % 5); k++) word.push_back(static_cast<char>('a' + rnd() % 26));
      doc += (w ? " " : "") + word;
    }
    jsonl += nlohmann::json({{"text", doc}}).dump() + "\n";
  }
  prepare_400(d, jsonl, other_tokenizer ? "" : dataset() + "/data/tokenizer");
  return d;
}

// A finished run of the tiny model (trained once per test process).
std::string finished_run() {
  static std::string run = [] {
    std::string r = dataset() + "/rel_finished";
    Outcome o = run_argv(train_argv({"--set", "train.max_steps=4", "--set", "train.run_dir=" + r}), 120);
    EXPECT_EQ(o.rc, 0) << o.err;
    return r;
  }();
  return run;
}

}  // namespace

// 1. Ownership ----------------------------------------------------------------------------------------------------

TEST(TrainReliability, SecondRunOnALockedRunDirIsRefusedWithThePid) {
  std::string run = dataset() + "/rel_locked";
  Child first(train_argv({"--set", "train.max_steps=1000000", "--set", "train.run_dir=" + run}));
  ASSERT_TRUE(wait_until([&] { return logged_steps(run) >= 2; }, 60)) << first.err_so_far();
  Outcome second = run_argv(train_argv({"--set", "train.max_steps=3", "--set", "train.run_dir=" + run, "--force"}));
  EXPECT_CLEAN_ERROR(second, "is in use by another frontier process (pid " + std::to_string(first.pid()) + ")");
  EXPECT_NE(second.last_err_line().find("train.run_dir"), std::string::npos);
  first.signal(SIGTERM);
  Outcome o = first.wait(60);
  EXPECT_EQ(o.rc, 128 + SIGTERM) << o.err;
}

TEST(TrainReliability, AFinishedRunDirIsNotOverwrittenWithoutForce) {
  std::string run = finished_run();
  DirSnapshot before = DirSnapshot::of(run);
  Outcome o = run_argv(train_argv({"--set", "train.max_steps=2", "--set", "train.run_dir=" + run}));
  EXPECT_CLEAN_ERROR(o, "already holds a finished run");
  EXPECT_NE(o.last_err_line().find("--force"), std::string::npos);
  EXPECT_EQ(before.lost_or_changed(DirSnapshot::of(run), {".lock"}), std::vector<std::string>{});
  // --force does overwrite: a copy, so the shared finished run stays.
  std::string copy = dataset() + "/rel_forced";
  std::filesystem::copy(run, copy, std::filesystem::copy_options::recursive);
  o = run_argv(train_argv({"--set", "train.max_steps=2", "--set", "train.run_dir=" + copy, "--force"}));
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(line_of(o.out, "num_steps"), "num_steps:        2");
}

TEST(TrainReliability, AnUnfinishedRunDirPointsToResume) {
  std::string run = dataset() + "/rel_unfinished";
  Outcome cut = run_argv(train_argv({"--set", "train.max_steps=6", "--set", "train.checkpoint_every_steps=1",
                                     "--set", "train.run_dir=" + run}),
                         120, {"FRONTIER_FAULT_EXIT_AFTER_STEP=3"});
  ASSERT_EQ(cut.rc, 75) << cut.err;
  DirSnapshot before = DirSnapshot::of(run);
  Outcome o = run_argv(train_argv({"--set", "train.max_steps=6", "--set", "train.run_dir=" + run}));
  EXPECT_CLEAN_ERROR(o, "already holds an unfinished run; continue it with `frontier train --resume " + run + "`");
  EXPECT_EQ(before.lost_or_changed(DirSnapshot::of(run), {".lock"}), std::vector<std::string>{});
}

TEST(TrainReliability, RunsStartedInTheSameSecondGetTheirOwnDirectories) {
  std::string cwd = make_temp_dir("rel_cwd");
  std::vector<std::unique_ptr<Child>> runs;
  for (int i = 0; i < 3; i++)
    runs.push_back(std::make_unique<Child>(train_argv({"--set", "train.max_steps=3"}), std::vector<std::string>{},
                                           cwd));
  std::set<std::string> dirs;
  for (auto& c : runs) {
    Outcome o = c->wait(120);
    EXPECT_EQ(o.rc, 0) << o.err;
    std::string line = line_of(o.out, "run_dir");
    dirs.insert(line.substr(line.find("runs/")));
  }
  EXPECT_EQ(dirs.size(), 3u);
  size_t n = 0;
  for (auto& e : std::filesystem::directory_iterator(cwd + "/runs")) n += file_exists(e.path().string() + "/summary.txt");
  EXPECT_EQ(n, 3u);
  std::filesystem::remove_all(cwd);
}

// 2. Identity -----------------------------------------------------------------------------------------------------

TEST(TrainReliability, ADifferentTokenizerIsAnErrorForEveryCommand) {
  std::string ckpt = finished_run() + "/model.ckpt", other = other_dataset(true) + "/data";
  const std::string want = "was trained with tokenizer";
  EXPECT_CLEAN_ERROR(run_argv({frontier_bin(), "eval", "bpb", "--checkpoint", ckpt, "--data", other}), want);
  EXPECT_CLEAN_ERROR(run_argv({frontier_bin(), "eval", "bpb", "--checkpoint", ckpt, "--data", other, "--cross-data"}),
                     want);  // --cross-data allows other text, never another tokenizer
  EXPECT_CLEAN_ERROR(run_argv({frontier_bin(), "sample", "--checkpoint", ckpt, "--data", other, "--tokens", "3"}),
                     want);
  EXPECT_CLEAN_ERROR(run_argv({frontier_bin(), "eval", "core", "--checkpoint", ckpt, "--data", other,
                               "--bundle", shared_data() + "/eval_bundle", "--max-per-task", "1"}),
                     want);
  EXPECT_CLEAN_ERROR(run_argv({frontier_bin(), "eval", "score", "--checkpoint", ckpt, "--data", other,
                               "--bundle", shared_data() + "/eval_bundle", "--max-per-task", "1"}),
                     want);
}

TEST(TrainReliability, OtherDataNeedsCrossDataAndIsSaidSo) {
  std::string ckpt = finished_run() + "/model.ckpt", other = other_dataset(false) + "/data";
  EXPECT_CLEAN_ERROR(run_argv({frontier_bin(), "eval", "bpb", "--checkpoint", ckpt, "--data", other}),
                     "pass --cross-data to score it on other text deliberately");
  Outcome o = run_argv({frontier_bin(), "eval", "bpb", "--checkpoint", ckpt, "--data", other, "--cross-data"});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_NE(o.out.find("[cross-data: scored on " + other), std::string::npos) << o.out;
  // The run's own data needs no flag and says nothing.
  o = run_argv({frontier_bin(), "eval", "bpb", "--checkpoint", ckpt});
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(o.out.find("cross-data"), std::string::npos) << o.out;
}

TEST(TrainReliability, ResumeOnASwappedDatasetIsAnError) {
  // The run's data directory is replaced (same path, other text, same tokenizer) between the kill and the resume.
  std::string data = dataset() + "/rel_swap_data", run = dataset() + "/rel_swap_run";
  std::filesystem::copy(dataset() + "/data", data, std::filesystem::copy_options::recursive);
  Outcome cut = run_argv(train_argv({"--data", data, "--set", "train.max_steps=6", "--set",
                                     "train.checkpoint_every_steps=1", "--set", "train.run_dir=" + run}),
                         120, {"FRONTIER_FAULT_EXIT_AFTER_STEP=2"});
  ASSERT_EQ(cut.rc, 75) << cut.err;
  std::filesystem::remove_all(data);
  std::filesystem::copy(other_dataset(false) + "/data", data, std::filesystem::copy_options::recursive);
  DirSnapshot before = DirSnapshot::of(run);
  Outcome o = run_argv({frontier_bin(), "train", "--resume", run});
  EXPECT_CLEAN_ERROR(o, "is not the dataset " + run + "/model.ckpt was trained on");
  EXPECT_EQ(before.lost_or_changed(DirSnapshot::of(run), {".lock"}), std::vector<std::string>{});
}

TEST(TrainReliability, SummaryAndCheckpointRecordTheIdentities) {
  std::string run = finished_run();
  std::string summary = Child::slurp(run + "/summary.txt");
  EXPECT_NE(summary.find("tokenizer_id:"), std::string::npos) << summary;
  EXPECT_NE(summary.find("data_id:"), std::string::npos) << summary;
  std::string toml, meta;
  std::vector<float> w, st;
  ASSERT_TRUE(load_checkpoint(run + "/model.ckpt", &toml, &meta, &w, &st).ok());
  nlohmann::json m = nlohmann::json::parse(meta);
  EXPECT_EQ(m["identity"]["tokenizer_sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(m["identity"]["data_sha256"].get<std::string>().size(), 64u);
}

// 3. Nothing computed is lost -------------------------------------------------------------------------------------

TEST(TrainReliability, SigintStopsAfterTheStepSavesAndResumes) {
  std::string run = dataset() + "/rel_sigint";
  Child c(train_argv({"--budget", "6", "--set", "train.run_dir=" + run}));
  ASSERT_TRUE(wait_until([&] { return logged_steps(run) >= 5; }, 60)) << c.err_so_far();
  c.signal(SIGINT);
  Outcome o = c.wait(60);
  EXPECT_FALSE(o.timed_out);
  EXPECT_EQ(o.signal, 0);
  EXPECT_EQ(o.rc, 128 + SIGINT) << o.err;
  EXPECT_NE(o.out.find("status:           interrupted (SIGINT at step"), std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("val_bpb:"), std::string::npos) << "an interrupted run has no val_bpb";
  EXPECT_NE(o.last_err_line().find("error: interrupted by SIGINT at step"), std::string::npos) << o.err;
  EXPECT_NE(o.last_err_line().find("continue with `frontier train --resume " + run + "`"), std::string::npos);
  ASSERT_TRUE(file_exists(run + "/model.ckpt"));
  EXPECT_FALSE(file_exists(run + "/summary.txt"));
  const int steps = std::stoi(line_of(o.out, "num_steps").substr(10));
  EXPECT_EQ(logged_steps(run), steps);
  Outcome r = run_argv({frontier_bin(), "train", "--resume", run}, 120);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("resumed " + run + " at step " + std::to_string(steps)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("val_bpb:"), std::string::npos);
}

TEST(TrainReliability, SigtermDoesTheSame) {
  std::string run = dataset() + "/rel_sigterm";
  Child c(train_argv({"--budget", "6", "--set", "train.run_dir=" + run}));
  ASSERT_TRUE(wait_until([&] { return logged_steps(run) >= 3; }, 60)) << c.err_so_far();
  c.signal(SIGTERM);
  Outcome o = c.wait(60);
  EXPECT_EQ(o.rc, 128 + SIGTERM) << o.err;
  EXPECT_NE(o.out.find("interrupted (SIGTERM at step"), std::string::npos) << o.out;
  EXPECT_TRUE(file_exists(run + "/model.ckpt"));
}

TEST(TrainReliability, ASecondSigintQuitsAtOnce) {
  // Steps of ~0.5 s (a wider model), so the second signal lands while the first waits for the step to end.
  std::string run = dataset() + "/rel_sigint2";
  Child c(train_argv({"--set", "model.dim=256", "--set", "model.depth=4", "--set", "model.seq_len=256", "--set",
                      "train.micro_batch=16", "--set", "train.max_steps=1000", "--set", "train.run_dir=" + run}));
  ASSERT_TRUE(wait_until([&] { return logged_steps(run) >= 1; }, 120)) << c.err_so_far();
  c.signal(SIGINT);
  usleep(50000);
  c.signal(SIGINT);
  Outcome o = c.wait(30);
  EXPECT_FALSE(o.timed_out);
  EXPECT_EQ(o.signal, SIGINT) << "rc " << o.rc << "\n" << o.err;
}

TEST(TrainReliability, AKillDuringEvaluationLosesNoTraining) {
  std::string full = dataset() + "/rel_eval_full", cut = dataset() + "/rel_eval_cut";
  Outcome a = run_argv(train_argv({"--set", "train.max_steps=5", "--set", "train.run_dir=" + full}));
  ASSERT_EQ(a.rc, 0) << a.err;
  Outcome b = run_argv(train_argv({"--set", "train.max_steps=5", "--set", "train.run_dir=" + cut}), 120,
                       {"FRONTIER_FAULT_EXIT_IN_EVAL=1"});
  ASSERT_EQ(b.rc, 75) << b.err;
  ASSERT_TRUE(file_exists(cut + "/model.ckpt")) << "the trained weights must be on disk before the evaluation";
  EXPECT_FALSE(file_exists(cut + "/summary.txt"));
  Outcome c = run_argv({frontier_bin(), "train", "--resume", cut});
  EXPECT_EQ(c.rc, 0) << c.err;
  EXPECT_NE(c.out.find("training had finished at step 5; running the final evaluation"), std::string::npos) << c.out;
  EXPECT_EQ(line_of(a.out, "val_bpb"), line_of(c.out, "val_bpb"));
  EXPECT_EQ(line_of(a.out, "num_steps"), line_of(c.out, "num_steps"));
  EXPECT_CLEAN_ERROR(run_argv({frontier_bin(), "train", "--resume", cut}), "already finished");
}

// The run dir on a small tmpfs, in a private mount namespace (unshare: root here and in CI, or a user namespace).
Outcome run_on_tmpfs(const std::string& mnt, const std::string& size, const std::string& script) {
  std::filesystem::create_directories(mnt);
  return run_argv({"/usr/bin/unshare", "-rm", "/bin/sh", "-c",
                   "mount -t tmpfs -o size=" + size + " tmpfs '" + mnt + "' || exit 99; " + script},
                  180);
}

std::string quoted(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) s += "'" + a + "' ";
  return s;
}

TEST(TrainReliability, TooLittleDiskIsRefusedBeforeTraining) {
  std::string mnt = dataset() + "/rel_small_disk";
  Outcome o = run_on_tmpfs(mnt, "4m", quoted(train_argv({"--set", "train.max_steps=3", "--set",
                                                          "train.run_dir=" + mnt + "/run"})));
  ASSERT_NE(o.rc, 99) << "cannot mount a tmpfs here (needs root or user namespaces): " << o.err;
  EXPECT_CLEAN_ERROR(o, "free space or choose another train.run_dir");
  EXPECT_NE(o.last_err_line().find("two during an atomic rewrite"), std::string::npos);
}

TEST(TrainReliability, ADiskThatFillsDuringTheRunStillReportsTheResult) {
  // Enough space to start; a filler takes the rest after the first steps, so the final checkpoint cannot be written.
  std::string mnt = dataset() + "/rel_full_disk", run = mnt + "/run";
  std::string script = quoted(train_argv({"--set", "train.max_steps=300", "--set", "train.checkpoint_every_steps=0",
                                          "--set", "train.checkpoint_every_seconds=0", "--set",
                                          "train.run_dir=" + run})) +
                       "& pid=$!; i=0; while [ \"$(wc -l < '" + run + "/log.jsonl' 2>/dev/null || echo 0)\" -lt 3 ]; do "
                       "i=$((i+1)); [ $i -gt 3000 ] && break; sleep 0.02; done; "
                       "cat /dev/zero > '" + mnt + "/filler' 2>/dev/null; wait $pid";
  Outcome o = run_on_tmpfs(mnt, "40m", script);
  ASSERT_NE(o.rc, 99) << "cannot mount a tmpfs here: " << o.err;
  EXPECT_CLEAN_ERROR(o, "not saved: ");
  EXPECT_NE(o.last_err_line().find("model.ckpt"), std::string::npos) << o.last_err_line();
  EXPECT_NE(o.out.find("val_bpb:"), std::string::npos) << "the evaluation still ran:\n" << o.out;
  EXPECT_NE(o.out.find("not_saved:"), std::string::npos) << o.out;
}

// 4. No aborts, no hangs ------------------------------------------------------------------------------------------

TEST(TrainReliability, ConfigsThatCannotFitAreRefusedBeforeAllocating) {
  Outcome o = run_argv({frontier_bin(), "train", "--data", dataset() + "/data", "--set", "model.vocab_size=400",
                        "--set", "model.depth=200", "--set", "train.run_dir=" + dataset() + "/rel_deep"});
  EXPECT_CLEAN_ERROR(o, "lower model.depth or model.dim (parameters)");
  o = run_argv(train_argv({"--set", "train.micro_batch=1000000", "--set", "train.run_dir=" + dataset() + "/rel_wide"}));
  EXPECT_CLEAN_ERROR(o, "lower train.micro_batch");
  // The evaluation's batch is the larger one: the message names eval.batch (it once blamed train.micro_batch).
  o = run_argv(train_argv({"--set", "eval.batch=1000000", "--set", "train.run_dir=" + dataset() + "/rel_eval"}));
  EXPECT_CLEAN_ERROR(o, "lower eval.batch");
  EXPECT_FALSE(std::filesystem::exists(dataset() + "/rel_deep/model.ckpt"));
}

TEST(TrainReliability, NumbersOutOfRangeAreErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string want;
  };
  std::vector<Case> cases = {
      {{"--set", "train.budget_seconds=inf"}, "'train.budget_seconds' must be a finite number, got inf"},
      {{"--set", "train.budget_seconds=1e12"}, "'train.budget_seconds' = 1000000000000.0 is out of range"},
      {{"--set", "train.warmdown_ratio=-0.5"}, "'train.warmdown_ratio' = -0.5 is out of range [0, 1]"},
      {{"--set", "eval.tokens=-1"}, "'eval.tokens' = -1 is out of range"},
      {{"--set", "optim.matrix_lr=nan"}, "'optim.matrix_lr' must be a finite number"},
      {{"--set", "train.threads=-2"}, "'train.threads' = -2 is out of range [0, 4096]"},
  };
  for (const auto& c : cases) EXPECT_CLEAN_ERROR(run_argv(train_argv(c.args)), c.want);
}

TEST(TrainReliability, CheckpointMetadataOfTheWrongTypeIsAnError) {
  std::string run = dataset() + "/rel_badmeta";
  Outcome cut = run_argv(train_argv({"--set", "train.max_steps=6", "--set", "train.checkpoint_every_steps=1",
                                     "--set", "train.run_dir=" + run}),
                         120, {"FRONTIER_FAULT_EXIT_AFTER_STEP=2"});
  ASSERT_EQ(cut.rc, 75) << cut.err;
  std::string toml, meta;
  std::vector<float> w, st;
  ASSERT_TRUE(load_checkpoint(run + "/model.ckpt", &toml, &meta, &w, &st).ok());
  nlohmann::json m = nlohmann::json::parse(meta);
  m["step"] = "three";
  ASSERT_TRUE(save_checkpoint(run + "/model.ckpt", toml, m.dump(), w, st).ok());
  EXPECT_CLEAN_ERROR(run_argv({frontier_bin(), "train", "--resume", run}), "metadata field 'step' is missing or not a number");
  m["step"] = 2;
  m["loaders"] = 7;
  ASSERT_TRUE(save_checkpoint(run + "/model.ckpt", toml, m.dump(), w, st).ok());
  EXPECT_CLEAN_ERROR(run_argv({frontier_bin(), "train", "--resume", run}), "'loaders' is not a list of states");
  m.erase("loaders");  // a checkpoint from before data streams has one "loader"
  m["loader"] = 7;
  ASSERT_TRUE(save_checkpoint(run + "/model.ckpt", toml, m.dump(), w, st).ok());
  EXPECT_CLEAN_ERROR(run_argv({frontier_bin(), "train", "--resume", run}), "");
  ASSERT_TRUE(save_checkpoint(run + "/model.ckpt", toml, "[1, 2]", w, st).ok());
  EXPECT_CLEAN_ERROR(run_argv({frontier_bin(), "train", "--resume", run}), "its metadata is not a training state");
}

// 5. Numbers that look right but are not ----------------------------------------------------------------------------

TEST(TrainReliability, NonFiniteWeightsAreRefusedOnLoad) {
  std::string src = finished_run() + "/model.ckpt", bad = dataset() + "/rel_nan.ckpt";
  std::string toml, meta;
  std::vector<float> w, st;
  ASSERT_TRUE(load_checkpoint(src, &toml, &meta, &w, &st).ok());
  w[w.size() / 2] = std::nanf("");
  ASSERT_TRUE(save_checkpoint(bad, toml, meta, w, st).ok());
  EXPECT_CLEAN_ERROR(run_argv({frontier_bin(), "eval", "bpb", "--checkpoint", bad}), "is NaN");
  EXPECT_CLEAN_ERROR(run_argv({frontier_bin(), "sample", "--checkpoint", bad, "--tokens", "2"}), "is NaN");
  w[w.size() / 2] = INFINITY;
  ASSERT_TRUE(save_checkpoint(bad, toml, meta, w, st).ok());
  EXPECT_CLEAN_ERROR(run_argv({frontier_bin(), "eval", "bpb", "--checkpoint", bad}), "is infinite");
}

TEST(TrainReliability, HintsNameTheRealKnob) {
  Outcome o = run_argv(train_argv({"--set", "train.run_dir=/proc/frontier_run"}));
  EXPECT_CLEAN_ERROR(o, "(choose a writable train.run_dir)");
  EXPECT_EQ(o.last_err_line().find("--out"), std::string::npos);
}

}  // namespace frontier::testing

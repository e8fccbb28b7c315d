// Issue 33 (5): work is never lost. A failed `prepare` into an existing dataset left it deleted (manifest and shards
// removed before the bad input was found); two prepares into one --out both "succeeded" with one's output replaced;
// `export` overwrote a model directory without --force; a file-size limit (ulimit -f) during the checkpoint write
// killed training by SIGXFSZ with no message and a stray .tmp. Now datasets and model directories are written to a
// locked staging directory beside the output and moved into place when whole, and the write error of a file-size
// limit takes the ordinary error path.
#include <nlohmann/json.hpp>

#include "../train_fixture.h"
#include "reliability_util.h"
#include "util/file_lock.h"

namespace frontier::testing {

namespace {

namespace fs = std::filesystem;

// n JSON lines of text that differs with `seed`.
std::string corpus(int n, int seed) {
  std::string s;
  for (int i = 0; i < n; i++)
    s += nlohmann::json({{"text", "Document " + std::to_string(seed) + "." + std::to_string(i) +
                                      ": the quick brown fox jumps over the lazy dog, twice."}}).dump() + "\n";
  return s;
}

std::vector<std::string> prepare_argv(const std::string& input, const std::string& out) {
  return {frontier_bin(), "prepare", "--quiet", "--train", input, "--vocab-size", "300", "--out", out};
}

Outcome inspect(const std::string& data) { return run_argv({frontier_bin(), "inspect", "--data", data}, 120); }

std::string manifest_input(const std::string& data) {
  nlohmann::json m = nlohmann::json::parse(Child::slurp(data + "/manifest.json"));
  return m["inputs"]["train"][0]["path"].get<std::string>();
}


}  // namespace

TEST(WorkLoss, FailedPrepareKeepsTheExistingDataset) {
  std::string d = make_temp_dir("workloss_prep");
  write_text(d + "/good.jsonl", corpus(60, 1));
  ASSERT_EQ(run_argv(prepare_argv(d + "/good.jsonl", d + "/out"), 120).rc, 0);
  write_text(d + "/out/notes.txt", "the user's own file");
  DirSnapshot before = DirSnapshot::of(d + "/out");
  // Another input whose 61st line is bad: found while training the tokenizer, after the old code had deleted the
  // dataset's manifest and shards.
  write_text(d + "/bad.jsonl", corpus(60, 2) + "{\"text\": 5}\n");
  EXPECT_CLEAN_ERROR(run_argv(prepare_argv(d + "/bad.jsonl", d + "/out"), 120),
                     d + "/bad.jsonl:61: \"text\" is not a string");
  EXPECT_EQ(before.lost_or_changed(DirSnapshot::of(d + "/out")), std::vector<std::string>{});
  EXPECT_EQ(inspect(d + "/out").rc, 0);
  EXPECT_FALSE(fs::exists(d + "/.out.prepare")) << "the staging directory was left behind";
  // A good prepare into the same directory replaces the dataset and keeps the user's file.
  write_text(d + "/other.jsonl", corpus(60, 3));
  Outcome o = run_argv(prepare_argv(d + "/other.jsonl", d + "/out"), 120);
  ASSERT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(manifest_input(d + "/out"), d + "/other.jsonl");
  EXPECT_EQ(Child::slurp(d + "/out/notes.txt"), "the user's own file");
  EXPECT_EQ(inspect(d + "/out").rc, 0);
  fs::remove_all(d);
}

TEST(WorkLoss, PrepareIntoAnOutInUseIsRefusedNamingTheHolder) {
  std::string d = make_temp_dir("workloss_lock");
  write_text(d + "/a.jsonl", corpus(60, 1));
  write_text(d + "/b.jsonl", corpus(60, 2));
  ASSERT_EQ(run_argv(prepare_argv(d + "/a.jsonl", d + "/out"), 120).rc, 0);
  DirSnapshot before = DirSnapshot::of(d + "/out");
  {
    // This process plays the first prepare: it holds the lock of out's staging directory (prepare.h).
    fs::create_directories(d + "/.out.prepare");
    DirLock lock;
    ASSERT_TRUE(lock.acquire(d + "/.out.prepare", "--out").ok());
    EXPECT_CLEAN_ERROR(run_argv(prepare_argv(d + "/b.jsonl", d + "/out"), 120),
                       "--out " + d + "/out is being written by another frontier prepare (pid " +
                           std::to_string(getpid()) + ", lock ");
    EXPECT_EQ(before.lost_or_changed(DirSnapshot::of(d + "/out")), std::vector<std::string>{});
  }
  Outcome o = run_argv(prepare_argv(d + "/b.jsonl", d + "/out"), 120);  // the lock released: it goes ahead
  ASSERT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(manifest_input(d + "/out"), d + "/b.jsonl");
  fs::remove_all(d);
}

TEST(WorkLoss, PrepareThroughASymlinkedOutKeepsTheLink) {
  // --out a symbolic link (data on another disk): the staging directory is the sibling of the real directory, and
  // the link stays a link to the new dataset.
  std::string d = make_temp_dir("workloss_link");
  write_text(d + "/a.jsonl", corpus(60, 1));
  fs::create_directories(d + "/disk/real");
  fs::create_directory_symlink(d + "/disk/real", d + "/out");
  for (int i = 0; i < 2; i++) {  // into the empty directory, then over the dataset
    if (i == 1) write_text(d + "/a.jsonl", corpus(60, 2));
    Outcome o = run_argv(prepare_argv(d + "/a.jsonl", d + "/out"), 120);
    ASSERT_EQ(o.rc, 0) << o.err;
    EXPECT_TRUE(fs::is_symlink(d + "/out"));
    EXPECT_TRUE(fs::exists(d + "/disk/real/manifest.json"));
    EXPECT_EQ(inspect(d + "/out").rc, 0);
    EXPECT_FALSE(fs::exists(d + "/disk/.real.prepare"));
  }
  fs::remove_all(d);
}

TEST(WorkLoss, ConcurrentPreparesIntoOneOutLeaveOneWholeDataset) {
  // Whatever the interleaving: each either succeeds or is refused with the lock's message, at least one succeeds,
  // and the directory is one whole dataset, of an input whose prepare succeeded.
  std::string d = make_temp_dir("workloss_race");
  write_text(d + "/a.jsonl", corpus(400, 1));
  write_text(d + "/b.jsonl", corpus(400, 2));
  Child a(prepare_argv(d + "/a.jsonl", d + "/out")), b(prepare_argv(d + "/b.jsonl", d + "/out"));
  Outcome oa = a.wait(300), ob = b.wait(300);
  std::vector<std::string> succeeded;
  for (auto [o, in] : {std::pair{&oa, "a"}, std::pair{&ob, "b"}}) {
    if (o->rc == 0) {
      succeeded.push_back(d + "/" + in + ".jsonl");
    } else {
      EXPECT_CLEAN_ERROR(*o, "is being written by another frontier prepare (pid ");
    }
  }
  ASSERT_FALSE(succeeded.empty());
  EXPECT_EQ(inspect(d + "/out").rc, 0);
  const std::string got = manifest_input(d + "/out");
  EXPECT_TRUE(got == succeeded.front() || got == succeeded.back()) << got;
  fs::remove_all(d);
}

TEST(WorkLoss, ExportOverADirectoryThatHoldsFilesNeedsForce) {
  std::string d = make_temp_dir("workloss_export");
  Outcome t = run_argv(tiny_train_argv(d + "/run"), 600);
  ASSERT_EQ(t.rc, 0) << t.err;
  auto export_to = [&](const std::string& out, bool force) {
    std::vector<std::string> a = {frontier_bin(), "export", "--checkpoint", d + "/run/model.ckpt", "--out", out};
    if (force) a.push_back("--force");
    return run_argv(a, 300);
  };
  // A directory of the user's: refused, untouched (the old export wrote its files among them).
  fs::create_directories(d + "/mine");
  write_text(d + "/mine/notes.txt", "keep me");
  EXPECT_CLEAN_ERROR(export_to(d + "/mine", false),
                     "--out " + d + "/mine already holds files; choose another --out, or pass --force to replace it");
  EXPECT_EQ(Child::slurp(d + "/mine/notes.txt"), "keep me");
  EXPECT_FALSE(fs::exists(d + "/mine/config.json"));
  // A fresh directory, then the same again: refused without --force, replaced whole with it.
  Outcome o = export_to(d + "/model", false);
  ASSERT_EQ(o.rc, 0) << o.err;
  DirSnapshot first = DirSnapshot::of(d + "/model");
  EXPECT_EQ(first.files.count("config.json"), 1u);
  write_text(d + "/model/extra.txt", "from before");
  EXPECT_CLEAN_ERROR(export_to(d + "/model", false), "already holds files (a model directory)");
  EXPECT_EQ(first.lost_or_changed(DirSnapshot::of(d + "/model")), std::vector<std::string>{});
  o = export_to(d + "/model", true);
  ASSERT_EQ(o.rc, 0) << o.err;
  EXPECT_EQ(first.lost_or_changed(DirSnapshot::of(d + "/model")), std::vector<std::string>{});  // same model
  EXPECT_FALSE(fs::exists(d + "/model/extra.txt"));  // replaced whole, not written over
  EXPECT_FALSE(fs::exists(d + "/.model.export")) << "the staging directory was left behind";
  // And it imports.
  Outcome im = run_argv({frontier_bin(), "import", d + "/model", "--out", d + "/imported"}, 300);
  EXPECT_EQ(im.rc, 0) << im.err;
  fs::remove_all(d);
}

TEST(WorkLoss, FileSizeLimitDuringTheCheckpointWriteIsACleanError) {
  // RLIMIT_FSIZE below the checkpoint's size (about 1.6 MB for this model) and above every other file train writes:
  // the checkpoint write gets SIGXFSZ, which killed the process (signal 25) and left model.ckpt.tmp.
  std::string d = make_temp_dir("workloss_fsize");
  std::vector<std::string> argv = {"/usr/bin/prlimit", "--fsize=400000", "--"};
  for (const auto& a : tiny_train_argv(d + "/run")) argv.push_back(a);
  Outcome o = run_argv(argv, 600);
  EXPECT_CLEAN_ERROR(o, "File too large");
  EXPECT_NE(o.last_err_line().find("model.ckpt"), std::string::npos) << o.last_err_line();
  for (auto& e : fs::directory_iterator(d + "/run")) EXPECT_NE(e.path().extension(), ".tmp") << e.path();
  fs::remove_all(d);
}

}  // namespace frontier::testing

// Issue 33 (8): small inputs that were read silently or reported as something else. Each is now a one-line error
// that names what is wrong: a --config that is a directory (read as an empty config) or /dev/zero (read until "out
// of memory ... model.depth"), a checkpoint whose metadata says step -7 (resumed), a symbolic link loop ("input not
// found"), and U+0000 in a document, which a raw NUL refused but a JSON "\u0000" or a Parquet value let through:
// one rule for every reader now (docs/formats.md "U+0000").
#include <unistd.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "../train_fixture.h"
#include "reliability_util.h"
#include "util/sha256.h"

namespace frontier::testing {

namespace {

namespace fs = std::filesystem;


Outcome prepare(const std::string& input, const std::string& out) {
  return run_argv({frontier_bin(), "prepare", "--quiet", "--train", input, "--tokenizer", dataset() + "/data/tokenizer",
                   "--out", out}, 120);
}

}  // namespace

TEST(InputReliability, ConfigThatIsADirectoryIsAnError) {
  std::string d = make_temp_dir("input_cfgdir");
  fs::create_directories(d + "/configs");
  // fopen() opens a directory and read() fails: the config was empty, so every default applied.
  EXPECT_CLEAN_ERROR(run_argv(tiny_train_argv(d + "/run", {"--config", d + "/configs"}), 120),
                     "config " + d + "/configs is a directory, not a TOML file");
  EXPECT_FALSE(fs::exists(d + "/run/model.ckpt"));
  fs::remove_all(d);
}

TEST(InputReliability, UnboundedConfigIsAnErrorNamingTheFile) {
  // /dev/zero was read until the allocation failed: "out of memory (... model.depth, train.micro_batch ...)". The
  // address-space limit keeps the old behaviour from taking the machine's memory.
  // Under AddressSanitizer no limit: ASan reserves terabytes of address space for its shadow at start, which the
  // limit refuses (the fixed code reads at most 1 MiB, so the limit only ever guarded the old behaviour).
  std::string d = make_temp_dir("input_cfgzero");
  std::vector<std::string> argv;
#if defined(__SANITIZE_ADDRESS__)
  constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  constexpr bool kAsan = true;
#else
  constexpr bool kAsan = false;
#endif
#else
  constexpr bool kAsan = false;
#endif
  if (!kAsan) argv = {"/usr/bin/prlimit", "--as=4000000000", "--"};
  for (const auto& a : tiny_train_argv(d + "/run", {"--config", "/dev/zero"})) argv.push_back(a);
  EXPECT_CLEAN_ERROR(run_argv(argv, 120), "config /dev/zero is over 1 MiB, too large for a TOML config");
  fs::remove_all(d);
}

TEST(InputReliability, CheckpointWithANegativeStepIsRefusedAsCorrupt) {
  std::string d = make_temp_dir("input_step"), run = d + "/run";
  Outcome t = run_argv(tiny_train_argv(run), 600);
  ASSERT_EQ(t.rc, 0) << t.err;
  // Rewrite the metadata with step -7 and a valid SHA-256 (a file edited or written by something else).
  rewrite_checkpoint_meta(run + "/model.ckpt", [](nlohmann::json& meta) { meta["step"] = -7; });
  fs::remove(run + "/summary.txt");  // a finished run is refused before its step is read
  DirSnapshot before = DirSnapshot::of(run);
  EXPECT_CLEAN_ERROR(run_argv({frontier_bin(), "train", "--resume", run}, 300),
                     "corrupt checkpoint " + run + "/model.ckpt: its metadata says step -7, which cannot be negative");
  EXPECT_EQ(before.lost_or_changed(DirSnapshot::of(run), {"log.jsonl"}), std::vector<std::string>{});
  EXPECT_CLEAN_ERROR(run_argv({frontier_bin(), "eval", "bpb", "--checkpoint", run + "/model.ckpt"}, 120),
                     "step -7, which cannot be negative");
  fs::remove_all(d);
}

TEST(InputReliability, SymbolicLinkLoopIsNamedAsOne) {
  std::string d = make_temp_dir("input_loop");
  fs::create_symlink("b.jsonl", d + "/a.jsonl");
  fs::create_symlink("a.jsonl", d + "/b.jsonl");
  EXPECT_CLEAN_ERROR(prepare(d + "/a.jsonl", d + "/out"), "input " + d + "/a.jsonl is a symbolic link loop");
  fs::create_symlink("missing.jsonl", d + "/dangling.jsonl");
  EXPECT_CLEAN_ERROR(prepare(d + "/dangling.jsonl", d + "/out"), d + "/dangling.jsonl is a broken symbolic link");
  EXPECT_CLEAN_ERROR(prepare(d + "/nothing.jsonl", d + "/out"), "input not found: " + d + "/nothing.jsonl");
  fs::remove_all(d);
}

TEST(InputReliability, Nul0000IsRefusedByEveryReader) {
  std::string d = make_temp_dir("input_nul");
  std::string good;
  for (int i = 0; i < 30; i++) good += "{\"text\": \"document " + std::to_string(i) + " of plain text\"}\n";
  // JSON Lines: "\u0000" decodes to a NUL inside the document (it was trained on); a raw NUL was refused already.
  write_text(d + "/escaped.jsonl", good + "{\"text\": \"a\\u0000b\"}\n");
  EXPECT_CLEAN_ERROR(prepare(d + "/escaped.jsonl", d + "/out"),
                     d + "/escaped.jsonl:31: U+0000 (a NUL character) at byte 1 of the text");
  write_text(d + "/raw.jsonl", good + std::string("{\"text\": \"a\0b\"}\n", 17));
  EXPECT_CLEAN_ERROR(prepare(d + "/raw.jsonl", d + "/out"), d + "/raw.jsonl:31: binary data (a NUL byte");
  write_text(d + "/raw.txt", std::string("text\0more", 9));
  EXPECT_CLEAN_ERROR(prepare(d + "/raw.txt", d + "/out"), d + "/raw.txt: binary data (a NUL byte at byte 4)");
  // Parquet: an uncompressed PLAIN file of the parquet fuzzer's seeds, one byte of a value set to NUL.
  std::string pq = Child::slurp(source_dir() + "/fuzz/corpus/parquet_fuzz/rust_plain_none.parquet").substr(1);
  const size_t at = pq.find("doc 1: ");
  ASSERT_NE(at, std::string::npos);
  pq[at + 3] = '\0';  // "doc\0" + "1: ..."
  write_text(d + "/nul.parquet", pq);
  EXPECT_CLEAN_ERROR(prepare(d + "/nul.parquet", d + "/out"), d + "/nul.parquet: row ");
  Outcome o = prepare(d + "/nul.parquet", d + "/out");
  EXPECT_NE(o.last_err_line().find("U+0000 (a NUL character) at byte 3 of the text"), std::string::npos)
      << o.last_err_line();
  for (const char* policy : {"replace", "error"}) {  // under either --invalid-utf8 policy
    Outcome p = run_argv({frontier_bin(), "prepare", "--quiet", "--train", d + "/escaped.jsonl", "--tokenizer",
                          dataset() + "/data/tokenizer", "--invalid-utf8", policy, "--out", d + "/out"}, 120);
    EXPECT_CLEAN_ERROR(p, "U+0000");
  }
  fs::remove_all(d);
}

}  // namespace frontier::testing

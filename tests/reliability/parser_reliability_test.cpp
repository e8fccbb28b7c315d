// Issue 17 for the parsers of outside input: each case is a bug the fuzzers (fuzz/, docs/fuzzing.md) found or a
// neighbour of one, fed through the CLI as a user would meet it. A bad file gives exit status 1, no signal, one line
// "error: ..." naming the file and the problem, and no file lost; the cases that must work (a non-UTF-8 input name,
// a control character in a config string) are shown to work. The fuzzers' own copies of
// these inputs are in fuzz/regressions/.
#include <cstring>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>

#include "../train_fixture.h"
#include "reliability_util.h"
#include "util/sha256.h"

namespace frontier::testing {

namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A copy of the fixture's prepared dataset (400-token vocabulary) in a fresh directory: DIR/data.
std::string copy_dataset() {
  std::string dir = make_temp_dir("parser");
  fs::copy(dataset() + "/data", dir + "/data", fs::copy_options::recursive);
  return dir + "/data";
}

// Writes `bytes` as the dataset file `name` and records its size and SHA-256 in the manifest, so that verification
// passes and the parser of that file is reached.
void put_verified(const std::string& data, const std::string& name, const std::string& bytes) {
  write_text(data + "/" + name, bytes);
  nlohmann::json m = nlohmann::json::parse(slurp(data + "/manifest.json"));
  m["files"][name] = {{"bytes", bytes.size()}, {"sha256", sha256_hex(bytes)}};
  write_text(data + "/manifest.json", m.dump(2));
}

// A token shard header (data/shard.h) for the fixture's vocabulary, then `body`.
std::string shard(uint32_t width, uint64_t n_tokens, uint64_t n_docs, uint32_t bos, const std::string& body) {
  std::string h("FRTSHARD", 8);
  auto put = [&h](auto v) { h.append(reinterpret_cast<const char*>(&v), sizeof(v)); };
  put(uint32_t(1));
  put(uint32_t(64));
  put(uint32_t(400));
  put(width);
  put(n_tokens);
  put(n_docs);
  put(bos);
  h.append(20, '\0');
  return h + body;
}

template <typename T>
std::string bytes_of(std::initializer_list<T> v) {
  return std::string(reinterpret_cast<const char*>(std::data(v)), v.size() * sizeof(T));
}

Outcome inspect(const std::string& data) { return run_argv({frontier_bin(), "inspect", "--data", data}, 120); }

// A copy of the fixture's tokenizer with tokenizer.json edited by `edit`.
std::string tokenizer_with(const std::function<void(nlohmann::json&)>& edit) {
  std::string dir = make_temp_dir("parser_tok");
  fs::copy(dataset() + "/data/tokenizer", dir + "/tok", fs::copy_options::recursive);
  nlohmann::json j = nlohmann::json::parse(slurp(dir + "/tok/tokenizer.json"));
  edit(j);
  write_text(dir + "/tok/tokenizer.json", j.dump(2));
  return dir + "/tok";
}

Outcome encode(const std::string& tok_dir, const std::string& text) {
  return run_argv({frontier_bin(), "tokenizer", "--dir", tok_dir, "--text", text}, 60);
}

// The tiny model of train_fixture.h as an argument vector (no shell), plus extra.
std::vector<std::string> train_argv(const std::vector<std::string>& extra) {
  std::vector<std::string> a = {frontier_bin(), "train", "--budget", "30"};
  bool has_data = false;
  for (const auto& e : extra) has_data |= e == "--data";
  if (!has_data) a.insert(a.end(), {"--data", dataset() + "/data"});
  for (const char* kv : {"model.vocab_size=400", "model.depth=1", "model.dim=64", "model.head_dim=32",
                         "model.seq_len=32", "train.micro_batch=4", "eval.tokens=512", "eval.batch=4",
                         "train.max_steps=2"})
    a.insert(a.end(), {"--set", kv});
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

// A run of the tiny model, trained once per test process; its model.ckpt is copied before any edit.
std::string finished_run() {
  static std::string run = [] {
    std::string r = make_temp_dir("parser_run") + "/run";
    Outcome o = run_argv(train_argv({"--set", "train.peak_gflops=100", "--set", "train.run_dir=" + r}), 600);
    EXPECT_EQ(o.rc, 0) << o.err;
    return r;
  }();
  return run;
}

// The run's checkpoint with the uint64 header field at `at` replaced (24: n_weights, 32: n_state), in a new dir.
std::string checkpoint_with(size_t at, uint64_t value) {
  std::string ckpt = slurp(finished_run() + "/model.ckpt");
  std::memcpy(ckpt.data() + at, &value, 8);
  std::string dir = make_temp_dir("parser_ckpt");
  write_text(dir + "/model.ckpt", ckpt);
  return dir;
}

}  // namespace

// --- dataset manifest and shards (`frontier inspect`, train, eval bpb) ---

TEST(ParserReliability, ManifestFieldOfTheWrongTypeIsACleanError) {
  std::string data = copy_dataset();
  nlohmann::json m = nlohmann::json::parse(slurp(data + "/manifest.json"));
  m["files"]["token_bytes.bin"]["bytes"] = "1216";  // json::value threw type_error 302 (std::terminate)
  write_text(data + "/manifest.json", m.dump(2));
  DirSnapshot before = DirSnapshot::of(data);
  EXPECT_CLEAN_ERROR(inspect(data), "files entry \"token_bytes.bin\" needs \"bytes\" (a count)");
  EXPECT_TRUE(before.lost_or_changed(DirSnapshot::of(data)).empty());
  fs::remove_all(fs::path(data).parent_path());
}

TEST(ParserReliability, ShardCountsThatWrapTheSizeSumAreACleanError) {
  // 2^62 tokens of 4 bytes wrap the header's size sum to 0: the size matched, and the token scan read far past the
  // map (SIGSEGV).
  std::string data = copy_dataset();
  put_verified(data, "train_000.bin", shard(4, uint64_t(1) << 62, 1, 0, bytes_of<uint64_t>({0, uint64_t(1) << 62})));
  DirSnapshot before = DirSnapshot::of(data);
  EXPECT_CLEAN_ERROR(inspect(data), "train_000.bin: header claims 4611686018427387904 tokens");
  EXPECT_TRUE(before.lost_or_changed(DirSnapshot::of(data)).empty());
  fs::remove_all(fs::path(data).parent_path());
}

TEST(ParserReliability, ShardOffsetPastItsTokensIsACleanError) {
  // Offsets increasing, but past the 2 tokens before coming back: the BOS check of document 1 read token 2^40
  // (SIGSEGV). Now an offset past the tokens is refused where it appears.
  std::string data = copy_dataset();
  const uint32_t bos = 391;  // the fixture's <|bos|>: 400 - 9 specials
  std::string tokens = bytes_of<uint16_t>({uint16_t(bos), uint16_t(bos)});
  put_verified(data, "train_000.bin",
               shard(2, 2, 3, bos, tokens + bytes_of<uint64_t>({0, uint64_t(1) << 40, uint64_t(1) << 41, 2})));
  EXPECT_CLEAN_ERROR(inspect(data), "out-of-range document 0");
  fs::remove_all(fs::path(data).parent_path());
}

TEST(ParserReliability, TruncatedShardIsACleanError) {
  std::string data = copy_dataset();
  std::string bytes = slurp(data + "/train_000.bin");
  put_verified(data, "train_000.bin", bytes.substr(0, bytes.size() - 5));
  EXPECT_CLEAN_ERROR(inspect(data), "train_000.bin: size is " + std::to_string(bytes.size() - 5) + " bytes");
  fs::remove_all(fs::path(data).parent_path());
}

// --- tokenizer directory (`frontier tokenizer`, and every command that loads one) ---

TEST(ParserReliability, TokenizerVocabSizeOfTheWrongTypeIsACleanError) {
  std::string tok = tokenizer_with([](nlohmann::json& j) { j["vocab_size"] = "400"; });  // get<uint32_t> threw
  DirSnapshot before = DirSnapshot::of(tok);
  EXPECT_CLEAN_ERROR(encode(tok, "hello"), "tokenizer.json: vocab_size \"400\" does not match");
  EXPECT_TRUE(before.lost_or_changed(DirSnapshot::of(tok)).empty());
  fs::remove_all(fs::path(tok).parent_path());
}

TEST(ParserReliability, SpecialTokenIdOverTheLimitIsACleanError) {
  // 2^32 - 1 made vocab_size() wrap to 0.
  std::string tok = tokenizer_with([](nlohmann::json& j) { j["special_tokens"]["<|bos|>"] = 4294967295u; });
  EXPECT_CLEAN_ERROR(encode(tok, "hello"), "special token <|bos|> has id 4294967295, over the 2^24 limit");
  fs::remove_all(fs::path(tok).parent_path());
}

TEST(ParserReliability, RankFarPastTheLinesIsACleanError) {
  // One line claiming rank 2^24 - 1 allocated 2^24 empty ranks and a 2^25-slot table (1 GB) before failing.
  std::string tok = tokenizer_with([](nlohmann::json&) {});
  write_text(tok + "/tokenizer.tiktoken", "IQ== 16777215\n");
  EXPECT_CLEAN_ERROR(encode(tok, "hello"), "tokenizer.tiktoken:1: rank 16777215 in a file of 2 lines");
  fs::remove_all(fs::path(tok).parent_path());
}

TEST(ParserReliability, SplitPatternThatMatchesEmptyIsACleanError) {
  // "\p{N}{0,2}" matches the empty string: encoding stopped at a FRONTIER_CHECK (abort).
  std::string tok = tokenizer_with([](nlohmann::json& j) { j["pattern"] = "\\p{N}{0,2}"; });
  EXPECT_CLEAN_ERROR(encode(tok, "abc 123"), "the split pattern can match the empty string");
  fs::remove_all(fs::path(tok).parent_path());
}

TEST(ParserReliability, SplitPatternWithAnEmptyMatchIsRefused) {
  // "x\K" has a minimum length of 1 yet matches empty (\K drops the x): it aborted; then the x was dropped from the
  // encoding ("Hello  123" came back); now a pattern that leaves bytes out of every piece is refused when the
  // tokenizer loads (issue 33: the round trip of tokenizer/regex_split.h).
  std::string tok = tokenizer_with([](nlohmann::json& j) { j["pattern"] = "x\\K|\\p{L}+|\\s+|\\p{N}+"; });
  EXPECT_CLEAN_ERROR(encode(tok, "Hello x 123"), "leaves bytes out of every piece");
  fs::remove_all(fs::path(tok).parent_path());
}

// --- checkpoints (`frontier eval`, `sample`) ---

TEST(ParserReliability, CheckpointSizesThatWrapAreACleanError) {
  // n_weights + 2^62: 4 * n_weights wraps to the same size sum and the SHA-256 still matches; resize() threw.
  std::string ckpt = slurp(finished_run() + "/model.ckpt");
  uint64_t nw;
  std::memcpy(&nw, ckpt.data() + 24, 8);
  std::string dir = checkpoint_with(24, nw + (uint64_t(1) << 62));
  DirSnapshot before = DirSnapshot::of(dir);
  EXPECT_CLEAN_ERROR(run_argv({frontier_bin(), "eval", "bpb", "--checkpoint", dir + "/model.ckpt"}, 120),
                     "its header claims more bytes than the file's");
  EXPECT_TRUE(before.lost_or_changed(DirSnapshot::of(dir)).empty());
  fs::remove_all(dir);
}

TEST(ParserReliability, LoaderStateOfTheWrongTypeIsACleanError) {
  // train --resume: get<uint64_t> on "epoch": "x" threw type_error 302 (the CLI's catch-all "unexpected" error).
  std::string dir = make_temp_dir("parser_resume"), run = dir + "/run";
  Outcome t = run_argv(train_argv({"--set", "train.peak_gflops=100", "--set", "train.run_dir=" + run}), 600);
  ASSERT_EQ(t.rc, 0) << t.err;
  // one data stream's position (one process: one stream)
  rewrite_checkpoint_meta(run + "/model.ckpt", [](nlohmann::json& meta) { meta["loaders"][0]["epoch"] = "x"; });
  fs::remove(run + "/summary.txt");  // a finished run is refused before its loader state is read
  EXPECT_CLEAN_ERROR(run_argv({frontier_bin(), "train", "--resume", run}, 300),
                     "the checkpoint's loader state is corrupt");
  fs::remove_all(dir);
}

// --- the config (train --set and TOML; the copy inside every checkpoint) ---

TEST(ParserReliability, ConfigValueThatIsNotUtf8IsACleanError) {
  // It was accepted, and written into config.toml and the checkpoint, which then never loaded.
  EXPECT_CLEAN_ERROR(run_argv(train_argv({"--set", "train.run_dir=runs/\xff"}), 60),
                     "config key 'train.run_dir' is not valid UTF-8 at byte 5");
}

TEST(ParserReliability, DataDirThatIsNotUtf8IsACleanError) {
  // --data bypasses --set; train validates the whole config first. Before, it trained, then every checkpoint
  // failed on the data directory in its metadata (json::dump throws on invalid UTF-8).
  std::string dir = make_temp_dir("parser_u8");
  std::string data = dir + "/data\xfe";
  fs::copy(dataset() + "/data", data, fs::copy_options::recursive);
  EXPECT_CLEAN_ERROR(run_argv(train_argv({"--data", data, "--set", "train.run_dir=" + dir + "/run"}), 120),
                     "config key 'train.data' is not valid UTF-8");
  EXPECT_FALSE(fs::exists(dir + "/run/model.ckpt"));
  fs::remove_all(dir);
}

TEST(ParserReliability, ConfigStringWithAControlCharacterLoadsBackFromTheCheckpoint) {
  // to_toml wrote the \x01 raw, which TOML forbids: the checkpoint's config did not parse and eval refused it.
  std::string dir = make_temp_dir("parser_ctl");
  write_text(dir + "/c.toml", "[train]\nrun_dir = \"" + dir + "/run\\u0001x\"\n");
  Outcome t = run_argv(train_argv({"--config", dir + "/c.toml", "--set", "train.peak_gflops=100"}), 600);
  ASSERT_EQ(t.rc, 0) << t.err;
  Outcome e = run_argv({frontier_bin(), "eval", "bpb", "--checkpoint", dir + "/run\x01x/model.ckpt"}, 300);
  EXPECT_EQ(e.signal, 0) << e.err;
  EXPECT_EQ(e.rc, 0) << e.err;
  EXPECT_NE(e.out.find("val_bpb:"), std::string::npos) << e.out;
  fs::remove_all(dir);
}

// --- prepare's input names ---

TEST(ParserReliability, InputFileNameThatIsNotUtf8IsPrepared) {
  // Linux names are bytes: the manifest (JSON) shows them with U+FFFD; json::dump threw (std::terminate).
  std::string dir = make_temp_dir("parser_name");
  std::string jsonl;
  for (int i = 0; i < 40; i++) jsonl += "{\"text\": \"document " + std::to_string(i) + " of a small corpus\"}\n";
  write_text(dir + "/c\xff.jsonl", jsonl);
  Outcome o = run_argv({frontier_bin(), "prepare", "--train", dir + "/c\xff.jsonl", "--out", dir + "/data",
                        "--vocab-size", "265", "--quiet"},
                       120);
  EXPECT_EQ(o.signal, 0) << o.err;
  ASSERT_EQ(o.rc, 0) << o.err;
  nlohmann::json m = nlohmann::json::parse(slurp(dir + "/data/manifest.json"));
  EXPECT_EQ(m["inputs"]["train"][0]["path"], dir + "/c\xef\xbf\xbd.jsonl");
  EXPECT_EQ(inspect(dir + "/data").rc, 0);
  fs::remove_all(dir);
}

// --- the calibration file (train, bench and profile read it) ---

TEST(ParserReliability, MalformedCalibrationIsIgnoredWithAWarning) {
  // json::value threw on "threads": "2" (std::terminate in train, bench, profile). It is a cache: a file that is
  // not what `frontier calibrate` writes is ignored, with a warning naming it, and the peak is measured instead.
  std::string cache = make_temp_dir("parser_cache");
  write_text(cache + "/calibration.json", "{\"threads\": \"2\", \"fma_gflops\": 10.0}\n");
  DirSnapshot before = DirSnapshot::of(cache);
  Outcome o = run_argv(train_argv({"--set", "train.peak_gflops=0", "--set", "train.run_dir=" + cache + "/run"}), 600,
                       {"FRONTIER_CACHE=" + cache});
  EXPECT_EQ(o.signal, 0) << o.err;
  EXPECT_EQ(o.rc, 0) << o.err;
  EXPECT_NE(o.err.find("warning: " + cache + "/calibration.json: \"threads\" is not a number"), std::string::npos)
      << o.err;
  EXPECT_TRUE(before.lost_or_changed(DirSnapshot::of(cache), {"run"}).empty());
  fs::remove_all(cache);
}

}  // namespace frontier::testing

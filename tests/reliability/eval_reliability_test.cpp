// Issue 17, section 5: numbers that look right but are not. Each case once exited 0 with a wrong number; each is
// now a one-line error or a count in the result, asserted through the CLI where a user meets it:
//   1. the CORE bundle's metadata and rows are validated at load (file, line, bad value)
//   2. items longer than the model's context: cropped on the left and scored on whole answers, or counted as
//      too long (never scored on a shortened span); per-task and total counts in the table and JSON
//   3. non-finite logits in CORE are an error naming the task and the item
//   4. a split with fewer tokens than one batch is an error naming the count and the knobs
//   5. binary input to prepare is an error naming the file, also under --invalid-utf8=replace
//   6. eval / sample / prepare refuse negative, NaN and infinite option values
// The checkpoint is the tiny test model of train_fixture.h at T = 64, trained 2 steps once per process.
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>

#include "../train_fixture.h"
#include "eval/core_eval.h"
#include "eval/py_random.h"
#include "model/gpt.h"
#include "reliability_util.h"
#include "tokenizer/tokenizer.h"
#include "train/checkpoint.h"
#include "util/file.h"

namespace fs = std::filesystem;

namespace frontier::testing {

namespace {

constexpr int kT = 64;  // the test model's context

const std::string& checkpoint() {
  static const std::string path = [] {
    std::string run = dataset() + "/rel_run64";
    auto r = run_cmd(train_cmd("--budget 1000 --set train.max_steps=2 --set model.seq_len=" + std::to_string(kT) +
                               " --set train.run_dir=" + run));
    EXPECT_EQ(r.rc, 0) << r.out;
    return run + "/model.ckpt";
  }();
  return path;
}

std::string real_bundle() { return shared_data() + "/eval_bundle"; }

struct BundleTask {
  std::string label, uri, type;
  int shots;
  std::string delim_yaml;  // as written in core.yaml, "" = none
};
const BundleTask kCopa{"copa", "commonsense_reasoning/copa.jsonl", "multiple_choice", 0, ""};
const BundleTask kWinograd{"winograd", "language_understanding/winograd_wsc.jsonl", "schema", 0, ""};
const BundleTask kLambada{"lambada_openai", "language_understanding/lambada_openai.jsonl", "language_modeling", 0,
                          ""};
const BundleTask kPiqa{"piqa", "commonsense_reasoning/piqa.jsonl", "multiple_choice", 10, "\"\\nAnswer: \""};
const BundleTask kWinogrande{"winogrande", "language_understanding/winogrande.jsonl", "schema", 0, ""};

std::string core_yaml(const std::vector<BundleTask>& tasks) {
  std::string y = "icl_tasks:\n";
  for (const auto& t : tasks) {
    y += "-\n  label: " + t.label + "\n  dataset_uri: " + t.uri + "\n  num_fewshot: [" + std::to_string(t.shots) +
         "]\n  icl_task_type: " + t.type + "\n";
    if (!t.delim_yaml.empty()) y += "  continuation_delimiter: " + t.delim_yaml + "\n";
  }
  return y;
}

// A bundle at dir of real tasks: their core.yaml entries, the real eval_meta_data.csv and the real task files.
std::string make_bundle(const std::string& dir, const std::vector<BundleTask>& tasks) {
  fs::remove_all(dir);
  for (const auto& t : tasks) {
    fs::create_directories(fs::path(dir + "/eval_data/" + t.uri).parent_path());
    fs::copy_file(real_bundle() + "/eval_data/" + t.uri, dir + "/eval_data/" + t.uri);
  }
  fs::copy_file(real_bundle() + "/eval_meta_data.csv", dir + "/eval_meta_data.csv");
  write_text(dir + "/core.yaml", core_yaml(tasks));
  return dir;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::string text;
  EXPECT_TRUE(read_file(path, &text).ok()) << path;
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

void write_lines(const std::string& path, const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& l : lines) text += l + "\n";
  write_text(path, text);
}

// Replaces line n (1-based) of a file.
void set_line(const std::string& path, size_t n, const std::string& text) {
  auto lines = read_lines(path);
  ASSERT_LE(n, lines.size());
  lines[n - 1] = text;
  write_lines(path, lines);
}

// The line of a task's row in eval_meta_data.csv, and a copy with its "Random baseline" (column 6) replaced.
size_t csv_line(const std::string& path, const std::string& task) {
  auto lines = read_lines(path);
  for (size_t i = 0; i < lines.size(); i++)
    if (lines[i].rfind(task + ",", 0) == 0) return i + 1;
  ADD_FAILURE() << task << " not in " << path;
  return 0;
}

void set_baseline(const std::string& path, const std::string& task, const std::string& value) {
  auto lines = read_lines(path);
  std::string& l = lines[csv_line(path, task) - 1];
  size_t a = 0;
  for (int i = 0; i < 5; i++) a = l.find(',', a) + 1;  // the first 6 fields of these rows are unquoted
  l = l.substr(0, a) + value + l.substr(l.find(',', a));
  write_lines(path, lines);
}

Outcome eval_core(const std::string& bundle, const std::string& ckpt = checkpoint(),
                  const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv = {frontier_bin(), "eval", "core", "--checkpoint", ckpt, "--bundle", bundle,
                                   "--max-per-task", "4"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return run_argv(argv, 300);
}

// The model of train_fixture.h's train_cmd, as an argv.
std::vector<std::string> train_argv(const std::string& data, const std::string& run_dir) {
  std::vector<std::string> a = {frontier_bin(), "train", "--data", data, "--budget", "1000"};
  for (const char* kv : {"model.vocab_size=400", "model.depth=1", "model.dim=64", "model.head_dim=32",
                         "model.seq_len=32", "train.micro_batch=4", "eval.tokens=512", "eval.batch=4",
                         "train.peak_gflops=100", "train.max_steps=2"})
    a.insert(a.end(), {"--set", kv});
  a.insert(a.end(), {"--set", "train.run_dir=" + run_dir});
  return a;
}

uint64_t split_tokens(const std::string& data, const std::string& split) {
  std::string text;
  EXPECT_TRUE(read_file(data + "/manifest.json", &text).ok());
  return nlohmann::json::parse(text)["splits"][split]["tokens"].get<uint64_t>();
}

}  // namespace

// 1. A bundle of three real tasks (one per type) loads and scores; each defect is a one-line error naming the file,
// the line and the value. Before: a task missing from the metadata got baseline 0, a baseline of 100 gave CORE
// ~8e15, an item with one choice was scored correct.
TEST(EvalReliability, BundleIsValidatedAtLoad) {
  REQUIRE_SHARED_DATA();
  const std::string dir = dataset() + "/rel_bundle";
  const std::vector<BundleTask> tasks = {kCopa, kWinograd, kLambada};
  auto fresh = [&] { return make_bundle(dir, tasks); };
  fresh();
  Outcome ok = eval_core(dir);
  ASSERT_EQ(ok.rc, 0) << ok.err;
  EXPECT_NE(ok.out.find("CORE (3/3 tasks): "), std::string::npos) << ok.out;

  const std::string csv = dir + "/eval_meta_data.csv", copa = dir + "/eval_data/" + kCopa.uri,
                    wino = dir + "/eval_data/" + kWinograd.uri, lamb = dir + "/eval_data/" + kLambada.uri;
  struct Case {
    std::function<void()> corrupt;
    std::string want;
  };
  const std::string copa_line = std::to_string(csv_line(csv, "copa"));
  std::vector<Case> cases = {
      {[&] {
         auto lines = read_lines(csv);
         lines.erase(lines.begin() + csv_line(csv, "copa") - 1);
         write_lines(csv, lines);
       },
       "eval_meta_data.csv: no row for task 'copa' (" + dir + "/core.yaml:3)"},
      {[&] { set_baseline(csv, "copa", "100"); },
       "eval_meta_data.csv:" + copa_line +
           ": \"Random baseline\" of task 'copa' is '100'; must be a number in [0, 100)"},
      {[&] { set_baseline(csv, "copa", "-5"); },
       "eval_meta_data.csv:" + copa_line + ": \"Random baseline\" of task 'copa' is '-5'"},
      {[&] { set_baseline(csv, "copa", "nan"); }, "of task 'copa' is 'nan'"},
      {[&] { set_baseline(csv, "copa", "fifty"); }, "of task 'copa' is 'fifty'"},
      {[&] { set_baseline(csv, "piqa", "100"); }, "of task 'piqa' is '100'"},  // every row, used or not
      {[&] { set_line(copa, 1, R"({"query": "Q", "choices": ["only"], "gold": 0})"); },
       "copa.jsonl:1: \"choices\" is [\"only\"] (a list); an item needs at least 2 options"},
      {[&] { set_line(copa, 2, R"({"query": "Q", "choices": ["a", "b"], "gold": 2})"); },
       "copa.jsonl:2: \"gold\" is 2 (a number); must be an integer index of the 2 options (0..1)"},
      {[&] { set_line(copa, 3, R"({"query": "Q", "choices": ["a", "b"], "gold": "1"})"); },
       "copa.jsonl:3: \"gold\" is \"1\" (a string); must be an integer index"},
      {[&] { set_line(copa, 4, R"({"query": "Q", "choices": ["a", 3], "gold": 0})"); },
       "copa.jsonl:4: \"choices\"[1] is 3 (a number); must be a string"},
      {[&] { set_line(copa, 5, R"({"query": 7, "choices": ["a", "b"], "gold": 0})"); },
       "copa.jsonl:5: \"query\" is 7 (a number); must be a string"},
      {[&] { set_line(wino, 1, R"({"context_options": ["a", "b"], "continuation": 5, "gold": 0})"); },
       "winograd_wsc.jsonl:1: \"continuation\" is 5 (a number); must be a string"},
      {[&] { set_line(wino, 2, R"({"context_options": ["a"], "continuation": "c", "gold": 0})"); },
       "winograd_wsc.jsonl:2: \"context_options\" is [\"a\"] (a list); an item needs at least 2 options"},
      {[&] { set_line(lamb, 3, R"({"continuation": "word"})"); },
       "lambada_openai.jsonl:3: missing string field \"context\""},
      {[&] { set_line(lamb, 4, R"({"context": "text", "continuation": null})"); },
       "lambada_openai.jsonl:4: \"continuation\" is null; must be a string"},
      {[&] { write_text(dir + "/core.yaml", core_yaml({kCopa, kWinograd, kCopa})); },
       "core.yaml:13: duplicate label 'copa' (also at line 3)"},
      {[&] {
         BundleTask t = kWinograd;
         t.shots = 300;
         write_text(dir + "/core.yaml", core_yaml({kCopa, t}));
       },
       "winograd_wsc.jsonl: 273 rows, but task 'winograd' is 300-shot (" + dir + "/core.yaml:8): needs at least 301"},
      {[&] {
         std::string y = core_yaml({kCopa});
         size_t p = y.find("[0]");
         write_text(dir + "/core.yaml", y.substr(0, p) + "0" + y.substr(p + 3));  // a scalar, not a list
       },
       "core.yaml:3: num_fewshot of task 'copa' must be a list whose first entry is an integer >= 0, like [10]"},
  };
  for (const auto& c : cases) {
    fresh();
    c.corrupt();
    DirSnapshot before = DirSnapshot::of(dir);
    Outcome o = eval_core(dir);
    EXPECT_CLEAN_ERROR(o, c.want);
    EXPECT_TRUE(before.lost_or_changed(DirSnapshot::of(dir)).empty()) << c.want;
  }
  fs::remove_all(dir);
}

// 2. The crop rule is the same for the three task types: a sequence longer than max_len keeps its last max_len
// tokens and its span shifts down; the item is scorable only if every span keeps a token before it.
TEST(EvalReliability, CropRuleIsTheSameForEveryTaskType) {
  CoreSequences s;
  // MC: shared prefix [1 2 3 4]; answers [5 6] and [7].
  const std::vector<std::vector<uint32_t>> mc = {{1, 2, 3, 4, 5, 6}, {1, 2, 3, 4, 7}};
  ASSERT_TRUE(core_spans(CoreTaskType::kMultipleChoice, mc, 0, &s));
  EXPECT_EQ(s.cropped, 0);
  EXPECT_TRUE(s.answer_fits);
  ASSERT_TRUE(core_spans(CoreTaskType::kMultipleChoice, mc, 3, &s));  // answer + 1 token before it: 3 fits
  EXPECT_EQ(s.tokens[0], (std::vector<uint32_t>{4, 5, 6}));
  EXPECT_EQ(s.start, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(s.end, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(s.cropped, 3);
  EXPECT_TRUE(s.answer_fits);
  ASSERT_TRUE(core_spans(CoreTaskType::kMultipleChoice, mc, 2, &s));  // [5 6] has no token before it in 2
  EXPECT_FALSE(s.answer_fits);
  // Schema: shared suffix [8 9]; contexts differ.
  const std::vector<std::vector<uint32_t>> sc = {{1, 2, 3, 8, 9}, {1, 4, 8, 9}};
  ASSERT_TRUE(core_spans(CoreTaskType::kSchema, sc, 3, &s));
  EXPECT_EQ(s.start, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(s.cropped, 2);
  EXPECT_TRUE(s.answer_fits);
  ASSERT_TRUE(core_spans(CoreTaskType::kSchema, sc, 2, &s));
  EXPECT_FALSE(s.answer_fits);
  // LM: continuation [4 5].
  const std::vector<std::vector<uint32_t>> lm = {{1, 2, 3}, {1, 2, 3, 4, 5}};
  ASSERT_TRUE(core_spans(CoreTaskType::kLanguageModeling, lm, 3, &s));
  EXPECT_EQ(s.tokens[0], (std::vector<uint32_t>{3, 4, 5}));
  EXPECT_EQ(s.start[0], 1);
  EXPECT_TRUE(s.answer_fits);
  ASSERT_TRUE(core_spans(CoreTaskType::kLanguageModeling, lm, 2, &s));
  EXPECT_FALSE(s.answer_fits);
  // An option whose tokens are a prefix of another's (real piqa items) keeps its last token scored.
  ASSERT_TRUE(core_spans(CoreTaskType::kMultipleChoice, {{1, 5, 6}, {1, 5, 6, 7}}, 0, &s));
  EXPECT_EQ(s.start, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(s.end, (std::vector<int64_t>{3, 4}));
}

// 2. Real piqa (10-shot), winogrande and lambada items at T = 64: the CLI's per-task and total crop counts equal
// the rule applied here to the uncropped token spans (too long: an answer + the token before it exceeds T;
// cropped: otherwise longer than T), in the table and the JSON; too-long items are never counted correct.
// Before: both kinds were scored, the second on a span clamped to position 1.
TEST(EvalReliability, CropCountsOnRealItems) {
  REQUIRE_SHARED_DATA();
  const std::string dir = make_bundle(dataset() + "/rel_crop", {kPiqa, kWinogrande, kLambada});
  const int per_task = 40;
  const std::string json_path = dataset() + "/rel_crop.json";
  Outcome o = run_argv({frontier_bin(), "eval", "core", "--checkpoint", checkpoint(), "--bundle", dir,
                        "--max-per-task", std::to_string(per_task), "--json", json_path},
                       300);
  ASSERT_EQ(o.rc, 0) << o.err;
  std::string text;
  ASSERT_TRUE(read_file(json_path, &text).ok());
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["seq_len"].get<int>(), kT);

  Tokenizer tok;
  ASSERT_TRUE(tok.load(dataset() + "/data/tokenizer").ok());
  CoreBundle bundle;
  ASSERT_TRUE(load_core_bundle(dir, &bundle).ok());
  int64_t total_cropped = 0, total_too_long = 0;
  for (size_t ti = 0; ti < bundle.tasks.size(); ti++) {
    const CoreTask& task = bundle.tasks[ti];
    std::vector<CoreItem> data = task.rows;
    PyRandom(1337).shuffle(data);
    data.resize(per_task);
    int64_t cropped = 0, too_long = 0;
    for (size_t idx = 0; idx < data.size(); idx++) {
      std::vector<size_t> avail;
      for (size_t i = 0; i < data.size(); i++)
        if (i != idx) avail.push_back(i);
      std::vector<CoreItem> shots;
      for (size_t i : PyRandom(1234 + idx).sample(avail, task.num_fewshot)) shots.push_back(data[i]);
      std::vector<std::vector<uint32_t>> tokens;
      for (const auto& p : render_core_prompts(task.type, data[idx], task.delimiter, shots)) {
        tokens.push_back({tok.bos_id()});
        tok.encode_ordinary(p, &tokens.back());
      }
      CoreSequences whole;
      ASSERT_TRUE(core_spans(task.type, tokens, 0, &whole));
      int64_t longest = 0, answer = 0;
      for (size_t c = 0; c < whole.tokens.size(); c++) {
        longest = std::max<int64_t>(longest, whole.tokens[c].size());
        answer = std::max(answer, whole.end[c] - whole.start[c]);
      }
      if (answer + 1 > kT) too_long++;
      else if (longest > kT) cropped++;
    }
    const auto& r = j["tasks"][ti];
    ASSERT_EQ(r["label"], task.label);
    EXPECT_EQ(r["items"].get<int64_t>(), per_task) << task.label;
    EXPECT_EQ(r["cropped"].get<int64_t>(), cropped) << task.label;
    EXPECT_EQ(r["too_long"].get<int64_t>(), too_long) << task.label;
    EXPECT_LE(r["correct"].get<int64_t>(), per_task - too_long) << task.label;
    std::printf("[crop] %-12s %d items at T=%d: %lld cropped, %lld too long\n", task.label.c_str(), per_task, kT,
                static_cast<long long>(cropped), static_cast<long long>(too_long));
    if (task.label == "piqa") {  // the fixture exercises both outcomes
      EXPECT_GT(cropped, 0);
      EXPECT_GT(too_long, 0);
    }
    total_cropped += cropped;
    total_too_long += too_long;
  }
  EXPECT_EQ(j["items_cropped"].get<int64_t>(), total_cropped);
  EXPECT_EQ(j["items_too_long"].get<int64_t>(), total_too_long);
  EXPECT_NE(o.out.find("context 64 tokens: " + std::to_string(total_cropped) + " items cropped on the left and "
                       "scored on their whole answers; " + std::to_string(total_too_long) +
                       " items whose answers do not fit, scored incorrect"),
            std::string::npos)
      << o.out;
  fs::remove_all(dir);
}

// 3. Weights that make logits non-finite are an error naming the task and the item, not a plausible CORE. NaN in
// the file is caught at load; finite weights whose logits overflow (lm_head at 3e38) reach CORE's own check; in
// memory, NaN and Inf reach it directly (a softcapped head maps Inf to a finite loss: the logits are checked).
TEST(EvalReliability, NonFiniteLogitsAreAnError) {
  REQUIRE_SHARED_DATA();
  const std::string dir = make_bundle(dataset() + "/rel_nan_bundle", {kCopa});
  std::string toml, meta;
  std::vector<float> w, st;
  ASSERT_TRUE(load_checkpoint(checkpoint(), &toml, &meta, &w, &st).ok());
  Config cfg;
  std::unique_ptr<Gpt> gpt;
  ASSERT_TRUE(load_trained_model(checkpoint(), &cfg, &gpt).ok());
  auto poisoned = [&](const std::string& param, float v) {
    std::string path = dataset() + "/rel_bad_" + param + "/model.ckpt";
    fs::create_directories(fs::path(path).parent_path());
    std::vector<float> bad = w;
    const auto& p = gpt->param(param);
    std::fill(bad.begin() + p.offset, bad.begin() + p.offset + p.numel(), v);
    EXPECT_TRUE(save_checkpoint(path, toml, meta, bad, st).ok());
    return path;
  };
  Outcome o = eval_core(dir, poisoned("wte", NAN));
  EXPECT_CLEAN_ERROR(o, "NaN");
  o = eval_core(dir, poisoned("lm_head", 3e38f));
  EXPECT_CLEAN_ERROR(o, "CORE task copa, item commonsense_reasoning/copa.jsonl:");
  EXPECT_CLEAN_ERROR(o, "non-finite logit");

  Tokenizer tok;
  ASSERT_TRUE(tok.load(dataset() + "/data/tokenizer").ok());
  CoreBundle bundle;
  ASSERT_TRUE(load_core_bundle(dir, &bundle).ok());
  CoreReport rep;
  ASSERT_TRUE(evaluate_core(*gpt, tok, bundle, 3, &rep, false).ok());  // finite: a number
  for (auto [param, v] : {std::pair<const char*, float>{"wte", NAN}, {"lm_head", INFINITY}}) {
    const auto& p = gpt->param(param);
    std::vector<float> keep(gpt->weights().begin() + p.offset, gpt->weights().begin() + p.offset + p.numel());
    gpt->data(param)[0] = v;                         // one weight: token 0's embedding, or logit 0's row
    if (std::string(param) == "wte") gpt->data(param)[int64_t(tok.bos_id()) * gpt->shape().dim] = v;  // BOS's too
    Status s = evaluate_core(*gpt, tok, bundle, 3, &rep, false);
    ASSERT_FALSE(s.ok()) << param;
    EXPECT_NE(s.message().find("CORE task copa, item commonsense_reasoning/copa.jsonl:"), std::string::npos)
        << s.message();
    EXPECT_NE(s.message().find(std::isnan(v) ? "non-finite logit (NaN)" : "non-finite logit ("), std::string::npos)
        << s.message();
    std::copy(keep.begin(), keep.end(), gpt->weights().begin() + p.offset);
  }
  fs::remove_all(dir);
}

// 4. A train split with fewer tokens than one batch of B x (T+1) is an error naming the split, its token count and
// the knobs. Before: the loader wrapped around it, repeating its documents in every batch, and trained on that.
// A val split shorter than eval.tokens is scored whole, each target once (data/val_windows.h), with a warning naming
// the count, and `eval bpb` prints the tokens it scored, not the tokens it was asked for.
TEST(EvalReliability, ShortSplitsAreAnErrorToTrainAndScoredWholeWithAWarning) {
  const std::string d = dataset() + "/rel_tiny";
  fs::create_directories(d);
  write_text(d + "/tiny.jsonl", "{\"text\": \"a few words.\"}\n{\"text\": \"and a few more.\"}\n"
                                "{\"text\": \"then two.\"}\n{\"text\": \"the end.\"}\n");
  const std::string tok = dataset() + "/data/tokenizer";
  auto prep = run_argv({frontier_bin(), "prepare", "--quiet", "--train", d + "/tiny.jsonl", "--tokenizer", tok,
                        "--val-every", "2", "--out", d + "/small_train"});
  ASSERT_EQ(prep.rc, 0) << prep.err;
  Outcome o = run_argv(train_argv(d + "/small_train", d + "/run"), 120);
  EXPECT_CLEAN_ERROR(o, "the train split (" + d + "/small_train/train_*.bin) has " +
                            std::to_string(split_tokens(d + "/small_train", "train")) + " tokens in 2 documents, "
                            "fewer than one batch of B x (T+1) = 4 x 33 = 132");
  EXPECT_CLEAN_ERROR(o, "Lower model.seq_len, or the rows per batch (train.micro_batch to train, eval.batch for "
                        "val_bpb), or give the split more text");

  prep = run_argv({frontier_bin(), "prepare", "--quiet", "--train", dataset() + "/c.jsonl", "--val",
                   d + "/tiny.jsonl", "--tokenizer", tok, "--out", d + "/small_val"});
  ASSERT_EQ(prep.rc, 0) << prep.err;
  o = run_argv({frontier_bin(), "eval", "bpb", "--checkpoint", checkpoint(), "--data", d + "/small_val",
                "--cross-data"},
               120);
  ASSERT_EQ(o.rc, 0) << o.err;
  // Every document scores its tokens after the first (its BOS): 4 documents.
  const std::string targets = std::to_string(split_tokens(d + "/small_val", "val") - 4);
  EXPECT_NE(o.err.find("warning: scoring the whole val split of " + d + "/small_val, " + targets +
                       " tokens, fewer than the 512 asked (lower eval.tokens, or eval bpb --tokens)"),
            std::string::npos)
      << o.err;
  EXPECT_NE(o.out.find("(" + targets + " tokens at seq_len 64; standard error of the sample "), std::string::npos) << o.out;
  fs::remove_all(d);
}

// 5. A binary file given to prepare is an error naming it, also under --invalid-utf8=replace (which once turned a
// Parquet file into U+FFFD text and trained on it); so is text that is mostly not UTF-8. Stray bytes still repair.
TEST(EvalReliability, BinaryInputToPrepareIsAnError) {
  REQUIRE_SHARED_DATA();
  const std::string d = make_temp_dir("rel_binary");
  fs::create_directories(d + "/in");
  fs::copy_file(shared_data() + "/parquet/danish_tweets_text_label_test.parquet", d + "/in/tweets.txt");
  std::string latin1;
  for (int i = 0; i < 200; i++) latin1 += "caf\xE9 ";  // Latin-1: 200 invalid bytes in 1000
  write_text(d + "/in/latin1.txt", latin1);
  std::string nul_line = "{\"text\": \"a";
  nul_line += '\0';  // at byte 11 of the line
  write_text(d + "/in/nul.jsonl", "{\"text\": \"fine\"}\n" + nul_line + "b\"}\n");
  const std::string tok = dataset() + "/data/tokenizer";
  DirSnapshot before = DirSnapshot::of(d + "/in");
  auto prep = [&](const std::string& input, const std::string& policy) {
    return run_argv({frontier_bin(), "prepare", "--quiet", "--train", d + "/in/" + input, "--tokenizer", tok,
                     "--invalid-utf8", policy, "--out", d + "/out"});
  };
  for (const char* policy : {"replace", "error"}) {
    EXPECT_CLEAN_ERROR(prep("tweets.txt", policy), d + "/in/tweets.txt: binary data (a NUL byte at byte ");
    EXPECT_CLEAN_ERROR(prep("nul.jsonl", policy), d + "/in/nul.jsonl:2: binary data (a NUL byte at byte 11 of "
                                                      "the line), not JSON Lines text");
  }
  EXPECT_CLEAN_ERROR(prep("latin1.txt", "replace"),
                     d + "/in/latin1.txt: not UTF-8 text (200 invalid sequences in 1000 bytes, 20.0%; the first at "
                         "byte 3): --invalid-utf8=replace repairs stray bytes");
  EXPECT_TRUE(before.lost_or_changed(DirSnapshot::of(d + "/in")).empty());
  // Real text with a few stray bytes: repaired under replace, as before.
  fs::create_directories(d + "/ok");
  for (int i = 0; i < 4; i++)
    write_text(d + "/ok/doc" + std::to_string(i) + ".txt", "plain text, a stray \xFF byte, more text.");
  Outcome ok = run_argv({frontier_bin(), "prepare", "--quiet", "--train", d + "/ok", "--tokenizer", tok,
                         "--val-every", "2", "--invalid-utf8", "replace", "--out", d + "/out"});
  EXPECT_EQ(ok.rc, 0) << ok.err;
  fs::remove_all(d);
}

// 6. Negative counts, NaN and infinite temperatures, negative top-k / seed / threads are refused by the parser
// (CLI11 validators; NaN fails them explicitly), and evaluate_core refuses a negative max_per_task itself.
// Before: --max-per-task -1 meant "all", --tokens -5 meant "default" or 0, --temperature nan sampled garbage.
TEST(EvalReliability, OptionValuesAreValidated) {
  REQUIRE_SHARED_DATA();
  const std::string ck = checkpoint(), b = real_bundle(), out = dataset() + "/rel_opt.json";
  struct Case {
    std::vector<std::string> args;
    std::string option;
  };
  const std::vector<Case> cases = {
      {{"eval", "core", "--checkpoint", ck, "--bundle", b, "--json", out, "--max-per-task", "-1"}, "--max-per-task"},
      {{"eval", "score", "--checkpoint", ck, "--bundle", b, "--json", out, "--max-per-task", "-3"}, "--max-per-task"},
      {{"eval", "core", "--checkpoint", ck, "--bundle", b, "--max-per-task", "nan"}, "--max-per-task"},
      {{"eval", "bpb", "--checkpoint", ck, "--tokens", "-5"}, "--tokens"},
      {{"sample", "--checkpoint", ck, "--tokens", "-1"}, "--tokens"},
      {{"sample", "--checkpoint", ck, "--temperature", "nan"}, "--temperature"},
      {{"sample", "--checkpoint", ck, "--temperature", "-0.5"}, "--temperature"},
      {{"sample", "--checkpoint", ck, "--temperature", "inf"}, "--temperature"},
      {{"sample", "--checkpoint", ck, "--temperature", "1e39"}, "--temperature"},  // inf as a float
      {{"sample", "--checkpoint", ck, "--top-k", "-1"}, "--top-k"},
      {{"sample", "--checkpoint", ck, "--seed", "-1"}, "--seed"},  // was read as 2^64 - 1
      {{"prepare", "--quiet", "--threads", "-2"}, "--threads"},
      {{"prepare", "--quiet", "--shard-tokens", "-1"}, "--shard-tokens"},
      {{"prepare", "--quiet", "--tokenizer-max-chars", "0"}, "--tokenizer-max-chars"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv = {frontier_bin()};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    Outcome o = run_argv(argv, 60);
    std::string cmd;
    for (const auto& a : c.args) cmd += " " + a;
    // CLI11 refuses them ("--opt: Value ... is not ..."), as the app's one-line error.
    SCOPED_TRACE(cmd);
    EXPECT_CLEAN_ERROR(o, c.option + ": Value ");
    EXPECT_TRUE(o.out.empty()) << cmd << "\n" << o.out;
    EXPECT_FALSE(fs::exists(out)) << cmd;
  }
  Config cfg;
  std::unique_ptr<Gpt> gpt;
  ASSERT_TRUE(load_trained_model(ck, &cfg, &gpt).ok());
  Tokenizer tok;
  ASSERT_TRUE(tok.load(dataset() + "/data/tokenizer").ok());
  CoreBundle bundle;
  CoreReport rep;
  Status s = evaluate_core(*gpt, tok, bundle, -1, &rep, false);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--max-per-task is -1; must be >= 0"), std::string::npos) << s.message();
}

}  // namespace frontier::testing

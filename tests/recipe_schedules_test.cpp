// The warm-ups and the untie (issue 34's remaining recipe levers): train.seq_warmup_ratio / train.seq_len_start,
// train.window_warmup_ratio / train.window_start and model.untie_at. Each schedule's defining values, one-line
// errors for bad values, and a short run per lever through the CLI: its log shows the schedule acting, a run killed
// after a checkpoint inside the warm-up (for the untie: before and after it) resumes bit for bit, and the scorer
// reads the final model (the final window; the untied head, also from `frontier export`). The loader's change of
// row length is in loader_test.cpp (BestFitLoader.RowLengthChangesKeepEveryDocument); under mpirun in tests/mpi
// (Mpi.RecipeLeversEqualOneProcess).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <sstream>
#include <string>

#include "export/model_dir.h"
#include "model/gpt.h"
#include "train/checkpoint.h"
#include "train/schedule.h"
#include "train/schema.h"
#include "train_fixture.h"
#include "util/file.h"

using namespace frontier;
using namespace frontier::testing;

namespace {

// One field of every log.jsonl line, as text ("" where a line lacks it).
std::vector<std::string> log_field(const std::string& run, const std::string& key) {
  std::string log;
  EXPECT_TRUE(read_file(run + "/log.jsonl", &log).ok()) << run;
  std::vector<std::string> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    auto rec = nlohmann::json::parse(line);
    out.push_back(!rec.contains(key) ? "" : rec[key].is_string() ? rec[key].get<std::string>() : rec[key].dump());
  }
  return out;
}

struct Ckpt {
  std::string toml, meta;
  std::vector<float> w, st;
};
Ckpt ckpt(const std::string& run) {
  Ckpt c;
  Status s = load_checkpoint(run + "/model.ckpt", &c.toml, &c.meta, &c.w, &c.st);
  EXPECT_TRUE(s.ok()) << s.message();
  return c;
}

// Runs compared bit for bit share a precision: train.precision = auto measures bf16 against fp32 at every start,
// and on a loaded machine two starts can choose differently.
const std::string kFixed = "--budget 1000 --set train.precision=fp32 ";

// One parameter of a checkpoint's weights, located by the parameter table of its config's model.
std::vector<float> param_of(const Ckpt& c, const std::string& name) {
  ConfigSchema schema = train_schema();
  Config cfg = schema.defaults();
  ModelShape m;
  EXPECT_TRUE(schema.load_toml_string(c.toml, "config.toml", &cfg).ok());
  EXPECT_TRUE(derive_model_shape(cfg, &m).ok());
  for (const auto& p : Gpt::param_table(m))
    if (p.name == name) return std::vector<float>(c.w.begin() + p.offset, c.w.begin() + p.offset + p.numel());
  ADD_FAILURE() << "no parameter " << name;
  return {};
}

// Six steps with `levers`, a checkpoint after each; the same run killed after step `cut` (FRONTIER_FAULT_EXIT_...)
// and resumed (`killed` first sees the killed run's directory). Expects the resumed run's val_bpb, weights and
// optimizer state to be the full run's, bit for bit; returns the full run's output.
std::string expect_resume_bit_exact(const std::string& name, const std::string& levers, int cut,
                                    const std::string& full_out = "",
                                    const std::function<void(const std::string&)>& killed = nullptr) {
  const std::string full = dataset() + "/" + name, part = full + "_cut" + std::to_string(cut);
  const std::string common = kFixed + "--set train.max_steps=6 --set train.checkpoint_every_steps=1 " + levers;
  std::string out = full_out;
  if (out.empty()) {
    auto a = run_cmd(train_cmd(common + " --set train.run_dir=" + full));
    EXPECT_EQ(a.rc, 0) << a.out;
    out = a.out;
  }
  auto b = run_cmd("FRONTIER_FAULT_EXIT_AFTER_STEP=" + std::to_string(cut) + " " +
                   train_cmd(common + " --set train.run_dir=" + part));
  EXPECT_EQ(b.rc, 75) << b.out;
  if (killed) killed(part);
  auto c = run_cmd(frontier_bin() + " train --resume " + part);
  EXPECT_EQ(c.rc, 0) << c.out;
  EXPECT_NE(c.out.find("resumed " + part + " at step " + std::to_string(cut)), std::string::npos) << c.out;
  EXPECT_EQ(summary_value(out, "val_bpb"), summary_value(c.out, "val_bpb")) << c.out;
  const Ckpt x = ckpt(full), y = ckpt(part);
  EXPECT_TRUE(x.w == y.w) << name << " cut at " << cut << ": the resumed run's weights differ";
  EXPECT_TRUE(x.st == y.st) << name << " cut at " << cut << ": the resumed run's optimizer state differs";
  EXPECT_EQ(log_field(full, "loss"), log_field(part, "loss"));
  return out;
}

// `frontier eval bpb` on a run's checkpoint, in a fresh process (no schedule): the summary's val_bpb.
void expect_eval_matches(const std::string& run, const std::string& train_out) {
  auto e = run_cmd(frontier_bin() + " eval bpb --data " + dataset() + "/data --checkpoint " + run + "/model.ckpt");
  ASSERT_EQ(e.rc, 0) << e.out;
  char want[32];
  std::snprintf(want, sizeof(want), "%.6f", summary_value(train_out, "val_bpb"));
  EXPECT_NE(e.out.find(want), std::string::npos) << e.out << " vs " << want;
}

}  // namespace

TEST(RecipeSchedules, WarmupsHaveTheirDefiningValues) {
  // Sequence length: the start length while progress is below the warm-up, then the full one; off: always full.
  EXPECT_EQ(seq_len_at(0.0, 512, 0.3, 128), 128);
  EXPECT_EQ(seq_len_at(0.29, 512, 0.3, 128), 128);
  EXPECT_EQ(seq_len_at(0.3, 512, 0.3, 128), 512);
  EXPECT_EQ(seq_len_at(0.0, 512, 0.0, 128), 512);
  // Window: start + (window - start) x progress / warm-up, rounded down to a multiple of 64, never below start.
  EXPECT_EQ(window_at(0.0, 512, 0.5, 64), 64);
  EXPECT_EQ(window_at(0.25, 512, 0.5, 64), 256);   // 64 + 448 / 2 = 288 -> 256
  EXPECT_EQ(window_at(0.49, 512, 0.5, 64), 448);   // 503 -> 448
  EXPECT_EQ(window_at(0.5, 512, 0.5, 64), 512);
  EXPECT_EQ(window_at(0.1, 512, 0.5, 100), 128);   // 100 + 412 / 5 = 182.4 -> 128
  EXPECT_EQ(window_at(0.05, 512, 0.5, 100), 128);  // 141.2 -> 128
  EXPECT_EQ(window_at(0.01, 512, 0.5, 100), 100);  // 108.2 -> 64, below the start: the start
  EXPECT_EQ(window_at(0.3, 16, 0.5, 4), 4);        // windows below 64 stay at the start until the end
  EXPECT_EQ(window_at(0.3, 512, 0.0, 64), 512);    // off
}

TEST(RecipeSchedules, BadValuesGetOneLineErrors) {
  struct Case {
    std::string set, want;
  };
  const std::string seq = "--set train.seq_warmup_ratio=0.3 ", sl = "--set model.window_pattern=SL ";
  for (const Case& k : std::vector<Case>{
           {seq + "--set train.seq_len_start=12", "train.seq_len_start = 12 does not divide model.seq_len = 32"},
           {seq + "--set train.seq_len_start=32", "train.seq_len_start = 32 does not divide model.seq_len = 32"},
           {seq + "--set model.seq_len=30", "train.seq_len_start = 0 (model.seq_len / 4 = 7) does not divide"},
           {"--set train.seq_warmup_ratio=1.5", "train.seq_warmup_ratio"},
           {"--set train.window_warmup_ratio=0.5", "train.window_warmup_ratio needs S layers"},
           {sl + "--set train.window_warmup_ratio=0.5", "train.window_warmup_ratio needs S layers"},  // 128 >= 32
           {sl + "--set model.depth=2 --set model.short_window=16 --set train.window_warmup_ratio=0.5 "
                 "--set train.window_start=16",
            "train.window_start = 16 is not below the S layers' window (16 tokens"},
           {"--set train.window_start=0", "train.window_start"},
           {"--set model.untie_at=0.5", "model.untie_at = 0.5 needs model.tie_embeddings = true"},
           {"--set model.tie_embeddings=true --set model.untie_at=1", "model.untie_at is '1'; use a fraction"}}) {
    auto r = run_cmd(train_cmd(k.set + " --set train.run_dir=" + dataset() + "/bad_schedule"));
    EXPECT_NE(r.rc, 0) << k.set;
    EXPECT_NE(r.out.find(k.want), std::string::npos) << k.set << ": " << r.out;
    EXPECT_EQ(r.out.find("Assertion"), std::string::npos) << r.out;
  }
}

// Rows of 8 tokens, 16 of them (4 x 32 / 8), over the first half: the log's seq_len, the same tokens per step.
TEST(RecipeSchedules, SequenceWarmupTrainsAndResumesBitExactly) {
  const std::string levers = "--set train.seq_warmup_ratio=0.5 --set train.seq_len_start=8";
  const std::string out = expect_resume_bit_exact("seq_warmup", levers, 2);
  EXPECT_NE(out.find("recipe: sequence warm-up 8 tokens over 0.5"), std::string::npos) << out;
  EXPECT_NE(out.find("sequence warm-up: micro-batches of 16 x 8 tokens until 50% of the run (steps 1-3 of 6), then "
                     "4 x 32 (128 tokens each way"), std::string::npos) << out;
  const std::string run = dataset() + "/seq_warmup";
  EXPECT_EQ(log_field(run, "seq_len"), (std::vector<std::string>{"8", "8", "8", "32", "32", "32"}));
  EXPECT_EQ(nlohmann::json::parse(ckpt(run).meta)["tokens"], 6 * 128);  // 128 tokens a step, warm-up or not
  expect_eval_matches(run, out);
}

// Two layers, the first S (window 16 of 32 tokens), its window 4 over the first half (the multiples of 64 in
// between are all above 16); the scorer, in this process and in a fresh one, sees the final window.
TEST(RecipeSchedules, WindowWarmupTrainsResumesAndScoresTheFinalWindow) {
  const std::string levers = "--set model.depth=2 --set model.window_pattern=SL --set model.short_window=16 "
                             "--set train.window_warmup_ratio=0.5 --set train.window_start=4";
  const std::string out = expect_resume_bit_exact("window_warmup", levers, 2);
  EXPECT_NE(out.find("window warm-up: S layers see 4 tokens, growing to 16 (multiples of 64) until 50% of the run "
                     "(steps 1-3 of 6); evaluation uses 16"), std::string::npos) << out;
  const std::string run = dataset() + "/window_warmup";
  EXPECT_EQ(log_field(run, "window"), (std::vector<std::string>{"4", "4", "4", "16", "16", "16"}));
  expect_eval_matches(run, out);
  // The warm-up acts: the same run without it differs from its second step (the first has zero attention
  // outputs: attn.c_proj starts at zero).
  auto b = run_cmd(train_cmd(kFixed + "--set train.max_steps=2 --set model.depth=2 --set model.window_pattern=SL "
                             "--set model.short_window=16 --set train.run_dir=" + dataset() + "/window_none"));
  ASSERT_EQ(b.rc, 0) << b.out;
  const std::vector<std::string> warm = log_field(run, "loss"), none = log_field(dataset() + "/window_none", "loss");
  EXPECT_EQ(warm[0], none[0]);
  EXPECT_NE(warm[1], none[1]);
}

// Tied until half the run (steps 1-3 of 6), then an lm_head of its own: until then the very losses of the tied
// model; a checkpoint before the untie holds lm_head = wte (what eval and export read), one after holds a head
// trained apart; both resume bit for bit, and `frontier export` writes an untied model whose lm_head is the head.
TEST(RecipeSchedules, UntieTrainsResumesBeforeAndAfterAndExportsTheHead) {
  const std::string levers = "--set model.tie_embeddings=true --set model.untie_at=0.5";
  // Killed after step 2, before the untie: its checkpoint's lm_head is wte (the head eval and export read).
  Ckpt killed;
  const std::string out =
      expect_resume_bit_exact("untie", levers, 2, "", [&](const std::string& dir) { killed = ckpt(dir); });
  EXPECT_EQ(param_of(killed, "wte"), param_of(killed, "lm_head"));
  EXPECT_NE(killed.meta.find("\"untied\":false"), std::string::npos) << killed.meta;
  expect_resume_bit_exact("untie", levers, 4, out);
  EXPECT_NE(out.find("architecture: tied embeddings until 0.5 of the run"), std::string::npos) << out;
  EXPECT_NE(out.find("untie: the head is wte until 50% of the run (steps 1-3 of 6), then lm_head"), std::string::npos)
      << out;
  const std::string run = dataset() + "/untie";
  EXPECT_EQ(log_field(run, "head"), (std::vector<std::string>{"wte", "wte", "wte", "lm_head", "lm_head", "lm_head"}));
  // Before the untie the run is the tied model's, loss for loss.
  auto t = run_cmd(train_cmd(kFixed + "--set train.max_steps=6 --set model.tie_embeddings=true "
                             "--set train.run_dir=" + dataset() + "/tied"));
  ASSERT_EQ(t.rc, 0) << t.out;
  std::vector<std::string> untie_loss = log_field(run, "loss"), tied_loss = log_field(dataset() + "/tied", "loss");
  ASSERT_EQ(tied_loss.size(), 6u);
  // Step 4 reads lm_head, wte's exact copy: the same loss again; from step 5 the two heads have trained apart.
  for (int i = 0; i < 4; i++) EXPECT_EQ(untie_loss[i], tied_loss[i]) << "step " << i + 1;
  EXPECT_NE(untie_loss[4], tied_loss[4]);

  const Ckpt fin = ckpt(run);
  EXPECT_NE(param_of(fin, "wte"), param_of(fin, "lm_head")) << "trained apart after the untie";
  EXPECT_NE(fin.meta.find("\"untied\":true"), std::string::npos) << fin.meta;
  expect_eval_matches(run, out);

  // Export: an untied model (nanochat's form), lm_head.weight the trained head, every tensor the checkpoint's.
  auto x = run_cmd(frontier_bin() + " export --checkpoint " + run + "/model.ckpt --out " + dataset() + "/untie_export");
  ASSERT_EQ(x.rc, 0) << x.out;
  ModelDir md;
  Status s = read_model_dir(dataset() + "/untie_export", &md);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_FALSE(md.shape.arch.tie_embeddings);
  EXPECT_EQ(md.shape.arch.untie_at, 0);
  EXPECT_TRUE(md.weights == fin.w) << "the exported tensors differ from the checkpoint's";
}

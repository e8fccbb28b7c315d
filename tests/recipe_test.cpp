// The recipe levers (train/recipe.h, train/schedule.h): each schedule's defining values, one-line errors for bad
// values, and every lever at once through the CLI: trains, dies after a checkpoint and resumes bit-exactly, scores
// the averaged weights it saved. nanochat's Muon switches are checked against PyTorch in gpt_torch_test.cpp
// (GptTorch.NanochatMuonSwitchesMatch); under mpirun in tests/mpi (Mpi.RecipeLeversEqualOneProcess).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "optim/optim.h"
#include "train/checkpoint.h"
#include "train/schedule.h"
#include "train_fixture.h"
#include "util/file.h"

using namespace frontier;
using namespace frontier::testing;

TEST(Recipe, SchedulesHaveTheirDefiningValues) {
  // Today's momentum: 0.85 -> 0.95 over the warm-up steps, then flat, whatever the progress.
  EXPECT_DOUBLE_EQ(muon_momentum(MomentumSchedule::kLinear, 0, 300, 0.0, 0.5), 0.85);
  EXPECT_DOUBLE_EQ(muon_momentum(MomentumSchedule::kLinear, 150, 300, 0.1, 0.5), 0.90);
  EXPECT_DOUBLE_EQ(muon_momentum(MomentumSchedule::kLinear, 900, 300, 0.99, 0.5), 0.95);
  // nanochat 92d63d4: 0.85 -> 0.97 over the warm-up, 0.97, then 0.97 -> 0.90 over the LR warmdown.
  EXPECT_DOUBLE_EQ(muon_momentum(MomentumSchedule::kNanochat, 200, 400, 0.1, 0.5), 0.91);
  EXPECT_DOUBLE_EQ(muon_momentum(MomentumSchedule::kNanochat, 500, 400, 0.4, 0.5), 0.97);
  EXPECT_NEAR(muon_momentum(MomentumSchedule::kNanochat, 500, 400, 0.75, 0.5), 0.935, 1e-12);
  EXPECT_NEAR(muon_momentum(MomentumSchedule::kNanochat, 500, 400, 1.0, 0.5), 0.90, 1e-12);
  // Weight decay: linear 1 - p; cosine (1 + cos(pi p)) / 2.
  EXPECT_DOUBLE_EQ(weight_decay_multiplier(DecaySchedule::kLinear, 0.25), 0.75);
  EXPECT_NEAR(weight_decay_multiplier(DecaySchedule::kCosine, 0.5), 0.5, 1e-12);
  EXPECT_NEAR(weight_decay_multiplier(DecaySchedule::kCosine, 0.25), 0.5 * (1 + std::sqrt(0.5)), 1e-12);
  EXPECT_NEAR(weight_decay_multiplier(DecaySchedule::kCosine, 1.0), 0.0, 1e-12);
  // LR: warmup, flat, warmdown to final_frac.
  EXPECT_NEAR(lr_multiplier(0.05, 0.1, 0.5, 0.0), 0.5, 1e-6);
  EXPECT_DOUBLE_EQ(lr_multiplier(0.3, 0.1, 0.5, 0.0), 1.0);
  EXPECT_NEAR(lr_multiplier(0.75, 0.0, 0.5, 0.1), 0.55, 1e-12);
  // Batch warm-up: from start x accum, linear over the warm-up, rounded up to a multiple of the streams.
  EXPECT_EQ(accum_at(0.0, 8, 1, 0.5, 0.25), 2);
  EXPECT_EQ(accum_at(0.25, 8, 1, 0.5, 0.25), 5);  // 0.625 x 8
  EXPECT_EQ(accum_at(0.25, 8, 2, 0.5, 0.25), 6);
  EXPECT_EQ(accum_at(0.5, 8, 1, 0.5, 0.25), 8);
  EXPECT_EQ(accum_at(0.0, 8, 4, 0.5, 0.01), 4);   // never below one per stream
  EXPECT_EQ(accum_at(0.1, 8, 1, 0.0, 0.25), 8);   // off
  // EMA decay: (1 + t) / (10 + t) until it reaches the set value.
  EXPECT_DOUBLE_EQ(ema_decay_at(0.99, 1), 2.0 / 11.0);
  EXPECT_DOUBLE_EQ(ema_decay_at(0.9, 1000), 0.9);
}

// The switches' steps on small matrices against their definitions computed here in double.
TEST(Recipe, MuonSwitchStepsMatchTheirDefinitions) {
  const int64_t r = 3, c = 5;
  std::vector<float> X = {1, -2, 0.5f, 3, 0, 0.1f, 0.2f, -0.3f, 0.4f, 0.5f, 2, 2, 2, -2, 1};
  std::vector<float> E = X;
  muon_equilibrate_rows(E.data(), r, c);
  double total = 0;
  for (float x : X) total += double(x) * x;
  for (int64_t i = 0; i < r; i++) {
    double row = 0, got = 0;
    for (int64_t j = 0; j < c; j++) row += double(X[i * c + j]) * X[i * c + j], got += double(E[i * c + j]) * E[i * c + j];
    EXPECT_NEAR(std::sqrt(got), std::sqrt(total / r), 1e-5) << "row " << i;  // every row at the mean row norm
    EXPECT_NEAR(E[i * c] / X[i * c], std::sqrt(total / r) / std::sqrt(row), 1e-5);  // a row is only scaled
  }
  std::vector<float> R = X;
  muon_renormalize(R.data(), r, c);
  double n2 = 0;
  for (float x : R) n2 += double(x) * x;
  EXPECT_NEAR(n2, 3.0, 1e-5);  // min(rows, cols)
  // NorMuon on a wide matrix: per-column moments; from v = 0 with beta2 = 0.5, v = mean_col / 2 after one step;
  // the result keeps X's Frobenius norm and its columns' norms become equal.
  std::vector<float> N = X, v(c, 0.f);
  normuon_scale(N.data(), r, c, v.data(), 0.5f);
  double nn = 0;
  for (float x : N) nn += double(x) * x;
  EXPECT_NEAR(nn, total, 1e-4 * total);
  std::vector<double> colnorm(c, 0);
  for (int64_t j = 0; j < c; j++) {
    double m = 0;
    for (int64_t i = 0; i < r; i++) m += double(X[i * c + j]) * X[i * c + j], colnorm[j] += double(N[i * c + j]) * N[i * c + j];
    EXPECT_NEAR(v[j], m / r / 2, 1e-6);
  }
  for (int64_t j = 1; j < c; j++) EXPECT_NEAR(colnorm[j], colnorm[0], 1e-4 * colnorm[0]);
}

TEST(Recipe, BadValuesGetOneLineErrors) {
  struct Case {
    std::string set, want;
  };
  for (const Case& k : std::vector<Case>{
           {"optim.momentum_schedule=fast", "optim.momentum_schedule = 'fast' is not one of linear, nanochat"},
           {"optim.weight_decay_schedule=step", "optim.weight_decay_schedule = 'step' is not one of linear, cosine"},
           {"optim.normuon_beta2=1.5", "optim.normuon_beta2"},
           {"optim.muon_every=0", "optim.muon_every"},
           {"train.ema_decay=1", "train.ema_decay"},
           {"optim.ns_steps=6", "optim.ns_steps"},
           {"train.batch_warmup_ratio=0.3", "train.batch_warmup_ratio needs gradient accumulation"}}) {
    auto r = run_cmd(train_cmd("--set " + k.set + " --set train.run_dir=" + dataset() + "/bad_recipe"));
    EXPECT_NE(r.rc, 0) << k.set;
    EXPECT_NE(r.out.find(k.want), std::string::npos) << k.set << ": " << r.out;
    EXPECT_EQ(r.out.find("Assertion"), std::string::npos) << r.out;
  }
}

// Every lever at once: the run says which, the batch grows as set (log.jsonl), a run killed after its step-3
// checkpoint resumes to the same val_bpb, weights and optimizer state bit for bit (the NorMuon moments, the last
// Muon update of optim.muon_every = 2, resumed after step 3, between orthogonalisations, and the EMA are in the
// checkpoint), and the checkpoint holds the averaged weights, whose val_bpb is the summary's.
TEST(Recipe, AllLeversTrainResumeBitExactlyAndScoreTheAverage) {
  const std::string full = dataset() + "/recipe_full", cut = dataset() + "/recipe_cut";
  const std::string common =
      "--budget 1000 --set train.max_steps=8 --set train.checkpoint_every_steps=1 --set train.total_batch_tokens=512 "
      "--set optim.normuon_beta2=0.9 --set optim.muon_equilibrate=true --set optim.muon_renormalize=true "
      "--set optim.momentum_schedule=nanochat --set optim.weight_decay_schedule=cosine --set optim.muon_every=2 "
      "--set train.batch_warmup_ratio=0.5 --set train.batch_warmup_start=0.25 --set train.ema_decay=0.8 ";
  auto a = run_cmd(train_cmd(common + "--set train.run_dir=" + full));
  ASSERT_EQ(a.rc, 0) << a.out;
  EXPECT_NE(a.out.find("recipe: momentum nanochat, weight decay cosine, Polar Express every 2 steps, MuonEq rows, Muon+ renorm, NorMuon beta2 "
                       "0.9, batch warm-up 0.25 -> 1 over 0.5, weight EMA 0.8"), std::string::npos) << a.out;
  EXPECT_NE(a.out.find("weights:          EMA (train.ema_decay = 0.8)"), std::string::npos) << a.out;
  // 512 tokens = 4 micro-batches of 4 x 32: 1, 2, 3, 4 of them over the first half (progress 0, 1/8, 2/8, 3/8).
  std::string log;
  ASSERT_TRUE(read_file(full + "/log.jsonl", &log).ok());
  std::vector<int64_t> batch;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    auto rec = nlohmann::json::parse(line);
    batch.push_back(rec.contains("batch_tokens") ? rec["batch_tokens"].get<int64_t>() : 512);
  }
  EXPECT_EQ(batch, (std::vector<int64_t>{128, 256, 384, 512, 512, 512, 512, 512}));

  auto b = run_cmd("FRONTIER_FAULT_EXIT_AFTER_STEP=3 " + train_cmd(common + "--set train.run_dir=" + cut));
  ASSERT_EQ(b.rc, 75) << b.out;
  auto c = run_cmd(frontier_bin() + " train --resume " + cut);
  ASSERT_EQ(c.rc, 0) << c.out;
  EXPECT_EQ(summary_value(a.out, "val_bpb"), summary_value(c.out, "val_bpb")) << c.out;
  std::string toml, meta;
  std::vector<float> wa, sa, wc, sc;
  ASSERT_TRUE(load_checkpoint(full + "/model.ckpt", &toml, &meta, &wa, &sa).ok());
  ASSERT_TRUE(load_checkpoint(cut + "/model.ckpt", &toml, &meta, &wc, &sc).ok());
  EXPECT_TRUE(wa == wc) << "the resumed run's weights differ";
  EXPECT_TRUE(sa == sc) << "the resumed run's optimizer state or EMA differs";
  EXPECT_GT(sa.size(), 4 * wa.size());  // [m | v | momentum] [NorMuon moments] [EMA]

  // The checkpoint's weights are the average: `eval bpb` on it gives the summary's val_bpb.
  auto e = run_cmd(frontier_bin() + " eval bpb --data " + dataset() + "/data --checkpoint " + full + "/model.ckpt");
  ASSERT_EQ(e.rc, 0) << e.out;
  char want[32];
  std::snprintf(want, sizeof(want), "%.6f", summary_value(a.out, "val_bpb"));
  EXPECT_NE(e.out.find(want), std::string::npos) << e.out << " vs " << want;
}

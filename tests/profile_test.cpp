// `frontier profile`: the op scopes cover the step, the GEMM FLOPs they report add up to the model's 6 x matrix
// parameters per token, roofline classification follows the ridge, and the trace is valid Chrome trace JSON.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>

#include "model/gpt.h"
#include "model/model_config.h"
#include "profile/profile.h"
#include "test_util.h"
#include "train/schema.h"
#include "util/file.h"

using namespace frontier;
using namespace frontier::testing;

TEST(Profile, AggregateAndRoofline) {
  // Ridge = 100 / 20 = 5 FLOP/byte. A GEMM-like op at 10 FLOP/B is compute-bound; a copy at 0 is memory-bound.
  std::vector<ProfEvent> ev;
  ProfEvent g;
  g.name = "linear";
  g.phase = "fwd";
  g.mnk[0] = 8, g.mnk[1] = 4, g.mnk[2] = 2;
  g.dur_ns = 1'000'000;  // 1 ms
  g.flops = 50e6;        // 50 GFLOP/s
  g.bytes = 5e6;
  ev.push_back(g);
  ev.push_back(g);  // two calls over two steps
  ProfEvent c;
  c.name = "reshape";
  c.phase = "bwd";
  c.dur_ns = 2'000'000;
  c.bytes = 20e6;  // 10 GB/s
  ev.push_back(c);
  ProfEvent outer;
  outer.name = "step";
  outer.phase = "step";
  outer.dur_ns = 10'000'000;
  ev.push_back(outer);  // containers are not rows
  nlohmann::json rows = aggregate_ops(ev, 2, 100.0, 20.0);
  ASSERT_EQ(rows.size(), 2u);
  std::map<std::string, nlohmann::json> by;
  for (const auto& r : rows) by[r["op"].get<std::string>()] = r;
  const auto& L = by["linear"];
  EXPECT_EQ(L["shape"], "M=8 N=4 K=2");
  EXPECT_DOUBLE_EQ(L["calls_per_step"].get<double>(), 1.0);
  EXPECT_NEAR(L["ms_per_step"].get<double>(), 1.0, 1e-12);
  EXPECT_NEAR(L["gflops"].get<double>(), 50.0, 1e-9);
  EXPECT_NEAR(L["intensity"].get<double>(), 10.0, 1e-12);
  EXPECT_EQ(L["bound"], "compute");
  EXPECT_NEAR(L["pct_roofline"].get<double>(), 50.0, 1e-9);  // 50 of 100 GFLOP/s
  const auto& R = by["reshape"];
  EXPECT_EQ(R["bound"], "memory");
  EXPECT_NEAR(R["gbs"].get<double>(), 10.0, 1e-9);
  EXPECT_NEAR(R["pct_roofline"].get<double>(), 50.0, 1e-9);  // 10 of 20 GB/s
  EXPECT_EQ(rows[0]["op"], "reshape");                        // sorted by time, slowest first
}

TEST(Profile, TinyModelStep) {
  Config cfg = train_schema().defaults();
  cfg.set("model.depth", int64_t{2});
  cfg.set("model.seq_len", int64_t{64});
  cfg.set("train.micro_batch", int64_t{2});
  ProfileOptions o;
  o.steps = 2;
  o.peak_gflops = 100;
  o.mem_gbs = 20;
  ProfileReport rep;
  ASSERT_TRUE(run_profile(cfg, o, &rep).ok());
  ModelShape shape;
  ASSERT_TRUE(derive_model_shape(cfg, &shape).ok());
  Gpt gpt(shape);

  // Every primitive the model uses, forward and backward, and both optimizers, appear. Muon's matrices run over
  // the threads at once, so one scope times them all (its momentum, Polar Express and update parts ran on two
  // threads and are not separable in wall time).
  std::map<std::string, double> ms;
  for (const auto& r : rep.json["ops"]) ms[r["phase"].get<std::string>() + ":" + r["op"].get<std::string>()] +=
      r["ms_per_step"].get<double>();
  for (const char* k : {"fwd:linear", "bwd:linear.dx", "bwd:linear.dW", "fwd:attention", "bwd:attention",
                        "fwd:rmsnorm", "bwd:rmsnorm", "fwd:rope_rmsnorm", "bwd:rope_rmsnorm", "fwd:scale_add", "bwd:scale_add", "fwd:relu2", "fwd:softcap_ce", "bwd:softcap_ce",
                        "fwd:embedding", "bwd:embedding", "optim:adamw", "optim:muon (matrices over threads)"})
    EXPECT_TRUE(ms.count(k)) << k;

  // The linear FLOPs the scopes report are 2 (forward) + 4 (backward) per matrix weight per token: the model's
  // 6N, with N the weights of all linears (blocks and lm_head).
  double linear_flops = 0;
  for (const auto& e : rep.events)
    if (e.name.rfind("linear", 0) == 0) linear_flops += e.flops;
  double matrix_params = 0;
  for (const auto& p : gpt.params())
    if (p.group == ParamGroup::kMatrix || p.group == ParamGroup::kLmHead) matrix_params += p.numel();
  const double tokens = 2.0 * 64 * o.steps;
  // (The value-embedding gates are kMatrix linears too, with a gradient into their input.)
  EXPECT_NEAR(linear_flops / (6.0 * matrix_params * tokens), 1.0, 1e-9);

  // Leaf ops account for nearly all of the forward, backward and optimizer phases (the rest is tape bookkeeping):
  // at least 90%. zero_grad is its own phase (a memset of the gradient arena) and is not counted: on a loaded
  // CI machine its page faults alone took 13% of this tiny step.
  const auto& S = rep.json["summary"];
  double leaf = 0;
  for (const auto& [k, v] : ms) leaf += v;
  const double phases = S["forward_ms"].get<double>() + S["backward_ms"].get<double>() +
                        S["optimizer_ms"].get<double>();
  EXPECT_LE(leaf, S["step_ms"].get<double>());
  EXPECT_GE(leaf, 0.9 * phases) << rep.table();
  EXPECT_GT(S["tokens_per_sec"].get<double>(), 0);

  // Chrome trace: every event complete ("X") with a start and a duration inside its step.
  nlohmann::json tr = chrome_trace(rep.events);
  int complete = 0;
  for (const auto& e : tr["traceEvents"]) {
    if (e["ph"] != "X") continue;
    complete++;
    EXPECT_GE(e["ts"].get<double>(), 0);
    EXPECT_GE(e["dur"].get<double>(), 0);
  }
  EXPECT_EQ(complete, static_cast<int>(rep.events.size()));
}

TEST(Profile, CliWritesTraceAndRejectsBadKeys) {
  std::string dir = make_temp_dir("profile");
  auto r = run_cmd(frontier_bin() + " profile --set model.depth=2 --set model.seq_len=64 --set train.micro_batch=2 "
                   "--steps 1 --peak-gflops 100 --mem-gbs 20 --trace " + dir + "/t.json --json " + dir + "/p.json");
  ASSERT_EQ(r.rc, 0) << r.out;
  EXPECT_NE(r.out.find("MFU"), std::string::npos) << r.out;
  // train.threads is the thread count profiled, as train runs it (was ignored: every profile ran on all CPUs).
  auto one = run_cmd(frontier_bin() + " profile --set model.depth=1 --set model.seq_len=32 --set train.micro_batch=2 "
                     "--set train.threads=1 --steps 1 --peak-gflops 100 --mem-gbs 20 --trace \"\"");
  ASSERT_EQ(one.rc, 0) << one.out;
  EXPECT_NE(one.out.find("machine: 1 threads,"), std::string::npos) << one.out;
  std::string text;
  ASSERT_TRUE(read_file(dir + "/t.json", &text).ok());
  auto tr = nlohmann::json::parse(text);
  EXPECT_GT(tr["traceEvents"].size(), 50u);
  ASSERT_TRUE(read_file(dir + "/p.json", &text).ok());
  EXPECT_GT(nlohmann::json::parse(text)["ops"].size(), 10u);
  auto bad = run_cmd(frontier_bin() + " profile --set model.nope=1");
  EXPECT_EQ(bad.rc, 1);
  EXPECT_EQ(bad.out.rfind("error: ", 0), 0u) << bad.out;
}

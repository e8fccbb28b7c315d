// The pieces of data-parallel training that need no MPI runtime: the optimizer shard plan, the sharded optimizer's
// arithmetic in one process, the scaling model's formulas, and a one-rank Comm (tests/mpi/ runs the real thing).
#include <gtest/gtest.h>

#include <cmath>

#include "dist/comm.h"
#include "dist/grad_exchange.h"
#include "dist/scale_model.h"
#include "dist/shard_plan.h"
#include "model/gpt.h"
#include "model/model_config.h"
#include "optim/optim.h"
#include "util/bf16.h"

namespace frontier {
namespace {

ModelShape shape_of(int depth) {
  ModelShape s;
  s.depth = depth;
  s.dim = 64 * depth;
  s.head_dim = 64;
  s.n_head = s.n_kv_head = depth;
  s.vocab_size = 512;
  s.seq_len = 32;
  s.mlp_dim = 4 * s.dim;
  return s;
}

TEST(ShardPlan, ContiguousWholeParametersCoveringTheArena) {
  const auto params = Gpt::param_table(shape_of(4));
  const int64_t total = params.back().offset + params.back().numel();
  for (int R : {1, 2, 3, 4, 8, 64}) {
    ShardPlan p = plan_optimizer_shards(params, R, 5);
    ASSERT_EQ(p.begin.size(), static_cast<size_t>(R + 1));
    EXPECT_EQ(p.begin.front(), 0);
    EXPECT_EQ(p.begin.back(), total);
    int64_t sum = 0;
    for (int64_t c : p.counts()) {
      EXPECT_GE(c, 0);
      sum += c;
    }
    EXPECT_EQ(sum, total);
    for (int r = 0; r <= R; r++) {  // every boundary is a parameter's start (or the end)
      bool at_param = p.begin[r] == total;
      for (const auto& q : params) at_param |= q.offset == p.begin[r];
      EXPECT_TRUE(at_param) << "rank " << r << " boundary " << p.begin[r] << " splits a parameter (R = " << R << ")";
    }
  }
}

// The largest share is the smallest a contiguous split can make it: no better than the largest single parameter,
// and within one parameter of the average.
TEST(ShardPlan, BalancesTheEstimatedOptimizerTime) {
  const auto params = Gpt::param_table(shape_of(8));
  double all = 0, biggest = 0;
  for (const auto& q : params) {
    const double c = optimizer_cost_seconds(q, 5);
    all += c;
    biggest = std::max(biggest, c);
  }
  for (int R : {2, 4}) {
    ShardPlan p = plan_optimizer_shards(params, R, 5);
    const double worst = *std::max_element(p.est_seconds.begin(), p.est_seconds.end());
    EXPECT_GE(worst, std::max(biggest, all / R) - 1e-12);
    EXPECT_LE(worst, all / R + biggest) << p.describe();
  }
}

// Sharding in one process: two optimizers owning the two halves of the plan, each stepping on the same gradients,
// produce the weights one unsharded optimizer does (bit for bit: the same per-parameter code on the same inputs).
TEST(ShardPlan, ShardedOptimizerStepsEqualTheUnshardedOne) {
  const ModelShape s = shape_of(2);
  Gpt full(s), a(s), b(s);
  full.init_nanochat(3);
  a.weights() = b.weights() = full.weights();
  Optimizer of(full, OptimConfig{}), oa(a, OptimConfig{}), ob(b, OptimConfig{});
  ShardPlan plan = plan_optimizer_shards(full.params(), 2, 5);
  oa.set_owned_range(plan.lo(0), plan.hi(0));
  ob.set_owned_range(plan.lo(1), plan.hi(1));
  EXPECT_EQ(oa.state().size() + ob.state().size(), of.state().size());
  uint32_t x = 1;
  for (int step = 0; step < 3; step++) {
    for (float& g : full.grads()) g = static_cast<float>((x = x * 1664525u + 1013904223u) >> 8) / (1 << 24) - 0.5f;
    a.grads() = b.grads() = full.grads();
    of.step(1.0f, 0.9f, 0.1f * step);
    oa.step(1.0f, 0.9f, 0.1f * step);
    ob.step(1.0f, 0.9f, 0.1f * step);
    // The all-gather: each owner's range.
    std::vector<float> gathered = a.weights();
    std::copy(b.weights().begin() + plan.lo(1), b.weights().begin() + plan.hi(1), gathered.begin() + plan.lo(1));
    ASSERT_TRUE(gathered == full.weights()) << "step " << step;
    a.weights() = b.weights() = gathered;
  }
}

TEST(ScaleModel, OneRankHasNoCommunicationAndFullEfficiency) {
  StepParts p;
  p.t_fb = 0.1;
  p.t_opt = 0.05;
  p.n_params = 10'000'000;
  p.tokens_per_micro = 4096;
  p.accum = 2;
  p.shard_share.assign(64, 1.0);
  for (int r = 2; r <= 64; r++) p.shard_share[r - 1] = 1.0 / r;
  Link shm{1e-6, 10e9, "shm"}, net{5e-6, 1e9, "net"};
  Projection one = project(p, 1, 8, shm, net);
  EXPECT_DOUBLE_EQ(one.t_comm, 0);
  EXPECT_NEAR(one.efficiency, 1.0, 1e-12);
  EXPECT_NEAR(one.tokens_per_sec, 2 * 4096 / 0.25, 1e-6);
  // 2 ranks: ring reduce-scatter + all-gather of 40 MB at 10 GB/s: 2 x (1 us + 20 MB / 10 GB/s) + 3 us.
  Projection two = project(p, 2, 8, shm, net);
  EXPECT_NEAR(two.t_comm, 2 * (1e-6 + 0.5 * 40e6 / 10e9) + 3e-6, 1e-12);
  EXPECT_NEAR(two.t_opt, 0.025, 1e-12);
  // 16 ranks on 2 nodes run at the network's speed.
  Projection sixteen = project(p, 16, 8, shm, net);
  EXPECT_EQ(sixteen.nodes, 2);
  EXPECT_NEAR(sixteen.t_comm, 2 * (15 * 5e-6 + 15.0 / 16 * 40e6 / 1e9) + 3 * 15 * 5e-6, 1e-12);
  EXPECT_LT(sixteen.efficiency, two.efficiency);
}

// bf16 gradients: half the reduce-scatter's bytes; the all-gather of the weights stays fp32.
TEST(ScaleModel, Bf16GradientsHalveTheReduceScatter) {
  StepParts p;
  p.t_fb = 0.1;
  p.n_params = 10'000'000;
  p.tokens_per_micro = 4096;
  p.shard_share.assign(64, 0.5);
  p.grad_bytes = 2;
  Link shm{1e-6, 10e9, "shm"};
  EXPECT_NEAR(project(p, 2, 8, shm, shm).t_comm, (1e-6 + 0.5 * 20e6 / 10e9) + (1e-6 + 0.5 * 40e6 / 10e9) + 3e-6, 1e-12);
}

// The buckets of a real model's tape: they tile the gradient arena with whole parameters, each at least the size
// asked for (but the last in the arena), in the order the backward finishes them: lm_head first (the loss's last
// op), each layer before the one below it, wte and the per-layer scalars (read by every layer) at the very end.
TEST(GradExchange, BucketsTileTheArenaInBackwardOrder) {
  const ModelShape s = shape_of(4);
  Gpt gpt(s);
  gpt.init_nanochat(1);
  std::vector<int32_t> x(2 * 32), y(2 * 32);
  for (size_t i = 0; i < x.size(); i++) x[i] = static_cast<int32_t>(i * 7 % 512), y[i] = static_cast<int32_t>(i % 512);
  const int64_t n = gpt.n_params();
  for (int64_t min_bytes : {int64_t(1), int64_t(64 << 10), int64_t(1 << 20), int64_t(1) << 40}) {
    Tape tape;
    Var loss = gpt.forward(tape, x.data(), y.data(), 2, 32);
    GradExchange ex;
    ex.init(&Comm::world(), gpt.grads().data(), n, {}, CommDtype::kFp32);
    ex.begin_step(nullptr);
    ex.plan_buckets(tape, min_bytes);
    std::vector<GradBucket> b = ex.buckets();
    std::sort(b.begin(), b.end(), [](const GradBucket& p, const GradBucket& q) { return p.lo < q.lo; });
    ASSERT_FALSE(b.empty());
    EXPECT_EQ(b.front().lo, 0);
    EXPECT_EQ(b.back().hi, n);
    for (size_t i = 0; i < b.size(); i++) {
      if (i > 0) {
        EXPECT_EQ(b[i].lo, b[i - 1].hi);
      }
      if (i + 1 < b.size()) {
        EXPECT_GE(4 * (b[i].hi - b[i].lo), std::min<int64_t>(min_bytes, 4 * n));
      }
      bool lo_at_param = false, hi_at_param = b[i].hi == n;
      for (const auto& p : gpt.params()) lo_at_param |= p.offset == b[i].lo, hi_at_param |= p.offset == b[i].hi;
      EXPECT_TRUE(lo_at_param && hi_at_param) << "bucket " << i << " splits a parameter";
    }
    if (min_bytes == 1) {  // one bucket per parameter: the backward's order
      ASSERT_EQ(ex.buckets().size(), gpt.params().size());
      EXPECT_EQ(ex.buckets().front().lo, gpt.param("lm_head").offset);
      EXPECT_GE(ex.buckets()[1].lo, gpt.param("h.3.attn.c_q").offset);  // then the top layer's (C++ leaves the
      EXPECT_LT(ex.buckets()[1].lo, gpt.param("value_embeds.1").offset);  // order within a layer to the compiler)
      std::vector<int64_t> last;
      for (size_t i = ex.buckets().size() - 3; i < ex.buckets().size(); i++) last.push_back(ex.buckets()[i].lo);
      std::sort(last.begin(), last.end());
      EXPECT_EQ(last, (std::vector<int64_t>{gpt.param("wte").offset, gpt.param("resid_lambdas").offset,
                                             gpt.param("x0_lambdas").offset}));
    }
    if (min_bytes == int64_t(1) << 40) {
      EXPECT_EQ(ex.buckets().size(), 1u);
    }
    // The backward starts every bucket but the last-finished ones before it ends; the gradients are the plain
    // backward's (one rank: the exchange leaves fp32 sums as they are).
    gpt.zero_grad();
    tape.backward(loss, 1.0f, [&](const Node& nd) { ex.param_final(nd); });
    ASSERT_TRUE(ex.finish().ok());
    EXPECT_GT(ex.started_during_backward(), min_bytes == int64_t(1) << 40 ? -1 : 0);
    const std::vector<float> overlapped = gpt.grads();
    gpt.zero_grad();
    Tape plain;
    plain.backward(gpt.forward(plain, x.data(), y.data(), 2, 32), 1.0f);
    EXPECT_TRUE(overlapped == gpt.grads()) << "min_bytes " << min_bytes;
  }
}

// bf16 exchange on one rank: the sum of one bf16-rounded value, i.e. every gradient rounded to nearest-even bf16;
// prepare() sees every range once before it is sent.
TEST(GradExchange, Bf16RoundsEachContribution) {
  std::vector<float> g(1000);
  for (size_t i = 0; i < g.size(); i++) g[i] = std::sin(0.37f * i) * 1e-3f;
  const std::vector<float> orig = g;
  GradExchange ex;
  ex.init(&Comm::world(), g.data(), 1000, {0, 1000}, CommDtype::kBf16);
  int64_t prepared = 0;
  ex.begin_step([&](int64_t lo, int64_t hi) { prepared += hi - lo; });
  ASSERT_TRUE(ex.finish().ok());
  EXPECT_EQ(prepared, 1000);
  for (size_t i = 0; i < g.size(); i++) ASSERT_EQ(g[i], round_bf16(orig[i])) << i;
  CommDtype d;
  EXPECT_TRUE(parse_comm_dtype("bf16", &d).ok());
  EXPECT_EQ(parse_comm_dtype("fp16", &d).message(), "train.comm_dtype = 'fp16' is not one of fp32, bf16");
}

TEST(Comm, OneProcessIsAWorldOfOne) {
  Comm& c = Comm::world();
  EXPECT_EQ(c.size(), 1);
  EXPECT_TRUE(c.root());
  std::vector<float> v = {1, 2, 3};
  EXPECT_TRUE(c.reduce_scatter_sum(v.data(), {3}, "test").ok());
  EXPECT_TRUE(c.allgather(v.data(), {3}, "test").ok());
  EXPECT_EQ(v, (std::vector<float>{1, 2, 3}));
  EXPECT_TRUE(c.arrive(0, "test").ok());
  Status e = c.agree(Status::error("x"));
  EXPECT_EQ(e.message(), "x");
}

}  // namespace
}  // namespace frontier

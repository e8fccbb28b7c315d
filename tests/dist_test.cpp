// The pieces of data-parallel training that need no MPI runtime: the optimizer shard plan, the sharded optimizer's
// arithmetic in one process, the scaling model's formulas, and a one-rank Comm (tests/mpi/ runs the real thing).
#include <gtest/gtest.h>

#include <cmath>

#include "dist/comm.h"
#include "dist/scale_model.h"
#include "dist/shard_plan.h"
#include "model/gpt.h"
#include "model/model_config.h"
#include "optim/optim.h"

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

// Which rank owns which parameters in a sharded optimizer (ZeRO stage 1, as nanochat's distributed Muon + AdamW).
//
//   ShardPlan plan = plan_optimizer_shards(gpt.params(), comm.size(), /*ns_steps=*/5);
//   // rank r owns the arena range [plan.begin[r], plan.begin[r + 1]): it receives the summed gradients of that
//   // range (reduce-scatter), runs Muon / AdamW on the parameters in it, keeps their optimizer state, and sends the
//   // updated weights to everyone (all-gather).
//
// Each rank owns one *contiguous* range of whole parameters, so the reduce-scatter and all-gather run in place on
// the gradient and weight arenas (no packing). Ranges are chosen to balance the optimizer's estimated time (the
// contiguous partition minimising the largest share, by dynamic programming over the parameter list): Muon's cost is
// its Polar Express FLOPs, 5 x (3 r^2 c + r^3) for an r x c matrix (r <= c), at 150 GFLOP/s; AdamW's is its memory
// traffic, 28 bytes per element, at 10 GB/s (per-core figures of the order measured on this machine; only their
// ratio matters). A rank can own nothing (more ranks than parameters): its count is zero.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/gpt.h"

namespace frontier {

struct ShardPlan {
  std::vector<int64_t> begin;       // R + 1 arena offsets; begin[0] = 0, begin[R] = arena size
  std::vector<double> est_seconds;  // estimated optimizer time per rank
  std::vector<int64_t> counts() const;  // floats per rank
  int64_t lo(int r) const { return begin[r]; }
  int64_t hi(int r) const { return begin[r + 1]; }
  std::string describe() const;  // "rank 0: 12.3M params, 41 ms est.; rank 1: ..."
};

double optimizer_cost_seconds(const ParamInfo& p, int ns_steps);
ShardPlan plan_optimizer_shards(const std::vector<ParamInfo>& params, int ranks, int ns_steps);

}  // namespace frontier

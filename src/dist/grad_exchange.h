// The gradient exchange of a data-parallel step (docs/distributed.md), in buckets: contiguous ranges of the gradient
// arena, each sent as soon as every gradient in it is final, while the backward goes on (train.overlap_comm), or the
// whole arena as one bucket after the backward.
//
//   GradExchange ex;
//   ex.init(&comm, gpt.grads().data(), n, plan.begin /*sharded; {} = all-reduce*/, CommDtype::kFp32);
//   ex.begin_step(nullptr);                       // or a prepare(lo, hi) that finishes a range just before it goes
//   ex.plan_buckets(tape, 4e6);                   // the last micro-batch's tape, after its forward
//   tape.backward(loss, scale, [&](const Node& n) { ex.param_final(n); });   // starts buckets as they become final
//   FRONTIER_RETURN_IF_ERROR(ex.finish());        // starts the rest, waits for all
//
// What each rank gets: sharded (owners = ShardPlan::begin), the sum over ranks of the range it owns (a
// reduce-scatter of each bucket, split at the owners' boundaries); replicated (owners empty), the whole sum (an
// all-reduce of each bucket). Per element the reduction is the one a whole-arena collective does (with 2 ranks, one
// float addition), so bucketing and overlap change when the bytes move, not the result.
//
// comm_dtype bf16 halves the gradient bytes: each rank rounds its gradient to bf16 (nearest even) and sends every
// owner its block (an all-to-all); the owner adds the R bf16 values in fp32, in rank order: sum_r fp32(bf16(g_r)),
// the same on every rank and for every owner, independent of MPI's reduction order. Replicated, the owners'
// fp32 sums are then all-gathered (so sharded = replicated still holds bit for bit). The weights' all-gather stays
// fp32 (every rank must hold the owner's exact weights).
//
// Progress: OpenMPI advances a nonblocking collective only inside MPI calls, so param_final() tests the requests in
// flight each time it is called (every parameter node of the backward: a few per layer). On one core per rank that
// is the only progress there is: the copies and additions of the exchange run on the core that computes the
// backward, so overlap can hide waiting for the other rank, not the exchange's own work (measured in the doc).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autograd/tape.h"
#include "dist/comm.h"
#include "util/status.h"

namespace frontier {

enum class CommDtype { kFp32, kBf16 };
Status parse_comm_dtype(const std::string& name, CommDtype* out);  // train.comm_dtype: fp32 | bf16
const char* comm_dtype_name(CommDtype d);

struct GradBucket {
  int64_t lo = 0, hi = 0;  // arena range
  int ready_node = -1;     // the tape node after whose backward the range is final (-1: only at finish)
};

class GradExchange {
 public:
  void init(Comm* comm, float* grads, int64_t n, std::vector<int64_t> owners, CommDtype dtype);
  void set_dtype(CommDtype dtype);  // between steps
  // A new step: no bucket planned (finish() sends the whole arena as one) until plan_buckets(). prepare(lo, hi),
  // if given, is run on each bucket's range right before it is sent.
  void begin_step(std::function<void(int64_t, int64_t)> prepare);
  // Buckets from the tape whose backward is the step's last: contiguous arena ranges of whole parameters of at
  // least min_bytes (train.comm_bucket_mb, default 4 MB: a layer's matrices, 12 dim^2 floats = 3 MB at dim 256, in
  // one or two; the per-collective cost, ~10-20 us here, is nothing against the bytes' milliseconds), each ready
  // when the last of its parameter nodes is reached (ranges of the arena with no parameter on the tape: only at
  // finish()). Every rank records the same tape, so every rank plans the same buckets
  // and starts them in the same order (MPI requires it of collectives).
  void plan_buckets(Tape& tape, int64_t min_bytes);
  // Tape::backward's hook: counts the node off its bucket, starts the buckets that became ready, drives progress.
  void param_final(const Node& n);
  // Starts the buckets not started yet, then completes every one (against the comm timeout). The first error of
  // the step (also one met inside param_final) is returned.
  Status finish();

  const std::vector<GradBucket>& buckets() const { return buckets_; }
  int started_during_backward() const { return started_early_; }

 private:
  struct Flight {
    int phase = 0;  // 0 not started, 1 in flight, 2 summed (bf16 replicated: to all-gather), 3 all-gather in
                    // flight, 4 done
    CommRequest req;
    std::vector<int64_t> counts;  // floats of the bucket per rank
    int64_t recv_at = 0;          // bf16: this bucket's receive block in recv_
  };
  Status start(int b);
  Status advance(int b);  // the bucket's request completed: finish its phase, maybe start the next
  Status poll();
  void layout();
  int bucket_at(int64_t offset) const;
  std::vector<int64_t> split(const GradBucket& b) const;

  Comm* comm_ = nullptr;
  float* g_ = nullptr;  // (n) the gradient arena
  int64_t n_ = 0;
  std::vector<int64_t> owners_;  // R + 1 offsets, or empty (replicated)
  CommDtype dtype_ = CommDtype::kFp32;
  std::function<void(int64_t, int64_t)> prepare_;
  std::vector<GradBucket> buckets_;
  std::vector<Flight> flights_;
  std::vector<int> pending_;       // per bucket: parameter nodes not yet final
  bool planned_ = false;           // plan_buckets() ran this step: param_final() starts buckets
  std::vector<uint16_t> send_;     // (n) bf16 gradients
  std::vector<uint16_t> recv_;     // bf16 blocks received, R per bucket
  int next_ = 0;                   // buckets start in index (= readiness) order: the first not started
  int started_early_ = 0;
  Status error_;
};

}  // namespace frontier

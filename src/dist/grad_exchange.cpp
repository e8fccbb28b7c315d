#include "dist/grad_exchange.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "util/bf16.h"

namespace frontier {

Status parse_comm_dtype(const std::string& name, CommDtype* out) {
  if (name == "fp32") *out = CommDtype::kFp32;
  else if (name == "bf16") *out = CommDtype::kBf16;
  else return Status::error("train.comm_dtype = '" + name + "' is not one of fp32, bf16");
  return ok_status();
}

const char* comm_dtype_name(CommDtype d) { return d == CommDtype::kBf16 ? "bf16" : "fp32"; }

void GradExchange::init(Comm* comm, float* grads, int64_t n, std::vector<int64_t> owners, CommDtype dtype) {
  comm_ = comm;
  g_ = grads;
  n_ = n;
  owners_ = std::move(owners);
  FRONTIER_CHECK(owners_.empty() || (static_cast<int>(owners_.size()) == comm->size() + 1 && owners_.back() == n));
  set_dtype(dtype);
}

void GradExchange::set_dtype(CommDtype dtype) {
  dtype_ = dtype;
  if (dtype_ == CommDtype::kBf16) send_.resize(n_);
}

void GradExchange::begin_step(std::function<void(int64_t, int64_t)> prepare) {
  prepare_ = std::move(prepare);
  buckets_.assign(1, GradBucket{0, n_, -1});
  pending_.assign(1, 0);
  planned_ = false;
  next_ = 0;
  started_early_ = 0;
  error_ = ok_status();
  layout();
}

// Each bucket's floats per rank, and (bf16) its block of the receive buffer, allocated once for the step: MPI
// writes into it while later buckets are being started.
void GradExchange::layout() {
  flights_.assign(buckets_.size(), Flight());
  int64_t recv = 0;
  for (size_t b = 0; b < buckets_.size(); b++) {
    flights_[b].counts = split(buckets_[b]);
    flights_[b].recv_at = recv;
    if (dtype_ == CommDtype::kBf16) recv += flights_[b].counts[comm_->rank()] * comm_->size();
  }
  recv_.resize(recv);
}

void GradExchange::plan_buckets(Tape& tape, int64_t min_bytes) {
  // Units: the arena ranges of the parameter nodes (a parameter read through several nodes is one unit, final at
  // its earliest node), and the gaps between them (parameters this step does not use: final only at finish).
  std::map<int64_t, std::pair<int64_t, int>> units;  // lo -> (hi, ready node)
  for (int i = 0; i < static_cast<int>(tape.size()); i++) {
    const Node& nd = tape.node(Var{i});
    if (!nd.is_param || nd.grad < g_ || nd.grad >= g_ + n_) continue;
    const int64_t lo = nd.grad - g_, hi = lo + nd.numel();
    auto it = units.find(lo);
    if (it == units.end()) units[lo] = {hi, i};
    else {
      FRONTIER_CHECK(it->second.first == hi);  // nodes of one parameter cover the same range
      it->second.second = std::min(it->second.second, i);
    }
  }
  std::vector<GradBucket> arena_order;
  GradBucket cur{0, 0, 1 << 30};
  auto add = [&](int64_t lo, int64_t hi, int ready) {
    if (cur.hi == cur.lo) cur = GradBucket{lo, lo, 1 << 30};
    cur.hi = hi;
    cur.ready_node = std::min(cur.ready_node, ready);
    if (4 * (cur.hi - cur.lo) >= min_bytes) {
      arena_order.push_back(cur);
      cur = GradBucket{hi, hi, 1 << 30};
    }
  };
  int64_t at = 0;
  for (const auto& [lo, u] : units) {
    FRONTIER_CHECK(lo >= at);  // parameter nodes do not overlap
    if (lo > at) add(at, lo, -1);
    add(lo, u.first, u.second);
    at = u.first;
  }
  if (at < n_) add(at, n_, -1);
  if (cur.hi > cur.lo) arena_order.push_back(cur);
  // Start order = readiness order: the backward reaches higher node indices first; -1 (finish) last.
  std::stable_sort(arena_order.begin(), arena_order.end(),
                   [](const GradBucket& a, const GradBucket& b) { return a.ready_node > b.ready_node; });
  buckets_ = arena_order;
  pending_.assign(buckets_.size(), 0);
  for (int i = 0; i < static_cast<int>(tape.size()); i++) {
    const Node& nd = tape.node(Var{i});
    if (nd.is_param && nd.grad >= g_ && nd.grad < g_ + n_) pending_[bucket_at(nd.grad - g_)]++;
  }
  planned_ = true;
  layout();
}

int GradExchange::bucket_at(int64_t offset) const {
  for (int b = 0; b < static_cast<int>(buckets_.size()); b++)
    if (offset >= buckets_[b].lo && offset < buckets_[b].hi) return b;
  FRONTIER_CHECK(false && "offset outside the arena");
  return -1;
}

void GradExchange::param_final(const Node& n) {
  if (!error_.ok() || !planned_ || n.grad < g_ || n.grad >= g_ + n_) return;
  const int b = bucket_at(n.grad - g_);
  if (pending_[b] > 0) pending_[b]--;
  while (error_.ok() && next_ < static_cast<int>(buckets_.size()) && buckets_[next_].ready_node >= 0 &&
         pending_[next_] == 0) {
    error_ = start(next_++);
    started_early_++;
  }
  if (error_.ok()) error_ = poll();
}

// A bucket's floats per rank: its overlap with each owner's range (sharded), or an even split (replicated bf16,
// whose owners are only the summers of their block).
std::vector<int64_t> GradExchange::split(const GradBucket& b) const {
  const int R = comm_->size();
  std::vector<int64_t> c(R, 0);
  for (int r = 0; r < R; r++) {
    if (!owners_.empty()) c[r] = std::max<int64_t>(0, std::min(b.hi, owners_[r + 1]) - std::max(b.lo, owners_[r]));
    else c[r] = (b.hi - b.lo) / R + (r < (b.hi - b.lo) % R ? 1 : 0);
  }
  return c;
}

Status GradExchange::start(int b) {
  const GradBucket& k = buckets_[b];
  Flight& f = flights_[b];
  if (prepare_) prepare_(k.lo, k.hi);
  float* g = g_ + k.lo;
  const int64_t n = k.hi - k.lo;
  f.phase = 1;
  if (dtype_ == CommDtype::kFp32) {
    if (owners_.empty()) return comm_->start_allreduce_sum(g, n, "the gradient all-reduce", &f.req);
    return comm_->start_reduce_scatter_sum(g, f.counts, "the gradient reduce-scatter", &f.req);
  }
  uint16_t* s = send_.data() + k.lo;
  for (int64_t i = 0; i < n; i++) s[i] = to_bf16(g[i]);
  return comm_->start_alltoall_u16(s, f.counts, recv_.data() + f.recv_at, "the bf16 gradient exchange", &f.req);
}

// A bucket's request completed. fp32: its phase is over (a reduce-scatter's block moved into place). bf16: the R
// blocks received are added; replicated, the sums still have to be all-gathered, which finish() starts: a
// collective started when a request happens to complete would start at different points of the sequence on
// different ranks, and MPI matches collectives by their order (it crashed in libnbc when tried).
Status GradExchange::advance(int b) {
  const GradBucket& k = buckets_[b];
  Flight& f = flights_[b];
  const int R = comm_->size(), me = comm_->rank();
  int64_t at = k.lo;  // this rank's block of the bucket
  for (int r = 0; r < me; r++) at += f.counts[r];
  const int64_t mine = f.counts[me];
  if (f.phase == 3 || dtype_ == CommDtype::kFp32) {
    // fp32 reduce-scatter in place: this rank's sum lands at the bucket's start.
    if (f.phase == 1 && !owners_.empty() && at != k.lo && R > 1)
      std::memmove(g_ + at, g_ + k.lo, sizeof(float) * mine);
    f.phase = 4;
    return ok_status();
  }
  const uint16_t* in = recv_.data() + f.recv_at;
  float* out = g_ + at;
  for (int64_t i = 0; i < mine; i++) {
    float s = from_bf16(in[i]);
    for (int r = 1; r < R; r++) s += from_bf16(in[r * mine + i]);
    out[i] = s;
  }
  f.phase = owners_.empty() && R > 1 ? 2 : 4;
  return ok_status();
}

Status GradExchange::poll() {
  for (int b = 0; b < next_; b++) {
    Flight& f = flights_[b];
    if (f.phase != 1) continue;
    bool done = false;
    FRONTIER_RETURN_IF_ERROR(comm_->test(&f.req, &done));
    if (done) FRONTIER_RETURN_IF_ERROR(advance(b));
  }
  return ok_status();
}

// Every rank runs this at the same point of its collective sequence, so what it starts, it starts in one order.
Status GradExchange::finish() {
  if (!error_.ok()) return error_;
  while (next_ < static_cast<int>(buckets_.size())) FRONTIER_RETURN_IF_ERROR(start(next_++));
  for (int b = 0; b < static_cast<int>(buckets_.size()); b++) {
    Flight& f = flights_[b];
    while (f.phase != 4) {
      if (f.phase == 2) {
        f.phase = 3;
        FRONTIER_RETURN_IF_ERROR(comm_->start_allgather(g_ + buckets_[b].lo, f.counts, "the gradient all-gather",
                                                        &f.req));
        continue;
      }
      FRONTIER_RETURN_IF_ERROR(comm_->wait(&f.req));
      FRONTIER_RETURN_IF_ERROR(advance(b));
    }
  }
  return ok_status();
}

}  // namespace frontier

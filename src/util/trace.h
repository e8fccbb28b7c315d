// The ground floor of `frontier profile` (profile/profile.h): scope markers that autograd, optim and kernels place
// around their work. It lives in util/ so no lower layer imports from profile/.
// Op-level timing for `frontier profile`: every autograd op, its backward and each optimizer update open a
// ProfScope with the work it does (FLOPs) and the bytes it must move at least (each input read once, each output
// written once: the compulsory traffic a roofline is drawn against). With no profiler active a scope costs one
// branch on a global pointer, so the scopes stay in the training code.
//
//   Profiler p;
//   p.start();                                  // scopes on this thread now record
//   { ProfScope s("linear", "fwd", 2.0 * M * N * K, 4.0 * (M * K + N * K + M * N), {M, N, K}); sgemm(...); }
//   p.stop();
//   for (const ProfEvent& e : p.events()) ...   // name, phase, start, duration, flops, bytes
//
// Scopes nest (a training step holds forward, backward and optimizer, which hold the ops); events carry their
// depth. Only the thread that called start() records: ops are issued from one thread and parallelise inside.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace frontier {

struct ProfEvent {
  std::string name;     // op ("linear", "rmsnorm", "muon.polar_express", ...)
  std::string phase;    // "step", "fwd", "bwd", "optim"
  int64_t mnk[3] = {0, 0, 0};  // GEMM shape (M, N, K); zeros when the op has no informative shape
  int64_t t0_ns = 0, dur_ns = 0;  // from start()
  double flops = 0, bytes = 0;
  int depth = 0;        // nesting level (0 = outermost)
};

class Profiler {
 public:
  void start();  // clears events; activates this profiler for the calling thread
  void stop();
  const std::vector<ProfEvent>& events() const { return events_; }
  static Profiler* active();  // the profiler recording on this thread, or null

  // Used by ProfScope.
  int64_t now_ns() const;
  int open();  // returns the depth of the scope being opened
  void close(ProfEvent e);

 private:
  std::vector<ProfEvent> events_;
  int64_t origin_ns_ = 0;
  int depth_ = 0;
};

struct ProfShape {  // a GEMM's (M, N, K)
  int64_t m, n, k;
};

class ProfScope {
 public:
  ProfScope(const char* name, const char* phase, double flops = 0, double bytes = 0, ProfShape mnk = {0, 0, 0});
  ~ProfScope();
  ProfScope(const ProfScope&) = delete;
  ProfScope& operator=(const ProfScope&) = delete;

 private:
  Profiler* p_;
  ProfEvent e_;
};

// Stops this thread's scopes from recording while it lives (work split over threads at a coarser grain, e.g. Muon's
// matrices, is timed by one enclosing scope instead of by the scopes of whichever parts ran on this thread).
class ProfPause {
 public:
  ProfPause();
  ~ProfPause();
  ProfPause(const ProfPause&) = delete;
  ProfPause& operator=(const ProfPause&) = delete;

 private:
  Profiler* saved_;
};

// "M=2048 N=512 K=2048", or "" for an event without a shape.
std::string shape_string(const ProfEvent& e);

}  // namespace frontier

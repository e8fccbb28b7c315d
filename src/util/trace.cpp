#include "util/trace.h"

#include <chrono>

namespace frontier {

namespace {
thread_local Profiler* t_active = nullptr;
}

Profiler* Profiler::active() { return t_active; }

int64_t Profiler::now_ns() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
             .count() -
         origin_ns_;
}

void Profiler::start() {
  events_.clear();
  depth_ = 0;
  origin_ns_ = 0;
  origin_ns_ = now_ns();
  t_active = this;
}

void Profiler::stop() {
  if (t_active == this) t_active = nullptr;
}

int Profiler::open() { return depth_++; }

ProfPause::ProfPause() : saved_(t_active) { t_active = nullptr; }
ProfPause::~ProfPause() { t_active = saved_; }

void Profiler::close(ProfEvent e) {
  depth_--;
  events_.push_back(std::move(e));
}

ProfScope::ProfScope(const char* name, const char* phase, double flops, double bytes, ProfShape mnk)
    : p_(Profiler::active()) {
  if (!p_) return;
  e_.name = name;
  e_.phase = phase;
  e_.mnk[0] = mnk.m;
  e_.mnk[1] = mnk.n;
  e_.mnk[2] = mnk.k;
  e_.flops = flops;
  e_.bytes = bytes;
  e_.depth = p_->open();
  e_.t0_ns = p_->now_ns();
}

ProfScope::~ProfScope() {
  if (!p_) return;
  e_.dur_ns = p_->now_ns() - e_.t0_ns;
  p_->close(std::move(e_));
}

std::string shape_string(const ProfEvent& e) {
  if (!e.mnk[0]) return "";
  return "M=" + std::to_string(e.mnk[0]) + " N=" + std::to_string(e.mnk[1]) + " K=" + std::to_string(e.mnk[2]);
}

}  // namespace frontier

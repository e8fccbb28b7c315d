// A one-line progress bar for long work: "label  42.0% [#####.....] 12.3/29.1 MB  8.1 MB/s  ETA 2s".
// Writes to stderr with '\r' on a terminal; elsewhere (CI logs) prints a plain line at most every few seconds.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace frontier {

class Progress {
 public:
  Progress(std::string label, uint64_t total_bytes, bool enabled = true);
  void update(uint64_t done_bytes);  // cheap; redraws at most every 100 ms
  void finish(const std::string& suffix = "");

 private:
  void draw(bool final, const std::string& suffix);
  std::string label_;
  uint64_t total_, done_ = 0;
  bool enabled_, tty_;
  std::chrono::steady_clock::time_point start_, last_;
};

double seconds_since(std::chrono::steady_clock::time_point t);

}  // namespace frontier

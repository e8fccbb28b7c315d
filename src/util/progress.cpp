#include "util/progress.h"

#include <unistd.h>

#include <cstdio>

namespace frontier {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

Progress::Progress(std::string label, uint64_t total_bytes, bool enabled)
    : label_(std::move(label)), total_(total_bytes), enabled_(enabled), tty_(::isatty(2)) {
  start_ = last_ = std::chrono::steady_clock::now();
}

void Progress::update(uint64_t done) {
  done_ = done;
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  double since = std::chrono::duration<double>(now - last_).count();
  if (since < (tty_ ? 0.1 : 5.0)) return;
  last_ = now;
  draw(false, "");
}

void Progress::finish(const std::string& suffix) {
  if (!enabled_) return;
  if (total_ == 0) total_ = done_;
  done_ = total_ > done_ ? total_ : done_;
  draw(true, suffix);
}

void Progress::draw(bool final, const std::string& suffix) {
  double secs = seconds_since(start_);
  double mb = done_ / 1e6, total_mb = total_ / 1e6;
  double rate = secs > 0 ? mb / secs : 0.0;
  double frac = total_ ? static_cast<double>(done_) / total_ : 0.0;
  if (frac > 1) frac = 1;
  char bar[21];
  int fill = static_cast<int>(frac * 20);
  for (int i = 0; i < 20; i++) bar[i] = i < fill ? '#' : '.';
  bar[20] = 0;
  char eta[32];
  if (final) {
    std::snprintf(eta, sizeof(eta), "in %.1fs", secs);
  } else if (rate > 0 && total_) {
    std::snprintf(eta, sizeof(eta), "ETA %.0fs", (total_mb - mb) / rate);
  } else {
    std::snprintf(eta, sizeof(eta), "ETA ?");
  }
  std::fprintf(stderr, "%s%-14s %5.1f%% [%s] %.1f/%.1f MB  %.1f MB/s  %s%s%s", tty_ ? "\r" : "", label_.c_str(),
               frac * 100, bar, mb, total_mb, rate, eta, suffix.empty() ? "" : "  ", suffix.c_str());
  if (final || !tty_) std::fputc('\n', stderr);
  std::fflush(stderr);
}

}  // namespace frontier

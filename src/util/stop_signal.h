// SIGINT / SIGTERM as a request to stop cleanly: the first sets a flag that the long-running loop polls (a training
// step, the research loop, a child process's wait), the second ends the process at once with the default action.
//
//   StopSignals stop("\nfrontier: stopping after this step (again to quit at once)\n");  // for this scope
//   while (...) { ...; if (StopSignals::received()) break; }
//
// The previous handlers come back when the object dies. One at a time per process.
#pragma once

#include <csignal>

namespace frontier {

class StopSignals {
 public:
  // message: written to stderr when the first signal arrives (async-signal-safe write), or null.
  explicit StopSignals(const char* message = nullptr);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  static int received();  // the signal number, 0 while none arrived
  static const volatile std::sig_atomic_t* flag();  // for run_subprocess's Subprocess::stop

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

}  // namespace frontier

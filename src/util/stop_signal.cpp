#include "util/stop_signal.h"

#include <unistd.h>

#include <cstring>

namespace frontier {

namespace {

volatile std::sig_atomic_t g_signal = 0;
const char* g_message = nullptr;

void on_signal(int sig) {
  if (g_signal) {  // the second: quit now
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  g_signal = sig;
  if (g_message) {
    ssize_t r = write(2, g_message, std::strlen(g_message));
    (void)r;
  }
}

}  // namespace

StopSignals::StopSignals(const char* message) {
  g_signal = 0;
  g_message = message;
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);  // no SA_RESTART needed: the loops poll the flag
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
}

int StopSignals::received() { return g_signal; }
const volatile std::sig_atomic_t* StopSignals::flag() { return &g_signal; }

}  // namespace frontier

// Running a child process without a shell: an argument vector, stdin from a file or /dev/null, stdout captured (up
// to a byte limit) or written to a file, and a timeout after which the child's whole process group is killed.
//
//   Subprocess p;
//   p.argv = {"git", "-C", repo, "add", "frontier_best.toml"};   // each argument reaches the child as one string
//   p.stderr_to_stdout = true;
//   p.timeout_s = 120;
//   SubprocessResult r;
//   FRONTIER_RETURN_IF_ERROR(run_subprocess(p, &r));   // an error only when it could not be started at all
//   if (!r.ok()) return Status::error("git add failed (" + r.describe() + "): " + r.out);
//
// No shell is involved, so no path or data becomes code. A caller that must run a command line the user typed runs
// {"/bin/sh", "-c", that_line} and passes everything else as environment variables or stdin, never inside the line.
//
// Lifetime: the child leads its own process group (a timeout or a stop signals everything it started, and the
// terminal's Ctrl-C reaches only the caller, which decides), and gets SIGKILL when the thread that started it dies
// (PR_SET_PDEATHSIG, checked against the expected parent right after so a parent that died before the call is
// caught too): a SIGKILLed caller leaves no orphaned child. Grandchildren are killed with the group on a timeout,
// a stop, or when the child exits; only a SIGKILL of the caller can leave a grandchild behind. Linux only.
#pragma once

#include <csignal>
#include <string>
#include <vector>

#include "util/status.h"

namespace frontier {

struct Subprocess {
  std::vector<std::string> argv;  // argv[0]: a path, or a name looked up in PATH when it has no '/'
  std::vector<std::string> env;   // "KEY=VALUE" added to (or replacing in) the inherited environment
  std::string cwd;                // working directory (empty: the caller's)
  std::string stdin_path;         // empty: /dev/null
  std::string stdout_path;        // empty: captured into SubprocessResult::out; else this file (truncated)
  std::string stderr_path;        // empty: inherited, unless stderr_to_stdout; else this file (truncated)
  bool stderr_to_stdout = false;  // stderr goes wherever stdout goes
  size_t max_output = 1 << 20;    // captured stdout beyond this many bytes: the pipe is closed (the child gets
                                  // SIGPIPE) and the result says output_truncated
  double timeout_s = 0;           // > 0: SIGKILL to the process group after this many seconds
  // When *stop becomes non-zero (a signal handler's flag), the group gets SIGTERM, then SIGKILL after
  // stop_grace_s; the result says stopped.
  const volatile std::sig_atomic_t* stop = nullptr;
  double stop_grace_s = 5;
};

struct SubprocessResult {
  int exit_code = -1;      // when it exited; -1 when a signal ended it
  int signal = 0;          // the signal that ended it, 0 when it exited
  bool timed_out = false;  // killed by the timeout
  bool stopped = false;    // stopped through Subprocess::stop
  bool output_truncated = false;
  double seconds = 0;
  std::string out;  // captured stdout (at most max_output bytes)
  bool ok() const { return exit_code == 0 && !timed_out && !stopped && !output_truncated; }
  // "exit code 3", "killed by signal 9 (Killed)", "timed out after 300 s", "stopped", "printed more than N bytes"
  std::string describe(const Subprocess& p) const;
};

// Runs p to completion. Returns an error only when the child could not be started (no such program, a file that
// cannot be opened, fork failure); everything that happens after exec is in *r.
Status run_subprocess(const Subprocess& p, SubprocessResult* r);

}  // namespace frontier

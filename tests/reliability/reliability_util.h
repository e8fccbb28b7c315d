// The `reliability` label's tools (ctest -L reliability): run the CLI on a bad input or under a fault, then assert
// what issue 17 promises of every such case:
//   - it exited by itself with a non-zero status (no signal: no abort, no segfault, no kill by a timeout),
//   - stderr ends with ONE line "error: <message>" that names the problem (a substring the test gives),
//     with no FRONTIER_CHECK, "terminate called" or sanitizer report,
//   - every file that existed before is still there, unchanged (DirSnapshot).
//
//   Outcome o = run_argv({frontier_bin(), "train", "--config", bad}, 60);
//   EXPECT_CLEAN_ERROR(o, "unknown key");
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../test_util.h"

namespace frontier::testing {

struct Outcome {
  int rc = -1;          // exit status when it exited
  int signal = 0;       // the signal that ended it, 0 if it exited
  bool timed_out = false;
  std::string out, err;  // stdout, stderr
  std::string last_err_line() const {
    std::string s = err;
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    size_t p = s.rfind('\n');
    return p == std::string::npos ? s : s.substr(p + 1);
  }
};

// Runs argv (no shell) with stdin from /dev/null, optional extra environment ("K=V"), and a timeout in seconds
// after which the process group is killed (a hang is a failure, reported as timed_out).
inline Outcome run_argv(const std::vector<std::string>& argv, double timeout_s = 120,
                        const std::vector<std::string>& env = {}, const std::string& cwd = "") {
  Outcome o;
  int out_p[2], err_p[2];
  if (pipe(out_p) != 0 || pipe(err_p) != 0) return o;
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    dup2(out_p[1], 1);
    dup2(err_p[1], 2);
    close(out_p[0]);
    close(err_p[0]);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    for (const auto& kv : env) putenv(const_cast<char*>(kv.c_str()));
    std::vector<char*> av;
    for (const auto& a : argv) av.push_back(const_cast<char*>(a.c_str()));
    av.push_back(nullptr);
    execv(av[0], av.data());
    _exit(127);
  }
  close(out_p[1]);
  close(err_p[1]);
  auto t0 = std::chrono::steady_clock::now();
  pollfd fds[2] = {{out_p[0], POLLIN, 0}, {err_p[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    double left = timeout_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (left <= 0) {
      o.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    int n = poll(fds, 2, static_cast<int>(std::min(left, 1.0) * 1000) + 1);
    if (n <= 0) continue;
    for (int i = 0; i < 2; i++) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      ssize_t k = read(fds[i].fd, buf, sizeof(buf));
      if (k <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        open_fds--;
      } else {
        (i == 0 ? o.out : o.err).append(buf, k);
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int st = 0;
  waitpid(pid, &st, 0);
  if (WIFEXITED(st)) o.rc = WEXITSTATUS(st);
  if (WIFSIGNALED(st)) o.signal = WTERMSIG(st);
  return o;
}

// Asserts a clean failure: non-zero exit, no signal, no hang, and a last stderr line "error: ..." containing `want`.
#define EXPECT_CLEAN_ERROR(outcome, want)                                                                          \
  do {                                                                                                             \
    const ::frontier::testing::Outcome& _o = (outcome);                                                           \
    EXPECT_FALSE(_o.timed_out) << "hung; stderr:\n" << _o.err;                                                    \
    EXPECT_EQ(_o.signal, 0) << "killed by signal " << _o.signal << "; stderr:\n" << _o.err;                       \
    EXPECT_NE(_o.rc, 0) << "exit status 0 on a bad input; stdout:\n" << _o.out << "\nstderr:\n" << _o.err;       \
    EXPECT_TRUE(_o.rc > 0 && _o.rc < 128) << "rc " << _o.rc;                                                      \
    EXPECT_EQ(_o.last_err_line().rfind("error: ", 0), 0u) << "last stderr line: " << _o.last_err_line();        \
    EXPECT_NE(_o.last_err_line().find(want), std::string::npos)                                                   \
        << "wanted '" << (want) << "' in: " << _o.last_err_line();                                                \
    for (const char* _bad : {"FRONTIER_CHECK", "terminate called", "Sanitizer", "runtime error:", "Aborted"})     \
      EXPECT_EQ(_o.err.find(_bad), std::string::npos) << _bad << " in stderr:\n" << _o.err;                      \
  } while (0)

// Every regular file under a directory with its size and content, to assert none was lost or changed.
struct DirSnapshot {
  std::map<std::string, std::string> files;
  static DirSnapshot of(const std::string& dir) {
    DirSnapshot s;
    for (auto& e : std::filesystem::recursive_directory_iterator(dir)) {
      if (!e.is_regular_file()) continue;
      std::ifstream in(e.path(), std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      s.files[std::filesystem::relative(e.path(), dir).string()] = ss.str();
    }
    return s;
  }
  // Files of *this missing or different in `now` (new files in `now` are allowed). `ignore`: names to skip.
  std::vector<std::string> lost_or_changed(const DirSnapshot& now, const std::vector<std::string>& ignore = {}) const {
    std::vector<std::string> bad;
    for (const auto& [k, v] : files) {
      bool skip = false;
      for (const auto& i : ignore) skip |= k == i || k.rfind(i + "/", 0) == 0;
      if (skip) continue;
      auto it = now.files.find(k);
      if (it == now.files.end()) bad.push_back(k + " (lost)");
      else if (it->second != v) bad.push_back(k + " (changed)");
    }
    return bad;
  }
};

}  // namespace frontier::testing

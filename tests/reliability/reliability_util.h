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

#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>

#include "../test_util.h"
#include "util/sha256.h"

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

// A process started without a shell: stdin from /dev/null, stdout and stderr to files, in its own process group
// (so a timeout kills everything it started). wait() returns its Outcome; a process still running at the timeout is
// killed and reported as timed_out (a hang is a failure).
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::vector<std::string>& env = {}, const std::string& cwd = "") {
    dir_ = make_temp_dir("child");
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      int in = open("/dev/null", O_RDONLY);
      int out = open((dir_ + "/out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int err = open((dir_ + "/err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(in, 0);
      dup2(out, 1);
      dup2(err, 2);
      if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
      for (const auto& kv : env) putenv(const_cast<char*>(kv.c_str()));
      std::vector<char*> av;
      for (const auto& a : argv) av.push_back(const_cast<char*>(a.c_str()));
      av.push_back(nullptr);
      execv(av[0], av.data());
      _exit(127);
    }
    setpgid(pid_, pid_);  // also from here: no race with kill(-pid) below
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      kill(-pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    std::filesystem::remove_all(dir_);
  }
  pid_t pid() const { return pid_; }
  void signal(int sig) { kill(pid_, sig); }
  std::string err_so_far() const { return slurp(dir_ + "/err"); }
  Outcome wait(double timeout_s) {
    Outcome o;
    auto t0 = std::chrono::steady_clock::now();
    int st = 0;
    while (true) {
      pid_t w = waitpid(pid_, &st, WNOHANG);
      if (w == pid_) break;
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > timeout_s) {
        o.timed_out = true;
        kill(-pid_, SIGKILL);
        waitpid(pid_, &st, 0);
        break;
      }
      usleep(20000);
    }
    reaped_ = true;
    kill(-pid_, SIGKILL);  // anything it left behind in its group
    if (WIFEXITED(st)) o.rc = WEXITSTATUS(st);
    if (WIFSIGNALED(st)) o.signal = WTERMSIG(st);
    o.out = slurp(dir_ + "/out");
    o.err = slurp(dir_ + "/err");
    return o;
  }
  static std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  std::string dir_;
  pid_t pid_ = -1;
  bool reaped_ = false;
};

// Runs argv to completion (or the timeout): see Child.
inline Outcome run_argv(const std::vector<std::string>& argv, double timeout_s = 120,
                        const std::vector<std::string>& env = {}, const std::string& cwd = "") {
  Child c(argv, env, cwd);
  return c.wait(timeout_s);
}

// Polls until pred() holds or timeout_s passes; returns pred().
template <typename Pred>
bool wait_until(Pred pred, double timeout_s) {
  auto t0 = std::chrono::steady_clock::now();
  while (!pred()) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > timeout_s) return false;
    usleep(20000);
  }
  return true;
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

// Rewrites the metadata of a checkpoint (train/checkpoint.h's layout: a 104-byte header with the metadata's size at
// 12, the config's at 16 and the body's SHA-256 at 40, then the config, then the metadata), with a valid hash: a
// file edited or written by something else. edit changes the parsed metadata; "finished" is set false first.
inline void rewrite_checkpoint_meta(const std::string& path, const std::function<void(nlohmann::json&)>& edit) {
  std::string ckpt;
  {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    ckpt = ss.str();
  }
  uint32_t meta_bytes;
  uint64_t config_bytes;
  std::memcpy(&meta_bytes, ckpt.data() + 12, 4);
  std::memcpy(&config_bytes, ckpt.data() + 16, 8);
  const size_t at = 104 + config_bytes;
  nlohmann::json meta = nlohmann::json::parse(ckpt.substr(at, meta_bytes));
  meta["finished"] = false;
  edit(meta);
  const std::string m = meta.dump(), body = ckpt.substr(104, config_bytes) + m + ckpt.substr(at + meta_bytes);
  meta_bytes = static_cast<uint32_t>(m.size());
  std::string head = ckpt.substr(0, 104);
  std::memcpy(head.data() + 12, &meta_bytes, 4);
  head.replace(40, 64, sha256_hex(body));
  write_text(path, head + body);
}

}  // namespace frontier::testing

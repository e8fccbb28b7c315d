// util/subprocess.h: no shell, a byte limit on captured output, a timeout and a stop that kill the whole process
// group, exec failures as errors.
#include <signal.h>

#include <csignal>
#include <thread>

#include "reliability_util.h"
#include "util/subprocess.h"

namespace frontier::testing {

namespace {

// Whether pid is a live process (a zombie counts as dead: it runs nothing).
bool alive(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  size_t p = s.rfind(')');
  return p != std::string::npos && p + 2 < s.size() && s[p + 2] != 'Z' && s[p + 2] != 'X';
}

}  // namespace

TEST(Subprocess, ArgumentsReachTheChildVerbatim) {
  std::string d = make_temp_dir("subprocess");
  const std::string nasty = "a'; touch PWNED; '$(touch PWNED)`touch PWNED` \"b\"";
  Subprocess p;
  p.argv = {"/bin/sh", "-c", "printf '%s|%s' \"$1\" \"$X\"", "sh", nasty};
  p.env = {"X=" + nasty};
  p.cwd = d;
  SubprocessResult r;
  ASSERT_TRUE(run_subprocess(p, &r).ok());
  EXPECT_TRUE(r.ok()) << r.describe(p);
  EXPECT_EQ(r.out, nasty + "|" + nasty);
  EXPECT_FALSE(std::filesystem::exists(d + "/PWNED"));
  std::filesystem::remove_all(d);
}

TEST(Subprocess, StdinFromAFileAndExitCode) {
  std::string d = make_temp_dir("subprocess");
  write_text(d + "/in.txt", "hello\n");
  Subprocess p;
  p.argv = {"sh", "-c", "cat; exit 3"};  // found in PATH
  p.stdin_path = d + "/in.txt";
  SubprocessResult r;
  ASSERT_TRUE(run_subprocess(p, &r).ok());
  EXPECT_EQ(r.out, "hello\n");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.describe(p), "exit code 3");
  std::filesystem::remove_all(d);
}

TEST(Subprocess, AMissingProgramIsAnError) {
  Subprocess p;
  p.argv = {"/nonexistent/frontier-no-such-program"};
  SubprocessResult r;
  Status s = run_subprocess(p, &r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("cannot run /nonexistent/frontier-no-such-program"), std::string::npos) << s.message();
  p.argv = {"frontier-no-such-program-in-path"};
  s = run_subprocess(p, &r);
  EXPECT_NE(s.message().find("not found in PATH"), std::string::npos) << s.message();
}

TEST(Subprocess, TimeoutKillsTheWholeGroup) {
  Subprocess p;
  // The shell starts a grandchild, prints its pid and waits: the timeout must take both.
  p.argv = {"/bin/sh", "-c", "sleep 1000 & echo $!; wait"};
  p.timeout_s = 0.5;
  SubprocessResult r;
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(run_subprocess(p, &r).ok());
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.signal, SIGKILL);
  EXPECT_NE(r.describe(p).find("timed out after 0.5 s"), std::string::npos) << r.describe(p);
  pid_t grandchild = std::atoi(r.out.c_str());
  ASSERT_GT(grandchild, 0) << r.out;
  for (int i = 0; i < 100 && alive(grandchild); i++) usleep(20000);
  EXPECT_FALSE(alive(grandchild)) << "the grandchild " << grandchild << " survived the timeout";
}

TEST(Subprocess, OutputBeyondTheLimitIsCut) {
  Subprocess p;
  p.argv = {"/bin/sh", "-c", "yes"};  // endless output
  p.max_output = 1000;
  p.timeout_s = 30;
  SubprocessResult r;
  ASSERT_TRUE(run_subprocess(p, &r).ok());
  EXPECT_TRUE(r.output_truncated);
  EXPECT_FALSE(r.timed_out) << "the closed pipe should have ended it";
  EXPECT_EQ(r.out.size(), 1000u);
  EXPECT_NE(r.describe(p).find("more than 1000 bytes"), std::string::npos) << r.describe(p);
}

TEST(Subprocess, StopFlagTerminatesTheGroup) {
  static volatile std::sig_atomic_t stop = 0;
  stop = 0;
  Subprocess p;
  p.argv = {"/bin/sh", "-c", "sleep 1000; true"};
  p.stop = &stop;
  std::thread t([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop = 1;
  });
  SubprocessResult r;
  ASSERT_TRUE(run_subprocess(p, &r).ok());
  t.join();
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.signal, SIGTERM);
  EXPECT_LT(r.seconds, 5.0);
}

}  // namespace frontier::testing

// util/file_lock.h: one owner per directory; the kernel frees the lock when its holder dies.
#include <sys/wait.h>
#include <unistd.h>

#include "reliability_util.h"
#include "util/file_lock.h"

namespace frontier::testing {

TEST(DirLock, SecondHolderIsRefusedWithThePid) {
  std::string dir = make_temp_dir("lock");
  DirLock a;
  ASSERT_TRUE(a.acquire(dir, "train.run_dir").ok());
  EXPECT_EQ(dir_lock_holder(dir), static_cast<long>(getpid()));
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {  // another process: refused, and told who holds it
    DirLock b;
    Status s = b.acquire(dir, "train.run_dir");
    std::string m = s.ok() ? "acquired" : s.message();
    if (write(fds[1], m.data(), m.size()) < 0) _exit(2);
    _exit(0);
  }
  close(fds[1]);
  char buf[512] = {0};
  ssize_t n = read(fds[0], buf, sizeof(buf) - 1);
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  ASSERT_GT(n, 0);
  std::string msg(buf, n);
  EXPECT_NE(msg.find("in use by another frontier process (pid " + std::to_string(getpid()) + ")"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("train.run_dir"), std::string::npos) << msg;
  a.release();
  EXPECT_EQ(dir_lock_holder(dir), 0);
  std::filesystem::remove_all(dir);
}

TEST(DirLock, AKilledHolderLeavesNoStaleLock) {
  std::string dir = make_temp_dir("lock");
  pid_t pid = fork();
  if (pid == 0) {
    DirLock a;
    if (!a.acquire(dir, "x").ok()) _exit(1);
    pause();  // holds it until killed
    _exit(0);
  }
  for (int i = 0; i < 200 && dir_lock_holder(dir) != pid; i++) usleep(10000);
  ASSERT_EQ(dir_lock_holder(dir), pid);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  EXPECT_EQ(dir_lock_holder(dir), 0);  // the kernel dropped the flock with the process
  DirLock b;
  EXPECT_TRUE(b.acquire(dir, "x").ok());
  std::filesystem::remove_all(dir);
}

}  // namespace frontier::testing

#include "util/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace frontier {

namespace {

long read_pid(int fd) {
  char buf[32] = {0};
  ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
  return n > 0 ? std::strtol(buf, nullptr, 10) : 0;
}

}  // namespace

DirLock::~DirLock() { release(); }

void DirLock::release() {
  if (fd_ < 0) return;
  if (ftruncate(fd_, 0) != 0) {
  }  // best effort: an empty lock file reads as "no holder"
  close(fd_);  // closing the descriptor drops the flock
  fd_ = -1;
}

Status DirLock::acquire(const std::string& dir, const std::string& knob) {
  release();
  const std::string path = dir + "/.lock";
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::error("cannot create " + path + ": " + std::strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    long pid = read_pid(fd);
    close(fd);
    if (err == EWOULDBLOCK)
      return Status::error(dir + " is in use by another frontier process (pid " + std::to_string(pid) +
                           "); wait for it to finish, or choose another directory (" + knob + ")");
    return Status::error("cannot lock " + path + ": " + std::strerror(err));
  }
  std::string me = std::to_string(static_cast<long>(getpid())) + "\n";
  if (ftruncate(fd, 0) != 0 || pwrite(fd, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size())) {
    close(fd);
    return Status::error("cannot write " + path + ": " + std::strerror(errno));
  }
  fd_ = fd;
  return ok_status();
}

long dir_lock_holder(const std::string& dir) {
  int fd = open((dir + "/.lock").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  long pid = 0;
  if (flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK) pid = read_pid(fd);
  else flock(fd, LOCK_UN);
  close(fd);
  return pid;
}

}  // namespace frontier

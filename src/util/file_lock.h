// Exclusive ownership of a directory (a run dir, a research session) for as long as a process uses it.
//
//   DirLock lock;
//   FRONTIER_RETURN_IF_ERROR(lock.acquire(run_dir, "train.run_dir"));   // error if another process holds it
//
// flock(2) on DIR/.lock: the kernel releases it when the process exits or dies (SIGKILL included), so a crash
// never leaves a stale lock behind. The holder writes its pid into the file; a second process gets a one-line error
// naming that pid and the knob that picks another directory. Child processes do not inherit the lock (O_CLOEXEC).
#pragma once

#include <string>

#include "util/status.h"

namespace frontier {

class DirLock {
 public:
  DirLock() = default;
  ~DirLock();
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;
  // knob: what the user changes to use another directory, e.g. "train.run_dir" or "--out".
  Status acquire(const std::string& dir, const std::string& knob);
  void release();
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// The pid recorded in DIR/.lock if a live process holds the lock, else 0 (no lock file, or nobody holds it).
long dir_lock_holder(const std::string& dir);

}  // namespace frontier

#include "util/staging_dir.h"

#include <unistd.h>

#include <filesystem>

#include "util/file.h"

namespace frontier {

namespace fs = std::filesystem;

StagingDir::~StagingDir() {
  if (dir_.empty()) return;
  std::error_code ec;
  fs::remove_all(data_dir(), ec);
  fs::remove_all(old_dir(), ec);
  fs::remove(dir_ + "/.lock", ec);
  fs::remove(dir_, ec);  // only if empty; lock_ is released after this body
}

Status StagingDir::begin(const std::string& out, const std::string& kind) {
  // The real directory (a symlinked --out resolves to its target), so that the staging directory is its sibling on
  // the same file system and the final rename is a rename, not a cross-device copy.
  std::error_code cec;
  fs::path p = fs::weakly_canonical(fs::absolute(fs::path(out)), cec);
  if (cec) p = fs::absolute(fs::path(out)).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // "data/x/" -> "data/x"
  const std::string name = p.filename().string();
  if (name.empty() || name == "." || name == "..") return Status::error("--out " + out + " must name a directory (not / . or ..)");
  const std::string dir = (p.parent_path() / ("." + name + "." + kind)).string();
  FRONTIER_RETURN_IF_ERROR(make_dirs(dir, "--out"));
  Status s = lock_.acquire(dir, "--out");
  if (!s.ok()) {
    if (s.message().find(" is in use ") == std::string::npos) return s;  // not another holder: an I/O error
    long pid = dir_lock_holder(dir);  // 0 for a moment after the holder locks, before it writes its pid
    for (int i = 0; i < 50 && pid == 0; i++) {
      usleep(20000);
      pid = dir_lock_holder(dir);
    }
    return Status::error("--out " + out + " is being written by another frontier " + kind + " (pid " +
                         (pid ? std::to_string(pid) : std::string("unknown")) + ", lock " + dir +
                         "/.lock); wait for it to finish, or choose another --out");
  }
  dir_ = dir;
  target_ = p.string();
  std::error_code ec;
  fs::remove_all(data_dir(), ec);  // the debris of a killed run
  fs::remove_all(old_dir(), ec);
  return make_dirs(data_dir(), "--out");
}

}  // namespace frontier

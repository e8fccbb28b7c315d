// The staging directory of a command that writes a whole output directory (prepare's dataset, export's model
// directory): PARENT/.NAME.<kind>/ beside --out NAME, locked (util/file_lock.h) for as long as the command runs,
// the output written into its data/ and moved to NAME by the caller once whole (a rename on the same file system:
// a symlinked --out resolves to its target first). Removed when the command ends, whether it succeeded or not; a
// killed command leaves it, and the next one clears it. A second command on the same --out gets an error naming
// the first one's pid.
//
//   StagingDir st;
//   FRONTIER_RETURN_IF_ERROR(st.begin(out, "prepare"));   // "--out data/x is being written by another ..."
//   ... write into st.data_dir() ...; then rename into st.target() (st.old_dir(): room for what it replaces)
#pragma once

#include <string>

#include "util/file_lock.h"
#include "util/status.h"

namespace frontier {

class StagingDir {
 public:
  ~StagingDir();
  // kind names the staging directory (".NAME.<kind>") and the command in the busy message ("frontier <kind>").
  Status begin(const std::string& out, const std::string& kind);
  std::string data_dir() const { return dir_ + "/data"; }
  std::string old_dir() const { return dir_ + "/old"; }
  const std::string& target() const { return target_; }  // the output directory, resolved

 private:
  std::string dir_, target_;
  DirLock lock_;  // released after the destructor's body has removed the directory
};

}  // namespace frontier

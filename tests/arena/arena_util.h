// Shared by the arena suite's files: a shell command that must succeed, and a file's text.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "../test_util.h"
#include "util/file.h"

namespace frontier::testing {

inline std::string sh(const std::string& cmd) {  // a command that must succeed
  RunResult r = run_cmd(cmd);
  EXPECT_EQ(r.rc, 0) << cmd << "\n" << r.out;
  return r.out;
}

inline std::string slurp(const std::string& p) {  // "" when unreadable
  std::string s;
  read_file(p, &s);
  return s;
}

}  // namespace frontier::testing

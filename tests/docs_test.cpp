// The commands in docs/kernels.md run: every line starting with "$ " inside a ```console block is executed (with
// build/ pointing at this build's binaries, in a scratch FRONTIER_CACHE) and must exit 0. A guide whose commands
// rot is worse than none.
#include <gtest/gtest.h>

#include <sstream>

#include "test_util.h"
#include "util/file.h"

using namespace frontier;
using namespace frontier::testing;

TEST(Docs, KernelGuideCommandsRun) {
  std::string text;
  ASSERT_TRUE(read_file(source_dir() + "/docs/kernels.md", &text).ok());
  const std::string bin = frontier_bin(), build_dir = bin.substr(0, bin.rfind('/') + 1);
  const std::string cache = make_temp_dir("docs_cache");
  std::istringstream in(text);
  bool console = false;
  int ran = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("```", 0) == 0) {
      console = line == "```console";
      continue;
    }
    if (!console || line.rfind("$ ", 0) != 0) continue;
    std::string cmd = line.substr(2);
    for (size_t at = 0; (at = cmd.find("build/", at)) != std::string::npos; at += build_dir.size())
      cmd.replace(at, 6, build_dir);
    auto r = run_cmd("cd " + source_dir() + " && FRONTIER_CACHE=" + cache + " " + cmd);
    EXPECT_EQ(r.rc, 0) << line << "\n" << r.out;
    ran++;
  }
  EXPECT_GE(ran, 4) << "no ```console commands found in docs/kernels.md";
}

// The research search space (research/research.h load_space): the input is the TOML file `frontier research
// --space FILE` reads (one table per config key with choices = [...] or min/max[/log]), every value of which is
// then checked against train's schema.
// Seeds: configs/space.toml and edits of it (choices of every type, integer ranges, log ranges).
// Dictionary: fuzz/dicts/toml.dict (scripts/sanitize.sh passes it to libFuzzer).
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "research/research.h"

using namespace frontier;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = fuzz::scratch_dir() + "/space.toml";
  fuzz::write(path, data, size);
  std::vector<SpaceDim> space;
  (void)load_space(path, &space);
  return 0;
}

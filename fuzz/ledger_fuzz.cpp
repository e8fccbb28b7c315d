// The research ledger (research/research.h read_ledger): the input is a session's ledger.jsonl, as `frontier
// research --out DIR` reads it to resume; every entry it accepts is then written back the way the loop rewrites
// its ledger (json::dump, invalid UTF-8 replaced), which must not throw.
// Seeds: the ledger of a real 4-trial session (tiny model, 2 s budget), with running and interrupted entries.
// Dictionary: fuzz/dicts/json.dict (scripts/sanitize.sh passes it to libFuzzer).
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "research/research.h"

using namespace frontier;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = fuzz::scratch_dir() + "/ledger.jsonl";
  fuzz::write(path, data, size);
  std::vector<nlohmann::json> ledger;
  if (!read_ledger(path, &ledger).ok()) return 0;
  for (const auto& e : ledger) (void)e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return 0;
}

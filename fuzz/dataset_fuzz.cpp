// The dataset manifest (data/dataset.h PreparedData::open): the input after its first byte replaces
// manifest.json of a valid prepared dataset (tokenizer, token_bytes and shards intact), then its splits are
// opened, as `frontier train`, `inspect` and `eval bpb` do. First byte odd: where the input is a JSON object, the
// harness first sets the recorded size and SHA-256 of every file that exists and the tokenizer's fingerprint to
// the true values, so mutations get past those checks to the rest of the manifest.
// Seeds: the manifest `frontier prepare` wrote for the fixture dataset (fuzz_util.h make_dataset) and edits.
// Dictionary: fuzz/dicts/json.dict (scripts/sanitize.sh passes it to libFuzzer).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "fuzz_util.h"
#include "util/sha256.h"

using namespace frontier;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const std::string dir = fuzz::make_dataset();
  static const nlohmann::json truth = nlohmann::json::parse(fuzz::read(dir + "/manifest.json"));
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) {
    nlohmann::json m = nlohmann::json::parse(text, nullptr, false);
    if (m.is_object()) {
      if (m.contains("files") && m["files"].is_object())
        for (auto& [name, info] : m["files"].items())
          if (truth["files"].contains(name) && info.is_object()) info = truth["files"][name];
      if (m.contains("tokenizer") && m["tokenizer"].is_object())
        m["tokenizer"]["fingerprint"] = truth["tokenizer"]["fingerprint"];
      text = m.dump();
    }
  }
  fuzz::write(dir + "/manifest.json", text);
  PreparedData ds;
  if (!ds.open(dir).ok()) return 0;
  for (const char* split : {"train", "val", "test"}) {
    std::vector<Shard> shards;
    (void)ds.open_split(split, &shards);
  }
  return 0;
}

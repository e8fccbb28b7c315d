// Checkpoints (train/checkpoint.h: load_checkpoint, load_trained_model): the input is read as
// RUN_DIR/model.ckpt twice: as it is (magic, version, sizes, SHA-256 checks), and with the SHA-256 in its header
// recomputed over the rest, so that mutations past the checksum reach what is parsed after it: the config (TOML,
// through train_schema), the model it describes, the weight count and values, and the metadata JSON's run
// identity, as `frontier eval` and `sample` load it (load_trained_model), and the loader state that `train
// --resume` restores.
// Seeds: a checkpoint of a tiny model from `frontier train` (scripts/sanitize.sh makes one at run time: it is
// ~0.5 MB) and small committed ones: real header, config and metadata with the weights cut, and edits.
// Dictionary: fuzz/dicts/toml.dict (scripts/sanitize.sh passes it to libFuzzer).
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "data/loader.h"
#include "fuzz_util.h"
#include "model/gpt.h"
#include "train/checkpoint.h"
#include "train/identity.h"
#include "train/schema.h"
#include "util/sha256.h"

using namespace frontier;

namespace {
constexpr size_t kHeader = 104;  // magic, version, meta_bytes, config_bytes, n_weights, n_state, sha256 hex
constexpr size_t kShaAt = 40;
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string raw = fuzz::scratch_dir() + "/raw.ckpt", fixed = fuzz::scratch_dir() + "/model.ckpt";
  std::string config, meta;
  std::vector<float> w, st;
  fuzz::write(raw, data, size);
  (void)load_checkpoint(raw, &config, &meta, &w, &st);
  if (size < kHeader) return 0;
  std::string bytes(reinterpret_cast<const char*>(data), size);
  const std::string hex = sha256_hex(std::string_view(bytes).substr(kHeader));
  std::memcpy(bytes.data() + kShaAt, hex.data(), 64);
  fuzz::write(fixed, bytes);
  if (load_checkpoint(fixed, &config, &meta, &w, &st).ok()) {  // what `train --resume` parses of the metadata
    nlohmann::json m = nlohmann::json::parse(meta, nullptr, false);
    LoaderState ls;
    if (m.is_object() && m.contains("loader")) (void)LoaderState::from_json(m["loader"], &ls);
  }
  Config cfg;
  std::unique_ptr<Gpt> gpt;
  RunIdentity id;
  (void)load_trained_model(fixed, &cfg, &gpt, &id);
  return 0;
}

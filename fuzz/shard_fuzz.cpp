// Token shards (data/shard.h): the input is read as token_bytes.bin (read_token_bytes) and opened as a shard of
// the fixture's vocabulary (Shard::open); a shard that opens then replaces the first train shard of a valid
// prepared dataset, whose manifest is rewritten with the new size and SHA-256, so that PreparedData::open (verify
// on) and open_split("train") load it as `frontier train` and `inspect` do, and the best-fit loader takes a few
// batches from it. (Through the dataset first, every input would pay for loading the tokenizer and hashing every
// file before reaching the same checks.)
// Seeds: shards and token_bytes.bin that `frontier prepare` wrote for the fixture corpus, cut and edited.
#include <cstdint>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/loader.h"
#include "fuzz_util.h"
#include "util/sha256.h"

using namespace frontier;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = fuzz::make_dataset();
  static const nlohmann::json manifest = nlohmann::json::parse(fuzz::read(dir + "/manifest.json"));
  static const std::string shard = manifest["splits"]["train"]["shards"][0].get<std::string>();
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  static const std::string tb = fuzz::scratch_dir() + "/token_bytes.bin";
  fuzz::write(tb, bytes);
  std::vector<int32_t> token_bytes;
  (void)read_token_bytes(tb, &token_bytes);
  Shard alone;
  if (!alone.open(tb, 300).ok()) return 0;
  fuzz::write(dir + "/" + shard, bytes);
  nlohmann::json m = manifest;
  m["files"][shard] = {{"bytes", size}, {"sha256", sha256_hex(bytes)}};
  fuzz::write(dir + "/manifest.json", m.dump(2));

  PreparedData ds;
  std::vector<Shard> shards;
  if (ds.open(dir).ok() && ds.open_split("train", &shards).ok()) {
    BestFitLoader loader;
    LoaderConfig cfg;
    cfg.B = 2;
    cfg.T = 16;
    cfg.buffer_size = 8;
    cfg.doc_batch = 4;
    if (loader.init(shards, cfg).ok()) {
      std::vector<int32_t> x(cfg.B * cfg.T), y(cfg.B * cfg.T);
      for (int i = 0; i < 3; i++) loader.next(x.data(), y.data());
    }
  }
  return 0;
}

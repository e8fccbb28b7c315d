// The config parser (config/config.h) with train's schema: the input as a TOML file (load_toml_string), then its
// first lines as `--set key=value` (apply_set), then derive_model_shape as `frontier train` does next. A config
// the parser accepts must also reload from its own to_toml(): train writes that text into config.toml and into
// every checkpoint, and `--resume` and load_trained_model parse it again.
// Seeds: configs/*.toml and --set lines from the tests (fuzz/corpus/config_fuzz/).
// Dictionary: fuzz/dicts/toml.dict (scripts/sanitize.sh passes it to libFuzzer).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "config/config.h"
#include "model/model_config.h"
#include "train/schema.h"

using namespace frontier;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const ConfigSchema schema = train_schema();
  const std::string text(reinterpret_cast<const char*>(data), size);
  Config cfg = schema.defaults();
  (void)schema.load_toml_string(text, "fuzz.toml", &cfg);
  // The first 3 lines only: an unknown key costs an edit distance against every key ("did you mean"), and 40
  // of them per input took 90% of the fuzzer's time for no new paths.
  for (size_t pos = 0, n = 0; pos <= text.size() && n < 3; n++) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    (void)schema.apply_set(text.substr(pos, nl - pos), &cfg);
    pos = nl + 1;
  }
  ModelShape shape;
  (void)derive_model_shape(cfg, &shape);
  Config again = schema.defaults();
  Status s = schema.load_toml_string(cfg.to_toml(), "to_toml", &again);
  if (!s.ok() || again.values() != cfg.values()) {
    std::fprintf(stderr, "accepted config does not reload from to_toml(): %s\n--- to_toml:\n%s\n",
                 s.ok() ? "values differ" : s.message().c_str(), cfg.to_toml().c_str());
    std::abort();
  }
  return 0;
}

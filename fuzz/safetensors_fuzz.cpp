// Model directories (export/safetensors.h SafetensorsFile::open + read_f32, export/model_dir.h read_model_dir
// and import_model), as `frontier import` reads them. Byte 0 mod 3 says what the rest of the input is:
//   0  a whole model.safetensors (length field, header, data): opened, every tensor widened to fp32, then
//   read as
//      the weights of a fixed tiny model's config.json;
//   1  the header JSON alone: the target frames it with its length and appends the data section of the tiny
//      model's real file, so mutated names, shapes, dtypes and offsets reach the checks against the config
//      with real bytes behind them (the same idea as checkpoint_fuzz recomputing the SHA-256);
//   2  config.json, next to the tiny model's real model.safetensors and tokenizer/: read_model_dir, then
//      import_model (frontier.train_config through train_schema, the shape check, a checkpoint written) when
//      the directory reads.
// The tiny model: depth 2, dim 32 (2 heads of 16, 1 kv head), vocabulary 300 padded to 320, nanochat's init,
// exported in bf16 from a checkpoint on the fuzz fixture dataset, once per process (about 70 KB, not
// committed). Seeds (fuzz/corpus/safetensors_fuzz/): its header and its config.json
// (FRONTIER_FUZZ_DUMP_MODEL=DIR copies the exported directory there), and small whole files of each dtype.
// Dictionary: fuzz/dicts/json.dict.
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "export/model_dir.h"
#include "export/safetensors.h"
#include "fuzz_util.h"
#include "model/gpt.h"
#include "train/checkpoint.h"
#include "train/identity.h"
#include "train/schema.h"

using namespace frontier;

namespace {

struct Fixture {
  std::string dir;          // the exported model directory the target rewrites one file of
  std::string config_json;  // its valid files
  std::string data;         // the data section of its model.safetensors
  std::string safetensors;
};

const Fixture& fixture() {
  static const Fixture f = [] {
    Fixture x;
    const std::string data_dir = fuzz::make_dataset(), run = fuzz::scratch_dir() + "/run";
    ConfigSchema schema = train_schema();
    Config cfg = schema.defaults();
    for (const char* kv : {"model.depth=2", "model.dim=32", "model.head_dim=16", "model.n_kv_head=1",
                           "model.vocab_size=300", "model.seq_len=16", "train.micro_batch=2"})
      if (!schema.apply_set(kv, &cfg).ok()) std::abort();
    cfg.set("train.data", data_dir);
    ModelShape shape;
    if (!derive_model_shape(cfg, &shape).ok()) std::abort();
    Gpt gpt(shape);
    gpt.init_nanochat(1);
    PreparedData pd;
    if (!pd.open(data_dir).ok()) std::abort();
    std::filesystem::create_directories(run);
    const std::string meta = nlohmann::json({{"identity", RunIdentity::of(pd).to_json()}}).dump();
    if (!save_checkpoint(run + "/model.ckpt", cfg.to_toml(), meta, gpt.weights(), {}).ok()) std::abort();
    x.dir = fuzz::scratch_dir() + "/model";
    ExportResult er;
    Status s = export_model({run + "/model.ckpt", x.dir, "", true}, &er);
    if (!s.ok()) {
      std::fprintf(stderr, "fuzz: exporting the fixture model failed: %s\n", s.message().c_str());
      std::abort();
    }
    if (const char* out = std::getenv("FRONTIER_FUZZ_DUMP_MODEL"))
      std::filesystem::copy(x.dir, out, std::filesystem::copy_options::recursive);
    x.config_json = fuzz::read(x.dir + "/config.json");
    x.safetensors = fuzz::read(x.dir + "/model.safetensors");
    uint64_t n;
    std::memcpy(&n, x.safetensors.data(), 8);
    x.data = x.safetensors.substr(8 + n);
    return x;
  }();
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const Fixture& f = fixture();
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const int mode = data[0] % 3;
  const std::string st_path = f.dir + "/model.safetensors";
  if (mode == 0) {
    fuzz::write(st_path, rest);
  } else if (mode == 1) {
    const uint64_t n = rest.size();
    std::string file(reinterpret_cast<const char*>(&n), 8);
    file.append(rest).append(f.data);
    fuzz::write(st_path, file);
  } else {
    fuzz::write(st_path, f.safetensors);
  }
  fuzz::write(f.dir + "/config.json", mode == 2 ? rest : std::string_view(f.config_json));
  SafetensorsFile st;
  if (mode != 2 && st.open(st_path).ok()) {
    std::vector<float> buf;
    for (const auto& t : st.tensors()) {  // the sizes are bounded by the file's: open checked them
      buf.resize(static_cast<size_t>(t.numel()));
      st.read_f32(t, buf.data());
    }
  }
  ModelDir m;
  if (!read_model_dir(f.dir, &m).ok() || mode != 2) return 0;
  ImportResult ir;
  (void)import_model({f.dir, fuzz::scratch_dir() + "/imported", "", {}, true}, &ir);
  return 0;
}

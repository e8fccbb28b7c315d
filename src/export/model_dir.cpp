#include "export/model_dir.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "data/dataset.h"
#include "data/loader.h"
#include "export/nanochat_names.h"
#include "export/safetensors.h"
#include "model/gpt.h"
#include "optim/optim.h"
#include "tokenizer/tokenizer.h"
#include "train/checkpoint.h"
#include "train/identity.h"
#include "train/recipe.h"
#include "train/schema.h"
#include "train/settings.h"
#include "util/file.h"
#include "util/staging_dir.h"
#include "util/file_lock.h"

namespace frontier {

namespace {

constexpr int kFormatVersion = 1;  // config.json "frontier"."format"
const char* const kTokenizerFiles[] = {"tokenizer.tiktoken", "tokenizer.json"};

bool same_shape(const ModelShape& a, const ModelShape& b) {
  return a.depth == b.depth && a.dim == b.dim && a.n_head == b.n_head && a.n_kv_head == b.n_kv_head &&
         a.head_dim == b.head_dim && a.vocab_size == b.vocab_size && a.seq_len == b.seq_len &&
         a.mlp_dim == b.mlp_dim && frontier_architecture(a) == frontier_architecture(b);
}

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); i++) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

// The staging directory of an export (util/staging_dir.h: PARENT/.NAME.export/, locked while this export runs), the
// model directory written into its data/ and renamed to out when whole.
class ExportStaging {
 public:
  Status begin(const std::string& out) { return dir_.begin(out, "export"); }
  std::string data_dir() const { return dir_.data_dir(); }
  // Renames the finished directory to out; an existing out (the caller checked --force) moves aside first and is
  // deleted only once the new one is in place.
  Status publish() {
    namespace fs = std::filesystem;
    const std::string& out = dir_.target();
    std::error_code ec;
    if (fs::exists(out, ec)) {
      fs::rename(out, dir_.old_dir(), ec);
      if (ec) return Status::error("cannot move the old " + out + " aside: " + ec.message());
    }
    fs::rename(data_dir(), out, ec);
    if (ec) {
      std::error_code ec2;
      fs::rename(dir_.old_dir(), out, ec2);  // put the old one back
      return Status::error("cannot move the new model directory to " + out + ": " + ec.message());
    }
    return ok_status();
  }

 private:
  StagingDir dir_;
};

}  // namespace

Status export_model(const ExportOptions& o, ExportResult* r) {
  Config cfg;
  std::unique_ptr<Gpt> gpt;
  RunIdentity id;
  FRONTIER_RETURN_IF_ERROR(load_trained_model(o.checkpoint, &cfg, &gpt, &id));
  ModelShape s = gpt->shape();
  // model.untie_at: the model is written untied, its head lm_head (a copy of wte if the run stopped before the
  // untie); the parameter table is the untied model's, name for name and offset for offset.
  if (s.arch.untie_at > 0) s.arch.tie_embeddings = false, s.arch.untie_at = 0;
  const std::string data = o.data.empty() ? train_settings(cfg).data : o.data;
  const std::string tok_dir = data + "/tokenizer";
  Tokenizer tok;
  if (Status st = tok.load(tok_dir); !st.ok())
    return Status::error(st.message() +
                         " (export copies the tokenizer of the run's dataset; pass --data with it)");
  FRONTIER_RETURN_IF_ERROR(id.check_tokenizer(tok, o.checkpoint));
  if (static_cast<int>(tok.vocab_size()) != s.vocab_size)
    return Status::error(o.checkpoint + " has vocab_size " + std::to_string(s.vocab_size) +
                         ", but the tokenizer in " + tok_dir + " has " + std::to_string(tok.vocab_size()) +
                         "; pass --data with the run's dataset");
  std::string tok_bytes[2];
  for (int i = 0; i < 2; i++)
    FRONTIER_RETURN_IF_ERROR(read_file(tok_dir + "/" + kTokenizerFiles[i], &tok_bytes[i]));

  std::error_code ec;
  if (std::filesystem::exists(o.out_dir, ec) && !std::filesystem::is_directory(o.out_dir, ec))
    return Status::error("--out " + o.out_dir + " is a file, not a directory; choose another --out");
  if (!o.force && std::filesystem::exists(o.out_dir, ec) && !std::filesystem::is_empty(o.out_dir, ec))
    return Status::error("--out " + o.out_dir + " already holds files" +
                         (file_exists(o.out_dir + "/config.json") ? " (a model directory)" : "") +
                         "; choose another --out, or pass --force to replace it");
  ExportStaging staging;
  FRONTIER_RETURN_IF_ERROR(staging.begin(o.out_dir));
  const std::string out = staging.data_dir();  // everything below is written here, then renamed to o.out_dir
  FRONTIER_RETURN_IF_ERROR(make_dirs(out + "/tokenizer", "--out"));
  const std::string config_path = out + "/config.json";
  for (int i = 0; i < 2; i++)
    FRONTIER_RETURN_IF_ERROR(write_file_atomic(out + "/tokenizer/" + kTokenizerFiles[i], tok_bytes[i]));

  // Vocabulary rows padded to nanochat's multiple of 64 with zeros; everything else straight from the arena.
  const int64_t V = s.vocab_size, Vp = nanochat_padded_vocab(V);
  const StDtype dt = o.bf16 ? StDtype::kBF16 : StDtype::kF32;
  std::vector<StTensorIn> ts;
  std::vector<std::vector<float>> padded;
  padded.reserve(gpt->params().size());
  for (const auto& p : gpt->params()) {
    const float* w = gpt->weights().data() + p.offset;
    std::vector<int64_t> shape = p.shape;
    if (has_vocab_rows(p) && Vp != V) {
      const int64_t cols = p.shape[1];
      padded.emplace_back(static_cast<size_t>(Vp * cols), 0.f);
      std::memcpy(padded.back().data(), w, sizeof(float) * V * cols);
      w = padded.back().data();
      shape[0] = Vp;
    }
    ts.push_back({nanochat_name(p.name), shape, w, dt});
  }
  r->shape = s;
  const std::string safetensors_path = out + "/model.safetensors";
  r->safetensors_path = o.out_dir + "/model.safetensors";
  r->tokenizer_from = tok_dir;
  r->n_tensors = ts.size();
  FRONTIER_RETURN_IF_ERROR(
      write_safetensors(safetensors_path, ts, {{"format", "pt"}, {"producer", "frontier export"}}));
  r->bytes = std::filesystem::file_size(safetensors_path, ec);
  if (ec) r->bytes = 0;

  nlohmann::ordered_json j;  // GPTConfig's fields first, in nanochat's order, then Frontier's
  for (const char* k :
       {"sequence_len", "vocab_size", "n_layer", "n_head", "n_kv_head", "n_embd", "window_pattern"})
    j[k] = nanochat_gpt_config(s)[k];
  j["frontier"] = {{"format", kFormatVersion},
                   {"architecture", frontier_architecture(s)},
                   {"dtype", o.bf16 ? "bfloat16" : "float32"},
                   {"train_config", cfg.to_toml()},
                   {"identity", id.to_json()},
                   {"source", o.checkpoint}};
  // Last: its presence marks a complete export. Non-UTF-8 bytes (a path) are shown as U+FFFD.
  FRONTIER_RETURN_IF_ERROR(write_file_atomic(
      config_path, j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n"));
  return staging.publish();
}

Status read_model_dir(const std::string& dir, ModelDir* out) {
  const std::string cpath = dir + "/config.json", spath = dir + "/model.safetensors";
  std::string text;
  if (Status st = read_file(cpath, &text); !st.ok())
    return Status::error(st.message() +
                         " (a model directory holds config.json, model.safetensors and tokenizer/, "
                         "as `frontier export` writes)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for 1e999
    std::string what = e.what();
    if (what.find("] ") != std::string::npos) what = what.substr(what.find("] ") + 2);
    return Status::error(cpath + ": not valid JSON (" + what + ")");
  }
  ModelShape& s = out->shape;
  FRONTIER_RETURN_IF_ERROR(shape_from_gpt_config(j, cpath, &s));
  bool has_arch = false;
  out->train_config.clear();
  out->tokenizer_sha256.clear();
  out->data_sha256.clear();
  out->data_dir.clear();
  if (auto f = j.find("frontier"); f != j.end()) {  // absent in a config.json written outside Frontier
    if (!f->is_object()) return Status::error(cpath + ": \"frontier\" is not an object");
    if (auto v = f->find("format");
        v != f->end() && (!v->is_number_integer() || v->get<int64_t>() != kFormatVersion))
      return Status::error(cpath + ": frontier.format is " + v->dump().substr(0, 20) + "; this build reads " +
                           std::to_string(kFormatVersion));
    if (auto a = f->find("architecture"); a != f->end()) {
      FRONTIER_RETURN_IF_ERROR(apply_frontier_architecture(*a, cpath, &s));
      has_arch = true;
    }
    if (auto t = f->find("train_config"); t != f->end()) {
      if (!t->is_string())
        return Status::error(cpath + ": frontier.train_config is not a string (TOML text)");
      out->train_config = t->get<std::string>();
    }
    if (auto i = f->find("identity"); i != f->end()) {
      const RunIdentity id = RunIdentity::from_json(*i);
      out->tokenizer_sha256 = id.tokenizer;
      out->data_sha256 = id.data;
      out->data_dir = id.data_dir;
    }
  }

  SafetensorsFile f;
  FRONTIER_RETURN_IF_ERROR(f.open(spath));
  // nanochat's own directory (no Frontier architecture): its weights say which nanochat it is.
  if (!has_arch && f.find("smear_gate.weight")) apply_nanochat_current(&s);
  const std::vector<ParamInfo> table = Gpt::param_table(s);
  out->weights.assign(static_cast<size_t>(table.back().offset + table.back().numel()), 0.f);
  const int64_t V = s.vocab_size, Vp = nanochat_padded_vocab(V);
  const std::string model = "config.json's model (" + s.describe() + ")";
  std::set<std::string> used, dtypes;
  std::vector<float> buf;
  for (const auto& p : table) {
    const std::string name = nanochat_name(p.name);
    const StTensor* t = f.find(name);
    if (!t)
      return Status::error(spath + ": no tensor '" + name + "', which " + model +
                           " needs (config.json does not "
                           "match the weights)");
    std::vector<int64_t> want = p.shape, padded = p.shape;
    if (has_vocab_rows(p)) padded[0] = Vp;
    const bool exact = t->shape == want, pad = has_vocab_rows(p) && t->shape == padded;
    if (!exact && !pad)
      return Status::error(spath + ": tensor '" + name + "' has shape " + shape_text(t->shape) + ", but " +
                           model + " needs " + shape_text(want) +
                           (padded != want ? " or " + shape_text(padded) : "") +
                           " (config.json does not match the weights)");
    float* dst = out->weights.data() + p.offset;
    if (exact) {
      f.read_f32(*t, dst);
    } else {  // nanochat's padded vocabulary: keep the first V rows
      buf.resize(static_cast<size_t>(t->numel()));
      f.read_f32(*t, buf.data());
      std::memcpy(dst, buf.data(), sizeof(float) * p.numel());
    }
    used.insert(name);
    dtypes.insert(st_dtype_name(t->dtype));
  }
  std::string extra;
  size_t n_extra = 0;
  for (const auto& t : f.tensors()) {
    if (used.count(t.name)) continue;
    if (++n_extra <= 4) extra += (n_extra > 1 ? ", " : "") + ("'" + t.name.substr(0, 80) + "'");
  }
  if (n_extra)
    return Status::error(spath + ": " + std::to_string(n_extra) + " tensor" + (n_extra > 1 ? "s" : "") +
                         " that " + model + " does not have: " + extra + (n_extra > 4 ? ", ..." : "") +
                         " (config.json does not match the weights)");
  out->dtype = dtypes.size() == 1 ? *dtypes.begin() : "mixed";
  return check_finite(out->weights, spath);
}

Status import_model(const ImportOptions& o, ImportResult* r) {
  ModelDir m;
  FRONTIER_RETURN_IF_ERROR(read_model_dir(o.dir, &m));
  const std::string cpath = o.dir + "/config.json";
  Tokenizer tok;
  FRONTIER_RETURN_IF_ERROR(tok.load(o.dir + "/tokenizer"));
  if (static_cast<int>(tok.vocab_size()) != m.shape.vocab_size)
    return Status::error(o.dir + "/tokenizer has " + std::to_string(tok.vocab_size()) + " tokens, but " +
                         cpath + " says vocab_size " + std::to_string(m.shape.vocab_size));
  if (!m.tokenizer_sha256.empty() && tok.fingerprint() != m.tokenizer_sha256)
    return Status::error(o.dir + "/tokenizer is tokenizer " + short_hash(tok.fingerprint()) +
                         ", but the model was "
                         "exported with " +
                         short_hash(m.tokenizer_sha256) + " (" + cpath + " frontier.identity)");

  // The run's config: the exporter's (if any), the model's shape from the GPTConfig fields, then --set.
  ConfigSchema schema = train_schema();
  Config cfg = schema.defaults();
  if (!m.train_config.empty())
    FRONTIER_RETURN_IF_ERROR(
        schema.load_toml_string(m.train_config, cpath + " (frontier.train_config)", &cfg));
  const ModelShape& s = m.shape;
  std::vector<std::string> model_sets = {
      "model.depth=" + std::to_string(s.depth), "model.dim=" + std::to_string(s.dim),
      "model.head_dim=" + std::to_string(s.head_dim), "model.n_kv_head=" + std::to_string(s.n_kv_head),
      "model.vocab_size=" + std::to_string(s.vocab_size), "model.seq_len=" + std::to_string(s.seq_len)};
  for (const std::string& kv : model_arch_sets(s)) model_sets.push_back(kv);
  for (const std::string& kv : model_sets) FRONTIER_RETURN_IF_ERROR(schema.apply_set(kv, &cfg));
  cfg.set("train.data", o.data.empty() ? o.dir : o.data);
  cfg.set("train.run_dir", o.run_dir);
  for (const auto& kv : o.sets) {
    if (kv.rfind("train.data=", 0) == 0 || kv.rfind("train.run_dir=", 0) == 0)
      return Status::error("--set " + kv.substr(0, kv.find('=')) + ": import sets it from " +
                           (kv[6] == 'd' ? "--data" : "--out"));
    FRONTIER_RETURN_IF_ERROR(schema.apply_set(kv, &cfg));
  }
  FRONTIER_RETURN_IF_ERROR(schema.validate(cfg));
  ModelShape got;
  FRONTIER_RETURN_IF_ERROR(derive_model_shape(cfg, &got));
  if (!same_shape(got, s))
    return Status::error("--set changes the model to " + got.describe() + ", but the weights in " + o.dir +
                         " are " + s.describe() +
                         " (only train.*, optim.*, eval.* and model.ce_vocab_chunk may change)");

  Gpt gpt(got);
  gpt.weights() = std::move(m.weights);
  RunIdentity id{tok.fingerprint(), m.data_sha256, m.data_dir};
  nlohmann::json meta = {{"imported_from", o.dir}, {"imported_dtype", m.dtype}};
  std::vector<float> state;
  if (!o.data.empty()) {  // a training state at step 0, as train() would checkpoint it: `train --resume`
                          // continues
    PreparedData data;
    FRONTIER_RETURN_IF_ERROR(data.open(o.data));
    if (data.tokenizer().fingerprint() != tok.fingerprint())
      return Status::error(o.data + " has tokenizer " + short_hash(data.tokenizer().fingerprint()) +
                           ", not the "
                           "model's (" +
                           short_hash(tok.fingerprint()) + " in " + o.dir +
                           "/tokenizer); prepare the "
                           "data with `frontier prepare --tokenizer " +
                           o.dir + "/tokenizer`");
    id = RunIdentity::of(data);
    std::vector<Shard> shards;
    FRONTIER_RETURN_IF_ERROR(data.open_split("train", &shards));
    const TrainSettings set = train_settings(cfg);
    LoaderConfig lc;
    lc.B = static_cast<int>(set.micro_batch);
    lc.T = got.seq_len;
    lc.seed = static_cast<uint64_t>(set.seed);
    BestFitLoader loader;
    FRONTIER_RETURN_IF_ERROR(loader.init(shards, lc));
    // The config's optimizer (its state sections and NorMuon moments: the layout `train --resume` reads), with fresh
    // moments: the optimizer state of step 0; then the weight EMA's start, the weights, when the config keeps one.
    Recipe recipe;
    FRONTIER_RETURN_IF_ERROR(read_recipe(cfg, Precision::kFp32, &recipe));
    Optimizer opt(gpt, recipe.optim);
    state = opt.state();
    if (recipe.ema_decay > 0) state.insert(state.end(), gpt.weights().begin(), gpt.weights().end());
    meta.update({{"step", 0},
                 {"training_seconds", 0.0},
                 {"tokens", 0},
                 {"optimizer_steps", 0},
                 {"smooth_loss", 0.0},
                 {"finished", false},
                 {"loader", loader.state().to_json()}});
  }
  meta["identity"] = id.to_json();

  FRONTIER_RETURN_IF_ERROR(make_dirs(o.run_dir, "--out"));
  DirLock lock;
  FRONTIER_RETURN_IF_ERROR(lock.acquire(o.run_dir, "--out"));
  const bool has_ckpt = file_exists(o.run_dir + "/model.ckpt"),
             has_summary = file_exists(o.run_dir + "/summary.txt");
  if ((has_ckpt || has_summary) && !o.force)
    return Status::error(o.run_dir + " already holds a run (" + (has_ckpt ? "model.ckpt" : "summary.txt") +
                         "); choose another --out, or pass --force to overwrite it");
  for (const char* name : {"summary.txt", "log.jsonl"}) std::filesystem::remove(o.run_dir + "/" + name);
  FRONTIER_RETURN_IF_ERROR(write_file_atomic(o.run_dir + "/config.toml", cfg.to_toml()));
  r->shape = got;
  r->checkpoint = o.run_dir + "/model.ckpt";
  r->dtype = m.dtype;
  r->resumable = !o.data.empty();
  return save_checkpoint(r->checkpoint, cfg.to_toml(),
                         meta.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), gpt.weights(),
                         state);
}

}  // namespace frontier

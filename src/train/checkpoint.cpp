#include "train/checkpoint.h"

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "model/gpt.h"
#include "model/model_config.h"
#include "train/identity.h"
#include "train/schema.h"
#include "util/file.h"
#include "util/sha256.h"

namespace frontier {

namespace {
constexpr char kMagic[8] = {'F', 'R', 'T', 'C', 'K', 'P', 'T', '1'};
constexpr size_t kHeader = 8 + 4 + 4 + 8 + 8 + 8 + 64;
}  // namespace

Status save_checkpoint(const std::string& path, const std::string& config, const std::string& meta,
                       const std::vector<float>& w, const std::vector<float>& st) {
  Sha256 h;
  h.update(config);
  h.update(meta);
  h.update(w.data(), w.size() * 4);
  h.update(st.data(), st.size() * 4);
  std::string hex = h.hex_digest();
  std::string head(kMagic, 8);
  uint32_t version = 1, meta_bytes = static_cast<uint32_t>(meta.size());
  uint64_t cb = config.size(), nw = w.size(), ns = st.size();
  head.append(reinterpret_cast<char*>(&version), 4);
  head.append(reinterpret_cast<char*>(&meta_bytes), 4);
  head.append(reinterpret_cast<char*>(&cb), 8);
  head.append(reinterpret_cast<char*>(&nw), 8);
  head.append(reinterpret_cast<char*>(&ns), 8);
  head += hex;
  AtomicFile f;
  FRONTIER_RETURN_IF_ERROR(f.open(path));
  FRONTIER_RETURN_IF_ERROR(f.write(head.data(), head.size()));
  FRONTIER_RETURN_IF_ERROR(f.write(config.data(), config.size()));
  FRONTIER_RETURN_IF_ERROR(f.write(meta.data(), meta.size()));
  FRONTIER_RETURN_IF_ERROR(f.write(w.data(), w.size() * 4));
  FRONTIER_RETURN_IF_ERROR(f.write(st.data(), st.size() * 4));
  return f.commit();
}

Status load_checkpoint(const std::string& path, std::string* config, std::string* meta, std::vector<float>* w,
                       std::vector<float>* st) {
  MappedFile m;
  FRONTIER_RETURN_IF_ERROR(m.open(path));
  auto bad = [&](const std::string& why) { return Status::error("corrupt checkpoint " + path + ": " + why); };
  if (m.size() < kHeader || std::memcmp(m.data(), kMagic, 8) != 0) return bad("bad magic (not a Frontier checkpoint)");
  uint32_t version, mb;
  uint64_t cb, nw, ns;
  std::memcpy(&version, m.data() + 8, 4);
  std::memcpy(&mb, m.data() + 12, 4);
  std::memcpy(&cb, m.data() + 16, 8);
  std::memcpy(&nw, m.data() + 24, 8);
  std::memcpy(&ns, m.data() + 32, 8);
  if (version != 1) return bad("version " + std::to_string(version) + " (this build reads 1)");
  // Counts beyond the file's size would overflow the size sum below (and wrap around to a size that matches).
  if (cb > m.size() || nw > m.size() || ns > m.size())
    return bad("its header claims more bytes than the file's " + std::to_string(m.size()) + " (truncated?)");
  if (m.size() != kHeader + cb + mb + 4 * (nw + ns)) return bad("size does not match its header (truncated?)");
  std::string hex(reinterpret_cast<const char*>(m.data()) + 40, 64);
  if (sha256_hex(std::string_view(reinterpret_cast<const char*>(m.data()) + kHeader, m.size() - kHeader)) != hex)
    return bad("SHA-256 mismatch (the file is damaged)");
  const uint8_t* p = m.data() + kHeader;
  config->assign(reinterpret_cast<const char*>(p), cb);
  meta->assign(reinterpret_cast<const char*>(p) + cb, mb);
  p += cb + mb;
  w->resize(nw);
  st->resize(ns);
  if (nw) std::memcpy(w->data(), p, 4 * nw);  // an empty vector's data() may be null: memcpy(null, ..., 0) is UB
  if (ns) std::memcpy(st->data(), p + 4 * nw, 4 * ns);
  // The counts of the metadata are counts: a negative step (or time, or tokens) is a file written by something
  // else or edited, and a resume from it would plan the wrong number of steps.
  const nlohmann::json j = nlohmann::json::parse(*meta, nullptr, false);
  if (j.is_object()) {
    for (const char* key : {"step", "optimizer_steps", "tokens", "training_seconds"}) {
      auto it = j.find(key);
      if (it != j.end() && it->is_number() && !(it->get<double>() >= 0))
        return bad(std::string("its metadata says ") + key + " " + it->dump() + ", which cannot be negative");
    }
  }
  return ok_status();
}

Status load_trained_model(const std::string& path, Config* cfg, std::unique_ptr<Gpt>* gpt, RunIdentity* id) {
  std::string toml;
  std::vector<float> w, st;
  std::string meta_text;
  FRONTIER_RETURN_IF_ERROR(load_checkpoint(path, &toml, &meta_text, &w, &st));
  ConfigSchema schema = train_schema();
  *cfg = schema.defaults();
  FRONTIER_RETURN_IF_ERROR(schema.load_toml_string(toml, path + " (config)", cfg));
  ModelShape shape;
  FRONTIER_RETURN_IF_ERROR(derive_model_shape(*cfg, &shape));
  if (Gpt::param_table(shape).back().offset + Gpt::param_table(shape).back().numel() !=
      static_cast<int64_t>(w.size()))
    return Status::error(path + ": " + std::to_string(w.size()) + " weights, but its config's model has a different "
                         "count (corrupt checkpoint)");
  FRONTIER_RETURN_IF_ERROR(check_finite(w, path));
  auto g = std::make_unique<Gpt>(shape);
  g->weights() = std::move(w);
  *gpt = std::move(g);
  if (id) {
    nlohmann::json meta = nlohmann::json::parse(meta_text, nullptr, false);
    *id = RunIdentity::from_json(meta.is_object() && meta.contains("identity") ? meta["identity"] : nlohmann::json());
  }
  return ok_status();
}

Status check_finite(const std::vector<float>& w, const std::string& path) {
  for (size_t i = 0; i < w.size(); i++)
    if (!std::isfinite(w[i]))
      return Status::error(path + ": weight " + std::to_string(i) + " of " + std::to_string(w.size()) + " is " +
                           (std::isnan(w[i]) ? "NaN" : "infinite") + " (the run diverged or the file was altered); "
                           "use an earlier checkpoint");
  return ok_status();
}

}  // namespace frontier

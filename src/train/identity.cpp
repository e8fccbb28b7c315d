#include "train/identity.h"

#include <cstdio>

#include "data/dataset.h"
#include "tokenizer/tokenizer.h"
#include "util/sha256.h"

namespace frontier {

std::string data_fingerprint(const nlohmann::json& manifest) {
  // nlohmann's object is an ordered std::map: the dump is canonical for the same files.
  nlohmann::json files = nlohmann::json::object();
  if (manifest.is_object() && manifest.contains("files") && manifest["files"].is_object())
    for (const auto& [name, info] : manifest["files"].items())
      if (info.is_object())
        files[name] = {{"bytes", info.value("bytes", uint64_t(0))}, {"sha256", info.value("sha256", "")}};
  return sha256_hex(files.dump());
}

RunIdentity RunIdentity::of(const PreparedData& data) {
  return {data.tokenizer().fingerprint(), data_fingerprint(data.manifest()), data.dir()};
}

nlohmann::json RunIdentity::to_json() const {
  return {{"tokenizer_sha256", tokenizer}, {"data_sha256", data}, {"data_dir", data_dir}};
}

RunIdentity RunIdentity::from_json(const nlohmann::json& meta) {
  RunIdentity id;
  if (!meta.is_object()) return id;
  auto str = [&](const char* k) {
    auto it = meta.find(k);
    return it != meta.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  id.tokenizer = str("tokenizer_sha256");
  id.data = str("data_sha256");
  id.data_dir = str("data_dir");
  return id;
}

Status RunIdentity::check_tokenizer(const Tokenizer& tok, const std::string& ckpt_path) const {
  if (!known()) {
    std::fprintf(stderr, "warning: %s records no tokenizer identity (written before it was recorded); cannot check "
                 "that this tokenizer is the one it was trained with\n", ckpt_path.c_str());
    return ok_status();
  }
  if (tok.fingerprint() != tokenizer)
    return Status::error(ckpt_path + " was trained with tokenizer " + short_hash(tokenizer) + ", not this one (" +
                         short_hash(tok.fingerprint()) + "); pass --data with the dataset it was trained on" +
                         (data_dir.empty() ? "" : " (" + data_dir + ")"));
  return ok_status();
}

Status RunIdentity::check_data(const PreparedData& data, bool cross_data, const std::string& ckpt_path,
                               std::string* note) const {
  note->clear();
  FRONTIER_RETURN_IF_ERROR(check_tokenizer(data.tokenizer(), ckpt_path));
  if (!known()) return ok_status();
  const std::string here = data_fingerprint(data.manifest());
  if (here == this->data) return ok_status();
  if (!cross_data)
    return Status::error(data.dir() + " is not the dataset " + ckpt_path + " was trained on (data " +
                         short_hash(here) + ", trained on " + short_hash(this->data) +
                         (data_dir.empty() ? "" : " in " + data_dir) +
                         "); pass --cross-data to score it on other text deliberately");
  *note = "cross-data: scored on " + data.dir() + " (data " + short_hash(here) + "), trained on data " +
          short_hash(this->data);
  return ok_status();
}

}  // namespace frontier

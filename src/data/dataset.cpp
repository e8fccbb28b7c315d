#include "data/dataset.h"

#include <filesystem>

#include "util/file.h"
#include "util/sha256.h"

namespace frontier {

namespace {

// What is wrong with a manifest's shape, or "" when every field open() and open_split() read has its type
// (nlohmann::json throws on a field of the wrong type): files {name: {bytes, sha256}}, splits {name: {shards: [..]}},
// tokenizer {fingerprint}. Names are shown as JSON strings, so a message stays one line.
std::string manifest_problem(const nlohmann::json& m) {
  using nlohmann::json;
  if (!m.is_object() || !m.contains("format") || m["format"] != "frontier-prepared") return "not a Frontier manifest";
  if (!m.contains("files") || !m["files"].is_object()) return "no \"files\" object";
  for (const auto& [name, info] : m["files"].items())
    if (!info.is_object() || !info.contains("bytes") || !info["bytes"].is_number_unsigned() ||
        !info.contains("sha256") || !info["sha256"].is_string())
      return "files entry " + json(name).dump() + " needs \"bytes\" (a count) and \"sha256\" (a string)";
  if (!m.contains("splits") || !m["splits"].is_object()) return "no \"splits\" object";
  for (const auto& [name, split] : m["splits"].items()) {
    if (!split.is_object() || !split.contains("shards") || !split["shards"].is_array())
      return "split " + json(name).dump() + " has no \"shards\" list";
    for (const auto& shard : split["shards"])
      if (!shard.is_string()) return "split " + json(name).dump() + " lists a shard that is not a file name";
  }
  if (!m.contains("tokenizer") || !m["tokenizer"].is_object() || !m["tokenizer"].contains("fingerprint") ||
      !m["tokenizer"]["fingerprint"].is_string())
    return "no \"tokenizer\" object with a \"fingerprint\" string";
  return "";
}

}  // namespace

Status PreparedData::open(const std::string& dir, bool verify) {
  dir_ = dir;
  std::string text;
  const std::string mpath = dir + "/manifest.json";
  if (!file_exists(mpath))
    return Status::error("no prepared dataset in " + dir + " (manifest.json missing; run `frontier prepare --out " +
                         dir + "`)");
  FRONTIER_RETURN_IF_ERROR(read_file(mpath, &text));
  manifest_ = nlohmann::json::parse(text, nullptr, false);
  if (manifest_.is_discarded())
    return Status::error(mpath + " is not a Frontier manifest (not valid JSON; re-run `frontier prepare`)");
  const std::string problem = manifest_problem(manifest_);
  if (!problem.empty()) return Status::error(mpath + ": " + problem + " (re-run `frontier prepare`)");
  for (auto& [name, info] : manifest_["files"].items()) {
    std::string path = dir + "/" + name;
    std::error_code ec;
    auto sz = std::filesystem::file_size(path, ec);
    if (ec) return Status::error(path + " is missing (the dataset is incomplete; re-run `frontier prepare`)");
    if (sz != info.value("bytes", uint64_t(0)))
      return Status::error(path + " has the wrong size (" + std::to_string(sz) + " bytes, manifest says " +
                           std::to_string(info.value("bytes", uint64_t(0))) + "; re-run `frontier prepare`)");
    if (verify) {
      std::string hex;
      FRONTIER_RETURN_IF_ERROR(sha256_file(path, &hex));
      if (hex != info.value("sha256", ""))
        return Status::error(path + " does not match its SHA-256 in the manifest (corrupt or modified; re-run "
                             "`frontier prepare`)");
    }
  }
  FRONTIER_RETURN_IF_ERROR(tok_.load(dir + "/tokenizer"));
  FRONTIER_RETURN_IF_ERROR(read_token_bytes(dir + "/token_bytes.bin", &token_bytes_));
  if (token_bytes_.size() != tok_.vocab_size())
    return Status::error("token_bytes.bin has " + std::to_string(token_bytes_.size()) +
                         " entries but the tokenizer's vocab is " + std::to_string(tok_.vocab_size()) +
                         " (re-run `frontier prepare`)");
  if (manifest_["tokenizer"].value("fingerprint", "") != tok_.fingerprint())
    return Status::error("the tokenizer in " + dir + "/tokenizer is not the one the shards were made with "
                         "(re-run `frontier prepare`)");
  return ok_status();
}

Status PreparedData::open_split(const std::string& split, std::vector<Shard>* shards) const {
  if (!manifest_["splits"].contains(split))
    return Status::error("no split '" + split + "' in " + dir_ + " (have train and val)");
  shards->clear();
  auto names = manifest_["splits"][split].value("shards", std::vector<std::string>{});
  if (names.empty()) return Status::error("split '" + split + "' in " + dir_ + " has no shards");
  shards->resize(names.size());
  for (size_t i = 0; i < names.size(); i++)
    FRONTIER_RETURN_IF_ERROR((*shards)[i].open(dir_ + "/" + names[i], tok_.vocab_size()));
  return ok_status();
}

}  // namespace frontier

// A prepared dataset directory (see data/prepare.h), opened for training or evaluation.
//
//   PreparedData data;
//   FRONTIER_RETURN_IF_ERROR(data.open("data/default"));         // verifies the manifest and every SHA-256
//   std::vector<Shard> train;
//   FRONTIER_RETURN_IF_ERROR(data.open_split("train", &train));
//   data.tokenizer().decode(...);  data.token_bytes()[id];
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/shard.h"
#include "tokenizer/tokenizer.h"

namespace frontier {

class PreparedData {
 public:
  // verify: check SHA-256 of every file against the manifest (about 1 s per GB); sizes are always checked.
  Status open(const std::string& dir, bool verify = true);
  Status open_split(const std::string& split, std::vector<Shard>* shards) const;
  const Tokenizer& tokenizer() const { return tok_; }
  const std::vector<int32_t>& token_bytes() const { return token_bytes_; }
  const nlohmann::json& manifest() const { return manifest_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  nlohmann::json manifest_;
  Tokenizer tok_;
  std::vector<int32_t> token_bytes_;
};

}  // namespace frontier

// Which tokenizer and which data a number belongs to. A checkpoint records both as content hashes, so an
// evaluation, a sample or a resume against a different 8192-token tokenizer or a swapped dataset is an error rather
// than a plausible wrong val_bpb.
//
//   RunIdentity id = RunIdentity::of(data);                      // when training: stored in the checkpoint
//   FRONTIER_RETURN_IF_ERROR(id_from_ckpt.check_tokenizer(tok, ckpt_path));     // eval core, sample
//   FRONTIER_RETURN_IF_ERROR(id_from_ckpt.check_data(data, cross_data, ckpt_path, &note));  // eval bpb, resume
//
// tokenizer: SHA-256 over the ranks, the split pattern and the specials (Tokenizer::fingerprint).
// data: SHA-256 over the manifest's file list (each file's name, size and SHA-256): the shards of both splits,
// token_bytes and the tokenizer files, so any change to what was trained or scored on changes it.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace frontier {

class PreparedData;
class Tokenizer;

struct RunIdentity {
  std::string tokenizer;  // hex SHA-256; empty in checkpoints written before identities were recorded
  std::string data;       // hex SHA-256
  std::string data_dir;   // where the data was when the run started (informative)

  static RunIdentity of(const PreparedData& data);
  nlohmann::json to_json() const;
  static RunIdentity from_json(const nlohmann::json& meta);  // missing or mistyped fields stay empty
  bool known() const { return !tokenizer.empty(); }

  // An error naming both hashes when tok is not the tokenizer the checkpoint was trained with. A checkpoint with no
  // recorded identity (older runs) passes with a warning on stderr.
  Status check_tokenizer(const Tokenizer& tok, const std::string& ckpt_path) const;
  // The tokenizer check, then the data: a different dataset is an error unless cross_data (a deliberate evaluation
  // on other text with the same tokenizer); *note then says so, for the result line. *note is "" otherwise.
  Status check_data(const PreparedData& data, bool cross_data, const std::string& ckpt_path, std::string* note) const;
};

std::string data_fingerprint(const nlohmann::json& manifest);
inline std::string short_hash(const std::string& hex) { return hex.substr(0, 12); }

}  // namespace frontier

// Checkpoints: one file, written atomically.
//   magic "FRTCKPT1" | uint32 version (1) | uint32 meta_bytes | uint64 config_bytes | uint64 n_weights |
//   uint64 n_state | char[64] sha256 hex of everything after the header | config (TOML text) |
//   meta (JSON: step, training seconds, tokens, optimizer step, loader state) |
//   weights (float32 x n_weights, the parameter arena) | optimizer state (float32 x n_state)
// load_checkpoint verifies the magic, version, sizes and the SHA-256 before trusting a byte.
#pragma once

#include <string>
#include <vector>

#include "util/status.h"

namespace frontier {

Status save_checkpoint(const std::string& path, const std::string& config_toml, const std::string& meta_json,
                       const std::vector<float>& weights, const std::vector<float>& state);
Status load_checkpoint(const std::string& path, std::string* config_toml, std::string* meta_json,
                       std::vector<float>* weights, std::vector<float>* state);

}  // namespace frontier

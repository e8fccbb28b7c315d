// Checkpoints: one file, written atomically.
//   magic "FRTCKPT1" | uint32 version (1) | uint32 meta_bytes | uint64 config_bytes | uint64 n_weights |
//   uint64 n_state | char[64] sha256 hex of everything after the header | config (TOML text) |
//   meta (JSON: step, training seconds, tokens, optimizer step, loader state) |
//   weights (float32 x n_weights, the parameter arena) | optimizer state (float32 x n_state)
// load_checkpoint verifies the magic, version, sizes and the SHA-256 before trusting a byte. load_trained_model
// opens one as a model, as every command that evaluates, samples, serves or exports a run does:
//
//   Config cfg;
//   std::unique_ptr<Gpt> gpt;
//   RunIdentity id;
//   FRONTIER_RETURN_IF_ERROR(load_trained_model("runs/x/model.ckpt", &cfg, &gpt, &id));
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "util/status.h"

namespace frontier {

class Gpt;
struct RunIdentity;

Status save_checkpoint(const std::string& path, const std::string& config_toml, const std::string& meta_json,
                       const std::vector<float>& weights, const std::vector<float>& state);
Status load_checkpoint(const std::string& path, std::string* config_toml, std::string* meta_json,
                       std::vector<float>* weights, std::vector<float>* state);

// Loads a checkpoint written by train(): its config (into *cfg, through train_schema), weights (checked finite) and,
// if id is given, the tokenizer and data identities it was trained with.
Status load_trained_model(const std::string& ckpt_path, Config* cfg, std::unique_ptr<Gpt>* gpt,
                          RunIdentity* id = nullptr);

// An error naming the first NaN or infinite value of a checkpoint's weights.
Status check_finite(const std::vector<float>& w, const std::string& path);

}  // namespace frontier

// A model directory: a Frontier checkpoint's model in the form PyTorch / nanochat users load.
//
//   DIR/model.safetensors   the weights, nanochat's names (export/nanochat_names.h), fp32 or bf16
//   DIR/config.json         nanochat's GPTConfig fields, plus "frontier": {architecture, dtype, train_config,
//                           identity, source}
//   DIR/tokenizer/          tokenizer.tiktoken + tokenizer.json, byte for byte as `frontier prepare` wrote
//   them
//
//   ExportOptions eo{"runs/a/model.ckpt", "out/a"};                  // fp32; eo.bf16 = true for bf16
//   FRONTIER_RETURN_IF_ERROR(export_model(eo, &er));
//   ImportOptions io{"out/a", "runs/b"};                             // io.data = "data/wiki": resumable run
//   FRONTIER_RETURN_IF_ERROR(import_model(io, &ir));                 // runs/b/config.toml +
//   runs/b/model.ckpt
//
// An export is written into a staging directory beside DIR (.NAME.export/, locked while it runs) and renamed to DIR
// when whole: an interrupted or failed export leaves DIR as it was, and a DIR that holds files is replaced only
// with ExportOptions::force (`--force`). config.json is written last, so a staging directory is never taken for a
// model directory either. An fp32 export imports bit-exactly (every weight, so every logit); a bf16 one imports as
// its bf16 values widened. Python: python/frontier_torch.py builds the model in PyTorch from such a directory.
#pragma once

#include <string>
#include <vector>

#include "model/model_config.h"
#include "util/status.h"

namespace frontier {

struct ExportOptions {
  std::string checkpoint;  // RUN_DIR/model.ckpt
  std::string out_dir;
  std::string data;   // dataset whose tokenizer/ to copy ("" = the run's train.data); checked against the
                      // tokenizer identity the checkpoint records
  bool bf16 = false;  // store the weights as bf16 (round to nearest even) instead of fp32
  bool force = false;  // replace an out_dir that already holds files (without it, that is an error)
};

struct ExportResult {
  ModelShape shape;
  std::string safetensors_path, tokenizer_from;
  size_t n_tensors = 0;
  uint64_t bytes = 0;  // of model.safetensors
};

Status export_model(const ExportOptions& o, ExportResult* r);

// The model of a model directory, checked against its config.json, as fp32 in Frontier's parameter arena.
struct ModelDir {
  ModelShape shape;
  std::vector<float> weights;  // Gpt::param_table(shape) layout
  std::string dtype;           // of the stored tensors: "F32", "BF16", "F16" (or "mixed")
  std::string train_config;    // config.json frontier.train_config ("" when not a Frontier export)
  std::string tokenizer_sha256, data_sha256, data_dir;  // identity recorded by the export ("" when absent)
};
// Reads dir/config.json and dir/model.safetensors: every tensor the config's model needs must be present with
// its shape (vocabulary rows exact or padded to 64), and no other tensor may be. Errors name the file and the
// problem.
Status read_model_dir(const std::string& dir, ModelDir* out);

struct ImportOptions {
  std::string dir;      // a model directory
  std::string run_dir;  // written: config.toml + model.ckpt
  std::string data;     // a prepared dataset with the same tokenizer: the run trains / evaluates on it and
                        // `frontier train --resume RUN_DIR` continues training ("" = none; train.data = dir)
  std::vector<std::string>
      sets;            // key=value config overrides (train.*, optim.*, eval.*; not the model's shape)
  bool force = false;  // overwrite a run directory that already holds a run
};

struct ImportResult {
  ModelShape shape;
  std::string checkpoint, dtype;
  bool resumable = false;  // a training state was written (ImportOptions::data)
};

Status import_model(const ImportOptions& o, ImportResult* r);

}  // namespace frontier

// A trained checkpoint opened for evaluation, with the data it is scored on: `frontier sample`, `eval core`,
// `eval score` and `eval bpb` (and --against) all start here.
//
//   EvalCheckpoint e;
//   FRONTIER_RETURN_IF_ERROR(open_checkpoint_for_eval(ckpt, data_dir, EvalNeeds::kData, cross, &e));
//   evaluate_bpb(*e.gpt, e.data, e.set.eval_tokens, ...);   // eval/bpb.h; e.tokenizer() is the data's
//
// It loads the checkpoint (config, weights checked finite, identities: train/checkpoint.h load_trained_model), then
// the tokenizer alone (kTokenizer) or the whole prepared dataset (kData) from data_dir ("" = the run's train.data),
// checks that they are the ones the checkpoint was trained with (train/identity.h: a different dataset with the
// same tokenizer only with cross_data, and *note then says so), and that the vocabulary sizes agree. Every failure
// is one line naming the checkpoint or the directory and the fix.
#pragma once

#include <memory>
#include <string>

#include "config/config.h"
#include "data/dataset.h"
#include "model/gpt.h"
#include "tokenizer/tokenizer.h"
#include "train/identity.h"
#include "train/settings.h"

namespace frontier {

enum class EvalNeeds { kTokenizer, kData };

struct EvalCheckpoint {
  Config cfg;                 // the run's config
  TrainSettings set;          // its train.* and eval.* keys, typed (eval.tokens, eval.batch, train.data)
  std::unique_ptr<Gpt> gpt;
  RunIdentity id;
  std::string data_dir;       // where the tokenizer (and data) came from
  Tokenizer tok;              // kTokenizer
  PreparedData data;          // kData
  std::string note;           // kData with cross_data: the data differs from the run's ("" otherwise)
  const Tokenizer& tokenizer() const { return data_loaded ? data.tokenizer() : tok; }
  bool data_loaded = false;
};

Status open_checkpoint_for_eval(const std::string& ckpt, const std::string& data_dir, EvalNeeds needs,
                                bool cross_data, EvalCheckpoint* out);

}  // namespace frontier

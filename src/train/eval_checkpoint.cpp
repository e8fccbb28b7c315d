#include "train/eval_checkpoint.h"

#include "train/checkpoint.h"

namespace frontier {

Status open_checkpoint_for_eval(const std::string& ckpt, const std::string& data_dir, EvalNeeds needs,
                                bool cross_data, EvalCheckpoint* out) {
  EvalCheckpoint& e = *out;
  FRONTIER_RETURN_IF_ERROR(load_trained_model(ckpt, &e.cfg, &e.gpt, &e.id));
  e.set = train_settings(e.cfg);
  e.data_dir = data_dir.empty() ? e.set.data : data_dir;
  if (needs == EvalNeeds::kData) {
    FRONTIER_RETURN_IF_ERROR(e.data.open(e.data_dir));
    FRONTIER_RETURN_IF_ERROR(e.id.check_data(e.data, cross_data, ckpt, &e.note));
    e.data_loaded = true;
  } else {
    FRONTIER_RETURN_IF_ERROR(e.tok.load(e.data_dir + "/tokenizer"));
    FRONTIER_RETURN_IF_ERROR(e.id.check_tokenizer(e.tok, ckpt));
  }
  const int vocab = static_cast<int>(e.tokenizer().vocab_size());
  if (vocab != e.gpt->shape().vocab_size)
    return Status::error("checkpoint vocab_size " + std::to_string(e.gpt->shape().vocab_size) +
                         " does not match the tokenizer in " + e.data_dir + " (" + std::to_string(vocab) +
                         "); pass --data with the run's dataset");
  return ok_status();
}

}  // namespace frontier

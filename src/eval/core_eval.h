// The CORE benchmark (DCLM's 22 low-variance tasks) as nanochat's base_eval computes it.
//
//   CoreBundle bundle;
//   FRONTIER_RETURN_IF_ERROR(load_core_bundle("../shared/data/eval_bundle", &bundle));
//   CoreReport rep;
//   FRONTIER_RETURN_IF_ERROR(evaluate_core(gpt, tokenizer, bundle, /*max_per_task=*/0, &rep));
//
// Per task: rows shuffled with random.Random(1337), cut to max_per_task (if > 0), few-shot examples per item drawn
// with random.Random(1234 + idx).sample(other indices, num_fewshot[0]). MC/schema: the option with the lowest
// mean loss over its continuation span wins; LM: correct when greedy argmax reproduces the continuation. Centered
// accuracy (acc - b/100) / (1 - b/100) with b the DCLM random baseline; CORE = mean over the tasks present.
#pragma once

#include <string>
#include <vector>

#include "eval/core_prompts.h"
#include "util/status.h"

namespace frontier {

class Gpt;
class Tokenizer;

struct CoreTask {
  std::string label, dataset_uri, delimiter = " ";
  CoreTaskType type = CoreTaskType::kMultipleChoice;
  int num_fewshot = 0;
  double random_baseline = 0;  // percent
  bool present = false;        // its data file exists
  std::vector<CoreItem> rows;  // in file order
};

struct CoreBundle {
  std::string dir;
  std::vector<CoreTask> tasks;  // core.yaml order
};

// Reads core.yaml, eval_meta_data.csv and each task's jsonl; a missing task file is recorded (present = false),
// a malformed file is an error naming file and line.
Status load_core_bundle(const std::string& dir, CoreBundle* out);

struct CoreTaskResult {
  std::string label;
  bool present = false;
  int64_t n = 0, correct = 0;
  double accuracy = 0, centered = 0, seconds = 0;
};

struct CoreReport {
  std::vector<CoreTaskResult> tasks;
  double core = 0;  // mean centered accuracy over present tasks
  int n_present = 0, n_total = 0;
  std::string table() const;  // per-task table plus "CORE (20/22 tasks): ..."
};

Status evaluate_core(Gpt& gpt, const Tokenizer& tok, const CoreBundle& bundle, int64_t max_per_task,
                     CoreReport* out, bool progress = true);

// The scored sequences of one item: few-shot draw, render, tokenize (BOS first), spans, crop to the model's context.
bool core_item_sequences(const Gpt& gpt, const Tokenizer& tok, const CoreTask& task, const std::vector<CoreItem>& data,
                         size_t idx, CoreSequences* seq);
// Per-position losses (nats; losses[t] predicts tokens[t+1]) and greedy predictions of one sequence.
void core_sequence_losses(Gpt& gpt, const std::vector<uint32_t>& tokens, std::vector<float>* losses,
                          std::vector<int>* argmax);
// The same for all sequences of an item in one forward pass (nanochat's batching of an item's choices): rows padded
// at the end to the longest (causal attention keeps padding from reaching earlier positions; padded targets are
// ignored), so each row's losses equal core_sequence_losses of that row alone.
void core_batch_losses(Gpt& gpt, const std::vector<std::vector<uint32_t>>& seqs,
                       std::vector<std::vector<float>>* losses, std::vector<std::vector<int>>* argmax);

// One item's correctness (exposed for tests): render, tokenize (BOS first), crop to the model's context, score.
bool evaluate_core_item(Gpt& gpt, const Tokenizer& tok, const CoreTask& task, const std::vector<CoreItem>& data,
                        size_t idx);

}  // namespace frontier

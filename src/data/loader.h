// BOS-aligned best-fit packing loader, as nanochat's tokenizing_distributed_data_loader_with_state_bos_bestfit
// (and autoresearch's make_dataloader), over prepared shards.
//
// Each of the B rows holds T+1 tokens and starts with BOS (every document does). To fill a row, take from the
// buffer (about buffer_size documents, refilled doc_batch documents at a time) the LARGEST document that fits the
// remaining space, first one on ties; when none fits, crop the SHORTEST (first on ties) to fill the row exactly
// and discard its tail. No padding. inputs = row[0:T], targets = row[1:T+1].
//
// Determinism and sharding: documents are grouped into batches of doc_batch consecutive documents; each epoch
// visits the batches in an order shuffled from (seed, epoch) (or in file order with shuffle = false); rank r of
// world W takes batches r, r+W, r+2W, ... of that order, so ranks never share a document within an epoch.
// state() captures the epoch, the cursor and the buffered document ids: restore() resumes bit-exactly.
// Documents that hold fewer tokens in all than one batch (B x (T+1)) are an error at init, naming the count and
// cfg.knobs: every batch would repeat documents (the loader wraps to the next epoch to fill a row), so a loss
// trained or scored on them would look like a number but be one short text, over and over.
//
//   BestFitLoader loader;
//   FRONTIER_RETURN_IF_ERROR(loader.init(shards, {.B = 8, .T = 512, .seed = 42}));
//   std::vector<int32_t> x(8 * 512), y(8 * 512);
//   loader.next(x.data(), y.data());
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/shard.h"

namespace frontier {

struct LoaderConfig {
  int B = 8;
  int T = 512;
  int rank = 0, world = 1;
  uint64_t seed = 0;
  bool shuffle = true;
  int buffer_size = 1000;  // nanochat's default
  int doc_batch = 128;     // nanochat's tokenizer_batch_size
  // How the user sets B and T, named by the too-few-tokens error. The default names train's and val_bpb's config
  // keys; other callers (e.g. a --seq-len flag) name their own.
  std::string knobs = "model.seq_len, or the rows per batch (train.micro_batch to train, eval.batch for val_bpb)";
  bool min_one_batch = true;  // refuse documents with fewer tokens than one batch (off only in packing tests)
};

struct LoaderState {
  uint64_t epoch = 0, cursor = 0;  // cursor: how many of this rank's batches of the epoch were taken
  std::vector<uint64_t> buffer;    // global document ids waiting in the buffer, in order
  nlohmann::json to_json() const;
  static Status from_json(const nlohmann::json& j, LoaderState* out);
};

class BestFitLoader {
 public:
  Status init(const std::vector<Shard>& shards, const LoaderConfig& cfg);
  void next(int32_t* inputs, int32_t* targets);  // inputs, targets: (B, T)
  // The rows of the next batches (the sequence-length warm-up, train.seq_warmup_ratio): B rows of T + 1 tokens from
  // here on. The buffer and the position stay, so the change repeats and drops no document; state() holds no B or
  // T, and a resumed run sets them again from its schedule before next(). The too-few-tokens check of init is not
  // repeated (B x T at init is the run's largest batch).
  void set_rows(int B, int T);
  LoaderState state() const;
  Status restore(const LoaderState& s);
  uint64_t epoch() const { return epoch_; }
  // Passes over this rank's documents so far: documents taken out of the buffer into rows (whole or cropped) over
  // this rank's documents per epoch; above 1, documents repeat. (The buffer reads ahead: with fewer documents than
  // buffer_size it holds the same document more than once from the start.) Derived from the state: resume-safe.
  double epochs_read() const;
  uint64_t n_docs() const { return doc_start_.empty() ? 0 : doc_start_.back(); }
  // Tokens dropped by cropping so far, and tokens emitted (rows * (T+1)): the crop fraction nanochat reports.
  uint64_t tokens_cropped() const { return cropped_; }
  uint64_t tokens_emitted() const { return emitted_; }

 private:
  void refill();
  void start_epoch();
  uint32_t doc_len(uint64_t doc) const;
  void copy_doc(uint64_t doc, uint64_t n, int32_t* dst) const;

  const std::vector<Shard>* shards_ = nullptr;
  LoaderConfig cfg_;
  std::vector<uint64_t> doc_start_;  // prefix sum of documents per shard; doc_start_.back() = total
  uint64_t n_batches_ = 0, epoch_ = 0, cursor_ = 0;
  std::vector<uint64_t> order_;       // this epoch's batch order
  std::vector<uint64_t> buffer_;      // global document ids
  std::vector<uint32_t> buffer_len_;  // their lengths
  std::vector<int32_t> row_;
  uint64_t cropped_ = 0, emitted_ = 0;
};

}  // namespace frontier

// `frontier prepare`: raw text -> trained tokenizer -> token shards + token_bytes + manifest.
//
// Output directory layout (documented in docs/formats.md):
//   tokenizer/tokenizer.tiktoken, tokenizer/tokenizer.json   the BPE (loads in tiktoken)
//   token_bytes.bin                                         UTF-8 bytes per token id (0 for specials)
//   train_000.bin, train_001.bin, ..., val_000.bin, ...     token shards (data/shard.h)
//   manifest.json                                           written last: inputs' and outputs' SHA-256
// A directory without a manifest, or whose manifest does not verify, is not a prepared dataset. Re-running with
// the same inputs (by content) and options finds the manifest up to date and does nothing.
//
// Nothing is lost on failure: the dataset is written into PARENT/.NAME.prepare/data/ and moved into out_dir only
// when whole, under a lock on PARENT/.NAME.prepare/.lock (util/file_lock.h), so a bad input found half-way leaves an
// existing dataset as it was and a second prepare into the same out_dir is an error naming the first one's pid. A
// document the tokenizer's split pattern fails on is an error naming its file and line (tokenizer/regex_split.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/corpus.h"
#include "util/status.h"

namespace frontier {

struct PrepareOptions {
  std::vector<std::string> train_inputs;  // files/dirs/globs; empty = the built-in default corpus
  std::vector<std::string> val_inputs;    // empty = hold out every val_every-th document of the train inputs
  uint32_t val_every = 20;
  std::string out_dir = "data/default";
  uint32_t vocab_size = 8192;                  // including the special tokens
  std::string tokenizer_dir;                   // reuse this tokenizer instead of training one
  uint64_t tokenizer_max_chars = 1000000000;   // BPE training reads at most this many bytes of train text
  uint64_t shard_tokens = 1ull << 25;          // a shard closes at the first document end past this many tokens
  Utf8Policy utf8 = Utf8Policy::kError;
  // Documents longer than this are split at paragraph / line / sentence boundaries into pieces of at most this many
  // bytes (data/doc_split.h), each its own document; 0 = whole documents; -1 = 1024 for the built-in corpus, 0 for
  // --train inputs. Validation is held out per source document, before the split.
  int64_t max_doc_bytes = -1;
  std::string text_column = "text";            // the JSON field / Parquet column holding each document
  int threads = 0;                             // 0 = all cores (OpenMP default)
  bool progress = true;
};

struct SplitStats {
  uint64_t docs = 0, bytes = 0, tokens = 0;
  uint64_t nulls = 0;  // null Parquet values skipped in the input this split was read from (not in the manifest)
  std::vector<std::string> shards;
};

struct PrepareResult {
  bool up_to_date = false;  // nothing was done
  SplitStats train, val;
  uint32_t vocab_size = 0;
  double tokenizer_seconds = 0, encode_seconds = 0;
  uint64_t tokenizer_train_bytes = 0;
};

Status prepare(const PrepareOptions& opt, PrepareResult* result);

}  // namespace frontier

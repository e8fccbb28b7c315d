// frontier prepare: raw text -> tokenizer + token shards (data/prepare.h); frontier inspect: verify a prepared
// dataset, show a first batch.
#include <omp.h>

#include <cstdio>
#include <memory>

#include "commands.h"
#include "data/dataset.h"
#include "data/loader.h"
#include "data/prepare.h"
#include "util/cache_dir.h"

namespace frontier::cli {
namespace {

struct PrepareArgs {
  PrepareOptions po;
  std::string utf8 = "error";
  bool quiet = false;
};

void print_prepare_summary(const PrepareOptions& o, const PrepareResult& r) {
  auto line = [](const char* name, const SplitStats& s) {
    std::printf("%-6s docs: %llu  bytes: %.1f MB  tokens: %.2f M  bytes/token: %.3f  shards: %zu\n", name,
                static_cast<unsigned long long>(s.docs), s.bytes / 1e6, s.tokens / 1e6,
                s.tokens ? static_cast<double>(s.bytes) / s.tokens : 0.0, s.shards.size());
  };
  std::printf("---\n");
  std::printf("dataset: %s%s\n", o.out_dir.c_str(), r.up_to_date ? "  (up to date: nothing to do)" : "");
  std::printf("vocab_size: %u\n", r.vocab_size);
  line("train", r.train);
  line("val", r.val);
  // Null Parquet values are not documents: say how many were skipped (a held-out val split reads the train input).
  const uint64_t nulls = r.train.nulls + (o.val_inputs.empty() ? 0 : r.val.nulls);
  if (nulls) std::printf("nulls: %llu null '%s' values skipped\n", static_cast<unsigned long long>(nulls),
                         o.text_column.c_str());
  if (!r.up_to_date) {
    if (r.tokenizer_train_bytes)
      std::printf("tokenizer: trained on %.1f MB in %.1f s\n", r.tokenizer_train_bytes / 1e6, r.tokenizer_seconds);
    double mb = (r.train.bytes + r.val.bytes) / 1e6;
    std::printf("encode: %.1f MB in %.1f s (%.1f MB/s, %d threads)\n", mb, r.encode_seconds,
                r.encode_seconds > 0 ? mb / r.encode_seconds : 0.0, omp_get_max_threads());
  }
}

int run_prepare(PrepareArgs& a) {
  PrepareOptions& po = a.po;
  po.utf8 = a.utf8 == "replace" ? Utf8Policy::kReplace : Utf8Policy::kError;
  po.progress = !a.quiet;
  if (po.train_inputs.empty() && !a.quiet)
    std::fprintf(stderr, "prepare: no --train input, using the built-in default corpus (%s/npm)\n",
                 frontier_cache_dir().c_str());
  PrepareResult r;
  Status s = prepare(po, &r);
  if (!s.ok()) return fail(s);
  print_prepare_summary(po, r);
  return 0;
}

// The first row of a B=2 batch from the train split, decoded.
Status print_first_row(const PreparedData& data, const std::vector<Shard>& shards, int T) {
  BestFitLoader loader;
  LoaderConfig cfg;
  cfg.B = 2;
  cfg.T = T;
  cfg.knobs = "--seq-len";
  FRONTIER_RETURN_IF_ERROR(loader.init(shards, cfg));
  std::vector<int32_t> x(2 * T), y(2 * T);
  loader.next(x.data(), y.data());
  std::vector<uint32_t> row(x.begin(), x.begin() + T);
  std::printf("first row of a B=2, T=%d batch, decoded:\n%s\n", T, data.tokenizer().decode(row).c_str());
  return ok_status();
}

int run_inspect(const std::string& dir, int T) {
  PreparedData data;
  Status s = data.open(dir, /*verify=*/true);
  if (!s.ok()) return fail(s);
  std::printf("dataset: %s (all %zu files match their SHA-256)\n", dir.c_str(), data.manifest()["files"].size());
  std::printf("vocab_size: %u  bos_id: %u\n", data.tokenizer().vocab_size(), data.tokenizer().bos_id());
  for (const char* split : {"train", "val"}) {
    std::vector<Shard> shards;
    s = data.open_split(split, &shards);
    if (!s.ok()) return fail(s);
    uint64_t toks = 0, docs = 0;
    for (auto& sh : shards) toks += sh.n_tokens(), docs += sh.n_docs();
    std::printf("%-5s shards: %zu  docs: %llu  tokens: %llu\n", split, shards.size(),
                static_cast<unsigned long long>(docs), static_cast<unsigned long long>(toks));
    if (std::string(split) == "train" && !(s = print_first_row(data, shards, T)).ok()) return fail(s);
  }
  return 0;
}

}  // namespace

void add_prepare_command(CLI::App& app, Commands& cmds) {
  auto a = std::make_shared<PrepareArgs>();
  PrepareOptions& po = a->po;
  auto* prep = app.add_subcommand("prepare",
                                  "Tokenize a corpus: train a BPE tokenizer, write token shards, token_bytes and a "
                                  "manifest. With no --train input, uses the built-in default corpus (Brown + "
                                  "nlp-corpus, installed by scripts/install_deps.sh).");
  prep->add_option("--train", po.train_inputs,
                   "Training text: .txt / .jsonl / .jsonl.zst / .parquet files, directories or globs");
  prep->add_option("--val", po.val_inputs,
                   "Validation text (pinned). Without it, every --val-every-th training document is held out");
  prep->add_option("--val-every", po.val_every, "Hold out every N-th document for validation")->capture_default_str();
  prep->add_option("--out", po.out_dir, "Output directory")->capture_default_str();
  prep->add_option("--vocab-size", po.vocab_size, "Vocabulary size including special tokens")->capture_default_str();
  prep->add_option("--tokenizer", po.tokenizer_dir, "Reuse this tokenizer directory instead of training one");
  prep->add_option("--tokenizer-max-chars", po.tokenizer_max_chars, "Train the tokenizer on at most this many bytes")
      ->check(number_in(1))
      ->capture_default_str();
  prep->add_option("--shard-tokens", po.shard_tokens, "Tokens per shard (shards end at document boundaries)")
      ->check(number_in(1))
      ->capture_default_str();
  prep->add_option("--invalid-utf8", a->utf8, "Invalid UTF-8 in the input: error (stop, naming file:line) or replace "
                                              "(substitute U+FFFD)")
      ->check(CLI::IsMember({"error", "replace"}))
      ->capture_default_str();
  prep->add_option("--text-column", po.text_column,
                   "The Parquet column (or JSON Lines field) that holds each document")
      ->capture_default_str();
  prep->add_option("--max-doc-bytes", po.max_doc_bytes,
                   "Split documents longer than this many bytes at paragraph / line / sentence boundaries, each "
                   "piece its own document (the loader keeps only a document's first row of T tokens when it "
                   "crops); 0 = whole documents; -1 = 1024 for the built-in corpus, 0 for --train inputs")
      ->check(CLI::Range(int64_t(-1), int64_t(1) << 40))
      ->capture_default_str();
  prep->add_option("--threads", po.threads, "Threads (0 = all cores)")
      ->check(number_in(0))
      ->capture_default_str();
  prep->add_flag("--quiet", a->quiet, "No progress output");
  cmds.push_back({prep, [a] { return run_prepare(*a); }});
}

void add_inspect_command(CLI::App& app, Commands& cmds) {
  struct InspectArgs {
    std::string dir = "data/default";
    int T = 64;
  };
  auto a = std::make_shared<InspectArgs>();
  auto* insp = app.add_subcommand("inspect", "Verify a prepared dataset and show its statistics and a first batch");
  insp->add_option("--data", a->dir, "Prepared dataset directory")->capture_default_str();
  insp->add_option("--seq-len", a->T, "Row length for the sample batch")->capture_default_str();
  cmds.push_back({insp, [a] { return run_inspect(a->dir, a->T); }});
}

}  // namespace frontier::cli

#include "data/prepare.h"

#include <omp.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "data/default_corpus.h"
#include "data/doc_split.h"
#include "data/shard.h"
#include "tokenizer/bpe_trainer.h"
#include "tokenizer/tokenizer.h"
#include "util/file.h"
#include "util/staging_dir.h"
#include "util/file_lock.h"
#include "util/progress.h"
#include "util/sha256.h"

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace frontier {

namespace {

constexpr uint64_t kBatchBytes = 8 << 20;  // documents are read and encoded in batches of about this much text

struct InputSet {
  bool use_default = false;
  std::vector<std::string> files;
  json describe;  // [{path, bytes, sha256}]
};

Status resolve_inputs(const std::vector<std::string>& specs, bool allow_default, InputSet* in) {
  if (specs.empty()) {
    if (!allow_default) return ok_status();
    in->use_default = true;
    FRONTIER_RETURN_IF_ERROR(default_corpus_files(&in->files));
  } else {
    FRONTIER_RETURN_IF_ERROR(expand_inputs(specs, &in->files));
  }
  in->describe = json::array();
  for (const auto& f : in->files) {
    std::string hex;
    uint64_t bytes;
    FRONTIER_RETURN_IF_ERROR(sha256_file(f, &hex, &bytes));
    in->describe.push_back({{"path", f}, {"bytes", bytes}, {"sha256", hex}});
  }
  return ok_status();
}

Status open_source(const InputSet& in, const PrepareOptions& opt, std::unique_ptr<DocumentSource>* src) {
  if (in.use_default) return open_default_corpus(src);
  return open_files(in.files, opt.utf8, src, opt.text_column);
}

// Which documents of a source to keep: all, only the held-out ones, or all but the held-out ones.
enum class Take { kAll, kHeldOut, kRest };

class DocFilter {
 public:
  DocFilter(Take take, uint32_t every) : take_(take), every_(every) {}
  bool keep() {
    bool held = every_ > 0 && (index_++ % every_) == every_ - 1;
    return take_ == Take::kAll || (take_ == Take::kHeldOut) == held;
  }

 private:
  Take take_;
  uint32_t every_;
  uint64_t index_ = 0;
};

// A batch of documents and, for each, its ordinal in the source (0 = the first document next() returned, held out
// or not), so that an error can name the document's file and line (locate_document).
struct Batch {
  std::vector<std::string> docs;
  std::vector<uint64_t> origin;
  uint64_t n_read = 0;  // documents read from the source so far, all batches
};

// Reads the next batch of kept documents (about kBatchBytes of text), each split into pieces of at most
// max_doc_bytes (0: whole; data/doc_split.h). The validation hold-out is decided per source document, before the
// split, so no validation document shares text with a training piece. Empty batch = end of input.
Status read_batch(DocumentSource* src, DocFilter* filter, Batch* batch, uint64_t max_bytes, uint64_t max_doc_bytes) {
  batch->docs.clear();
  batch->origin.clear();
  uint64_t bytes = 0;
  std::string doc;
  std::vector<std::string_view> pieces;
  bool eof = false;
  while (bytes < max_bytes) {
    FRONTIER_RETURN_IF_ERROR(src->next(&doc, &eof));
    if (eof) break;
    const uint64_t ordinal = batch->n_read++;
    if (!filter->keep()) continue;
    bytes += doc.size();
    if (max_doc_bytes == 0 || doc.size() <= max_doc_bytes) {
      batch->docs.push_back(std::move(doc));
      batch->origin.push_back(ordinal);
      continue;
    }
    pieces.clear();
    split_document(doc, max_doc_bytes, &pieces);
    for (std::string_view p : pieces) {
      if (p.find_first_not_of(" \t\r\n") == std::string_view::npos) continue;
      batch->docs.emplace_back(p);
      batch->origin.push_back(ordinal);
    }
  }
  return ok_status();
}

// --max-doc-bytes: the option's value, or when left at -1, kDefaultCorpusDocBytes for the built-in corpus (whose
// documents average 2,500 tokens: the loader would use only their first row) and 0 (whole documents) for --train
// inputs, whose documents are the user's to define.
constexpr uint64_t kDefaultCorpusDocBytes = 1024;
uint64_t max_doc_bytes(const PrepareOptions& opt, bool use_default) {
  if (opt.max_doc_bytes >= 0) return static_cast<uint64_t>(opt.max_doc_bytes);
  return use_default ? kDefaultCorpusDocBytes : 0;
}

// The error of a document the tokenizer could not split, naming where it came from: the source is read again up to
// that document (only on this error path), so the reader can say its file and line or row.
Status document_error(const PrepareOptions& opt, const InputSet& in, const std::string& what, uint64_t ordinal,
                      size_t bytes, const Status& why) {
  std::string where;
  std::unique_ptr<DocumentSource> src;
  if (open_source(in, opt, &src).ok()) {
    std::string doc;
    bool eof = false;
    uint64_t i = 0;
    while (src->next(&doc, &eof).ok() && !eof && i++ < ordinal) {
    }
    if (!eof && i == ordinal + 1) where = src->where();
  }
  if (where.empty()) where = "document " + std::to_string(ordinal + 1) + " of the input";
  return Status::error(where + " (" + what + ", a " + std::to_string(bytes) + "-byte document): " + why.message());
}

Status train_tokenizer(const PrepareOptions& opt, const InputSet& train, Take take, Tokenizer* tok,
                       PrepareResult* res) {
  auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<DocumentSource> src;
  FRONTIER_RETURN_IF_ERROR(open_source(train, opt, &src));
  DocFilter filter(take, opt.val_every);
  BpeTrainer trainer(kNanochatPattern);
  FRONTIER_RETURN_IF_ERROR(trainer.status());
  Progress prog("tokenizer text", src->bytes_total(), opt.progress);
  Batch batch;
  while (trainer.n_bytes() < opt.tokenizer_max_chars) {
    FRONTIER_RETURN_IF_ERROR(read_batch(src.get(), &filter, &batch, kBatchBytes, static_cast<uint64_t>(opt.max_doc_bytes)));
    if (batch.docs.empty()) break;
    uint64_t room = opt.tokenizer_max_chars - trainer.n_bytes(), sum = 0;
    size_t keep = 0;
    while (keep < batch.docs.size() && sum < room) sum += batch.docs[keep++].size();
    batch.docs.resize(keep);
    size_t failed = 0;
    Status s = trainer.add_documents(batch.docs, &failed);
    if (!s.ok())
      return document_error(opt, train, "tokenizer training", batch.origin[failed], batch.docs[failed].size(), s);
    prog.update(src->bytes_done());
  }
  prog.finish(std::to_string(trainer.n_unique_pieces()) + " unique pieces");
  if (trainer.n_bytes() == 0)
    return Status::error("the training input has no documents (empty files, or every line's \"text\" is empty)");
  FRONTIER_RETURN_IF_ERROR(trainer.train(opt.vocab_size, default_special_tokens(), tok, opt.progress));
  res->tokenizer_train_bytes = trainer.n_bytes();
  res->tokenizer_seconds = seconds_since(t0);
  return ok_status();
}

// Encodes one split into shards named <split>_NNN.bin.
Status encode_split(const PrepareOptions& opt, const Tokenizer& tok, const InputSet& in, Take take,
                    const std::string& split, SplitStats* stats) {
  std::unique_ptr<DocumentSource> src;
  FRONTIER_RETURN_IF_ERROR(open_source(in, opt, &src));
  DocFilter filter(take, opt.val_every);
  const uint32_t bos = tok.bos_id(), V = tok.vocab_size();
  std::vector<uint32_t> tokens;
  std::vector<uint64_t> offsets = {0};
  auto flush = [&]() -> Status {
    if (offsets.size() == 1) return ok_status();
    char name[64];
    std::snprintf(name, sizeof(name), "%s_%03zu.bin", split.c_str(), stats->shards.size());
    FRONTIER_RETURN_IF_ERROR(write_shard(opt.out_dir + "/" + name, V, bos, tokens, offsets));
    stats->shards.push_back(name);
    tokens.clear();
    offsets.assign(1, 0);
    return ok_status();
  };
  Progress prog("encode " + split, src->bytes_total(), opt.progress);
  Batch b;
  const std::vector<std::string>& batch = b.docs;
  std::vector<std::vector<uint32_t>> enc;
  std::vector<Status> errors;
  while (true) {
    FRONTIER_RETURN_IF_ERROR(read_batch(src.get(), &filter, &b, kBatchBytes, static_cast<uint64_t>(opt.max_doc_bytes)));
    if (batch.empty()) break;
    enc.assign(batch.size(), {});
    errors.assign(batch.size(), ok_status());
#pragma omp parallel for schedule(dynamic, 1)
    for (size_t i = 0; i < batch.size(); i++) {
      enc[i].reserve(batch[i].size() / 3 + 2);
      enc[i].push_back(bos);
      errors[i] = tok.encode_ordinary(batch[i], &enc[i]);
    }
    for (size_t i = 0; i < batch.size(); i++)  // the first failure in document order
      if (!errors[i].ok())
        return document_error(opt, in, "the " + split + " split", b.origin[i], batch[i].size(), errors[i]);
    for (size_t i = 0; i < batch.size(); i++) {
      tokens.insert(tokens.end(), enc[i].begin(), enc[i].end());
      offsets.push_back(tokens.size());
      stats->docs++;
      stats->bytes += batch[i].size();
      stats->tokens += enc[i].size();
      if (tokens.size() >= opt.shard_tokens) FRONTIER_RETURN_IF_ERROR(flush());
    }
    prog.update(src->bytes_done());
  }
  FRONTIER_RETURN_IF_ERROR(flush());
  stats->nulls = src->nulls_skipped();
  char buf[128];
  std::snprintf(buf, sizeof(buf), "%llu docs, %.2fM tokens", static_cast<unsigned long long>(stats->docs),
                stats->tokens / 1e6);
  prog.finish(buf);
  if (stats->docs == 0)
    return Status::error("the " + split + " split has no documents (give more input, or a --val input)");
  return ok_status();
}

// The staging directory of one --out (util/staging_dir.h: PARENT/.NAME.prepare/, locked while this prepare runs),
// and how the finished dataset is moved in.
class Staging {
 public:
  Status begin(const std::string& out) { return dir_.begin(out, "prepare"); }
  std::string data_dir() const { return dir_.data_dir(); }

  // Moves the finished dataset to the output directory. An empty one is replaced whole (one rename). Otherwise it
  // may hold other files, which stay: the dataset's files are moved in one by one (each rename atomic), the old
  // manifest removed first and the new one moved last, and the old shards removed, so that it is a dataset again
  // only when it is this one. The old dataset's files go to staging/old and are deleted after.
  Status publish(const std::vector<std::string>& names) {
    const std::string& out = dir_.target();
    std::error_code ec;
    const std::string data = data_dir();
    if (fs::is_empty(out, ec) && !ec) {
      fs::remove(out, ec);
      if (!ec) fs::rename(data, out, ec);
      if (ec) return Status::error("cannot move the new dataset to " + out + ": " + ec.message());
      return ok_status();
    }
    const std::string old = dir_.old_dir();
    FRONTIER_RETURN_IF_ERROR(make_dirs(old + "/tokenizer"));
    auto move = [&](const std::string& from, const std::string& to) -> Status {
      fs::rename(from, to, ec);
      if (ec) return Status::error("cannot move " + from + " to " + to + ": " + ec.message());
      return ok_status();
    };
    if (file_exists(out + "/manifest.json"))
      FRONTIER_RETURN_IF_ERROR(move(out + "/manifest.json", old + "/manifest.json"));
    std::vector<std::string> stale;  // old shards and the debris of killed runs; listed first, moved after
    for (auto& e : fs::directory_iterator(out, ec)) {
      const std::string n = e.path().filename().string();
      const bool shard = (n.rfind("train_", 0) == 0 || n.rfind("val_", 0) == 0) && e.path().extension() == ".bin";
      if (shard || e.path().extension() == ".tmp") stale.push_back(n);
    }
    for (const auto& n : stale) FRONTIER_RETURN_IF_ERROR(move(out + "/" + n, old + "/" + n));
    FRONTIER_RETURN_IF_ERROR(make_dirs(out + "/tokenizer", "--out"));
    for (const auto& n : names) FRONTIER_RETURN_IF_ERROR(move(data + "/" + n, out + "/" + n));
    return move(data + "/manifest.json", out + "/manifest.json");
  }

 private:
  StagingDir dir_;
};

json split_json(const SplitStats& s) {
  return {{"docs", s.docs}, {"bytes", s.bytes}, {"tokens", s.tokens}, {"shards", s.shards}};
}

// True if dir holds a manifest with this fingerprint whose files are all present at their recorded sizes.
bool up_to_date(const std::string& dir, const std::string& fingerprint, PrepareResult* res) {
  std::string text;
  if (!read_file(dir + "/manifest.json", &text).ok()) return false;
  json m = json::parse(text, nullptr, false);
  if (m.is_discarded() || m.value("fingerprint", "") != fingerprint || !m.contains("files")) return false;
  for (auto& [name, info] : m["files"].items()) {
    std::error_code ec;
    auto sz = fs::file_size(dir + "/" + name, ec);
    if (ec || sz != info.value("bytes", uint64_t(0))) return false;
  }
  auto load = [](const json& j, SplitStats* s) {
    s->docs = j.value("docs", uint64_t(0));
    s->bytes = j.value("bytes", uint64_t(0));
    s->tokens = j.value("tokens", uint64_t(0));
    s->shards = j.value("shards", std::vector<std::string>{});
  };
  load(m["splits"]["train"], &res->train);
  load(m["splits"]["val"], &res->val);
  res->vocab_size = m["tokenizer"].value("vocab_size", 0u);
  return true;
}

// The manifest, written last in opt.out_dir: each of the dataset's files (names) with its size and SHA-256, the
// fingerprint, the inputs, the tokenizer and the splits (docs/formats.md).
Status write_manifest(const PrepareOptions& opt, const std::string& fingerprint, const InputSet& train,
                      const InputSet& val, bool holdout, uint64_t split_bytes, const Tokenizer& tok,
                      const PrepareResult& res, const std::vector<std::string>& names) {
  json files = json::object();
  for (auto& n : names) {
    std::string hex;
    uint64_t bytes;
    FRONTIER_RETURN_IF_ERROR(sha256_file(opt.out_dir + "/" + n, &hex, &bytes));
    files[n] = {{"bytes", bytes}, {"sha256", hex}};
  }
  json m = {{"format", "frontier-prepared"},
            {"version", 1},
            {"fingerprint", fingerprint},
            {"inputs",
             {{"default_corpus", train.use_default},
              {"train", train.describe},
              {"val", val.describe},
              {"val_every", holdout ? opt.val_every : 0},
              {"max_doc_bytes", split_bytes}}},
            {"tokenizer",
             {{"vocab_size", tok.vocab_size()},
              {"bos_id", tok.bos_id()},
              {"fingerprint", tok.fingerprint()},
              {"trained_here", opt.tokenizer_dir.empty()},
              {"train_bytes", res.tokenizer_train_bytes},
              {"pattern", tok.pattern()}}},
            {"splits", {{"train", split_json(res.train)}, {"val", split_json(res.val)}}},
            {"files", files}};
  return write_file_atomic(opt.out_dir + "/manifest.json",
                           m.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
}

}  // namespace

Status prepare(const PrepareOptions& options, PrepareResult* res) {
  *res = PrepareResult();
  PrepareOptions opt = options;  // with max_doc_bytes resolved below
  if (opt.threads > 0) omp_set_num_threads(opt.threads);
  const uint32_t min_vocab = 256 + static_cast<uint32_t>(default_special_tokens().size());
  if (opt.tokenizer_dir.empty() && opt.vocab_size < min_vocab)
    return Status::error("--vocab-size " + std::to_string(opt.vocab_size) + " is below 256 bytes + " +
                         std::to_string(default_special_tokens().size()) + " special tokens (use at least " +
                         std::to_string(min_vocab) + ")");
  if (opt.val_inputs.empty() && opt.val_every < 2)
    return Status::error("--val-every must be at least 2 when no --val input is given");
  if (opt.shard_tokens == 0) return Status::error("--shard-tokens must be positive");

  InputSet train, val;
  FRONTIER_RETURN_IF_ERROR(resolve_inputs(opt.train_inputs, true, &train));
  FRONTIER_RETURN_IF_ERROR(resolve_inputs(opt.val_inputs, false, &val));
  const bool holdout = opt.val_inputs.empty();

  Tokenizer given;
  if (!opt.tokenizer_dir.empty()) {
    FRONTIER_RETURN_IF_ERROR(given.load(opt.tokenizer_dir));
    if (given.special_id("<|bos|>") < 0)
      return Status::error("tokenizer " + opt.tokenizer_dir + " has no <|bos|> special token");
  }

  // The fingerprint: what the output depends on (input contents, options, format version, a given tokenizer).
  json fp = {{"format_version", kShardVersion},
             {"train", json::array()},
             {"val", json::array()},
             {"default_corpus", train.use_default},
             {"val_every", holdout ? opt.val_every : 0},
             {"vocab_size", opt.tokenizer_dir.empty() ? opt.vocab_size : given.vocab_size()},
             {"tokenizer", opt.tokenizer_dir.empty() ? std::string("trained") : given.fingerprint()},
             {"tokenizer_max_chars", opt.tokenizer_max_chars},
             {"shard_tokens", opt.shard_tokens},
             {"invalid_utf8", opt.utf8 == Utf8Policy::kReplace ? "replace" : "error"},
             {"pattern", kNanochatPattern}};
  if (opt.text_column != "text") fp["text_column"] = opt.text_column;  // absent by default: old fingerprints hold
  const uint64_t split_bytes = max_doc_bytes(opt, train.use_default);
  opt.max_doc_bytes = static_cast<int64_t>(split_bytes);  // one value for both splits
  if (split_bytes > 0) fp["max_doc_bytes"] = split_bytes;  // absent when documents are whole: old fingerprints hold
  for (auto& f : train.describe) fp["train"].push_back(f["sha256"]);
  for (auto& f : val.describe) fp["val"].push_back(f["sha256"]);
  // Input paths are bytes on Linux and need not be UTF-8, which JSON text must be: the manifest shows such bytes as
  // U+FFFD (dump() would throw). Valid paths dump unchanged, so fingerprints stay as they were.
  const std::string fingerprint = sha256_hex(fp.dump(-1, ' ', false, json::error_handler_t::replace));

  if (up_to_date(opt.out_dir, fingerprint, res)) {
    res->up_to_date = true;
    return ok_status();
  }

  // Everything is written into a staging directory beside --out and moved into place only once it is whole
  // (publish): a bad input found half-way, a kill or a full disk leaves an existing dataset as it was. The staging
  // directory's lock makes concurrent prepares into one --out a one-line error naming the holder, not a silent
  // overwrite.
  FRONTIER_RETURN_IF_ERROR(make_dirs(opt.out_dir, "--out"));
  Staging staging;
  FRONTIER_RETURN_IF_ERROR(staging.begin(opt.out_dir));
  {  // under the lock: out must take the files at the end
    std::string probe = opt.out_dir + "/.write_probe";
    Status s = write_file_atomic(probe, "ok");
    if (!s.ok()) return Status::error("output directory " + opt.out_dir + " is not writable (choose another --out)");
    std::error_code ec;
    fs::remove(probe, ec);
  }
  opt.out_dir = staging.data_dir();

  Tokenizer trained;
  const Tokenizer* tok = &given;
  if (opt.tokenizer_dir.empty()) {
    FRONTIER_RETURN_IF_ERROR(train_tokenizer(opt, train, holdout ? Take::kRest : Take::kAll, &trained, res));
    tok = &trained;
  }
  FRONTIER_RETURN_IF_ERROR(tok->save(opt.out_dir + "/tokenizer"));
  res->vocab_size = tok->vocab_size();

  auto t0 = std::chrono::steady_clock::now();
  FRONTIER_RETURN_IF_ERROR(encode_split(opt, *tok, train, holdout ? Take::kRest : Take::kAll, "train", &res->train));
  FRONTIER_RETURN_IF_ERROR(
      encode_split(opt, *tok, holdout ? train : val, holdout ? Take::kHeldOut : Take::kAll, "val", &res->val));
  res->encode_seconds = seconds_since(t0);

  std::vector<int32_t> token_bytes(tok->vocab_size(), 0);
  for (uint32_t i = 0; i < tok->vocab_size(); i++)
    token_bytes[i] = tok->is_special(i) ? 0 : static_cast<int32_t>(tok->token(i).size());
  FRONTIER_RETURN_IF_ERROR(write_token_bytes(opt.out_dir + "/token_bytes.bin", token_bytes));

  std::vector<std::string> names = {"tokenizer/tokenizer.tiktoken", "tokenizer/tokenizer.json", "token_bytes.bin"};
  for (auto& s : res->train.shards) names.push_back(s);
  for (auto& s : res->val.shards) names.push_back(s);
  FRONTIER_RETURN_IF_ERROR(write_manifest(opt, fingerprint, train, val, holdout, split_bytes, *tok, *res, names));
  return staging.publish(names);
}

}  // namespace frontier

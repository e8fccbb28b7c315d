// Tokenizer benchmark: BPE training speed and encoding throughput (1 and 2 threads), with the real tiktoken
// (npm WASM build, single-threaded) encoding the same text with the same ranks in the same run as the baseline.
//
//   build/bench_tokenizer [--text wiki|default] [--mb N] [--vocab 8192] [--json out.json]
// --text wiki uses ../shared/data/corpus/wikipedia-en-2015/wiki_00.jsonl.zst (the benchmark corpus); default uses
// the built-in default corpus. Prints a table and, with --json, a machine-readable record.
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "data/corpus.h"
#include "data/default_corpus.h"
#include "tokenizer/bpe_trainer.h"
#include "util/base64.h"
#include "util/file.h"

using namespace frontier;
using Clock = std::chrono::steady_clock;

static double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int main(int argc, char** argv) {
  std::string which = "wiki", json_out;
  double mb = 0;
  uint32_t vocab = 8192;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "error: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--text") which = val();
    else if (a == "--mb") mb = std::stod(val());
    else if (a == "--vocab") vocab = static_cast<uint32_t>(std::stoul(val()));
    else if (a == "--json") json_out = val();
    else {
      std::fprintf(stderr, "usage: bench_tokenizer [--text wiki|default] [--mb N] [--vocab 8192] [--json F]\n");
      return 2;
    }
  }
  std::string src_dir = std::filesystem::path(__FILE__).parent_path().parent_path().string();
  std::unique_ptr<DocumentSource> src;
  Status s;
  if (which == "wiki") {
    std::string path = src_dir + "/../shared/data/corpus/wikipedia-en-2015/wiki_00.jsonl.zst";
    s = open_files({path}, Utf8Policy::kError, &src);
  } else {
    s = open_default_corpus(&src);
  }
  if (!s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  std::vector<std::string> docs;
  uint64_t bytes = 0;
  std::string d;
  bool eof = false;
  while ((mb <= 0 || bytes < mb * 1e6) && src->next(&d, &eof).ok() && !eof) {
    bytes += d.size();
    docs.push_back(std::move(d));
  }
  double MB = bytes / 1e6;
  int max_threads = omp_get_max_threads();
  std::printf("text: %s, %zu documents, %.1f MB; vocab %u; %d hardware threads\n", which.c_str(), docs.size(), MB,
              vocab, max_threads);

  // Training: counting (parallel) + merges.
  auto t0 = Clock::now();
  BpeTrainer trainer(kNanochatPattern);
  trainer.add_documents(docs);
  double count_s = since(t0);
  Tokenizer tok;
  auto t1 = Clock::now();
  s = trainer.train(vocab, default_special_tokens(), &tok, false);
  double merge_s = since(t1);
  if (!s.ok()) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  double train_s = count_s + merge_s;

  auto encode_all = [&](int threads, uint64_t* ntok) {
    omp_set_num_threads(threads);
    std::vector<uint64_t> counts(docs.size());
    auto t = Clock::now();
#pragma omp parallel for schedule(dynamic, 4)
    for (size_t i = 0; i < docs.size(); i++) {
      std::vector<uint32_t> ids;
      // The shipped patterns never give up (tokenizer/regex_split.h retries with room); a failure counts 0 tokens.
      if (!tok.encode_ordinary(docs[i], &ids).ok()) ids.clear();
      counts[i] = ids.size();
    }
    double secs = since(t);
    *ntok = 0;
    for (auto c : counts) *ntok += c;
    return secs;
  };
  uint64_t ntok1 = 0, ntok2 = 0;
  encode_all(1, &ntok1);  // warm-up (page faults, caches)
  double enc1 = encode_all(1, &ntok1);
  double enc2 = max_threads >= 2 ? encode_all(2, &ntok2) : enc1;

  // tiktoken on the same text and ranks, through node.
  std::string tmp = (std::filesystem::temp_directory_path() / "frontier_bench_tok").string();
  std::filesystem::create_directories(tmp);
  double tt_s = -1;
  uint64_t tt_tok = 0;
  if (tok.save(tmp + "/tok").ok()) {
    nlohmann::json req = {{"encoding", nullptr}, {"ranks_file", tmp + "/tok/tokenizer.tiktoken"},
                          {"pattern", tok.pattern()}, {"specials", nlohmann::json::object()},
                          {"timing_only", true}, {"texts_b64", nlohmann::json::array()}};
    for (auto& t : docs) req["texts_b64"].push_back(base64_encode(t));
    write_file_atomic(tmp + "/req.json", req.dump());
    std::string cmd = "node " + src_dir + "/tests/tiktoken/encode.mjs " + tmp + "/req.json " + tmp + "/resp.json";
    if (std::system(cmd.c_str()) == 0) {
      std::string text;
      read_file(tmp + "/resp.json", &text);
      auto resp = nlohmann::json::parse(text);
      tt_s = resp["encode_seconds"].get<double>();
      tt_tok = resp["n_tokens"].get<uint64_t>();
    }
  }
  std::filesystem::remove_all(tmp);

  std::printf("\n%-34s %10s %12s\n", "measurement", "seconds", "MB/s");
  std::printf("%-34s %10.2f %12.1f\n", "train: count pieces (all threads)", count_s, MB / count_s);
  std::printf("%-34s %10.2f %12s\n", "train: merges", merge_s, "");
  std::printf("%-34s %10.2f %12.1f\n", "train: total", train_s, MB / train_s);
  std::printf("%-34s %10.2f %12.1f\n", "encode, 1 thread", enc1, MB / enc1);
  std::printf("%-34s %10.2f %12.1f\n", "encode, 2 threads", enc2, MB / enc2);
  if (tt_s > 0) {
    std::printf("%-34s %10.2f %12.1f\n", "tiktoken (npm WASM), 1 thread", tt_s, MB / tt_s);
    std::printf("\nratios: frontier 1 thread / tiktoken = %.2fx; 2 threads / 1 thread = %.2fx; same tokens: %s\n",
                tt_s / enc1, enc1 / enc2, tt_tok == ntok1 ? "yes" : "NO");
  } else {
    std::printf("\ntiktoken baseline unavailable (node or npm tiktoken missing: run scripts/install_deps.sh)\n");
    std::printf("ratio: 2 threads / 1 thread = %.2fx\n", enc1 / enc2);
  }
  std::printf("tokens: %llu (%.3f bytes/token)\n", static_cast<unsigned long long>(ntok1),
              static_cast<double>(bytes) / ntok1);
  if (!json_out.empty()) {
    nlohmann::json j = {{"text", which},          {"mb", MB},
                        {"vocab", vocab},         {"train_seconds", train_s},
                        {"train_count_seconds", count_s}, {"train_merge_seconds", merge_s},
                        {"encode_mb_s_1t", MB / enc1}, {"encode_mb_s_2t", MB / enc2},
                        {"tiktoken_mb_s", tt_s > 0 ? MB / tt_s : 0.0}, {"tokens", ntok1}};
    write_file_atomic(json_out, j.dump(2) + "\n");
  }
  return tt_s > 0 && tt_tok != ntok1 ? 1 : 0;
}

// Corpus reader benchmark: documents per second and MB/s of text out of each input, through the same
// open_files() path `frontier prepare` uses (UTF-8 validation included). The first input is the baseline the
// others are compared with, measured in the same run.
//
//   build/bench_readers [--repeat 3] [--text-column text] BASELINE INPUT...
//   e.g. build/bench_readers wiki_00.jsonl.zst wiki_00_zstd.parquet wiki_00_snappy_dict.parquet
// The Parquet copies of a jsonl.zst shard come from tests/parquet/write.mjs --from-jsonl (see docs/formats.md).
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "data/corpus.h"

using namespace frontier;
using Clock = std::chrono::steady_clock;

struct Result {
  uint64_t docs = 0, text_bytes = 0, file_bytes = 0;
  double seconds = 0;  // best of the repeats
};

static Status read_all(const std::string& path, const std::string& column, Result* r) {
  std::unique_ptr<DocumentSource> src;
  FRONTIER_RETURN_IF_ERROR(open_files({path}, Utf8Policy::kError, &src, column));
  std::string doc;
  bool eof = false;
  r->docs = r->text_bytes = 0;
  while (true) {
    FRONTIER_RETURN_IF_ERROR(src->next(&doc, &eof));
    if (eof) break;
    r->docs++;
    r->text_bytes += doc.size();
  }
  r->file_bytes = src->bytes_total();
  return ok_status();
}

int main(int argc, char** argv) {
  int repeat = 3;
  std::string column = "text";
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if ((a == "--repeat" || a == "--text-column") && i + 1 < argc) {
      (a == "--repeat" ? (void)(repeat = std::stoi(argv[++i])) : (void)(column = argv[++i]));
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "usage: bench_readers [--repeat N] [--text-column NAME] BASELINE INPUT...\n");
      return 2;
    } else {
      inputs.push_back(a);
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "usage: bench_readers [--repeat N] [--text-column NAME] BASELINE INPUT...\n");
    return 2;
  }
  std::printf("%-44s %9s %10s %10s %9s %8s\n", "input", "docs", "text MB", "file MB", "MB/s", "vs base");
  double base = 0;
  for (const auto& path : inputs) {
    Result r;
    r.seconds = 1e30;
    for (int k = 0; k < repeat; k++) {
      auto t0 = Clock::now();
      Status s = read_all(path, column, &r);
      if (!s.ok()) {
        std::fprintf(stderr, "error: %s\n", s.message().c_str());
        return 1;
      }
      r.seconds = std::min(r.seconds, std::chrono::duration<double>(Clock::now() - t0).count());
    }
    double mbs = r.text_bytes / 1e6 / r.seconds;
    if (base == 0) base = mbs;
    std::string name = path.size() > 44 ? "..." + path.substr(path.size() - 41) : path;
    std::printf("%-44s %9llu %10.1f %10.1f %9.1f %7.2fx\n", name.c_str(), static_cast<unsigned long long>(r.docs),
                r.text_bytes / 1e6, r.file_bytes / 1e6, mbs, mbs / base);
  }
  return 0;
}

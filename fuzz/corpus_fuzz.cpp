// The corpus readers (data/corpus.h): the input after its first byte becomes one file that expand_inputs finds
// and open_files streams to the end, as `frontier prepare` reads its --train input. The first byte picks:
//   bits 0-1  format: 0 .txt, 1 .jsonl, 2 .jsonl.zst (the bytes as they are: the zstd decoder's input),
//             3 .jsonl.zst compressed here (the JSON Lines parser behind the decoder), cut short by bits 4-7 bytes
//   bit 2     invalid UTF-8: 0 error, 1 replace (--invalid-utf8)
// Seeds: slices of ../shared/data/corpus (jsonl and zst), the tests' corpora, odd line endings and UTF-8.
// Dictionary: fuzz/dicts/json.dict (scripts/sanitize.sh passes it to libFuzzer).
#include <zstd.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/corpus.h"
#include "fuzz_util.h"

using namespace frontier;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const std::string dir = fuzz::scratch_dir() + "/corpus";
  static const char* const kExt[4] = {".txt", ".jsonl", ".jsonl.zst", ".jsonl.zst"};
  const uint8_t mode = data[0];
  const int fmt = mode & 3;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/input" + kExt[fmt];
  if (fmt == 3) {
    std::string z(ZSTD_compressBound(size - 1), '\0');
    size_t n = ZSTD_compress(z.data(), z.size(), data + 1, size - 1, 1);
    if (ZSTD_isError(n)) return 0;
    z.resize(n - std::min<size_t>(n, mode >> 4));
    fuzz::write(path, z);
  } else {
    fuzz::write(path, data + 1, size - 1);
  }
  std::vector<std::string> files;
  if (!expand_inputs({dir}, &files).ok()) return 0;
  std::unique_ptr<DocumentSource> src;
  if (!open_files(files, mode & 4 ? Utf8Policy::kReplace : Utf8Policy::kError, &src).ok()) return 0;
  std::string doc;
  bool eof = false;
  while (src->next(&doc, &eof).ok() && !eof) {
  }
  return 0;
}

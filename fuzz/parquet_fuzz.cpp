// The Parquet reader (data/parquet.h): the input after its first byte is one .parquet file, read to the end. The
// first byte picks:
//   bit 0  the column: 0 "text", 1 "tags" (a list column in one seed: the nested-column refusal)
//   bit 1  0: ParquetReader alone; 1: through open_files as `frontier prepare --train x.parquet` reads it, invalid
//          UTF-8 replaced (so decoding goes on past bad bytes)
// At most 1M values or 64 MiB of text are read: a valid file may repeat a dictionary value billions of times.
// Seeds: tests/parquet/write.mjs's files at 60 rows (Rust parquet crate: PLAIN/dictionary, ZSTD/SNAPPY/GZIP/none,
// data page v1/v2, a REQUIRED column, a list column, LZ4_RAW, DELTA_LENGTH_BYTE_ARRAY; hyparquet-writer: an empty
// row group).
// Dictionary: fuzz/dicts/parquet.dict.
#include <cstdint>
#include <memory>
#include <string>

#include "data/corpus.h"
#include "data/parquet.h"
#include "fuzz_util.h"

using namespace frontier;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  static const std::string path = fuzz::scratch_dir() + "/input.parquet";
  const uint8_t mode = data[0];
  const std::string column = mode & 1 ? "tags" : "text";
  fuzz::write(path, data + 1, size - 1);
  std::string doc;
  bool eof = false;
  uint64_t values = 0, bytes = 0;
  auto budget = [&] { return ++values < (1u << 20) && (bytes += doc.size()) < (64u << 20); };
  if (mode & 2) {
    std::unique_ptr<DocumentSource> src;
    if (!open_files({path}, Utf8Policy::kReplace, &src, column).ok()) return 0;
    while (src->next(&doc, &eof).ok() && !eof && budget()) {
    }
  } else {
    ParquetReader r;
    if (!r.open(path, column).ok()) return 0;
    while (r.next(&doc, &eof).ok() && !eof && budget()) {
    }
  }
  return 0;
}

// Page decompression for the Parquet reader: the codecs of Parquet's CompressionCodec enum that Debian's libraries
// provide (UNCOMPRESSED, SNAPPY via libsnappy, GZIP via zlib, ZSTD via libzstd). LZO, BROTLI, LZ4 and LZ4_RAW are
// named in errors but not decoded.
//
//   std::string page;
//   Status s = decompress_page(codec, bytes, n, header_uncompressed_size, &page);  // exactly that size, or an error
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "util/status.h"

namespace frontier {

enum ParquetCodec : int32_t { kCodecNone = 0, kCodecSnappy = 1, kCodecGzip = 2, kCodecZstd = 6 };

std::string codec_name(int32_t codec);  // "SNAPPY", ..., or "codec 42"
bool codec_supported(int32_t codec);

// Decompresses in[0, n) into *out, which must come out exactly `size` bytes (the page header's uncompressed size).
// Memory grows with the output actually produced, so a header that lies about the size costs no more than the data.
// The error is a phrase without the file name ("corrupt ZSTD data: ..."); the caller says where.
Status decompress_page(int32_t codec, const uint8_t* in, size_t n, size_t size, std::string* out);

}  // namespace frontier

#include "data/codec.h"

#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>

namespace frontier {

namespace {

Status size_mismatch(int32_t codec, size_t got, size_t want) {
  return Status::error("corrupt " + codec_name(codec) + " page (it decompresses to " +
                       (got > want ? "more than " + std::to_string(want) : std::to_string(got)) +
                       " bytes, its header says " + std::to_string(want) + ")");
}

// Output buffer for the streaming codecs: starts near the input's size and doubles up to size + 1 (one byte past
// the declared size is how too much output shows).
void grow(std::string* out, size_t n_in, size_t cap) {
  size_t next = out->empty() ? std::max<size_t>(4 * n_in, 1 << 16) : 2 * out->size();
  out->resize(std::min(next, cap));
}

Status zstd_page(const uint8_t* in, size_t n, size_t size, std::string* out) {
  ZSTD_DCtx* z = ZSTD_createDCtx();
  ZSTD_inBuffer ib = {in, n, 0};
  size_t done = 0, ret = 1;
  out->clear();
  while (true) {
    if (done == out->size()) {
      if (done > size) break;
      grow(out, n, size + 1);
    }
    ZSTD_outBuffer ob = {out->data(), out->size(), done};
    ret = ZSTD_decompressStream(z, &ob, &ib);
    if (ZSTD_isError(ret)) {
      ZSTD_freeDCtx(z);
      return Status::error(std::string("corrupt ZSTD page (") + ZSTD_getErrorName(ret) + ")");
    }
    done = ob.pos;
    if (ib.pos == ib.size && (ret == 0 || ob.pos < ob.size)) break;  // all frames done, or input ran out
  }
  ZSTD_freeDCtx(z);
  if (done > size) return size_mismatch(kCodecZstd, done, size);
  if (ret != 0) return Status::error("corrupt ZSTD page (the frame is truncated)");
  if (done != size) return size_mismatch(kCodecZstd, done, size);
  out->resize(size);
  return ok_status();
}

Status gzip_page(const uint8_t* in, size_t n, size_t size, std::string* out) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return Status::error("zlib initialisation failed");
  z.next_in = const_cast<Bytef*>(in);
  z.avail_in = static_cast<uInt>(n);  // pages are < 2 GiB (checked by the caller)
  size_t done = 0;
  int ret = Z_OK;
  out->clear();
  while (true) {
    if (done == out->size()) {
      if (done > size) break;
      grow(out, n, size + 1);
    }
    z.next_out = reinterpret_cast<Bytef*>(out->data() + done);
    z.avail_out = static_cast<uInt>(out->size() - done);
    ret = inflate(&z, Z_NO_FLUSH);
    done = out->size() - z.avail_out;
    if (ret == Z_STREAM_END) {
      if (z.avail_in == 0) break;
      inflateReset(&z);  // another gzip member follows
      continue;
    }
    if (z.avail_out == 0 && (ret == Z_OK || ret == Z_BUF_ERROR)) continue;  // output full: grow
    if (ret != Z_OK || z.avail_in == 0) break;  // corrupt, or the input ran out mid-stream
  }
  std::string msg = z.msg ? z.msg : "truncated deflate stream";
  inflateEnd(&z);
  if (done > size) return size_mismatch(kCodecGzip, done, size);
  if (ret != Z_STREAM_END) return Status::error("corrupt GZIP page (" + msg + ")");
  if (done != size) return size_mismatch(kCodecGzip, done, size);
  out->resize(size);
  return ok_status();
}

}  // namespace

std::string codec_name(int32_t codec) {
  static const char* names[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD", "LZ4_RAW"};
  return codec >= 0 && codec < 8 ? names[codec] : "codec " + std::to_string(codec);
}

bool codec_supported(int32_t codec) {
  return codec == kCodecNone || codec == kCodecSnappy || codec == kCodecGzip || codec == kCodecZstd;
}

Status decompress_page(int32_t codec, const uint8_t* in, size_t n, size_t size, std::string* out) {
  if (n == 0 && size == 0 && codec_supported(codec)) {  // an empty page some writers leave uncompressed
    out->clear();
    return ok_status();
  }
  switch (codec) {
    case kCodecNone:
      if (n != size) return size_mismatch(codec, n, size);
      out->assign(reinterpret_cast<const char*>(in), n);
      return ok_status();
    case kCodecSnappy: {
      size_t len = 0;
      const char* src = reinterpret_cast<const char*>(in);
      if (snappy_uncompressed_length(src, n, &len) != SNAPPY_OK)
        return Status::error("corrupt SNAPPY page (bad length preamble)");
      if (len != size) return size_mismatch(codec, len, size);
      out->resize(size);
      if (snappy_uncompress(src, n, out->data(), &len) != SNAPPY_OK || len != size)
        return Status::error("corrupt SNAPPY page (the compressed data is damaged)");
      return ok_status();
    }
    case kCodecGzip: return gzip_page(in, n, size, out);
    case kCodecZstd: return zstd_page(in, n, size, out);
    default: return Status::error("unsupported compression " + codec_name(codec));
  }
}

}  // namespace frontier

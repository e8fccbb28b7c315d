// Token shards: the binary files `frontier prepare` writes and the loader memory-maps. Documented in
// docs/formats.md. All integers little-endian.
//
//   offset  size  field
//   0       8     magic "FRTSHARD"
//   8       4     version (1)
//   12      4     header_bytes (64)
//   16      4     vocab_size
//   20      4     token_width: 2 (uint16 tokens, vocab_size <= 65536) or 4 (uint32)
//   24      8     n_tokens
//   32      8     n_docs
//   40      4     bos_id (every document starts with it)
//   44      20    reserved (zero)
//   64      n_tokens * token_width         tokens
//   ...     (n_docs + 1) * 8               doc_offsets (uint64): document i is tokens[off[i], off[i+1])
//
// The token_bytes file (bytes of UTF-8 text per token id, 0 for specials) used by val_bpb:
//   magic "FRTTKBYT", version (4), vocab_size (4), then vocab_size x int32.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "util/file.h"
#include "util/status.h"

namespace frontier {

inline constexpr char kShardMagic[8] = {'F', 'R', 'T', 'S', 'H', 'A', 'R', 'D'};
inline constexpr uint32_t kShardVersion = 1;
inline constexpr uint32_t kShardHeaderBytes = 64;

struct ShardHeader {
  char magic[8];
  uint32_t version;
  uint32_t header_bytes;
  uint32_t vocab_size;
  uint32_t token_width;
  uint64_t n_tokens;
  uint64_t n_docs;
  uint32_t bos_id;
  uint8_t reserved[20];
};
static_assert(sizeof(ShardHeader) == kShardHeaderBytes);

// Writes one shard from whole documents (each already starting with BOS).
Status write_shard(const std::string& path, uint32_t vocab_size, uint32_t bos_id, const std::vector<uint32_t>& tokens,
                   const std::vector<uint64_t>& doc_offsets);

// A validated, memory-mapped shard. open() checks magic, version, sizes, offsets, BOS at every document start
// and every token < vocab_size, so a corrupt or foreign file is an error, never garbage.
class Shard {
 public:
  Status open(const std::string& path, uint32_t expect_vocab_size);
  const ShardHeader& header() const { return h_; }
  uint64_t n_tokens() const { return h_.n_tokens; }
  uint64_t n_docs() const { return h_.n_docs; }
  uint64_t doc_begin(uint64_t d) const { return offset(d); }
  uint64_t doc_len(uint64_t d) const { return offset(d + 1) - offset(d); }
  uint32_t token(uint64_t i) const { return h_.token_width == 2 ? tok16_[i] : tok32_[i]; }
  // Copies tokens [begin, begin+n) as int32 into dst.
  void copy_tokens(uint64_t begin, uint64_t n, int32_t* dst) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  MappedFile map_;
  ShardHeader h_{};
  const uint16_t* tok16_ = nullptr;
  const uint32_t* tok32_ = nullptr;
  // The offsets follow n_tokens * token_width bytes of tokens, so they are 8-byte aligned only when that is a
  // multiple of 8: read through memcpy (one unaligned load on x86; a misaligned uint64_t* read is UB).
  const uint8_t* offsets_ = nullptr;  // (n_docs + 1) x uint64
  uint64_t offset(uint64_t d) const {
    uint64_t v;
    std::memcpy(&v, offsets_ + 8 * d, 8);
    return v;
  }
};

Status write_token_bytes(const std::string& path, const std::vector<int32_t>& token_bytes);
Status read_token_bytes(const std::string& path, std::vector<int32_t>* token_bytes);

}  // namespace frontier

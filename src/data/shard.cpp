#include "data/shard.h"

#include <cstring>

namespace frontier {

Status write_shard(const std::string& path, uint32_t vocab_size, uint32_t bos_id, const std::vector<uint32_t>& tokens,
                   const std::vector<uint64_t>& doc_offsets) {
  FRONTIER_CHECK(!doc_offsets.empty() && doc_offsets.front() == 0 && doc_offsets.back() == tokens.size());
  ShardHeader h{};
  std::memcpy(h.magic, kShardMagic, 8);
  h.version = kShardVersion;
  h.header_bytes = kShardHeaderBytes;
  h.vocab_size = vocab_size;
  h.token_width = vocab_size <= 65536 ? 2 : 4;
  h.n_tokens = tokens.size();
  h.n_docs = doc_offsets.size() - 1;
  h.bos_id = bos_id;
  AtomicFile f;
  FRONTIER_RETURN_IF_ERROR(f.open(path));
  FRONTIER_RETURN_IF_ERROR(f.write(&h, sizeof(h)));
  if (h.token_width == 2) {
    std::vector<uint16_t> t16(tokens.begin(), tokens.end());
    FRONTIER_RETURN_IF_ERROR(f.write(t16.data(), t16.size() * 2));
  } else {
    FRONTIER_RETURN_IF_ERROR(f.write(tokens.data(), tokens.size() * 4));
  }
  FRONTIER_RETURN_IF_ERROR(f.write(doc_offsets.data(), doc_offsets.size() * 8));
  return f.commit();
}

Status Shard::open(const std::string& path, uint32_t expect_vocab) {
  path_ = path;
  FRONTIER_RETURN_IF_ERROR(map_.open(path));
  auto bad = [&](const std::string& why) {
    return Status::error("corrupt shard " + path + ": " + why + " (re-run `frontier prepare` to rebuild it)");
  };
  if (map_.size() < sizeof(ShardHeader)) return bad("file is shorter than the 64-byte header");
  std::memcpy(&h_, map_.data(), sizeof(h_));
  if (std::memcmp(h_.magic, kShardMagic, 8) != 0) return bad("bad magic (not a Frontier token shard)");
  if (h_.version != kShardVersion)
    return bad("version " + std::to_string(h_.version) + ", this build reads version " +
               std::to_string(kShardVersion));
  if (h_.header_bytes != kShardHeaderBytes) return bad("unexpected header size");
  if (h_.token_width != 2 && h_.token_width != 4) return bad("token width must be 2 or 4");
  if (h_.token_width == 2 && h_.vocab_size > 65536) return bad("vocab_size too large for uint16 tokens");
  if (expect_vocab && h_.vocab_size != expect_vocab)
    return Status::error("shard " + path + " has vocab_size " + std::to_string(h_.vocab_size) +
                         " but the tokenizer has " + std::to_string(expect_vocab) +
                         " (the data was prepared with another tokenizer; re-run `frontier prepare`)");
  // Counts beyond the file's size would overflow the size sum below (and wrap around to a size that matches).
  if (h_.n_tokens > map_.size() || h_.n_docs > map_.size())
    return bad("header claims " + std::to_string(h_.n_tokens) + " tokens in " + std::to_string(h_.n_docs) +
               " documents, more than its " + std::to_string(map_.size()) + " bytes hold");
  uint64_t want = kShardHeaderBytes + h_.n_tokens * h_.token_width + (h_.n_docs + 1) * 8;
  if (map_.size() != want)
    return bad("size is " + std::to_string(map_.size()) + " bytes, header implies " + std::to_string(want));
  const uint8_t* p = map_.data() + kShardHeaderBytes;
  if (h_.token_width == 2) {
    tok16_ = reinterpret_cast<const uint16_t*>(p);
  } else {
    tok32_ = reinterpret_cast<const uint32_t*>(p);
  }
  offsets_ = p + h_.n_tokens * h_.token_width;
  if (offset(0) != 0 || offset(h_.n_docs) != h_.n_tokens) return bad("document offsets do not span the tokens");
  for (uint64_t d = 0; d < h_.n_docs; d++) {
    if (offset(d + 1) <= offset(d) || offset(d + 1) > h_.n_tokens)  // so that offset(d) indexes a token
      return bad("empty, unordered or out-of-range document " + std::to_string(d));
    if (token(offset(d)) != h_.bos_id) return bad("document " + std::to_string(d) + " does not start with BOS");
  }
  uint32_t maxtok = 0;
  for (uint64_t i = 0; i < h_.n_tokens; i++) maxtok = std::max(maxtok, token(i));
  if (h_.n_tokens && maxtok >= h_.vocab_size) return bad("token id " + std::to_string(maxtok) + " >= vocab_size");
  return ok_status();
}

void Shard::copy_tokens(uint64_t begin, uint64_t n, int32_t* dst) const {
  FRONTIER_CHECK(begin + n <= h_.n_tokens);
  if (h_.token_width == 2) {
    for (uint64_t i = 0; i < n; i++) dst[i] = tok16_[begin + i];
  } else {
    for (uint64_t i = 0; i < n; i++) dst[i] = static_cast<int32_t>(tok32_[begin + i]);
  }
}

static constexpr char kTokenBytesMagic[8] = {'F', 'R', 'T', 'T', 'K', 'B', 'Y', 'T'};

Status write_token_bytes(const std::string& path, const std::vector<int32_t>& tb) {
  std::string data(kTokenBytesMagic, 8);
  uint32_t version = 1, n = static_cast<uint32_t>(tb.size());
  data.append(reinterpret_cast<const char*>(&version), 4);
  data.append(reinterpret_cast<const char*>(&n), 4);
  data.append(reinterpret_cast<const char*>(tb.data()), tb.size() * 4);
  return write_file_atomic(path, data);
}

Status read_token_bytes(const std::string& path, std::vector<int32_t>* tb) {
  std::string data;
  FRONTIER_RETURN_IF_ERROR(read_file(path, &data));
  uint32_t version = 0, n = 0;
  if (data.size() < 16 || std::memcmp(data.data(), kTokenBytesMagic, 8) != 0)
    return Status::error("corrupt token_bytes file " + path + " (bad magic; re-run `frontier prepare`)");
  std::memcpy(&version, data.data() + 8, 4);
  std::memcpy(&n, data.data() + 12, 4);
  if (version != 1 || n == 0 || data.size() != 16 + static_cast<size_t>(n) * 4)  // n = 0: no vocabulary at all
    return Status::error("corrupt token_bytes file " + path + " (bad version or size; re-run `frontier prepare`)");
  tb->resize(n);
  std::memcpy(tb->data(), data.data() + 16, static_cast<size_t>(n) * 4);
  return ok_status();
}

}  // namespace frontier

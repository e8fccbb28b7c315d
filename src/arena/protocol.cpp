#include "arena/protocol.h"

#include <cstring>

namespace frontier {

namespace {

void put_u32(std::string* s, uint32_t v) { s->append(reinterpret_cast<const char*>(&v), 4); }  // x86: little-endian

}  // namespace

std::string encode_requests(const std::vector<std::vector<uint32_t>>& seqs) {
  std::string s;
  for (const auto& q : seqs) {
    put_u32(&s, static_cast<uint32_t>(q.size()));
    s.append(reinterpret_cast<const char*>(q.data()), q.size() * 4);
  }
  return s;
}

Status read_request(FILE* in, std::vector<uint32_t>* tokens, bool* eof) {
  uint32_t n = 0;
  size_t got = std::fread(&n, 1, 4, in);
  *eof = got == 0;
  if (*eof) return ok_status();
  if (got != 4) return Status::error("protocol: a request header was cut short (" + std::to_string(got) + " of 4 bytes)");
  tokens->resize(n);
  if (n && std::fread(tokens->data(), 4, n, in) != n)
    return Status::error("protocol: a request of " + std::to_string(n) + " tokens was cut short");
  return ok_status();
}

Status write_header(FILE* out, const ServedHeader& h) {
  if (std::fwrite(kLogprobMagic, 1, 8, out) != 8 || std::fwrite(&h.vocab_size, 4, 1, out) != 1 ||
      std::fwrite(&h.max_len, 4, 1, out) != 1)
    return Status::error("protocol: cannot write the header to stdout");
  return ok_status();
}

Status write_response(FILE* out, uint32_t n, uint32_t vocab, const float* logp) {
  if (std::fwrite(&n, 4, 1, out) != 1 ||
      std::fwrite(logp, sizeof(float), size_t(n) * vocab, out) != size_t(n) * vocab)
    return Status::error("protocol: cannot write a response to stdout (the reader went away?)");
  return ok_status();
}

Status parse_responses(const uint8_t* data, size_t size, const std::vector<size_t>& lens, ServedResponses* out) {
  out->rows.clear();
  if (size < 16 || std::memcmp(data, kLogprobMagic, 8) != 0)
    return Status::error("the server's output does not start with the protocol header \"FLPROB01\" (" +
                         std::to_string(size) + " bytes; is it `serve-logprobs`?)");
  std::memcpy(&out->header.vocab_size, data + 8, 4);
  std::memcpy(&out->header.max_len, data + 12, 4);
  const size_t V = out->header.vocab_size;
  if (V == 0) return Status::error("the server declares vocab_size 0");
  size_t pos = 16;
  for (size_t r = 0; r < lens.size(); r++) {
    uint32_t n = 0;
    if (size - pos < 4)
      return Status::error("the server answered " + std::to_string(r) + " of " + std::to_string(lens.size()) +
                           " requests, then stopped");
    std::memcpy(&n, data + pos, 4);
    pos += 4;
    if (n != lens[r])
      return Status::error("response " + std::to_string(r) + " has " + std::to_string(n) + " rows for a request of " +
                           std::to_string(lens[r]) + " tokens");
    const size_t bytes = size_t(n) * V * 4;
    if (size - pos < bytes)
      return Status::error("response " + std::to_string(r) + " is cut short (" + std::to_string(size - pos) + " of " +
                           std::to_string(bytes) + " bytes)");
    out->rows.push_back(reinterpret_cast<const float*>(data + pos));  // 4-byte aligned: every field is 4 bytes
    pos += bytes;
  }
  if (pos != size)
    return Status::error("the server wrote " + std::to_string(size - pos) + " bytes after the last response");
  return ok_status();
}

}  // namespace frontier

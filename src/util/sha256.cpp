#include "util/sha256.h"

#include <openssl/evp.h>

#include <cstdio>
#include <vector>

namespace frontier {

Sha256::Sha256() {
  EVP_MD_CTX* c = EVP_MD_CTX_new();
  FRONTIER_CHECK(c && EVP_DigestInit_ex(c, EVP_sha256(), nullptr) == 1);
  ctx_ = c;
}
Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }

void Sha256::update(const void* data, size_t n) {
  FRONTIER_CHECK(EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data, n) == 1);
}

std::string Sha256::hex_digest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  FRONTIER_CHECK(EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), md, &len) == 1);
  static const char* hx = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; i++) {
    out.push_back(hx[md[i] >> 4]);
    out.push_back(hx[md[i] & 15]);
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.hex_digest();
}

Status sha256_file(const std::string& path, std::string* hex, uint64_t* bytes) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return Status::error("cannot open " + path + " to hash it");
  Sha256 h;
  std::vector<char> buf(1 << 20);
  size_t n;
  uint64_t total = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) {
    h.update(buf.data(), n);
    total += n;
  }
  bool bad = std::ferror(f);
  std::fclose(f);
  if (bad) return Status::error("read error while hashing " + path);
  *hex = h.hex_digest();
  if (bytes) *bytes = total;
  return ok_status();
}

}  // namespace frontier

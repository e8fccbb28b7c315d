// SHA-256 (OpenSSL libcrypto), as lowercase hex. Used by the manifest of every prepared dataset.
#pragma once

#include <string>
#include <string_view>

#include "util/status.h"

namespace frontier {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t n);
  void update(std::string_view s) { update(s.data(), s.size()); }
  std::string hex_digest();  // finalises; the object must not be updated afterwards

 private:
  void* ctx_;
};

std::string sha256_hex(std::string_view data);
Status sha256_file(const std::string& path, std::string* hex, uint64_t* bytes = nullptr);

}  // namespace frontier

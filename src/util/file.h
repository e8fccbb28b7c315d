// Files: whole-file reads, atomic writes (write to "<path>.tmp", fsync, rename) and read-only memory maps.
// Every file Frontier writes goes through write_file_atomic or AtomicFile, so an interrupted run never leaves a
// half-written file under its final name.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "util/status.h"

namespace frontier {

Status read_file(const std::string& path, std::string* out);
Status write_file_atomic(const std::string& path, std::string_view data);
bool file_exists(const std::string& path);
// knob: what the user changes to pick another place ("train.run_dir", "--out"), named in the error.
Status make_dirs(const std::string& path, const std::string& knob = "");

// Streams a large file to "<path>.tmp"; commit() flushes, fsyncs and renames it into place. Destroying an
// uncommitted AtomicFile removes the temporary.
class AtomicFile {
 public:
  AtomicFile() = default;
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  Status open(const std::string& path);
  Status write(const void* data, size_t n);
  Status commit();

 private:
  std::string path_, tmp_;
  FILE* f_ = nullptr;
};

// A read-only mapping of a whole file. Empty files map to data() == nullptr, size() == 0.
class MappedFile {
 public:
  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& o) noexcept;
  MappedFile& operator=(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  Status open(const std::string& path);
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void reset();
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace frontier

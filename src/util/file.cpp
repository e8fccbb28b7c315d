#include "util/file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace frontier {

static std::string errno_text() { return std::strerror(errno); }

Status read_file(const std::string& path, std::string* out) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return Status::error("cannot open " + path + ": " + errno_text());
  out->clear();
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out->append(buf, n);
  bool bad = std::ferror(f);
  std::fclose(f);
  if (bad) return Status::error("read error on " + path);
  return ok_status();
}

Status write_file_atomic(const std::string& path, std::string_view data) {
  AtomicFile f;
  FRONTIER_RETURN_IF_ERROR(f.open(path));
  FRONTIER_RETURN_IF_ERROR(f.write(data.data(), data.size()));
  return f.commit();
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

Status make_dirs(const std::string& path, const std::string& knob) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec)
    return Status::error("cannot create directory " + path + ": " + ec.message() +
                         (knob.empty() ? std::string() : " (choose a writable " + knob + ")"));
  return ok_status();
}

AtomicFile::~AtomicFile() {
  if (f_) {
    std::fclose(f_);
    std::remove(tmp_.c_str());
  }
}

Status AtomicFile::open(const std::string& path) {
  path_ = path;
  tmp_ = path + ".tmp";
  f_ = std::fopen(tmp_.c_str(), "wb");
  if (!f_) return Status::error("cannot write " + tmp_ + ": " + errno_text() + " (is the directory writable?)");
  return ok_status();
}

Status AtomicFile::write(const void* data, size_t n) {
  FRONTIER_CHECK(f_ != nullptr);
  if (n && std::fwrite(data, 1, n, f_) != n) return Status::error("write failed on " + tmp_ + ": " + errno_text());
  return ok_status();
}

Status AtomicFile::commit() {
  FRONTIER_CHECK(f_ != nullptr);
  bool ok = std::fflush(f_) == 0 && ::fsync(fileno(f_)) == 0;
  ok = (std::fclose(f_) == 0) && ok;
  f_ = nullptr;
  if (!ok) {
    std::remove(tmp_.c_str());
    return Status::error("write failed on " + tmp_ + ": " + errno_text() + " (disk full?)");
  }
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    std::remove(tmp_.c_str());
    return Status::error("cannot rename " + tmp_ + " to " + path_ + ": " + errno_text());
  }
  return ok_status();
}

MappedFile::~MappedFile() { reset(); }
MappedFile::MappedFile(MappedFile&& o) noexcept : data_(o.data_), size_(o.size_) {
  o.data_ = nullptr;
  o.size_ = 0;
}
MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    reset();
    data_ = o.data_;
    size_ = o.size_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

void MappedFile::reset() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

Status MappedFile::open(const std::string& path) {
  reset();
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return Status::error("cannot open " + path + ": " + errno_text());
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    return Status::error("cannot stat " + path + ": " + errno_text());
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      size_ = 0;
      return Status::error("cannot map " + path + ": " + errno_text());
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
  return ok_status();
}

}  // namespace frontier

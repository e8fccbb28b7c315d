#include "data/corpus.h"

#include <glob.h>
#include <sys/stat.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "data/parquet.h"
#include "util/utf8.h"

namespace fs = std::filesystem;

namespace frontier {

namespace {

enum class Format { kText, kJsonl, kJsonlZst, kParquet, kUnknown };

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Format format_of(const std::string& path) {
  if (ends_with(path, ".jsonl.zst")) return Format::kJsonlZst;
  if (ends_with(path, ".jsonl")) return Format::kJsonl;
  if (ends_with(path, ".txt")) return Format::kText;
  if (ends_with(path, ".parquet")) return Format::kParquet;
  return Format::kUnknown;
}

// Byte stream over a plain or zstd-compressed file, read in chunks.
class ByteStream {
 public:
  ~ByteStream() {
    if (f_) std::fclose(f_);
    if (z_) ZSTD_freeDStream(z_);
  }
  Status open(const std::string& path, bool zstd) {
    path_ = path;
    f_ = std::fopen(path.c_str(), "rb");
    if (!f_) return Status::error("cannot open " + path);
    if (zstd) {
      z_ = ZSTD_createDStream();
      ZSTD_initDStream(z_);
      in_buf_.resize(ZSTD_DStreamInSize());
    }
    return ok_status();
  }
  // Appends up to ~1 MiB to *out; *eof when the file is exhausted.
  Status read(std::string* out, bool* eof, uint64_t* raw_bytes) {
    *eof = false;
    char buf[1 << 20];
    if (!z_) {
      size_t n = std::fread(buf, 1, sizeof(buf), f_);
      *raw_bytes += n;
      if (n == 0) {
        if (std::ferror(f_)) return Status::error("read error on " + path_);
        *eof = true;
      }
      out->append(buf, n);
      return ok_status();
    }
    while (true) {
      if (in_.pos == in_.size) {
        size_t n = std::fread(in_buf_.data(), 1, in_buf_.size(), f_);
        *raw_bytes += n;
        if (n == 0) {
          if (std::ferror(f_)) return Status::error("read error on " + path_);
          if (last_ret_ != 0)
            return Status::error(path_ + ": truncated zstd stream (the file is incomplete; re-download or "
                                 "re-compress it)");
          *eof = true;
          return ok_status();
        }
        in_ = {in_buf_.data(), n, 0};
      }
      ZSTD_outBuffer ob = {buf, sizeof(buf), 0};
      size_t r = ZSTD_decompressStream(z_, &ob, &in_);
      if (ZSTD_isError(r))
        return Status::error(path_ + ": corrupt zstd data (" + ZSTD_getErrorName(r) + ")");
      last_ret_ = r;
      out->append(buf, ob.pos);
      if (ob.pos > 0) return ok_status();
    }
  }

 private:
  std::string path_;
  FILE* f_ = nullptr;
  ZSTD_DStream* z_ = nullptr;
  std::vector<char> in_buf_;
  ZSTD_inBuffer in_ = {nullptr, 0, 0};
  size_t last_ret_ = 0;
};

// U+FFFD characters in valid UTF-8 text.
size_t count_replacements(const std::string& s) {
  size_t n = 0;
  for (size_t p = s.find("\xEF\xBF\xBD"); p != std::string::npos; p = s.find("\xEF\xBF\xBD", p + 3)) n++;
  return n;
}

class FileListSource : public DocumentSource {
 public:
  FileListSource(std::vector<std::string> files, Utf8Policy policy, uint64_t total, std::string field)
      : files_(std::move(files)), policy_(policy), total_(total), field_(std::move(field)) {}

  uint64_t bytes_done() const override { return done_; }
  uint64_t bytes_total() const override { return total_; }
  uint64_t docs_repaired() const override { return repaired_; }
  uint64_t nulls_skipped() const override { return nulls_ + (parquet_ ? parquet_->nulls() : 0); }
  std::string where() const override {
    if (fmt_ == Format::kParquet) return path_ + ": row " + std::to_string(row_) + " of column '" + field_ + "'";
    if (fmt_ == Format::kText) return path_;
    return path_ + ":" + std::to_string(line_);
  }

  Status next(std::string* doc, bool* eof) override {
    while (true) {
      if (!stream_ && !parquet_) {
        if (next_file_ >= files_.size()) {
          *eof = true;
          return ok_status();
        }
        path_ = files_[next_file_++];
        fmt_ = format_of(path_);
        if (fmt_ == Format::kParquet) {
          parquet_ = std::make_unique<ParquetReader>();
          parquet_done_ = 0;
          FRONTIER_RETURN_IF_ERROR(parquet_->open(path_, field_));
          continue;
        }
        stream_ = std::make_unique<ByteStream>();
        FRONTIER_RETURN_IF_ERROR(stream_->open(path_, fmt_ == Format::kJsonlZst));
        buf_.clear();
        pos_ = 0;
        line_ = 0;
        file_eof_ = false;
      }
      if (fmt_ == Format::kParquet) {
        bool e = false;
        FRONTIER_RETURN_IF_ERROR(parquet_->next(doc, &e));
        done_ += parquet_->bytes_read() - parquet_done_;
        parquet_done_ = parquet_->bytes_read();
        if (e) {
          nulls_ += parquet_->nulls();
          parquet_.reset();
          continue;
        }
        row_ = parquet_->row();
        FRONTIER_RETURN_IF_ERROR(no_nul(*doc, where()));
        FRONTIER_RETURN_IF_ERROR(
            fix_utf8(doc, path_ + ": row " + std::to_string(row_) + " of column '" + field_ + "'"));
        if (doc->empty()) continue;
        *eof = false;
        return ok_status();
      }
      if (fmt_ == Format::kText) {  // the whole file is one document
        doc->clear();
        bool e = false;
        while (!e) FRONTIER_RETURN_IF_ERROR(stream_->read(doc, &e, &done_));
        size_t nul = doc->find('\0');
        if (nul != std::string::npos)
          return Status::error(path_ + ": binary data (a NUL byte at byte " + std::to_string(nul) +
                               "), not text: a .txt input must be UTF-8 text");
        FRONTIER_RETURN_IF_ERROR(fix_utf8(doc, path_));
        stream_.reset();
        if (doc->empty()) continue;
        *eof = false;
        return ok_status();
      }
      bool got = false;
      FRONTIER_RETURN_IF_ERROR(next_jsonl(doc, &got));
      if (got) {
        if (doc->empty()) continue;
        *eof = false;
        return ok_status();
      }
      stream_.reset();
    }
  }

 private:
  // Binary input is an error under either policy, not a warning: text never holds a NUL byte (checked by the
  // callers: a .txt file whole, a JSON line raw), and replace is for stray bytes in real text (a cut multi-byte
  // character, a Latin-1 byte here and there). When more than 1% of a document's bytes are invalid, and at least
  // kMaxReplaced sequences, it is not UTF-8 text at all (binary with no NUL, or another encoding): tokenizing the
  // U+FFFD it would become trains the tokenizer and the model on noise that looks like data. The floor keeps a
  // short document with one or two bad bytes repairable.
  static constexpr size_t kMaxReplaced = 16;

  // One rule for U+0000 in every reader (docs/formats.md "U+0000"): a document never holds it, under either
  // --invalid-utf8 policy. A raw NUL byte in a .txt file or a JSON line is binary data (next() and next_jsonl() say
  // so); a NUL that arrives decoded, as a "\u0000" escape in a JSON string or a byte of a Parquet value, is refused
  // here with the same reasoning: it is not text a model should learn (a C string ends there), and dropping it
  // silently would change the document.
  static Status no_nul(const std::string& text, const std::string& where) {
    const size_t nul = text.find('\0');
    if (nul == std::string::npos) return ok_status();
    return Status::error(where + ": U+0000 (a NUL character) at byte " + std::to_string(nul) +
                         " of the text: documents must not hold NUL in any input format (remove it from the input)");
  }

  Status fix_utf8(std::string* s, const std::string& where) {
    size_t bad = utf8_first_invalid(*s);
    if (bad == std::string::npos) return ok_status();
    if (policy_ == Utf8Policy::kReplace) {
      std::string fixed = utf8_replace_invalid(*s);
      const size_t replaced = count_replacements(fixed) - count_replacements(*s);
      if (replaced >= kMaxReplaced && replaced * 100 > s->size()) {
        char pct[32];
        std::snprintf(pct, sizeof(pct), "%.1f%%", 100.0 * replaced / s->size());
        return Status::error(where + ": not UTF-8 text (" + std::to_string(replaced) + " invalid sequences in " +
                             std::to_string(s->size()) + " bytes, " + pct + "; the first at byte " +
                             std::to_string(bad) + "): --invalid-utf8=replace repairs stray bytes, not binary files "
                             "or other encodings (convert it to UTF-8, e.g. iconv -f latin1 -t utf-8)");
      }
      *s = std::move(fixed);
      repaired_++;
      return ok_status();
    }
    return Status::error(where + ": invalid UTF-8 at byte " + std::to_string(bad) +
                         " (fix the file, or pass --invalid-utf8=replace to substitute U+FFFD)");
  }

  Status next_jsonl(std::string* doc, bool* got) {
    while (true) {
      size_t nl = buf_.find('\n', pos_);
      if (nl == std::string::npos && !file_eof_) {
        buf_.erase(0, pos_);
        pos_ = 0;
        FRONTIER_RETURN_IF_ERROR(stream_->read(&buf_, &file_eof_, &done_));
        continue;
      }
      if (nl == std::string::npos && pos_ >= buf_.size()) {
        *got = false;
        return ok_status();
      }
      size_t end = nl == std::string::npos ? buf_.size() : nl;
      std::string line = buf_.substr(pos_, end - pos_);
      pos_ = end + 1;
      line_++;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.find_first_not_of(" \t") == std::string::npos) continue;  // blank lines are allowed
      std::string where = path_ + ":" + std::to_string(line_);
      size_t nul = line.find('\0');
      if (nul != std::string::npos)
        return Status::error(where + ": binary data (a NUL byte at byte " + std::to_string(nul) +
                             " of the line), not JSON Lines text");
      FRONTIER_RETURN_IF_ERROR(fix_utf8(&line, where));
      nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (j.is_discarded() || !j.is_object())
        return Status::error(where + ": not a JSON object (each line of a .jsonl file must be one object with a \"" +
                             field_ + "\" field)");
      auto it = j.find(field_);
      if (it == j.end())
        return Status::error(where + ": no \"" + field_ + "\" field (each JSON line needs a \"" + field_ +
                             "\" string; other fields are ignored)");
      if (!it->is_string()) return Status::error(where + ": \"" + field_ + "\" is not a string");
      *doc = it->get<std::string>();
      FRONTIER_RETURN_IF_ERROR(no_nul(*doc, where));  // "\u0000" in the JSON string
      *got = true;
      return ok_status();
    }
  }

  std::vector<std::string> files_;
  Utf8Policy policy_;
  uint64_t total_, done_ = 0, repaired_ = 0, nulls_ = 0, parquet_done_ = 0;
  std::string field_;  // the JSON field / Parquet column holding the text
  size_t next_file_ = 0;
  std::unique_ptr<ByteStream> stream_;
  std::unique_ptr<ParquetReader> parquet_;
  std::string path_, buf_;
  Format fmt_ = Format::kUnknown;
  size_t pos_ = 0;
  uint64_t line_ = 0, row_ = 0;  // of the last document returned: JSON line, Parquet row
  bool file_eof_ = false;
};

}  // namespace

Status expand_inputs(const std::vector<std::string>& specs, std::vector<std::string>* files) {
  files->clear();
  for (const auto& spec : specs) {
    std::vector<std::string> found;
    std::error_code ec;
    if (fs::is_directory(spec, ec)) {
      for (auto it = fs::recursive_directory_iterator(spec, ec); !ec && it != fs::recursive_directory_iterator();
           it.increment(ec)) {
        if (it->is_regular_file() && format_of(it->path().string()) != Format::kUnknown)
          found.push_back(it->path().string());
      }
    } else if (fs::exists(spec, ec)) {
      if (format_of(spec) == Format::kUnknown)
        return Status::error("unknown input format: " + spec + " (expected .txt, .jsonl, .jsonl.zst or .parquet)");
      found.push_back(spec);
    } else if (spec.find_first_of("*?[") != std::string::npos) {
      glob_t g;
      if (::glob(spec.c_str(), 0, nullptr, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc; i++)
          if (format_of(g.gl_pathv[i]) != Format::kUnknown) found.push_back(g.gl_pathv[i]);
      }
      globfree(&g);
    } else {
      // exists() is false for a link that cannot be followed; say which kind, not "not found".
      struct stat st;
      if (::stat(spec.c_str(), &st) != 0 && errno == ELOOP)
        return Status::error("input " + spec + " is a symbolic link loop (too many levels of symbolic links; fix or "
                             "remove the link)");
      if (::lstat(spec.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
        return Status::error("input " + spec + " is a broken symbolic link (its target does not exist)");
      return Status::error("input not found: " + spec + " (check the path)");
    }
    if (found.empty())
      return Status::error("no .txt, .jsonl, .jsonl.zst or .parquet files in " + spec +
                           " (check the path or pattern)");
    std::sort(found.begin(), found.end());
    files->insert(files->end(), found.begin(), found.end());
  }
  // De-duplicate, keeping the first occurrence's position.
  std::vector<std::string> uniq;
  for (auto& f : *files)
    if (std::find(uniq.begin(), uniq.end(), f) == uniq.end()) uniq.push_back(f);
  *files = std::move(uniq);
  return ok_status();
}

Status open_files(const std::vector<std::string>& files, Utf8Policy policy, std::unique_ptr<DocumentSource>* out,
                  const std::string& text_column) {
  uint64_t total = 0;
  for (const auto& f : files) {
    std::error_code ec;
    auto sz = fs::file_size(f, ec);
    if (ec) return Status::error("cannot read " + f + ": " + ec.message());
    total += sz;
  }
  if (text_column.empty()) return Status::error("--text-column must not be empty");
  *out = std::make_unique<FileListSource>(files, policy, total, text_column);
  return ok_status();
}

}  // namespace frontier

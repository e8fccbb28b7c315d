#include "data/loader.h"

#include <algorithm>
#include <filesystem>

#include "util/rng.h"

namespace fs = std::filesystem;

namespace frontier {

nlohmann::json LoaderState::to_json() const {
  return {{"epoch", epoch}, {"cursor", cursor}, {"buffer", buffer}};
}

Status LoaderState::from_json(const nlohmann::json& j, LoaderState* out) {
  if (!j.is_object() || !j.contains("epoch") || !j.contains("cursor") || !j.contains("buffer"))
    return Status::error("loader state needs epoch, cursor and buffer");
  // It comes from a checkpoint's metadata: get<> would throw on a field of another type.
  bool counts = j["epoch"].is_number_unsigned() && j["cursor"].is_number_unsigned() && j["buffer"].is_array();
  if (counts)
    for (const auto& d : j["buffer"]) counts = counts && d.is_number_unsigned();
  if (!counts)
    return Status::error("the checkpoint's loader state is corrupt: epoch, cursor and every buffer entry must be "
                         "counts (>= 0)");
  out->epoch = j["epoch"].get<uint64_t>();
  out->cursor = j["cursor"].get<uint64_t>();
  out->buffer = j["buffer"].get<std::vector<uint64_t>>();
  return ok_status();
}

Status BestFitLoader::init(const std::vector<Shard>& shards, const LoaderConfig& cfg) {
  if (cfg.B <= 0 || cfg.T <= 0) return Status::error("loader needs B > 0 and T > 0");
  if (cfg.world <= 0 || cfg.rank < 0 || cfg.rank >= cfg.world)
    return Status::error("loader rank " + std::to_string(cfg.rank) + " is outside world size " +
                         std::to_string(cfg.world));
  if (cfg.buffer_size <= 0 || cfg.doc_batch <= 0) return Status::error("loader needs buffer_size, doc_batch > 0");
  shards_ = &shards;
  cfg_ = cfg;
  doc_start_.assign(1, 0);
  for (const auto& s : shards) doc_start_.push_back(doc_start_.back() + s.n_docs());
  if (n_docs() == 0) return Status::error("loader has no documents");
  uint64_t tokens = 0;
  for (const auto& s : shards) tokens += s.n_tokens();
  const uint64_t need = static_cast<uint64_t>(cfg.B) * (static_cast<uint64_t>(cfg.T) + 1);
  if (cfg.min_one_batch && tokens < need) {
    // Shards are <split>_NNN.bin in a prepared directory: name the split and where it is.
    fs::path first(shards.front().path());
    std::string name = first.filename().string(), split = name.substr(0, name.rfind('_'));
    return Status::error("the " + split + " split (" + first.parent_path().string() + "/" + split + "_*.bin) has " +
                         std::to_string(tokens) + " tokens in " + std::to_string(n_docs()) +
                         " documents, fewer than one batch of B x (T+1) = " + std::to_string(cfg.B) + " x " +
                         std::to_string(cfg.T + 1) + " = " + std::to_string(need) +
                         ": every batch would repeat them. Lower " + cfg.knobs + ", or give the split more text");
  }
  n_batches_ = (n_docs() + cfg.doc_batch - 1) / cfg.doc_batch;
  if (n_batches_ < static_cast<uint64_t>(cfg.world))
    return Status::error("only " + std::to_string(n_batches_) + " document batches for " +
                         std::to_string(cfg.world) + " ranks (use fewer ranks or a smaller doc_batch)");
  row_.resize(static_cast<size_t>(cfg.T) + 1);
  epoch_ = 0;
  cursor_ = 0;
  buffer_.clear();
  buffer_len_.clear();
  start_epoch();
  return ok_status();
}

void BestFitLoader::start_epoch() {
  order_.resize(n_batches_);
  for (uint64_t i = 0; i < n_batches_; i++) order_[i] = i;
  if (cfg_.shuffle) {
    Rng rng{cfg_.seed * 0x2545F4914F6CDD1Dull + epoch_ + 1};
    for (uint64_t i = n_batches_ - 1; i > 0; i--) std::swap(order_[i], order_[rng.next() % (i + 1)]);
  }
}

uint32_t BestFitLoader::doc_len(uint64_t doc) const {
  size_t s = std::upper_bound(doc_start_.begin(), doc_start_.end(), doc) - doc_start_.begin() - 1;
  return static_cast<uint32_t>((*shards_)[s].doc_len(doc - doc_start_[s]));
}

void BestFitLoader::copy_doc(uint64_t doc, uint64_t n, int32_t* dst) const {
  size_t s = std::upper_bound(doc_start_.begin(), doc_start_.end(), doc) - doc_start_.begin() - 1;
  const Shard& sh = (*shards_)[s];
  sh.copy_tokens(sh.doc_begin(doc - doc_start_[s]), n, dst);
}

double BestFitLoader::epochs_read() const {
  const uint64_t per_rank = (n_batches_ - cfg_.rank + cfg_.world - 1) / cfg_.world;
  uint64_t mine = 0, read = 0;  // this rank's documents per epoch; those of this epoch read into the buffer
  for (uint64_t c = 0; c < per_rank; c++) {
    const uint64_t b = order_[c * cfg_.world + cfg_.rank];
    const uint64_t n = std::min(n_docs(), (b + 1) * cfg_.doc_batch) - b * cfg_.doc_batch;
    mine += n;
    if (c < cursor_) read += n;
  }
  if (mine == 0) return 0;
  const double taken = static_cast<double>(epoch_ * mine + read) - static_cast<double>(buffer_.size());
  return std::max(0.0, taken) / static_cast<double>(mine);
}

void BestFitLoader::refill() {
  uint64_t per_rank = (n_batches_ - cfg_.rank + cfg_.world - 1) / cfg_.world;
  if (cursor_ >= per_rank) {
    epoch_++;
    cursor_ = 0;
    start_epoch();
  }
  uint64_t batch = order_[cursor_ * cfg_.world + cfg_.rank];
  cursor_++;
  uint64_t lo = batch * cfg_.doc_batch, hi = std::min(n_docs(), lo + cfg_.doc_batch);
  for (uint64_t d = lo; d < hi; d++) {
    buffer_.push_back(d);
    buffer_len_.push_back(doc_len(d));
  }
}

void BestFitLoader::next(int32_t* inputs, int32_t* targets) {
  const uint32_t cap = static_cast<uint32_t>(cfg_.T) + 1;
  for (int r = 0; r < cfg_.B; r++) {
    uint32_t pos = 0;
    while (pos < cap) {
      while (buffer_.size() < static_cast<size_t>(cfg_.buffer_size)) refill();
      uint32_t remaining = cap - pos;
      size_t best = SIZE_MAX;
      uint32_t best_len = 0;
      for (size_t i = 0; i < buffer_len_.size(); i++) {
        uint32_t l = buffer_len_[i];
        if (l <= remaining && l > best_len) {
          best = i;
          best_len = l;
        }
      }
      uint32_t take;
      if (best != SIZE_MAX) {
        take = best_len;
      } else {
        best = std::min_element(buffer_len_.begin(), buffer_len_.end()) - buffer_len_.begin();
        take = remaining;
        cropped_ += buffer_len_[best] - remaining;
      }
      copy_doc(buffer_[best], take, row_.data() + pos);
      pos += take;
      buffer_.erase(buffer_.begin() + static_cast<ptrdiff_t>(best));
      buffer_len_.erase(buffer_len_.begin() + static_cast<ptrdiff_t>(best));
    }
    std::copy(row_.begin(), row_.end() - 1, inputs + static_cast<size_t>(r) * cfg_.T);
    std::copy(row_.begin() + 1, row_.end(), targets + static_cast<size_t>(r) * cfg_.T);
    emitted_ += cap;
  }
}

void BestFitLoader::set_rows(int B, int T) {
  FRONTIER_CHECK(B > 0 && T > 0);
  cfg_.B = B;
  cfg_.T = T;
  row_.resize(static_cast<size_t>(T) + 1);
}

LoaderState BestFitLoader::state() const {
  LoaderState s;
  s.epoch = epoch_;
  s.cursor = cursor_;
  s.buffer = buffer_;
  return s;
}

Status BestFitLoader::restore(const LoaderState& s) {
  uint64_t per_rank = (n_batches_ - cfg_.rank + cfg_.world - 1) / cfg_.world;
  if (s.cursor > per_rank) return Status::error("loader state cursor is past the end of the epoch (other data?)");
  for (uint64_t d : s.buffer)
    if (d >= n_docs()) return Status::error("loader state names document " + std::to_string(d) + " of " +
                                            std::to_string(n_docs()) + " (state from other data?)");
  epoch_ = s.epoch;
  cursor_ = s.cursor;
  start_epoch();
  buffer_ = s.buffer;
  buffer_len_.clear();
  for (uint64_t d : buffer_) buffer_len_.push_back(doc_len(d));
  return ok_status();
}

}  // namespace frontier

#include "train/memory.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "model/gpt.h"

namespace frontier {

std::string MemoryEstimate::describe() const {
  char buf[192];
  std::snprintf(buf, sizeof(buf), "%.2f GB = params+grads+optimizer %.2f + activations %.2f + base %.2f",
                total() / 1e9, params_bytes / 1e9, activations_bytes / 1e9, base_bytes / 1e9);
  return buf;
}

MemoryEstimate estimate_train_memory(const ModelShape& s, int64_t micro_batch, int64_t eval_batch) {
  MemoryEstimate m;
  const auto table = Gpt::param_table(s);
  const double n_params = static_cast<double>(table.back().offset + table.back().numel());
  m.params_bytes = 5.0 * 4.0 * n_params;
  const double tokens = static_cast<double>(std::max(micro_batch, eval_batch)) * s.seq_len;
  m.activations_bytes = 4.0 * tokens * (48.0 * s.depth * s.dim + 3.0 * s.vocab_size);
  m.base_bytes = 150e6;
  return m;
}

namespace {

double read_number(const std::string& path) {  // 0 when absent or "max"
  std::ifstream in(path);
  std::string v;
  if (!(in >> v) || v == "max") return 0;
  try {
    return std::stod(v);
  } catch (...) {
    return 0;
  }
}

}  // namespace

double available_memory_bytes() {
  double avail = 0;
  std::ifstream mi("/proc/meminfo");
  std::string key;
  double kb;
  std::string unit;
  while (mi >> key >> kb) {
    std::getline(mi, unit);
    if (key == "MemAvailable:") avail = kb * 1024.0;
  }
  // A container's limit can be far below the host's free memory.
  double limit = read_number("/sys/fs/cgroup/memory.max"), used = read_number("/sys/fs/cgroup/memory.current");
  if (limit <= 0) {
    limit = read_number("/sys/fs/cgroup/memory/memory.limit_in_bytes");
    used = read_number("/sys/fs/cgroup/memory/memory.usage_in_bytes");
    if (limit > 1e18) limit = 0;  // v1's "no limit" is a huge number
  }
  if (limit > 0) avail = avail > 0 ? std::min(avail, limit - used) : limit - used;
  return avail;
}

}  // namespace frontier

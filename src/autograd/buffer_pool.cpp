#include "autograd/buffer_pool.h"

#include <algorithm>

#include <cstdlib>
#include <cstring>
#include <new>
#include <map>
#include <mutex>

#include "util/status.h"

namespace frontier {

namespace {

constexpr size_t kMaxPooledBytes = size_t(8) << 30;  // beyond this, freed buffers go back to the system

struct Pool {
  std::mutex mu;
  std::multimap<size_t, float*> free;  // capacity (floats) -> buffer
  size_t bytes = 0;
};

Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: buffers may die after static destructors ran
  return *p;
}

size_t round_up(size_t n) { return (n + 15) & ~size_t(15); }

}  // namespace

PooledBuffer::PooledBuffer(size_t n, bool zero) : n_(n) {
  if (n == 0) return;
  const size_t cap = round_up(n);
  {
    Pool& P = pool();
    std::lock_guard<std::mutex> lock(P.mu);
    auto it = P.free.find(cap);
    if (it != P.free.end()) {
      p_ = it->second;
      P.free.erase(it);
      P.bytes -= cap * sizeof(float);
    }
  }
  if (!p_) {
    p_ = static_cast<float*>(std::aligned_alloc(64, cap * sizeof(float)));
    // Reachable from a config that does not fit (train() estimates and refuses those first, but the estimate is
    // approximate): std::bad_alloc reaches the CLI, which prints a one-line error naming the knobs.
    if (!p_) throw std::bad_alloc();
  }
  if (zero) zero_floats(p_, n);  // large gradient buffers: the logits' are 128 MB at the baseline
}

void zero_floats(float* p, size_t n) {
  const size_t chunk = size_t(1) << 18, chunks = (n + chunk - 1) / chunk;
#pragma omp parallel for schedule(static) if (chunks > 4)
  for (size_t c = 0; c < chunks; c++) std::memset(p + c * chunk, 0, std::min(chunk, n - c * chunk) * sizeof(float));
}

PooledBuffer::~PooledBuffer() {
  if (!p_) return;
  const size_t cap = round_up(n_);
  Pool& P = pool();
  std::lock_guard<std::mutex> lock(P.mu);
  if (P.bytes + cap * sizeof(float) > kMaxPooledBytes) {
    std::free(p_);
    return;
  }
  P.free.emplace(cap, p_);
  P.bytes += cap * sizeof(float);
}

PooledBuffer& PooledBuffer::operator=(PooledBuffer&& o) noexcept {
  if (this != &o) {
    this->~PooledBuffer();
    p_ = o.p_, n_ = o.n_;
    o.p_ = nullptr, o.n_ = 0;
  }
  return *this;
}

void buffer_pool_trim() {
  Pool& P = pool();
  std::lock_guard<std::mutex> lock(P.mu);
  for (auto& kv : P.free) std::free(kv.second);
  P.free.clear();
  P.bytes = 0;
}

}  // namespace frontier

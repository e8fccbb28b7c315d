// Reuses the tape's activation and gradient buffers across steps. A training step allocates the same sizes in the
// same order every time; fresh large allocations come from mmap and cost a page fault per 4 KiB on first touch
// (measured: ~15% of a depth-4 step), so freed buffers are kept here, by size, and handed out again.
//
//   PooledBuffer b(n);   // n floats, zero-filled, 64-byte aligned (PooledBuffer(n, false): left uninitialised)
//   float* p = b.data(); // returned to the pool when b dies
#pragma once

#include <cstddef>
#include <cstdint>

namespace frontier {

class PooledBuffer {
 public:
  PooledBuffer() = default;
  explicit PooledBuffer(size_t n, bool zero = true);  // zero-filled unless !zero (the caller writes every element)
  ~PooledBuffer();
  PooledBuffer(const PooledBuffer&) = delete;
  PooledBuffer& operator=(const PooledBuffer&) = delete;
  PooledBuffer(PooledBuffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr, o.n_ = 0; }
  PooledBuffer& operator=(PooledBuffer&& o) noexcept;
  float* data() { return p_; }
  size_t size() const { return n_; }

 private:
  float* p_ = nullptr;
  size_t n_ = 0;
};

// p[0, n) = 0 on all threads, in 1-MB chunks (one thread's memset reaches about a third of two cores' bandwidth);
// the pool's zeroed buffers and the model's gradient arena (Gpt::zero_grad) use it.
void zero_floats(float* p, size_t n);

// Frees every pooled buffer not in use (e.g. between training and a differently shaped evaluation).
void buffer_pool_trim();

}  // namespace frontier

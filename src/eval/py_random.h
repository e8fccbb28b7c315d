// Python's `random.Random`, reproduced exactly: the MT19937 generator seeded from an int as CPython does
// (init_by_array over the 32-bit words of |seed|), random(), getrandbits(), and the shuffle() and sample()
// algorithms of CPython 3.11. CORE draws its examples this way (nanochat: Random(1337).shuffle(data) and
// Random(1234 + idx).sample(other_indices, num_fewshot)), so Frontier's CORE items are nanochat's items.
//
//   PyRandom rng(1337);
//   rng.shuffle(items);                          // same permutation as random.Random(1337).shuffle(items)
//   std::vector<int> pick = PyRandom(1234 + i).sample(pool, 5);
#pragma once

#include <cmath>
#include <cstdint>
#include <unordered_set>
#include <utility>
#include <vector>

namespace frontier {

class PyRandom {
 public:
  explicit PyRandom(uint64_t seed);  // random.Random(seed) for a non-negative int seed
  uint32_t genrand_uint32();
  double random();                   // [0, 1), 53 bits
  uint64_t getrandbits(int k);       // 1 <= k <= 64
  uint64_t randbelow(uint64_t n);    // _randbelow_with_getrandbits, n >= 1

  template <typename T>
  void shuffle(std::vector<T>& x) {
    for (size_t i = x.size(); i-- > 1;) std::swap(x[i], x[randbelow(i + 1)]);
  }

  // random.sample(population, k); k <= population.size() (CHECKed by the caller's logic).
  template <typename T>
  std::vector<T> sample(const std::vector<T>& population, size_t k) {
    const size_t n = population.size();
    std::vector<T> result;
    result.reserve(k);
    size_t setsize = 21;
    if (k > 5) setsize += static_cast<size_t>(std::pow(4.0, std::ceil(std::log(k * 3.0) / std::log(4.0))));
    if (n <= setsize) {
      std::vector<T> pool(population);
      for (size_t i = 0; i < k; i++) {
        size_t j = randbelow(n - i);
        result.push_back(pool[j]);
        pool[j] = pool[n - i - 1];
      }
    } else {
      std::unordered_set<size_t> selected;
      for (size_t i = 0; i < k; i++) {
        size_t j = randbelow(n);
        while (selected.count(j)) j = randbelow(n);
        selected.insert(j);
        result.push_back(population[j]);
      }
    }
    return result;
  }

 private:
  void init_genrand(uint32_t s);
  uint32_t mt_[624];
  int mti_ = 625;
};

}  // namespace frontier

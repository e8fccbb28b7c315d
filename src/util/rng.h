// The project's one small random generator: splitmix64 (Steele, Lea and Flood 2014; xoshiro's seeder). A
// 64-bit state advanced by a fixed odd constant and mixed, so a seed gives the same stream on every machine
// and compiler (std::mt19937's distributions do not: their algorithms are the library's choice). Not for
// statistics that need long periods or independent streams: it seeds weights, shuffles, samples tokens.
//
//   Rng r{seed};                 // any 64-bit value is a valid seed, 0 included
//   uint64_t bits = r.next();    // 64 uniform bits
//   double u = r.uniform();      // [0, 1), 53 bits
//   double z = r.normal();       // N(0, 1): Box-Muller, two uniforms per normal (the sine's one is dropped)
//   size_t i = r.pick(n);        // [0, n), n >= 1
//
// The streams are part of the results: the weight init (model/gpt.cpp), the loader's shuffle, the sampler
// and research's proposals are bit-exact across runs because they draw exactly these numbers. A change to the
// mixing or to the order of draws changes every seeded result.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace frontier {

struct Rng {
  uint64_t s;  // the state; aggregate-initialised with the seed

  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return (next() >> 11) * (1.0 / 9007199254740992.0); }  // the top 53 bits over 2^53
  double normal() {
    double u1 = uniform(), u2 = uniform();
    if (u1 < 1e-300) u1 = 1e-300;  // log(0)
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  size_t pick(size_t n) { return std::min(n - 1, static_cast<size_t>(uniform() * n)); }
};

}  // namespace frontier

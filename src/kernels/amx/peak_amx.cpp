// The tile unit's peak: TDPBF16PS into 4 independent accumulator tiles (16 x 16 fp32 each) from two A and two B
// tiles of 16 x 64 bytes, as the 32 x 32 microkernel issues them, without its loads. 16 x 16 x 32 x 2 FLOPs each.
#include <immintrin.h>

#include <cstdint>
#include <cstdio>

#include "kernels/amx/tile_config.h"
#include "kernels/peak.h"

namespace frontier {

double peak_loop_amx_bf16(int64_t iters) {
  alignas(64) static const uint16_t zeros[16 * 32] = {};  // the unit's speed does not depend on the values
  _tile_loadconfig(&tier_amx::tile_config());
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, zeros, 64);
  _tile_loadd(5, zeros, 64);
  _tile_loadd(6, zeros, 64);
  _tile_loadd(7, zeros, 64);
  const int64_t rounds = iters;
  for (int64_t i = 0; i < rounds; i++) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  alignas(64) float out[16 * 16];
  _tile_stored(0, out, 64);
  if (out[0] == 12345.f) std::printf(" ");
  _tile_release();
  return static_cast<double>(rounds) * 4 * 16 * 16 * 32 * 2;
}

}  // namespace frontier

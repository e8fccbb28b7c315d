// The tile configuration both AMX files load (internal to src/kernels/amx/, compiled with that tier's flags):
// palette 1, tiles 0-7 each 16 rows x 64 bytes (a 16 x 16 fp32 accumulator, a 16 x 32 bf16 A tile, a 16-pair x 16
// bf16 B tile). LDTILECFG takes it by address; one static instance serves every thread.
#pragma once

#include <cstdint>

namespace frontier::tier_amx {

struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};

inline const TileConfig& tile_config() {
  static const TileConfig c;
  return c;
}

}  // namespace frontier::tier_amx

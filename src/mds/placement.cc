#include "mds/placement.h"

#include <string>

namespace rustfs::mds {

Result<std::vector<uint32_t>> PlaceChunk(const std::vector<uint32_t>& alive, uint32_t width,
                                         uint64_t ino, uint64_t chunk_index) {
  if (alive.size() < width)
    return Err(Unavailable("layout needs " + std::to_string(width) + " live DSS, only " +
                           std::to_string(alive.size()) + " alive"));
  // Fibonacci hashing of the inode spreads files' starting points.
  uint64_t start = (ino * 0x9E3779B97F4A7C15ull >> 32) + chunk_index;
  std::vector<uint32_t> out;
  out.reserve(width);
  for (uint32_t i = 0; i < width; i++) out.push_back(alive[(start + i) % alive.size()]);
  return out;
}

}  // namespace rustfs::mds

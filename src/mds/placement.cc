#include "mds/placement.h"

#include <algorithm>
#include <string>

#include "layout/layout.h"

namespace rustfs::mds {

Result<std::vector<uint32_t>> PlaceWrite(const std::vector<uint32_t>& writable, uint32_t width,
                                         uint32_t min_shards, uint64_t ino, uint64_t chunk_index,
                                         std::span<const uint32_t> current) {
  std::vector<uint32_t> out(width, layout::kNoDss);
  std::vector<uint32_t> used;
  auto is_used = [&](uint32_t id) { return std::find(used.begin(), used.end(), id) != used.end(); };
  if (current.size() == width)
    for (uint32_t s = 0; s < width; s++)
      if (std::binary_search(writable.begin(), writable.end(), current[s]) && !is_used(current[s]))
        used.push_back(out[s] = current[s]);
  // Fibonacci hashing of the inode spreads files' starting points.
  const uint64_t start = (ino * 0x9E3779B97F4A7C15ull >> 32) + chunk_index;
  size_t next = 0;  // position in the rotation of writable
  uint32_t placed = uint32_t(used.size());
  for (uint32_t s = 0; s < width; s++) {
    if (out[s] != layout::kNoDss) continue;
    while (next < writable.size() && is_used(writable[(start + next) % writable.size()])) next++;
    if (next == writable.size()) break;
    used.push_back(out[s] = writable[(start + next++) % writable.size()]);
    placed++;
  }
  if (placed < min_shards)
    return Err(Unavailable("a chunk of this layout needs at least " + std::to_string(min_shards) +
                           " live DSS with room, " + std::to_string(writable.size()) + " are"));
  return out;
}

}  // namespace rustfs::mds

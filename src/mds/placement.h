// Placement: which DSS holds each shard of a new chunk.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"

namespace rustfs::mds {

// Picks `width` distinct DSS ids out of `alive` (sorted ids of live DSS).
// Consecutive chunks of one file start at consecutive positions of a
// file-specific rotation, so a file's chunks (and so its reads) spread over
// every DSS instead of piling onto the first `width`.
Result<std::vector<uint32_t>> PlaceChunk(const std::vector<uint32_t>& alive, uint32_t width,
                                         uint64_t ino, uint64_t chunk_index);

}  // namespace rustfs::mds

// Placement: which DSS holds each shard of a chunk version about to be written.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"

namespace rustfs::mds {

// Servers for the `width` shard positions of a new version of chunk
// `chunk_index` of `ino`. `writable`: sorted ids of live DSS with room.
// `current`: the chunk's placement now (empty for a new chunk).
//
// A position keeps its server while that one is writable, so the server
// builds the new version from its own copy of the old one. Other positions
// take writable servers the chunk does not use yet, and layout::kNoDss
// (stored nowhere: a degraded write, rebuilt later by repair) when none is
// left; a new chunk leaves its last positions (parity) empty first, so reads
// of a degraded chunk still need no decoding. Unavailable when fewer than
// `min_shards` positions get a server.
//
// Consecutive chunks of one file start at consecutive positions of a
// file-specific rotation, so a file's chunks (and its reads) spread over
// every DSS instead of piling onto the first `width`.
Result<std::vector<uint32_t>> PlaceWrite(const std::vector<uint32_t>& writable, uint32_t width,
                                         uint32_t min_shards, uint64_t ino, uint64_t chunk_index,
                                         std::span<const uint32_t> current = {});

// A new chunk on `width` distinct servers out of `alive`, all of them.
inline Result<std::vector<uint32_t>> PlaceChunk(const std::vector<uint32_t>& alive, uint32_t width,
                                                uint64_t ino, uint64_t chunk_index) {
  return PlaceWrite(alive, width, width, ino, chunk_index);
}

}  // namespace rustfs::mds

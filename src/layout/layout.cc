#include "layout/layout.h"

#include <algorithm>
#include <cassert>
#include <cstdint>

namespace rustfs::layout {

std::vector<ChunkSlice> SplitFileRange(uint64_t chunk_size, uint64_t offset, uint64_t length) {
  assert(chunk_size > 0);
  std::vector<ChunkSlice> slices;
  if (length == 0) return slices;
  // Exact count up front: the caller usually issues one request per slice, and
  // a reserve avoids regrowth on large multi-chunk reads.
  // A range running past the last byte offset is cut there: a wrapped end
  // would make the count below, and the loop, nonsense.
  const uint64_t end = length > UINT64_MAX - offset ? UINT64_MAX : offset + length;
  slices.reserve((end - 1) / chunk_size - offset / chunk_size + 1);
  uint64_t pos = offset;
  while (pos < end) {
    const uint64_t index = pos / chunk_size;
    const uint64_t in_chunk = pos % chunk_size;
    const uint64_t n = std::min(chunk_size - in_chunk, end - pos);
    slices.push_back(ChunkSlice{index, in_chunk, n, pos - offset});
    pos += n;
  }
  return slices;
}

std::vector<ShardPiece> MapChunkRange(const EcGeometry& g, uint64_t offset, uint64_t length) {
  assert(g.k > 0 && g.stripe_unit > 0);
  assert(offset + length <= g.chunk_size);
  std::vector<ShardPiece> pieces;
  if (length == 0) return pieces;
  const uint64_t s = g.stripe_unit;
  const uint64_t end = offset + length;
  pieces.reserve((end - 1) / s - offset / s + 1);
  uint64_t pos = offset;
  while (pos < end) {
    const uint64_t unit = pos / s;  // stripe unit index within the chunk
    const uint64_t in_unit = pos % s;
    const uint64_t n = std::min(s - in_unit, end - pos);
    pieces.push_back(ShardPiece{static_cast<uint32_t>(unit % g.k), (unit / g.k) * s + in_unit,
                                n, pos - offset});
    pos += n;
  }
  return pieces;
}

std::vector<ShardRead> MergeShardPieces(std::vector<ShardPiece> pieces) {
  // Stable so that pieces at the same shard offset keep the caller's order
  // inside a read (deterministic output for identical inputs).
  std::stable_sort(pieces.begin(), pieces.end(), [](const ShardPiece& a, const ShardPiece& b) {
    if (a.shard != b.shard) return a.shard < b.shard;
    return a.shard_offset < b.shard_offset;
  });
  std::vector<ShardRead> reads;
  for (const ShardPiece& p : pieces) {
    // Overlapping pieces (not produced by MapChunkRange, but legal input) are
    // folded in too, so one byte is never read twice.
    if (!reads.empty() && reads.back().shard == p.shard &&
        p.shard_offset <= reads.back().shard_offset + reads.back().length) {
      ShardRead& r = reads.back();
      r.length = std::max(r.shard_offset + r.length, p.shard_offset + p.length) - r.shard_offset;
      r.pieces.push_back(p);
      continue;
    }
    reads.push_back(ShardRead{p.shard, p.shard_offset, p.length, {p}});
  }
  return reads;
}

RowRange RowsOf(const EcGeometry& g, uint64_t offset, uint64_t length) {
  assert(length > 0);
  const uint64_t rb = g.row_bytes();
  return RowRange{offset / rb, (offset + length - 1) / rb};
}

uint64_t RowsForBytes(const EcGeometry& g, uint64_t bytes) {
  const uint64_t rb = g.row_bytes();
  return bytes / rb + (bytes % rb != 0 ? 1 : 0);
}

AlignedRange AlignOut(uint64_t offset, uint64_t length, uint64_t block) {
  assert(block != 0 && (block & (block - 1)) == 0);
  const uint64_t mask = block - 1;
  const uint64_t start = offset & ~mask;
  // An empty range stays empty: widening it would make callers read a block
  // they never asked for.
  if (length == 0) return AlignedRange{start, 0};
  const uint64_t end = (offset + length + mask) & ~mask;
  return AlignedRange{start, end - start};
}

}  // namespace rustfs::layout

// Layout math: where the bytes of a file live. Pure functions, no I/O.
//
// A file is cut into chunks of `chunk_size` bytes. An erasure-coded chunk is
// striped RAID-0 style over K data shards in stripe units of S bytes, and M
// parity shards hold Reed-Solomon parity row by row (LLD-002 §2.1):
//
//   byte b of a chunk -> data shard (b / S) % K,
//                        shard offset (b / (S*K)) * S + b % S
//
// A "row" r is the r-th stripe unit of every shard: data bytes
// [r*S*K, (r+1)*S*K) of the chunk, plus S bytes of each parity shard at
// shard offset r*S. Parity of row r depends only on row r's data, which is
// what lets a degraded read or an overwrite touch only the rows it needs.
#pragma once

#include <cstdint>
#include <vector>

namespace rustfs::layout {

// The server of a chunk-map position whose shard is stored nowhere: the
// version was written degraded (too few servers could take it) or the shard
// was lost, until repair rebuilds it. Readers treat it as a down server.
inline constexpr uint32_t kNoDss = 0xFFFFFFFFu;

// The largest file size, and so the end of any byte range written into a
// file: what off_t (stat's st_size, lseek, the C API's rustfs_size) holds,
// and the kernel's own limit for a FUSE file (MAX_LFS_FILESIZE).
inline constexpr uint64_t kMaxFileSize = 0x7FFFFFFFFFFFFFFFull;  // 2^63 - 1

// Whether [offset, offset + len) ends at or before kMaxFileSize.
inline constexpr bool RangeFitsFile(uint64_t offset, uint64_t len) {
  return offset <= kMaxFileSize && len <= kMaxFileSize - offset;
}

struct EcGeometry {
  uint32_t k = 4;                 // data shards
  uint32_t m = 2;                 // parity shards
  uint64_t stripe_unit = 65536;   // S, bytes
  uint64_t chunk_size = 4 << 20;  // bytes; a multiple of k * stripe_unit
  // R-way replication, as k = 1 data shard and m = R - 1 full copies of it
  // (not parity): the layout math is the same, any shard serves a read.
  bool replicated = false;

  uint64_t row_bytes() const { return stripe_unit * k; }       // data bytes per row
  uint64_t rows_per_chunk() const { return chunk_size / row_bytes(); }
  uint64_t shard_capacity() const { return chunk_size / k; }   // bytes per full shard
};

// A slice of a file range that falls inside one chunk.
struct ChunkSlice {
  uint64_t chunk_index;   // file_offset / chunk_size
  uint64_t chunk_offset;  // offset of the slice inside the chunk
  uint64_t length;        // bytes, > 0
  uint64_t buf_offset;    // offset of the slice inside the caller's buffer
};

// Splits [offset, offset+length) of a file into per-chunk slices, in order.
// length == 0 gives no slices. A range that runs past UINT64_MAX is cut
// there (its slices then cover less than length; callers refuse such
// ranges first, as Client::Write does).
std::vector<ChunkSlice> SplitFileRange(uint64_t chunk_size, uint64_t offset, uint64_t length);

// A contiguous run of bytes of one data shard, wholly inside one stripe unit.
struct ShardPiece {
  uint32_t shard;         // data shard index, < k
  uint64_t shard_offset;  // byte offset inside the shard
  uint64_t length;        // bytes, > 0, <= stripe_unit
  uint64_t buf_offset;    // offset inside the caller's buffer for this range
};

// Maps [offset, offset+length) of one chunk to data-shard pieces, in
// chunk-offset order (so buf_offset increases). Precondition:
// offset + length <= chunk_size.
std::vector<ShardPiece> MapChunkRange(const EcGeometry& g, uint64_t offset, uint64_t length);

// One read of a contiguous shard range that serves several pieces.
struct ShardRead {
  uint32_t shard;
  uint64_t shard_offset;
  uint64_t length;
  std::vector<ShardPiece> pieces;  // each lies inside [shard_offset, shard_offset+length)
};

// Merges pieces of the same shard whose shard ranges touch (the next piece
// starts where the previous one ends: consecutive rows of one shard are
// adjacent in the shard). Output sorted by (shard, shard_offset).
std::vector<ShardRead> MergeShardPieces(std::vector<ShardPiece> pieces);

// Rows [first, last] (inclusive) that chunk range [offset, offset+length)
// touches. Precondition: length > 0.
struct RowRange {
  uint64_t first;
  uint64_t last;
  uint64_t count() const { return last - first + 1; }
};
RowRange RowsOf(const EcGeometry& g, uint64_t offset, uint64_t length);

// Rows needed to hold `bytes` bytes of chunk data (0 for 0).
uint64_t RowsForBytes(const EcGeometry& g, uint64_t bytes);

// [offset, offset+length) widened to multiples of `block` (a power of two).
struct AlignedRange {
  uint64_t offset;
  uint64_t length;
};
AlignedRange AlignOut(uint64_t offset, uint64_t length, uint64_t block);

}  // namespace rustfs::layout

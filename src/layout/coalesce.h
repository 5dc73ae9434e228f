// Read coalescing (LLD-002 §5.2): reads of one shard that are adjacent or
// closer than a gap threshold become one read whose result is scattered
// back, trading a little over-read (the gaps) for far fewer I/O operations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rustfs::layout {

struct RangeRead {
  uint64_t offset;  // bytes
  uint64_t length;  // bytes, > 0
  size_t id;        // the caller's handle for this read
};

struct CoalescedRead {
  uint64_t offset;
  uint64_t length;
  std::vector<RangeRead> members;  // each inside [offset, offset+length)
  uint64_t end() const { return offset + length; }
};

// Sorts by offset and merges a read into the current run when it starts at
// most `gap_threshold` bytes past the run's end (overlaps merge too).
// gap_threshold = 0 merges only touching or overlapping reads.
std::vector<CoalescedRead> CoalesceReads(std::vector<RangeRead> reads, uint64_t gap_threshold);

}  // namespace rustfs::layout

// Record indexes: the index-file pattern of LLD-002 §4.4. Record formats
// keep a small index of where each record is (DALI's tfrecord2idx text,
// rustfs.records.write_index's binary); a reader reads the index first, then
// seeks into the data file at the offsets it lists. The client recognises
// the index when it is read, and when a file of exactly the size the index
// describes is then read at a listed record, it fetches the listed records
// ahead of the reader (client_auto_plan.cc), within the plan byte budget.
//
// Formats:
//   DALI text   one "offset size" line per record (decimal, spaces/tabs).
//   rustfs      "RFSIDX1\n", u64 count, then count x (u64 offset, u64
//               length), little-endian.
// Entries must be non-empty and must not overlap (sorted by offset, as both
// writers produce them); anything else is not taken for an index.
//
// Pure logic, no I/O. IndexCatalog is thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "client/plan_executor.h"
#include "common/status.h"

namespace rustfs::client {

inline constexpr std::string_view kRecordIndexMagic = "RFSIDX1\n";
// Index files larger than this are not looked at (bytes).
inline constexpr uint64_t kMaxIndexFileBytes = 64ull << 20;

// Whether a file starting with `head` (its first bytes, at least a line's
// worth when there are any) may be a record index worth reading whole.
bool LooksLikeRecordIndex(std::string_view head);

// The records an index file lists, in its order. InvalidArgument saying
// why for anything that is not a well-formed index.
Result<std::vector<PlanEntry>> ParseRecordIndex(std::string_view bytes);

// Indexes seen by this client, and the data files they turned out to
// describe.
class IndexCatalog {
 public:
  struct Index {
    uint64_t index_ino = 0;
    std::vector<PlanEntry> entries;  // by offset
    uint64_t end = 0;                // end of the last record: the data file's size
  };

  // Remembers the index read from file `index_ino` (replacing what it said
  // before); at most kMaxIndexes are kept, the oldest dropped.
  void Add(uint64_t index_ino, std::vector<PlanEntry> entries);

  // The index describing a read of [offset, offset + length) of file `ino`
  // of `size` bytes: one whose records end exactly at `size` and one of
  // whose records holds the read's first byte. Null when none does (cheap
  // when no index was ever added).
  std::shared_ptr<const Index> Match(uint64_t ino, uint64_t size, uint64_t offset, uint64_t length) const;

  static constexpr size_t kMaxIndexes = 64;

 private:
  std::atomic<bool> any_{false};  // so that reads pay nothing until an index is seen
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<const Index>> indexes_;  // oldest first
};

}  // namespace rustfs::client

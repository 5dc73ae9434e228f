// The data files of a ShardStore: a few large preallocated files, each cut
// into slots of one size, one slot per shard version.
//
// Why not one file per shard: a cold read of a shard file pays a path
// lookup, an open and inode/extent reads before its data (2.9x the
// requested bytes at the device was measured that way), and a DSS with
// millions of shards cannot keep them all open. Here every data file stays
// open and its extents are few (fallocate'd in one go), so a read is one
// device read at slot offset + shard offset.
//
// A file's name says what it holds: "<number>-<slot bytes>x<slots>.dat".
// Which slots are in use is the index's business (ShardIndex): the store
// marks them at start (MarkUsed); everything else is free. A freed slot is
// not handed out again for kReuseDelay, so a read still in flight on the
// version it held cannot see another shard's bytes.
//
// Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"

namespace rustfs::dss {

struct SlotRef {
  uint32_t file = 0;
  uint32_t slot = 0;
  bool operator==(const SlotRef&) const = default;
};

class SlotFiles {
 public:
  static constexpr auto kReuseDelay = std::chrono::seconds(2);

  // Opens (creating) `dir` and every data file in it. New files are made
  // `file_bytes` long (fewer slots when the disk has less room, at least
  // one). `direct`: also open each file O_DIRECT for the read engine (the
  // buffered fd stands in where the file system refuses O_DIRECT).
  static Result<std::unique_ptr<SlotFiles>> Open(const std::string& dir, uint64_t file_bytes,
                                                 bool direct);
  ~SlotFiles();

  void MarkUsed(SlotRef s);
  // A free slot of `slot_bytes` (a multiple of 4 KiB), in a new file if
  // none has one. kNoSpace when the disk has no room for another file.
  Result<SlotRef> Allocate(uint64_t slot_bytes);
  void Free(SlotRef s);

  // Where a slot is. The fds stay open as long as the SlotFiles.
  struct Location {
    int fd = -1;          // buffered, read-write
    int direct_fd = -1;   // O_DIRECT where possible, else == fd
    uint64_t offset = 0;  // of the slot's first byte in the file
    uint64_t slot_bytes = 0;
    const std::string* path = nullptr;
  };
  // InvalidArgument for a slot no file has.
  Result<Location> Locate(SlotRef s) const;
  // Bytes in free slots (already allocated on disk, so not in statvfs).
  uint64_t FreeSlotBytes() const;

 private:
  struct File {
    uint32_t number = 0;
    uint64_t slot_bytes = 0;
    uint32_t slots = 0;
    std::string path;
    int fd = -1;
    int direct_fd = -1;
    std::vector<bool> used;
    std::vector<uint32_t> free;  // free slot numbers (a stack)
  };
  SlotFiles(std::string dir, uint64_t file_bytes, bool direct)
      : dir_(std::move(dir)), file_bytes_(file_bytes), direct_(direct) {}
  Status OpenFile(const std::string& name);
  Result<File*> CreateFile(uint64_t slot_bytes);  // caller holds mu_
  void ReleaseDue();                              // caller holds mu_

  const std::string dir_;
  const uint64_t file_bytes_;
  const bool direct_;
  mutable std::mutex mu_;
  std::map<uint32_t, std::unique_ptr<File>> files_;  // by number; never erased while open
  uint32_t next_number_ = 1;
  std::deque<std::pair<std::chrono::steady_clock::time_point, SlotRef>> quarantine_;
};

}  // namespace rustfs::dss

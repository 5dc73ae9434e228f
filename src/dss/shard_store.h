// Shard versions on one local disk.
//
// Each (inode, chunk, version, shard) lives in a slot of a large data file
// (SlotFiles) and is described by an in-memory index entry kept durable in
// RocksDB (ShardIndex): slot, capacity, data length and a CRC32C per 4 KiB
// block. A cold 4 KiB read is therefore one device read at slot offset plus
// shard offset: no open, no path lookup, no header read.
//
// A write builds the new version in a fresh slot (copying the base version's
// other bytes when the writer changes only some rows), syncs the data file,
// then records the index entry with a synced write before it is acked: an
// acknowledged write is durable, and a crash leaves the old version whole
// (a slot written but never recorded is free again at the next start).
// Versions are immutable once the MDS publishes them, so readers never see
// a half-written shard.
//
// Reads verify the CRC of every block they touch; a mismatch is
// Code::kCorruption and no byte of it is returned. Bytes past the data
// length (never written) read as zeros.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "common/metrics.h"
#include "common/status.h"
#include "dss/disk_io.h"
#include "dss/random_read_engine.h"
#include "dss/shard_index.h"
#include "dss/slot_files.h"

namespace rustfs::dss {

// One piece of a batched read: [offset, offset+length) of shard `id` into
// dst (caller-owned, length bytes; need not be initialised: a read that
// succeeds writes all of it, zeros past the shard's data, and one that
// fails leaves it as it was, so no unverified byte ever reaches it).
// Out: status.
struct ShardRead {
  ShardId id;
  uint64_t offset = 0;
  uint64_t length = 0;
  char* dst = nullptr;
  Status status;
};

struct ShardStoreOptions {
  // Size of each new data file (fewer slots when the disk lacks room).
  uint64_t data_file_bytes = 256ull << 20;
  // The largest shard a writer may ask for, bytes (<= kMaxCapacity): the
  // cluster's chunk size (a replicated chunk's shard is the whole chunk).
  uint64_t max_capacity = 1ull << 30;
  // File I/O on the data files (not owned; must outlive the store).
  // nullptr: the system's. Tests put a FaultyDiskIo here.
  DiskIo* io = nullptr;
};

class ShardStore {
 public:
  static constexpr uint64_t kBlock = 4096;  // checksum and alignment block, bytes
  // Pieces up to this size are random reads (io_uring, O_DIRECT); longer
  // ones are sequential (read-ahead windows) and keep buffered pread, which
  // lets the kernel's own read-ahead work (LLD-002 §5.1).
  static constexpr uint64_t kRandomReadMax = 256 * 1024;
  // The largest shard: a 1 GiB chunk, replicated.
  static constexpr uint64_t kMaxCapacity = 1ull << 30;

  // Opens (creating) the store under `data_dir` (data files in slots/, the
  // index in index/). With an engine (owned by the store from then on),
  // batched random reads go through it on O_DIRECT fds; without, everything
  // is buffered pread.
  static Result<std::unique_ptr<ShardStore>> Open(const std::string& data_dir,
                                                  std::unique_ptr<RandomReadEngine> engine = nullptr,
                                                  const ShardStoreOptions& options = {});
  ~ShardStore();

  // Writes `data` at shard offset `offset` of version id.version, starting
  // from a copy of `base_version` when it is non-zero. offset and data size
  // must be multiples of kBlock; offset + size <= capacity <=
  // options.max_capacity.
  Status Write(const ShardId& id, uint64_t base_version, uint64_t offset, std::string_view data,
               uint64_t capacity);

  // Reads [offset, offset+length) of a shard into `out` (resized to length),
  // buffered (the sequential path).
  Status Read(const ShardId& id, uint64_t offset, uint64_t length, std::string& out);
  // Reads every piece, each with its own status, the random ones (up to
  // kRandomReadMax) in one submission to the engine; with `buffered`, all
  // of them as Read does (the sequential path). Pieces of one batch may
  // name different shards.
  void ReadBatch(std::span<ShardRead> reads, bool buffered = false);

  Status Delete(const ShardId& id);

  // A range a peer asks to read: inside the largest shard, no wrap-around
  // (checked before any cache or disk is asked).
  Status CheckReadRange(uint64_t offset, uint64_t length) const;

  // Free bytes: the file system's, and free slots of the data files.
  uint64_t FreeBytes() const;
  size_t ShardCount() const { return index_->size(); }

  // Where the shard's data starts: data file and byte offset (tests corrupt
  // shards through it).
  Result<std::pair<std::string, uint64_t>> Locate(const ShardId& id) const;

 private:
  ShardStore(std::string dir, std::unique_ptr<RandomReadEngine> engine, DiskIo& io)
      : dir_(std::move(dir)),
        io_(io),
        engine_(std::move(engine)),
        disk_read_(GetCounter("dss.disk_bytes_read")),
        disk_written_(GetCounter("dss.disk_bytes_written")),
        crc_failures_(GetCounter("dss.checksum_failures")),
        engine_failures_(GetCounter("dss.engine_batch_failures")) {}
  void ReadPieces(std::span<ShardRead> reads, bool use_engine);
  // Fills `meta` (slot already set) with the new version's bytes.
  Status BuildVersion(const ShardId& id, const ShardMeta* base, uint64_t offset, std::string_view data,
                      ShardMeta& meta);

  std::string dir_;
  DiskIo& io_;
  uint64_t max_capacity_ = kMaxCapacity;
  std::unique_ptr<RandomReadEngine> engine_;  // null: buffered reads only
  // Whole-batch engine failures: served buffered; this many in a row turn
  // the engine off for good (engine_off_).
  static constexpr int kEngineFailuresToGiveUp = 3;
  std::atomic<int> engine_failures_in_a_row_{0};
  std::atomic<bool> engine_off_{false};
  std::unique_ptr<SlotFiles> files_;
  std::unique_ptr<ShardIndex> index_;

  Counter& disk_read_;
  Counter& disk_written_;
  Counter& crc_failures_;
  Counter& engine_failures_;
};

}  // namespace rustfs::dss

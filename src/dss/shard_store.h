// Shard files on one local disk.
//
// One file per (inode, chunk, version, shard):
//   [header page(s)][data]
// The header holds a magic, the shard's capacity and data length, and a
// CRC32C per 4 KiB checksum block of data; data starts on a 4 KiB boundary
// (so O_DIRECT reads of data stay aligned). A write builds the new version
// in a temporary file (cloning the base version first when the writer
// changes only some rows), syncs it, then renames it into place and syncs
// the directory: an acknowledged write is durable, and a crash leaves either
// no file or a complete one. Versions are immutable once the MDS publishes
// them, so readers never see a half-written shard.
//
// Reads verify the CRC of every block they touch; a mismatch is
// Code::kCorruption and no byte of it is returned. Bytes past the data
// length (never written) read as zeros.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/metrics.h"
#include "common/status.h"
#include "dss/random_read_engine.h"

namespace rustfs::dss {

struct ShardId {
  uint64_t ino = 0;
  uint64_t chunk = 0;
  uint64_t version = 0;
  uint32_t shard = 0;
  bool operator==(const ShardId&) const = default;
  std::string ToString() const;
};

// One piece of a batched read: [offset, offset+length) of shard `id` into
// dst (caller-owned, length bytes). Out: status.
struct ShardRead {
  ShardId id;
  uint64_t offset = 0;
  uint64_t length = 0;
  char* dst = nullptr;
  Status status;
};

class ShardStore {
 public:
  static constexpr uint64_t kBlock = 4096;  // checksum and alignment block, bytes
  // Pieces up to this size are random reads (io_uring, O_DIRECT); longer
  // ones are sequential (read-ahead windows) and keep buffered pread, which
  // lets the kernel's own read-ahead work (LLD-002 §5.1).
  static constexpr uint64_t kRandomReadMax = 256 * 1024;

  // Opens (creating) the store under `data_dir`. With an engine (owned by
  // the store from then on), batched random reads go through it on O_DIRECT
  // fds; without, everything is buffered pread.
  static Result<std::unique_ptr<ShardStore>> Open(const std::string& data_dir,
                                                  std::unique_ptr<RandomReadEngine> engine = nullptr);
  ~ShardStore();

  // Writes `data` at shard offset `offset` of version id.version, starting
  // from a copy of `base_version` when it is non-zero. offset and data size
  // must be multiples of kBlock; offset + size <= capacity.
  Status Write(const ShardId& id, uint64_t base_version, uint64_t offset, std::string_view data,
               uint64_t capacity);

  // Reads [offset, offset+length) of a shard into `out` (resized to length),
  // buffered (the sequential path).
  Status Read(const ShardId& id, uint64_t offset, uint64_t length, std::string& out);
  // Reads every piece, each with its own status, the random ones (up to
  // kRandomReadMax) in one submission to the engine. Pieces of one batch
  // may name different shards.
  void ReadBatch(std::span<ShardRead> reads);

  Status Delete(const ShardId& id);

  // Free bytes on the store's filesystem.
  uint64_t FreeBytes() const;

  // The shard's file path (tests corrupt shards through it).
  std::string PathOf(const ShardId& id) const;

 private:
  struct OpenShard {
    int fd = -1;
    int direct_fd = -1;  // O_DIRECT (when the filesystem allows) for the engine; -1 without one
    uint64_t capacity = 0;
    uint64_t data_len = 0;
    uint64_t data_start = 0;
    std::vector<uint32_t> crcs;  // one per block of capacity
    ~OpenShard();
  };
  struct IdHash {
    size_t operator()(const ShardId& s) const;
  };

  ShardStore(std::string dir, std::unique_ptr<RandomReadEngine> engine);
  Result<std::shared_ptr<OpenShard>> Get(const ShardId& id);
  void Forget(const ShardId& id);
  Result<std::shared_ptr<OpenShard>> Load(const std::string& path);

  void ReadPieces(std::span<ShardRead> reads, bool use_engine);

  std::string dir_;
  std::unique_ptr<RandomReadEngine> engine_;  // null: buffered reads only
  std::mutex mu_;
  // Open shards, most recently used at the front; bounded so a store with
  // millions of shards does not run out of file descriptors.
  std::list<std::pair<ShardId, std::shared_ptr<OpenShard>>> lru_;
  std::unordered_map<ShardId, decltype(lru_)::iterator, IdHash> index_;
  static constexpr size_t kMaxOpen = 4096;

  Counter& disk_read_;
  Counter& disk_written_;
  Counter& crc_failures_;
};

}  // namespace rustfs::dss

// The MDS's persistent state in RocksDB: inodes, directory entries, chunk
// maps, extended attributes, inodes kept alive by open handles after their
// last name went (orphans), and the shard garbage queue. Every mutation is
// one synced WriteBatch, so a SIGKILL at any point leaves the namespace as
// of the last acknowledged operation. Key layout: store_keys.h.
//
// POSIX lifetimes: unlinking (or renaming over) an inode's last name does
// not delete it; it becomes an orphan (nlink 0, still readable by inode
// number) and CollectOrphan deletes it once the service knows no client
// has it open.
//
// Thread-safe: one mutex serializes operations (the MDS is not on the read
// path, so simplicity wins over concurrency here).
#pragma once

#include <rocksdb/db.h>

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "rustfs.pb.h"

namespace rustfs::mds {

inline constexpr uint64_t kRootIno = 1;
inline constexpr size_t kMaxName = 255;              // bytes of one name (NAME_MAX)
inline constexpr uint32_t kMaxLinks = 65000;         // ext4's EXT4_LINK_MAX
inline constexpr size_t kMaxXattrValue = 64 * 1024;  // bytes, as ext4 (XATTR_SIZE_MAX)
inline constexpr size_t kMaxXattrName = 255;         // bytes (XATTR_NAME_MAX)
inline constexpr size_t kMaxSymlink = 4095;          // bytes (PATH_MAX - 1)

// What an unlink or a rename did to the inode that lost a name.
struct Unlinked {
  uint64_t ino = 0;     // 0: no inode lost a name (a rename to a free name)
  bool orphan = false;  // its last name is gone: collect it once nobody has it open
};

class MdsStore {
 public:
  // Opens (creating if needed) the store in `dir`. `default_layout` is given
  // to the root directory when the store is new; files inherit their
  // directory's layout.
  static Result<std::unique_ptr<MdsStore>> Open(const std::string& dir,
                                                const pb::Layout& default_layout);

  // Garbage queued from now on is handed out by PeekGarbage no earlier than
  // `delay_ns` after it was queued (readers may still hold the old map).
  void SetGarbageDelay(int64_t delay_ns) { garbage_delay_ns_ = delay_ns; }

  Result<pb::Attr> Lookup(uint64_t parent, const std::string& name);
  Result<pb::Attr> GetAttr(uint64_t ino);
  // kStale when SET_SIZE cuts into a chunk whose version is not
  // req.tail_version (see SetAttrReq).
  Result<pb::Attr> SetAttr(const pb::SetAttrReq& req);
  // Makes what the type bits of req.mode say (regular file when none). A
  // setgid directory passes its group (and, to directories, the bit) down.
  // A non-exclusive create of an existing name returns that inode.
  Result<pb::Attr> Create(const pb::CreateReq& req);
  // A new name for a non-directory inode.
  Result<pb::Attr> Link(const pb::LinkReq& req);
  Result<pb::ReadDirReply> ReadDir(uint64_t ino, const std::string& after, uint32_t max);
  Result<Unlinked> Unlink(uint64_t parent, const std::string& name);
  // The removed directory's inode number.
  Result<uint64_t> Rmdir(uint64_t parent, const std::string& name);
  // The inode replaced at the new name, if any.
  Result<Unlinked> Rename(const pb::RenameReq& req);
  uint64_t FileCount();
  // True when Open created the store (no earlier MDS ran on it).
  bool created() const { return created_; }

  // Orphans: inodes with no name, kept for open handles.
  std::vector<uint64_t> Orphans();
  bool IsOrphan(uint64_t ino);
  // Deletes an orphan (its chunks become garbage); a no-op for an inode
  // that is not one.
  Status CollectOrphan(uint64_t ino);

  // Extended attributes (flags: XATTR_CREATE, XATTR_REPLACE).
  Result<pb::Attr> SetXattr(const pb::XattrReq& req);
  Result<std::string> GetXattr(uint64_t ino, const std::string& name);
  Result<std::vector<std::string>> ListXattr(uint64_t ino);
  Result<pb::Attr> RemoveXattr(uint64_t ino, const std::string& name);

  // Chunks of `ino` overlapping [offset, offset+length) (length 0 = all).
  Result<pb::GetChunkMapReply> GetChunkMap(uint64_t ino, uint64_t offset, uint64_t length);
  // A fresh version for chunk `index`, placed by `place` (given the file's
  // layout and the chunk's placement now, empty for a new chunk; called
  // under the store's lock).
  using PlaceFn = std::function<Result<std::vector<uint32_t>>(const pb::Layout&,
                                                              std::span<const uint32_t> current)>;
  Result<pb::AllocateChunkReply> AllocateChunk(uint64_t ino, uint64_t index, const PlaceFn& place);
  // Publishes a new chunk version if the chunk is still at base_version
  // (optimistic concurrency: kStale otherwise) and the version is one
  // AllocateChunk handed out, newer than the chunk's; the old version's
  // shards are queued as garbage. A version with a position stored nowhere
  // (layout::kNoDss) is queued for repair. The caller checks the placement
  // against the layout and the DSS registry.
  Result<pb::Attr> CommitChunk(const pb::CommitChunkReq& req);
  // Drops chunks [first_index, first_index + count) (they read as zeros).
  Result<pb::Attr> Punch(const pb::PunchReq& req);

  // Up to `max` queued garbage entries that are due at `now_ns`
  // (CLOCK_REALTIME), and their removal once deleted.
  std::vector<std::pair<std::string, pb::Garbage>> PeekGarbage(size_t max, int64_t now_ns);
  Status DropGarbage(const std::string& key);
  // Replaces entry `key` with what is left of it (`left`: the positions
  // not deleted yet), at the back of the queue, due at `not_before_ns`.
  Status RequeueGarbage(const std::string& key, uint64_t ino, const pb::ChunkEntry& left, int64_t not_before_ns);
  // Also queues the chunk for repair.
  Status RecordBadShard(const pb::ReportBadShardReq& req);

  // --- repair (mds_store_repair.cc) ---
  // Chunks queued for repair (degraded writes, bad shards, chunks on a DSS
  // gone past the grace period), up to `max`, after (ino, index) `after`.
  std::vector<std::pair<uint64_t, uint64_t>> RepairQueue(size_t max, std::pair<uint64_t, uint64_t> after = {0, 0});
  size_t RepairQueueSize();
  // Up to `max` chunk entries after (ino, index) `after`, in key order, for
  // a walk over every chunk (scrub).
  std::vector<std::pair<uint64_t, pb::ChunkEntry>> ScanChunks(std::pair<uint64_t, uint64_t> after, size_t max);
  // Queues every chunk with a shard on DSS `dss`; returns how many.
  Result<size_t> QueueChunksOn(uint32_t dss);
  Status DropFromRepair(uint64_t ino, uint64_t index);
  // The chunk's current entry (kNotFound when it has none) and the shards
  // of that version reported bad.
  struct ChunkHealth {
    pb::ChunkEntry chunk;
    std::vector<uint32_t> bad_shards;
  };
  Result<ChunkHealth> GetChunkHealth(uint64_t ino, uint64_t index);
  // Records rebuilt shards: positions `shards` of chunk version
  // `rebuilt.version()` now live where `rebuilt` says, if the chunk is still
  // at that version (kStale otherwise). The replaced copies become garbage,
  // their bad-shard records go, and the chunk leaves the repair queue when
  // nothing is missing any more.
  Status RecordRepair(uint64_t ino, const pb::ChunkEntry& rebuilt, const std::vector<uint32_t>& shards);

 private:
  explicit MdsStore(std::unique_ptr<rocksdb::DB> db) : db_(std::move(db)) {}
  Status Init(const pb::Layout& default_layout);

  // Unlocked helpers (caller holds mu_).
  Result<pb::Attr> LoadInode(uint64_t ino);
  Result<pb::Dirent> LoadDirent(uint64_t parent, const std::string& name);
  Result<pb::Attr> LoadDir(uint64_t ino);  // kNotDirectory for anything else
  // A name's directory and inode.
  struct Named {
    pb::Attr dir;
    pb::Attr inode;
  };
  Result<Named> LoadNamed(uint64_t parent, const std::string& name);
  Result<uint64_t> NextCounter(const std::string& key);
  bool HasPrefix(const std::string& prefix);
  bool DirIsEmpty(uint64_t ino);
  // Queues every chunk of `ino` in [first_index, end_index) as garbage and
  // deletes its chunk entries, in `wb`.
  Status DropChunks(uint64_t ino, uint64_t first_index, uint64_t end_index,
                    rocksdb::WriteBatch& wb);
  // Due at `not_before_ns` (0: now + the garbage delay).
  void QueueGarbage(uint64_t ino, const pb::ChunkEntry& c, rocksdb::WriteBatch& wb,
                    int64_t not_before_ns = 0);
  // Takes one name from `victim` (in `wb`): its nlink drops, and at zero it
  // becomes an orphan.
  Unlinked DropName(pb::Attr& victim, int64_t now, rocksdb::WriteBatch& wb);
  Status DeleteInode(uint64_t ino, rocksdb::WriteBatch& wb);
  // Writes the directory's times (and `nlink_delta`) after an entry change.
  void TouchDir(pb::Attr& dir, int64_t now, int nlink_delta, rocksdb::WriteBatch& wb);
  Status Commit(rocksdb::WriteBatch& wb);
  // A chunk version number AllocateChunk has handed out.
  bool WasAllocated(uint64_t version);

  static constexpr uint64_t kCounterReserve = 4096;
  struct CounterState {
    uint64_t next = 0;     // the next number to hand out
    uint64_t ceiling = 0;  // persisted: nothing at or above it was handed out
  };

  std::mutex mu_;
  std::unique_ptr<rocksdb::DB> db_;
  std::map<std::string, CounterState> counters_;
  uint64_t garbage_seq_ = 0;  // in-memory mirror of Mnext_garbage
  int64_t garbage_delay_ns_ = 0;
  bool created_ = false;
};

int64_t NowNs();

}  // namespace rustfs::mds

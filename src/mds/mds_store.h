// The MDS's persistent state in RocksDB: inodes, directory entries, chunk
// maps and the shard garbage queue. Every mutation is one synced WriteBatch,
// so a SIGKILL at any point leaves the namespace as of the last acknowledged
// operation.
//
// Keys (integers big-endian, so a prefix scan walks them in order):
//   I<ino>              -> pb::Attr
//   D<parent><name>     -> pb::Dirent
//   C<ino><chunk index> -> pb::ChunkEntry
//   G<seq>              -> pb::Garbage
//   Mnext_ino, Mnext_version, Mnext_garbage -> u64
//
// Thread-safe: one mutex serializes operations (the MDS is not on the read
// path, so simplicity wins over concurrency here).
#pragma once

#include <rocksdb/db.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "rustfs.pb.h"

namespace rustfs::mds {

inline constexpr uint64_t kRootIno = 1;

class MdsStore {
 public:
  // Opens (creating if needed) the store in `dir`. `default_layout` is given
  // to the root directory when the store is new; files inherit their
  // directory's layout.
  static Result<std::unique_ptr<MdsStore>> Open(const std::string& dir,
                                                const pb::Layout& default_layout);

  Result<pb::Attr> Lookup(uint64_t parent, const std::string& name);
  Result<pb::Attr> GetAttr(uint64_t ino);
  Result<pb::Attr> SetAttr(const pb::SetAttrReq& req);
  Result<pb::Attr> Create(const pb::CreateReq& req, bool is_dir);
  Result<pb::ReadDirReply> ReadDir(uint64_t ino, const std::string& after, uint32_t max);
  Status Unlink(uint64_t parent, const std::string& name);
  Status Rmdir(uint64_t parent, const std::string& name);
  Status Rename(const pb::RenameReq& req);
  uint64_t FileCount();
  // True when Open created the store (no earlier MDS ran on it).
  bool created() const { return created_; }

  // Chunks of `ino` overlapping [offset, offset+length) (length 0 = all).
  Result<pb::GetChunkMapReply> GetChunkMap(uint64_t ino, uint64_t offset, uint64_t length);
  // A fresh version for chunk `index`. `placement` is used when the chunk is
  // new; an existing chunk keeps its DSS so shards can be cloned locally.
  Result<pb::AllocateChunkReply> AllocateChunk(uint64_t ino, uint64_t index,
                                               const std::vector<uint32_t>& placement);
  // Publishes a new chunk version if the chunk is still at base_version
  // (optimistic concurrency: kStale otherwise); the old version's shards are
  // queued as garbage.
  Result<pb::Attr> CommitChunk(const pb::CommitChunkReq& req);

  // Up to `max` queued garbage entries, and their removal once deleted.
  std::vector<std::pair<std::string, pb::Garbage>> PeekGarbage(size_t max);
  Status DropGarbage(const std::string& key);
  Status RecordBadShard(const pb::ReportBadShardReq& req);

 private:
  explicit MdsStore(std::unique_ptr<rocksdb::DB> db) : db_(std::move(db)) {}
  Status Init(const pb::Layout& default_layout);

  // Unlocked helpers (caller holds mu_).
  Result<pb::Attr> LoadInode(uint64_t ino);
  Result<pb::Dirent> LoadDirent(uint64_t parent, const std::string& name);
  Result<uint64_t> NextCounter(const std::string& key, rocksdb::WriteBatch& wb);
  bool DirIsEmpty(uint64_t ino);
  // Queues every chunk of `ino` at or beyond `first_index` as garbage and
  // deletes its chunk entries, in `wb`.
  Status DropChunksFrom(uint64_t ino, uint64_t first_index, rocksdb::WriteBatch& wb);
  bool HasChunks(uint64_t ino);
  void QueueGarbage(uint64_t ino, const pb::ChunkEntry& c, rocksdb::WriteBatch& wb);
  Status Commit(rocksdb::WriteBatch& wb);

  std::mutex mu_;
  std::unique_ptr<rocksdb::DB> db_;
  uint64_t garbage_seq_ = 0;  // in-memory mirror of Mnext_garbage
  bool created_ = false;
};

int64_t NowNs();

}  // namespace rustfs::mds

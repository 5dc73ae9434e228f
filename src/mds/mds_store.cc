// MdsStore: opening, helpers shared by the operation files, attributes,
// chunk maps and the garbage queue. Namespace operations (create, link,
// unlink, rename, orphans) are in mds_store_names.cc, extended attributes
// in mds_store_xattr.cc.
#include "mds/mds_store.h"

#include <rocksdb/write_batch.h>
#include <sys/stat.h>

#include <ctime>

#include "common/clock.h"
#include "layout/layout.h"
#include "layout/layout_rules.h"
#include "mds/store_keys.h"

namespace rustfs::mds {

using namespace keys;

namespace {

rocksdb::WriteOptions SyncWrite() {
  rocksdb::WriteOptions o;
  o.sync = true;  // acknowledged means on disk: survives SIGKILL and power loss
  return o;
}

bool IsDir(const pb::Attr& a) { return S_ISDIR(a.mode()); }

}  // namespace

int64_t NowNs() { return RealtimeNowNs(); }

Result<std::unique_ptr<MdsStore>> MdsStore::Open(const std::string& dir,
                                                 const pb::Layout& default_layout) {
  rocksdb::Options opts;
  opts.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(opts, dir, &raw);
  if (!s.ok()) return Err(IoError("open MDS store " + dir + ": " + s.ToString()));
  std::unique_ptr<MdsStore> st(new MdsStore(std::unique_ptr<rocksdb::DB>(raw)));
  RUSTFS_RETURN_ERR(st->Init(default_layout));
  return st;
}

Status MdsStore::Init(const pb::Layout& default_layout) {
  std::string v;
  if (db_->Get({}, kNextGarbage, &v).ok() && v.size() == 8) garbage_seq_ = GetBe64(v.data());
  if (db_->Get({}, Inode(kRootIno), &v).ok()) return Status::Ok();
  created_ = true;
  pb::Attr root;
  root.set_ino(kRootIno);
  root.set_mode(S_IFDIR | 0755);
  root.set_nlink(2);
  int64_t now = NowNs();
  root.set_atime_ns(now);
  root.set_mtime_ns(now);
  root.set_ctime_ns(now);
  root.set_parent(kRootIno);
  *root.mutable_layout() = default_layout;
  rocksdb::WriteBatch wb;
  wb.Put(Inode(kRootIno), root.SerializeAsString());
  std::string next;
  PutBe64(next, kRootIno + 1);
  wb.Put(kNextIno, next);
  return Commit(wb);
}

Status MdsStore::Commit(rocksdb::WriteBatch& wb) {
  rocksdb::Status s = db_->Write(SyncWrite(), &wb);
  if (!s.ok()) return IoError("MDS store write: " + s.ToString());
  return Status::Ok();
}

Result<pb::Attr> MdsStore::LoadInode(uint64_t ino) {
  std::string v;
  rocksdb::Status s = db_->Get({}, Inode(ino), &v);
  if (s.IsNotFound()) return Err(NotFound("inode " + std::to_string(ino)));
  if (!s.ok()) return Err(IoError(s.ToString()));
  pb::Attr a;
  if (!a.ParseFromString(v)) return Err(Corruption("inode record " + std::to_string(ino)));
  return a;
}

Result<pb::Dirent> MdsStore::LoadDirent(uint64_t parent, const std::string& name) {
  std::string v;
  rocksdb::Status s = db_->Get({}, Dirent(parent, name), &v);
  if (s.IsNotFound()) return Err(NotFound("'" + name + "' in directory " + std::to_string(parent)));
  if (!s.ok()) return Err(IoError(s.ToString()));
  pb::Dirent d;
  if (!d.ParseFromString(v)) return Err(Corruption("dirent '" + name + "'"));
  return d;
}

Result<pb::Attr> MdsStore::LoadDir(uint64_t ino) {
  auto a = LoadInode(ino);
  if (a && !IsDir(*a)) return Err({Code::kNotDirectory, "inode " + std::to_string(ino)});
  return a;
}

// Inode numbers and chunk versions are handed out from memory; the store
// keeps a ceiling, raised by kCounterReserve at a time in a synced write of
// its own, so most operations write no counter at all and a restart starts
// above anything handed out before it.
Result<uint64_t> MdsStore::NextCounter(const std::string& key) {
  CounterState& c = counters_[key];
  if (c.ceiling == 0) {
    std::string v;
    c.next = db_->Get({}, key, &v).ok() && v.size() == 8 ? GetBe64(v.data()) : 1;
    c.ceiling = c.next;
  }
  if (c.next >= c.ceiling) {
    std::string raised;
    PutBe64(raised, c.next + kCounterReserve);
    rocksdb::WriteBatch wb;
    wb.Put(key, raised);
    RUSTFS_RETURN_ERR(Commit(wb));
    c.ceiling = c.next + kCounterReserve;
  }
  return c.next++;
}

bool MdsStore::HasPrefix(const std::string& prefix) {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator({}));
  it->Seek(prefix);
  return it->Valid() && it->key().starts_with(prefix);
}

bool MdsStore::DirIsEmpty(uint64_t ino) { return !HasPrefix(DirPrefix(ino)); }

void MdsStore::QueueGarbage(uint64_t ino, const pb::ChunkEntry& c, rocksdb::WriteBatch& wb,
                            int64_t not_before_ns) {
  pb::Garbage g;
  g.set_ino(ino);
  *g.mutable_chunk() = c;
  g.set_not_before_ns(not_before_ns ? not_before_ns : NowNs() + garbage_delay_ns_);
  wb.Put(Garbage(garbage_seq_++), g.SerializeAsString());
  std::string next;
  PutBe64(next, garbage_seq_);
  wb.Put(kNextGarbage, next);
}

Status MdsStore::DropChunks(uint64_t ino, uint64_t first_index, uint64_t end_index,
                            rocksdb::WriteBatch& wb) {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator({}));
  std::string prefix = ChunkPrefix(ino);
  for (it->Seek(Chunk(ino, first_index)); it->Valid() && it->key().starts_with(prefix);
       it->Next()) {
    pb::ChunkEntry c;
    if (!c.ParseFromString(it->value().ToString()))
      return Corruption("chunk record of inode " + std::to_string(ino));
    if (c.index() >= end_index) break;
    QueueGarbage(ino, c, wb);
    wb.Delete(it->key());
  }
  return Status::Ok();
}

void MdsStore::TouchDir(pb::Attr& dir, int64_t now, int nlink_delta, rocksdb::WriteBatch& wb) {
  dir.set_nlink(uint32_t(int64_t(dir.nlink()) + nlink_delta));
  dir.set_mtime_ns(now);
  dir.set_ctime_ns(now);
  wb.Put(Inode(dir.ino()), dir.SerializeAsString());
}

Result<pb::Attr> MdsStore::Lookup(uint64_t parent, const std::string& name) {
  // No such name can exist, but ENAMETOOLONG is what POSIX says.
  if (name.size() > kMaxName) return Err({Code::kNameTooLong, "file name longer than 255 bytes"});
  std::lock_guard lk(mu_);
  auto p = LoadDir(parent);
  if (!p) return p;
  auto d = LoadDirent(parent, name);
  if (!d) return Err(d.error());
  return LoadInode(d->ino());
}

Result<pb::Attr> MdsStore::GetAttr(uint64_t ino) {
  std::lock_guard lk(mu_);
  return LoadInode(ino);
}

Result<pb::Attr> MdsStore::SetAttr(const pb::SetAttrReq& req) {
  std::lock_guard lk(mu_);
  auto a = LoadInode(req.ino());
  if (!a) return a;
  rocksdb::WriteBatch wb;
  const int64_t now = NowNs();
  uint32_t v = req.valid();
  if (v & pb::SET_MODE) a->set_mode((a->mode() & S_IFMT) | (req.mode() & 07777));
  if (v & pb::SET_UID) a->set_uid(req.uid());
  if (v & pb::SET_GID) a->set_gid(req.gid());
  if (v & pb::SET_ATIME) a->set_atime_ns(req.atime_ns());
  if (v & pb::SET_MTIME) a->set_mtime_ns(req.mtime_ns());
  if (v & pb::SET_LAYOUT) {
    // Data already placed keeps its layout, so only a directory (for files
    // created in it later) or a file with no data yet can change.
    if (!IsDir(*a) && (a->size() != 0 || HasPrefix(ChunkPrefix(req.ino()))))
      return Err({Code::kInvalidArgument, "layout of a file that has data cannot change"});
    *a->mutable_layout() = req.layout();
  }
  if (v & pb::SET_SIZE) {
    if (IsDir(*a)) return Err({Code::kIsDirectory, "truncate of a directory"});
    if (!S_ISREG(a->mode())) return Err(InvalidArgument("truncate of a special file"));
    if (req.size() > layout::kMaxFileSize)
      return Err({Code::kTooBig, "truncate to " + std::to_string(req.size()) + ", past the largest file size (2^63 - 1)"});
    const uint64_t cs = a->layout().chunk_size();
    if (req.size() < a->size()) {
      // The client zeroed the tail of the chunk the new end falls in (so a
      // later extension reads zeros there, as POSIX requires); that holds
      // only if the chunk is still the version it zeroed.
      if (req.size() % cs) {
        std::string cv;
        uint64_t cur = 0;
        if (db_->Get({}, Chunk(req.ino(), req.size() / cs), &cv).ok()) {
          pb::ChunkEntry c;
          if (c.ParseFromString(cv)) cur = c.version();
        }
        if (cur != req.tail_version())
          return Err({Code::kStale, "chunk " + std::to_string(req.size() / cs) + " is at version " +
                                        std::to_string(cur) + ", the truncating client zeroed " +
                                        std::to_string(req.tail_version())});
      }
      RUSTFS_RETURN_ERR(DropChunks(req.ino(), (req.size() + cs - 1) / cs, UINT64_MAX, wb));
    }
    a->set_size(req.size());
    if (!(v & pb::SET_MTIME)) a->set_mtime_ns(now);
  }
  a->set_ctime_ns(now);
  wb.Put(Inode(req.ino()), a->SerializeAsString());
  RUSTFS_RETURN_ERR(Commit(wb));
  return a;
}

Result<pb::ReadDirReply> MdsStore::ReadDir(uint64_t ino, const std::string& after, uint32_t max) {
  std::lock_guard lk(mu_);
  auto a = LoadDir(ino);
  if (!a) return Err(a.error());
  pb::ReadDirReply r;
  std::string prefix = DirPrefix(ino);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator({}));
  it->Seek(prefix + after);
  if (!after.empty() && it->Valid() && it->key() == prefix + after) it->Next();
  for (; it->Valid() && it->key().starts_with(prefix); it->Next()) {
    if (uint32_t(r.entries_size()) >= max) {
      r.set_more(true);
      break;
    }
    pb::Dirent d;
    d.ParseFromString(it->value().ToString());
    auto* e = r.add_entries();
    e->set_name(it->key().ToString().substr(prefix.size()));
    e->set_ino(d.ino());
    e->set_mode(d.mode());
  }
  return r;
}

// Inode numbers handed out so far (an upper bound of the files there are).
uint64_t MdsStore::FileCount() {
  std::lock_guard lk(mu_);
  if (auto it = counters_.find(kNextIno); it != counters_.end() && it->second.ceiling != 0)
    return it->second.next - 1;
  std::string v;
  if (db_->Get({}, kNextIno, &v).ok() && v.size() == 8) return GetBe64(v.data()) - 1;
  return 1;
}

Result<pb::GetChunkMapReply> MdsStore::GetChunkMap(uint64_t ino, uint64_t offset,
                                                   uint64_t length) {
  std::lock_guard lk(mu_);
  auto a = LoadInode(ino);
  if (!a) return Err(a.error());
  if (IsDir(*a)) return Err({Code::kIsDirectory, "chunk map of a directory"});
  pb::GetChunkMapReply r;
  *r.mutable_attr() = *a;
  uint64_t cs = a->layout().chunk_size();
  if (cs == 0) return r;  // a special file: no data
  uint64_t first = offset / cs;
  // length 0, or a range running past 2^64, means "to the end of the file".
  uint64_t last = (length == 0 || offset + length < offset) ? UINT64_MAX : (offset + length - 1) / cs;
  std::string prefix = ChunkPrefix(ino);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator({}));
  for (it->Seek(Chunk(ino, first)); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    pb::ChunkEntry c;
    if (!c.ParseFromString(it->value().ToString()))
      return Err(Corruption("chunk record of inode " + std::to_string(ino)));
    if (c.index() > last) break;
    *r.add_chunks() = std::move(c);
  }
  return r;
}

Result<pb::AllocateChunkReply> MdsStore::AllocateChunk(uint64_t ino, uint64_t index,
                                                       const PlaceFn& place) {
  std::lock_guard lk(mu_);
  auto a = LoadInode(ino);
  if (!a) return Err(a.error());
  if (!S_ISREG(a->mode())) return Err(InvalidArgument("data for a file that is not regular"));
  pb::AllocateChunkReply r;
  std::string v;
  std::vector<uint32_t> current;
  if (db_->Get({}, Chunk(ino, index), &v).ok()) {
    pb::ChunkEntry cur;
    cur.ParseFromString(v);
    r.set_base_version(cur.version());
    current.assign(cur.dss().begin(), cur.dss().end());
  }
  auto placement = place(a->layout(), current);
  if (!placement) return Err(placement.error());
  for (uint32_t d : *placement) r.mutable_chunk()->add_dss(d);
  auto ver = NextCounter(kNextVersion);
  if (!ver) return Err(ver.error());
  r.mutable_chunk()->set_index(index);
  r.mutable_chunk()->set_version(*ver);
  return r;
}

bool MdsStore::WasAllocated(uint64_t version) {
  CounterState& c = counters_[kNextVersion];
  if (c.ceiling == 0) {  // nothing handed out since the start: the persisted bound
    std::string v;
    return db_->Get({}, kNextVersion, &v).ok() && v.size() == 8 && version < GetBe64(v.data());
  }
  return version < c.next;
}

Result<pb::Attr> MdsStore::CommitChunk(const pb::CommitChunkReq& req) {
  std::lock_guard lk(mu_);
  rocksdb::WriteBatch wb;
  auto a = LoadInode(req.ino());
  if (!a) {
    // The file went away while it was being written: its new shards are garbage.
    QueueGarbage(req.ino(), req.chunk(), wb);
    (void)Commit(wb);
    return a;
  }
  std::string v;
  uint64_t cur_version = 0;
  pb::ChunkEntry cur;
  if (db_->Get({}, Chunk(req.ino(), req.chunk().index()), &v).ok()) {
    cur.ParseFromString(v);
    cur_version = cur.version();
  }
  if (cur_version != req.base_version())
    return Err({Code::kStale, "chunk " + std::to_string(req.chunk().index()) + " is at version " +
                                  std::to_string(cur_version) + ", writer read " +
                                  std::to_string(req.base_version())});
  // Versions only grow, and only ones this MDS handed out are published: a
  // replayed or forged commit must not queue the live version as garbage.
  if (req.chunk().version() <= cur_version || !WasAllocated(req.chunk().version()))
    return Err(InvalidArgument("chunk version " + std::to_string(req.chunk().version()) +
                               " was not allocated for this write"));
  if (cur_version != 0) QueueGarbage(req.ino(), cur, wb);
  wb.Put(Chunk(req.ino(), req.chunk().index()), req.chunk().SerializeAsString());
  if (layout::IsDegraded(req.chunk())) wb.Put(Repair(req.ino(), req.chunk().index()), "");
  if (req.size_at_least() > a->size()) a->set_size(req.size_at_least());
  a->set_mtime_ns(req.mtime_ns() ? req.mtime_ns() : NowNs());
  a->set_ctime_ns(a->mtime_ns());
  wb.Put(Inode(req.ino()), a->SerializeAsString());
  RUSTFS_RETURN_ERR(Commit(wb));
  return a;
}

Result<pb::Attr> MdsStore::Punch(const pb::PunchReq& req) {
  std::lock_guard lk(mu_);
  auto a = LoadInode(req.ino());
  if (!a) return a;
  if (!S_ISREG(a->mode())) return Err(InvalidArgument("punch of a file that is not regular"));
  rocksdb::WriteBatch wb;
  const uint64_t end = req.first_index() + req.count() < req.first_index()
                           ? UINT64_MAX : req.first_index() + req.count();
  RUSTFS_RETURN_ERR(DropChunks(req.ino(), req.first_index(), end, wb));
  const int64_t now = NowNs();
  a->set_mtime_ns(now);
  a->set_ctime_ns(now);
  wb.Put(Inode(req.ino()), a->SerializeAsString());
  RUSTFS_RETURN_ERR(Commit(wb));
  return a;
}

std::vector<std::pair<std::string, pb::Garbage>> MdsStore::PeekGarbage(size_t max, int64_t now_ns) {
  std::lock_guard lk(mu_);
  std::vector<std::pair<std::string, pb::Garbage>> out;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator({}));
  for (it->Seek("G"); it->Valid() && it->key().starts_with("G") && out.size() < max; it->Next()) {
    pb::Garbage g;
    g.ParseFromString(it->value().ToString());
    // Queued in time order (nearly: a requeued entry is due up to 30 s
    // after those queued behind it, which then wait that long): the first
    // one not yet due ends the walk.
    if (g.not_before_ns() > now_ns) break;
    out.emplace_back(it->key().ToString(), std::move(g));
  }
  return out;
}

Status MdsStore::RequeueGarbage(const std::string& key, uint64_t ino, const pb::ChunkEntry& left,
                               int64_t not_before_ns) {
  std::lock_guard lk(mu_);
  rocksdb::WriteBatch wb;
  wb.Delete(key);
  QueueGarbage(ino, left, wb, not_before_ns);
  return Commit(wb);
}

Status MdsStore::DropGarbage(const std::string& key) {
  std::lock_guard lk(mu_);
  rocksdb::WriteBatch wb;
  wb.Delete(key);
  return Commit(wb);
}

Status MdsStore::RecordBadShard(const pb::ReportBadShardReq& req) {
  std::lock_guard lk(mu_);
  rocksdb::WriteBatch wb;
  std::string k = BadShardPrefix(req.ino(), req.index());
  PutBe64(k, req.version());
  PutBe64(k, req.shard());
  wb.Put(k, req.SerializeAsString());
  wb.Put(Repair(req.ino(), req.index()), "");
  return Commit(wb);
}

}  // namespace rustfs::mds

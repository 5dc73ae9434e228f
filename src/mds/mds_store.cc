#include "mds/mds_store.h"

#include <rocksdb/write_batch.h>
#include <sys/stat.h>

#include <ctime>

namespace rustfs::mds {

namespace {

void PutBe64(std::string& s, uint64_t v) {
  for (int i = 7; i >= 0; i--) s.push_back(char(v >> (8 * i)));
}
uint64_t GetBe64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = (v << 8) | uint8_t(p[i]);
  return v;
}
std::string InodeKey(uint64_t ino) {
  std::string k = "I";
  PutBe64(k, ino);
  return k;
}
std::string DirPrefix(uint64_t parent) {
  std::string k = "D";
  PutBe64(k, parent);
  return k;
}
std::string DirentKey(uint64_t parent, const std::string& name) { return DirPrefix(parent) + name; }
std::string ChunkPrefix(uint64_t ino) {
  std::string k = "C";
  PutBe64(k, ino);
  return k;
}
std::string ChunkKey(uint64_t ino, uint64_t index) {
  std::string k = ChunkPrefix(ino);
  PutBe64(k, index);
  return k;
}
std::string GarbageKey(uint64_t seq) {
  std::string k = "G";
  PutBe64(k, seq);
  return k;
}
const char* kNextIno = "Mnext_ino";
const char* kNextVersion = "Mnext_version";
const char* kNextGarbage = "Mnext_garbage";

bool IsDir(const pb::Attr& a) { return S_ISDIR(a.mode()); }

Status CheckName(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos)
    return InvalidArgument("bad file name '" + name + "'");
  if (name.size() > 255) return {Code::kNameTooLong, "file name longer than 255 bytes"};
  return Status::Ok();
}

rocksdb::WriteOptions SyncWrite() {
  rocksdb::WriteOptions o;
  o.sync = true;  // acknowledged means on disk: survives SIGKILL and power loss
  return o;
}

}  // namespace

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

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
  if (db_->Get({}, InodeKey(kRootIno), &v).ok()) return Status::Ok();
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
  wb.Put(InodeKey(kRootIno), root.SerializeAsString());
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
  rocksdb::Status s = db_->Get({}, InodeKey(ino), &v);
  if (s.IsNotFound()) return Err(NotFound("inode " + std::to_string(ino)));
  if (!s.ok()) return Err(IoError(s.ToString()));
  pb::Attr a;
  if (!a.ParseFromString(v)) return Err(Corruption("inode record " + std::to_string(ino)));
  return a;
}

Result<pb::Dirent> MdsStore::LoadDirent(uint64_t parent, const std::string& name) {
  std::string v;
  rocksdb::Status s = db_->Get({}, DirentKey(parent, name), &v);
  if (s.IsNotFound()) return Err(NotFound("'" + name + "' in directory " + std::to_string(parent)));
  if (!s.ok()) return Err(IoError(s.ToString()));
  pb::Dirent d;
  if (!d.ParseFromString(v)) return Err(Corruption("dirent '" + name + "'"));
  return d;
}

Result<uint64_t> MdsStore::NextCounter(const std::string& key, rocksdb::WriteBatch& wb) {
  std::string v;
  uint64_t cur = 1;
  rocksdb::Status s = db_->Get({}, key, &v);
  if (s.ok() && v.size() == 8) cur = GetBe64(v.data());
  std::string next;
  PutBe64(next, cur + 1);
  wb.Put(key, next);
  return cur;
}

bool MdsStore::DirIsEmpty(uint64_t ino) {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator({}));
  std::string prefix = DirPrefix(ino);
  it->Seek(prefix);
  return !(it->Valid() && it->key().starts_with(prefix));
}

void MdsStore::QueueGarbage(uint64_t ino, const pb::ChunkEntry& c, rocksdb::WriteBatch& wb) {
  pb::Garbage g;
  g.set_ino(ino);
  *g.mutable_chunk() = c;
  wb.Put(GarbageKey(garbage_seq_++), g.SerializeAsString());
  std::string next;
  PutBe64(next, garbage_seq_);
  wb.Put(kNextGarbage, next);
}

bool MdsStore::HasChunks(uint64_t ino) {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator({}));
  it->Seek(ChunkPrefix(ino));
  return it->Valid() && it->key().starts_with(ChunkPrefix(ino));
}

Status MdsStore::DropChunksFrom(uint64_t ino, uint64_t first_index, rocksdb::WriteBatch& wb) {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator({}));
  std::string prefix = ChunkPrefix(ino);
  for (it->Seek(ChunkKey(ino, first_index)); it->Valid() && it->key().starts_with(prefix);
       it->Next()) {
    pb::ChunkEntry c;
    if (!c.ParseFromString(it->value().ToString()))
      return Corruption("chunk record of inode " + std::to_string(ino));
    QueueGarbage(ino, c, wb);
    wb.Delete(it->key());
  }
  return Status::Ok();
}

Result<pb::Attr> MdsStore::Lookup(uint64_t parent, const std::string& name) {
  std::lock_guard lk(mu_);
  auto p = LoadInode(parent);
  if (!p) return p;
  if (!IsDir(*p)) return Err({Code::kNotDirectory, "inode " + std::to_string(parent)});
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
  uint32_t v = req.valid();
  if (v & pb::SET_MODE) a->set_mode((a->mode() & S_IFMT) | (req.mode() & 07777));
  if (v & pb::SET_UID) a->set_uid(req.uid());
  if (v & pb::SET_GID) a->set_gid(req.gid());
  if (v & pb::SET_ATIME) a->set_atime_ns(req.atime_ns());
  if (v & pb::SET_MTIME) a->set_mtime_ns(req.mtime_ns());
  if (v & pb::SET_LAYOUT) {
    // Data already placed keeps its layout, so only a directory (for files
    // created in it later) or a file with no data yet can change.
    if (!IsDir(*a) && (a->size() != 0 || HasChunks(req.ino())))
      return Err({Code::kInvalidArgument, "layout of a file that has data cannot change"});
    *a->mutable_layout() = req.layout();
  }
  if (v & pb::SET_SIZE) {
    if (IsDir(*a)) return Err({Code::kIsDirectory, "truncate of a directory"});
    uint64_t cs = a->layout().chunk_size();
    if (req.size() < a->size()) {
      // Chunks wholly past the new end go; the client has already zeroed
      // the tail of the chunk the new end falls in, so a later extension
      // reads zeros there as POSIX requires.
      RUSTFS_RETURN_ERR(DropChunksFrom(req.ino(), (req.size() + cs - 1) / cs, wb));
    }
    a->set_size(req.size());
    if (!(v & pb::SET_MTIME)) a->set_mtime_ns(NowNs());
  }
  a->set_ctime_ns(NowNs());
  wb.Put(InodeKey(req.ino()), a->SerializeAsString());
  RUSTFS_RETURN_ERR(Commit(wb));
  return a;
}

Result<pb::Attr> MdsStore::Create(const pb::CreateReq& req, bool is_dir) {
  if (auto st = CheckName(req.name()); !st.ok()) return Err(st);
  std::lock_guard lk(mu_);
  auto parent = LoadInode(req.parent());
  if (!parent) return parent;
  if (!IsDir(*parent)) return Err({Code::kNotDirectory, "parent is not a directory"});
  if (auto d = LoadDirent(req.parent(), req.name()); d) {
    if (req.exclusive() || is_dir) return Err({Code::kAlreadyExists, "'" + req.name() + "' exists"});
    return LoadInode(d->ino());
  }
  rocksdb::WriteBatch wb;
  auto ino = NextCounter(kNextIno, wb);
  if (!ino) return Err(ino.error());
  int64_t now = NowNs();
  pb::Attr a;
  a.set_ino(*ino);
  a.set_mode((is_dir ? S_IFDIR : S_IFREG) | (req.mode() & 07777));
  a.set_uid(req.uid());
  a.set_gid(req.gid());
  a.set_nlink(is_dir ? 2 : 1);
  a.set_atime_ns(now);
  a.set_mtime_ns(now);
  a.set_ctime_ns(now);
  *a.mutable_layout() = parent->layout();
  if (is_dir) {
    a.set_parent(req.parent());
    parent->set_nlink(parent->nlink() + 1);
  }
  parent->set_mtime_ns(now);
  parent->set_ctime_ns(now);
  pb::Dirent d;
  d.set_ino(*ino);
  d.set_mode(a.mode());
  wb.Put(InodeKey(*ino), a.SerializeAsString());
  wb.Put(InodeKey(req.parent()), parent->SerializeAsString());
  wb.Put(DirentKey(req.parent(), req.name()), d.SerializeAsString());
  RUSTFS_RETURN_ERR(Commit(wb));
  return a;
}

Result<pb::ReadDirReply> MdsStore::ReadDir(uint64_t ino, const std::string& after, uint32_t max) {
  std::lock_guard lk(mu_);
  auto a = LoadInode(ino);
  if (!a) return Err(a.error());
  if (!IsDir(*a)) return Err({Code::kNotDirectory, "inode " + std::to_string(ino)});
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

Status MdsStore::Unlink(uint64_t parent, const std::string& name) {
  std::lock_guard lk(mu_);
  auto d = LoadDirent(parent, name);
  if (!d) return d.error();
  auto a = LoadInode(d->ino());
  if (!a) return a.error();
  if (IsDir(*a)) return {Code::kIsDirectory, "'" + name + "' is a directory"};
  rocksdb::WriteBatch wb;
  RUSTFS_RETURN_IF_ERROR(DropChunksFrom(d->ino(), 0, wb));
  wb.Delete(InodeKey(d->ino()));
  wb.Delete(DirentKey(parent, name));
  if (auto p = LoadInode(parent); p) {
    p->set_mtime_ns(NowNs());
    p->set_ctime_ns(p->mtime_ns());
    wb.Put(InodeKey(parent), p->SerializeAsString());
  }
  return Commit(wb);
}

Status MdsStore::Rmdir(uint64_t parent, const std::string& name) {
  std::lock_guard lk(mu_);
  auto d = LoadDirent(parent, name);
  if (!d) return d.error();
  auto a = LoadInode(d->ino());
  if (!a) return a.error();
  if (!IsDir(*a)) return {Code::kNotDirectory, "'" + name + "' is not a directory"};
  if (!DirIsEmpty(d->ino())) return {Code::kNotEmpty, "'" + name + "' is not empty"};
  rocksdb::WriteBatch wb;
  wb.Delete(InodeKey(d->ino()));
  wb.Delete(DirentKey(parent, name));
  auto p = LoadInode(parent);
  if (!p) return p.error();
  p->set_nlink(p->nlink() - 1);
  p->set_mtime_ns(NowNs());
  p->set_ctime_ns(p->mtime_ns());
  wb.Put(InodeKey(parent), p->SerializeAsString());
  return Commit(wb);
}

Status MdsStore::Rename(const pb::RenameReq& req) {
  RUSTFS_RETURN_IF_ERROR(CheckName(req.new_name()));
  constexpr uint32_t kNoReplace = 1;  // RENAME_NOREPLACE
  if (req.flags() & ~kNoReplace) return InvalidArgument("rename flags not supported");
  std::lock_guard lk(mu_);
  auto src = LoadDirent(req.parent(), req.name());
  if (!src) return src.error();
  auto src_attr = LoadInode(src->ino());
  if (!src_attr) return src_attr.error();
  auto np = LoadInode(req.new_parent());
  if (!np) return np.error();
  if (!IsDir(*np)) return {Code::kNotDirectory, "rename target parent is not a directory"};
  bool src_dir = IsDir(*src_attr);
  if (src_dir) {
    // Moving a directory under itself would detach a cycle from the tree.
    for (uint64_t cur = req.new_parent();; ) {
      if (cur == src->ino()) return InvalidArgument("cannot move a directory into itself");
      if (cur == kRootIno) break;
      auto c = LoadInode(cur);
      if (!c) return c.error();
      cur = c->parent();
    }
  }
  rocksdb::WriteBatch wb;
  auto dst = LoadDirent(req.new_parent(), req.new_name());
  if (dst) {
    if (dst->ino() == src->ino()) return Status::Ok();
    if (req.flags() & kNoReplace) return {Code::kAlreadyExists, "'" + req.new_name() + "' exists"};
    auto dst_attr = LoadInode(dst->ino());
    if (!dst_attr) return dst_attr.error();
    if (IsDir(*dst_attr)) {
      if (!src_dir) return {Code::kIsDirectory, "'" + req.new_name() + "' is a directory"};
      if (!DirIsEmpty(dst->ino())) return {Code::kNotEmpty, "'" + req.new_name() + "' not empty"};
      np->set_nlink(np->nlink() - 1);
    } else {
      if (src_dir) return {Code::kNotDirectory, "'" + req.new_name() + "' is not a directory"};
      RUSTFS_RETURN_IF_ERROR(DropChunksFrom(dst->ino(), 0, wb));
    }
    wb.Delete(InodeKey(dst->ino()));
  }
  int64_t now = NowNs();
  wb.Delete(DirentKey(req.parent(), req.name()));
  wb.Put(DirentKey(req.new_parent(), req.new_name()), src->SerializeAsString());
  src_attr->set_ctime_ns(now);
  if (src_dir && req.parent() != req.new_parent()) {
    src_attr->set_parent(req.new_parent());
    np->set_nlink(np->nlink() + 1);
  }
  wb.Put(InodeKey(src->ino()), src_attr->SerializeAsString());
  np->set_mtime_ns(now);
  np->set_ctime_ns(now);
  if (req.parent() != req.new_parent()) {
    auto op = LoadInode(req.parent());
    if (!op) return op.error();
    if (src_dir) op->set_nlink(op->nlink() - 1);
    op->set_mtime_ns(now);
    op->set_ctime_ns(now);
    wb.Put(InodeKey(req.parent()), op->SerializeAsString());
  }
  wb.Put(InodeKey(req.new_parent()), np->SerializeAsString());
  return Commit(wb);
}

uint64_t MdsStore::FileCount() {
  std::lock_guard lk(mu_);
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
  uint64_t first = offset / cs;
  // length 0, or a range running past 2^64, means "to the end of the file".
  uint64_t last = (length == 0 || offset + length < offset) ? UINT64_MAX : (offset + length - 1) / cs;
  std::string prefix = ChunkPrefix(ino);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator({}));
  for (it->Seek(ChunkKey(ino, first)); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    pb::ChunkEntry c;
    if (!c.ParseFromString(it->value().ToString()))
      return Err(Corruption("chunk record of inode " + std::to_string(ino)));
    if (c.index() > last) break;
    *r.add_chunks() = std::move(c);
  }
  return r;
}

Result<pb::AllocateChunkReply> MdsStore::AllocateChunk(uint64_t ino, uint64_t index,
                                                       const std::vector<uint32_t>& placement) {
  std::lock_guard lk(mu_);
  auto a = LoadInode(ino);
  if (!a) return Err(a.error());
  pb::AllocateChunkReply r;
  std::string v;
  if (db_->Get({}, ChunkKey(ino, index), &v).ok()) {
    pb::ChunkEntry cur;
    cur.ParseFromString(v);
    r.set_base_version(cur.version());
    *r.mutable_chunk()->mutable_dss() = cur.dss();
  } else {
    for (uint32_t d : placement) r.mutable_chunk()->add_dss(d);
  }
  rocksdb::WriteBatch wb;
  auto ver = NextCounter(kNextVersion, wb);
  if (!ver) return Err(ver.error());
  RUSTFS_RETURN_ERR(Commit(wb));
  r.mutable_chunk()->set_index(index);
  r.mutable_chunk()->set_version(*ver);
  return r;
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
  if (db_->Get({}, ChunkKey(req.ino(), req.chunk().index()), &v).ok()) {
    cur.ParseFromString(v);
    cur_version = cur.version();
  }
  if (cur_version != req.base_version())
    return Err({Code::kStale, "chunk " + std::to_string(req.chunk().index()) + " is at version " +
                                  std::to_string(cur_version) + ", writer read " +
                                  std::to_string(req.base_version())});
  if (cur_version != 0) QueueGarbage(req.ino(), cur, wb);
  wb.Put(ChunkKey(req.ino(), req.chunk().index()), req.chunk().SerializeAsString());
  if (req.size_at_least() > a->size()) a->set_size(req.size_at_least());
  a->set_mtime_ns(req.mtime_ns() ? req.mtime_ns() : NowNs());
  a->set_ctime_ns(a->mtime_ns());
  wb.Put(InodeKey(req.ino()), a->SerializeAsString());
  RUSTFS_RETURN_ERR(Commit(wb));
  return a;
}

std::vector<std::pair<std::string, pb::Garbage>> MdsStore::PeekGarbage(size_t max) {
  std::lock_guard lk(mu_);
  std::vector<std::pair<std::string, pb::Garbage>> out;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator({}));
  for (it->Seek("G"); it->Valid() && it->key().starts_with("G") && out.size() < max; it->Next()) {
    pb::Garbage g;
    g.ParseFromString(it->value().ToString());
    out.emplace_back(it->key().ToString(), std::move(g));
  }
  return out;
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
  std::string k = "B";
  PutBe64(k, req.ino());
  PutBe64(k, req.index());
  PutBe64(k, req.version());
  PutBe64(k, req.shard());
  wb.Put(k, req.SerializeAsString());
  return Commit(wb);
}

}  // namespace rustfs::mds

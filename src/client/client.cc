#include "client/client.h"

#include <cstring>
#include <thread>

#include "common/log.h"

namespace rustfs::client {

namespace {
// Buffered chunks per file before the oldest are published: bounds client
// memory (4 x chunk_size) while letting sequential writes fill whole chunks.
constexpr size_t kMaxDirtyChunks = 4;

Result<pb::Attr> AttrOf(Result<pb::AttrReply> r) {
  if (!r) return Err(r.error());
  return std::move(*r->mutable_attr());
}
}  // namespace

Client::Client(const Config& cfg)
    : cfg_(cfg),
      mds_(cfg.mds.address, cfg.client.rpc_timeout_ms),
      app_bytes_read_(GetCounter("client.app_bytes_read")),
      app_bytes_written_(GetCounter("client.app_bytes_written")),
      app_reads_(GetCounter("client.app_reads")) {}

Result<std::unique_ptr<Client>> Client::Create(const Config& cfg) {
  std::unique_ptr<Client> c(new Client(cfg));
  RUSTFS_RETURN_ERR(c->Connect());
  return c;
}

Status Client::Connect() {
  auto list = mds_.Call<pb::ListDssReply>(pb::M_LIST_DSS, pb::Empty());
  if (!list) return Unavailable("MDS at " + cfg_.mds.address + ": " + list.error().message());
  std::vector<std::string> addrs(list->dss_size());
  for (auto& d : list->dss())
    if (d.id() < addrs.size()) addrs[d.id()] = d.address();
  dss_ = std::make_unique<DssPool>(addrs, cfg_.client.rpc_timeout_ms);
  reader_ = std::make_unique<EcReader>(*dss_, mds_);
  writer_ = std::make_unique<EcWriter>(*dss_, mds_, *reader_);
  return Status::Ok();
}

Result<pb::Attr> Client::Lookup(uint64_t parent, const std::string& name) {
  pb::LookupReq r;
  r.set_parent(parent);
  r.set_name(name);
  return AttrOf(mds_.Call<pb::AttrReply>(pb::M_LOOKUP, r));
}

Result<pb::Attr> Client::GetAttr(uint64_t ino) {
  pb::GetAttrReq r;
  r.set_ino(ino);
  auto a = AttrOf(mds_.Call<pb::AttrReply>(pb::M_GETATTR, r));
  if (!a) return a;
  std::shared_ptr<FileState> st;
  {
    std::lock_guard lk(open_mu_);
    auto it = open_.find(ino);
    if (it != open_.end()) st = it->second;
  }
  if (st) {
    std::shared_lock lk(st->mu);
    if (!st->dirty.empty()) a->set_size(std::max(a->size(), st->attr.size()));
  }
  return a;
}

Result<pb::Attr> Client::SetAttr(const pb::SetAttrReq& req) {
  if (!(req.valid() & pb::SET_SIZE)) return AttrOf(mds_.Call<pb::AttrReply>(pb::M_SETATTR, req));
  std::shared_ptr<FileState> st;
  {
    std::lock_guard lk(open_mu_);
    auto it = open_.find(req.ino());
    if (it != open_.end()) st = it->second;
  }
  if (!st) {  // truncate(2) of a file nobody here has open
    auto s = LoadState(req.ino());
    if (!s) return Err(s.error());
    st = *s;
  }
  std::unique_lock lk(st->mu);
  RUSTFS_RETURN_ERR(FlushLocked(*st));
  if (req.size() < st->attr.size()) RUSTFS_RETURN_ERR(ZeroTail(*st, req.size()));
  auto a = AttrOf(mds_.Call<pb::AttrReply>(pb::M_SETATTR, req));
  if (!a) return a;
  st->attr = *a;
  uint64_t keep = (a->size() + st->geo.chunk_size - 1) / st->geo.chunk_size;
  st->chunks.erase(st->chunks.lower_bound(keep), st->chunks.end());
  return a;
}

// POSIX: bytes cut off by a truncate read as zeros if the file grows again.
// Chunks wholly past the end are dropped by the MDS; the chunk the new end
// falls inside is rewritten with zeros from the new end on.
Status Client::ZeroTail(FileState& st, uint64_t new_size) {
  const uint64_t cs = st.geo.chunk_size;
  uint64_t index = new_size / cs;
  uint64_t from = new_size % cs;
  if (from == 0 || !st.chunks.count(index)) return Status::Ok();
  uint64_t to = std::min(st.attr.size(), (index + 1) * cs) - index * cs;
  if (to <= from) return Status::Ok();
  DirtyChunk d;
  d.data.assign(cs, '\0');
  d.ranges.Add(from, to);
  return writer_->FlushChunk(st, index, d, /*grow_size=*/false);
}

Result<pb::Attr> Client::Create(uint64_t parent, const std::string& name, uint32_t mode,
                                uint32_t uid, uint32_t gid, bool exclusive) {
  pb::CreateReq r;
  r.set_parent(parent);
  r.set_name(name);
  r.set_mode(mode);
  r.set_uid(uid);
  r.set_gid(gid);
  r.set_exclusive(exclusive);
  return AttrOf(mds_.Call<pb::AttrReply>(pb::M_CREATE, r));
}

Result<pb::Attr> Client::Mkdir(uint64_t parent, const std::string& name, uint32_t mode,
                               uint32_t uid, uint32_t gid) {
  pb::CreateReq r;
  r.set_parent(parent);
  r.set_name(name);
  r.set_mode(mode);
  r.set_uid(uid);
  r.set_gid(gid);
  return AttrOf(mds_.Call<pb::AttrReply>(pb::M_MKDIR, r));
}

Result<pb::ReadDirReply> Client::ReadDir(uint64_t ino, const std::string& after, uint32_t max) {
  pb::ReadDirReq r;
  r.set_ino(ino);
  r.set_after(after);
  r.set_max(max);
  return mds_.Call<pb::ReadDirReply>(pb::M_READDIR, r);
}

Status Client::Unlink(uint64_t parent, const std::string& name) {
  pb::NameReq r;
  r.set_parent(parent);
  r.set_name(name);
  return mds_.CallStatus(pb::M_UNLINK, r);
}

Status Client::Rmdir(uint64_t parent, const std::string& name) {
  pb::NameReq r;
  r.set_parent(parent);
  r.set_name(name);
  return mds_.CallStatus(pb::M_RMDIR, r);
}

Status Client::Rename(uint64_t parent, const std::string& name, uint64_t new_parent,
                      const std::string& new_name, uint32_t flags) {
  pb::RenameReq r;
  r.set_parent(parent);
  r.set_name(name);
  r.set_new_parent(new_parent);
  r.set_new_name(new_name);
  r.set_flags(flags);
  return mds_.CallStatus(pb::M_RENAME, r);
}

Result<pb::StatFsReply> Client::StatFs() {
  return mds_.Call<pb::StatFsReply>(pb::M_STATFS, pb::Empty());
}

Result<std::shared_ptr<FileState>> Client::LoadState(uint64_t ino) {
  pb::GetChunkMapReq r;
  r.set_ino(ino);
  r.set_length(0);  // the whole map: reads then need no MDS at all
  auto m = mds_.Call<pb::GetChunkMapReply>(pb::M_GET_CHUNK_MAP, r);
  if (!m) return Err(m.error());
  if (m->attr().layout().kind() != 0)
    return Err(InvalidArgument("inode " + std::to_string(ino) +
                               " uses a replicated layout, which this client cannot read yet"));
  auto st = std::make_shared<FileState>();
  st->ino = ino;
  st->attr = m->attr();
  st->geo = GeometryOf(m->attr().layout());
  for (auto& c : m->chunks()) st->chunks[c.index()] = c;
  return st;
}

Result<std::shared_ptr<OpenFile>> Client::Open(uint64_t ino) {
  {
    std::lock_guard lk(open_mu_);
    auto it = open_.find(ino);
    if (it != open_.end()) {
      it->second->opens++;
      return std::make_shared<OpenFile>(OpenFile{it->second});
    }
  }
  auto st = LoadState(ino);
  if (!st) return Err(st.error());
  std::lock_guard lk(open_mu_);
  auto [it, inserted] = open_.emplace(ino, *st);  // another opener may have won
  it->second->opens++;
  return std::make_shared<OpenFile>(OpenFile{it->second});
}

Result<size_t> Client::Read(OpenFile& f, uint64_t offset, size_t len, char* buf) {
  FileState& st = *f.state;
  std::shared_lock rl(st.mu);
  std::unique_lock<std::shared_mutex> wl;
  if (!st.dirty.empty()) {
    // Read-your-writes: publish buffered writes, then read them back.
    rl.unlock();
    wl = std::unique_lock(st.mu);
    RUSTFS_RETURN_ERR(FlushLocked(st));
  }
  app_reads_.Inc();
  uint64_t size = st.attr.size();
  if (offset >= size || len == 0) return 0;
  len = std::min<uint64_t>(len, size - offset);
  app_bytes_read_.Add(len);
  std::vector<ReadExtent> extents;
  for (auto& s : layout::SplitFileRange(st.geo.chunk_size, offset, len)) {
    auto it = st.chunks.find(s.chunk_index);
    if (it == st.chunks.end()) {
      std::memset(buf + s.buf_offset, 0, s.length);  // a hole
      continue;
    }
    extents.push_back({&it->second, s.chunk_offset, s.length, buf + s.buf_offset});
  }
  if (!extents.empty()) RUSTFS_RETURN_ERR(reader_->Read(st.ino, st.geo, extents));
  return len;
}

Status Client::Write(OpenFile& f, uint64_t offset, const char* data, size_t len) {
  FileState& st = *f.state;
  std::unique_lock lk(st.mu);
  app_bytes_written_.Add(len);
  const uint64_t cs = st.geo.chunk_size;
  for (auto& s : layout::SplitFileRange(cs, offset, len)) {
    DirtyChunk& d = st.dirty[s.chunk_index];
    if (d.data.empty()) d.data.assign(cs, '\0');
    std::memcpy(d.data.data() + s.chunk_offset, data + s.buf_offset, s.length);
    d.ranges.Add(s.chunk_offset, s.chunk_offset + s.length);
    if (d.ranges.Covers(0, cs)) RUSTFS_RETURN_IF_ERROR(FlushOne(st, s.chunk_index));
  }
  if (offset + len > st.attr.size()) st.attr.set_size(offset + len);
  while (st.dirty.size() > kMaxDirtyChunks)
    RUSTFS_RETURN_IF_ERROR(FlushOne(st, st.dirty.begin()->first));
  return Status::Ok();
}

Status Client::FlushOne(FileState& st, uint64_t index, bool grow_size) {
  // The buffer is dropped whether or not the flush succeeds: a failed write
  // is reported to the caller (write, fsync or close), as on any POSIX
  // filesystem, and the file keeps its last published contents.
  auto node = st.dirty.extract(index);
  if (node.empty()) return Status::Ok();
  Status s = writer_->FlushChunk(st, index, node.mapped(), grow_size);
  if (!s.ok()) LOG_WARN("flush of inode {} chunk {} failed: {}", st.ino, index, s.ToString());
  return s;
}

Status Client::FlushLocked(FileState& st) {
  Status first;
  while (!st.dirty.empty()) {
    Status s = FlushOne(st, st.dirty.begin()->first);
    if (first.ok()) first = s;
  }
  if (!first.ok()) {
    // Resynchronize size with what was actually published.
    pb::GetAttrReq r;
    r.set_ino(st.ino);
    if (auto a = AttrOf(mds_.Call<pb::AttrReply>(pb::M_GETATTR, r)); a) st.attr.set_size(a->size());
  }
  return first;
}

Status Client::Flush(OpenFile& f) {
  std::unique_lock lk(f.state->mu);
  return FlushLocked(*f.state);
}

Status Client::Release(std::shared_ptr<OpenFile> f) {
  Status s = Flush(*f);
  std::lock_guard lk(open_mu_);
  if (--f->state->opens == 0) open_.erase(f->state->ino);
  return s;
}

std::map<std::string, uint64_t> Client::Stats() const { return SnapshotCounters(); }

}  // namespace rustfs::client

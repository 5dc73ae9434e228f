// Client: names, attributes (including truncate), links and extended
// attributes. Attributes and entries are cached under the lease session;
// an open file's own state (buffered writes, our commits) knows its size
// and times best.
#include <sys/stat.h>

#include "client/client.h"
#include "common/log.h"

namespace rustfs::client {

namespace {

Result<pb::Attr> AttrOf(Result<pb::AttrReply> r) {
  if (!r) return Err(r.error());
  return std::move(*r->mutable_attr());
}

}  // namespace

std::shared_ptr<FileState> Client::FindOpen(uint64_t ino) {
  std::lock_guard lk(open_mu_);
  auto it = open_.find(ino);
  return it == open_.end() ? nullptr : it->second;
}

void Client::CacheAttr(const pb::Attr& a, uint64_t seq_at_start) {
  std::lock_guard lk(meta_mu_);
  if (revoke_seq_.load() != seq_at_start) return;  // may predate a revocation
  attrs_[a.ino()] = a;
}

void Client::ForgetAttr(uint64_t ino) {
  std::lock_guard lk(meta_mu_);
  attrs_.erase(ino);
}

void Client::ForgetEntry(uint64_t parent, const std::string& name) {
  std::lock_guard lk(meta_mu_);
  auto e = entries_.find({parent, name});
  if (e != entries_.end()) {
    attrs_.erase(e->second);
    entries_.erase(e);
  }
  attrs_.erase(parent);  // its times (and maybe nlink) changed
}

// What the MDS said of an inode this client has open, combined with what
// only the client knows: the size its buffered writes reach.
void Client::AdoptAttr(const pb::Attr& a, uint64_t seq_at_start) {
  CacheAttr(a, seq_at_start);
  if (auto st = FindOpen(a.ino())) {
    std::unique_lock lk(st->mu);
    const uint64_t local = st->attr.size();
    const bool dirty = !st->dirty.empty();
    st->attr = a;
    if (dirty) st->attr.set_size(std::max(local, a.size()));
  }
}

// Writes buffered here are the file's, though not yet published: its size
// and times include them. (Without buffered writes the MDS's attributes are
// current: our publications drop the cached ones.)
void Client::OverlayOpen(pb::Attr& a) {
  auto st = FindOpen(a.ino());
  if (!st) return;
  std::shared_lock lk(st->mu);
  if (st->dirty.empty()) return;
  a.set_size(std::max(a.size(), st->attr.size()));
  a.set_mtime_ns(st->attr.mtime_ns());
  a.set_ctime_ns(st->attr.ctime_ns());
}

Result<pb::Attr> Client::Lookup(uint64_t parent, const std::string& name) {
  static Counter& hits = GetCounter("client.meta_cache_hits");
  Result<pb::Attr> a = Err(NotFound(""));
  if (LeaseValid()) {
    std::lock_guard lk(meta_mu_);
    auto e = entries_.find({parent, name});
    if (e != entries_.end()) {
      auto it = attrs_.find(e->second);
      if (it != attrs_.end()) {
        hits.Inc();
        a = it->second;
      }
    }
  }
  if (!a) {
    uint64_t seq = revoke_seq_.load();
    pb::LookupReq r;
    r.set_parent(parent);
    r.set_name(name);
    r.set_client_id(client_id_);
    a = AttrOf(mds_.Call<pb::AttrReply>(pb::M_LOOKUP, r));
    if (!a) return a;
    CacheAttr(*a, seq);
    std::lock_guard lk(meta_mu_);
    if (revoke_seq_.load() == seq) entries_[{parent, name}] = a->ino();
  }
  OverlayOpen(*a);
  return a;
}

Result<pb::Attr> Client::GetAttr(uint64_t ino) {
  static Counter& hits = GetCounter("client.meta_cache_hits");
  Result<pb::Attr> a = Err(NotFound(""));
  if (LeaseValid()) {
    std::lock_guard lk(meta_mu_);
    auto it = attrs_.find(ino);
    if (it != attrs_.end()) {
      hits.Inc();
      a = it->second;
    }
  }
  if (!a) {
    uint64_t seq = revoke_seq_.load();
    pb::GetAttrReq r;
    r.set_ino(ino);
    r.set_client_id(client_id_);
    a = AttrOf(mds_.Call<pb::AttrReply>(pb::M_GETATTR, r));
    if (!a) return a;
    CacheAttr(*a, seq);
  }
  OverlayOpen(*a);
  return a;
}

Status Client::FlushIfOpen(uint64_t ino) {
  auto st = FindOpen(ino);
  if (!st) return Status::Ok();
  std::unique_lock lk(st->mu);
  return FlushLocked(*st);
}

Result<pb::Attr> Client::SetAttr(const pb::SetAttrReq& in) {
  if (in.valid() & pb::SET_SIZE) return Truncate(in);
  pb::SetAttrReq req = in;
  req.set_client_id(client_id_);
  // Our buffered writes land before the change (cp -a: write, then chmod
  // and utimens; the writes' publication must not follow the new times).
  // A failed publication goes to the writers' fsync and close, as on a
  // local file system, not to this call.
  (void)FlushIfOpen(req.ino());
  uint64_t seq = revoke_seq_.load();
  auto a = AttrOf(mds_.Call<pb::AttrReply>(pb::M_SETATTR, req));
  if (a) AdoptAttr(*a, seq);
  return a;
}

// Truncation. The state is never locked across the MDS call: the MDS first
// recalls other clients' buffered writes, and one of them may be ours to
// answer on the callback thread.
Result<pb::Attr> Client::Truncate(const pb::SetAttrReq& in) {
  constexpr int kAttempts = 5;
  Result<pb::Attr> a = Err(Internal("truncate not attempted"));
  for (int attempt = 0; attempt < kAttempts; attempt++) {
    pb::SetAttrReq req = in;
    req.set_client_id(client_id_);
    std::shared_ptr<FileState> st = FindOpen(req.ino());
    const bool registered = st != nullptr;
    if (!st) {  // truncate(2) of a file nobody here has open
      auto s = LoadState(req.ino(), /*open=*/false);
      if (!s) return Err(s.error());
      st = *s;
    }
    // No plan bytes go to the kernel while the size changes.
    AddWriter(*st);
    struct Writing {
      FileState& st;
      ~Writing() { RemoveWriter(st); }
    } writing{*st};
    {
      std::unique_lock lk(st->mu);
      RUSTFS_RETURN_ERR(FlushLocked(*st));
      // Zeroing the tail must start from the file as it is now, not from a
      // state another client's writes have since changed.
      if (registered && (st->map_stale || !LeaseValid())) RUSTFS_RETURN_ERR(RefreshMap(*st));
      const uint64_t cs = st->geo.chunk_size;
      if (req.size() < st->attr.size() && req.size() % cs) {
        if (!MapCovers(*st, req.size(), 1)) RUSTFS_RETURN_ERR(FetchMap(*st, req.size(), 1));  // the tail chunk's
        RUSTFS_RETURN_ERR(ZeroTail(*st, req.size()));
        auto c = st->chunks.find(req.size() / cs);
        req.set_tail_version(c == st->chunks.end() ? 0 : c->second.version());
      }
    }
    uint64_t seq = revoke_seq_.load();
    a = AttrOf(mds_.Call<pb::AttrReply>(pb::M_SETATTR, req));
    if (!a && a.error().code() == Code::kStale) {  // the tail chunk changed meanwhile: again
      st->map_stale = true;
      continue;
    }
    if (!a) return a;
    if (fcache_) fcache_->Erase({req.ino()});
    {
      std::unique_lock lk(st->mu);
      st->attr = *a;
      const uint64_t keep = (a->size() + st->geo.chunk_size - 1) / st->geo.chunk_size;
      st->chunks.erase(st->chunks.lower_bound(keep), st->chunks.end());
    }
    CacheAttr(*a, seq);
    return a;
  }
  return a;
}

// POSIX: bytes cut off by a truncate read as zeros if the file grows again.
// Chunks wholly past the end are dropped by the MDS; the chunk the new end
// falls inside is rewritten with zeros from the new end on. Caller holds
// st.mu exclusively, with nothing buffered.
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
  Status s = writer_->FlushChunk(st, index, d, /*grow_size=*/false);
  ForgetAttr(st.ino);
  return s;
}

Status Client::SetLayout(uint64_t ino, const std::string& spec) {
  auto a = GetAttr(ino);
  if (!a) return a.error();
  pb::SetAttrReq req;
  req.set_ino(ino);
  req.set_valid(pb::SET_LAYOUT);
  *req.mutable_layout() = a->layout();
  RUSTFS_RETURN_IF_ERROR(layout::ParseLayoutSpec(spec, *req.mutable_layout()));
  auto r = SetAttr(req);  // publishes our buffered writes first; the MDS recalls others'
  if (!r) return r.error();
  if (auto st = FindOpen(ino)) {  // its geometry came from the old layout
    std::unique_lock lk(st->mu);
    st->map_stale = true;
  }
  return Status::Ok();
}

Result<pb::Attr> Client::CreateCommon(uint32_t method, pb::CreateReq& r) {
  r.set_client_id(client_id_);
  uint64_t seq = revoke_seq_.load();
  auto a = AttrOf(mds_.Call<pb::AttrReply>(method, r));
  if (!a) return a;
  ForgetEntry(r.parent(), r.name());
  CacheAttr(*a, seq);
  std::lock_guard lk(meta_mu_);
  if (revoke_seq_.load() == seq) entries_[{r.parent(), r.name()}] = a->ino();
  return a;
}

namespace {
pb::CreateReq MakeCreate(uint64_t parent, const std::string& name, uint32_t mode, uint32_t uid,
                         uint32_t gid) {
  pb::CreateReq r;
  r.set_parent(parent);
  r.set_name(name);
  r.set_mode(mode);
  r.set_uid(uid);
  r.set_gid(gid);
  return r;
}
}  // namespace

Result<pb::Attr> Client::Create(uint64_t parent, const std::string& name, uint32_t mode,
                                uint32_t uid, uint32_t gid, bool exclusive) {
  pb::CreateReq r = MakeCreate(parent, name, S_IFREG | (mode & 07777), uid, gid);
  r.set_exclusive(exclusive);
  return CreateCommon(pb::M_CREATE, r);
}

Result<pb::Attr> Client::Mkdir(uint64_t parent, const std::string& name, uint32_t mode,
                               uint32_t uid, uint32_t gid) {
  pb::CreateReq r = MakeCreate(parent, name, S_IFDIR | (mode & 07777), uid, gid);
  return CreateCommon(pb::M_MKDIR, r);
}

Result<pb::Attr> Client::Mknod(uint64_t parent, const std::string& name, uint32_t mode,
                               uint64_t rdev, uint32_t uid, uint32_t gid) {
  pb::CreateReq r = MakeCreate(parent, name, mode, uid, gid);
  r.set_rdev(rdev);
  r.set_exclusive(true);
  return CreateCommon(pb::M_CREATE, r);
}

Result<pb::Attr> Client::Symlink(uint64_t parent, const std::string& name,
                                 const std::string& target, uint32_t uid, uint32_t gid) {
  pb::CreateReq r = MakeCreate(parent, name, S_IFLNK | 0777, uid, gid);
  r.set_symlink(target);
  r.set_exclusive(true);
  return CreateCommon(pb::M_CREATE, r);
}

Result<std::string> Client::ReadLink(uint64_t ino) {
  auto a = GetAttr(ino);
  if (!a) return Err(a.error());
  if (!S_ISLNK(a->mode())) return Err(InvalidArgument("not a symbolic link"));
  return a->symlink();
}

Result<pb::Attr> Client::Link(uint64_t ino, uint64_t new_parent, const std::string& new_name) {
  pb::LinkReq r;
  r.set_ino(ino);
  r.set_new_parent(new_parent);
  r.set_new_name(new_name);
  r.set_client_id(client_id_);
  uint64_t seq = revoke_seq_.load();
  auto a = AttrOf(mds_.Call<pb::AttrReply>(pb::M_LINK, r));
  if (!a) return a;
  ForgetEntry(new_parent, new_name);
  AdoptAttr(*a, seq);
  OverlayOpen(*a);
  std::lock_guard lk(meta_mu_);
  if (revoke_seq_.load() == seq) entries_[{new_parent, new_name}] = ino;
  return a;
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
  r.set_client_id(client_id_);
  ForgetEntry(parent, name);
  // The MDS asks us (on the callback thread) whether we still have the
  // inode open; if so it lives on, nameless, until our last close.
  return mds_.CallStatus(pb::M_UNLINK, r);
}

Status Client::Rmdir(uint64_t parent, const std::string& name) {
  pb::NameReq r;
  r.set_parent(parent);
  r.set_name(name);
  r.set_client_id(client_id_);
  ForgetEntry(parent, name);
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
  r.set_client_id(client_id_);
  ForgetEntry(parent, name);
  ForgetEntry(new_parent, new_name);
  return mds_.CallStatus(pb::M_RENAME, r);
}

Result<pb::StatFsReply> Client::StatFs() {
  return mds_.Call<pb::StatFsReply>(pb::M_STATFS, pb::Empty());
}

Status Client::SetXattr(uint64_t ino, const std::string& name, const std::string& value,
                        uint32_t flags) {
  pb::XattrReq r;
  r.set_ino(ino);
  r.set_name(name);
  r.set_value(value);
  r.set_flags(flags);
  r.set_client_id(client_id_);
  uint64_t seq = revoke_seq_.load();
  auto a = AttrOf(mds_.Call<pb::AttrReply>(pb::M_SETXATTR, r));
  if (!a) return a.error();
  AdoptAttr(*a, seq);
  return Status::Ok();
}

Result<std::string> Client::GetXattr(uint64_t ino, const std::string& name) {
  // The kernel asks for security.capability before every write: an inode
  // with no attributes at all answers from the cached attributes.
  auto a = GetAttr(ino);
  if (!a) return Err(a.error());
  if (a->xattrs() == 0) return Err({Code::kNoData, "no extended attribute '" + name + "'"});
  pb::XattrReq r;
  r.set_ino(ino);
  r.set_name(name);
  auto rep = mds_.Call<pb::XattrReply>(pb::M_GETXATTR, r);
  if (!rep) return Err(rep.error());
  return std::move(*rep->mutable_value());
}

Result<std::vector<std::string>> Client::ListXattr(uint64_t ino) {
  auto a = GetAttr(ino);
  if (!a) return Err(a.error());
  if (a->xattrs() == 0) return std::vector<std::string>{};
  pb::XattrReq r;
  r.set_ino(ino);
  auto rep = mds_.Call<pb::XattrReply>(pb::M_LISTXATTR, r);
  if (!rep) return Err(rep.error());
  return std::vector<std::string>(rep->names().begin(), rep->names().end());
}

Status Client::RemoveXattr(uint64_t ino, const std::string& name) {
  pb::XattrReq r;
  r.set_ino(ino);
  r.set_name(name);
  r.set_client_id(client_id_);
  uint64_t seq = revoke_seq_.load();
  auto a = AttrOf(mds_.Call<pb::AttrReply>(pb::M_REMOVEXATTR, r));
  if (!a) return a.error();
  AdoptAttr(*a, seq);
  return Status::Ok();
}

}  // namespace rustfs::client

#include "client/client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
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

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The local IP the MDS would see us from: the callback server binds there,
// so the MDS can call back across hosts (or network namespaces) too.
std::string LocalAddressToward(const std::string& mds_address) {
  auto hp = net::SplitHostPort(mds_address);
  if (!hp) return "127.0.0.1";
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(hp->second);
  std::string ip = "127.0.0.1";
  if (fd >= 0 && ::inet_pton(AF_INET, hp->first.c_str(), &dst.sin_addr) == 1 &&
      ::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) == 0) {
    sockaddr_in me{};
    socklen_t len = sizeof me;
    char buf[INET_ADDRSTRLEN];
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&me), &len) == 0 &&
        ::inet_ntop(AF_INET, &me.sin_addr, buf, sizeof buf))
      ip = buf;
  }
  if (fd >= 0) ::close(fd);
  return ip;
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
  RUSTFS_RETURN_ERR(c->RegisterSession());
  if (cfg.fragment_cache.enabled) {
    auto fc = FragmentCache::Create(cfg.fragment_cache);
    if (!fc) return Err(fc.error());
    c->fcache_ = std::move(*fc);
    for (int i = 0; i < kPrefetchThreads; i++)
      c->prefetchers_.emplace_back([p = c.get()] { p->PrefetchLoop(); });
  }
  c->renew_ = std::thread([p = c.get()] { p->RenewLoop(); });
  return c;
}

Client::~Client() {
  {
    std::lock_guard lk(prefetch_mu_);
    stop_ = true;
  }
  prefetch_cv_.notify_all();
  for (auto& t : prefetchers_) t.join();
  if (renew_.joinable()) renew_.join();
  if (client_id_) {  // hand our leases back so no change waits for them to expire
    pb::RenewLeasesReq r;
    r.set_client_id(client_id_);
    (void)mds_.CallStatus(pb::M_END_SESSION, r);
  }
  if (callback_) callback_->Stop();
}

Status Client::RegisterSession() {
  if (!callback_) {
    callback_ = std::make_unique<net::RpcServer>("client.cb", 1);
    callback_->Handle(pb::M_REVOKE, [this](const std::string& body, std::string&,
                                           net::RpcReply& reply) -> Status {
      auto req = net::ParseBody<pb::RevokeReq>(body, "Revoke");
      if (!req) return req.error();
      OnRevoke(req->ino(), req->name());
      reply.body = pb::Empty().SerializeAsString();
      return Status::Ok();
    });
    RUSTFS_RETURN_IF_ERROR(callback_->Start(LocalAddressToward(cfg_.mds.address) + ":0"));
  }
  pb::RegisterClientReq r;
  r.set_callback_address(LocalAddressToward(cfg_.mds.address) + ":" +
                         std::to_string(callback_->port()));
  int64_t sent = SteadyNs();
  auto rep = mds_.Call<pb::RegisterClientReply>(pb::M_REGISTER_CLIENT, r);
  if (!rep) return rep.error();
  lease_ms_ = rep->lease_ms();
  client_id_ = rep->client_id();
  // Our clock starts the lease when we asked, before the MDS's did, and a
  // 10% margin covers clock-rate differences.
  lease_valid_until_ns_ = sent + int64_t(lease_ms_) * 900000;
  return Status::Ok();
}

void Client::RenewLoop() {
  while (!stop_) {
    for (uint32_t waited = 0; waited < lease_ms_ / 3 && !stop_; waited += 50)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (stop_) break;
    pb::RenewLeasesReq r;
    r.set_client_id(client_id_);
    int64_t sent = SteadyNs();
    Status s = mds_.CallStatus(pb::M_RENEW_LEASES, r);
    if (s.ok()) {
      lease_valid_until_ns_ = sent + int64_t(lease_ms_) * 900000;
    } else if (s.code() == Code::kNotFound || s.code() == Code::kStale) {
      // The MDS restarted or gave up on us: nothing we cached is protected.
      LOG_WARN("lease session lost ({}); dropping caches", s.message());
      lease_valid_until_ns_ = 0;
      DropAllCaches();
      if (Status rs = RegisterSession(); !rs.ok()) LOG_WARN("re-register: {}", rs.message());
    }
    // Unavailable: keep trying; trust lapses by itself at the expiry.
  }
}

bool Client::LeaseValid() const { return SteadyNs() < lease_valid_until_ns_.load(); }

std::shared_ptr<FileState> Client::FindOpen(uint64_t ino) {
  std::lock_guard lk(open_mu_);
  auto it = open_.find(ino);
  return it == open_.end() ? nullptr : it->second;
}

void Client::DropAllCaches() {
  revoke_seq_++;
  {
    std::lock_guard lk(meta_mu_);
    attrs_.clear();
    entries_.clear();
  }
  {
    std::lock_guard lk(open_mu_);
    for (auto& [ino, st] : open_) st->map_stale = true;
  }
  if (fcache_) fcache_->Clear();
}

void Client::OnRevoke(uint64_t ino, const std::string& name) {
  static Counter& revoked = GetCounter("client.leases_revoked");
  revoked.Inc();
  revoke_seq_++;
  {
    std::lock_guard lk(meta_mu_);
    attrs_.erase(ino);
    if (!name.empty()) entries_.erase({ino, name});
  }
  if (name.empty()) {
    if (auto st = FindOpen(ino)) st->map_stale = true;
    if (fcache_) fcache_->Erase({ino});
  }
  if (invalidate_hook_) invalidate_hook_(ino, name);
}

void Client::CacheAttr(const pb::Attr& a, uint64_t seq_at_start) {
  std::lock_guard lk(meta_mu_);
  if (revoke_seq_.load() != seq_at_start) return;  // may predate a revocation
  attrs_[a.ino()] = a;
}

Status Client::Connect() {
  auto list = mds_.Call<pb::ListDssReply>(pb::M_LIST_DSS, pb::Empty());
  if (!list) return Unavailable("MDS at " + cfg_.mds.address + ": " + list.error().message());
  std::vector<std::string> addrs(list->dss_size());
  for (auto& d : list->dss())
    if (d.id() < addrs.size()) addrs[d.id()] = d.address();
  dss_ = std::make_unique<DssPool>(addrs, cfg_.client.rpc_timeout_ms);
  EcReader::Options ro;
  ro.gap_threshold = cfg_.random_io.coalesce_gap_threshold;
  ro.hedge = cfg_.client.hedge_reads;
  ro.hedge_min_us = cfg_.client.hedge_min_us;
  reader_ = std::make_unique<EcReader>(*dss_, mds_, ro);
  writer_ = std::make_unique<EcWriter>(*dss_, mds_, *reader_, client_id_);
  return Status::Ok();
}

Result<pb::Attr> Client::Lookup(uint64_t parent, const std::string& name) {
  static Counter& hits = GetCounter("client.meta_cache_hits");
  if (LeaseValid()) {
    std::lock_guard lk(meta_mu_);
    auto e = entries_.find({parent, name});
    if (e != entries_.end()) {
      auto a = attrs_.find(e->second);
      if (a != attrs_.end()) {
        hits.Inc();
        return a->second;
      }
    }
  }
  uint64_t seq = revoke_seq_.load();
  pb::LookupReq r;
  r.set_parent(parent);
  r.set_name(name);
  r.set_client_id(client_id_);
  auto a = AttrOf(mds_.Call<pb::AttrReply>(pb::M_LOOKUP, r));
  if (a) {
    CacheAttr(*a, seq);
    std::lock_guard lk(meta_mu_);
    if (revoke_seq_.load() == seq) entries_[{parent, name}] = a->ino();
  }
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
  if (auto st = FindOpen(ino)) {
    // An open file's own state knows its size best (our commits and
    // buffered writes), unless a revocation says another client changed it.
    std::shared_lock lk(st->mu);
    if (!st->map_stale && LeaseValid()) {
      a->set_size(st->attr.size());
      a->set_mtime_ns(std::max(a->mtime_ns(), st->attr.mtime_ns()));
      a->set_ctime_ns(std::max(a->ctime_ns(), st->attr.ctime_ns()));
    } else if (!st->dirty.empty()) {
      a->set_size(std::max(a->size(), st->attr.size()));
    }
  }
  return a;
}

void Client::ForgetEntry(uint64_t parent, const std::string& name) {
  std::lock_guard lk(meta_mu_);
  auto e = entries_.find({parent, name});
  if (e != entries_.end()) {
    attrs_.erase(e->second);
    entries_.erase(e);
  }
  attrs_.erase(parent);  // its mtime (and maybe nlink) changed
}

Result<pb::Attr> Client::SetAttr(const pb::SetAttrReq& in) {
  pb::SetAttrReq req = in;
  req.set_client_id(client_id_);
  uint64_t seq = revoke_seq_.load();
  if (!(req.valid() & pb::SET_SIZE)) {
    auto a = AttrOf(mds_.Call<pb::AttrReply>(pb::M_SETATTR, req));
    if (a) CacheAttr(*a, seq);
    return a;
  }
  std::shared_ptr<FileState> st = FindOpen(req.ino());
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
  CacheAttr(*a, seq);
  if (fcache_) fcache_->Erase({req.ino()});
  st->attr = *a;
  uint64_t keep = (a->size() + st->geo.chunk_size - 1) / st->geo.chunk_size;
  st->chunks.erase(st->chunks.lower_bound(keep), st->chunks.end());
  return a;
}

Status Client::SetLayout(uint64_t ino, const std::string& spec) {
  auto a = GetAttr(ino);
  if (!a) return a.error();
  pb::SetAttrReq req;
  req.set_ino(ino);
  req.set_valid(pb::SET_LAYOUT);
  *req.mutable_layout() = a->layout();
  RUSTFS_RETURN_IF_ERROR(ParseLayoutSpec(spec, *req.mutable_layout()));
  auto r = SetAttr(req);
  if (!r) return r.error();
  if (auto st = FindOpen(ino)) {  // its geometry came from the old layout
    std::unique_lock lk(st->mu);
    st->map_stale = true;
  }
  return Status::Ok();
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
  Status s = writer_->FlushChunk(st, index, d, /*grow_size=*/false);
  std::lock_guard lk(meta_mu_);
  attrs_.erase(st.ino);
  return s;
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
  return CreateCommon(pb::M_CREATE, r);
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

Result<pb::Attr> Client::Mkdir(uint64_t parent, const std::string& name, uint32_t mode,
                               uint32_t uid, uint32_t gid) {
  pb::CreateReq r;
  r.set_parent(parent);
  r.set_name(name);
  r.set_mode(mode);
  r.set_uid(uid);
  r.set_gid(gid);
  return CreateCommon(pb::M_MKDIR, r);
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

Result<std::shared_ptr<FileState>> Client::LoadState(uint64_t ino) {
  pb::GetChunkMapReq r;
  r.set_ino(ino);
  r.set_length(0);  // the whole map: reads then need no MDS at all
  r.set_client_id(client_id_);  // ...held under a layout lease
  auto m = mds_.Call<pb::GetChunkMapReply>(pb::M_GET_CHUNK_MAP, r);
  if (!m) return Err(m.error());
  auto st = std::make_shared<FileState>();
  st->ino = ino;
  st->attr = m->attr();
  st->geo = GeometryOf(m->attr().layout());
  for (auto& c : m->chunks()) st->chunks[c.index()] = c;
  return st;
}

// Caller holds st.mu exclusively, with no buffered writes.
Status Client::RefreshMap(FileState& st) {
  static Counter& refreshes = GetCounter("client.chunk_map_refreshes");
  refreshes.Inc();
  st.map_stale = false;  // cleared first: a revocation during the fetch sets it again
  auto fresh = LoadState(st.ino);
  if (!fresh) {
    st.map_stale = true;
    return fresh.error();
  }
  st.attr = (*fresh)->attr;
  st.geo = (*fresh)->geo;  // a directory's or empty file's layout can change (SetLayout)
  st.chunks = std::move((*fresh)->chunks);
  return Status::Ok();
}

Result<std::shared_ptr<OpenFile>> Client::Open(uint64_t ino) {
  {
    std::lock_guard lk(open_mu_);
    auto it = open_.find(ino);
    if (it != open_.end()) {
      it->second->opens++;
      auto f = std::make_shared<OpenFile>();
      f->state = it->second;
      return f;
    }
  }
  auto st = LoadState(ino);
  if (!st) return Err(st.error());
  std::lock_guard lk(open_mu_);
  auto [it, inserted] = open_.emplace(ino, *st);  // another opener may have won
  it->second->opens++;
  auto f = std::make_shared<OpenFile>();
  f->state = it->second;
  return f;
}

// Takes st.mu for a read: shared, unless buffered writes must be published
// first (read-your-writes) or the map is no longer covered by a lease and
// must be fetched again before use.
Status Client::LockForRead(FileState& st, std::shared_lock<std::shared_mutex>& rl,
                           std::unique_lock<std::shared_mutex>& wl) {
  rl = std::shared_lock(st.mu);
  if (st.dirty.empty() && !st.map_stale && LeaseValid()) return Status::Ok();
  rl.unlock();
  wl = std::unique_lock(st.mu);
  RUSTFS_RETURN_IF_ERROR(FlushLocked(st));
  if (st.map_stale || !LeaseValid()) RUSTFS_RETURN_IF_ERROR(RefreshMap(st));
  return Status::Ok();
}

Result<size_t> Client::Read(OpenFile& f, uint64_t offset, size_t len, char* buf) {
  FileState& st = *f.state;
  std::shared_lock<std::shared_mutex> rl;
  std::unique_lock<std::shared_mutex> wl;
  RUSTFS_RETURN_ERR(LockForRead(st, rl, wl));
  app_reads_.Inc();
  uint64_t size = st.attr.size();
  if (offset >= size || len == 0) return 0;
  len = std::min<uint64_t>(len, size - offset);
  app_bytes_read_.Add(len);
  Observe(f, st, f.detector.OnRead(offset, len, size));
  if (!fcache_) {
    RUSTFS_RETURN_ERR(FetchRange(st, offset, len, buf));
    return len;
  }
  RUSTFS_RETURN_ERR(ReadThroughCache(st, offset, len, buf, TierFor(f)));
  return len;
}

Status Client::ReadMany(OpenFile& f, std::span<ReadReq> reqs) {
  FileState& st = *f.state;
  std::shared_lock<std::shared_mutex> rl;
  std::unique_lock<std::shared_mutex> wl;
  if (Status s = LockForRead(st, rl, wl); !s.ok()) {
    for (auto& r : reqs) r.status = s;
    return s;
  }
  const uint64_t size = st.attr.size();
  const auto tier = TierFor(f);
  // What the cache lacks, over all requests, fetched in one reader call:
  // the pieces of every miss reach each DSS in one BatchRead.
  struct Miss {
    size_t req;
    uint64_t offset, length;  // page-aligned (file bytes; zeros past EOF)
    std::string pages;
  };
  std::vector<Miss> misses;
  for (size_t i = 0; i < reqs.size(); i++) {
    ReadReq& r = reqs[i];
    app_reads_.Inc();
    r.status = Status::Ok();
    r.bytes = r.offset >= size ? 0 : std::min<uint64_t>(r.length, size - r.offset);
    if (r.bytes == 0) continue;
    app_bytes_read_.Add(r.bytes);
    Observe(f, st, f.detector.OnRead(r.offset, r.bytes, size));
    if (!fcache_) {
      misses.push_back({i, r.offset, r.bytes, {}});
      continue;
    }
    for (const auto& m : fcache_->Read({st.ino}, r.offset, r.bytes, r.buf, tier))
      misses.push_back({i, m.offset, m.length, {}});
  }
  if (misses.empty()) return Status::Ok();
  const uint64_t seq = revoke_seq_.load();
  std::vector<ReadExtent> extents;
  for (Miss& m : misses) {
    m.pages.assign(m.length, '\0');
    AppendExtents(st, m.offset, std::min(m.offset + m.length, size) - m.offset, m.pages.data(), extents);
  }
  Status fetched = extents.empty() ? Status::Ok() : reader_->Read(st.ino, st.geo, extents);
  const bool keep = fcache_ && revoke_seq_.load() == seq;  // nothing cached across a revocation
  for (Miss& m : misses) {
    ReadReq& r = reqs[m.req];
    if (!fetched.ok()) {
      r.status = fetched;
      r.bytes = 0;
      continue;
    }
    if (keep) fcache_->Insert({st.ino}, m.offset, m.pages, tier);
    uint64_t s = std::max(m.offset, r.offset), e = std::min(m.offset + m.length, r.offset + r.bytes);
    std::memcpy(r.buf + (s - r.offset), m.pages.data() + (s - m.offset), e - s);
  }
  return fetched;
}

// Sequential files cache in the stream tier; everything else is subject to
// frequency admission.
FragmentCache::Tier Client::TierFor(const OpenFile& f) const {
  return f.detector.mode() == AccessMode::kSequential ? FragmentCache::Tier::kStream
                                                      : FragmentCache::Tier::kFrequency;
}

// Caller holds st.mu (shared is enough). Holes read as zeros.
void Client::AppendExtents(FileState& st, uint64_t offset, uint64_t len, char* buf,
                           std::vector<ReadExtent>& extents) {
  for (auto& s : layout::SplitFileRange(st.geo.chunk_size, offset, len)) {
    auto it = st.chunks.find(s.chunk_index);
    if (it == st.chunks.end()) {
      std::memset(buf + s.buf_offset, 0, s.length);  // a hole
      continue;
    }
    extents.push_back({&it->second, s.chunk_offset, s.length, buf + s.buf_offset});
  }
}

// Caller holds st.mu (shared is enough).
Status Client::FetchRange(FileState& st, uint64_t offset, uint64_t len, char* buf) {
  std::vector<ReadExtent> extents;
  AppendExtents(st, offset, len, buf, extents);
  if (extents.empty()) return Status::Ok();
  return reader_->Read(st.ino, st.geo, extents);
}

// Serves [offset, offset+len) (within the file) from the fragment cache,
// fetching the missing pages (whole 4 KiB pages: the DSS reads and checks
// them anyway, so caching them costs no extra disk bytes) and caching them.
// `buf` may be null (prefetch: fill the cache only). Caller holds st.mu.
Status Client::ReadThroughCache(FileState& st, uint64_t offset, uint64_t len, char* buf,
                                FragmentCache::Tier tier) {
  const uint64_t size = st.attr.size();
  std::string scratch;
  if (!buf) {
    scratch.resize(len);
    buf = scratch.data();
  }
  uint64_t seq = revoke_seq_.load();
  return fcache_->ReadThrough(
      {st.ino}, offset, len, buf, tier,
      [&](uint64_t off, uint64_t n, char* pages) {
        return FetchRange(st, off, std::min(off + n, size) - off, pages);  // zeros past EOF
      },
      // Not cached if a revocation came in meanwhile: the bytes may predate it.
      [&] { return revoke_seq_.load() == seq; });
}

// Acts on the detector's decision after a read or a hint: read-ahead and
// WILLNEED ranges go to the prefetcher, DONTNEED ranges leave the cache.
void Client::Observe(OpenFile& f, FileState& st, const AccessDetector::Decision& d) {
  static Counter& to_random = GetCounter("client.mode_switches_to_random");
  static Counter& to_seq = GetCounter("client.mode_switches_to_sequential");
  // Read before writing: the line is shared by every reader of the file,
  // and the mode rarely changes.
  if (st.last_mode.load(std::memory_order_relaxed) != int(d.mode) &&
      st.last_mode.exchange(int(d.mode)) != int(d.mode)) {
    if (d.mode == AccessMode::kRandom) to_random.Inc();
    if (d.mode == AccessMode::kSequential) to_seq.Inc();
  }
  if (!fcache_) return;
  if (d.prefetch_length) Prefetch(f.state, d.prefetch_offset, d.prefetch_length);
  while (auto r = f.detector.TakeWillNeed()) Prefetch(f.state, r->offset, r->length);
  while (auto r = f.detector.TakeDontNeed()) fcache_->Erase({st.ino}, r->offset, r->length);
}

void Client::Prefetch(std::shared_ptr<FileState> st, uint64_t offset, uint64_t len) {
  {
    std::lock_guard lk(prefetch_mu_);
    if (prefetch_q_.size() >= kMaxQueuedPrefetches) return;  // advice, not a promise
    prefetch_q_.push_back({std::move(st), offset, len});
  }
  prefetch_cv_.notify_one();
}

void Client::PrefetchLoop() {
  static Counter& bytes = GetCounter("client.prefetch_bytes");
  for (;;) {
    PrefetchJob job;
    {
      std::unique_lock lk(prefetch_mu_);
      prefetch_cv_.wait(lk, [&] { return stop_ || !prefetch_q_.empty(); });
      if (stop_) return;
      job = std::move(prefetch_q_.front());
      prefetch_q_.pop_front();
    }
    FileState& st = *job.state;
    std::shared_lock rl(st.mu);
    // A file being written or just revoked is left alone: the reader's own
    // path will refresh it, and prefetch must never cache stale bytes.
    if (!st.dirty.empty() || st.map_stale || !LeaseValid()) continue;
    uint64_t size = st.attr.size();
    if (job.offset >= size) continue;
    uint64_t len = std::min(job.length, size - job.offset);
    // Page-align so whole pages are cached.
    uint64_t start = job.offset / FragmentCache::kPage * FragmentCache::kPage;
    len += job.offset - start;
    // Prefetched bytes (read-ahead, WILLNEED) are read once and soon: the
    // stream tier, not frequency admission, which would turn them away.
    if (Status s = ReadThroughCache(st, start, len, nullptr, FragmentCache::Tier::kStream); s.ok())
      bytes.Add(len);
  }
}

Status Client::Advise(OpenFile& f, uint64_t offset, uint64_t len, int advice) {
  static Counter& hints = GetCounter("client.hints_received");
  auto kind = HintKindFromAdvice(advice);
  if (!kind) return Status::Ok();  // NOREUSE and unknown advice: nothing to do
  hints.Inc();
  f.detector.Hint(*kind, offset, len);
  FileState& st = *f.state;
  AccessDetector::Decision d;
  d.mode = f.detector.mode();
  Observe(f, st, d);
  return Status::Ok();
}

Status Client::Write(OpenFile& f, uint64_t offset, const char* data, size_t len) {
  FileState& st = *f.state;
  std::unique_lock lk(st.mu);
  // A layout change (or a revocation) since the map was fetched: buffer
  // against the current geometry, which sets chunk size and shard count.
  if (st.dirty.empty() && st.map_stale) RUSTFS_RETURN_IF_ERROR(RefreshMap(st));
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
  {
    std::lock_guard lk(meta_mu_);
    attrs_.erase(st.ino);  // size and mtime moved on
  }
  if (fcache_) fcache_->Erase({st.ino}, index * st.geo.chunk_size, st.geo.chunk_size);
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
  if (--f->state->opens > 0) return s;
  // Closed files keep their state (attributes, chunk map) while it is
  // covered by the lease, so reopening costs no MDS round trip; revocations
  // mark it stale like an open one. Bounded: past the limit, idle states
  // are dropped.
  if (open_.size() > kMaxCachedStates) {
    for (auto it = open_.begin(); it != open_.end() && open_.size() > kMaxCachedStates / 2;)
      it = it->second->opens == 0 ? open_.erase(it) : std::next(it);
  }
  return s;
}

std::map<std::string, uint64_t> Client::Stats() const { return SnapshotCounters(); }

std::string Client::ModeOf(uint64_t ino) {
  auto st = FindOpen(ino);
  return ModeName(st ? AccessMode(st->last_mode.load()) : AccessMode::kUnknown);
}

}  // namespace rustfs::client

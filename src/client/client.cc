#include "client/client.h"

#include "net/auth.h"
#include "net/reply_wait.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <numeric>
#include <thread>

#include "common/clock.h"
#include "common/log.h"
#include "common/uninit.h"
#include "layout/layout.h"

namespace rustfs::client {

namespace {

// Buffered chunks per file before the oldest are published: bounds client
// memory (4 x chunk_size) while letting sequential writes fill whole chunks.
constexpr size_t kMaxDirtyChunks = 4;

}  // namespace

Client::Client(const Config& cfg)
    : cfg_(cfg),
      // A change waits for every other client's revocation answer, or for a
      // silent one's lease to run out: an MDS call may take that long and
      // still succeed, so it must not time out before (a commit that went
      // through reported as failed would leave this client's view broken).
      mds_(cfg.mds.address, int(cfg.client.rpc_timeout_ms + cfg.mds.lease_ms)),
      app_bytes_read_(GetCounter("client.app_bytes_read")),
      app_bytes_written_(GetCounter("client.app_bytes_written")),
      app_reads_(GetCounter("client.app_reads")) {}

Result<std::unique_ptr<Client>> Client::Create(const Config& cfg) {
  RUSTFS_RETURN_ERR(net::UseClusterKey(cfg.cluster.key_file));
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
  c->StartPlans();
  c->renew_ = std::thread([p = c.get()] { p->RenewLoop(); });
  c->notifier_ = std::thread([p = c.get()] { p->NotifierLoop(); });
  return c;
}

Client::~Client() {
  plans_.reset();  // its threads fetch through everything below
  {
    std::lock_guard lk(prefetch_mu_);
    stop_ = true;
  }
  prefetch_cv_.notify_all();
  {
    std::lock_guard lk(kernel_mu_);  // so the notifier cannot miss stop_
  }
  kernel_cv_.notify_all();
  for (auto& t : prefetchers_) t.join();
  if (renew_.joinable()) renew_.join();
  if (notifier_.joinable()) notifier_.join();
  if (client_id_) {  // hand our leases back so no change waits for them to expire
    pb::RenewLeasesReq r;
    r.set_client_id(client_id_);
    (void)mds_.CallOnce(pb::M_END_SESSION, r);
  }
  if (callback_) callback_->Stop();
}

Status Client::Connect() {
  auto list = mds_.Call<pb::ListDssReply>(pb::M_LIST_DSS, pb::Empty());
  if (!list) return Unavailable("MDS at " + cfg_.mds.address + ": " + list.error().message());
  std::vector<std::string> addrs(list->dss_size());
  for (auto& d : list->dss())
    if (d.id() < addrs.size()) addrs[d.id()] = d.address();
  dss_ = std::make_unique<DssPool>(addrs, cfg_.client.rpc_timeout_ms,
                                   net::PollForReplies(cfg_.client.reply_wait));
  EcReader::Options ro;
  ro.gap_threshold = cfg_.random_io.coalesce_gap_threshold;
  ro.hedge = cfg_.client.hedge_reads;
  ro.hedge_min_us = cfg_.client.hedge_min_us;
  ro.partial_read_fast_path = cfg_.ec.partial_read_fast_path;
  reader_ = std::make_unique<EcReader>(*dss_, mds_, ro);
  writer_ = std::make_unique<EcWriter>(*dss_, mds_, *reader_, client_id_);
  return Status::Ok();
}

Result<std::shared_ptr<FileState>> Client::LoadState(uint64_t ino, bool open) {
  pb::GetChunkMapReq r;
  r.set_ino(ino);
  // The whole map, so reads then need no MDS at all (LLD-002 §1.1); or,
  // with random_read.prefetch_full_chunkmap off, the first chunk's, the
  // rest fetched by the reads that need it.
  r.set_length(cfg_.random_read.prefetch_full_chunkmap ? 0 : 1);
  r.set_client_id(client_id_);  // ...held under a layout lease
  r.set_open(open);             // ...and the inode kept for us while we hold it
  auto m = mds_.Call<pb::GetChunkMapReply>(pb::M_GET_CHUNK_MAP, r);
  if (!m) return Err(m.error());
  auto st = std::make_shared<FileState>();
  st->ino = ino;
  st->attr = m->attr();
  st->geo = layout::GeometryOf(m->attr().layout());
  for (auto& c : m->chunks()) st->chunks[c.index()] = c;
  st->mapped.Add(0, r.length() == 0 ? UINT64_MAX : 1);
  return st;
}

// Caller holds st.mu exclusively.
Status Client::FetchMap(FileState& st, uint64_t offset, uint64_t len) {
  static Counter& fetches = GetCounter("client.read_map_fetches");
  const uint64_t cs = st.geo.chunk_size;
  if (cs == 0 || len == 0) return Status::Ok();
  fetches.Inc();
  pb::GetChunkMapReq r;
  r.set_ino(st.ino);
  r.set_offset(offset);
  r.set_length(len);
  r.set_client_id(client_id_);
  auto m = mds_.Call<pb::GetChunkMapReply>(pb::M_GET_CHUNK_MAP, r);
  if (!m) return m.error();
  const uint64_t first = offset / cs, end = (offset + len - 1) / cs + 1;
  st.chunks.erase(st.chunks.lower_bound(first), st.chunks.lower_bound(end));
  for (auto& c : m->chunks()) st.chunks[c.index()] = c;
  st.mapped.Add(first, end);
  return Status::Ok();
}

bool Client::MapFresh(const FileState& st, uint64_t offset, uint64_t len) const {
  return st.dirty.empty() && !st.map_stale && LeaseValid() && MapCovers(st, offset, len);
}

// Caller holds st.mu exclusively, with no buffered writes.
Status Client::RefreshMap(FileState& st) {
  static Counter& refreshes = GetCounter("client.chunk_map_refreshes");
  refreshes.Inc();
  st.map_stale = false;  // cleared first: a revocation during the fetch sets it again
  auto fresh = LoadState(st.ino, /*open=*/true);
  if (!fresh) {
    st.map_stale = true;
    return fresh.error();
  }
  st.attr = (*fresh)->attr;
  st.geo = (*fresh)->geo;  // a directory's or empty file's layout can change (SetLayout)
  st.chunks = std::move((*fresh)->chunks);
  st.mapped = std::move((*fresh)->mapped);
  return Status::Ok();
}

Result<std::shared_ptr<OpenFile>> Client::Open(uint64_t ino, bool writable) {
  std::shared_ptr<FileState> st;
  bool was_open = false;
  {
    std::lock_guard lk(open_mu_);
    auto it = open_.find(ino);
    if (it != open_.end()) {
      was_open = it->second->opens > 0;
      it->second->opens++;
      st = it->second;
    }
  }
  if (!st) {
    auto loaded = LoadState(ino, /*open=*/true);
    if (!loaded) return Err(loaded.error());
    std::lock_guard lk(open_mu_);
    auto [it, inserted] = open_.emplace(ino, *loaded);  // another opener may have won
    it->second->opens++;
    st = it->second;
  }
  auto f = std::make_shared<OpenFile>();
  f->state = st;
  f->keep_kernel_cache = was_open;
  f->writable = writable;
  if (writable) AddWriter(*st);
  std::shared_lock lk(st->mu);
  f->fsync_err_seen = f->close_err_seen = st->err_seq;  // earlier errors are not this handle's
  return f;
}

// Takes st.mu for a read of [offset, offset + len): shared, unless
// buffered writes must be published first (read-your-writes), the map is no
// longer covered by a lease and must be fetched again before use, or it
// lacks the chunks of the range. With random_read.hold_layout_lease off the
// map is not trusted from one read to the next: every read asks the MDS for
// its range's.
Status Client::LockForRead(FileState& st, uint64_t offset, uint64_t len,
                           std::shared_lock<ReadMostlyMutex>& rl, std::unique_lock<ReadMostlyMutex>& wl,
                           LockWait wait) {
  const bool hold = cfg_.random_read.hold_layout_lease;
  if (wait == LockWait::kNoLockWait) {  // a lapsed lease is not fresh: that read waits
    // This thread may hold st.mu shared already (its own read of this file
    // waits for replies): only a try-lock may take it again, and it fails
    // rather than wait for a writer queued behind the first
    // (common/read_mostly_mutex.h).
    rl = std::shared_lock(st.mu, std::try_to_lock);
    if (rl && hold && MapFresh(st, offset, len)) return Status::Ok();
    if (rl) rl.unlock();
    return Status(Code::kWouldBlock, "the file's map is locked or must be fetched");
  }
  rl = std::shared_lock(st.mu);
  if (hold && MapFresh(st, offset, len)) return Status::Ok();  // the lease holds: one clock read
  rl.unlock();
  CheckLease();  // a lapsed lease: nothing cached is served any more
  wl = std::unique_lock(st.mu);
  RUSTFS_RETURN_IF_ERROR(FlushLocked(st));
  if (st.map_stale || !LeaseValid()) RUSTFS_RETURN_IF_ERROR(RefreshMap(st));
  if (!hold || !MapCovers(st, offset, len)) RUSTFS_RETURN_IF_ERROR(FetchMap(st, offset, len));
  return Status::Ok();
}

// One read is a batch of one: the cache, the plan, the detector and the
// retry on a stale map are ReadMany's, in one place.
Result<size_t> Client::Read(OpenFile& f, uint64_t offset, size_t len, char* buf) {
  ReadReq r;
  r.offset = offset, r.length = len, r.buf = buf;
  RUSTFS_RETURN_ERR(ReadMany(f, std::span(&r, 1)));
  return r.bytes;
}

namespace {
// [offset, offset + len) spanning every request.
std::pair<uint64_t, uint64_t> SpanOf(std::span<const Client::ReadReq> reqs) {
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const Client::ReadReq& r : reqs) {
    lo = std::min(lo, r.offset);
    hi = std::max(hi, r.offset + r.length);
  }
  return {lo, hi > lo ? hi - lo : 0};
}
}  // namespace

Status Client::CheckVia(OpenFile& f, std::span<ReadReq> reqs) {
  for (const ReadReq& r : reqs) {
    if (r.via && r.via->state != f.state) {
      Status bad = InvalidArgument("ReadMany: a read came through an open file of another inode");
      for (ReadReq& q : reqs) q.status = bad, q.bytes = 0;
      return bad;
    }
  }
  return Status::Ok();
}

Status Client::ReadMany(OpenFile& f, std::span<ReadReq> reqs, LockWait wait) {
  RUSTFS_RETURN_IF_ERROR(CheckVia(f, reqs));
  bool planned = false;
  for (const ReadReq& r : reqs) planned |= NotePlannedRead(f, r.offset, r.length);
  return ReadManyAttempts(f, reqs, planned, wait, /*counted=*/false);
}

Status Client::ReadManyAttempts(OpenFile& f, std::span<ReadReq> reqs, bool planned, LockWait wait, bool counted) {
  for (int attempt = 0;; attempt++) {
    Status s = ReadManyOnce(f, reqs, attempt == 0 && !counted, planned, wait);
    // kStale from the reader: the map named a chunk version that is gone
    // (an overwrite raced with this read): fetch the map again, read again.
    if (s.code() != Code::kStale || attempt >= 2) return s;
    f.state->map_stale = true;
  }
}

Status Client::ReadFiles(std::span<ReadReq> reqs, LockWait wait) {
  if (std::any_of(reqs.begin(), reqs.end(), [](const ReadReq& r) { return r.via == nullptr; })) {
    Status bad = InvalidArgument("ReadFiles: a request names no open file");
    for (ReadReq& r : reqs) r.status = bad, r.bytes = 0;
    return bad;
  }
  auto inode = [&](size_t i) { return reqs[i].via->state.get(); };
  size_t i = 1;
  while (i < reqs.size() && inode(i) == inode(0)) i++;
  // One inode (a single reader's batch, the common case): as is, no copy.
  if (i == reqs.size()) return reqs.empty() ? Status::Ok() : ReadMany(*reqs[0].via, reqs, wait);
  // Grouped by inode, stable (a file's reads keep their order); the
  // outcomes go back to the caller's requests afterwards.
  std::vector<size_t> order(reqs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return inode(a) < inode(b); });
  std::vector<ReadReq> sorted(reqs.size());
  for (size_t k = 0; k < order.size(); k++) sorted[k] = reqs[order[k]];
  std::vector<FileReads> files;
  for (size_t k = 0; k < sorted.size();) {
    size_t j = k + 1;
    while (j < sorted.size() && sorted[j].via->state == sorted[k].via->state) j++;
    files.push_back({sorted[k].via, std::span(sorted).subspan(k, j - k)});
    k = j;
  }
  const Status first_error = JointRead(files, wait);
  for (size_t k = 0; k < order.size(); k++) {
    reqs[order[k]].status = std::move(sorted[k].status);
    reqs[order[k]].bytes = sorted[k].bytes;
  }
  return first_error;
}

Status Client::JointRead(std::span<FileReads> files, LockWait wait) {
  Status first_error = Status::Ok();
  auto note = [&](const Status& s) {
    if (!s.ok() && first_error.ok()) first_error = s;
  };
  struct Joined {
    FileReads* fr;
    bool planned;
    size_t first;  // its requests' index in `through`
  };
  std::vector<Joined> joined;  // every file; first == SIZE_MAX: read alone afterwards
  std::vector<std::shared_lock<ReadMostlyMutex>> locks;
  std::vector<FileState*> owner;  // per read-through read: its file
  std::vector<ThroughRead> through;
  const bool hold = cfg_.random_read.hold_layout_lease;
  for (FileReads& fr : files) {  // grouped by inode: every `via` is fr.file's inode
    bool planned = false;
    for (const ReadReq& r : fr.reqs) planned |= NotePlannedRead(*fr.file, r.offset, r.length);
    FileState& st = *fr.file->state;
    const auto [offset, len] = SpanOf(fr.reqs);
    // Never waits for a lock while holding others: a file whose lock is
    // taken (a writer) or whose map must be fetched is read alone later.
    std::shared_lock rl(st.mu, std::try_to_lock);
    if (!rl || !hold || !MapFresh(st, offset, len)) {
      static Counter& alone = GetCounter("client.read_files_alone");
      alone.Inc();
      if (rl) rl.unlock();
      joined.push_back({&fr, planned, SIZE_MAX});
      continue;
    }
    locks.push_back(std::move(rl));
    joined.push_back({&fr, planned, through.size()});
    through.resize(through.size() + fr.reqs.size());
    owner.resize(through.size(), &st);
    PrepareReads(*fr.file, st, fr.reqs, /*first=*/true, planned, through.data() + joined.back().first);
  }
  const Status fetched =
      ReadThroughCache([&](size_t i) -> FileState& { return *owner[i]; }, through, revoke_seq_.load());
  for (const Joined& j : joined)
    if (j.first != SIZE_MAX && fetched.ok()) FinishReads(*j.fr->file, j.fr->reqs, through.data() + j.first);
  locks.clear();
  // What could not join, and (rarely) what a failed joint read touched:
  // one file at a time, as ReadMany serves it. A kStale names no file: the
  // one whose map is old finds out on its own read and fetches its map
  // there (marking every joined file stale would cost an MDS call per file
  // of the batch for one overwrite).
  for (const Joined& j : joined) {
    const bool was_alone = j.first == SIZE_MAX;
    if (!was_alone && fetched.ok()) continue;
    note(ReadManyAttempts(*j.fr->file, j.fr->reqs, j.planned, wait, /*counted=*/!was_alone));
  }
  return first_error;
}

Status Client::ReadManyOnce(OpenFile& f, std::span<ReadReq> reqs, bool first, bool planned, LockWait wait) {
  FileState& st = *f.state;
  std::shared_lock<ReadMostlyMutex> rl;
  std::unique_lock<ReadMostlyMutex> wl;
  // The map for the span of all the requests (one MDS call at most).
  const auto [offset, len] = SpanOf(reqs);
  if (Status s = LockForRead(st, offset, len, rl, wl, wait); !s.ok()) {
    for (auto& r : reqs) r.status = s;
    return s;
  }
  // Through the cache (cache/read_through.h): what it lacks, over all
  // requests, is fetched in one reader call, so the pieces of every miss
  // reach each DSS in one BatchRead. A batch of one (Client::Read) needs no
  // vector.
  ThroughRead one;
  std::vector<ThroughRead> many(reqs.size() > 1 ? reqs.size() : 0);
  std::span<ThroughRead> through = reqs.size() > 1 ? std::span(many) : std::span(&one, 1);
  PrepareReads(f, st, reqs, first, planned, through.data());
  const uint64_t seq = revoke_seq_.load();
  Status fetched = ReadThroughCache([&](size_t) -> FileState& { return st; }, through, seq);
  FinishReads(f, reqs, through.data());
  return fetched;
}

void Client::PrepareReads(OpenFile& f, FileState& st, std::span<ReadReq> reqs, bool first, bool planned,
                          ThroughRead* through) {
  const uint64_t size = st.attr.size();
  for (size_t i = 0; i < reqs.size(); i++) {
    ReadReq& r = reqs[i];
    OpenFile& through_file = r.via ? *r.via : f;  // whose detector sees this read
    // Before this read can switch its file's mode.
    const auto tier = planned ? FragmentCache::Tier::kStream : TierFor(through_file);
    r.status = Status::Ok();
    r.bytes = r.offset >= size ? 0 : std::min<uint64_t>(r.length, size - r.offset);
    through[i] = {{st.ino}, r.offset, r.bytes, r.buf, tier};
    if (first) app_reads_.Inc();
    if (r.bytes == 0) continue;
    if (first) {
      app_bytes_read_.Add(r.bytes);
      NoteRead(through_file, st, r.offset, r.bytes, size, planned);
    }
  }
}

void Client::FinishReads(OpenFile& f, std::span<ReadReq> reqs, const ThroughRead* through) {
  bool all_ok = true;
  for (size_t i = 0; i < reqs.size(); i++) {  // the requests whose pieces failed fail
    if (through[i].status.ok()) continue;
    reqs[i].status = through[i].status;
    reqs[i].bytes = 0;
    all_ok = false;
  }
  if (!all_ok) return;
  for (const ReadReq& r : reqs) MaybeIndex(f.state, r.offset, r.buf, r.bytes);
}

bool Client::NotePlannedRead(OpenFile& f, uint64_t offset, uint64_t len) {
  return plans_ && plans_->OnRead(f.state->ino, offset, len) != PlanExecutor::Match::kNoPlan;
}

// Sequential files cache in the stream tier; everything else is subject to
// frequency admission.
FragmentCache::Tier Client::TierFor(const OpenFile& f) const {
  return f.detector.mode() == AccessMode::kSequential ? FragmentCache::Tier::kStream
                                                      : FragmentCache::Tier::kFrequency;
}

// Caller holds st.mu (shared is enough). Holes and the bytes past the end
// of file (a fetch of whole pages) are zeroed here, the rest is left to the
// extents' reader: buf need not be initialised.
void Client::AppendExtents(FileState& st, uint64_t offset, uint64_t len, char* buf,
                           std::vector<ReadExtent>& extents) {
  const uint64_t size = st.attr.size();
  const uint64_t in_file = offset >= size ? 0 : std::min(len, size - offset);
  std::memset(buf + in_file, 0, len - in_file);
  for (auto& s : layout::SplitFileRange(st.geo.chunk_size, offset, in_file)) {
    auto it = st.chunks.find(s.chunk_index);
    if (it == st.chunks.end()) {
      std::memset(buf + s.buf_offset, 0, s.length);  // a hole
      continue;
    }
    extents.push_back({st.ino, &st.geo, &it->second, s.chunk_offset, s.length, buf + s.buf_offset});
  }
}

// Reads `reads` through the fragment cache (straight from the DSS without
// one): the misses of all of them in one reader call, in whole 4 KiB pages
// (the DSS reads and checks whole pages anyway, so caching them costs no
// extra disk bytes). What is fetched is cached only if no revocation came
// in since `seq` was read (the bytes may predate it). file_of(i): read i's
// file. Caller holds their st.mu (shared is enough).
template <class FileOf>
Status Client::ReadThroughCache(FileOf&& file_of, std::span<ThroughRead> reads, uint64_t seq) {
  return cache::ReadThrough(
      fcache_.get(), reads,
      [&](std::span<cache::ThroughPiece> pieces) {
        std::vector<ReadExtent> extents;
        for (const cache::ThroughPiece& p : pieces) AppendExtents(file_of(p.read), p.offset, p.length, p.buf, extents);
        const Status s = extents.empty() ? Status::Ok() : reader_->Read(extents);
        for (cache::ThroughPiece& p : pieces) p.status = s;
      },
      [&] { return revoke_seq_.load() == seq; });
}

// Fills the cache with [offset, offset+len) of st (within the file), in
// `tier`, and copies it to `buf` unless that is null (prefetch). Caller
// holds st.mu.
Status Client::ReadThroughCache(FileState& st, uint64_t offset, uint64_t len, char* buf,
                                FragmentCache::Tier tier) {
  std::string scratch;
  if (!buf) {
    ResizeUninitialized(scratch, len);
    buf = scratch.data();
  }
  ThroughRead read{{st.ino}, offset, len, buf, tier};
  return ReadThroughCache([&](size_t) -> FileState& { return st; }, std::span(&read, 1), revoke_seq_.load());
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
  if (!d.hints) return;
  while (auto r = f.detector.TakeWillNeed()) Prefetch(f.state, r->offset, r->length);
  while (auto r = f.detector.TakeDontNeed()) fcache_->Erase({st.ino}, r->offset, r->length);
}

void Client::PrefetchLoop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lk(prefetch_mu_);
      prefetch_cv_.wait(lk, [&] { return stop_ || !prefetch_q_.empty(); });
      if (stop_) return;
      job = std::move(prefetch_q_.front());
      prefetch_q_.pop_front();
    }
    job();
  }
}

void Client::Background(std::function<void()> job) {
  {
    std::lock_guard lk(prefetch_mu_);
    if (prefetch_q_.size() >= kMaxQueuedPrefetches) return;  // advice, not a promise
    prefetch_q_.push_back(std::move(job));
  }
  prefetch_cv_.notify_one();
}

void Client::Prefetch(std::shared_ptr<FileState> st, uint64_t offset, uint64_t len) {
  Background([this, st = std::move(st), offset, len] { PrefetchRange(*st, offset, len); });
}

Status Client::MapForBackground(FileState& st, uint64_t offset, uint64_t len) {
  if (cfg_.random_read.prefetch_full_chunkmap) return Status::Ok();  // all of it, at open
  std::unique_lock wl(st.mu);
  return MapCovers(st, offset, len) ? Status::Ok() : FetchMap(st, offset, len);
}

void Client::PrefetchRange(FileState& st, uint64_t offset, uint64_t length) {
  static Counter& bytes = GetCounter("client.prefetch_bytes");
  if (!MapForBackground(st, offset, length).ok()) return;
  std::shared_lock rl(st.mu);
  // A file being written or just revoked is left alone: the reader's own
  // path will refresh it, and prefetch must never cache stale bytes.
  const uint64_t size = st.attr.size();
  if (offset >= size || !MapFresh(st, offset, std::min(length, size - offset))) return;
  // A hint names any length (WILLNEED of a whole 1 TiB file): what is
  // fetched is bounded by the prefetch budget (the stream tier), and read
  // in pieces so no buffer grows with the hint.
  constexpr uint64_t kPiece = 4 << 20;
  uint64_t len = std::min({length, size - offset, PrefetchBudget()});
  // Page-align so whole pages are cached.
  const uint64_t start = offset / FragmentCache::kPage * FragmentCache::kPage;
  len += offset - start;
  // Prefetched bytes (read-ahead, WILLNEED, strides) are read once and soon:
  // the stream tier, not frequency admission, which would turn them away.
  for (uint64_t at = start; at < start + len; at += kPiece) {
    const uint64_t n = std::min(kPiece, start + len - at);
    if (!ReadThroughCache(st, at, n, nullptr, FragmentCache::Tier::kStream).ok()) return;
    bytes.Add(n);
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
  d.hints = true;
  Observe(f, st, d);
  return Status::Ok();
}

Status Client::Write(OpenFile& f, uint64_t offset, const char* data, size_t len) {
  FileState& st = *f.state;
  std::unique_lock lk(st.mu);
  return WriteLocked(st, offset, data, len);
}

// Caller holds st.mu exclusively.
Status Client::WriteLocked(FileState& st, uint64_t offset, const char* data, size_t len) {
  if (!layout::RangeFitsFile(offset, len)) return {Code::kTooBig, "write range past the largest file size (2^63 - 1)"};
  // A layout change (or a revocation) since the map was fetched: buffer
  // against the current geometry, which sets chunk size and shard count.
  if (st.dirty.empty() && (st.map_stale || !LeaseValid())) RUSTFS_RETURN_IF_ERROR(RefreshMap(st));
  if (!S_ISREG(st.attr.mode())) return InvalidArgument("write to a file that is not regular");
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
  // The write's time, not its publication's, is the file's mtime (it goes
  // with the commit).
  const int64_t now = RealtimeNowNs();
  st.attr.set_mtime_ns(now);
  st.attr.set_ctime_ns(now);
  while (st.dirty.size() > kMaxDirtyChunks)
    RUSTFS_RETURN_IF_ERROR(FlushOne(st, st.dirty.begin()->first));
  return Status::Ok();
}

Status Client::FlushOne(FileState& st, uint64_t index, bool grow_size) {
  // The buffer is dropped whether or not the flush succeeds: a failed write
  // is reported to the caller (write) and to every handle's next fsync and
  // close (errseq), as on any POSIX filesystem, and the file keeps its last
  // published contents.
  auto node = st.dirty.extract(index);
  if (node.empty()) return Status::Ok();
  Status s = writer_->FlushChunk(st, index, node.mapped(), grow_size);
  ForgetAttr(st.ino);  // size and mtime moved on
  if (fcache_) fcache_->Erase({st.ino}, index * st.geo.chunk_size, st.geo.chunk_size);
  if (!s.ok()) {
    static Counter& failed = GetCounter("client.flush_errors");
    failed.Inc();
    LOG_WARN("flush of inode {} chunk {} failed: {}", st.ino, index, s.ToString());
    st.err_seq++;
    st.last_error = s;
    // Whether the commit went through is unknown (e.g. a timeout): the
    // map is fetched again before the next read.
    st.map_stale = true;
  }
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
    if (auto a = mds_.Call<pb::AttrReply>(pb::M_GETATTR, r); a) st.attr.set_size(a->attr().size());
  }
  return first;
}

Status Client::ReportError(OpenFile& f, uint64_t OpenFile::*seen) {
  FileState& st = *f.state;
  std::unique_lock lk(st.mu);
  (void)FlushLocked(st);  // its error, if any, is in err_seq now
  if (f.*seen == st.err_seq) return Status::Ok();
  f.*seen = st.err_seq;
  return st.last_error;
}

Status Client::Flush(OpenFile& f) { return ReportError(f, &OpenFile::close_err_seen); }
Status Client::Fsync(OpenFile& f) { return ReportError(f, &OpenFile::fsync_err_seen); }

Status Client::Release(std::shared_ptr<OpenFile> f) {
  Status s = Flush(*f);
  if (f->writable) RemoveWriter(*f->state);
  std::vector<uint64_t> released;
  {
    std::lock_guard lk(open_mu_);
    FileState& st = *f->state;
    if (--st.opens > 0) return s;
    if (plans_) plans_->Cancel(st.ino);  // its plan ends with its last close
    // Closed files keep their state (attributes, chunk map, and the open
    // reference at the MDS) while it is covered by the lease, so reopening
    // costs no MDS round trip. One revoked while open (changed elsewhere,
    // maybe unlinked: then only our reference keeps it) is dropped now.
    // Bounded: past the limit, idle states are dropped.
    if (st.drop_at_close) {
      if (auto it = open_.find(st.ino); it != open_.end() && it->second == f->state) {
        open_.erase(it);
        released.push_back(st.ino);
      }
    }
    if (open_.size() > kMaxCachedStates) {
      for (auto it = open_.begin(); it != open_.end() && open_.size() > kMaxCachedStates / 2;) {
        if (it->second->opens == 0) {
          released.push_back(it->first);
          it = open_.erase(it);
        } else {
          ++it;
        }
      }
    }
  }
  ReleaseRefs(released);
  return s;
}

std::map<std::string, uint64_t> Client::Stats() const { return SnapshotCounters(); }

std::string Client::ModeOf(uint64_t ino) {
  auto st = FindOpen(ino);
  return ModeName(st ? AccessMode(st->last_mode.load()) : AccessMode::kUnknown);
}

}  // namespace rustfs::client

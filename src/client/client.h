// The rustfs client library: namespace calls to the MDS, and the data path
// (reads resolved in client memory from the chunk map fetched at open, EC
// partial reads, buffered writes published as new chunk versions).
//
// Its parts live in files of their own:
//   client.cc            creation, open/read/write/flush/release, read-ahead
//   client_session.cc    lease session: registration, renewal, revocations,
//                        a lapsed lease, open references
//   client_namespace.cc  names, attributes (truncate), links, xattrs
//   client_locks.cc      advisory locks (fcntl, flock) held by the MDS
//   client_space.cc      fallocate (allocate, punch, zero ranges)
//   client_plans.cc      access plans: fetching plan entries into the cache
//   client_auto_plan.cc  what reads tell prefetching: read-ahead, strides, record indexes
//
// POSIX promises kept here (DESIGN.md §7): buffered writes are published
// before any attribute change of the file (ours, or another client's: the
// MDS recalls them), a file stays usable through open handles after its
// last name goes, and a failed publication is reported to every handle's
// next fsync and close (Linux's errseq).
//
// Thread-safe. The FUSE daemon and the C API sit on top of this class.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "cache/fragment_cache.h"
#include "cache/read_through.h"
#include "client/access_detector.h"
#include "client/dss_pool.h"
#include "client/ec_reader.h"
#include "client/ec_writer.h"
#include "client/file_state.h"
#include "client/mds_client.h"
#include "client/plan_executor.h"
#include "client/record_index.h"
#include "common/config.h"
#include "net/rpc_server.h"

namespace rustfs::client {

using cache::FragmentCache;
using cache::ThroughRead;

// An open file. Owned by the caller (shared_ptr), passed back to Read/Write.
struct OpenFile {
  std::shared_ptr<FileState> state;
  AccessDetector detector;  // this handle's access pattern (LLD-002 §1.2)
  StrideDetector stride;    // ...and its strides (§4.4, access_plan.auto_detect)
  // The file's write-error sequence this handle has reported, for its
  // fsync and its close each (set at open: earlier errors are not its own).
  uint64_t fsync_err_seen = 0;
  uint64_t close_err_seen = 0;
  bool writable = false;  // opened for writing (see FileState::writers)
  // The kernel may keep the pages it cached of this file (FUSE keep_cache):
  // the file was open here, under this client's lease, when this handle was
  // opened, so any change made elsewhere since they were read invalidated
  // them. Otherwise an open drops them (close-to-open consistency).
  bool keep_kernel_cache = false;
};

// An advisory lock request or report (fcntl: F_RDLCK, F_WRLCK, F_UNLCK over
// [start, end], end UINT64_MAX = to the end of the file; flock: the whole
// file). `owner` is the kernel's lock owner (per process for fcntl, per
// open file description for flock).
struct LockSpec {
  uint64_t owner = 0;
  uint32_t pid = 0;
  int type = 0;  // F_RDLCK, F_WRLCK, F_UNLCK
  uint64_t start = 0;
  uint64_t end = UINT64_MAX;
  bool flock = false;
};

class Client {
 public:
  // Connects to the MDS in cfg and learns the DSS addresses from it.
  static Result<std::unique_ptr<Client>> Create(const Config& cfg);

  // --- namespace (each is one MDS RPC unless cached under the lease) ---
  Result<pb::Attr> Lookup(uint64_t parent, const std::string& name);
  // Attributes, with the size of writes buffered here included.
  Result<pb::Attr> GetAttr(uint64_t ino);
  // Buffered writes to the file are published first; truncation also
  // zeroes the cut-off tail.
  Result<pb::Attr> SetAttr(const pb::SetAttrReq& req);
  // A regular file (exclusive: EEXIST if the name exists).
  Result<pb::Attr> Create(uint64_t parent, const std::string& name, uint32_t mode, uint32_t uid,
                          uint32_t gid, bool exclusive);
  Result<pb::Attr> Mkdir(uint64_t parent, const std::string& name, uint32_t mode, uint32_t uid,
                         uint32_t gid);
  // Any other type: the type bits of `mode` say which (FIFO, socket,
  // character or block device with `rdev`).
  Result<pb::Attr> Mknod(uint64_t parent, const std::string& name, uint32_t mode, uint64_t rdev,
                         uint32_t uid, uint32_t gid);
  Result<pb::Attr> Symlink(uint64_t parent, const std::string& name, const std::string& target,
                           uint32_t uid, uint32_t gid);
  Result<std::string> ReadLink(uint64_t ino);
  // A new name for `ino` (a hard link).
  Result<pb::Attr> Link(uint64_t ino, uint64_t new_parent, const std::string& new_name);
  Result<pb::ReadDirReply> ReadDir(uint64_t ino, const std::string& after, uint32_t max);
  Status Unlink(uint64_t parent, const std::string& name);
  Status Rmdir(uint64_t parent, const std::string& name);
  Status Rename(uint64_t parent, const std::string& name, uint64_t new_parent,
                const std::string& new_name, uint32_t flags);
  Result<pb::StatFsReply> StatFs();
  // Sets the layout of a directory (files created in it afterwards inherit
  // it) or of a file with no data yet, from a spec "ec:K+M" or "replica:R";
  // chunk size and stripe unit stay as they are. InvalidArgument for a bad
  // spec or one the cluster cannot place.
  Status SetLayout(uint64_t ino, const std::string& spec);

  // Extended attributes (user.*, trusted.*, security.*); flags
  // XATTR_CREATE / XATTR_REPLACE. kNoData for a missing name.
  Status SetXattr(uint64_t ino, const std::string& name, const std::string& value, uint32_t flags);
  Result<std::string> GetXattr(uint64_t ino, const std::string& name);
  Result<std::vector<std::string>> ListXattr(uint64_t ino);
  Status RemoveXattr(uint64_t ino, const std::string& name);

  // --- advisory locks, held by the MDS (client_locks.cc) ---
  // Takes or releases a lock. kWouldBlock when another owner holds a
  // conflicting one and !wait; with wait, retries until granted, or until
  // interrupted() says the caller gave up (kInterrupted).
  Status SetLock(uint64_t ino, const LockSpec& l, bool wait,
                 const std::function<bool()>& interrupted = {});
  // F_GETLK: a lock that would block `l` (type F_UNLCK when none).
  Result<LockSpec> GetLock(uint64_t ino, const LockSpec& l);
  // Releases what `owner` holds on `ino` (close of a descriptor: fcntl
  // locks; last close of an open file description: flock). No RPC when
  // this client never took such a lock.
  Status ReleaseLocks(uint64_t ino, uint64_t owner, bool flock);

  // --- access plans (LLD-002 §4.2) ---
  // Hands over the order in which ranges of `ino` (open here) will be read,
  // by any process reading it through this client: the entries ahead of the
  // readers are fetched into the cache. A new plan replaces the file's old
  // one; its last close drops it. depth 0 = access_plan.default_prefetch_depth.
  // kNotSupported when plans are off (access_plan.enabled = false, or no
  // fragment cache to fetch into); kNotFound when ino is not open here.
  Status SubmitPlan(uint64_t ino, std::vector<PlanEntry> entries, uint32_t depth = 0);

  // --- data ---
  // Fetches the whole chunk map in one MDS RPC (LLD-002 §1.1); later reads
  // resolve shard locations from it with no MDS traffic.
  // writable: the handle may write (no plan bytes go to the kernel's page
  // cache while one is open).
  Result<std::shared_ptr<OpenFile>> Open(uint64_t ino, bool writable = false);
  // Reads up to `len` bytes at `offset` into `buf`; short at end of file.
  Result<size_t> Read(OpenFile& f, uint64_t offset, size_t len, char* buf);
  // One read of a batch: [offset, offset+length) into buf (caller-owned,
  // length bytes). Out: bytes (short at end of file, 0 past it) and status.
  struct ReadReq {
    uint64_t offset = 0;
    size_t length = 0;
    char* buf = nullptr;
    size_t bytes = 0;
    Status status;
    // The open file of the same inode this read came through, when not the
    // one ReadMany is given (several readers of one file, e.g. fio jobs or
    // DataLoader workers): its access detector sees the read. Not owned.
    OpenFile* via = nullptr;
  };
  // Serves many reads of one file together: cache hits are copied, and the
  // pieces all the misses need are grouped so that each DSS gets one
  // BatchRead for the whole set (LLD-002 §5.2, the role of an RDMA SGL).
  // Each request gets its own status; the return value is the first error.
  // A `via` of another inode fails every request (InvalidArgument).
  //
  // kNoLockWait is for reads a thread starts while it waits for its own
  // (net/wait_hook.h), and may hold this file's lock: instead of waiting
  // for the lock or fetching the map, ReadMany fails every request with
  // kWouldBlock before reading, and the caller serves them later in the
  // ordinary way.
  enum class LockWait { kMayBlock, kNoLockWait };
  Status ReadMany(OpenFile& f, std::span<ReadReq> reqs, LockWait wait = LockWait::kMayBlock);
  // Reads of any of this client's open files, each request naming the one
  // it reads in `via` (required here): the reads of one inode go together
  // as in ReadMany (whichever of its handles they came through, in their
  // order), and the misses of all the inodes are fetched together: one
  // BatchRead per DSS for all the files (a FUSE batch of reads of many
  // files costs one round trip, not one per file). An inode joins only if
  // its map lock is free and its map fresh (so no thread waits for one
  // file's lock while holding another's); the others, and those whose
  // joint read failed, are then served one by one as ReadMany serves them.
  // Statuses as ReadMany's (a request without `via`: InvalidArgument);
  // returns the first error.
  Status ReadFiles(std::span<ReadReq> reqs, LockWait wait = LockWait::kMayBlock);
  Status Write(OpenFile& f, uint64_t offset, const char* data, size_t len);
  // fallocate(2): mode 0 or FALLOC_FL_KEEP_SIZE (space is not reserved:
  // holes read as zeros and take no room), FALLOC_FL_PUNCH_HOLE |
  // FALLOC_FL_KEEP_SIZE, FALLOC_FL_ZERO_RANGE [| KEEP_SIZE]; other modes
  // are kNotSupported.
  Status Fallocate(OpenFile& f, int mode, uint64_t offset, uint64_t len);
  // An fadvise-style hint (POSIX_FADV_* advice) on [offset, offset+len),
  // len 0 = to end of file: RANDOM / SEQUENTIAL pin the handle's mode,
  // NORMAL returns to detection, WILLNEED prefetches the range into the
  // fragment cache, DONTNEED drops its cached fragments.
  Status Advise(OpenFile& f, uint64_t offset, uint64_t len, int advice);
  // Publishes every buffered write of the file: at close (Flush) and at
  // fsync (Fsync). Either returns, once per handle, a publication error
  // that happened since the handle last reported one, whoever's write it was.
  Status Flush(OpenFile& f);
  Status Fsync(OpenFile& f);
  // Flushes, and forgets the file's state when its last handle goes.
  Status Release(std::shared_ptr<OpenFile> f);

  std::map<std::string, uint64_t> Stats() const;
  // The access mode of the open inode's most recent read or hint
  // ("unknown" when not open).
  std::string ModeOf(uint64_t ino);

  // Called (from the lease callback thread) when another client changed
  // inode `ino` (name empty) or the entry `name` in directory `ino`; the
  // FUSE daemon forwards it to the kernel's caches.
  using InvalidateHook = std::function<void(uint64_t ino, const std::string& name)>;
  void SetInvalidateHook(InvalidateHook h) { invalidate_hook_ = std::move(h); }

  // Puts [offset, offset + bytes.size()) of inode `ino` into the kernel's
  // page cache (a FUSE mount: fuse_lowlevel_notify_store); whether it did.
  // Called on the plan executor's threads with no lock of the client held.
  // Set before any plan is submitted. Without it (the native client) plans
  // fetch into the fragment cache only.
  using KernelStoreHook = std::function<bool(uint64_t ino, uint64_t offset, std::string_view bytes)>;
  void SetKernelStoreHook(KernelStoreHook h) { kernel_store_hook_ = std::move(h); }

  // How long the kernel may cache attributes and entries: the lease time.
  double CacheTimeoutSeconds() const { return lease_ms_ / 1000.0; }

  ~Client();

 private:
  explicit Client(const Config& cfg);
  Status Connect();
  // --- session (client_session.cc) ---
  Status RegisterSession();
  void RenewLoop();
  bool LeaseValid() const;
  // A lease that ran out: nothing cached can be trusted; drops it all (once
  // per lapse) before anything is served from it again. Safe on any thread.
  void CheckLease();
  // Drops every cached attribute, entry, map and cached byte, and queues
  // the kernel's copies for the notifier.
  void DropAllCaches();
  // Kernel invalidations that must not run on the thread that asks for
  // them: a FUSE request's (invalidating an inode's pages waits for its
  // reads in flight) or a revocation's, for names (the kernel takes the
  // directory's lock, which a request of ours may hold while it waits for
  // the MDS). NotifierLoop carries them out.
  struct KernelWork {
    std::vector<uint64_t> inos;
    std::vector<std::pair<uint64_t, std::string>> names;
  };
  void QueueKernel(KernelWork work);
  void NotifierLoop();
  // Returns whether the client still has `ino` open.
  bool OnRevoke(uint64_t ino, const std::string& name, bool recall);
  // Tells the MDS this client no longer holds these inodes' state.
  void ReleaseRefs(const std::vector<uint64_t>& inos);
  // --- namespace helpers ---
  void CacheAttr(const pb::Attr& a, uint64_t seq_at_start);
  std::shared_ptr<FileState> FindOpen(uint64_t ino);
  // Forgets the cached entry `name` of `parent`, its inode's attributes and
  // the parent's attributes (all change when the entry does).
  void ForgetEntry(uint64_t parent, const std::string& name);
  void ForgetAttr(uint64_t ino);
  // Caches attributes the MDS returned for a change, and brings an open
  // state's up to date (keeping the size its buffered writes reach).
  void AdoptAttr(const pb::Attr& a, uint64_t seq_at_start);
  // Adds what only this client knows to an open file's attributes: the
  // size and times of its buffered writes.
  void OverlayOpen(pb::Attr& a);
  Result<pb::Attr> CreateCommon(uint32_t method, pb::CreateReq& r);
  Result<pb::Attr> Truncate(const pb::SetAttrReq& req);
  // Publishes the buffered writes of `ino` if this client has it open.
  Status FlushIfOpen(uint64_t ino);
  // --- data path helpers ---
  Status RefreshMap(FileState& st);
  // first: count the reads (not again when retried); planned: the file
  // has an access plan (its bytes go to the stream tier).
  Status ReadManyOnce(OpenFile& f, std::span<ReadReq> reqs, bool first, bool planned, LockWait wait);
  // ReadMany after its checks: attempts until the map is not stale.
  // counted: the reads were counted already (a retry of JointRead's).
  Status ReadManyAttempts(OpenFile& f, std::span<ReadReq> reqs, bool planned, LockWait wait, bool counted);
  // The reads of one inode, for JointRead; file: one of its handles.
  struct FileReads {
    OpenFile* file;
    std::span<ReadReq> reqs;
  };
  // ReadFiles once its requests are grouped by inode (distinct inodes;
  // every request's `via` is of its group's inode).
  Status JointRead(std::span<FileReads> files, LockWait wait);
  // Whether reqs (ReadMany's) all came through open files of f's inode;
  // if not, fails every request.
  static Status CheckVia(OpenFile& f, std::span<ReadReq> reqs);
  // ReadMany's requests as read-through reads of st (sizes clipped at end
  // of file), counted and shown to their files' detectors if `first`.
  void PrepareReads(OpenFile& f, FileState& st, std::span<ReadReq> reqs, bool first, bool planned,
                    ThroughRead* through);
  // Their outcome back into the requests; indexes what was read.
  void FinishReads(OpenFile& f, std::span<ReadReq> reqs, const ThroughRead* through);
  Status LockForRead(FileState& st, uint64_t offset, uint64_t len, std::shared_lock<ReadMostlyMutex>& rl,
                     std::unique_lock<ReadMostlyMutex>& wl, LockWait wait);
  // Fetches the chunk map of [offset, offset + len) into st (an MDS call).
  // Caller holds st.mu exclusively.
  Status FetchMap(FileState& st, uint64_t offset, uint64_t len);
  // Whether st's map may serve [offset, offset + len) as it is: nothing
  // buffered, not revoked, under the lease, the range's chunks known.
  // Caller holds st.mu (shared is enough).
  bool MapFresh(const FileState& st, uint64_t offset, uint64_t len) const;
  FragmentCache::Tier TierFor(const OpenFile& f) const;
  void AppendExtents(FileState& st, uint64_t offset, uint64_t len, char* buf,
                     std::vector<ReadExtent>& extents);
  // The one read loop of the client's data (cache/read_through.h): reads
  // through the fragment cache, the misses of all in one reader call,
  // cached unless a revocation came in after `seq`. file_of(i) -> FileState&:
  // read i's file. Caller holds their st.mu. Defined in client.cc, its only user.
  template <class FileOf>
  Status ReadThroughCache(FileOf&& file_of, std::span<ThroughRead> reads, uint64_t seq);
  // One range of it into the cache (and into buf unless null: prefetch).
  Status ReadThroughCache(FileState& st, uint64_t offset, uint64_t len, char* buf,
                          FragmentCache::Tier tier);
  void Observe(OpenFile& f, FileState& st, const AccessDetector::Decision& d);
  // Background work on the prefetch threads; dropped when kMaxQueuedPrefetches
  // are waiting (it is advice). Prefetch: a range into the stream tier.
  void Background(std::function<void()> job);
  void Prefetch(std::shared_ptr<FileState> st, uint64_t offset, uint64_t len);
  // Bytes prefetching may hold ahead of readers (access_plan.max_prefetch_bytes,
  // else the fragment cache's stream tier).
  uint64_t PrefetchBudget() const;
  void PrefetchRange(FileState& st, uint64_t offset, uint64_t len);
  // Background fetches need the map of their range: with chunks mapped as
  // reads need them (random_read.prefetch_full_chunkmap off) it may not be
  // here yet. Takes st.mu.
  Status MapForBackground(FileState& st, uint64_t offset, uint64_t len);
  void PrefetchLoop();
  Result<std::shared_ptr<FileState>> LoadState(uint64_t ino, bool open);
  Status FlushLocked(FileState& st);
  Status FlushOne(FileState& st, uint64_t index, bool grow_size = true);
  // The error a handle reports at fsync or close (see Flush).
  Status ReportError(OpenFile& f, uint64_t OpenFile::*seen);
  Status ZeroTail(FileState& st, uint64_t new_size);
  Status WriteLocked(FileState& st, uint64_t offset, const char* data, size_t len);
  // --- access plans (client_plans.cc) ---
  class PlanFetch;
  void StartPlans();
  // Reads plan entries of `ino` into the stream tier, together.
  Status FetchPlanned(uint64_t ino, std::span<const PlanEntry> entries);
  // Copies fetched entries from the stream tier into the kernel's page
  // cache, whole pages only, none of the pages of `keep` (PlanFetcher::HandOff).
  bool HandOffPlanned(uint64_t ino, std::span<const PlanEntry> entries, std::span<const PlanEntry> keep);
  // Tells the plan of f's file about a read; whether the file has a plan.
  bool NotePlannedRead(OpenFile& f, uint64_t offset, uint64_t len);
  // --- what reads tell the prefetching (client_auto_plan.cc) ---
  // A read of [offset, offset + n) of a file of `size` bytes (planned: the
  // file has a plan): read-ahead, strides, record-index plans. Caller
  // holds st.mu.
  void NoteRead(OpenFile& f, FileState& st, uint64_t offset, uint64_t n, uint64_t size, bool planned);
  // The bytes a read at `offset` returned: a record index's first bytes
  // have it loaded in the background. Caller holds st->mu.
  void MaybeIndex(const std::shared_ptr<FileState>& st, uint64_t offset, const char* buf, uint64_t n);
  void LoadIndex(FileState& st);

  Config cfg_;
  MdsClient mds_;
  std::unique_ptr<DssPool> dss_;
  std::unique_ptr<EcReader> reader_;
  std::unique_ptr<EcWriter> writer_;

  // Open files, and closed ones whose state is still worth keeping (each
  // holds an open reference at the MDS until dropped).
  static constexpr size_t kMaxCachedStates = 131072;  // ~1 KiB each for small files
  std::mutex open_mu_;
  std::unordered_map<uint64_t, std::shared_ptr<FileState>> open_;

  // --- lease session (LLD-002 §1.1, §3.3) ---
  std::unique_ptr<net::RpcServer> callback_;
  std::atomic<uint64_t> client_id_{0};
  uint32_t lease_ms_ = 10000;
  std::atomic<int64_t> lease_valid_until_ns_{0};  // steady clock
  std::mutex lapse_mu_;
  bool lapse_handled_ = false;  // caches dropped since the lease last lapsed
  std::mutex kernel_mu_;
  std::condition_variable kernel_cv_;
  KernelWork kernel_work_;  // guarded by kernel_mu_
  std::thread notifier_;
  std::atomic<bool> stop_{false};
  std::thread renew_;
  InvalidateHook invalidate_hook_;
  KernelStoreHook kernel_store_hook_;
  // Bumped by every revocation: a reply fetched while it moved may be stale
  // and is not cached.
  std::atomic<uint64_t> revoke_seq_{0};
  std::mutex meta_mu_;
  std::unordered_map<uint64_t, pb::Attr> attrs_;  // by ino
  std::map<std::pair<uint64_t, std::string>, uint64_t> entries_;  // (parent, name) -> ino

  // Lock owners that may hold locks, so a close that held none costs no RPC.
  std::mutex locks_mu_;
  std::set<std::tuple<uint64_t, uint64_t, bool>> lock_owners_;  // (ino, owner, flock)

  // --- fragment cache and read-ahead (LLD-002 §3.1, §1.2) ---
  std::unique_ptr<FragmentCache> fcache_;  // null when disabled
  static constexpr int kPrefetchThreads = 2;
  static constexpr size_t kMaxQueuedPrefetches = 64;
  std::mutex prefetch_mu_;
  std::condition_variable prefetch_cv_;
  std::deque<std::function<void()>> prefetch_q_;  // read-ahead, strides, index loads
  std::vector<std::thread> prefetchers_;

  std::unique_ptr<PlanFetcher> plan_fetch_;  // a PlanFetch
  std::unique_ptr<PlanExecutor> plans_;  // null when plans are off
  IndexCatalog indexes_;                 // record indexes read here

  Counter& app_bytes_read_;
  Counter& app_bytes_written_;
  Counter& app_reads_;
};

}  // namespace rustfs::client

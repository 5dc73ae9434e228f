// The rustfs client library: namespace calls to the MDS, and the data path
// (reads resolved in client memory from the chunk map fetched at open, EC
// partial reads, buffered writes published as new chunk versions).
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
#include <shared_mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>

#include "client/dss_pool.h"
#include "client/ec_reader.h"
#include "client/access_detector.h"
#include "client/ec_writer.h"
#include "client/file_state.h"
#include "cache/fragment_cache.h"
#include "client/mds_client.h"
#include "common/config.h"
#include "net/rpc_server.h"

namespace rustfs::client {

using cache::FragmentCache;

// An open file. Owned by the caller (shared_ptr), passed back to Read/Write.
struct OpenFile {
  std::shared_ptr<FileState> state;
  AccessDetector detector;  // this handle's access pattern (LLD-002 §1.2)
};

class Client {
 public:
  // Connects to the MDS in cfg and learns the DSS addresses from it.
  static Result<std::unique_ptr<Client>> Create(const Config& cfg);

  // --- namespace (each is one MDS RPC) ---
  Result<pb::Attr> Lookup(uint64_t parent, const std::string& name);
  // Attributes, with the size of writes buffered here included.
  Result<pb::Attr> GetAttr(uint64_t ino);
  // Truncation flushes buffered writes and zeroes the cut-off tail first.
  Result<pb::Attr> SetAttr(const pb::SetAttrReq& req);
  Result<pb::Attr> Create(uint64_t parent, const std::string& name, uint32_t mode, uint32_t uid,
                          uint32_t gid, bool exclusive);
  Result<pb::Attr> Mkdir(uint64_t parent, const std::string& name, uint32_t mode, uint32_t uid,
                         uint32_t gid);
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

  // --- data ---
  // Fetches the whole chunk map in one MDS RPC (LLD-002 §1.1); later reads
  // resolve shard locations from it with no MDS traffic.
  Result<std::shared_ptr<OpenFile>> Open(uint64_t ino);
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
  };
  // Serves many reads of one file together: cache hits are copied, and the
  // pieces all the misses need are grouped so that each DSS gets one
  // BatchRead for the whole set (LLD-002 §5.2, the role of an RDMA SGL).
  // Each request gets its own status; the return value is the first error.
  Status ReadMany(OpenFile& f, std::span<ReadReq> reqs);
  Status Write(OpenFile& f, uint64_t offset, const char* data, size_t len);
  // An fadvise-style hint (POSIX_FADV_* advice) on [offset, offset+len),
  // len 0 = to end of file: RANDOM / SEQUENTIAL pin the handle's mode,
  // NORMAL returns to detection, WILLNEED prefetches the range into the
  // fragment cache, DONTNEED drops its cached fragments.
  Status Advise(OpenFile& f, uint64_t offset, uint64_t len, int advice);
  // Publishes every buffered write of the file (close, fsync).
  Status Flush(OpenFile& f);
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

  // How long the kernel may cache attributes and entries: the lease time.
  double CacheTimeoutSeconds() const { return lease_ms_ / 1000.0; }

  ~Client();

 private:
  explicit Client(const Config& cfg);
  Status Connect();
  Status RegisterSession();
  void RenewLoop();
  bool LeaseValid() const;
  // Drops every cached attribute, entry and map (lease lost).
  void DropAllCaches();
  void OnRevoke(uint64_t ino, const std::string& name);
  Status RefreshMap(FileState& st);
  void CacheAttr(const pb::Attr& a, uint64_t seq_at_start);
  std::shared_ptr<FileState> FindOpen(uint64_t ino);
  // Forgets the cached entry `name` of `parent`, its inode's attributes and
  // the parent's attributes (all change when the entry does).
  void ForgetEntry(uint64_t parent, const std::string& name);
  Result<pb::Attr> CreateCommon(uint32_t method, pb::CreateReq& r);
  Status LockForRead(FileState& st, std::shared_lock<std::shared_mutex>& rl,
                     std::unique_lock<std::shared_mutex>& wl);
  FragmentCache::Tier TierFor(const OpenFile& f) const;
  void AppendExtents(FileState& st, uint64_t offset, uint64_t len, char* buf,
                     std::vector<ReadExtent>& extents);
  Status FetchRange(FileState& st, uint64_t offset, uint64_t len, char* buf);
  Status ReadThroughCache(FileState& st, uint64_t offset, uint64_t len, char* buf,
                          FragmentCache::Tier tier);
  void Observe(OpenFile& f, FileState& st, const AccessDetector::Decision& d);
  void Prefetch(std::shared_ptr<FileState> st, uint64_t offset, uint64_t len);
  void PrefetchLoop();
  Result<std::shared_ptr<FileState>> LoadState(uint64_t ino);
  Status FlushLocked(FileState& st);
  Status FlushOne(FileState& st, uint64_t index, bool grow_size = true);
  Status ZeroTail(FileState& st, uint64_t new_size);

  Config cfg_;
  MdsClient mds_;
  std::unique_ptr<DssPool> dss_;
  std::unique_ptr<EcReader> reader_;
  std::unique_ptr<EcWriter> writer_;

  // Open files, and closed ones whose state is still worth keeping.
  static constexpr size_t kMaxCachedStates = 131072;  // ~1 KiB each for small files
  std::mutex open_mu_;
  std::unordered_map<uint64_t, std::shared_ptr<FileState>> open_;

  // --- lease session (LLD-002 §1.1, §3.3) ---
  std::unique_ptr<net::RpcServer> callback_;
  std::atomic<uint64_t> client_id_{0};
  uint32_t lease_ms_ = 10000;
  std::atomic<int64_t> lease_valid_until_ns_{0};  // steady clock
  std::atomic<bool> stop_{false};
  std::thread renew_;
  InvalidateHook invalidate_hook_;
  // Bumped by every revocation: a reply fetched while it moved may be stale
  // and is not cached.
  std::atomic<uint64_t> revoke_seq_{0};
  std::mutex meta_mu_;
  std::unordered_map<uint64_t, pb::Attr> attrs_;  // by ino
  std::map<std::pair<uint64_t, std::string>, uint64_t> entries_;  // (parent, name) -> ino

  // --- fragment cache and read-ahead (LLD-002 §3.1, §1.2) ---
  std::unique_ptr<FragmentCache> fcache_;  // null when disabled
  struct PrefetchJob {
    std::shared_ptr<FileState> state;
    uint64_t offset = 0;
    uint64_t length = 0;
  };
  static constexpr int kPrefetchThreads = 2;
  static constexpr size_t kMaxQueuedPrefetches = 64;
  std::mutex prefetch_mu_;
  std::condition_variable prefetch_cv_;
  std::deque<PrefetchJob> prefetch_q_;
  std::vector<std::thread> prefetchers_;

  Counter& app_bytes_read_;
  Counter& app_bytes_written_;
  Counter& app_reads_;
};

}  // namespace rustfs::client

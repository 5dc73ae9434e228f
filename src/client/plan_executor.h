// Access plans (LLD-002 §4.2, DESIGN.md §8): the application hands over the
// order in which it will read a file (offset, length per entry), and the
// executor keeps the entries ahead of the readers fetched or in flight, so
// the reads find their bytes in the client's cache.
//
// How reads really arrive: PyTorch's DataLoader cuts the epoch's order into
// batches and hands them round-robin to W worker processes, each reading its
// samples in plan order through its own descriptor; the client (one FUSE
// daemon for the whole mount) sees W interleaved streams. So a plan is per
// inode, shared by every reader of the file, and a read is matched to the
// unread entries it reads (covers, is a piece of, or reads past their edge
// pages) inside a window of entries from the lowest unread one (`head`),
// not to a single cursor: reads out of order, from several processes, in
// pieces or in whole pages (the kernel's) all match. Fetching runs `depth`
// entries past the furthest entry read, and at most `max_bytes` fetched and
// not read, many entries per fetch (each fetch is one BatchRead per DSS).
// Entries the kernel serves from its page cache never reach the executor:
// they do not hold fetching back.
//
// Hand-off (a FUSE mount): the fetcher may put fetched entries into the
// readers' kernel page cache, so that reading them costs no FUSE request.
// Reads of such entries never reach the executor, so every `keep_every`-th
// entry is kept back (the fetcher leaves its pages out of the kernel's
// cache): its reads still come here and say where the readers are. A handed
// entry no longer counts against the byte budget (the kernel's memory holds
// it, and evicts it as it likes); readers passing it took it from the
// kernel, and a read of it that reaches the executor anyway is a hit.
//
// A read of an entry whose fetch is still in flight waits for it (late); a
// read of an entry not fetched yet is served at once and the entry is
// skipped; entries the readers pass by half a window unread are given up
// (abandoned); reads outside the plan are served normally, and after
// `max_misses` of them in a row the plan is dropped. A new plan replaces the
// file's old one; Cancel (the file's last close) drops it; one read to its
// last entry is over (completed). Bytes fetched but never read when a plan
// ends count as wasted.
//
// Thread-safe. Fetches run on the executor's own threads, outside its lock;
// hand-offs on a thread of their own: storing into the kernel's page cache
// waits for page locks that reads in flight hold, and those reads may be
// waiting for a fetch, which must never wait behind a hand-off.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/metrics.h"
#include "common/status.h"

namespace rustfs::client {

struct PlanEntry {
  uint64_t offset = 0;  // bytes into the file
  uint64_t length = 0;  // bytes, > 0
};

// What the executor needs of the client: entries fetched into the cache.
class PlanFetcher {
 public:
  virtual ~PlanFetcher() = default;
  // Reads these ranges of `ino` into the cache, together. Blocking; called
  // on the executor's threads.
  virtual Status Fetch(uint64_t ino, std::span<const PlanEntry> entries) = 0;
  // After a successful Fetch of `entries`, once readers waiting for them
  // have been let go: puts their bytes into the readers' kernel page cache,
  // except the pages of the entries in `keep`. Whether it did (false: there
  // is no such cache, or the file may be changing). Called on the
  // executor's threads, with no lock of the executor held.
  virtual bool HandOff(uint64_t ino, std::span<const PlanEntry> entries, std::span<const PlanEntry> keep) {
    (void)ino, (void)entries, (void)keep;
    return false;
  }
};

class PlanExecutor {
 public:
  struct Options {
    uint32_t depth = 64;                // entries fetched past the furthest one read
    uint64_t max_bytes = 128ull << 20;  // ...and bytes
    uint32_t batch = 32;                // entries per fetch at most; one waits for min(batch, depth / 2) of room
    uint32_t window = 0;                // match window in entries; 0 = max(4 x depth, 1024)
    uint32_t max_misses = 256;          // reads in a row outside the plan before it is dropped
    int threads = 2;                    // fetching threads
    uint32_t page = 4096;               // bytes the readers' kernel reads in (a FUSE mount's page); 1 = exact
    uint32_t keep_every = 8;            // hand-off: every keep_every-th entry stays out of the kernel's cache; < 2: no hand-off
  };
  enum class Match { kNoPlan, kHit, kLate, kEarly, kMiss };

  PlanExecutor(PlanFetcher& fetcher, const Options& options);
  // Drops every plan and waits for the fetches in flight.
  ~PlanExecutor();

  // Replaces ino's plan and starts fetching. depth 0 = Options::depth.
  // InvalidArgument for an empty plan or an entry of length 0 (or one
  // running past 2^64). A plan the client made up itself (automatic: from
  // a record index) never replaces one the application gave: AlreadyExists.
  Status Submit(uint64_t ino, std::vector<PlanEntry> entries, uint32_t depth = 0, bool automatic = false);
  // Call before a read of [offset, offset + length) of ino is served. When
  // the read is a plan entry whose fetch is in flight, waits for the fetch.
  Match OnRead(uint64_t ino, uint64_t offset, uint64_t length);
  // ino's last close: its plan goes (fetches in flight are left to finish
  // unseen).
  void Cancel(uint64_t ino);
  bool HasPlan(uint64_t ino) const;

 private:
  // kHanded: fetched and handed to the readers' kernel page cache.
  enum State : uint8_t { kIdle, kInFlight, kFetched, kHanded, kRead };
  struct Plan {
    uint64_t ino = 0;
    std::vector<PlanEntry> entries;
    std::vector<std::pair<uint64_t, uint32_t>> by_offset;  // (offset, index), sorted
    uint64_t max_length = 0;  // longest entry: how far back a containing entry can start
    std::vector<State> state;
    size_t head = 0;          // lowest entry not read
    size_t reached = 0;       // 1 + the highest entry read: fetching runs depth entries past it
    size_t next = 0;          // next entry to fetch
    uint32_t depth = 0;
    uint64_t ahead_bytes = 0;  // of entries fetched or in flight, not read
    uint32_t fetches = 0;     // fetches in flight
    uint32_t misses_in_a_row = 0;
    bool automatic = false;   // made up by the client, not given by the application
    bool ended = false;       // replaced, cancelled, dropped or read to the end
  };
  struct Job {
    std::shared_ptr<Plan> plan;
    std::vector<uint32_t> indexes;
  };

  // Queues fetches until they are depth entries past the furthest read, or
  // max_bytes are fetched and not read.
  // Caller holds mu_.
  void Pump(const std::shared_ptr<Plan>& p);
  // Marks the plan over and counts what it fetched for nothing. Caller holds mu_.
  void End(Plan& p);
  // The unread entries inside the window that [offset, offset + length)
  // reads (see Reads; failing any, the earliest unread one it touches), and
  // whether it reads an entry read already. Caller holds mu_.
  void Find(const Plan& p, uint64_t offset, uint64_t length, std::vector<size_t>& unread,
            bool& overlaps_read) const;
  // Whether a read of [offset, end) reads the entry [start, stop) it
  // overlaps, as opposed to touching it in a page it shares with another.
  bool Reads(uint64_t offset, uint64_t end, uint64_t start, uint64_t stop) const;
  size_t Window(const Plan& p) const;  // entries from head a read is matched in
  // Caller holds mu_ for these. Consume: entry i read. Abandon: left behind
  // unread. Release: no longer counted ahead.
  void Consume(Plan& p, size_t i);
  void Abandon(Plan& p, size_t i);
  void Release(Plan& p, size_t i);
  void Worker();
  // Publishes plans_.size() to plan_count_ after a change. Caller holds mu_.
  void CountPlans();
  // Hands a finished fetch's entries to the kernel (PlanFetcher::HandOff)
  // and marks those still unread as handed. Takes mu_.
  void HandOff(const Job& job);
  void HandOffWorker();

  PlanFetcher& fetcher_;
  const Options opt_;
  mutable std::mutex mu_;
  std::condition_variable jobs_cv_;     // a job queued, or stopping
  std::condition_variable fetched_cv_;  // a fetch finished (late readers wait on it)
  std::unordered_map<uint64_t, std::shared_ptr<Plan>> plans_;
  // plans_.size(), read without mu_: a read with no plan anywhere skips the
  // lock. A plan submitted while a read is in flight may miss that read.
  std::atomic<size_t> plan_count_{0};
  std::deque<Job> jobs_;
  std::condition_variable handoffs_cv_;  // a fetch to hand off, or stopping
  std::deque<Job> handoffs_;             // fetched, for the kernel's page cache
  bool stop_ = false;
  std::vector<std::thread> threads_;
  std::thread handoff_thread_;

  Counter& submitted_;
  Counter& hits_;
  Counter& late_;
  Counter& early_;
  Counter& misses_;
  Counter& dropped_;
  Counter& prefetched_bytes_;
  Counter& wasted_bytes_;
  Counter& fetch_errors_;
  Counter& abandoned_;
  Counter& completed_;
  Counter& handed_;
};

}  // namespace rustfs::client

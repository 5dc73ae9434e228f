// PlanExecutor against a fake fetcher (no processes): what it fetches, in
// which order and how far ahead, and how reads are matched to entries.
#include "client/plan_executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

namespace rustfs::client {
namespace {

using namespace std::chrono_literals;
using Match = PlanExecutor::Match;

// Records every entry fetched; with the gate closed, fetches wait for it.
class FakeFetcher : public PlanFetcher {
 public:
  Status Fetch(uint64_t ino, std::span<const PlanEntry> entries) override {
    std::unique_lock lk(mu_);
    in_flight_ += entries.size();
    cv_.notify_all();
    cv_.wait(lk, [&] { return open_; });
    for (const auto& e : entries) fetched_[ino].insert(e.offset);
    sizes_.push_back(entries.size());
    in_flight_ -= entries.size();
    cv_.notify_all();
    return fail_ ? IoError("fetch failed") : Status::Ok();
  }
  void SetGate(bool open) {
    std::lock_guard lk(mu_);
    open_ = open;
    cv_.notify_all();
  }
  void SetFail(bool fail) {
    std::lock_guard lk(mu_);
    fail_ = fail;
  }
  bool Fetched(uint64_t ino, uint64_t offset) {
    std::lock_guard lk(mu_);
    return fetched_[ino].count(offset) != 0;
  }
  size_t FetchedCount(uint64_t ino) {
    std::lock_guard lk(mu_);
    return fetched_[ino].size();
  }
  // Waits (bounded: a test that would hang fails instead) for a condition.
  static bool WaitFor(const std::function<bool()>& pred) {
    for (auto end = std::chrono::steady_clock::now() + 10s; std::chrono::steady_clock::now() < end;) {
      if (pred()) return true;
      std::this_thread::sleep_for(1ms);
    }
    return pred();
  }
  size_t InFlight() {
    std::lock_guard lk(mu_);
    return in_flight_;
  }
  // Entries per fetch, in the order the fetches finished.
  std::vector<size_t> Sizes() {
    std::lock_guard lk(mu_);
    return sizes_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, std::set<uint64_t>> fetched_;
  size_t in_flight_ = 0;
  std::vector<size_t> sizes_;
  bool open_ = true;
  bool fail_ = false;
};

// Bytes the executor has taken as fetched since `from` (it counts them once
// the entries are marked, so a read after this sees them fetched).
uint64_t PrefetchedSince(uint64_t from) { return GetCounter("client.plan_prefetched_bytes").Get() - from; }
uint64_t PrefetchedNow() { return GetCounter("client.plan_prefetched_bytes").Get(); }

std::vector<PlanEntry> Shuffled(size_t n, uint64_t record, uint64_t seed) {
  std::vector<PlanEntry> v;
  for (size_t i = 0; i < n; i++) v.push_back({i * record, record});
  std::shuffle(v.begin(), v.end(), std::mt19937_64(seed));
  return v;
}

TEST(PlanExecutorTest, EveryPlannedReadIsAHitAfterWarmUp) {
  FakeFetcher f;
  PlanExecutor::Options o;
  o.depth = 16;
  o.batch = 4;
  o.threads = 1;  // fetches complete in plan order, which the waits below count on
  PlanExecutor ex(f, o);
  auto plan = Shuffled(400, 8192, 1);
  Counter& hits = GetCounter("client.plan_hits");
  Counter& prefetched = GetCounter("client.plan_prefetched_bytes");
  // Taken before Submit: the first fetches may complete before the next
  // statement runs, and a base taken after them would wait for bytes the
  // executor (depth-bound) will not fetch until a read moves it on.
  const uint64_t h0 = hits.Get(), p0 = prefetched.Get();
  ASSERT_TRUE(ex.Submit(7, plan).ok());
  for (size_t k = 0; k < plan.size(); k++) {
    // The fetching keeps ahead of the reader by itself: entries are fetched
    // in plan order, and the counter moves once the executor has taken a
    // fetch's entries as fetched.
    ASSERT_TRUE(f.WaitFor([&] { return prefetched.Get() - p0 >= (k + 1) * 8192; })) << k;
    ASSERT_EQ(ex.OnRead(7, plan[k].offset, plan[k].length), Match::kHit) << k;
  }
  EXPECT_EQ(hits.Get() - h0, plan.size());
  EXPECT_EQ(f.FetchedCount(7), plan.size());
  // The reader moved one entry at a time, yet every fetch took a whole
  // batch (each is a BatchRead on every DSS): 400 entries, 100 fetches of 4.
  EXPECT_EQ(f.Sizes(), std::vector<size_t>(100, 4));
}

TEST(PlanExecutorTest, ReadersOutOfOrderAndManyProcessesMatch) {
  // DataLoader: batches of 8 dealt round-robin to 4 workers, each reading
  // its batches in plan order, all interleaved; a worker runs at most two
  // batches ahead of the slowest (the loader's prefetch factor paces them).
  FakeFetcher f;
  PlanExecutor::Options o;
  o.depth = 64;
  PlanExecutor ex(f, o);
  auto plan = Shuffled(2000, 4096, 2);
  ASSERT_TRUE(ex.Submit(3, plan).ok());
  Counter& misses = GetCounter("client.plan_misses");
  const uint64_t m0 = misses.Get();
  std::atomic<int> matched{0};
  std::barrier rounds(4);
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; w++)
    workers.emplace_back([&, w] {
      for (size_t b = size_t(w); b * 8 < plan.size(); b += 4) {
        for (size_t i = b * 8; i < std::min(plan.size(), b * 8 + 8); i++)
          if (ex.OnRead(3, plan[i].offset, plan[i].length) != Match::kMiss) matched++;
        if ((b / 4) % 2 == 1) rounds.arrive_and_wait();  // every second round
      }
      rounds.arrive_and_drop();
    });
  for (auto& t : workers) t.join();
  EXPECT_EQ(matched.load(), int(plan.size()));
  EXPECT_EQ(misses.Get(), m0);
  EXPECT_FALSE(ex.HasPlan(3));  // read to its end: over
}

TEST(PlanExecutorTest, ReadWaitsForItsFetchInFlight) {
  FakeFetcher f;
  f.SetGate(false);
  PlanExecutor::Options o;
  o.depth = 4;
  o.batch = 4;
  PlanExecutor ex(f, o);
  std::vector<PlanEntry> plan = {{0, 100}, {100, 100}, {200, 100}, {300, 100}, {400, 100}};
  ASSERT_TRUE(ex.Submit(1, plan).ok());
  ASSERT_TRUE(f.WaitFor([&] { return f.InFlight() == 4; }));  // entries 0-3 in flight
  std::atomic<bool> returned{false};
  Match got = Match::kNoPlan;
  std::thread reader([&] {
    got = ex.OnRead(1, 200, 100);
    returned = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(returned.load());  // it cannot have: its bytes are still on their way
  f.SetGate(true);
  reader.join();
  EXPECT_EQ(got, Match::kLate);
  // Entry 4 was never fetched (depth 4, nothing read before it came): a read
  // of it is early, served at once.
  ASSERT_TRUE(f.WaitFor([&] { return f.InFlight() == 0; }));
}

TEST(PlanExecutorTest, ReadBeforeItsFetchIsEarlyAndSkipped) {
  FakeFetcher f;
  f.SetGate(false);
  PlanExecutor::Options o;
  o.depth = 2;
  o.batch = 2;
  o.threads = 1;  // fetches complete in plan order
  PlanExecutor ex(f, o);
  std::vector<PlanEntry> plan;
  for (uint64_t i = 0; i < 10; i++) plan.push_back({i * 10, 10});
  const uint64_t p0 = PrefetchedNow();
  ASSERT_TRUE(ex.Submit(1, plan).ok());
  ASSERT_TRUE(f.WaitFor([&] { return f.InFlight() == 2; }));
  EXPECT_EQ(ex.OnRead(1, 50, 10), Match::kEarly);  // entry 5: not fetched yet
  f.SetGate(true);
  ASSERT_TRUE(f.WaitFor([&] { return PrefetchedSince(p0) >= 20; }));
  for (uint64_t i : {0, 1}) EXPECT_EQ(ex.OnRead(1, i * 10, 10), Match::kHit);
  // Entry 5 was read: the fetching passes over it (fetched in order: 2, 3, 4, 6).
  uint64_t fetched = 2;
  for (uint64_t i : {2, 3, 4, 6}) {
    ++fetched;
    ASSERT_TRUE(f.WaitFor([&] { return PrefetchedSince(p0) >= fetched * 10; })) << i;
    EXPECT_EQ(ex.OnRead(1, i * 10, 10), Match::kHit) << i;
  }
  EXPECT_FALSE(f.Fetched(1, 50));
}

TEST(PlanExecutorTest, DivergingReadsDropThePlan) {
  FakeFetcher f;
  PlanExecutor::Options o;
  o.max_misses = 10;
  PlanExecutor ex(f, o);
  ASSERT_TRUE(ex.Submit(9, Shuffled(100, 4096, 3)).ok());
  Counter& dropped = GetCounter("client.plans_dropped");
  const uint64_t d0 = dropped.Get();
  // A hit in between restarts the count.
  for (int i = 0; i < 9; i++) EXPECT_EQ(ex.OnRead(9, (1ull << 40) + i * 4096, 4096), Match::kMiss);
  EXPECT_NE(ex.OnRead(9, 0, 4096), Match::kMiss);
  for (int i = 0; i < 9; i++) ex.OnRead(9, (1ull << 40) + i * 4096, 4096);
  EXPECT_TRUE(ex.HasPlan(9));
  ex.OnRead(9, 1ull << 41, 4096);
  EXPECT_FALSE(ex.HasPlan(9));
  EXPECT_EQ(dropped.Get(), d0 + 1);
  EXPECT_EQ(ex.OnRead(9, 4096, 4096), Match::kNoPlan);
}

TEST(PlanExecutorTest, ByteBudgetHolds) {
  FakeFetcher f;
  PlanExecutor::Options o;
  o.depth = 1000;
  o.batch = 1;
  o.max_bytes = 4 << 20;
  PlanExecutor ex(f, o);
  std::vector<PlanEntry> plan;
  for (uint64_t i = 0; i < 50; i++) plan.push_back({i << 20, 1 << 20});  // 1 MiB entries
  ASSERT_TRUE(ex.Submit(2, plan).ok());
  ASSERT_TRUE(f.WaitFor([&] { return f.FetchedCount(2) >= 4; }));
  std::this_thread::sleep_for(50ms);  // were it to overshoot, it would have by now
  EXPECT_EQ(f.FetchedCount(2), 4u);   // 4 MiB ahead, no more
  ex.OnRead(2, 0, 1 << 20);
  ex.OnRead(2, 1 << 20, 1 << 20);
  ASSERT_TRUE(f.WaitFor([&] { return f.FetchedCount(2) >= 6; }));
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(f.FetchedCount(2), 6u);
}

TEST(PlanExecutorTest, NewPlanReplacesAndCountsWaste) {
  FakeFetcher f;
  PlanExecutor::Options o;
  o.depth = 8;
  o.threads = 1;  // fetches complete in plan order
  PlanExecutor ex(f, o);
  std::vector<PlanEntry> a, b;
  for (uint64_t i = 0; i < 20; i++) a.push_back({i * 1000, 1000});
  for (uint64_t i = 0; i < 20; i++) b.push_back({100000 + i * 1000, 1000});
  Counter& wasted = GetCounter("client.plan_wasted_bytes");
  const uint64_t p0 = PrefetchedNow();
  ASSERT_TRUE(ex.Submit(4, a).ok());
  ASSERT_TRUE(f.WaitFor([&] { return PrefetchedSince(p0) >= 8000; }));  // depth 8: entries 0..7
  const uint64_t w0 = wasted.Get();
  for (uint64_t i = 0; i < 4; i++) EXPECT_EQ(ex.OnRead(4, i * 1000, 1000), Match::kHit);
  // and so entries 8..11: a whole batch (depth / 2) has room
  ASSERT_TRUE(f.WaitFor([&] { return PrefetchedSince(p0) >= 12000; }));
  ASSERT_TRUE(ex.Submit(4, b).ok());  // next epoch
  EXPECT_EQ(wasted.Get() - w0, 8 * 1000u);  // entries 4..11 fetched for nothing
  EXPECT_EQ(ex.OnRead(4, 4000, 1000), Match::kMiss);  // the old plan's entry
  ASSERT_TRUE(f.WaitFor([&] { return PrefetchedSince(p0) >= 13000; }));  // the new plan's first
  EXPECT_EQ(ex.OnRead(4, 100000, 1000), Match::kHit);
}

TEST(PlanExecutorTest, CancelEndsThePlanAndReleasesWaiters) {
  FakeFetcher f;
  f.SetGate(false);
  PlanExecutor ex(f, PlanExecutor::Options());
  ASSERT_TRUE(ex.Submit(5, {{0, 10}, {10, 10}}).ok());
  ASSERT_TRUE(f.WaitFor([&] { return f.InFlight() > 0; }));
  std::thread reader([&] { ex.OnRead(5, 0, 10); });
  std::this_thread::sleep_for(20ms);
  ex.Cancel(5);  // the last close: the waiting reader goes on, reading itself
  reader.join();
  EXPECT_FALSE(ex.HasPlan(5));
  f.SetGate(true);  // the fetch in flight finishes unseen
  ASSERT_TRUE(f.WaitFor([&] { return f.InFlight() == 0; }));
}

// OnRead skips the lock while no file has a plan: the count it reads must
// follow every way a plan comes and goes, or a live plan would be unseen.
TEST(PlanExecutorTest, PlansComingAndGoingAreAllSeen) {
  FakeFetcher f;
  PlanExecutor::Options o;
  o.max_misses = 2;
  PlanExecutor ex(f, o);
  EXPECT_EQ(ex.OnRead(1, 0, 10), Match::kNoPlan);
  ASSERT_TRUE(ex.Submit(1, {{0, 10}, {10, 10}}).ok());
  ASSERT_TRUE(ex.Submit(2, {{0, 10}, {10, 10}, {20, 10}}).ok());
  ASSERT_TRUE(ex.Submit(3, {{0, 10}, {10, 10}}).ok());
  ASSERT_TRUE(ex.Submit(2, {{0, 10}, {10, 10}, {20, 10}}).ok());  // replaced: still three
  ex.Cancel(1);                                                     // cancelled
  EXPECT_EQ(ex.OnRead(1, 0, 10), Match::kNoPlan);
  ASSERT_NE(ex.OnRead(3, 0, 10), Match::kNoPlan);
  ASSERT_NE(ex.OnRead(3, 10, 10), Match::kNoPlan);  // read to the end: over
  EXPECT_FALSE(ex.HasPlan(3));
  EXPECT_EQ(ex.OnRead(2, 1000, 10), Match::kMiss);
  EXPECT_EQ(ex.OnRead(2, 2000, 10), Match::kMiss);  // dropped
  EXPECT_FALSE(ex.HasPlan(2));
  EXPECT_EQ(ex.OnRead(2, 0, 10), Match::kNoPlan);
  ASSERT_TRUE(ex.Submit(4, {{0, 10}, {10, 10}}).ok());  // from none to one again
  EXPECT_NE(ex.OnRead(4, 0, 10), Match::kNoPlan);
}

TEST(PlanExecutorTest, PiecesAndWholePagesMatch) {
  FakeFetcher f;
  PlanExecutor ex(f, PlanExecutor::Options());  // 4 KiB pages
  std::vector<PlanEntry> plan = {{40000, 10000}, {60000, 1000}, {70000, 5000}};
  const uint64_t p0 = PrefetchedNow();
  ASSERT_TRUE(ex.Submit(6, plan).ok());
  ASSERT_TRUE(f.WaitFor([&] { return PrefetchedSince(p0) >= 16000; }));
  // A record read in two pieces.
  EXPECT_EQ(ex.OnRead(6, 40000, 6000), Match::kHit);
  EXPECT_EQ(ex.OnRead(6, 46000, 4000), Match::kHit);
  EXPECT_EQ(ex.OnRead(6, 30000, 100), Match::kMiss);
  // Two records read by one read.
  EXPECT_EQ(ex.OnRead(6, 57344, 20480), Match::kHit);
}

TEST(PlanExecutorTest, ReadToTheEndIsOverAndAutomaticPlansYield) {
  FakeFetcher f;
  PlanExecutor ex(f, PlanExecutor::Options());
  Counter& completed = GetCounter("client.plans_completed");
  const uint64_t c0 = completed.Get();
  // A plan the client made up gives way to the application's, never the
  // other way round.
  ASSERT_TRUE(ex.Submit(4, {{0, 10}, {10, 10}}, 0, /*automatic=*/true).ok());
  ASSERT_TRUE(ex.Submit(4, {{100, 10}, {200, 10}}).ok());
  EXPECT_EQ(ex.Submit(4, {{0, 10}}, 0, /*automatic=*/true).code(), Code::kAlreadyExists);
  ex.OnRead(4, 200, 10);
  EXPECT_TRUE(ex.HasPlan(4));
  ex.OnRead(4, 100, 10);
  EXPECT_FALSE(ex.HasPlan(4));
  EXPECT_EQ(completed.Get(), c0 + 1);
  EXPECT_EQ(ex.OnRead(4, 100, 10), Match::kNoPlan);
  ASSERT_TRUE(ex.Submit(4, {{0, 10}}, 0, /*automatic=*/true).ok());  // the next epoch's
}

// Records packed back to back, read through a kernel that reads whole 4 KiB
// pages and skips the ones it has: each read is matched to the record it is
// for, never to the neighbours whose edge pages it shares.
TEST(PlanExecutorTest, KernelPageReadsMatchTheirRecord) {
  FakeFetcher f;
  PlanExecutor::Options o;
  o.threads = 1;
  PlanExecutor ex(f, o);
  const PlanEntry a{1000, 8000}, b{9000, 5000}, c{14000, 16000}, d{30000, 3000}, h{33000, 7000},
      e{40000, 6000}, g{46000, 4000};
  std::vector<PlanEntry> plan = {b, c, a, e, g, d, h};
  const uint64_t p0 = PrefetchedNow();
  ASSERT_TRUE(ex.Submit(1, plan).ok());
  ASSERT_TRUE(f.WaitFor([&] { return PrefetchedSince(p0) >= 49000; }));
  Counter& hits = GetCounter("client.plan_hits");
  Counter& misses = GetCounter("client.plan_misses");
  const uint64_t h0 = hits.Get(), m0 = misses.Get();
  // b: its pages [8192, 16384), shared with a's tail and c's head.
  EXPECT_EQ(ex.OnRead(1, 8192, 8192), Match::kHit);
  // c: its first page cached, the read runs into d's first page.
  EXPECT_EQ(ex.OnRead(1, 16384, 16384), Match::kHit);
  // a: its last page cached.
  EXPECT_EQ(ex.OnRead(1, 0, 8192), Match::kHit);
  // e: its pages, from h's last to g's first.
  EXPECT_EQ(ex.OnRead(1, 36864, 12288), Match::kHit);
  // g: its last page, the rest cached.
  EXPECT_EQ(ex.OnRead(1, 49152, 4096), Match::kHit);
  // d: its last page alone, shared with h's head; d is due first. Then h
  // is not read (its pages are cached): it stays unread.
  EXPECT_EQ(ex.OnRead(1, 32768, 4096), Match::kHit);
  EXPECT_EQ(hits.Get() - h0, 6u);
  EXPECT_EQ(misses.Get(), m0);
}

// The kernel may read a record's last page in a request of its own (seen
// on Linux 6.18 under PyTorch workers). When that page is shared with a
// record due much later, it is the rest of the one just read: not a read of
// the later one ahead of the fetching.
TEST(PlanExecutorTest, ARecordsLastPageReadAloneIsTheRestOfIt) {
  FakeFetcher f;
  PlanExecutor::Options o;
  o.threads = 1;
  o.depth = 2;
  o.keep_every = 0;
  PlanExecutor ex(f, o);
  // Records of 5000 bytes back to back: record 0's last page [4096, 8192)
  // is record 1's first. Record 1 is due tenth.
  std::vector<PlanEntry> plan;
  for (uint64_t r : {0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 11}) plan.push_back({r * 5000, 5000});
  const uint64_t p0 = PrefetchedNow();
  ASSERT_TRUE(ex.Submit(1, plan).ok());
  ASSERT_TRUE(f.WaitFor([&] { return PrefetchedSince(p0) >= 2 * 5000; }));
  Counter& early = GetCounter("client.plan_early");
  const uint64_t e0 = early.Get();
  EXPECT_EQ(ex.OnRead(1, 0, 4096), Match::kHit);     // record 0 but its last page
  EXPECT_EQ(ex.OnRead(1, 4096, 4096), Match::kHit);  // its last page, alone
  EXPECT_FALSE(f.Fetched(1, 5000));                  // record 1's turn has not come
  // The readers go on in the plan's order: each record is fetched before
  // it is read, record 1 too.
  // A fetch is done for the executor once it counts its bytes (the fake
  // fetcher records an entry before it returns: a read right then finds
  // the fetch still in flight, kLate). One fetch thread: in plan order.
  for (size_t i = 1; i < plan.size(); i++) {
    ASSERT_TRUE(f.WaitFor([&] { return PrefetchedSince(p0) >= (i + 1) * 5000; })) << i;
    ASSERT_TRUE(f.Fetched(1, plan[i].offset)) << i;
    EXPECT_EQ(ex.OnRead(1, plan[i].offset, plan[i].length), Match::kHit) << i;
  }
  EXPECT_EQ(early.Get(), e0);
}

// An entry the readers never read (a skipped sample) is given up once they
// are half a window past it, so the fetching goes on.
TEST(PlanExecutorTest, EntriesLeftBehindAreAbandoned) {
  FakeFetcher f;
  PlanExecutor::Options o;
  o.depth = 4;
  o.batch = 1;
  o.window = 8;
  o.threads = 1;
  PlanExecutor ex(f, o);
  std::vector<PlanEntry> plan;
  for (uint64_t i = 0; i < 40; i++) plan.push_back({i * 4096, 4096});
  Counter& abandoned = GetCounter("client.plan_abandoned");
  const uint64_t a0 = abandoned.Get(), p0 = PrefetchedNow();
  ASSERT_TRUE(ex.Submit(2, plan).ok());
  for (size_t i = 1; i < plan.size(); i++) {  // entry 0 never read
    ASSERT_TRUE(f.WaitFor([&] { return PrefetchedSince(p0) >= (i + 1) * 4096; })) << i;
    ASSERT_EQ(ex.OnRead(2, plan[i].offset, plan[i].length), Match::kHit) << i;
  }
  EXPECT_EQ(abandoned.Get() - a0, 1u);
}

TEST(PlanExecutorTest, FailedFetchLeavesEntriesToTheirReaders) {
  FakeFetcher f;
  f.SetFail(true);
  PlanExecutor::Options o;
  o.depth = 2;
  o.batch = 2;
  PlanExecutor ex(f, o);
  Counter& errors = GetCounter("client.plan_fetch_errors");
  const uint64_t e0 = errors.Get();
  ASSERT_TRUE(ex.Submit(8, {{0, 10}, {10, 10}}).ok());
  ASSERT_TRUE(f.WaitFor([&] { return errors.Get() > e0; }));  // counted once the entries are let go
  EXPECT_EQ(ex.OnRead(8, 0, 10), Match::kEarly);  // not cached: its reader reads it
}

// A fetcher that hands what it fetched to a (pretend) kernel page cache.
class HandingFetcher : public FakeFetcher {
 public:
  bool HandOff(uint64_t, std::span<const PlanEntry> entries, std::span<const PlanEntry> keep) override {
    std::unique_lock lk(mu_);
    waiting_ = blocked_;
    if (!cv_.wait_for(lk, 10s, [&] { return !blocked_; })) timed_out_ = true;
    waiting_ = false;
    for (const auto& e : keep) kept_.insert(e.offset);
    for (const auto& e : entries)
      if (!kept_.count(e.offset)) handed_.insert(e.offset);
    return true;
  }
  // HandOff waits (bounded) until Unblock, as a store into the kernel's
  // page cache waits for a page a read in flight holds locked.
  void BlockHandOffs() {
    std::lock_guard lk(mu_);
    blocked_ = true;
  }
  void Unblock() {
    std::lock_guard lk(mu_);
    blocked_ = false;
    cv_.notify_all();
  }
  bool HandOffWaiting() {
    std::lock_guard lk(mu_);
    return waiting_;
  }
  bool Handed(uint64_t offset) {
    std::lock_guard lk(mu_);
    return handed_.count(offset) != 0;
  }
  bool Kept(uint64_t offset) {
    std::lock_guard lk(mu_);
    return kept_.count(offset) != 0;
  }
  bool timed_out_ = false;  // a hand-off waited 10 s: the executor deadlocked

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool blocked_ = false, waiting_ = false;
  std::set<uint64_t> handed_, kept_;
};

TEST(PlanExecutorTest, HandedEntriesNeedNoReadsAndKeptOnesPaceTheFetching) {
  // The kernel serves handed entries: only reads of the entries kept back
  // (every 4th) reach the executor, and they alone move the fetching
  // through the whole plan, far past depth + budget.
  HandingFetcher f;
  PlanExecutor::Options o;
  o.depth = 16;
  o.batch = 4;
  o.threads = 1;
  o.keep_every = 4;
  o.max_bytes = 8 * 8192;  // 8 entries: handing off frees the budget
  PlanExecutor ex(f, o);
  auto plan = Shuffled(400, 8192, 5);
  Counter& handed = GetCounter("client.plan_handed");
  Counter& wasted = GetCounter("client.plan_wasted_bytes");
  Counter& abandoned = GetCounter("client.plan_abandoned");
  Counter& early = GetCounter("client.plan_early");
  const uint64_t h0 = handed.Get(), w0 = wasted.Get(), a0 = abandoned.Get(), e0 = early.Get();
  ASSERT_TRUE(ex.Submit(3, plan).ok());
  for (size_t k = 0; k < plan.size(); k++) {
    const uint64_t off = plan[k].offset;
    if (k % 4 == 3) {
      ASSERT_TRUE(f.WaitFor([&] { return f.Kept(off); })) << k;
      EXPECT_FALSE(f.Handed(off)) << k;
      ASSERT_EQ(ex.OnRead(3, off, 8192), Match::kHit) << k;
    } else {
      // The reader takes it from the kernel: nothing reaches the executor.
      ASSERT_TRUE(f.WaitFor([&] { return f.Handed(off); })) << k;
    }
  }
  EXPECT_EQ(f.FetchedCount(3), plan.size());
  EXPECT_TRUE(f.WaitFor([&] { return handed.Get() - h0 == 300; })) << handed.Get() - h0;
  EXPECT_EQ(wasted.Get() - w0, 0u);
  EXPECT_EQ(abandoned.Get() - a0, 0u);
  EXPECT_EQ(early.Get() - e0, 0u);
}

TEST(PlanExecutorTest, AHandedEntryReadAnywayIsAHit) {
  // The kernel evicted it (or a page of it was kept back with a neighbour):
  // its read reaches the client, which has its bytes.
  HandingFetcher f;
  PlanExecutor::Options o;
  o.depth = 8;
  o.batch = 8;
  o.threads = 1;
  o.keep_every = 4;
  PlanExecutor ex(f, o);
  auto plan = Shuffled(8, 8192, 6);
  Counter& handed = GetCounter("client.plan_handed");
  const uint64_t h0 = handed.Get();
  ASSERT_TRUE(ex.Submit(4, plan).ok());
  ASSERT_TRUE(f.WaitFor([&] { return handed.Get() - h0 == 6; }));
  EXPECT_EQ(ex.OnRead(4, plan[0].offset, 8192), Match::kHit);
  EXPECT_EQ(ex.OnRead(4, plan[3].offset, 8192), Match::kHit);  // kept back, fetched
}

TEST(PlanExecutorTest, AHandOffWaitingForAReadNeverHoldsUpTheFetchThatReadWaitsFor) {
  // The kernel: a read of entry 4 holds its page locked while it waits for
  // entry 4's fetch (late); the hand-off of entries 0-3 stores into that
  // page and waits for the read. The fetch of entries 4-7 must go on.
  HandingFetcher f;
  f.BlockHandOffs();
  PlanExecutor::Options o;
  o.depth = 8;
  o.batch = 4;
  o.threads = 1;
  o.keep_every = 4;
  f.SetGate(false);
  PlanExecutor ex(f, o);
  std::vector<PlanEntry> plan;
  for (uint64_t i = 0; i < 8; i++) plan.push_back({i * 4096, 4096});
  ASSERT_TRUE(ex.Submit(9, plan).ok());
  ASSERT_TRUE(f.WaitFor([&] { return f.InFlight() == 4; }));  // entries 0-3 being fetched
  std::atomic<int> match{-1};
  std::thread reader;
  f.SetGate(true);
  ASSERT_TRUE(f.WaitFor([&] { return f.HandOffWaiting(); }));  // 0-3 fetched, their hand-off stuck
  reader = std::thread([&] { match = int(ex.OnRead(9, 4 * 4096, 4096)); });
  EXPECT_TRUE(f.WaitFor([&] { return match >= 0; }));  // entry 4 fetched meanwhile
  f.Unblock();
  reader.join();
  EXPECT_TRUE(match == int(Match::kLate) || match == int(Match::kHit)) << match;
  EXPECT_FALSE(f.timed_out_);
}

TEST(PlanExecutorTest, BadPlansRefused) {
  FakeFetcher f;
  PlanExecutor ex(f, PlanExecutor::Options());
  EXPECT_EQ(ex.Submit(1, {}).code(), Code::kInvalidArgument);
  EXPECT_EQ(ex.Submit(1, {{0, 0}}).code(), Code::kInvalidArgument);
  EXPECT_EQ(ex.Submit(1, {{UINT64_MAX - 5, 10}}).code(), Code::kInvalidArgument);
  EXPECT_FALSE(ex.HasPlan(1));
}

}  // namespace
}  // namespace rustfs::client

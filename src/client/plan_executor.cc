#include "client/plan_executor.h"

#include <algorithm>

#include "common/log.h"

namespace rustfs::client {

PlanExecutor::PlanExecutor(PlanFetcher& fetcher, const Options& options)
    : fetcher_(fetcher),
      opt_(options),
      submitted_(GetCounter("client.plans_submitted")),
      hits_(GetCounter("client.plan_hits")),
      late_(GetCounter("client.plan_late")),
      early_(GetCounter("client.plan_early")),
      misses_(GetCounter("client.plan_misses")),
      dropped_(GetCounter("client.plans_dropped")),
      prefetched_bytes_(GetCounter("client.plan_prefetched_bytes")),
      wasted_bytes_(GetCounter("client.plan_wasted_bytes")),
      fetch_errors_(GetCounter("client.plan_fetch_errors")),
      abandoned_(GetCounter("client.plan_abandoned")),
      completed_(GetCounter("client.plans_completed")),
      handed_(GetCounter("client.plan_handed")) {
  for (int i = 0; i < std::max(1, opt_.threads); i++) threads_.emplace_back([this] { Worker(); });
  if (opt_.keep_every >= 2) handoff_thread_ = std::thread([this] { HandOffWorker(); });
}

PlanExecutor::~PlanExecutor() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
    for (auto& [ino, p] : plans_) End(*p);
    plans_.clear();
    CountPlans();
    jobs_.clear();
    handoffs_.clear();
  }
  jobs_cv_.notify_all();
  fetched_cv_.notify_all();
  handoffs_cv_.notify_all();
  for (auto& t : threads_) t.join();
  if (handoff_thread_.joinable()) handoff_thread_.join();
}

Status PlanExecutor::Submit(uint64_t ino, std::vector<PlanEntry> entries, uint32_t depth, bool automatic) {
  if (entries.empty()) return InvalidArgument("empty access plan");
  if (entries.size() > UINT32_MAX) return InvalidArgument("access plan of more than 2^32 entries");
  auto p = std::make_shared<Plan>();
  p->ino = ino;
  p->by_offset.reserve(entries.size());
  for (uint32_t i = 0; i < entries.size(); i++) {
    const PlanEntry& e = entries[i];
    if (e.length == 0 || e.offset + e.length < e.offset)
      return InvalidArgument("access plan entry " + std::to_string(i) + " (" + std::to_string(e.offset) +
                             "+" + std::to_string(e.length) + ")");
    p->by_offset.emplace_back(e.offset, i);
    p->max_length = std::max(p->max_length, e.length);
  }
  std::sort(p->by_offset.begin(), p->by_offset.end());
  p->entries = std::move(entries);
  p->state.assign(p->entries.size(), kIdle);
  p->depth = depth ? depth : opt_.depth;
  p->automatic = automatic;
  std::lock_guard lk(mu_);
  if (auto it = plans_.find(ino); it != plans_.end()) {
    if (automatic && !it->second->automatic) return {Code::kAlreadyExists, "the application's plan stays"};
    End(*it->second);  // the next epoch's replaces it
  }
  plans_[ino] = p;
  CountPlans();
  submitted_.Inc();
  Pump(p);
  return Status::Ok();
}

void PlanExecutor::End(Plan& p) {
  if (p.ended) return;
  p.ended = true;
  uint64_t wasted = 0;
  for (size_t i = p.head; i < p.next; i++)
    if (p.state[i] == kFetched || p.state[i] == kInFlight) wasted += p.entries[i].length;
  wasted_bytes_.Add(wasted);
  fetched_cv_.notify_all();  // late readers of it stop waiting
}

void PlanExecutor::Pump(const std::shared_ptr<Plan>& p) {
  // At most as many fetches of one plan in flight as there are threads: a
  // plan's fetches are in its order, and more would only queue. Fetches go
  // in whole batches (but at the plan's end): the readers' progress arrives
  // in small steps (a few reads at a time; with a hand-off, only through the
  // kept entries), and a fetch per step costs a BatchRead on every DSS for
  // a few entries; waiting for a batch's room still keeps depth - batch
  // entries fetched ahead. (A planned epoch: 44 K BatchReads with a fetch
  // per step, 28 K in whole batches, for the same bytes; daemon CPU -35 %.)
  const size_t whole = std::min<size_t>(opt_.batch, std::max<size_t>(p->depth / 2, 1));
  while (!p->ended && p->fetches < uint32_t(threads_.size()) && p->ahead_bytes < opt_.max_bytes) {
    const size_t limit = std::min(p->entries.size(), p->reached + p->depth);
    if (p->next >= limit || (limit - p->next < whole && limit < p->entries.size())) break;
    Job job{p, {}};
    while (p->next < limit && job.indexes.size() < opt_.batch && p->ahead_bytes < opt_.max_bytes) {
      const size_t i = p->next++;
      if (p->state[i] != kIdle) continue;  // read before its turn came
      p->state[i] = kInFlight;
      p->ahead_bytes += p->entries[i].length;
      job.indexes.push_back(uint32_t(i));
    }
    if (job.indexes.empty()) continue;
    p->fetches++;
    jobs_.push_back(std::move(job));
    jobs_cv_.notify_one();
  }
}

void PlanExecutor::Worker() {
  std::vector<PlanEntry> batch;
  for (;;) {
    Job job;
    {
      std::unique_lock lk(mu_);
      jobs_cv_.wait(lk, [&] { return stop_ || !jobs_.empty(); });
      if (stop_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      if (job.plan->ended) {
        job.plan->fetches--;
        continue;
      }
      batch.clear();
      for (uint32_t i : job.indexes) batch.push_back(job.plan->entries[i]);
    }
    Status s = fetcher_.Fetch(job.plan->ino, batch);
    std::lock_guard lk(mu_);
    Plan& p = *job.plan;
    p.fetches--;
    if (!s.ok()) {
      fetch_errors_.Inc();
      LOG_WARN("access plan of inode {}: fetch of {} entries failed: {}", p.ino, batch.size(), s.ToString());
    }
    uint64_t bytes = 0;
    for (uint32_t i : job.indexes) {
      if (p.state[i] != kInFlight) continue;  // read meanwhile (the reader waited, or not)
      // A failed fetch leaves the entry to its reader, which reads it itself.
      p.state[i] = s.ok() ? kFetched : kIdle;
      bytes += p.entries[i].length;
      if (!s.ok()) {
        p.ahead_bytes -= p.entries[i].length;
      }
    }
    if (s.ok()) prefetched_bytes_.Add(bytes);
    fetched_cv_.notify_all();
    if (p.ended) continue;
    Pump(job.plan);
    if (s.ok() && handoff_thread_.joinable()) {
      handoffs_.push_back(std::move(job));
      handoffs_cv_.notify_one();
    }
  }
}

void PlanExecutor::HandOffWorker() {
  for (;;) {
    Job job;
    {
      std::unique_lock lk(mu_);
      handoffs_cv_.wait(lk, [&] { return stop_ || !handoffs_.empty(); });
      if (stop_) return;
      job = std::move(handoffs_.front());
      handoffs_.pop_front();
    }
    HandOff(job);
  }
}

void PlanExecutor::HandOff(const Job& job) {
  auto kept = [&](uint32_t i) { return i % opt_.keep_every == opt_.keep_every - 1; };
  std::vector<PlanEntry> entries, keep;
  {
    std::lock_guard lk(mu_);
    const Plan& p = *job.plan;
    if (p.ended) return;
    for (uint32_t i : job.indexes) {
      entries.push_back(p.entries[i]);
      if (kept(i)) keep.push_back(p.entries[i]);
    }
  }
  if (!fetcher_.HandOff(job.plan->ino, entries, keep)) return;
  std::lock_guard lk(mu_);
  Plan& p = *job.plan;
  for (uint32_t i : job.indexes) {
    if (kept(i) || p.state[i] != kFetched) continue;  // read meanwhile
    Release(p, i);
    p.state[i] = kHanded;
    handed_.Inc();
  }
  if (!p.ended) Pump(job.plan);  // the budget it held is free
}

bool PlanExecutor::Reads(uint64_t offset, uint64_t end, uint64_t start, uint64_t stop) const {
  if (start >= offset && stop <= end) return true;  // covers it (the kernel reads whole pages)
  if (offset >= start && end <= stop) return true;  // a piece of it
  // Overlapping at one edge: a kernel read of whole pages reaches into the
  // neighbours' pages it shares with the record it is for, and starts past
  // a record's first pages when they are cached already. Only the first
  // touches the entry in nothing but its edge page.
  const uint64_t page = std::max<uint64_t>(opt_.page, 1);
  if (offset < start) return (end - 1) / page != start / page;  // reaches into its head
  return offset / page != (stop - 1) / page;                     // runs on past its tail
}

void PlanExecutor::Find(const Plan& p, uint64_t offset, uint64_t length, std::vector<size_t>& unread,
                        bool& overlaps_read) const {
  const uint64_t end = offset + std::max<uint64_t>(length, 1);
  const size_t limit = p.head + Window(p);
  size_t edge = SIZE_MAX;  // the entry earliest in the plan (read or not) the read only touches at an edge
  // Entries starting before the read's end, nearest first, back as far as
  // the longest entry reaches.
  auto it = std::lower_bound(p.by_offset.begin(), p.by_offset.end(), std::make_pair(end, uint32_t(0)));
  while (it != p.by_offset.begin()) {
    --it;
    const auto [start, i] = *it;
    if (start + p.max_length <= offset) break;
    const uint64_t stop = start + p.entries[i].length;
    if (stop <= offset) continue;  // ends before the read
    const bool unread_in_window = p.state[i] != kRead && i >= p.head && i < limit;
    if (!Reads(offset, end, start, stop)) {
      if (unread_in_window || p.state[i] == kRead) edge = std::min(edge, size_t(i));
    } else if (p.state[i] == kRead) {
      overlaps_read = true;
    } else if (unread_in_window) {
      unread.push_back(i);
    }
  }
  // A single page shared by the tail of one record and the head of the
  // next (the rest of the first cached, or the kernel reading a record's
  // last page in a request of its own): it is for the one due first, read
  // already or not. (Taking it for the other would count a read far ahead
  // of the fetching, and move the fetching there.)
  if (unread.empty() && !overlaps_read && edge != SIZE_MAX) {
    if (p.state[edge] == kRead) {
      overlaps_read = true;
    } else {
      unread.push_back(edge);
    }
  }
}

size_t PlanExecutor::Window(const Plan& p) const {
  return opt_.window ? opt_.window : std::max<size_t>(4 * size_t(p.depth), 1024);
}

void PlanExecutor::Release(Plan& p, size_t i) {
  if (p.state[i] == kFetched || p.state[i] == kInFlight) {
    p.ahead_bytes -= p.entries[i].length;
  }
}

void PlanExecutor::Abandon(Plan& p, size_t i) {
  if (p.state[i] == kFetched || p.state[i] == kInFlight) wasted_bytes_.Add(p.entries[i].length);
  Release(p, i);
  abandoned_.Inc();
  p.state[i] = kRead;
}

void PlanExecutor::Consume(Plan& p, size_t i) {
  if (p.state[i] == kRead) return;
  Release(p, i);
  p.state[i] = kRead;
  p.reached = std::max(p.reached, i + 1);
  // Entries the readers left behind (a sample skipped, a read that never
  // came) would hold the window and the fetch budget forever: once the
  // readers are half a window past one, it is given up.
  const size_t slack = Window(p) / 2;
  // Handed entries the readers have passed were read from the kernel.
  auto passed = [&](size_t i) {
    return p.state[i] == kRead || (p.state[i] == kHanded && i < p.reached) || i + slack < p.reached;
  };
  while (p.head < p.entries.size() && passed(p.head)) {
    if (p.state[p.head] == kHanded) p.state[p.head] = kRead;
    if (p.state[p.head] != kRead) Abandon(p, p.head);
    p.head++;
  }
  // The readers passed entries whose fetch was never issued: fetch from
  // where they are.
  p.next = std::max(p.next, p.head);
}

PlanExecutor::Match PlanExecutor::OnRead(uint64_t ino, uint64_t offset, uint64_t length) {
  // Every read of every file comes here: without any plan, not even the lock.
  if (plan_count_.load(std::memory_order_acquire) == 0) return Match::kNoPlan;
  std::unique_lock lk(mu_);
  auto it = plans_.find(ino);
  if (it == plans_.end()) return Match::kNoPlan;
  std::shared_ptr<Plan> p = it->second;
  // Every unread entry the read touches is read by it: a read may be a
  // piece of an entry (a record read in parts), or cover several (the
  // kernel reads whole pages).
  std::vector<size_t> hit;
  bool overlaps_read = false;
  Find(*p, offset, length, hit, overlaps_read);
  if (hit.empty()) {
    if (overlaps_read) {  // the rest of an entry already read
      hits_.Inc();
      return Match::kHit;
    }
    misses_.Inc();
    if (++p->misses_in_a_row >= opt_.max_misses) {
      LOG_INFO("access plan of inode {} dropped: {} reads in a row outside it", ino, p->misses_in_a_row);
      dropped_.Inc();
      End(*p);
      plans_.erase(it);
      CountPlans();
    }
    return Match::kMiss;
  }
  p->misses_in_a_row = 0;
  auto any = [&](State s) {
    return std::any_of(hit.begin(), hit.end(), [&](size_t i) { return p->state[i] == s; });
  };
  Match m;
  if (any(kInFlight)) {
    m = Match::kLate;
    late_.Inc();
    // Reading them now would fetch them twice: wait for the fetch in flight.
    fetched_cv_.wait(lk, [&] { return p->ended || !any(kInFlight); });
  } else if (any(kIdle)) {
    m = Match::kEarly;  // the readers are ahead of the fetching
    early_.Inc();
  } else {
    m = Match::kHit;
    hits_.Inc();
  }
  if (!p->ended) {
    for (size_t i : hit) Consume(*p, i);
    if (p->head == p->entries.size()) {  // read to the end: nothing more to do
      completed_.Inc();
      End(*p);
      if (auto cur = plans_.find(ino); cur != plans_.end() && cur->second == p) plans_.erase(cur);
      CountPlans();
    } else {
      Pump(p);
    }
  }
  return m;
}

void PlanExecutor::Cancel(uint64_t ino) {
  std::lock_guard lk(mu_);
  auto it = plans_.find(ino);
  if (it == plans_.end()) return;
  End(*it->second);
  plans_.erase(it);
  CountPlans();
}

void PlanExecutor::CountPlans() { plan_count_.store(plans_.size(), std::memory_order_release); }

bool PlanExecutor::HasPlan(uint64_t ino) const {
  std::lock_guard lk(mu_);
  return plans_.count(ino) != 0;
}

}  // namespace rustfs::client

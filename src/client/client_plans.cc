// Client: access plans (LLD-002 §4, DESIGN.md §8). The executor
// (plan_executor.h) decides what to fetch and when; this file fetches it:
// the entries of one fetch become page-aligned ranges read with one
// EcReader call (one BatchRead per DSS for all of them) and kept in the
// fragment cache's stream tier, where the readers find them; on a FUSE
// mount they are then copied into the kernel's page cache (hand-off), where
// the readers find them without a FUSE request.
#include <algorithm>
#include <cstring>

#include "client/client.h"
#include "common/uninit.h"
#include "layout/coalesce.h"

namespace rustfs::client {
namespace {

constexpr uint64_t kPage = FragmentCache::kPage;

// The whole pages holding the bytes of e that lie in a file of `size`
// bytes, [start, end): the fragment cache and the kernel both keep pages.
std::pair<uint64_t, uint64_t> PagesOf(const PlanEntry& e, uint64_t size) {
  const uint64_t end = std::min(e.offset + e.length, size);
  return {e.offset / kPage * kPage, (end + kPage - 1) / kPage * kPage};
}

}  // namespace

class Client::PlanFetch final : public PlanFetcher {
 public:
  explicit PlanFetch(Client& c) : c_(c) {}
  Status Fetch(uint64_t ino, std::span<const PlanEntry> entries) override {
    return c_.FetchPlanned(ino, entries);
  }
  bool HandOff(uint64_t ino, std::span<const PlanEntry> entries, std::span<const PlanEntry> keep) override {
    return c_.HandOffPlanned(ino, entries, keep);
  }

 private:
  Client& c_;
};

uint64_t Client::PrefetchBudget() const {
  return cfg_.access_plan.max_prefetch_bytes
             ? cfg_.access_plan.max_prefetch_bytes
             : uint64_t(double(cfg_.fragment_cache.capacity) * FragmentCache::kStreamShare);
}

void Client::StartPlans() {
  if (!cfg_.access_plan.enabled || !fcache_) return;  // nothing to fetch into
  PlanExecutor::Options o;
  o.depth = cfg_.access_plan.default_prefetch_depth;
  o.max_bytes = PrefetchBudget();
  if (!cfg_.access_plan.kernel_handoff) o.keep_every = 0;  // no hand-off (nor its thread)
  plan_fetch_ = std::make_unique<PlanFetch>(*this);
  plans_ = std::make_unique<PlanExecutor>(*plan_fetch_, o);
}

Status Client::SubmitPlan(uint64_t ino, std::vector<PlanEntry> entries, uint32_t depth) {
  if (!plans_)
    return {Code::kNotSupported, cfg_.access_plan.enabled
                                     ? "access plans need the fragment cache (fragment_cache.enabled)"
                                     : "access plans are off (access_plan.enabled = false)"};
  if (!FindOpen(ino)) return NotFound("inode " + std::to_string(ino) + " is not open here");
  return plans_->Submit(ino, std::move(entries), depth);
}

Status Client::FetchPlanned(uint64_t ino, std::span<const PlanEntry> entries) {
  static Counter& fetched = GetCounter("client.plan_bytes_fetched");
  auto st = FindOpen(ino);
  if (!st) return NotFound("inode " + std::to_string(ino) + " is no longer open");
  uint64_t lo = UINT64_MAX, hi = 0;  // the span of the entries
  for (const PlanEntry& e : entries) {
    lo = std::min(lo, e.offset);
    hi = std::max(hi, e.offset + e.length);
  }
  RUSTFS_RETURN_IF_ERROR(MapForBackground(*st, lo, hi - lo));
  std::shared_lock lk(st->mu);
  // A file being written or just revoked is left to its readers: prefetch
  // must never cache stale bytes.
  if (!MapFresh(*st, lo, hi - lo)) return Unavailable("inode " + std::to_string(ino) + " is changing");
  const uint64_t size = st->attr.size();
  std::vector<layout::RangeRead> ranges;  // page-aligned
  for (const PlanEntry& e : entries) {
    const auto [start, end] = PagesOf(e, size);
    if (start >= end) continue;  // past the end of file
    if (fcache_->Contains({ino}, start, end - start)) continue;
    ranges.push_back({start, end - start, ranges.size()});
  }
  if (ranges.empty()) return Status::Ok();
  // Entries sharing pages (neighbouring records) are fetched once.
  const std::vector<layout::CoalescedRead> merged = layout::CoalesceReads(std::move(ranges), 0);
  std::vector<std::string> bufs(merged.size());
  std::vector<ReadExtent> extents;
  for (size_t i = 0; i < merged.size(); i++) {
    const uint64_t start = merged[i].offset;
    ResizeUninitialized(bufs[i], merged[i].length);
    AppendExtents(*st, start, merged[i].length, bufs[i].data(), extents);
  }
  const uint64_t seq = revoke_seq_.load();
  if (!extents.empty()) RUSTFS_RETURN_IF_ERROR(reader_->Read(extents));
  if (revoke_seq_.load() != seq) return Unavailable("revoked while fetching");
  for (size_t i = 0; i < merged.size(); i++) {
    fcache_->Insert({ino}, merged[i].offset, bufs[i], FragmentCache::Tier::kStream);
    fetched.Add(bufs[i].size());
  }
  return Status::Ok();
}

bool Client::HandOffPlanned(uint64_t ino, std::span<const PlanEntry> entries, std::span<const PlanEntry> keep) {
  static Counter& stored = GetCounter("client.plan_kernel_bytes");
  if (!kernel_store_hook_) return false;  // the native client: no kernel cache to fill
  auto st = FindOpen(ino);
  if (!st) return false;
  // Held while storing: no writer of this client starts meanwhile, and a
  // revocation (another client's change) waits for it before it drops the
  // kernel's copy, so the kernel never keeps bytes older than a change.
  std::lock_guard hl(st->handoff_mu);
  if (st->writers > 0) return false;
  uint64_t size;
  {
    std::shared_lock lk(st->mu);
    if (st->map_stale || !st->dirty.empty()) return false;
    size = st->attr.size();
  }
  // Whole pages only (the kernel takes a page as read only when all of it
  // is stored, or it ends the file), never past the end of file (a store
  // there would grow the kernel's idea of the size), none of a kept entry's.
  auto pages = [&](const PlanEntry& e) {
    const auto [start, end] = PagesOf(e, size);
    return std::pair{start, std::min(end, size)};
  };
  IntervalSet want, kept;
  for (const PlanEntry& e : keep) {
    auto [a, b] = pages(e);
    if (a < b) kept.Add(a, b);
  }
  for (const PlanEntry& e : entries) {
    auto [a, b] = pages(e);
    if (a < b) want.Add(a, b);
  }
  bool all = true;
  std::string buf;
  auto store = [&](uint64_t a, uint64_t b) {
    ResizeUninitialized(buf, b - a);  // the cache fills it, or it is not used
    // Evicted or dropped (a revocation) since the fetch: left to the readers.
    if (!fcache_->Read({ino}, a, b - a, buf.data(), FragmentCache::Tier::kStream).empty()) {
      all = false;
      return;
    }
    if (kernel_store_hook_(ino, a, buf)) {
      stored.Add(buf.size());
    } else {
      all = false;
    }
  };
  for (auto [a, b] : want.intervals()) {
    uint64_t pos = a;
    for (auto [ka, kb] : kept.intervals()) {
      if (kb <= pos) continue;
      if (ka >= b) break;
      if (ka > pos) store(pos, ka);
      pos = std::max(pos, kb);
    }
    if (pos < b) store(pos, b);
  }
  return all;
}

}  // namespace rustfs::client

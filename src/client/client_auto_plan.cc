// Client: what each read tells the prefetching (LLD-002 §1.2, §4.4).
//
// Every read feeds its handle's AccessDetector (sequential read-ahead,
// hints). With access_plan.auto_detect on, and no plan given for the file,
// two heuristics add what the application did not say:
//   - strides: a handle reading records of one size a fixed distance apart
//     (StrideDetector) gets the next records prefetched;
//   - record indexes: a file read from offset 0 that looks like a record
//     index (record_index.h) is read whole in the background and kept; a
//     later read of a file of exactly the size the index describes, at a
//     listed record, makes the index that file's plan, its records fetched
//     in index order within the plan byte budget, each read consuming its
//     record (whatever the order), the plan ending when all are read (the
//     next epoch's first read starts it again).
// Counters: client.auto_stride_prefetches, client.auto_index_files,
// client.auto_index_plans.
#include <algorithm>

#include "client/client.h"
#include "common/log.h"

namespace rustfs::client {

void Client::NoteRead(OpenFile& f, FileState& st, uint64_t offset, uint64_t n, uint64_t size, bool planned) {
  static Counter& strides = GetCounter("client.auto_stride_prefetches");
  static Counter& index_plans = GetCounter("client.auto_index_plans");
  f.detector.SetPlanActive(planned);  // a plan fetches for this file: no read-ahead besides
  Observe(f, st, f.detector.OnRead(offset, n, size));
  if (!cfg_.access_plan.auto_detect || planned || !fcache_) return;
  for (const ByteRange& r : f.stride.OnRead(offset, n, size)) {
    strides.Inc();
    Prefetch(f.state, r.offset, r.length);
  }
  if (!plans_) return;
  if (auto idx = indexes_.Match(st.ino, size, offset, n)) {
    std::vector<PlanEntry> entries = idx->entries;
    const auto depth = uint32_t(std::min<size_t>(entries.size(), UINT32_MAX));
    // Unordered reads of every record: all of them are ahead of the reader,
    // fetched in index order as far as the byte budget lets.
    if (plans_->Submit(st.ino, std::move(entries), depth, /*automatic=*/true).ok()) index_plans.Inc();
  }
}

void Client::MaybeIndex(const std::shared_ptr<FileState>& st, uint64_t offset, const char* buf, uint64_t n) {
  if (offset != 0 || !cfg_.access_plan.auto_detect || !plans_) return;
  const uint64_t size = st->attr.size();
  if (size > kMaxIndexFileBytes || !LooksLikeRecordIndex({buf, std::min<uint64_t>(n, 4096)})) return;
  Background([this, st] { LoadIndex(*st); });
}

void Client::LoadIndex(FileState& st) {
  static Counter& files = GetCounter("client.auto_index_files");
  std::shared_lock<ReadMostlyMutex> rl;
  std::unique_lock<ReadMostlyMutex> wl;
  // The whole file (whatever it is, it is small: kMaxIndexFileBytes).
  if (!LockForRead(st, 0, std::max<uint64_t>(st.attr.size(), 1), rl, wl, LockWait::kMayBlock).ok()) return;
  const uint64_t size = st.attr.size();
  if (size > kMaxIndexFileBytes) return;
  std::string bytes(size, '\0');
  if (Status s = ReadThroughCache(st, 0, size, bytes.data(), FragmentCache::Tier::kStream); !s.ok()) return;
  auto entries = ParseRecordIndex(bytes);
  if (!entries) return;  // looked like one, is not: nothing to say about it
  LOG_INFO("inode {}: a record index of {} records; reads of the file it describes will be planned", st.ino,
           entries->size());
  files.Inc();
  indexes_.Add(st.ino, std::move(*entries));
}

}  // namespace rustfs::client

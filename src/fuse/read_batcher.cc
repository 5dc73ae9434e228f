#include "fuse/read_batcher.h"

#include <algorithm>
#include <memory>

#include "common/log.h"
#include "common/metrics.h"

namespace rustfs::fuse {

ReadBatcher::ReadBatcher(client::Client& client, unsigned max_leaders, size_t max_batch)
    : client_(client), max_leaders_(std::max(1u, max_leaders)), max_batch_(std::max<size_t>(1, max_batch)) {}

ReadBatcher::~ReadBatcher() {
  // Leaders are FUSE workers: the session loop has ended before this runs,
  // so none is still serving.
  std::lock_guard lk(mu_);
  if (!queue_.empty()) LOG_ERROR("read batcher destroyed with {} reads unanswered", queue_.size());
}

namespace {
thread_local int t_defer_leading = 0;
}  // namespace

ReadBatcher::DeferLeading::DeferLeading() { ++t_defer_leading; }
ReadBatcher::DeferLeading::~DeferLeading() { --t_defer_leading; }

void ReadBatcher::Submit(fuse_req_t req, client::OpenFile* file, uint64_t offset, size_t size) {
  std::unique_lock lk(mu_);
  queue_.push_back({req, file, offset, size});
  if (t_defer_leading == 0) LeadLocked(lk, client::Client::LockWait::kMayBlock);
}

void ReadBatcher::Lead() {
  std::unique_lock lk(mu_);
  LeadLocked(lk, client::Client::LockWait::kMayBlock);
}

void ReadBatcher::LeadWhileWaiting() {
  std::unique_lock lk(mu_);
  LeadLocked(lk, client::Client::LockWait::kNoLockWait);
}

void ReadBatcher::LeadLocked(std::unique_lock<std::mutex>& lk, client::Client::LockWait wait) {
  static Counter& batches = GetCounter("fuse.read_batches");
  static Counter& reads = GetCounter("fuse.batched_reads");
  static Counter& nested = GetCounter("fuse.reads_served_while_waiting");
  if (leaders_ >= max_leaders_) return;  // a leader takes it with its next batch
  // This worker leads: it serves what is queued (its own read and any that
  // arrived meanwhile) until the queue is empty, then goes back to the
  // kernel. No other thread is woken to serve a read.
  ++leaders_;
  std::vector<Item> batch, blocked;
  while (!queue_.empty()) {
    const size_t n = std::min(max_batch_, queue_.size());
    batch.assign(queue_.begin(), queue_.begin() + ptrdiff_t(n));
    queue_.erase(queue_.begin(), queue_.begin() + ptrdiff_t(n));
    lk.unlock();
    batches.Inc();
    reads.Add(batch.size());
    const size_t was_blocked = blocked.size();
    Serve(batch, wait, blocked);
    if (wait == client::Client::LockWait::kNoLockWait) nested.Add(batch.size() - (blocked.size() - was_blocked));
    if (after_batch_) after_batch_();
    lk.lock();
  }
  // Back at the head, for a leader that may block (this thread's own, once
  // its batch is done), not for this loop to take again.
  queue_.insert(queue_.begin(), blocked.begin(), blocked.end());
  --leaders_;
}

void ReadBatcher::Serve(std::vector<Item>& batch, client::Client::LockWait wait, std::vector<Item>& blocked) {
  // All in one ReadFiles, whichever files they read: one BatchRead per DSS
  // for the whole batch (one round trip per file, served one after
  // another, held 1,024-file random reads to a sixth of one file's rate).
  std::vector<std::unique_ptr<char[]>> bufs;
  std::vector<client::Client::ReadReq> reqs;
  bufs.reserve(batch.size());
  reqs.reserve(batch.size());
  for (const Item& it : batch) {
    bufs.emplace_back(new char[it.size]);
    reqs.push_back({it.offset, it.size, bufs.back().get(), 0, {}, it.file});
  }
  (void)client_.ReadFiles(reqs, wait);  // each request carries its own status
  for (size_t k = 0; k < reqs.size(); k++) {
    const Item& it = batch[k];
    if (reqs[k].status.code() == Code::kWouldBlock && wait == client::Client::LockWait::kNoLockWait) {
      blocked.push_back(it);
    } else if (!reqs[k].status.ok()) {
      LOG_WARN("read at {}+{} failed: {}", it.offset, it.size, reqs[k].status.ToString());
      fuse_reply_err(it.req, reqs[k].status.ToErrno());
    } else {
      fuse_reply_buf(it.req, reqs[k].buf, reqs[k].bytes);
    }
  }
}

}  // namespace rustfs::fuse

// Batched FUSE reads (LLD-002 §5.2 through the kernel interface): a FUSE
// worker that receives a read queues it; if fewer than `max_leaders`
// workers are serving reads, it becomes one: it takes everything queued so
// far, serves it with one Client::ReadFiles (whose cache misses, of every
// file in the batch, reach each DSS as one BatchRead), replies, and goes on
// while reads keep arriving. Under load, N queued reads cost one round trip per DSS; at
// queue depth 1 a read is served by the worker that received it, and no
// thread is woken to hand it over (a wake-up costs as much as the read's
// own CPU here).
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse3/fuse_lowlevel.h>

#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "client/client.h"
#include "fuse/fuse_ops.h"

namespace rustfs::fuse {

class ReadBatcher {
 public:
  // `client` must outlive the batcher. max_leaders: workers serving reads
  // at once (each blocks for one batch's round trip); max_batch: reads per
  // batch at most. A leader serves what exceeds it one round trip later,
  // so the default takes all the kernel can have in flight in one batch
  // (cold FUSE QD32 x 4, alternated: 64 gave 70-71 K reads/s, 128 and 256
  // 75-80 K: the rings hold 2 x 128 reads, and a 64-read cap split them).
  ReadBatcher(client::Client& client, unsigned max_leaders = 4, size_t max_batch = kMaxBackground);
  // After the FUSE session loop has ended (no worker is leading).
  ~ReadBatcher();

  // Takes over `req`: it is answered (fuse_reply_buf / fuse_reply_err) by
  // this worker or by another that is leading. `file` must stay open until
  // then (the kernel holds the file while its read is outstanding, so
  // RELEASE cannot come first).
  void Submit(fuse_req_t req, client::OpenFile* file, uint64_t offset, size_t size);

  // While one lives on a thread, Submit on that thread only queues; Lead
  // then serves what is queued. A FUSE-over-io_uring queue thread receives
  // many reads at once: it queues them all and serves them as one batch.
  class DeferLeading {
   public:
    DeferLeading();
    ~DeferLeading();
    DeferLeading(const DeferLeading&) = delete;
    DeferLeading& operator=(const DeferLeading&) = delete;
  };
  // Serves the queue until it is empty, unless `max_leaders` workers
  // already serve it (they take what is queued before they stop).
  void Lead();
  // Lead, by a thread that is itself leading and waits for its batch's
  // replies (a FUSE ring thread's wait hook, net/wait_hook.h): reads that
  // would wait for a file lock (Client::LockWait::kNoLockWait) go back to
  // the queue, which that thread's own Lead serves after its batch.
  void LeadWhileWaiting();

  // Called on the leading thread after each batch's replies (a transport
  // that holds replies back to send them together sends them then). Set
  // before the session loop.
  void SetAfterBatch(void (*f)()) { after_batch_ = f; }

 private:
  struct Item {
    fuse_req_t req;
    client::OpenFile* file;
    uint64_t offset;
    size_t size;
  };
  // Replies to the batch's reads, but for those that would block (only
  // with kNoLockWait), which it appends to `blocked`.
  void Serve(std::vector<Item>& batch, client::Client::LockWait wait, std::vector<Item>& blocked);
  // Called with `lk` held; returns with it held.
  void LeadLocked(std::unique_lock<std::mutex>& lk, client::Client::LockWait wait);

  client::Client& client_;
  const unsigned max_leaders_;
  const size_t max_batch_;
  std::mutex mu_;
  std::deque<Item> queue_;  // guarded by mu_
  unsigned leaders_ = 0;    // guarded by mu_
  void (*after_batch_)() = nullptr;
};

}  // namespace rustfs::fuse

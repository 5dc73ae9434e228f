// Asynchronous FUSE reads (LLD-002 §5.2 through the kernel interface): the
// FUSE worker that received a read hands it here and goes straight back to
// /dev/fuse; dispatcher threads take every read queued so far, serve each
// open file's share with one Client::ReadMany (whose cache misses reach each
// DSS as one BatchRead) and reply from there. Under load, N queued reads
// cost one round trip per DSS and a handful of thread wake-ups instead of
// N blocked workers each waiting out its own round trip.
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse3/fuse_lowlevel.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "client/client.h"

namespace rustfs::fuse {

class ReadBatcher {
 public:
  // `client` must outlive the batcher. dispatchers: threads serving
  // batches (each blocks for one batch's round trip); max_batch: reads per
  // ReadMany at most.
  ReadBatcher(client::Client& client, unsigned dispatchers = 4, size_t max_batch = 64);
  // Serves what is queued, then stops the dispatchers.
  ~ReadBatcher();

  // Takes over `req`: it is answered (fuse_reply_buf / fuse_reply_err) by a
  // dispatcher. `file` must stay open until then (the kernel holds the file
  // while its read is outstanding, so RELEASE cannot come first).
  void Submit(fuse_req_t req, client::OpenFile* file, uint64_t offset, size_t size);

 private:
  struct Item {
    fuse_req_t req;
    client::OpenFile* file;
    uint64_t offset;
    size_t size;
  };
  void Loop();
  void Serve(std::vector<Item>& batch);

  client::Client& client_;
  const size_t max_batch_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace rustfs::fuse

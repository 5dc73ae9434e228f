// FUSE over io_uring (kernel 6.14+, FUSE protocol 7.42) beneath libfuse
// 3.14, which predates it. The kernel hands requests to per-CPU rings of
// buffers the daemon registered, instead of one read(2) of /dev/fuse per
// request and one write(2) per reply: a queue thread wakes once for all the
// requests that arrived meanwhile and answers many in one io_uring_enter.
//
// How it sits under libfuse: the channel is the session's custom I/O
// (fuse_session_custom_io). Its read passes /dev/fuse through, noting
// whether the kernel's INIT offers FUSE_OVER_IO_URING; its writev adds the
// flag to libfuse's INIT reply, then starts one queue per possible CPU.
// Each ring request is rebuilt as the /dev/fuse message it would have been
// (header, per-op header, payload: contiguous, the payload not copied) and
// given to fuse_session_process_buf; the reply libfuse writes comes back
// through writev, where its `unique` finds the ring entry to commit. What
// the kernel still sends through /dev/fuse (INIT, FORGET, INTERRUPT, and
// everything until all queues are registered) and notifications (unique 0)
// take the ordinary path.
//
// Reads are queued on the queue thread and served as one batch by it
// (ReadBatcher::DeferLeading); other requests go to worker threads, as
// they may block (lock waits, writes waiting for a hand-off that waits for
// pages a queued read holds: a queue thread must never wait on those).
//
// Protocol: include/uapi/linux/fuse.h (7.42) and
// Documentation/filesystems/fuse/fuse-io-uring.rst in the kernel.
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse3/fuse_lowlevel.h>

#include <memory>

#include "common/status.h"

namespace rustfs::fuse {

class ReadBatcher;

class UringChannel {
 public:
  struct Options {
    unsigned queue_depth = 32;  // ring entries (requests in flight) per CPU queue
    unsigned workers = 16;      // threads serving requests other than reads
  };

  // Makes the channel `se`'s I/O (after fuse_session_mount: it uses the
  // session's /dev/fuse fd). `batcher` (may be null: reads go to workers)
  // must outlive the channel. One channel per process.
  static Result<std::unique_ptr<UringChannel>> Install(fuse_session* se, Options opts,
                                                       ReadBatcher* batcher);
  // Stops the queue threads and workers (waiting for requests being
  // served) and frees the rings. After the session loop has returned; the
  // session's later writes (notifications) take the ordinary path.
  ~UringChannel();

  UringChannel(const UringChannel&) = delete;
  UringChannel& operator=(const UringChannel&) = delete;

  struct Impl;

 private:
  explicit UringChannel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rustfs::fuse

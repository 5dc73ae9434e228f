// The DSS's random-read I/O path (LLD-002 §5.1): one io_uring per disk with a
// high queue depth and batched submission, so many small reads are in flight
// at once instead of one blocked thread each.
//
// Threading: one ring, SQEs are prepared and submitted under a mutex (a
// caller's whole wave goes in with one io_uring_submit). Completions are
// reaped by the callers themselves: one waiting caller at a time waits on
// the ring (polls it, for IOPOLL) and hands every CQE to the batch that owns
// it; the others sleep until theirs arrive or the reaper leaves. LLD-002
// §5.1 has a dedicated poller thread instead; here, a caller alone on the
// engine then paid two thread wake-ups per batch (poller, then caller) that
// it now does not, and on this machine wake-ups, not bytes, are the cost of a
// read (TARGETS.md). Callers copy bounce buffers into their own memory
// themselves, so a reaper only moves completions.
//
// Alignment (LLD-002 §2.3): callers pass exact byte ranges. With
// Options::direct the engine reads the 4 KiB-aligned superset of each range
// into an aligned bounce buffer and copies out the requested bytes, so O_DIRECT
// fds need no care from the caller (buffered fds work too, at the cost of the
// over-read). A range whose offset, length and destination are all aligned is
// read straight into the destination.
//
// IOPOLL (DESIGN.md §5): requested with Options::io_poll, probed at Create by
// really reading an O_DIRECT temp file in Options::probe_dir, and replaced by
// an interrupt-driven ring (logged, counter "dss.io_poll_active") when the
// device cannot poll, as this machine's virtio disk cannot.
//
// A lone read (a batch of one op) while few reads are in flight is read with
// pread(2) on the calling thread instead: the ring would have the caller poll
// for that one completion (ReapUntil), which is no faster than sleeping in
// pread until the disk interrupt, and takes CPU from the threads that would
// otherwise run meanwhile (ReadBatch says what it measured).
//
// Counters: "dss.uring_submits" (io_uring_submit calls), "dss.uring_ops"
// (SQEs the kernel accepted, retries of short reads included),
// "dss.sync_reads" (lone reads done with pread), "dss.io_poll_active" (live
// engines whose ring is polled).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/metrics.h"
#include "common/spin_policy.h"
#include "common/status.h"

struct io_uring;  // <liburing.h>, kept out of this header

namespace rustfs::dss {

// One read: [offset, offset + length) of fd into dst.
struct ReadOp {
  int fd = -1;          // borrowed; must stay open until ReadBatch returns
  uint64_t offset = 0;  // bytes into the file; any alignment
  uint64_t length = 0;  // bytes; any alignment, at most RandomReadEngine::kMaxOpBytes
  char* dst = nullptr;  // caller-owned, `length` bytes, any alignment
  // Out: bytes of [offset, offset + length) written to dst. Equal to length
  // when the op's status is OK; smaller on a short read (see ReadBatch).
  uint64_t bytes_read = 0;
};

// An fd from OpenForRead, and whether it is O_DIRECT. The caller owns fd and
// closes it with close(2).
struct OpenedFile {
  int fd = -1;
  bool direct = false;
};

class RandomReadEngine {
 public:
  static constexpr uint64_t kBlock = 4096;  // O_DIRECT alignment, bytes
  // Longest single op, bytes: the aligned superset must fit one SQE's 32-bit
  // length, and a bounce buffer this size is already an unreasonable request.
  static constexpr uint64_t kMaxOpBytes = 1ull << 30;
  static constexpr uint32_t kMaxQueueDepth = 32768;  // as config random_io.queue_depth

  struct Options {
    // Ring entries (config random_io.queue_depth), 1..kMaxQueueDepth. Also
    // the cap on ops in flight across all callers; more ops than this in a
    // batch are submitted in waves as earlier ones complete.
    uint32_t queue_depth = 1024;
    // Try IORING_SETUP_IOPOLL (config random_io.io_poll). Needs `direct` and a
    // non-empty probe_dir; otherwise, or when the probe fails, the engine runs
    // an interrupt-driven ring.
    bool io_poll = false;
    // Fds read through this engine are (or may be) O_DIRECT: read aligned
    // supersets through bounce buffers. false promises buffered fds only and
    // reads exact ranges straight into dst (an O_DIRECT fd then fails EINVAL).
    bool direct = true;
    // A directory on the disk this engine reads, for the IOPOLL probe (a temp
    // file is created there and removed). Empty: no probe, no IOPOLL.
    std::string probe_dir;
  };

  // Sets up the ring. InvalidArgument for a bad queue_depth;
  // IoError/Unavailable when io_uring cannot be set up.
  static Result<std::unique_ptr<RandomReadEngine>> Create(Options options);

  // No ReadBatch may be running.
  ~RandomReadEngine();

  RandomReadEngine(const RandomReadEngine&) = delete;
  RandomReadEngine& operator=(const RandomReadEngine&) = delete;

  // Reads every op and waits for all of them. Thread-safe: any number of
  // threads may call it at once; their ops share the ring's queue depth.
  //
  // `per_op` is resized to ops.size() and gets one Status per op, and each
  // op's bytes_read is set. An op's status is:
  //   - OK: all `length` bytes are in dst (length 0 is OK and reads nothing);
  //   - Code::kShortRead: the range runs past end
  //     of file; the bytes_read bytes (possibly 0) before EOF are in dst, and
  //     the rest of dst is unspecified (an aligned O_DIRECT read straight into
  //     dst gets the whole last block, zeros past EOF included);
  //   - Status::FromErrno(-cqe->res, ...) for a failed read (EBADF, EIO, ...);
  //   - InvalidArgument for a null dst, length > kMaxOpBytes or an offset
  //     range that overflows.
  // The returned Status is OK when every op got its own status that way (an
  // op can still have failed), and an error only when the engine itself
  // failed (the ring refused submissions, per_op is null); ops not read then
  // carry that error too. Either way, when it returns the kernel no longer
  // touches any dst.
  Status ReadBatch(std::span<ReadOp> ops, std::vector<Status>* per_op);

  // Opens `path` read-only (O_CLOEXEC), with O_DIRECT when `direct` is true
  // and the filesystem accepts it; a filesystem that refuses O_DIRECT with
  // EINVAL (procfs; tmpfs before Linux 6.6) gets a buffered fd instead,
  // reported in OpenedFile::direct.
  static Result<OpenedFile> OpenForRead(const std::string& path, bool direct);

  // Whether the ring is IORING_SETUP_IOPOLL (the probe passed).
  bool io_poll_active() const { return io_poll_active_; }
  uint32_t queue_depth() const { return queue_depth_; }

 private:
  struct Batch;
  struct Slot;

  RandomReadEngine(const Options& options, std::unique_ptr<io_uring> ring, bool io_poll_active);

  // Prepares SQEs for as many of pending[*head..] as the free queue depth
  // allows (skipping failed slots), advancing *head past them, and submits
  // them. `wave` gets the prepared slots in order and *consumed how many of
  // them the kernel accepted (all of them unless an error is returned). Blocks
  // for free depth only when `may_wait` (the caller has nothing in flight to
  // wait on instead). An error means the ring is unusable from now on.
  Status SubmitSome(const std::vector<Slot*>& pending, size_t* head, bool may_wait,
                    std::vector<Slot*>* wave, size_t* consumed);
  // Handles a slot's completion in the calling thread; true when it must be
  // submitted again (the rest of a short read, EAGAIN).
  bool Complete(Slot* s, Status* status);
  // Allocates a slot's aligned bounce buffer (span bytes) and reads go
  // there; false, with *status set, when memory runs out.
  bool GiveBounce(Slot* s, Status* status);
  // After the last read of a slot: copies its bytes out of the bounce
  // buffer, frees it, sets bytes_read and a short read's status.
  void Finish(Slot* s, Status* status);
  // Reads what is left of a slot with pread(2): an op a polled ring refuses
  // (a buffered fd on an IOPOLL ring), and lone reads (ReadAlone).
  void ReadSync(Slot* s, Status* status);
  // Reads a slot entirely on this thread with pread(2), bounce buffer
  // included, and finishes it.
  void ReadAlone(Slot* s, Status* status);
  // Waits until `batch` has completions and takes them (see the top of the
  // file: whoever waits reaps).
  void Await(Batch& batch, std::vector<Slot*>& out);
  // Reaps CQEs for every batch until `mine` has one.
  void ReapUntil(Batch& mine);

  const uint32_t queue_depth_;
  const bool direct_;
  const bool io_poll_active_;
  const std::unique_ptr<io_uring> ring_;

  std::mutex mu_;                      // guards the SQ side of ring_ and everything below
  std::condition_variable space_cv_;   // inflight_ dropped below queue_depth_
  std::condition_variable reap_cv_;    // a batch got completions, or the reaper left
  uint32_t inflight_ = 0;              // SQEs prepared and not yet reaped
  uint32_t space_waiters_ = 0;
  bool reaping_ = false;               // a caller is waiting on the ring for everyone
  std::atomic<bool> inflight_light_{true};  // few SQEs in flight: reapers may poll before sleeping
  SpinPolicy spin_;
  Status broken_;  // set once when the ring refuses submissions

  Counter& submits_;
  Counter& ops_;
  Counter& sync_reads_;
  Counter& poll_active_;
};

}  // namespace rustfs::dss

#include "dss/random_read_engine.h"

#include "dss/numa_pinning.h"

#include <fcntl.h>
#include <liburing.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include "common/log.h"

namespace rustfs::dss {

namespace {

constexpr uint64_t kBlock = RandomReadEngine::kBlock;
// CQEs a reaper takes per peek; bounds its stack, not throughput.
constexpr unsigned kReapBatch = 256;
// EAGAIN/EINTR completions and submissions are retried this many times
// before they count as failures: they are transient by definition, but a
// bound keeps a wedged kernel from spinning a caller forever.
constexpr int kMaxRetries = 16;
constexpr int kMaxSubmitRetries = 1000;
// A reaper rechecks its state this often while it waits on the ring, so it
// can never sleep through a state change it was not woken for.
constexpr long kReapWaitNs = 100'000'000;  // 100 ms
// How long a reaper polls the ring before it sleeps, when few reads are in
// flight: about two reads of this disk.
constexpr auto kReapSpin = std::chrono::microseconds(150);
constexpr uint32_t kLightLoad = 4;  // SQEs in flight

uint64_t AlignDown(uint64_t v) { return v & ~(kBlock - 1); }
uint64_t AlignUp(uint64_t v) { return AlignDown(v + kBlock - 1); }
bool Aligned(uint64_t v) { return (v & (kBlock - 1)) == 0; }

// Ring flags beyond the caller's: SUBMIT_ALL (5.18) keeps one SQE that fails
// at submission from stopping the rest of the wave. COOP_TASKRUN and
// DEFER_TASKRUN are deliberately not used: completions that run as task work
// on the submitting thread must not wait for that thread (blocked on its
// batch) to enter the kernel again.
int InitRing(io_uring* ring, uint32_t entries, unsigned flags) {
  io_uring_params p{};
  p.flags = flags | IORING_SETUP_SUBMIT_ALL;
  int r = io_uring_queue_init_params(entries, ring, &p);
  if (r == -EINVAL) {
    p = io_uring_params{};
    p.flags = flags;
    r = io_uring_queue_init_params(entries, ring, &p);
  }
  return r;
}

// OK when a polled read of an O_DIRECT file in `dir` completes on `ring`
// (set up with IORING_SETUP_IOPOLL). A device that cannot poll fails the read
// with EOPNOTSUPP, not the ring setup, so only a real read tells.
Status ProbeIoPoll(io_uring* ring, const std::string& dir) {
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_DIRECT | O_CLOEXEC, 0600);
  if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == ENOENT)) {
    // No O_TMPFILE on this filesystem: a named temp file, unlinked at once.
    std::string name = dir + "/.rustfs-iopoll-probe.XXXXXX";
    fd = ::mkostemp(name.data(), O_DIRECT | O_CLOEXEC);
    if (fd >= 0) ::unlink(name.c_str());
  }
  if (fd < 0) return Status::FromErrno(errno, "open O_DIRECT probe file in " + dir);
  void* mem = nullptr;
  if (::posix_memalign(&mem, kBlock, kBlock) != 0) {
    ::close(fd);
    return Status::FromErrno(ENOMEM, "probe buffer");
  }
  char* buf = static_cast<char*>(mem);
  std::memset(buf, 0x5a, kBlock);
  if (::pwrite(fd, buf, kBlock, 0) != static_cast<ssize_t>(kBlock)) {
    Status st = Status::FromErrno(errno ? errno : EIO, "write probe file in " + dir);
    ::close(fd);
    std::free(buf);
    return st;
  }
  io_uring_sqe* sqe = io_uring_get_sqe(ring);
  io_uring_prep_read(sqe, fd, buf, kBlock, 0);
  io_uring_sqe_set_data64(sqe, 1);
  int r = io_uring_submit(ring);
  if (r != 1) {
    ::close(fd);
    std::free(buf);
    return Status::FromErrno(r < 0 ? -r : EIO, "submit probe read");
  }
  // A polled wait returns after one pass whatever the timeout, so poll until
  // a deadline; a device that never completes counts as unable to poll.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  io_uring_cqe* cqe = nullptr;
  while (true) {
    __kernel_timespec ts{.tv_sec = 0, .tv_nsec = 10'000'000};
    r = io_uring_wait_cqe_timeout(ring, &cqe, &ts);
    if (r == 0 && cqe != nullptr) break;
    if (r != -ETIME && r != -EINTR && r != -EAGAIN) {
      ::close(fd);
      std::free(buf);  // no completion can be pending: the wait itself failed
      return Status::FromErrno(-r, "wait for probe read");
    }
    if (std::chrono::steady_clock::now() > deadline) {
      // The read may still complete into buf after the ring is torn down:
      // leak the 4 KiB rather than risk a write into freed memory.
      ::close(fd);
      return IoError("polled probe read did not complete in 2 s");
    }
  }
  int res = cqe->res;
  io_uring_cqe_seen(ring, cqe);
  ::close(fd);
  std::free(buf);
  if (res < 0) return Status::FromErrno(-res, "polled probe read");
  if (res != static_cast<int>(kBlock)) return IoError("polled probe read came back short");
  return Status::Ok();
}

}  // namespace

// One op's progress through the ring. Lives in ReadBatch's frame; its address
// is the SQE's user_data.
struct RandomReadEngine::Slot {
  Batch* batch = nullptr;
  ReadOp* op = nullptr;
  char* buf = nullptr;     // where the kernel writes: bounce, or op->dst
  char* bounce = nullptr;  // owned (free(3)); null when reading straight into dst
  bool needs_bounce = false;
  bool failed = false;    // finished with an error before reaching the ring
  uint64_t file_off = 0;  // file offset of buf[0]
  uint64_t span = 0;      // bytes wanted in buf
  uint64_t done = 0;      // bytes already in buf
  int res = 0;            // last CQE result; written by the reaper
  int retries = 0;

  Slot() = default;
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;
  ~Slot() { std::free(bounce); }
};

// Where the reaper hands a ReadBatch call its completed slots.
struct RandomReadEngine::Batch {
  std::mutex mu;
  std::vector<Slot*> done;         // guarded by mu
  std::atomic<bool> ready{false};  // done is not empty (read without mu)
};

RandomReadEngine::RandomReadEngine(const Options& options, std::unique_ptr<io_uring> ring,
                                   bool io_poll_active)
    : queue_depth_(options.queue_depth),
      direct_(options.direct),
      io_poll_active_(io_poll_active),
      ring_(std::move(ring)),
      submits_(GetCounter("dss.uring_submits")),
      ops_(GetCounter("dss.uring_ops")),
      sync_reads_(GetCounter("dss.sync_reads")),
      poll_active_(GetCounter("dss.io_poll_active")) {
  // Add(0) still creates the counter, so stats show an explicit 0.
  poll_active_.Add(io_poll_active_ ? 1 : 0);
}

RandomReadEngine::~RandomReadEngine() {
  io_uring_queue_exit(ring_.get());
  // Counters only add; adding 2^64 - 1 wraps to a decrement.
  if (io_poll_active_) poll_active_.Add(~uint64_t{0});
}

Result<std::unique_ptr<RandomReadEngine>> RandomReadEngine::Create(Options options) {
  if (options.queue_depth == 0 || options.queue_depth > kMaxQueueDepth)
    return Err(InvalidArgument("random_io.queue_depth must be in 1.." +
                               std::to_string(kMaxQueueDepth) + ", got " +
                               std::to_string(options.queue_depth)));
  auto ring = std::make_unique<io_uring>();
  bool polled = false;
  if (options.io_poll) {
    std::string why;
    if (!options.direct) {
      why = "IOPOLL needs O_DIRECT and direct reads are off";
    } else if (options.probe_dir.empty()) {
      why = "no probe directory to test the device with";
    } else if (int r = InitRing(ring.get(), options.queue_depth, IORING_SETUP_IOPOLL); r < 0) {
      why = std::string("IOPOLL ring setup failed: ") + std::strerror(-r);
    } else if (Status st = ProbeIoPoll(ring.get(), options.probe_dir); !st.ok()) {
      why = "probe in " + options.probe_dir + " failed: " + st.ToString();
      io_uring_queue_exit(ring.get());
    } else {
      polled = true;
    }
    if (polled) {
      LOG_INFO("random-read io_uring: IOPOLL active, queue depth {}", options.queue_depth);
    } else {
      LOG_WARN(
          "random-read io_uring: IOPOLL requested but unavailable ({}); using an "
          "interrupt-driven ring",
          why);
    }
  }
  if (!polled) {
    int r = InitRing(ring.get(), options.queue_depth, 0);
    if (r < 0) return Err(Status::FromErrno(-r, "io_uring setup"));
  }
  // A reaper waits with a timeout; without EXT_ARG liburing would implement
  // that with a timeout SQE, racing the submitters for the SQ.
  if (!(ring->features & IORING_FEAT_EXT_ARG)) {
    io_uring_queue_exit(ring.get());
    return Err(Unavailable("io_uring lacks IORING_FEAT_EXT_ARG (needs Linux 5.11 or later)"));
  }
  return std::unique_ptr<RandomReadEngine>(new RandomReadEngine(options, std::move(ring), polled));
}

Result<OpenedFile> RandomReadEngine::OpenForRead(const std::string& path, bool direct) {
  const int flags = O_RDONLY | O_CLOEXEC;
  if (direct) {
    int fd = ::open(path.c_str(), flags | O_DIRECT);
    if (fd >= 0) return OpenedFile{fd, true};
    // EINVAL is how a filesystem without O_DIRECT answers (tmpfs before 6.6,
    // procfs); anything else (ENOENT, EACCES) is the file's problem, not the
    // mode's.
    if (errno != EINVAL) return Err(Status::FromErrno(errno, "open " + path));
  }
  int fd = ::open(path.c_str(), flags);
  if (fd < 0) return Err(Status::FromErrno(errno, "open " + path));
  return OpenedFile{fd, false};
}

Status RandomReadEngine::ReadBatch(std::span<ReadOp> ops, std::vector<Status>* per_op) {
  if (per_op == nullptr) return InvalidArgument("ReadBatch: per_op is null");
  per_op->assign(ops.size(), Status::Ok());

  Batch batch;
  std::vector<Slot> slots(ops.size());
  std::vector<Slot*> pending;  // to submit: pending[head..]; retries go on the end
  pending.reserve(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    ReadOp& op = ops[i];
    op.bytes_read = 0;
    if (op.length == 0) continue;
    if (op.dst == nullptr) {
      (*per_op)[i] = InvalidArgument("read op " + std::to_string(i) + ": null dst");
      continue;
    }
    if (op.length > kMaxOpBytes) {
      (*per_op)[i] =
          InvalidArgument("read op " + std::to_string(i) + ": length " + std::to_string(op.length) +
                          " over the " + std::to_string(kMaxOpBytes) + "-byte limit");
      continue;
    }
    if (op.offset > UINT64_MAX - op.length - kBlock) {
      (*per_op)[i] = InvalidArgument("read op " + std::to_string(i) + ": offset " +
                                     std::to_string(op.offset) + " + length overflows");
      continue;
    }
    Slot& s = slots[i];
    s.batch = &batch;
    s.op = &op;
    const bool aligned =
        Aligned(op.offset) && Aligned(op.length) && Aligned(reinterpret_cast<uintptr_t>(op.dst));
    if (!direct_ || aligned) {
      s.buf = op.dst;
      s.file_off = op.offset;
      s.span = op.length;
    } else {
      s.needs_bounce = true;
      s.file_off = AlignDown(op.offset);
      s.span = AlignUp(op.offset + op.length) - s.file_off;
    }
    pending.push_back(&s);
  }
  auto status_of = [&](const Slot* s) -> Status& { return (*per_op)[s->op - ops.data()]; };
  // A lone read while few are in flight (queue depth 1, a few readers):
  // pread on this thread. Through the ring this thread would poll for the
  // one completion, which is no faster than pread's sleep until the disk
  // interrupt and takes the CPU the other threads need. A/B on 6 DSS, cold,
  // 1 GiB, 2 runs each (ring -> pread): fio through FUSE QD1 7.2/6.5 K ->
  // 7.9/8.0 K reads/s (CPU per read 183-201 -> 152-153 us), psync x 4
  // 18.8/17.6 K -> 19.6/19.8 K, mmap x 4 17.3/17.3 K -> 17.8/17.8 K; the fio
  // engine QD1 9.2/8.5 K -> 10.2/9.4 K; QD32 x 4 unchanged (its batches take
  // the ring). On a 4 GiB set: FUSE QD1 6.6/6.7 K -> 7.4/7.5 K, psync x 4
  // 15.0/14.3 K -> 16.1/15.6 K, the fio engine QD1 9.2/9.6 K -> 9.0/8.5 K
  // (within this VM's noise at QD1; 12 us less CPU per read). Under load
  // the ring's batched submissions and shared reaping stay, and a polled
  // ring (IOPOLL) is always used.
  if (ops.size() == 1 && pending.size() == 1 && !io_poll_active_ &&
      inflight_light_.load(std::memory_order_relaxed)) {
    ReadAlone(pending[0], &status_of(pending[0]));
    return Status::Ok();
  }

  Status engine_status;
  size_t head = 0;
  size_t outstanding = 0;
  std::vector<Slot*> wave;
  std::vector<Slot*> reaped;
  while (head < pending.size() || outstanding > 0) {
    if (head < pending.size()) {
      // Bounce buffers for the next wave only, so a batch far deeper than the
      // queue holds at most about one queue's worth of them at a time.
      for (size_t j = head; j < pending.size() && j < head + queue_depth_; ++j) {
        Slot* s = pending[j];
        if (!s->needs_bounce || s->bounce != nullptr || s->failed) continue;
        s->failed = !GiveBounce(s, &status_of(s));
      }
      size_t consumed = 0;
      Status st = SubmitSome(pending, &head, outstanding == 0, &wave, &consumed);
      outstanding += consumed;
      if (!st.ok()) {
        engine_status = st;
        for (size_t j = consumed; j < wave.size(); ++j) status_of(wave[j]) = st;
        for (size_t j = head; j < pending.size(); ++j)
          if (!pending[j]->failed) status_of(pending[j]) = st;
        head = pending.size();
      }
    }
    if (outstanding == 0) continue;
    Await(batch, reaped);
    for (Slot* s : reaped) {
      --outstanding;
      if (Complete(s, &status_of(s))) {
        if (engine_status.ok()) {
          pending.push_back(s);
        } else {
          status_of(s) = engine_status;
        }
      }
    }
    reaped.clear();
  }
  return engine_status;
}

Status RandomReadEngine::SubmitSome(const std::vector<Slot*>& pending, size_t* head, bool may_wait,
                                    std::vector<Slot*>* wave, size_t* consumed) {
  wave->clear();
  *consumed = 0;
  std::unique_lock l(mu_);
  if (!broken_.ok()) return broken_;
  if (inflight_ >= queue_depth_) {
    if (!may_wait) return Status::Ok();
    ++space_waiters_;
    space_cv_.wait(l, [&] { return inflight_ < queue_depth_; });
    --space_waiters_;
    if (!broken_.ok()) return broken_;
  }
  const uint32_t room = queue_depth_ - inflight_;
  while (*head < pending.size() && wave->size() < room) {
    Slot* s = pending[*head];
    if (s->failed) {
      ++*head;
      continue;
    }
    // Never null: every submission leaves the SQ empty, and room <= entries.
    io_uring_sqe* sqe = io_uring_get_sqe(ring_.get());
    if (sqe == nullptr) break;
    io_uring_prep_read(sqe, s->op->fd, s->buf + s->done, static_cast<unsigned>(s->span - s->done),
                       s->file_off + s->done);
    io_uring_sqe_set_data(sqe, s);
    wave->push_back(s);
    ++*head;
  }
  if (wave->empty()) return Status::Ok();
  inflight_ += wave->size();
  inflight_light_.store(inflight_ <= kLightLoad, std::memory_order_relaxed);

  // The kernel may take fewer SQEs than offered (rarely, under memory
  // pressure); the rest stay in the SQ and the next call offers them again.
  int tries = 0;
  while (*consumed < wave->size()) {
    int r = io_uring_submit(ring_.get());
    submits_.Inc();
    if (r > 0) {
      *consumed += r;
      ops_.Add(r);
      continue;
    }
    if ((r == 0 || r == -EINTR || r == -EAGAIN || r == -EBUSY) && ++tries < kMaxSubmitRetries) {
      // EBUSY: completions back up; a reaper drains them without mu_.
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      continue;
    }
    // Leave the unaccepted SQEs in the SQ for good: nothing submits on a
    // broken ring, so the kernel never reads them or their buffers.
    broken_ = IoError(std::string("io_uring_submit failed: ") + std::strerror(r < 0 ? -r : EIO));
    LOG_ERROR("random-read io_uring: {}; the engine fails all further reads", broken_.message());
    inflight_ -= wave->size() - *consumed;
    return broken_;
  }
  return Status::Ok();
}

bool RandomReadEngine::Complete(Slot* s, Status* status) {
  const ReadOp& op = *s->op;
  const int res = s->res;
  if (res > 0) {
    s->done += static_cast<uint64_t>(res);
    if (s->done < s->span) {
      // Short. For a buffered fd the rest may simply follow; for an O_DIRECT
      // fd an unaligned count means end of file (and an unaligned follow-up
      // would fail EINVAL). The fcntl is on this rare path only.
      bool more = Aligned(s->done) || (::fcntl(op.fd, F_GETFL) & O_DIRECT) == 0;
      if (more) return true;
    }
  } else if (res < 0) {
    const int err = -res;
    if ((err == EAGAIN || err == EINTR) && ++s->retries <= kMaxRetries) return true;
    if (err == EOPNOTSUPP && io_poll_active_) {
      static std::atomic<bool> warned{false};
      if (!warned.exchange(true))
        LOG_WARN(
            "random-read io_uring: polled ring refused a read (buffered fd?); reading it "
            "with pread instead");
      ReadSync(s, status);
    } else {
      *status = Status::FromErrno(err, "read fd " + std::to_string(op.fd) + " offset " +
                                           std::to_string(op.offset) + " length " +
                                           std::to_string(op.length));
    }
    if (!status->ok()) {
      std::free(s->bounce);
      s->bounce = nullptr;
      return false;
    }
  }
  // Done: all of span, or end of file (res == 0, or the short read above).
  Finish(s, status);
  return false;
}

void RandomReadEngine::Finish(Slot* s, Status* status) {
  const ReadOp& op = *s->op;
  const uint64_t skip = op.offset - s->file_off;
  const uint64_t got = s->done > skip ? std::min(s->done - skip, op.length) : 0;
  if (s->bounce != nullptr && got > 0) std::memcpy(op.dst, s->bounce + skip, got);
  std::free(s->bounce);
  s->bounce = nullptr;
  s->op->bytes_read = got;
  if (got < op.length) {
    *status = Status(Code::kShortRead, "short read of fd " + std::to_string(op.fd) + " at offset " +
                      std::to_string(op.offset) + ": " + std::to_string(got) + " of " +
                      std::to_string(op.length) + " bytes before end of file");
  }
}

void RandomReadEngine::ReadSync(Slot* s, Status* status) {
  while (s->done < s->span) {
    ssize_t n = ::pread(s->op->fd, s->buf + s->done, s->span - s->done, s->file_off + s->done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *status = Status::FromErrno(errno, "pread fd " + std::to_string(s->op->fd));
      return;
    }
    if (n == 0) return;
    s->done += static_cast<uint64_t>(n);
    if (!Aligned(s->done) && (::fcntl(s->op->fd, F_GETFL) & O_DIRECT) != 0) return;
  }
}

bool RandomReadEngine::GiveBounce(Slot* s, Status* status) {
  void* mem = nullptr;
  if (::posix_memalign(&mem, kBlock, s->span) != 0) {
    *status = Status::FromErrno(ENOMEM, "bounce buffer for read");
    return false;
  }
  s->bounce = static_cast<char*>(mem);
  s->buf = s->bounce;
  return true;
}

void RandomReadEngine::ReadAlone(Slot* s, Status* status) {
  sync_reads_.Inc();
  if (s->needs_bounce && !GiveBounce(s, status)) return;
  ReadSync(s, status);
  if (status->ok()) {
    Finish(s, status);
    return;
  }
  std::free(s->bounce);
  s->bounce = nullptr;
}

// Whoever waits reaps: one caller at a time waits on the ring for
// everyone's completions and hands each to its batch, and the others sleep
// until theirs arrive or the reaper leaves (then one of them takes over).
// A caller alone on the engine, the usual case at low depth, reaps its own
// completions: no thread wakes another between the kernel and the caller.
void RandomReadEngine::Await(Batch& batch, std::vector<Slot*>& out) {
  for (;;) {
    {
      std::lock_guard bl(batch.mu);
      if (!batch.done.empty()) {
        out.swap(batch.done);
        batch.ready = false;
        return;
      }
    }
    std::unique_lock l(mu_);
    if (reaping_) {
      reap_cv_.wait(l, [&] { return !reaping_ || batch.ready.load(); });
      continue;
    }
    reaping_ = true;
    l.unlock();
    ReapUntil(batch);
    l.lock();
    reaping_ = false;
    l.unlock();
    reap_cv_.notify_all();  // one that still waits takes over
  }
}

void RandomReadEngine::ReapUntil(Batch& mine) {
  io_uring_cqe* cqes[kReapBatch];
  struct Reaped {
    Slot* slot;
    int res;
  } reaped[kReapBatch];
  while (!mine.ready.load()) {
    io_uring_cqe* cqe = nullptr;
    // Under light load (a few reads in flight: a small batch; a lone read
    // takes pread instead, see ReadBatch) the reply is one disk read away:
    // polling the ring for it costs less CPU than the wake-up that sleeping
    // in the kernel would cost (TARGETS.md), while polls keep catching their
    // completion (SpinPolicy).
    if (inflight_light_.load(std::memory_order_relaxed))
      spin_.Poll(kReapSpin, [&] { return io_uring_peek_cqe(ring_.get(), &cqe) == 0; });
    __kernel_timespec ts{.tv_sec = 0, .tv_nsec = kReapWaitNs};
    int r = cqe ? 0 : io_uring_wait_cqe_timeout(ring_.get(), &cqe, &ts);
    if (r < 0 && r != -ETIME && r != -EINTR && r != -EAGAIN) {
      static std::atomic<bool> warned{false};
      if (!warned.exchange(true))
        LOG_ERROR("random-read io_uring: waiting for completions failed: {}", std::strerror(-r));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    unsigned n = io_uring_peek_batch_cqe(ring_.get(), cqes, kReapBatch);
    if (n == 0) continue;
    for (unsigned i = 0; i < n; ++i) {
      reaped[i].slot = static_cast<Slot*>(io_uring_cqe_get_data(cqes[i]));
      reaped[i].res = cqes[i]->res;
    }
    io_uring_cq_advance(ring_.get(), n);
    {
      // Taking mu_ before touching any slot is what orders the submitter's
      // writes to it (made under mu_, which is held across io_uring_submit,
      // so before any of its CQEs can be reaped) before the reads below; the
      // ring itself is no ordering a race detector can see.
      std::lock_guard l(mu_);
      inflight_ -= n;
      inflight_light_.store(inflight_ <= kLightLoad, std::memory_order_relaxed);
      if (space_waiters_ > 0) space_cv_.notify_all();
    }
    bool others = false;
    for (unsigned i = 0; i < n; ++i) {
      Slot* s = reaped[i].slot;
      if (s == nullptr) continue;
      s->res = reaped[i].res;
      Batch* b = s->batch;
      // Once b->mu is released its owner may take the slots and return,
      // destroying the batch: nothing of it is touched afterwards.
      std::lock_guard bl(b->mu);
      b->done.push_back(s);
      b->ready = true;
      others |= b != &mine;
    }
    if (others) {
      // Under mu_, so a waiter cannot check its batch between our setting
      // `ready` and this notification and then sleep through it.
      std::lock_guard l(mu_);
      reap_cv_.notify_all();
    }
  }
}

}  // namespace rustfs::dss

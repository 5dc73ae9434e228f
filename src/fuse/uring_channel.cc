#include "fuse/uring_channel.h"

#include <liburing.h>
#include <linux/fuse.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/sysinfo.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/log.h"
#include "common/metrics.h"
#include "common/thread_affinity.h"
#include "fuse/read_batcher.h"
#include "net/wait_hook.h"

namespace rustfs::fuse {
namespace {

// The FUSE-over-io_uring part of the kernel's uapi (protocol 7.42):
// Debian 12's <linux/fuse.h> is 7.38 and lacks it.
constexpr uint64_t kOverIoUring = 1ULL << 41;  // INIT flag (bit 9 of flags2)
constexpr uint32_t kCmdRegister = 1;           // FUSE_IO_URING_CMD_REGISTER
constexpr uint32_t kCmdCommitAndFetch = 2;     // FUSE_IO_URING_CMD_COMMIT_AND_FETCH
struct RingEntInOut {                          // struct fuse_uring_ent_in_out
  uint64_t flags;
  uint64_t commit_id;
  uint32_t payload_sz;
  uint32_t padding;
  uint64_t reserved;
};
struct RingReqHeader {  // struct fuse_uring_req_header
  char in_out[128];     // fuse_in_header in, fuse_out_header out
  char op_in[128];      // the per-op header (fuse_read_in, ...)
  RingEntInOut ent;
};
struct RingCmdReq {  // struct fuse_uring_cmd_req, in the SQE's command area
  uint64_t flags;
  uint64_t commit_id;
  uint16_t qid;
  uint8_t padding[6];
};
static_assert(sizeof(RingCmdReq) <= 80, "fits the SQE128 command area");

constexpr size_t kPage = 4096;
// Mapped before each payload buffer: the rebuilt fuse_in_header and per-op
// header go right before the payload, so the message is contiguous and the
// payload (a write's data) is not copied.
constexpr size_t kPrefix = kPage;
constexpr uint64_t kWakeTag = ~uint64_t(0);  // user_data of the stop eventfd's poll

struct Queue;
struct Entry {
  Queue* q = nullptr;
  RingReqHeader* hdr = nullptr;  // its own page (the kernel may pin it)
  char* base = nullptr;          // kPrefix bytes, then the payload buffer
  char* payload = nullptr;
  iovec iov[2]{};                // what REGISTER hands the kernel
  uint64_t commit_id = 0;
  uint32_t last_cmd = 0;
  char* msg = nullptr;           // the rebuilt /dev/fuse message
  size_t msg_len = 0;
};

struct Queue {
  uint16_t qid = 0;
  io_uring ring{};
  bool ring_ok = false;
  int wake_fd = -1;
  std::mutex sq_mu;  // the submission queue: the queue thread and repliers
  std::vector<Entry> ents;
  std::thread thread;
  bool ending = false;  // the queue thread's: the channel is ending
};

// A queue thread holds back the commits of the replies it sends (its own
// requests' and, leading the batcher, others'): they go to the kernel
// together, one io_uring_enter per queue, after each batch.
thread_local bool t_hold_commits = false;
thread_local std::vector<Queue*> t_held;  // queues with commits held back

void FlushHeldCommits() {
  for (Queue* q : t_held) {
    std::lock_guard lk(q->sq_mu);
    io_uring_submit(&q->ring);
  }
  t_held.clear();
}

void BlockAllSignals() {
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
}

}  // namespace

struct UringChannel::Impl {
  fuse_session* se = nullptr;
  Options opts;
  ReadBatcher* batcher = nullptr;
  int fd = -1;

  std::atomic<uint64_t> init_unique{0};  // the kernel's INIT, while unanswered
  std::atomic<bool> offered{false};      // that INIT offered io_uring
  std::atomic<bool> active{false};       // rings started
  size_t payload_sz = 0;                 // per entry: the kernel's largest request or reply
  std::vector<std::unique_ptr<Queue>> queues;
  std::atomic<bool> stopping{false};

  std::mutex inflight_mu;
  std::unordered_map<uint64_t, Entry*> inflight;  // ring requests awaiting replies, by unique

  std::mutex work_mu;
  std::condition_variable work_cv;
  std::deque<Entry*> work;  // guarded by work_mu
  bool work_done = false;   // guarded by work_mu
  std::vector<std::thread> workers;

  ~Impl();
  void NoteInit(const fuse_in_header* in, size_t len);
  ssize_t ReplyInit(int fd, const iovec* iov, int count);
  Status Start();
  void QueueLoop(Queue& q);
  void Drain(Queue& q, bool while_waiting);
  bool HandleCqe(Queue& q, const io_uring_cqe* cqe);
  void Process(Entry* e);
  void WorkerLoop();
  Entry* TakeInflight(uint64_t unique);
  ssize_t Commit(Entry* e, const iovec* iov, int count);
  void Submit(Entry* e, uint32_t cmd);
};

namespace {

std::atomic<UringChannel::Impl*> g_channel{nullptr};

size_t IovLen(const iovec* iov, int count) {
  size_t n = 0;
  for (int i = 0; i < count; i++) n += iov[i].iov_len;
  return n;
}

ssize_t ChannelRead(int fd, void* buf, size_t len, void*) {
  const ssize_t n = ::read(fd, buf, len);
  if (n >= ssize_t(sizeof(fuse_in_header)) && static_cast<fuse_in_header*>(buf)->opcode == FUSE_INIT)
    if (auto* c = g_channel.load(std::memory_order_acquire)) c->NoteInit(static_cast<fuse_in_header*>(buf), size_t(n));
  return n;
}

ssize_t ChannelWritev(int fd, struct iovec* iov, int count, void*) {
  auto* c = g_channel.load(std::memory_order_acquire);
  if (c && count > 0 && iov[0].iov_len >= sizeof(fuse_out_header)) {
    const uint64_t unique = static_cast<const fuse_out_header*>(iov[0].iov_base)->unique;
    if (unique != 0 && c->active.load(std::memory_order_acquire))
      if (Entry* e = c->TakeInflight(unique)) return c->Commit(e, iov, count);
    if (unique != 0 && unique == c->init_unique.load()) return c->ReplyInit(fd, iov, count);
  }
  return ::writev(fd, iov, count);
}

}  // namespace

void UringChannel::Impl::NoteInit(const fuse_in_header* in, size_t len) {
  const auto* init = reinterpret_cast<const fuse_init_in*>(in + 1);
  if (len < sizeof(*in) + offsetof(fuse_init_in, flags2) + sizeof(init->flags2)) return;
  const bool offer = (init->flags & FUSE_INIT_EXT) && ((uint64_t(init->flags2) << 32) & kOverIoUring);
  offered = offer;
  init_unique = in->unique;
  if (!offer)
    LOG_WARN("the kernel does not offer FUSE over io_uring (needs 6.14+ and "
             "/sys/module/fuse/parameters/enable_uring = 1): /dev/fuse it is");
}

// libfuse's INIT reply, with FUSE_OVER_IO_URING added when the kernel offered
// it; once written (the kernel has taken it when write returns), the rings
// start.
ssize_t UringChannel::Impl::ReplyInit(int fd, const iovec* iov, int count) {
  init_unique = 0;
  std::vector<char> msg(IovLen(iov, count));
  for (size_t i = 0, at = 0; i < size_t(count); at += iov[i].iov_len, i++)
    memcpy(msg.data() + at, iov[i].iov_base, iov[i].iov_len);
  auto* out = reinterpret_cast<fuse_out_header*>(msg.data());
  auto* init = reinterpret_cast<fuse_init_out*>(out + 1);
  const bool use = offered && out->error == 0 &&
                   msg.size() >= sizeof(*out) + offsetof(fuse_init_out, flags2) + sizeof(init->flags2) &&
                   (init->flags & FUSE_INIT_EXT);
  if (use) {
    init->flags2 |= uint32_t(kOverIoUring >> 32);
    const size_t pages = (init->flags & FUSE_MAX_PAGES) ? init->max_pages : 32;  // FUSE_DEFAULT_MAX_PAGES_PER_REQ
    payload_sz = std::max<size_t>({8192, init->max_write, pages * kPage});
    payload_sz = (payload_sz + kPage - 1) / kPage * kPage;
  }
  const ssize_t n = ::write(fd, msg.data(), msg.size());
  if (n == ssize_t(msg.size()) && use) {
    if (Status s = Start(); !s.ok()) LOG_ERROR("FUSE over io_uring not started: {}", s.ToString());
  }
  return n;
}

Status UringChannel::Impl::Start() {
  // The kernel sends a request to the queue of the CPU its caller runs on,
  // and uses the rings only once every possible CPU's queue has entries.
  const int ncpu = get_nprocs_conf();
  for (int qid = 0; qid < ncpu; qid++) {
    // Owned by `queues` before anything can fail: ~Impl frees what was made.
    Queue* q = queues.emplace_back(std::make_unique<Queue>()).get();
    q->qid = uint16_t(qid);
    io_uring_params p{};
    p.flags = IORING_SETUP_SQE128 | IORING_SETUP_CQSIZE;
    p.cq_entries = 2 * (opts.queue_depth + 1);
    if (int rc = io_uring_queue_init_params(opts.queue_depth + 1, &q->ring, &p); rc < 0)
      return Status::FromErrno(-rc, "io_uring_queue_init");
    q->ring_ok = true;
    q->wake_fd = eventfd(0, EFD_CLOEXEC);
    if (q->wake_fd < 0) return Status::FromErrno(errno, "eventfd");
    q->ents.resize(opts.queue_depth);
    for (Entry& e : q->ents) {
      e.q = q;
      void* h = mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      void* b = mmap(nullptr, kPrefix + payload_sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (h == MAP_FAILED || b == MAP_FAILED) return IoError("mmap of ring buffers failed");
      e.hdr = static_cast<RingReqHeader*>(h);
      e.base = static_cast<char*>(b);
      e.payload = e.base + kPrefix;
      e.iov[0] = {e.hdr, sizeof(RingReqHeader)};
      e.iov[1] = {e.payload, payload_sz};
    }
  }
  for (unsigned i = 0; i < opts.workers; i++) workers.emplace_back([this] { WorkerLoop(); });
  active = true;
  for (auto& q : queues) q->thread = std::thread([this, q = q.get()] { QueueLoop(*q); });
  LOG_INFO("FUSE over io_uring: {} queues x {} entries, {} KiB payload each", queues.size(), opts.queue_depth,
           payload_sz / 1024);
  return Status::Ok();
}

void UringChannel::Impl::Submit(Entry* e, uint32_t cmd) {
  Queue& q = *e->q;
  std::lock_guard lk(q.sq_mu);
  io_uring_sqe* sqe = io_uring_get_sqe(&q.ring);
  if (!sqe) {  // cannot happen: one SQE per entry at most, and the ring has one more
    LOG_ERROR("FUSE ring {}: no free SQE", q.qid);
    return;
  }
  memset(sqe, 0, 2 * sizeof(*sqe));  // SQE128
  sqe->opcode = IORING_OP_URING_CMD;
  sqe->fd = fd;
  sqe->cmd_op = cmd;
  io_uring_sqe_set_data(sqe, e);
  auto* req = reinterpret_cast<RingCmdReq*>(sqe->cmd);
  req->qid = q.qid;
  if (cmd == kCmdRegister) {
    sqe->addr = reinterpret_cast<uint64_t>(e->iov);
    sqe->len = 2;
  } else {
    req->commit_id = e->commit_id;
  }
  e->last_cmd = cmd;
  if (!t_hold_commits) {
    io_uring_submit(&q.ring);
  } else if (std::find(t_held.begin(), t_held.end(), &q) == t_held.end()) {
    t_held.push_back(&q);
  }
}

void UringChannel::Impl::QueueLoop(Queue& q) {
  BlockAllSignals();
  pthread_setname_np(pthread_self(), ("fuse-ring-" + std::to_string(q.qid)).c_str());
  // Queue q holds the requests of callers running on CPU q: its thread on
  // that CPU is woken without an inter-processor interrupt (QD1 cached reads:
  // 15-17 K/s pinned, 10-11 K/s not).
  if (Status st = PinCurrentThread(q.qid); !st.ok()) LOG_WARN("FUSE ring {}: not pinned: {}", q.qid, st.ToString());
  for (Entry& e : q.ents) Submit(&e, kCmdRegister);
  {
    std::lock_guard lk(q.sq_mu);
    io_uring_sqe* sqe = io_uring_get_sqe(&q.ring);
    io_uring_prep_poll_add(sqe, q.wake_fd, POLLIN);
    io_uring_sqe_set_data64(sqe, kWakeTag);
    io_uring_submit(&q.ring);
  }
  // While this thread waits for its batch's replies, the requests the
  // kernel puts on its ring meanwhile are taken and their reads started
  // (net/wait_hook.h): its CPU's callers are not held up by one batch
  // (psync x 4 on 2 CPUs kept 2 reads in flight, not 4). The ring's fd
  // polls readable once a completion is posted.
  struct RingHook final : net::WaitHook {
    Impl& impl;
    Queue& q;
    RingHook(Impl& i, Queue& qu) : impl(i), q(qu) {}
    int fd() const override { return q.ring.ring_fd; }
    bool Pending() override { return io_uring_cq_ready(&q.ring) > 0; }
    void Run() override { impl.Drain(q, /*while_waiting=*/true); }
  } hook(*this, q);
  net::ScopedWaitHook use_hook(batcher ? &hook : nullptr);
  while (!q.ending) {
    io_uring_cqe* cqe;
    const int rc = io_uring_wait_cqe(&q.ring, &cqe);
    if (rc == -EINTR) continue;
    if (rc < 0) {
      LOG_ERROR("FUSE ring {}: wait: {}", q.qid, strerror(-rc));
      break;
    }
    Drain(q, /*while_waiting=*/false);
  }
}

// Takes every completion on the ring and serves the reads among them as
// one batch. while_waiting: called by the wait hook, with this thread's own
// batch in flight (its commits are held already, and stay held after).
void UringChannel::Impl::Drain(Queue& q, bool while_waiting) {
  const bool held = t_hold_commits;
  t_hold_commits = true;
  {
    // Reads queue up while the ring is drained and are served as one batch.
    ReadBatcher::DeferLeading defer;
    io_uring_cqe* cqe;
    unsigned head, n = 0;
    io_uring_for_each_cqe(&q.ring, head, cqe) {
      n++;
      if (!HandleCqe(q, cqe)) q.ending = true;
    }
    io_uring_cq_advance(&q.ring, n);
  }
  FlushHeldCommits();
  if (batcher) {  // flushes after each batch (SetAfterBatch)
    if (while_waiting) batcher->LeadWhileWaiting();
    else batcher->Lead();
  }
  FlushHeldCommits();
  t_hold_commits = held;
}

// False: the connection or the channel is ending.
bool UringChannel::Impl::HandleCqe(Queue& q, const io_uring_cqe* cqe) {
  if (cqe->user_data == kWakeTag) return false;
  auto* e = reinterpret_cast<Entry*>(io_uring_cqe_get_data(cqe));
  if (cqe->res < 0) {
    if (cqe->res == -EAGAIN || cqe->res == -EINTR) {  // e.g. REGISTER before INIT is done
      Submit(e, e->last_cmd);
      return true;
    }
    if (cqe->res != -ENOTCONN && cqe->res != -ECONNABORTED && !stopping)
      LOG_ERROR("FUSE ring {}: command {} failed: {}", q.qid, e->last_cmd, strerror(-cqe->res));
    return false;
  }
  const auto* in = reinterpret_cast<const fuse_in_header*>(e->hdr->in_out);
  const size_t payload = e->hdr->ent.payload_sz;
  e->commit_id = e->hdr->ent.commit_id;
  // The per-op header's size is what the message's length leaves.
  if (in->len < sizeof(*in) + payload || in->len - sizeof(*in) - payload > sizeof(e->hdr->op_in) ||
      payload > payload_sz) {
    LOG_ERROR("FUSE ring {}: malformed request (opcode {}, len {}, payload {})", q.qid, in->opcode, in->len,
              payload);
    fuse_out_header out{sizeof(out), -EIO, in->unique};
    iovec iov{&out, sizeof(out)};
    Commit(e, &iov, 1);
    return true;
  }
  const size_t op_in = in->len - sizeof(*in) - payload;
  e->msg = e->payload - op_in - sizeof(*in);
  e->msg_len = in->len;
  memcpy(e->msg, in, sizeof(*in));
  memcpy(e->msg + sizeof(*in), e->hdr->op_in, op_in);
  {
    std::lock_guard lk(inflight_mu);
    inflight[in->unique] = e;
  }
  if (in->opcode == FUSE_READ && batcher) {
    Process(e);  // queued in the batcher (DeferLeading), served after the drain
  } else {
    {
      std::lock_guard lk(work_mu);
      work.push_back(e);
    }
    work_cv.notify_one();
  }
  return true;
}

void UringChannel::Impl::Process(Entry* e) {
  fuse_buf buf{};
  buf.mem = e->msg;
  buf.size = e->msg_len;
  fuse_session_process_buf(se, &buf);
}

void UringChannel::Impl::WorkerLoop() {
  BlockAllSignals();
  pthread_setname_np(pthread_self(), "fuse-ring-work");
  std::unique_lock lk(work_mu);
  for (;;) {
    work_cv.wait(lk, [&] { return !work.empty() || work_done; });
    if (work.empty()) return;
    Entry* e = work.front();
    work.pop_front();
    lk.unlock();
    Process(e);
    lk.lock();
  }
}

Entry* UringChannel::Impl::TakeInflight(uint64_t unique) {
  std::lock_guard lk(inflight_mu);
  auto it = inflight.find(unique);
  if (it == inflight.end()) return nullptr;
  Entry* e = it->second;
  inflight.erase(it);
  return e;
}

// A reply libfuse wrote for a ring request: its header goes to the entry's
// header, its arguments to the payload buffer, and the entry goes back to
// the kernel, which takes the reply and fetches the next request into it.
ssize_t UringChannel::Impl::Commit(Entry* e, const iovec* iov, int count) {
  static Counter& replies = GetCounter("fuse.ring_replies");
  const auto* src = static_cast<const fuse_out_header*>(iov[0].iov_base);
  auto* out = reinterpret_cast<fuse_out_header*>(e->hdr->in_out);
  size_t len = 0;
  int error = src->error;
  for (int i = 1; i < count; i++) {
    if (len + iov[i].iov_len > payload_sz) {
      LOG_ERROR("FUSE ring reply of {} bytes exceeds the {}-byte buffer", IovLen(iov, count), payload_sz);
      error = -EIO;
      len = 0;
      break;
    }
    memcpy(e->payload + len, iov[i].iov_base, iov[i].iov_len);
    len += iov[i].iov_len;
  }
  out->unique = src->unique;
  out->error = error;
  out->len = uint32_t(len);
  e->hdr->ent.payload_sz = uint32_t(len);
  replies.Inc();
  Submit(e, kCmdCommitAndFetch);
  return ssize_t(IovLen(iov, count));
}

UringChannel::Impl::~Impl() {
  stopping = true;
  for (auto& q : queues) {
    if (q->wake_fd >= 0) {
      const uint64_t one = 1;
      (void)!::write(q->wake_fd, &one, sizeof(one));
    }
    if (q->thread.joinable()) q->thread.join();
  }
  {
    std::lock_guard lk(work_mu);
    work_done = true;
  }
  work_cv.notify_all();
  for (auto& t : workers) t.join();
  // Later writes (notifications, replies to what the kernel aborts) take
  // the ordinary path.
  g_channel.store(nullptr, std::memory_order_release);
  for (auto& q : queues) {
    if (q->ring_ok) io_uring_queue_exit(&q->ring);
    if (q->wake_fd >= 0) close(q->wake_fd);
    for (Entry& e : q->ents) {
      if (e.hdr) munmap(e.hdr, kPage);
      if (e.base) munmap(e.base, kPrefix + payload_sz);
    }
  }
}

Result<std::unique_ptr<UringChannel>> UringChannel::Install(fuse_session* se, Options opts, ReadBatcher* batcher) {
  if (opts.queue_depth == 0 || opts.workers == 0) return Err(InvalidArgument("queue depth and workers must be > 0"));
  auto impl = std::make_unique<Impl>();
  impl->se = se;
  impl->opts = opts;
  impl->batcher = batcher;
  if (batcher) batcher->SetAfterBatch(FlushHeldCommits);
  impl->fd = fuse_session_fd(se);
  Impl* expected = nullptr;
  if (!g_channel.compare_exchange_strong(expected, impl.get()))
    return Err(InvalidArgument("one FUSE io_uring channel per process"));
  fuse_custom_io io{};
  io.read = ChannelRead;
  io.writev = ChannelWritev;
  if (int rc = fuse_session_custom_io(se, &io, impl->fd); rc != 0) {
    g_channel = nullptr;
    return Err(Status::FromErrno(-rc, "fuse_session_custom_io"));
  }
  return std::unique_ptr<UringChannel>(new UringChannel(std::move(impl)));
}

UringChannel::UringChannel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
UringChannel::~UringChannel() = default;

}  // namespace rustfs::fuse

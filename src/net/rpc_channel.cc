#include "net/rpc_channel.h"
#include "net/auth.h"
#include "net/wire_status.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "common/fd_io.h"
#include "common/spin_policy.h"
#include "common/uninit.h"
#include "net/rpc_server.h"
#include "net/wait_hook.h"

namespace rustfs::net {

namespace {

// Writes all iovecs; false on any error.
bool WriteAll(int fd, iovec* iov, int cnt) {
  while (cnt > 0) {
    ssize_t n = ::writev(fd, iov, cnt);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    while (cnt > 0 && size_t(n) >= iov->iov_len) {
      n -= iov->iov_len;
      iov++;
      cnt--;
    }
    if (cnt > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + n;
      iov->iov_len -= n;
    }
  }
  return true;
}

}  // namespace

RpcChannel::RpcChannel(std::string address, int timeout_ms, std::string counter_prefix, bool poll_replies)
    : address_(std::move(address)),
      timeout_ms_(timeout_ms),
      poll_replies_(poll_replies),
      wire_sent_(GetCounter(counter_prefix + ".wire_bytes_sent")),
      wire_received_(GetCounter(counter_prefix + ".wire_bytes_received")),
      rpcs_(GetCounter(counter_prefix + ".rpcs_sent")) {}

RpcChannel::~RpcChannel() {
  for (auto& fds : idle_)
    for (int fd : fds) ::close(fd);
}

Result<int> RpcChannel::Dial() {
  auto hp = SplitHostPort(address_);
  if (!hp) return Err(hp.error());
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(hp->first.c_str(), std::to_string(hp->second).c_str(), &hints, &res);
  if (rc != 0) return Err(Unavailable("resolve " + address_ + ": " + gai_strerror(rc)));
  int fd = ::socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    ::freeaddrinfo(res);
    return Err(Status::FromErrno(errno, "socket"));
  }
  timeval tv{timeout_ms_ / 1000, (timeout_ms_ % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  rc = ::connect(fd, res->ai_addr, res->ai_addrlen);
  int err = errno;
  ::freeaddrinfo(res);
  if (rc < 0) {
    ::close(fd);
    return Err(Unavailable("connect " + address_ + ": " + std::strerror(err)));
  }
  // The cluster-key hello goes out now, ahead of the first request; the
  // server's proof is read before that request's reply (TcpCall::Wait).
  if (!AuthEnabled()) {
    std::lock_guard lk(mu_);
    proof_due_.erase(fd);
    return fd;
  }
  ClientHello h = MakeClientHello();
  iovec iov{h.bytes.data(), h.bytes.size()};
  if (!WriteAll(fd, &iov, 1)) {
    ::close(fd);
    return Err(Unavailable("send to " + address_ + " failed"));
  }
  std::lock_guard lk(mu_);
  proof_due_[fd] = h.expect;
  return fd;
}

// Waiting for a reply asleep costs a wake-up when it arrives (30-75 µs of
// latency in these VMs, more than a 4 KiB read's own work); polling the
// socket for a short while first costs CPU instead. A channel polls only if
// made to (poll_replies: config client.reply_wait, net/reply_wait.h, which
// weighs the price of a poll's syscalls on this machine), only when this
// process has no other call waiting (queue depth 1: the latency is all
// there is), only briefly (long enough for a reply that took one disk
// read), and only while polls keep catching their reply (SpinPolicy).
static std::atomic<int> g_waiting{0};
static SpinPolicy g_spin;
constexpr auto kSpin = std::chrono::microseconds(250);

// True when the poll saw the reply (or the connection's end) arrive: the
// caller need not wait for readiness again.
static bool SpinForReply(int fd) {
  struct Waiting {
    Waiting() { g_waiting.fetch_add(1, std::memory_order_relaxed); }
    ~Waiting() { g_waiting.fetch_sub(1, std::memory_order_relaxed); }
  } me;
  if (g_waiting.load(std::memory_order_relaxed) > 1) return false;
  WaitHook* hook = ActiveWaitHook();  // its work ends the poll too: AwaitReadable runs it
  bool readable = false;
  g_spin.Poll(kSpin, [fd, hook, &readable] {
    char b;
    readable = ::recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) != -1 || errno != EAGAIN;  // data, EOF or error
    return readable || (hook && hook->Pending());
  });
  return readable;
}

// Waits up to timeout_ms for fd to be readable (or failed), running this
// thread's wait hook (wait_hook.h) whenever it has work meanwhile. False
// when the time ran out.
static bool AwaitReadable(int fd, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool hook_failed = false;
  for (;;) {
    WaitHook* hook = hook_failed ? nullptr : ActiveWaitHook();
    pollfd p[2] = {{fd, POLLIN, 0}, {hook ? hook->fd() : -1, POLLIN, 0}};
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const int r = ::poll(p, hook ? 2 : 1, int(std::max<int64_t>(0, left.count())));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 || p[0].revents) return true;  // a reply, or an error Wait will meet
    if (hook && (p[1].revents & ~POLLIN)) hook_failed = true;  // never spin on a broken fd
    if (hook && !hook_failed && (p[1].revents || hook->Pending())) {
      RunWaitHook(*hook);
      continue;
    }
    if (r == 0) return false;
  }
}

// Reads one reply off a connection, taking what has arrived with one recv
// into a read-ahead instead of one recv per part (proof, prefix, header,
// payload): a small reply costs one syscall. Reading ahead is safe because
// a connection carries one call at a time: whatever has arrived belongs to
// this reply. Parts bigger than the read-ahead are read in place.
class ReplyReader {
 public:
  explicit ReplyReader(int fd) : fd_(fd) {}
  // False on error or end of stream before len bytes (SO_RCVTIMEO included).
  bool Read(void* dst, size_t len) {
    auto* out = static_cast<char*>(dst);
    const size_t first = std::min(len, end_ - begin_);
    std::memcpy(out, buf_ + begin_, first);
    begin_ += first;
    out += first;
    len -= first;
    if (len == 0) return true;
    if (len >= kAhead) return ReadFull(fd_, out, len);
    while (end_ - begin_ < len) {  // empty here at first: begin_ == end_
      if (begin_ == end_) begin_ = end_ = 0;
      const ssize_t n = ::recv(fd_, buf_ + end_, kAhead - end_, 0);
      if (n > 0) {
        end_ += size_t(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        return false;
      }
    }
    std::memcpy(out, buf_ + begin_, len);
    begin_ += len;
    return true;
  }

 private:
  static constexpr size_t kAhead = 8 << 10;  // a 4 KiB read's reply and then some
  int fd_;
  char buf_[kAhead];
  size_t begin_ = 0, end_ = 0;  // unread bytes are [begin_, end_)
};

// An idle pooled connection has nothing to read; if it is readable, the
// server closed it (restarted, or dropped us) and it must not be reused:
// a request written into it would be lost and look like a failed call.
static bool PeerClosed(int fd) {
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  return ::poll(&p, 1, 0) != 0;
}

Result<int> RpcChannel::Checkout(int cpu) {
  for (;;) {
    int fd = -1;
    {
      std::lock_guard lk(mu_);
      if (size_t(cpu) >= idle_.size() || idle_[cpu].empty()) break;
      fd = idle_[cpu].back();
      idle_[cpu].pop_back();
    }
    if (!PeerClosed(fd)) return fd;
    ::close(fd);
  }
  return Dial();
}

std::optional<Proof> RpcChannel::TakeProofDue(int fd) {
  std::lock_guard lk(mu_);
  auto it = proof_due_.find(fd);
  if (it == proof_due_.end()) return std::nullopt;
  Proof p = it->second;
  proof_due_.erase(it);
  return p;
}

void RpcChannel::Checkin(int fd, int cpu) {
  std::lock_guard lk(mu_);
  if (size_t(cpu) >= idle_.size()) idle_.resize(size_t(cpu) + 1);
  idle_[cpu].push_back(fd);
}

// A call sent on one of the channel's connections, which it holds until the
// reply is read (then the connection goes back to the pool).
class TcpCall final : public CallState {
 public:
  TcpCall(RpcChannel* channel, int fd, int cpu, uint64_t id)
      : channel_(channel), fd_(fd), cpu_(cpu), id_(id) {}
  ~TcpCall() override {
    if (fd_ >= 0) {  // abandoned (hedged away): the connection goes
      (void)channel_->TakeProofDue(fd_);
      ::close(fd_);
    }
  }
  bool Ready(int timeout_ms) override;
  Result<RpcReply> Wait() override;

 private:
  // The first of Ready and Wait to be about to sleep polls for the reply
  // first, if the channel polls; later waits of this call do not poll
  // again. True once a poll has seen the reply arrive.
  bool SpinOnce() {
    if (!spun_ && channel_->poll_replies_) arrived_ = SpinForReply(fd_);
    spun_ = true;
    return arrived_;
  }

  RpcChannel* channel_;
  int fd_;
  int cpu_;  // the CPU the connection was dialled from (its pool)
  uint64_t id_;
  bool spun_ = false;     // SpinOnce has run
  bool arrived_ = false;  // and saw the reply arrive
};

PendingCall RpcChannel::Start(uint32_t method, const google::protobuf::Message& req,
                              std::string_view payload) {
  uint64_t id;
  {
    std::lock_guard lk(mu_);
    id = next_id_++;
  }
  pb::RpcHeader hdr;
  hdr.set_id(id);
  hdr.set_method(method);
  req.SerializeToString(hdr.mutable_body());
  std::string hdr_bytes = hdr.SerializeAsString();
  if (payload.size() > kMaxPayloadBytes) return PendingCall(InvalidArgument("payload too large"));
  rpcs_.Inc();  // counted before the bytes leave, so the peer's view includes this call
  // A pooled connection may have been closed by the server since its last
  // use; retry once on a fresh one before calling the server unavailable.
  const int cpu = std::max(0, sched_getcpu());  // -1 where it is not supported
  for (int attempt = 0; attempt < 2; attempt++) {
    auto fd = Checkout(cpu);
    if (!fd) return PendingCall(fd.error());
    uint8_t prefix[kPrefixBytes];
    EncodePrefix({uint32_t(hdr_bytes.size()), payload.size()}, prefix);
    iovec iov[3] = {{prefix, kPrefixBytes},
                    {hdr_bytes.data(), hdr_bytes.size()},
                    {const_cast<char*>(payload.data()), payload.size()}};
    if (WriteAll(*fd, iov, payload.empty() ? 2 : 3)) {
      wire_sent_.Add(kPrefixBytes + hdr_bytes.size() + payload.size());
      return PendingCall(std::make_unique<TcpCall>(this, *fd, cpu, id));
    }
    ::close(*fd);
  }
  return PendingCall(Unavailable("send to " + address_ + " failed"));
}

Result<RpcReply> PendingCall::Wait() {
  if (!send_status_.ok()) return Err(send_status_);
  if (!state_) return Err(Internal("Wait() called twice"));
  auto state = std::move(state_);
  return state->Wait();
}

bool TcpCall::Ready(int timeout_ms) {
  if (fd_ < 0) return true;
  // A caller about to sleep for the reply polls for it first, as Wait
  // does: the EC reader waits here (up to its hedge delay) before Wait, so
  // without this its reads always slept (cold QD1 native 7.4-7.9 K reads/s
  // vs 9.1 K with it; FUSE 5.7-5.8 K vs 7.2-7.3 K).
  if (timeout_ms > 0 && SpinOnce()) return true;
  return AwaitReadable(fd_, std::max(0, timeout_ms));
}

Result<RpcReply> TcpCall::Wait() {
  if (fd_ < 0) return Err(Internal("Wait() called twice"));
  const bool arrived = SpinOnce();
  int fd = fd_;
  fd_ = -1;
  auto fail = [&](const std::string& why) {
    ::close(fd);
    return Err(Unavailable(why + " from " + channel_->address_));
  };
  // With a wait hook the thread sleeps in poll, where the hook's fd can
  // wake it, rather than in recv (which times out on its own, SO_RCVTIMEO).
  if (!arrived && ActiveWaitHook() && !AwaitReadable(fd, channel_->timeout_ms_)) return fail("no reply");
  ReplyReader in(fd);
  if (auto due = channel_->TakeProofDue(fd)) {  // the first reply on a new connection
    uint8_t theirs[kProofBytes];
    if (!in.Read(theirs, sizeof theirs)) return fail("refused (wrong cluster key?)");
    if (!ProofEquals(*due, theirs)) return fail("a server without the cluster key answered");
  }
  uint8_t prefix[kPrefixBytes];
  if (!in.Read(prefix, kPrefixBytes)) return fail("no reply");
  auto p = DecodePrefix(prefix);
  if (!p) return fail("bad reply frame (" + p.error().message() + ")");
  std::string hdr_bytes(p->header_len, '\0');
  RpcReply reply;
  ResizeUninitialized(reply.payload, p->payload_len);  // read in full below, or the reply fails
  if (!in.Read(hdr_bytes.data(), hdr_bytes.size()) || !in.Read(reply.payload.data(), reply.payload.size()))
    return fail("truncated reply");
  channel_->wire_received_.Add(kPrefixBytes + p->header_len + p->payload_len);
  pb::RpcHeader hdr;
  if (!hdr.ParseFromString(hdr_bytes) || hdr.id() != id_) return fail("mismatched reply");
  channel_->Checkin(fd, cpu_);
  if (hdr.code() != 0) return Err(FromWire(hdr.code(), hdr.error()));
  reply.body = std::move(*hdr.mutable_body());
  return reply;
}

}  // namespace rustfs::net

#include "net/rpc_server.h"
#include "net/auth.h"
#include "net/wire_status.h"

#include <asio.hpp>
#include <asio/experimental/as_tuple.hpp>
#include <asio/experimental/awaitable_operators.hpp>

#include <atomic>
#include <cstring>
#include <optional>

#include "common/log.h"
#include "common/thread_affinity.h"
#include "common/uninit.h"

namespace rustfs::net {

using asio::ip::tcp;

// Coroutine completion that yields (error_code, result) instead of throwing.
constexpr auto kTuple = asio::experimental::as_tuple(asio::use_awaitable);
using namespace asio::experimental::awaitable_operators;

namespace {
thread_local const std::string* t_peer_ip = nullptr;  // set around each Dispatch
// What peers can make a server hold. Sizes a peer names are believed only
// as far as bytes arrive: a frame's buffers grow by kReadStep as it comes
// in, within kMaxFrameBytes (frame.h's limits) per connection and
// kMaxHeldBytes over all connections at once.
constexpr size_t kReadStep = 1 << 20;
constexpr uint64_t kMaxHeldBytes = 1ull << 30;
constexpr int kMaxConnections = 4096;
// A frame that has started must arrive whole within this (a peer that
// sends a prefix and stalls would otherwise pin its buffers forever).
constexpr auto kFrameTimeout = std::chrono::seconds(30);
// After a failed accept (EMFILE: out of descriptors), wait before the next
// instead of spinning on the same error.
constexpr auto kAcceptBackoff = std::chrono::milliseconds(100);
// A connection's read-ahead: one recv takes whatever has arrived (a whole
// request frame, usually) instead of one recv per part of a frame. Frames
// that fit are served from it; bigger ones go through ReadGrowing. Not
// counted in `held`: it is fixed per connection (64 MiB at kMaxConnections).
constexpr size_t kInBufBytes = 16 << 10;

struct InBuf {
  std::unique_ptr<char[]> data{new char[kInBufBytes]};
  size_t begin = 0, end = 0;  // unread bytes are [begin, end)
  size_t size() const { return end - begin; }
  const char* head() const { return data.get() + begin; }
  // Moves up to len unread bytes to dst; how many it moved.
  size_t Take(char* dst, size_t len) {
    const size_t n = std::min(len, size());
    std::memcpy(dst, head(), n);
    begin += n;
    return n;
  }
};
}  // namespace

struct RpcServer::Impl {
  std::string name;
  int threads;
  // One context shared by all threads, or one per thread (see Threading).
  std::vector<std::unique_ptr<asio::io_context>> ios;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards;
  size_t next_io = 0;  // where the next connection goes (acceptor's thread only)
  std::unique_ptr<tcp::acceptor> acceptor;
  std::unordered_map<uint32_t, Handler> handlers;
  std::vector<std::thread> workers;
  std::function<void()> thread_start;
  std::vector<int> thread_cpus;  // PinThreads; empty: none pinned
  // By CPU (kPerThread): the io contexts whose thread is pinned there, and
  // whose turn it is among them for the next connection arriving there.
  struct OnCpu {
    std::vector<size_t> ios;
    size_t next = 0;
  };
  std::unordered_map<int, OnCpu> ios_on_cpu;
  std::chrono::microseconds reply_delay{0};
  Counter& wire_sent;
  Counter& wire_received;
  Counter& requests;
  Counter& bad_frames;
  Counter& delayed;  // replies held back by SetReplyDelay (emulation)
  Counter& refused;  // connections closed for a limit: too many, too much held, too slow
  Counter& auth_refused;  // peers without the cluster key
  Counter& cpu_local;     // connections served on the CPU their packets arrive on
  std::atomic<int> connections{0};
  std::atomic<uint64_t> held{0};  // frame bytes held by every connection

  Impl(std::string n, int t, Threading threading)
      : name(std::move(n)),
        threads(t),
        wire_sent(GetCounter(name + ".wire_bytes_sent")),
        wire_received(GetCounter(name + ".wire_bytes_received")),
        requests(GetCounter(name + ".rpcs")),
        bad_frames(GetCounter(name + ".bad_frames")),
        delayed(GetCounter(name + ".emulated_reply_delays")),
        refused(GetCounter(name + ".connections_refused")),
        auth_refused(GetCounter(name + ".auth_refused")),
        cpu_local(GetCounter(name + ".connections_on_incoming_cpu")) {
    const int contexts = threading == Threading::kPerThread ? std::max(1, t) : 1;
    for (int i = 0; i < contexts; i++) {
      ios.push_back(std::make_unique<asio::io_context>(threading == Threading::kPerThread ? 1 : t));
      guards.push_back(asio::make_work_guard(*ios.back()));
    }
  }

  // Where a new connection is served (acceptor's thread only): on a thread
  // pinned to the CPU its packets arrive on, if any (PinThreads).
  asio::io_context& HomeOf(tcp::socket& sock) {
    int cpu = -1;
    socklen_t len = sizeof cpu;
    if (!ios_on_cpu.empty() &&
        ::getsockopt(sock.native_handle(), SOL_SOCKET, SO_INCOMING_CPU, &cpu, &len) == 0) {
      auto it = ios_on_cpu.find(cpu);
      if (it != ios_on_cpu.end()) {
        cpu_local.Inc();
        OnCpu& on = it->second;
        return *ios[on.ios[on.next++ % on.ios.size()]];
      }
    }
    return *ios[next_io++ % ios.size()];
  }

  asio::awaitable<void> Accept() {
    for (;;) {
      auto [ec, accepted] = co_await acceptor->async_accept(kTuple);
      if (ec) {
        if (ec == asio::error::operation_aborted) co_return;
        // e.g. EMFILE: keep serving the connections we have, retry later.
        asio::steady_timer t(acceptor->get_executor(), kAcceptBackoff);
        co_await t.async_wait(kTuple);
        continue;
      }
      if (connections.load() >= kMaxConnections) {
        refused.Inc();
        continue;  // `accepted` closes as it goes out of scope
      }
      // Accepted on the acceptor's context; handed to its home's (the
      // error_code forms: an exception here would end the accept loop).
      asio::io_context& home = HomeOf(accepted);
      asio::error_code handover, ignored;
      const auto protocol = accepted.local_endpoint(ignored).protocol();
      const int fd = accepted.release(handover);
      if (handover) continue;
      tcp::socket sock(home);
      if (sock.assign(protocol, fd, handover); handover) {
        ::close(fd);
        continue;
      }
      sock.set_option(tcp::no_delay(true), ignored);
      connections++;
      asio::co_spawn(home, Serve(std::move(sock)), [this](std::exception_ptr) { connections--; });
    }
  }

  // Runs one request; never throws.
  void Dispatch(const pb::RpcHeader& req, std::string& payload, pb::RpcHeader& rep_hdr,
                RpcReply& reply) {
    rep_hdr.set_id(req.id());
    rep_hdr.set_method(req.method());
    Status st;
    auto it = handlers.find(req.method());
    if (it == handlers.end()) {
      st = InvalidArgument("unknown method " + std::to_string(req.method()));
    } else {
      try {
        st = it->second(req.body(), payload, reply);
      } catch (const std::exception& e) {
        st = Internal(std::string("handler threw: ") + e.what());
      }
    }
    if (!st.ok()) {
      reply = {};
      rep_hdr.set_code(ToWire(st.code()));
      rep_hdr.set_error(st.message());
    } else {
      rep_hdr.set_body(std::move(reply.body));
    }
  }

  // A frame that did not arrive whole within kFrameTimeout: counted and
  // logged; false, for the caller to close the connection.
  bool TooSlow() {
    refused.Inc();
    LOG_WARN("{}: closing a connection: a frame did not arrive within {} s", name,
             std::chrono::duration_cast<std::chrono::seconds>(kFrameTimeout).count());
    return false;
  }

  // Reads into `in` until it holds `need` (<= kInBufBytes) unread bytes,
  // each read taking whatever has arrived; within `deadline` if it has one.
  // (asio's read, not our own recv plus a readiness wait: the read is
  // tried at once, and a readiness event that another thread's epoll takes
  // between our EAGAIN and the wait would be lost to the wait.)
  // False: the connection must close (peer gone, or too slow).
  asio::awaitable<bool> Fill(tcp::socket& sock, InBuf& in, size_t need,
                             std::optional<std::chrono::steady_clock::time_point> deadline) {
    if (in.size() >= need) co_return true;
    if (in.size() == 0) in.begin = in.end = 0;
    if (in.begin + need > kInBufBytes) {  // make room: unread bytes to the front
      std::memmove(in.data.get(), in.head(), in.size());
      in.end = in.size();
      in.begin = 0;
    }
    while (in.size() < need) {
      auto room = asio::buffer(in.data.get() + in.end, kInBufBytes - in.end);
      asio::error_code ec;
      size_t n = 0;
      if (!deadline) {  // between frames: a connection may idle for ever
        std::tie(ec, n) = co_await sock.async_read_some(room, kTuple);
      } else {
        asio::steady_timer t(sock.get_executor(), *deadline);
        auto r = co_await (sock.async_read_some(room, kTuple) || t.async_wait(kTuple));
        if (r.index() == 1) co_return TooSlow();
        std::tie(ec, n) = std::get<0>(r);
      }
      in.end += n;
      if (ec && in.size() < need) co_return false;  // peer closed, or an error
    }
    co_return true;
  }

  // Reads a `len`-byte part of a frame too big for the read-ahead into
  // `buf` (grown by kReadStep as bytes arrive), starting with what `in`
  // holds, within `deadline`; what it allocates is counted in `held` (and
  // in `mine`, this connection's share). False: the connection must close
  // (peer gone, too slow, or the server holds too much already).
  asio::awaitable<bool> ReadGrowing(tcp::socket& sock, InBuf& in, std::string& buf, uint64_t len,
                                    std::chrono::steady_clock::time_point deadline, uint64_t& mine) {
    buf.clear();
    while (buf.size() < len) {
      const size_t have = buf.size(), step = size_t(std::min<uint64_t>(len - have, kReadStep));
      if (held.fetch_add(step) + step > kMaxHeldBytes) {
        held.fetch_sub(step);
        refused.Inc();
        LOG_WARN("{}: closing a connection: frames in flight hold more than {} bytes", name, kMaxHeldBytes);
        co_return false;
      }
      mine += step;
      ResizeUninitialized(buf, have + step);  // read in full below, or the connection closes
      size_t got = in.Take(buf.data() + have, step);
      asio::error_code ec;
      while (got < step && !ec) got += sock.read_some(asio::buffer(buf.data() + have + got, step - got), ec);
      if (got == step) continue;
      if (ec != asio::error::would_block && ec != asio::error::try_again) co_return false;
      asio::steady_timer t(sock.get_executor(), deadline);
      auto r = co_await (asio::async_read(sock, asio::buffer(buf.data() + have + got, step - got), kTuple) ||
                         t.async_wait(kTuple));
      if (r.index() == 1) co_return TooSlow();
      if (std::get<0>(std::get<0>(r))) co_return false;  // peer closed
    }
    co_return true;
  }

  // Reads one `len`-byte part of a frame into `buf`: from the read-ahead
  // when it fits there, else through ReadGrowing.
  asio::awaitable<bool> ReadPart(tcp::socket& sock, InBuf& in, std::string& buf, uint64_t len,
                                 std::chrono::steady_clock::time_point deadline, uint64_t& mine) {
    if (len > kInBufBytes) {
      // Not `co_return co_await ...`: GCC 12 miscompiles it (a crash in the callee).
      const bool ok = co_await ReadGrowing(sock, in, buf, len, deadline, mine);
      co_return ok;
    }
    if (!co_await Fill(sock, in, size_t(len), deadline)) co_return false;
    buf.assign(in.head(), size_t(len));
    in.begin += size_t(len);
    co_return true;
  }

  // Sends `out` whole: at once when the socket takes it (the usual case: a
  // reply is small next to the socket's buffer), else waiting for room.
  // False: the connection must close.
  template <class Buffers>
  asio::awaitable<bool> SendAll(tcp::socket& sock, const Buffers& out) {
    const size_t total = asio::buffer_size(out);
    asio::error_code ec;
    size_t sent = sock.write_some(out, ec);
    if (sent < total) {
      if (ec && ec != asio::error::would_block && ec != asio::error::try_again) co_return false;
      std::vector<asio::const_buffer> rest;  // what write_some left, in order
      size_t skip = sent;
      for (const auto& b : out) {
        if (skip >= b.size()) {
          skip -= b.size();
          continue;
        }
        rest.push_back(asio::buffer(static_cast<const char*>(b.data()) + skip, b.size() - skip));
        skip = 0;
      }
      auto [wec, n] = co_await asio::async_write(sock, rest, kTuple);
      if (wec) co_return false;
    }
    wire_sent.Add(total);
    co_return true;
  }

  // The server's half of the cluster-key handshake (auth.h): checks the
  // client's hello and gives the proof it is owed, sent ahead of the first
  // reply (not at once: a client polling for that reply must not mistake
  // the proof for it). nullopt: close.
  asio::awaitable<std::optional<Proof>> Authenticate(tcp::socket& sock, InBuf& in) {
    if (!co_await Fill(sock, in, kHelloBytes, std::chrono::steady_clock::now() + kFrameTimeout))
      co_return std::nullopt;
    auto proof = CheckClientHello(reinterpret_cast<const uint8_t*>(in.head()));
    in.begin += kHelloBytes;
    if (!proof) {
      auth_refused.Inc();
      LOG_WARN("{}: refused a connection: {}", name, proof.error().message());
      co_return std::nullopt;
    }
    co_return *proof;
  }

  // One connection's frames, in order. A request is usually read with one
  // recv (into the read-ahead) and answered with one sendmsg, and the
  // thread goes back to epoll only when the socket is drained: each extra
  // syscall or trip through the io_context is paid by every read at QD1.
  asio::awaitable<void> Serve(tcp::socket sock) {
    InBuf in;
    std::string hdr_bytes, payload, rep_hdr_bytes;
    uint64_t mine = 0;  // this connection's bytes in `held`
    struct Release {    // gives them back however the coroutine ends
      std::atomic<uint64_t>& held;
      uint64_t& mine;
      ~Release() { held.fetch_sub(mine); }
    } release{held, mine};
    asio::error_code nb_ec, ep_ec;
    const auto ep = sock.remote_endpoint(ep_ec);
    const std::string peer_ip = ep_ec ? std::string() : ep.address().to_string();
    sock.non_blocking(true, nb_ec);  // reads and writes take what is there, never block the thread
    std::optional<Proof> owed;  // our proof, sent with the first reply
    if (AuthEnabled()) {
      owed = co_await Authenticate(sock, in);
      if (!owed) co_return;
    }
    for (;;) {
      held.fetch_sub(mine);  // the previous frame's buffers are done with
      mine = 0;
      // A big frame's buffers are not kept for the next (small) ones.
      if (payload.capacity() > 4 * kReadStep) std::string().swap(payload);
      if (hdr_bytes.capacity() > 4 * kReadStep) std::string().swap(hdr_bytes);
      // Between frames a connection may idle for ever; once a frame has
      // started, it must arrive within kFrameTimeout.
      std::optional<std::chrono::steady_clock::time_point> prefix_deadline;
      if (in.size() > 0) prefix_deadline = std::chrono::steady_clock::now() + kFrameTimeout;
      if (!co_await Fill(sock, in, kPrefixBytes, prefix_deadline)) co_return;
      auto p = DecodePrefix(reinterpret_cast<const uint8_t*>(in.head()));
      if (!p) {
        bad_frames.Inc();
        LOG_WARN("{}: closing connection: {}", name, p.error().ToString());
        co_return;
      }
      in.begin += kPrefixBytes;
      const auto deadline = std::chrono::steady_clock::now() + kFrameTimeout;
      if (!co_await ReadPart(sock, in, hdr_bytes, p->header_len, deadline, mine) ||
          !co_await ReadPart(sock, in, payload, p->payload_len, deadline, mine))
        co_return;
      wire_received.Add(kPrefixBytes + p->header_len + p->payload_len);
      pb::RpcHeader req;
      if (!req.ParseFromString(hdr_bytes)) {
        bad_frames.Inc();
        LOG_WARN("{}: closing connection: unparsable RPC header", name);
        co_return;
      }
      requests.Inc();
      pb::RpcHeader rep_hdr;
      RpcReply reply;
      t_peer_ip = &peer_ip;
      Dispatch(req, payload, rep_hdr, reply);
      t_peer_ip = nullptr;
      if (reply_delay.count() > 0) {
        asio::steady_timer t(sock.get_executor(), reply_delay);
        co_await t.async_wait(kTuple);
        delayed.Inc();
      }
      rep_hdr.SerializeToString(&rep_hdr_bytes);
      uint8_t out_prefix[kPrefixBytes];
      EncodePrefix({uint32_t(rep_hdr_bytes.size()), reply.payload.size()}, out_prefix);
      Proof proof{};
      const size_t proof_len = owed ? kProofBytes : 0;
      if (owed) proof = *owed;
      owed.reset();
      std::array<asio::const_buffer, 4> out{asio::buffer(proof.data(), proof_len), asio::buffer(out_prefix),
                                            asio::buffer(rep_hdr_bytes), asio::buffer(reply.payload)};
      if (!co_await SendAll(sock, out)) co_return;
    }
  }
};

RpcServer::RpcServer(std::string name, int threads, Threading threading)
    : impl_(std::make_unique<Impl>(std::move(name), threads, threading)) {
  Handle(pb::M_STATS, [](const std::string&, std::string&, RpcReply& reply) {
    pb::StatsReply r;
    for (auto& [k, v] : SnapshotCounters()) (*r.mutable_counters())[k] = v;
    r.SerializeToString(&reply.body);
    return Status::Ok();
  });
}

RpcServer::~RpcServer() { Stop(); }

void RpcServer::Handle(uint32_t method, Handler h) { impl_->handlers[method] = std::move(h); }

void RpcServer::OnThreadStart(std::function<void()> fn) { impl_->thread_start = std::move(fn); }

void RpcServer::PinThreads(std::vector<int> cpus) { impl_->thread_cpus = std::move(cpus); }

void RpcServer::SetReplyDelay(std::chrono::microseconds delay) { impl_->reply_delay = delay; }

Status RpcServer::Start(const std::string& address) {
  auto hp = SplitHostPort(address);
  if (!hp) return hp.error();
  try {
    tcp::resolver res(*impl_->ios[0]);
    auto eps = res.resolve(hp->first, std::to_string(hp->second));
    tcp::endpoint ep = *eps.begin();
    impl_->acceptor = std::make_unique<tcp::acceptor>(*impl_->ios[0]);
    impl_->acceptor->open(ep.protocol());
    impl_->acceptor->set_option(tcp::acceptor::reuse_address(true));
    impl_->acceptor->bind(ep);
    impl_->acceptor->listen(1024);
  } catch (const std::system_error& e) {
    return Status::FromErrno(e.code().value(), "listen on " + address);
  }
  const std::vector<int>& cpus = impl_->thread_cpus;
  auto cpu_of = [&](int i) { return cpus.empty() ? -1 : cpus[size_t(i) % cpus.size()]; };
  if (impl_->ios.size() > 1) {  // kPerThread: thread i runs ios[i]
    for (int i = 0; i < impl_->threads; i++)
      if (cpu_of(i) >= 0) impl_->ios_on_cpu[cpu_of(i)].ios.push_back(size_t(i));
  }
  asio::co_spawn(*impl_->ios[0], impl_->Accept(), asio::detached);
  for (int i = 0; i < impl_->threads; i++)
    impl_->workers.emplace_back([this, cpu = cpu_of(i), io = impl_->ios[i % impl_->ios.size()].get()] {
      if (impl_->thread_start) impl_->thread_start();
      if (Status st = PinCurrentThread(cpu); !st.ok())
        LOG_WARN("{}: I/O thread not pinned to CPU {}: {}", impl_->name, cpu, st.ToString());
      io->run();
    });
  return Status::Ok();
}

void RpcServer::Stop() {
  if (!impl_) return;
  for (auto& io : impl_->ios) io->stop();
  for (auto& t : impl_->workers)
    if (t.joinable()) t.join();
  impl_->workers.clear();
}

uint16_t RpcServer::port() const { return impl_->acceptor->local_endpoint().port(); }

const std::string& CurrentPeerIp() {
  static const std::string kNone;
  return t_peer_ip ? *t_peer_ip : kNone;
}

Result<std::pair<std::string, uint16_t>> SplitHostPort(const std::string& address) {
  std::string host;
  std::string port;
  if (!address.empty() && address[0] == '[') {
    auto close = address.find(']');
    if (close == std::string::npos || close + 1 >= address.size() || address[close + 1] != ':')
      return Err(InvalidArgument("bad address '" + address + "', want [v6]:port"));
    host = address.substr(1, close - 1);
    port = address.substr(close + 2);
  } else {
    auto colon = address.rfind(':');
    if (colon == std::string::npos || colon == 0)
      return Err(InvalidArgument("bad address '" + address + "', want host:port"));
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
  }
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
    return Err(InvalidArgument("bad port in address '" + address + "'"));
  unsigned long v = std::stoul(port);
  if (v > 65535) return Err(InvalidArgument("port out of range in '" + address + "'"));
  return std::make_pair(host, uint16_t(v));
}

}  // namespace rustfs::net

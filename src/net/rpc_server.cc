#include "net/rpc_server.h"

#include <asio.hpp>
#include <asio/experimental/as_tuple.hpp>

#include "common/log.h"

namespace rustfs::net {

using asio::ip::tcp;

// Coroutine completion that yields (error_code, result) instead of throwing.
constexpr auto kTuple = asio::experimental::as_tuple(asio::use_awaitable);

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
  std::chrono::microseconds reply_delay{0};
  Counter& wire_sent;
  Counter& wire_received;
  Counter& requests;
  Counter& bad_frames;
  Counter& delayed;  // replies held back by SetReplyDelay (emulation)

  Impl(std::string n, int t, Threading threading)
      : name(std::move(n)),
        threads(t),
        wire_sent(GetCounter(name + ".wire_bytes_sent")),
        wire_received(GetCounter(name + ".wire_bytes_received")),
        requests(GetCounter(name + ".rpcs")),
        bad_frames(GetCounter(name + ".bad_frames")),
        delayed(GetCounter(name + ".emulated_reply_delays")) {
    const int contexts = threading == Threading::kPerThread ? std::max(1, t) : 1;
    for (int i = 0; i < contexts; i++) {
      ios.push_back(std::make_unique<asio::io_context>(threading == Threading::kPerThread ? 1 : t));
      guards.push_back(asio::make_work_guard(*ios.back()));
    }
  }

  asio::awaitable<void> Accept() {
    for (;;) {
      asio::io_context& home = *ios[next_io++ % ios.size()];
      auto [ec, sock] = co_await acceptor->async_accept(home, kTuple);
      if (ec) {
        if (ec == asio::error::operation_aborted) co_return;
        continue;  // e.g. EMFILE: keep serving the connections we have
      }
      sock.set_option(tcp::no_delay(true));
      asio::co_spawn(home, Serve(std::move(sock)), asio::detached);
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

  asio::awaitable<void> Serve(tcp::socket sock) {
    uint8_t prefix[kPrefixBytes];
    std::string hdr_bytes, payload, rep_hdr_bytes;
    for (;;) {
      auto [ec, n] = co_await asio::async_read(sock, asio::buffer(prefix),
                                               kTuple);
      if (ec) co_return;  // peer closed
      auto p = DecodePrefix(prefix);
      if (!p) {
        bad_frames.Inc();
        LOG_WARN("{}: closing connection: {}", name, p.error().ToString());
        co_return;
      }
      hdr_bytes.resize(p->header_len);
      payload.resize(p->payload_len);
      std::array<asio::mutable_buffer, 2> in{asio::buffer(hdr_bytes), asio::buffer(payload)};
      std::tie(ec, n) = co_await asio::async_read(sock, in, kTuple);
      if (ec) co_return;
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
      Dispatch(req, payload, rep_hdr, reply);
      if (reply_delay.count() > 0) {
        asio::steady_timer t(sock.get_executor(), reply_delay);
        co_await t.async_wait(kTuple);
        delayed.Inc();
      }
      rep_hdr.SerializeToString(&rep_hdr_bytes);
      uint8_t out_prefix[kPrefixBytes];
      EncodePrefix({uint32_t(rep_hdr_bytes.size()), reply.payload.size()}, out_prefix);
      std::array<asio::const_buffer, 3> out{asio::buffer(out_prefix), asio::buffer(rep_hdr_bytes),
                                            asio::buffer(reply.payload)};
      std::tie(ec, n) = co_await asio::async_write(sock, out, kTuple);
      if (ec) co_return;
      wire_sent.Add(n);
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
  asio::co_spawn(*impl_->ios[0], impl_->Accept(), asio::detached);
  for (int i = 0; i < impl_->threads; i++)
    impl_->workers.emplace_back([this, io = impl_->ios[i % impl_->ios.size()].get()] {
      if (impl_->thread_start) impl_->thread_start();
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

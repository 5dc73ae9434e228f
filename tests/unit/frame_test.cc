// Frame prefix encoding and limits, address parsing, and a real loopback
// RpcServer + RpcChannel: echo of payloads, error propagation, and that a
// malformed frame closes only its own connection.
#include "net/frame.h"

#include <arpa/inet.h>
#include <sched.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/metrics.h"
#include "common/thread_affinity.h"
#include "net/rpc_channel.h"
#include "net/rpc_server.h"
#include "rustfs.pb.h"

namespace rustfs::net {
namespace {

void PutLe32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = uint8_t(v >> (8 * i));
}
void PutLe64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = uint8_t(v >> (8 * i));
}
std::vector<uint8_t> RawPrefix(uint32_t magic, uint32_t header_len, uint64_t payload_len) {
  std::vector<uint8_t> b(kPrefixBytes);
  PutLe32(b.data(), magic);
  PutLe32(b.data() + 4, header_len);
  PutLe64(b.data() + 8, payload_len);
  return b;
}

TEST(FrameTest, PrefixRoundTrip) {
  const FramePrefix cases[] = {{1, 0},
                               {5, 1},
                               {12345, 1 << 20},
                               {kMaxHeaderBytes, 0},
                               {1, kMaxPayloadBytes},
                               {kMaxHeaderBytes, kMaxPayloadBytes}};
  for (const auto& c : cases) {
    uint8_t buf[kPrefixBytes];
    EncodePrefix(c, buf);
    // The documented wire layout: little-endian magic, header_len, payload_len.
    EXPECT_EQ(std::vector<uint8_t>(buf, buf + kPrefixBytes),
              RawPrefix(kFrameMagic, c.header_len, c.payload_len));
    EXPECT_EQ(std::string(reinterpret_cast<char*>(buf), 4), "RFS1");
    auto d = DecodePrefix(buf);
    ASSERT_TRUE(d.has_value()) << d.error().ToString();
    EXPECT_EQ(d->header_len, c.header_len);
    EXPECT_EQ(d->payload_len, c.payload_len);
  }
}

TEST(FrameTest, PrefixRefusals) {
  auto bad = [](std::vector<uint8_t> b) {
    auto d = DecodePrefix(b.data());
    return !d.has_value() && d.error().code() == Code::kInvalidArgument;
  };
  EXPECT_TRUE(bad(RawPrefix(0x31534653, 10, 0)));  // "SFS1"
  EXPECT_TRUE(bad(RawPrefix(0, 10, 0)));
  EXPECT_TRUE(bad(RawPrefix(0x52465331, 10, 0)));  // byte-swapped magic
  EXPECT_TRUE(bad(RawPrefix(kFrameMagic, 0, 0)));
  EXPECT_TRUE(bad(RawPrefix(kFrameMagic, 0, 100)));
  EXPECT_TRUE(bad(RawPrefix(kFrameMagic, kMaxHeaderBytes + 1, 0)));
  EXPECT_TRUE(bad(RawPrefix(kFrameMagic, 0xFFFFFFFFu, 0)));
  EXPECT_TRUE(bad(RawPrefix(kFrameMagic, 10, kMaxPayloadBytes + 1)));
  EXPECT_TRUE(bad(RawPrefix(kFrameMagic, 10, ~uint64_t{0})));
  EXPECT_FALSE(bad(RawPrefix(kFrameMagic, kMaxHeaderBytes, kMaxPayloadBytes)));
}

TEST(FrameTest, SplitHostPort) {
  struct Good {
    const char* in;
    const char* host;
    uint16_t port;
  };
  for (const Good& g : {Good{"127.0.0.1:80", "127.0.0.1", 80}, Good{"localhost:0", "localhost", 0},
                        Good{"host.example.com:65535", "host.example.com", 65535},
                        Good{"10.0.0.1:00080", "10.0.0.1", 80}, Good{"[::1]:9000", "::1", 9000},
                        Good{"[fe80::1:2]:1", "fe80::1:2", 1}}) {
    auto r = SplitHostPort(g.in);
    ASSERT_TRUE(r.has_value()) << g.in << ": " << r.error().ToString();
    EXPECT_EQ(r->first, g.host) << g.in;
    EXPECT_EQ(r->second, g.port) << g.in;
  }
  for (const char* b : {"", "host", ":80", "host:", "host:abc", "host:8o", "host:65536",
                        "host:99999", "host:123456", "host:-1", "host:+80", "host: 80", "[::1]",
                        "[::1]9000", "[::1]:", "[::1", "[::1]:x"}) {
    auto r = SplitHostPort(b);
    EXPECT_FALSE(r.has_value()) << "'" << b << "' accepted";
    if (!r) {
      EXPECT_EQ(r.error().code(), Code::kInvalidArgument) << b;
    }
  }
}

constexpr uint32_t kEcho = 1000;
constexpr uint32_t kFail = 1001;
constexpr uint32_t kThrow = 1002;

class RpcLoopbackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<RpcServer>("test", 2);
    server_->Handle(kEcho, [this](const std::string& body, std::string& payload, RpcReply& reply) {
      calls_++;
      reply.body = body;
      reply.payload = std::move(payload);
      return Status::Ok();
    });
    server_->Handle(kFail, [](const std::string&, std::string&, RpcReply& reply) {
      reply.body = "ignored";
      reply.payload = "ignored too";
      return Status(Code::kNoSpace, "disk full on purpose");
    });
    server_->Handle(kThrow, [](const std::string&, std::string&, RpcReply&) -> Status {
      throw std::runtime_error("boom");
    });
    Status st = server_->Start("127.0.0.1:0");
    ASSERT_TRUE(st.ok()) << st.ToString();
    ASSERT_NE(server_->port(), 0);
    addr_ = "127.0.0.1:" + std::to_string(server_->port());
    chan_ = std::make_unique<RpcChannel>(addr_, 5000, "testclient");
  }
  void TearDown() override {
    chan_.reset();
    server_.reset();
  }

  // Echoes `payload` with a LookupReq body and checks both come back.
  void ExpectEcho(const std::string& payload, const std::string& name) {
    pb::LookupReq req;
    req.set_parent(77);
    req.set_name(name);
    auto r = chan_->Call(kEcho, req, payload);
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    ASSERT_EQ(r->payload.size(), payload.size());
    EXPECT_TRUE(r->payload == payload);
    pb::LookupReq back;
    ASSERT_TRUE(back.ParseFromString(r->body));
    EXPECT_EQ(back.parent(), 77u);
    EXPECT_EQ(back.name(), name);
  }

  // A raw TCP connection to the server with a receive timeout (so a server
  // that wrongly keeps the connection open fails the test instead of hanging).
  int RawConnect() {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_GE(fd, 0);
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(server_->port());
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0) << strerror(errno);
    return fd;
  }
  // Sends `bytes` and expects the server to close the connection.
  void ExpectServerCloses(const std::vector<uint8_t>& bytes) {
    int fd = RawConnect();
    ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), ssize_t(bytes.size()));
    char buf[64];
    ssize_t n = ::read(fd, buf, sizeof buf);
    int err = errno;
    ::close(fd);
    EXPECT_EQ(n, 0) << "expected EOF, got " << n << (n < 0 ? std::string(" ") + strerror(err) : "");
  }

  std::unique_ptr<RpcServer> server_;
  std::unique_ptr<RpcChannel> chan_;
  std::string addr_;
  std::atomic<int> calls_{0};
};

TEST_F(RpcLoopbackTest, EchoPayloads) {
  std::mt19937_64 rng(5);
  // Sizes on each side of the client's and the server's read-ahead (8 and
  // 16 KiB), where a reply or a request stops fitting in one read.
  for (size_t n : {size_t{0}, size_t{1}, size_t{1000}, size_t{8192} - 40, size_t{8192}, size_t{8193},
                   size_t{16384} - 40, size_t{16384}, size_t{16385}, size_t{1} << 20, (size_t{1} << 20) + 3}) {
    std::string p(n, '\0');
    for (auto& c : p) c = char(rng());
    ExpectEcho(p, "n" + std::to_string(n));
    if (HasFatalFailure()) return;
  }
  // Empty body too.
  auto r = chan_->Call(kEcho, pb::Empty(), "xyz");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->body, "");
  EXPECT_EQ(r->payload, "xyz");
  EXPECT_EQ(calls_.load(), 12);
}

// Frames sent back to back on one connection and cut into pieces of any
// size (one byte, a few, across frame boundaries, with pauses between
// some): the server must answer each, in order, byte for byte. Sizes
// straddle its 16 KiB read-ahead, so small frames come from it, big ones
// start in it and end through the growing path.
TEST_F(RpcLoopbackTest, FramesInAnyPiecesAndBackToBackGetTheirReplies) {
  std::mt19937_64 rng(11);
  const std::vector<size_t> sizes = {0, 1, 40, 4096, 16384 - 60, 16384, 16385, 40000, 3, (1 << 20) + 7, 5, 0};
  std::vector<uint8_t> stream;
  std::vector<std::string> payloads;
  for (size_t i = 0; i < sizes.size(); i++) {
    pb::RpcHeader h;
    h.set_id(1000 + i);
    h.set_method(kEcho);
    h.set_body("b" + std::to_string(i));
    const std::string hb = h.SerializeAsString();
    std::string p(sizes[i], '\0');
    for (auto& c : p) c = char(rng());
    std::vector<uint8_t> f = RawPrefix(kFrameMagic, uint32_t(hb.size()), p.size());
    stream.insert(stream.end(), f.begin(), f.end());
    stream.insert(stream.end(), hb.begin(), hb.end());
    stream.insert(stream.end(), p.begin(), p.end());
    payloads.push_back(std::move(p));
  }
  int fd = RawConnect();
  // The replies are read by another thread while the pieces go out, so
  // neither side's socket buffer can fill and stall the other.
  std::vector<std::string> bodies, got_payloads;
  std::vector<uint64_t> ids;
  std::thread reader([&] {
    auto read_full = [&](void* dst, size_t len) {
      for (size_t got = 0; got < len;) {
        ssize_t n = ::read(fd, static_cast<char*>(dst) + got, len - got);
        if (n <= 0) return false;
        got += size_t(n);
      }
      return true;
    };
    for (size_t i = 0; i < sizes.size(); i++) {
      uint8_t prefix[kPrefixBytes];
      if (!read_full(prefix, kPrefixBytes)) return;
      auto p = DecodePrefix(prefix);
      if (!p) return;
      std::string hdr(p->header_len, '\0'), payload(p->payload_len, '\0');
      if (!read_full(hdr.data(), hdr.size()) || !read_full(payload.data(), payload.size())) return;
      pb::RpcHeader rh;
      if (!rh.ParseFromString(hdr)) return;
      ids.push_back(rh.id());
      bodies.push_back(rh.body());
      got_payloads.push_back(std::move(payload));
    }
  });
  size_t off = 0;
  while (off < stream.size()) {
    const int kind = int(rng() % 4);
    size_t n = kind == 0 ? 1 : kind == 1 ? 1 + rng() % 64 : 1 + rng() % 70000;
    n = std::min(n, stream.size() - off);
    ASSERT_EQ(::write(fd, stream.data() + off, n), ssize_t(n));
    off += n;
    if (rng() % 8 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  reader.join();
  ::close(fd);
  ASSERT_EQ(ids.size(), sizes.size());
  for (size_t i = 0; i < sizes.size(); i++) {
    EXPECT_EQ(ids[i], 1000 + i);
    EXPECT_EQ(bodies[i], "b" + std::to_string(i));
    EXPECT_TRUE(got_payloads[i] == payloads[i]) << "frame " << i << " (" << sizes[i] << " bytes)";
  }
  EXPECT_EQ(calls_.load(), int(sizes.size()));
}

TEST_F(RpcLoopbackTest, ManyCallsInFlight) {
  // Start every call before waiting on any: each takes its own connection.
  std::vector<PendingCall> calls;
  std::vector<std::string> payloads;
  for (int i = 0; i < 16; i++) {
    payloads.push_back(std::string(1000 * i + 1, char('a' + i)));
    pb::LookupReq req;
    req.set_parent(i);
    calls.push_back(chan_->Start(kEcho, req, payloads.back()));
  }
  for (int i = 15; i >= 0; i--) {
    auto r = calls[i].Wait();
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    EXPECT_EQ(r->payload, payloads[i]);
    pb::LookupReq back;
    ASSERT_TRUE(back.ParseFromString(r->body));
    EXPECT_EQ(back.parent(), uint64_t(i));
  }
  // Waiting twice is an error, not a hang.
  EXPECT_EQ(calls[0].Wait().error().code(), Code::kInternal);
  // The pooled connections are reused afterwards.
  for (int i = 0; i < 20; i++) {
    ExpectEcho("again", "x");
    if (HasFatalFailure()) return;
  }
}

TEST_F(RpcLoopbackTest, HandlerErrorArrivesAsStatus) {
  auto r = chan_->Call(kFail, pb::Empty(), "payload");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kNoSpace);
  EXPECT_EQ(r.error().message(), "disk full on purpose");
  auto t = chan_->Call(kThrow, pb::Empty());
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().code(), Code::kInternal);
  EXPECT_NE(t.error().message().find("boom"), std::string::npos);
  // The connection stays usable after an error reply.
  ExpectEcho("still fine", "ok");
}

TEST_F(RpcLoopbackTest, UnknownMethodIsInvalidArgument) {
  auto r = chan_->Call(4321, pb::Empty());
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
  EXPECT_NE(r.error().message().find("4321"), std::string::npos);
  ExpectEcho("after unknown", "ok");
}

TEST_F(RpcLoopbackTest, StatsIsBuiltIn) {
  ExpectEcho("count me", "s");
  auto r = chan_->CallTyped<pb::StatsReply>(pb::M_STATS, pb::Empty());
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  const auto& c = r->counters();
  ASSERT_TRUE(c.contains("test.rpcs"));
  EXPECT_GE(c.at("test.rpcs"), 1u);
  ASSERT_TRUE(c.contains("test.wire_bytes_received"));
  EXPECT_GT(c.at("test.wire_bytes_received"), 0u);
  ASSERT_TRUE(c.contains("testclient.rpcs_sent"));
  EXPECT_GE(c.at("testclient.rpcs_sent"), 2u);
}

TEST_F(RpcLoopbackTest, BadMagicClosesOnlyThatConnection) {
  ExpectEcho("warm", "w");  // the channel holds a pooled connection now
  Counter& bad = GetCounter("test.bad_frames");
  uint64_t before = bad.Get();
  std::vector<uint8_t> garbage = {'G', 'E', 'T', ' ', '/', ' ', 'H', 'T',
                                  'T', 'P', '/', '1', '.', '1', '\r', '\n'};
  ExpectServerCloses(garbage);
  EXPECT_EQ(bad.Get(), before + 1);
  ExpectEcho("after garbage", "g");
  ExpectEcho(std::string(1 << 20, 'z'), "big");
}

TEST_F(RpcLoopbackTest, HugeHeaderLengthClosesConnection) {
  ExpectEcho("warm", "w");
  Counter& bad = GetCounter("test.bad_frames");
  uint64_t before = bad.Get();
  ExpectServerCloses(RawPrefix(kFrameMagic, 0xFFFFFFFFu, 0));
  ExpectServerCloses(RawPrefix(kFrameMagic, 0, 0));
  ExpectServerCloses(RawPrefix(kFrameMagic, 8, kMaxPayloadBytes + 1));
  EXPECT_EQ(bad.Get(), before + 3);
  ExpectEcho("after huge header", "h");
}

TEST_F(RpcLoopbackTest, UnparsableHeaderClosesConnection) {
  Counter& bad = GetCounter("test.bad_frames");
  uint64_t before = bad.Get();
  std::vector<uint8_t> f = RawPrefix(kFrameMagic, 4, 0);
  for (int i = 0; i < 4; i++) f.push_back(0xFF);  // not a valid protobuf
  ExpectServerCloses(f);
  EXPECT_EQ(bad.Get(), before + 1);
  ExpectEcho("after bad header", "b");
}

TEST_F(RpcLoopbackTest, RawValidFrameGetsReply) {
  // A hand-built frame, to pin the wire format from the outside.
  pb::RpcHeader h;
  h.set_id(99);
  h.set_method(kEcho);
  h.set_body("abc");
  std::string hb = h.SerializeAsString();
  std::vector<uint8_t> f = RawPrefix(kFrameMagic, uint32_t(hb.size()), 2);
  f.insert(f.end(), hb.begin(), hb.end());
  f.push_back('P');
  f.push_back('Q');
  int fd = RawConnect();
  ASSERT_EQ(::write(fd, f.data(), f.size()), ssize_t(f.size()));
  uint8_t prefix[kPrefixBytes];
  size_t got = 0;
  while (got < kPrefixBytes) {
    ssize_t n = ::read(fd, prefix + got, kPrefixBytes - got);
    ASSERT_GT(n, 0);
    got += n;
  }
  auto p = DecodePrefix(prefix);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->payload_len, 2u);
  std::string rest(p->header_len + p->payload_len, '\0');
  got = 0;
  while (got < rest.size()) {
    ssize_t n = ::read(fd, rest.data() + got, rest.size() - got);
    ASSERT_GT(n, 0);
    got += n;
  }
  ::close(fd);
  pb::RpcHeader rh;
  ASSERT_TRUE(rh.ParseFromString(rest.substr(0, p->header_len)));
  EXPECT_EQ(rh.id(), 99u);
  EXPECT_EQ(rh.method(), kEcho);
  EXPECT_EQ(rh.code(), 0);
  EXPECT_EQ(rh.body(), "abc");
  EXPECT_EQ(rest.substr(p->header_len), "PQ");
}

TEST_F(RpcLoopbackTest, OversizedPayloadRefusedByClient) {
  std::string huge(kMaxPayloadBytes + 1, 'x');
  auto r = chan_->Call(kEcho, pb::Empty(), huge);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
  EXPECT_EQ(calls_.load(), 0);
  ExpectEcho("fine", "f");
}

TEST_F(RpcLoopbackTest, ServerGoneIsUnavailable) {
  ExpectEcho("before", "b");
  server_.reset();  // stops the server; pooled connection is now dead
  auto r = chan_->Call(kEcho, pb::Empty(), "x");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kUnavailable);
  RpcChannel nowhere(addr_, 2000, "testclient");
  auto r2 = nowhere.Call(kEcho, pb::Empty());
  ASSERT_FALSE(r2.has_value());
  EXPECT_EQ(r2.error().code(), Code::kUnavailable);
}

// CPUs this process may run on (at most 4: enough to tell them apart).
std::vector<int> UsableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 4; c++)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

constexpr uint32_t kWhere = 1100;

// A per-thread server of `threads` threads pinned over `cpus`, whose kWhere
// answers with the CPU its thread runs on; null if it did not start.
std::unique_ptr<RpcServer> StartWhereServer(const std::string& name, int threads,
                                            std::vector<int> cpus) {
  auto server = std::make_unique<RpcServer>(name, threads, RpcServer::Threading::kPerThread);
  server->Handle(kWhere, [](const std::string&, std::string&, RpcReply& reply) {
    reply.body = std::to_string(sched_getcpu());
    return Status::Ok();
  });
  server->PinThreads(std::move(cpus));
  if (Status st = server->Start("127.0.0.1:0"); !st.ok()) {
    ADD_FAILURE() << st.ToString();
    return nullptr;
  }
  return server;
}

// The CPU the server's thread answered on, for one call made from a thread
// pinned to `cpu`; -1 if the call failed.
int ServedCpuOfCallFrom(RpcChannel& chan, int cpu) {
  int served = -1;
  std::thread([&] {
    if (!PinCurrentThread(cpu).ok()) return;
    auto r = chan.Call(kWhere, pb::Empty());
    if (r) served = std::stoi(r->body);
  }).join();
  return served;
}

// RpcServer::PinThreads + RpcChannel's per-CPU pools: a connection is
// dialled from the caller's CPU, and the server serves it on a thread
// pinned there, so every call is answered on the CPU that made it.
TEST(RpcCpuPlacementTest, CallsAreServedOnTheCallersCpu) {
  const std::vector<int> cpus = UsableCpus();
  ASSERT_FALSE(cpus.empty());
  auto server = StartWhereServer("cpuplace", 2 * int(cpus.size()), cpus);
  ASSERT_NE(server, nullptr);
  RpcChannel chan("127.0.0.1:" + std::to_string(server->port()), 5000, "cpuplace_client");
  Counter& local = GetCounter("cpuplace.connections_on_incoming_cpu");
  const uint64_t before = local.Get();
  // Each CPU in turn, twice over, each call from a new thread: one
  // connection per CPU, reused by later callers on that CPU.
  for (int round = 0; round < 2; round++) {
    for (int cpu : cpus) {
      for (int call = 0; call < 5; call++)
        EXPECT_EQ(ServedCpuOfCallFrom(chan, cpu), cpu) << "round " << round << " call " << call;
    }
  }
  EXPECT_EQ(local.Get() - before, cpus.size());
}

// A connection from a CPU no server thread is pinned to is still served
// (by the threads in turn), and is not counted as placed on its CPU.
TEST(RpcCpuPlacementTest, ACallFromAnotherCpuIsServedAnyway) {
  const std::vector<int> cpus = UsableCpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs two usable CPUs";
  auto server = StartWhereServer("cpuother", 2, {cpus[0]});
  ASSERT_NE(server, nullptr);
  RpcChannel chan("127.0.0.1:" + std::to_string(server->port()), 5000, "cpuother_client");
  Counter& local = GetCounter("cpuother.connections_on_incoming_cpu");
  const uint64_t before = local.Get();
  EXPECT_EQ(ServedCpuOfCallFrom(chan, cpus[1]), cpus[0]);
  EXPECT_EQ(local.Get() - before, 0u);
  EXPECT_EQ(ServedCpuOfCallFrom(chan, cpus[0]), cpus[0]);
  EXPECT_EQ(local.Get() - before, 1u);
}

}  // namespace
}  // namespace rustfs::net

// MdsClient waits an MDS restart out: calls that never left (nobody
// listening), and read-only calls whose connection broke before the reply,
// are made again once the MDS listens; a mutation whose connection broke
// is not made twice.
#include "client/mds_client.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "net/rpc_server.h"
#include "rustfs.pb.h"

namespace rustfs::client {
namespace {

// A loopback port nobody listens on (bound, then released).
uint16_t UnusedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// The MDS as it comes back: answers GETATTR and CREATE, counting them.
struct FakeMds {
  explicit FakeMds(uint16_t port) : server("fake-mds", 1) {
    for (uint32_t m : {uint32_t(pb::M_GETATTR), uint32_t(pb::M_CREATE)})
      server.Handle(m, [this](const std::string&, std::string&, net::RpcReply& reply) {
        served++;
        pb::AttrReply a;
        a.mutable_attr()->set_ino(42);
        reply.body = a.SerializeAsString();
        return Status::Ok();
      });
    Status s = server.Start("127.0.0.1:" + std::to_string(port));
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  net::RpcServer server;
  std::atomic<int> served{0};
};

// The MDS as it dies: takes one connection, reads the request, and closes
// it (and its listening socket) without a reply.
struct DyingMds {
  explicit DyingMds(uint16_t port) {
    listener = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    EXPECT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(listener, 4), 0);
    thread = std::thread([this] {
      int c = ::accept(listener, nullptr, nullptr);
      char buf[256];
      if (c >= 0 && ::read(c, buf, sizeof buf) > 0) requests++;
      ::close(listener);  // before the connection: the client's retry finds nobody
      if (c >= 0) ::close(c);
      done = true;
    });
  }
  ~DyingMds() { thread.join(); }
  int listener;
  std::thread thread;
  std::atomic<int> requests{0};
  std::atomic<bool> done{false};
};

pb::GetAttrReq AttrReq() {
  pb::GetAttrReq r;
  r.set_ino(42);
  return r;
}

TEST(MdsClientTest, CallsWaitForAnMdsThatIsNotListeningYet) {
  const uint16_t port = UnusedPort();
  MdsClient mds("127.0.0.1:" + std::to_string(port), 1000);
  std::unique_ptr<FakeMds> up;
  std::thread starter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    up = std::make_unique<FakeMds>(port);
  });
  // A mutation too: a call that was never sent cannot have been done.
  auto r = mds.Call<pb::AttrReply>(pb::M_CREATE, pb::CreateReq());
  starter.join();
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->attr().ino(), 42u);
  EXPECT_EQ(up->served.load(), 1);
}

TEST(MdsClientTest, ReadOnlyCallIsMadeAgainWhenItsConnectionBreaks) {
  const uint16_t port = UnusedPort();
  MdsClient mds("127.0.0.1:" + std::to_string(port), 1000);
  auto dying = std::make_unique<DyingMds>(port);
  std::unique_ptr<FakeMds> up;
  std::thread starter([&] {
    while (!dying->done) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    up = std::make_unique<FakeMds>(port);
  });
  auto r = mds.Call<pb::AttrReply>(pb::M_GETATTR, AttrReq());
  starter.join();
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(dying->requests.load(), 1);
  EXPECT_EQ(up->served.load(), 1);
}

TEST(MdsClientTest, MutationWhoseConnectionBrokeIsNotMadeTwice) {
  const uint16_t port = UnusedPort();
  MdsClient mds("127.0.0.1:" + std::to_string(port), 1000);
  auto dying = std::make_unique<DyingMds>(port);
  auto r = mds.Call<pb::AttrReply>(pb::M_CREATE, pb::CreateReq());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), Code::kUnavailable);
  dying.reset();
  FakeMds up(port);  // had the call been retried, it would have waited for this
  EXPECT_EQ(up.served.load(), 0);
}

TEST(MdsClientTest, IdempotentMethodsAreTheReadOnlyOnes) {
  EXPECT_TRUE(IdempotentMdsMethod(pb::M_GETATTR));
  EXPECT_TRUE(IdempotentMdsMethod(pb::M_GET_CHUNK_MAP));
  for (uint32_t m : {pb::M_CREATE, pb::M_RENAME, pb::M_UNLINK, pb::M_COMMIT_CHUNK, pb::M_ALLOCATE_CHUNK,
                     pb::M_SETATTR, pb::M_SETLK, pb::M_REGISTER_CLIENT})
    EXPECT_FALSE(IdempotentMdsMethod(m)) << m;
}

}  // namespace
}  // namespace rustfs::client

// LeaseTable with clients played by real callback servers on loopback:
// who is called back for what, references kept or dropped by the answers,
// silent clients waited out until their lease ends, sessions reaped.
#include "mds/lease_table.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "net/rpc_server.h"

namespace rustfs::mds {
namespace {

using namespace std::chrono_literals;

// A client's callback server: records revocations, answers "open" as told.
struct FakeClient {
  net::RpcServer server{"test.cb", 2};
  std::mutex mu;
  std::vector<pb::RevokeReq> got;
  std::atomic<bool> open{false};

  FakeClient() {
    server.Handle(pb::M_REVOKE, [this](const std::string& body, std::string&, net::RpcReply& reply) {
      pb::RevokeReq r;
      r.ParseFromString(body);
      {
        std::lock_guard lk(mu);
        got.push_back(r);
      }
      pb::RevokeReply rep;
      rep.set_open(open.load());
      reply.body = rep.SerializeAsString();
      return Status::Ok();
    });
    EXPECT_TRUE(server.Start("127.0.0.1:0").ok());
  }
  std::string address() { return "127.0.0.1:" + std::to_string(server.port()); }
  size_t calls() {
    std::lock_guard lk(mu);
    return got.size();
  }
};

TEST(LeaseTableTest, RevokeCallsHoldersAndReferenceHoldersAndKeepsOpenOnes) {
  LeaseTable t(10s, 2000);
  t.SkipGrace();
  FakeClient a, b, c;
  uint64_t ia = t.Register(a.address()), ib = t.Register(b.address()), ic = t.Register(c.address());
  EXPECT_NE(ia, ib);
  t.Grant(ia, 7);
  t.Grant(ib, 7);
  t.AddRef(ib, 7);  // b has inode 7 open...
  b.open = true;
  t.AddRef(ic, 7);  // ...c only cached it (answers "not open")
  // A change by a: b and c are called (c only through its reference), a is not.
  EXPECT_FALSE(t.Revoke(7, "", ia));
  EXPECT_EQ(a.calls(), 0u);
  EXPECT_EQ(b.calls(), 1u);
  EXPECT_EQ(c.calls(), 1u);
  EXPECT_TRUE(t.Referenced(7));  // b keeps it
  // b's lease on 7 is gone: the next change reaches it only through its reference.
  b.open = false;
  EXPECT_TRUE(t.Revoke(7, "", 0));  // now nobody references it
  EXPECT_EQ(b.calls(), 2u);
  EXPECT_EQ(a.calls(), 1u);  // a kept its lease through its own change
  EXPECT_FALSE(t.Referenced(7));
}

TEST(LeaseTableTest, NameRevocationKeepsTheDirectoryLease) {
  LeaseTable t(10s, 2000);
  t.SkipGrace();
  FakeClient a;
  uint64_t ia = t.Register(a.address());
  t.Grant(ia, 1);
  t.Revoke(1, "x", 0);
  t.Revoke(1, "y", 0);  // still a holder: hears of every name
  EXPECT_EQ(a.calls(), 2u);
  t.Revoke(1, "", 0);  // the directory itself: lease over
  t.Revoke(1, "z", 0);
  EXPECT_EQ(a.calls(), 3u);
  std::lock_guard lk(a.mu);
  EXPECT_EQ(a.got[0].name(), "x");
  EXPECT_EQ(a.got[2].name(), "");
}

TEST(LeaseTableTest, RecallFlagReachesTheClient) {
  LeaseTable t(10s, 2000);
  t.SkipGrace();
  FakeClient a;
  uint64_t ia = t.Register(a.address());
  t.Grant(ia, 3);
  t.Revoke(3, "", 0, /*recall=*/true);
  std::lock_guard lk(a.mu);
  ASSERT_EQ(a.got.size(), 1u);
  EXPECT_TRUE(a.got[0].recall());
}

TEST(LeaseTableTest, SilentClientIsWaitedOutThenLostAndReaped) {
  FakeClock clock;
  LeaseTable t(400ms, 2000, clock);
  t.SkipGrace();
  FakeClient alive;
  // A session whose callback address answers nothing (nothing listens).
  const auto registered = clock.Now();
  uint64_t dead = t.Register("127.0.0.1:1");
  uint64_t live = t.Register(alive.address());
  t.Grant(dead, 9);
  t.Grant(live, 9);
  t.AddRef(dead, 9);
  EXPECT_FALSE(t.Revoke(9, "", 0));  // dead's reference stays until its session ends
  // The change waited for dead's lease to run out (it may still have been
  // serving what it cached until then).
  EXPECT_EQ(clock.Now(), registered + 400ms);
  EXPECT_EQ(alive.calls(), 1u);
  EXPECT_EQ(t.Renew(dead).code(), Code::kStale);  // lost: no renewal
  EXPECT_EQ(t.CheckSession(dead).code(), Code::kStale);
  EXPECT_TRUE(t.CheckSession(live).ok());  // renewed by nobody, but not run out yet either
  clock.Advance(1ns);
  // Both leases ran out meanwhile (nobody renewed live's either): both end,
  // and with them dead's reference.
  auto ended = t.Reap();
  std::sort(ended.sessions.begin(), ended.sessions.end());
  EXPECT_EQ(ended.sessions, (std::vector<uint64_t>{dead, live}));
  EXPECT_EQ(ended.unreferenced, std::vector<uint64_t>{9});
  EXPECT_EQ(t.Renew(dead).code(), Code::kNotFound);
  EXPECT_FALSE(t.Referenced(9));
}

TEST(LeaseTableTest, EndAndReleaseDropReferences) {
  LeaseTable t(10s, 2000);
  t.SkipGrace();
  FakeClient a, b;
  uint64_t ia = t.Register(a.address()), ib = t.Register(b.address());
  t.AddRef(ia, 5);
  t.AddRef(ib, 5);
  t.AddRef(ia, 6);
  EXPECT_FALSE(t.DropRef(ia, 5));
  EXPECT_TRUE(t.DropRef(ib, 5));
  auto e = t.End(ia);
  EXPECT_EQ(e.sessions, std::vector<uint64_t>{ia});
  EXPECT_EQ(e.unreferenced, std::vector<uint64_t>{6});
  t.AddRef(ia, 8);  // unknown session now: ignored
  EXPECT_FALSE(t.Referenced(8));
}

TEST(LeaseTableTest, ExpiredLeaseIsNotRenewed) {
  FakeClock clock;
  LeaseTable t(150ms, 2000, clock);
  uint64_t id = t.Register("127.0.0.1:1");
  EXPECT_EQ(t.CheckGrace().code(), Code::kRetry);  // a restarted MDS waits old leases out
  clock.Advance(149ms);
  EXPECT_EQ(t.CheckGrace().code(), Code::kRetry);
  EXPECT_TRUE(t.Renew(id).ok());  // renewed at 149 ms: good until 299 ms
  clock.Advance(1ms);
  EXPECT_TRUE(t.CheckGrace().ok());
  clock.Advance(149ms);
  EXPECT_TRUE(t.CheckSession(id).ok());
  clock.Advance(1ms + 1ns);
  EXPECT_EQ(t.Renew(id).code(), Code::kStale);
}

}  // namespace
}  // namespace rustfs::mds

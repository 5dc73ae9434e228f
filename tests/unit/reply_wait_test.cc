// How a caller waits for its RPC replies (net/reply_wait.h): the config
// values, the "auto" threshold, and a polling channel getting its replies
// whether they come within its poll or long after it (RpcServer and
// RpcChannel on loopback).
#include "net/reply_wait.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include "net/rpc_channel.h"
#include "net/rpc_server.h"
#include "rustfs.pb.h"

namespace rustfs::net {
namespace {

TEST(ReplyWaitTest, ExplicitModesAreObeyed) {
  EXPECT_TRUE(PollForReplies("poll"));
  EXPECT_FALSE(PollForReplies("sleep"));
  EXPECT_FALSE(PollForReplies("spin"));  // refused by ValidateConfig; sleeps if it got here
}

TEST(ReplyWaitTest, AutoPollsWhereASyscallIsCheap) {
  EXPECT_TRUE(PollingPays(270));   // KVM guest with haltpoll: polling won every row
  EXPECT_FALSE(PollingPays(1100));  // PVM guest: sleeping won or tied
  EXPECT_TRUE(PollingPays(kPollingPaysUpToNs));
  EXPECT_FALSE(PollingPays(kPollingPaysUpToNs + 1));
}

TEST(ReplyWaitTest, AutoFollowsTheMeasurement) {
  const double ns = MeasureSyscallNs();
  EXPECT_TRUE(std::isfinite(ns));
  EXPECT_GT(ns, 0);
  // The measurement is noisy near the threshold; away from it "auto" must
  // take the side the measurement says.
  if (std::fabs(ns - kPollingPaysUpToNs) > kPollingPaysUpToNs / 2) {
    EXPECT_EQ(PollForReplies("auto"), PollingPays(ns)) << ns << " ns per syscall";
  }
}

// Each reply carries the request's ino back, so a reply given to the wrong
// call (a poll that read another call's bytes) would show.
TEST(ReplyWaitTest, APollingChannelGetsEveryReplyFastOrSlow) {
  std::atomic<int> delay_us{0};
  RpcServer server("echo", 2);
  server.Handle(pb::M_GETATTR, [&delay_us](const std::string& body, std::string&, RpcReply& reply) {
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us.load()));
    pb::GetAttrReq req;
    if (!req.ParseFromString(body)) return InvalidArgument("bad request");
    reply.payload = std::to_string(req.ino());
    return Status::Ok();
  });
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  RpcChannel ch("127.0.0.1:" + std::to_string(server.port()), 20000, "client", /*poll_replies=*/true);
  for (int delay : {0, 2000}) {  // µs: within the poll (250 µs), and long after it gave up
    delay_us = delay;
    for (uint64_t ino = 1; ino <= 20; ino++) {
      pb::GetAttrReq req;
      req.set_ino(ino);
      auto r = ch.Call(pb::M_GETATTR, req);
      ASSERT_TRUE(r.has_value()) << r.error().ToString();
      EXPECT_EQ(r->payload, std::to_string(ino)) << "delay " << delay << " µs";
    }
  }
  // Two calls in flight at once (the second is not polled for: another
  // call of the process waits), waited for in reverse order.
  pb::GetAttrReq a, b;
  a.set_ino(101);
  b.set_ino(102);
  PendingCall ca = ch.Start(pb::M_GETATTR, a), cb = ch.Start(pb::M_GETATTR, b);
  auto rb = cb.Wait();
  auto ra = ca.Wait();
  ASSERT_TRUE(ra.has_value() && rb.has_value());
  EXPECT_EQ(ra->payload, "101");
  EXPECT_EQ(rb->payload, "102");
}

}  // namespace
}  // namespace rustfs::net

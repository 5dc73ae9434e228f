// A thread waiting for a reply runs its wait hook (net/wait_hook.h) when the
// hook's fd turns readable, inside a WaitWindow only, never inside itself,
// and still gets its own reply. Real RpcServer and RpcChannel on loopback;
// the hook's "work" is an eventfd another thread writes.
#include "net/wait_hook.h"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "net/rpc_channel.h"
#include "net/rpc_server.h"
#include "rustfs.pb.h"

namespace rustfs::net {
namespace {

using namespace std::chrono_literals;

// A server whose M_GETATTR answers only once released (or after 10 s, with
// an error, so a test whose hook never runs fails instead of hanging), and
// whose M_CREATE answers at once.
struct GatedServer {
  GatedServer() : server("gated", 2) {
    server.Handle(pb::M_GETATTR, [this](const std::string&, std::string&, RpcReply&) {
      std::unique_lock lk(mu);
      return cv.wait_for(lk, 10s, [&] { return released; }) ? Status::Ok() : Unavailable("never released");
    });
    server.Handle(pb::M_CREATE, [](const std::string&, std::string&, RpcReply&) { return Status::Ok(); });
    Status s = server.Start("127.0.0.1:0");
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  void Release() {
    std::lock_guard lk(mu);
    released = true;
    cv.notify_all();
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(server.port()); }

  RpcServer server;
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
};

// Work signalled on an eventfd. Run takes it and calls `on_run`.
struct EventHook final : WaitHook {
  EventHook() : efd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~EventHook() override { ::close(efd); }
  int fd() const override { return efd; }
  bool Pending() override { return false; }  // the fd alone says so
  void Run() override {
    runs++;
    depth++;
    max_depth = std::max(max_depth, depth);
    if (on_run) on_run();
    uint64_t v;
    (void)::read(efd, &v, sizeof v);
    depth--;
  }
  void Signal() const {
    uint64_t one = 1;
    EXPECT_EQ(::write(efd, &one, sizeof one), ssize_t(sizeof one));
  }
  int efd;
  int runs = 0, depth = 0, max_depth = 0;
  std::function<void()> on_run;
};

pb::GetAttrReq Req() {
  pb::GetAttrReq r;
  r.set_ino(1);
  return r;
}

// Each test runs with a channel that sleeps for its replies and with one
// that polls for them first (config client.reply_wait).
class WaitHookTest : public ::testing::TestWithParam<bool> {};
INSTANTIATE_TEST_SUITE_P(ReplyWait, WaitHookTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Polling" : "Sleeping"; });

TEST_P(WaitHookTest, AWaitRunsTheHookWhenItsFdTurnsReadableAndStillGetsItsReply) {
  GatedServer srv;
  RpcChannel ch(srv.address(), 20000, "client", GetParam());
  EventHook hook;
  hook.on_run = [&] { srv.Release(); };  // the reply can only come after the hook ran
  ScopedWaitHook use(&hook);
  WaitWindow window;
  PendingCall call = ch.Start(pb::M_GETATTR, Req());
  std::thread signaller([&] { hook.Signal(); });
  auto r = call.Wait();
  signaller.join();
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(hook.runs, 1);
}

TEST_P(WaitHookTest, ReadyRunsTheHookAndReportsTheReplyNotThere) {
  GatedServer srv;
  RpcChannel ch(srv.address(), 20000, "client", GetParam());
  EventHook hook;
  ScopedWaitHook use(&hook);
  WaitWindow window;
  PendingCall call = ch.Start(pb::M_GETATTR, Req());
  hook.Signal();
  EXPECT_FALSE(call.Ready(100));  // the hook's work does not look like the reply
  EXPECT_EQ(hook.runs, 1);
  srv.Release();
  EXPECT_TRUE(call.Ready(10000));
  EXPECT_TRUE(call.Wait().has_value());
}

TEST_P(WaitHookTest, OutsideAWindowTheHookDoesNotRun) {
  GatedServer srv;
  RpcChannel ch(srv.address(), 20000, "client", GetParam());
  EventHook hook;
  ScopedWaitHook use(&hook);
  hook.Signal();  // readable from the start: a wait that watched it would run it
  PendingCall call = ch.Start(pb::M_GETATTR, Req());
  std::thread releaser([&] {
    std::this_thread::sleep_for(100ms);
    srv.Release();
  });
  EXPECT_TRUE(call.Wait().has_value());
  releaser.join();
  EXPECT_EQ(hook.runs, 0);
  {
    WaitWindow window;
    window.Close();
    EXPECT_EQ(ActiveWaitHook(), nullptr);
  }
}

TEST_P(WaitHookTest, TheHookIsNotReenteredByTheCallsItMakes) {
  GatedServer srv;
  RpcChannel ch(srv.address(), 20000, "client", GetParam());
  EventHook hook;
  // The hook makes a call of its own while its fd is still readable: that
  // wait must not run the hook again.
  hook.on_run = [&] {
    EXPECT_TRUE(ch.Start(pb::M_CREATE, Req()).Wait().has_value());
    srv.Release();
  };
  ScopedWaitHook use(&hook);
  WaitWindow window;
  PendingCall call = ch.Start(pb::M_GETATTR, Req());
  hook.Signal();
  EXPECT_TRUE(call.Wait().has_value());
  EXPECT_EQ(hook.runs, 1);
  EXPECT_EQ(hook.max_depth, 1);
}

}  // namespace
}  // namespace rustfs::net

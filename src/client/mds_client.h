// Typed calls to the MDS; every call is counted (client.mds_rpcs) so tests
// and benchmarks can prove the read path makes none.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "common/metrics.h"
#include "net/rpc_channel.h"

namespace rustfs::client {

// Whether doing `method` twice has the effect of doing it once: such a call
// whose connection broke before its reply may simply be made again.
bool IdempotentMdsMethod(uint32_t method);

class MdsClient {
 public:
  // `restart_window`: how long Call waits for an MDS that is away (below);
  // zero for one attempt (a tool polling the MDS in a loop of its own).
  MdsClient(const std::string& address, int timeout_ms,
            std::chrono::milliseconds restart_window = kRestartWindow)
      : channel_(address, timeout_ms, "client.mds"),
        rpcs_(GetCounter("client.mds_rpcs")),
        restart_window_(restart_window) {}

  // An MDS restarting is waited for, for up to the restart window, instead of
  // failing the application's call: a call it refused with kRetry (its
  // grace period) or that could not be sent (nobody listening yet) is made
  // again, and so is a read-only call whose connection broke before the
  // reply. Every other outcome goes to the caller. Thread-safe.
  //
  // For calls made on an application's behalf. The client's own session
  // calls (renewal, release, end of session) use CallOnce: their loops
  // must keep running while the MDS is away (a lease that runs out must
  // drop the kernel's caches on time; an unmount must not wait a minute).
  static constexpr std::chrono::milliseconds kRestartWindow{60'000};

  template <class Rep>
  Result<Rep> Call(uint32_t method, const google::protobuf::Message& req) {
    const auto give_up = std::chrono::steady_clock::now() + restart_window_;
    for (int pause_ms = 10;; pause_ms = std::min(2 * pause_ms, 200)) {
      rpcs_.Inc();
      net::PendingCall call = channel_.Start(method, req);
      const bool sent = call.sent();
      auto r = call.Wait();
      if (r) return net::ParseBody<Rep>(r->body, "reply");
      const Code code = r.error().code();
      const bool again = code == Code::kRetry ||
                         (code == Code::kUnavailable && (!sent || IdempotentMdsMethod(method)));
      if (!again || std::chrono::steady_clock::now() >= give_up) return Err(r.error());
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
    }
  }

  Status CallStatus(uint32_t method, const google::protobuf::Message& req) {
    auto r = Call<pb::Empty>(method, req);
    return r ? Status::Ok() : r.error();
  }

  // One attempt, whatever happens.
  Status CallOnce(uint32_t method, const google::protobuf::Message& req) {
    rpcs_.Inc();
    auto r = channel_.Call(method, req);
    return r ? Status::Ok() : r.error();
  }

 private:
  net::RpcChannel channel_;
  Counter& rpcs_;
  const std::chrono::milliseconds restart_window_;
};

}  // namespace rustfs::client

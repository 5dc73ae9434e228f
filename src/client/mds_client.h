// Typed calls to the MDS; every call is counted (client.mds_rpcs) so tests
// and benchmarks can prove the read path makes none.
#pragma once

#include <chrono>
#include <string>
#include <thread>

#include "common/metrics.h"
#include "net/rpc_channel.h"

namespace rustfs::client {

class MdsClient {
 public:
  MdsClient(const std::string& address, int timeout_ms)
      : channel_(address, timeout_ms, "client.mds"), rpcs_(GetCounter("client.mds_rpcs")) {}

  // kRetry (the MDS is in its restart grace period) is retried here, for up
  // to a minute; every other outcome goes to the caller.
  template <class Rep>
  Result<Rep> Call(uint32_t method, const google::protobuf::Message& req) {
    for (int i = 0;; i++) {
      rpcs_.Inc();
      auto r = channel_.CallTyped<Rep>(method, req);
      if (r || r.error().code() != Code::kRetry || i >= 600) return r;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

  Status CallStatus(uint32_t method, const google::protobuf::Message& req) {
    auto r = Call<pb::Empty>(method, req);
    return r ? Status::Ok() : r.error();
  }

 private:
  net::RpcChannel channel_;
  Counter& rpcs_;
};

}  // namespace rustfs::client

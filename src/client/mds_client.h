// Typed calls to the MDS; every call is counted (client.mds_rpcs) so tests
// and benchmarks can prove the read path makes none.
#pragma once

#include <string>

#include "common/metrics.h"
#include "net/rpc_channel.h"

namespace rustfs::client {

class MdsClient {
 public:
  MdsClient(const std::string& address, int timeout_ms)
      : channel_(address, timeout_ms, "client.mds"), rpcs_(GetCounter("client.mds_rpcs")) {}

  template <class Rep>
  Result<Rep> Call(uint32_t method, const google::protobuf::Message& req) {
    rpcs_.Inc();
    return channel_.CallTyped<Rep>(method, req);
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

// Connections to every DSS, by id, and what the client knows of their health.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "common/config.h"
#include "net/rpc_channel.h"

namespace rustfs::client {

class DssPool {
 public:
  // addresses[i] is DSS i's "host:port".
  DssPool(const std::vector<std::string>& addresses, int timeout_ms);

  size_t size() const { return channels_.size(); }
  // nullptr for an id the client has never heard of.
  net::RpcChannel* Get(uint32_t id);

  // A DSS that just failed a call is skipped (its reads go straight to the
  // degraded path) for a short while instead of paying a connect per read.
  void MarkDown(uint32_t id);
  bool IsDown(uint32_t id) const;

 private:
  std::vector<std::unique_ptr<net::RpcChannel>> channels_;
  std::unique_ptr<std::atomic<int64_t>[]> down_until_ns_;  // steady clock
};

}  // namespace rustfs::client

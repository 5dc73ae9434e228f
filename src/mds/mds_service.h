// The metadata service: namespace and chunk-map RPCs over an MdsStore, the
// DSS registry (registration + heartbeats decide who is alive), placement
// of new chunks, and a garbage collector that deletes shards no file points
// at any more.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/config.h"
#include "mds/lease_table.h"
#include "mds/mds_store.h"
#include "net/rpc_channel.h"
#include "net/rpc_server.h"

namespace rustfs::mds {

class MdsService {
 public:
  static Result<std::unique_ptr<MdsService>> Create(const Config& cfg);
  ~MdsService();

  Status Start();  // listens on cfg.mds.address
  void Stop();

 private:
  explicit MdsService(const Config& cfg);
  void RegisterHandlers();
  std::vector<uint32_t> AliveDss();
  void GcLoop();

  struct DssState {
    std::string address;
    std::chrono::steady_clock::time_point last_seen{};
    bool registered = false;
    uint64_t free_bytes = 0;
    std::unique_ptr<net::RpcChannel> channel;  // for garbage deletion
  };

  Config cfg_;
  std::unique_ptr<MdsStore> store_;
  net::RpcServer server_;
  LeaseTable leases_;
  std::mutex dss_mu_;
  std::vector<DssState> dss_;
  std::atomic<bool> stop_{false};
  std::thread gc_;
};

pb::Layout LayoutFromConfig(const Config& cfg);

}  // namespace rustfs::mds

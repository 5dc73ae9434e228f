// The metadata service: namespace and chunk-map RPCs over an MdsStore,
// client sessions (leases, open references, advisory locks), the DSS
// registry (registration + heartbeats decide who is alive), placement of
// new chunks, a background loop that ends lapsed sessions, collects
// orphans nobody has open any more and deletes shards no file points at,
// and a repair loop that rebuilds missing shards (mds/repairer.h).
//
// Handlers are grouped by what they serve: mds_namespace_handlers.cc,
// mds_data_handlers.cc, mds_session_handlers.cc.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "common/config.h"
#include "mds/lease_table.h"
#include "mds/lock_table.h"
#include "mds/mds_store.h"
#include "mds/repairer.h"
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
  void RegisterNamespaceHandlers();
  void RegisterDataHandlers();
  void RegisterSessionHandlers();
  std::vector<uint32_t> AliveDss();
  // Live DSS with room for new shards (placement's candidates).
  std::vector<uint32_t> WritableDss();
  // A chunk version a client wants published: one position per shard of
  // the layout, distinct DSS that exist, at least layout.min_write_shards.
  Status CheckPlacement(const pb::ChunkEntry& c, const pb::Layout& l);
  void BackgroundLoop();
  void RepairLoop();
  // DSS silent for longer than repair.grace_ms (counted from the MDS's
  // start for one not heard from since).
  std::set<uint32_t> GoneDss();
  void CollectGarbage();
  // Releases what ended sessions held: locks, and orphans left unreferenced.
  void OnSessionsEnded(const LeaseTable::Ended& e);
  // Deletes `ino` if it is an orphan nobody references (never during the
  // restart grace period, when clients are still reclaiming references).
  void CollectIfUnused(uint64_t ino);

  struct DssState {
    std::string address;
    std::chrono::steady_clock::time_point last_seen{};
    bool registered = false;
    uint64_t free_bytes = 0;
    std::unique_ptr<net::RpcChannel> channel;  // for garbage deletion
  };
  // Heard from within mds.heartbeat_timeout_ms (caller holds dss_mu_).
  bool Alive(const DssState& d, std::chrono::steady_clock::time_point now) const {
    return d.registered && now - d.last_seen < std::chrono::milliseconds(cfg_.mds.heartbeat_timeout_ms);
  }

  Config cfg_;
  std::unique_ptr<MdsStore> store_;
  net::RpcServer server_;
  LeaseTable leases_;
  LockTable locks_;
  std::mutex dss_mu_;
  std::vector<DssState> dss_;
  std::unique_ptr<Repairer> repairer_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::atomic<bool> stop_{false};
  std::thread background_;
  std::thread repair_;
};

pb::Layout LayoutFromConfig(const Config& cfg);

}  // namespace rustfs::mds

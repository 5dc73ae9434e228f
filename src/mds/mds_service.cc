#include "mds/mds_service.h"

#include <algorithm>

#include "common/log.h"
#include "layout/layout_rules.h"
#include "net/auth.h"
#include "mds/handler_util.h"

namespace rustfs::mds {

pb::Layout LayoutFromConfig(const Config& cfg) {
  pb::Layout l;
  l.set_kind(cfg.layout.kind == "replica" ? 1 : 0);
  l.set_k(cfg.layout.k);
  l.set_m(cfg.layout.m);
  l.set_stripe_unit(cfg.ec.stripe_unit);
  l.set_chunk_size(cfg.layout.chunk_size);
  l.set_replicas(cfg.layout.replicas);
  return l;
}

namespace {
// Handlers may wait up to a lease for a silent client's revocation, so the
// server needs threads for the others meanwhile.
constexpr int kServerThreads = 32;
}  // namespace

MdsService::MdsService(const Config& cfg)
    : cfg_(cfg),
      server_("mds", kServerThreads),
      leases_(std::chrono::milliseconds(cfg.mds.lease_ms), cfg.client.rpc_timeout_ms) {
  dss_.resize(cfg.dss.size());
  for (size_t i = 0; i < cfg.dss.size(); i++) {
    dss_[i].address = cfg.dss[i].address;
    dss_[i].channel =
        std::make_unique<net::RpcChannel>(cfg.dss[i].address, cfg.client.rpc_timeout_ms, "mds.gc");
  }
}

MdsService::~MdsService() { Stop(); }

Result<std::unique_ptr<MdsService>> MdsService::Create(const Config& cfg) {
  RUSTFS_RETURN_ERR(net::UseClusterKey(cfg.cluster.key_file));
  std::unique_ptr<MdsService> s(new MdsService(cfg));
  auto store = MdsStore::Open(cfg.mds.data_dir, LayoutFromConfig(cfg));
  if (!store) return Err(store.error());
  s->store_ = std::move(*store);
  // A reader that fetched a chunk map just before a change may use it until
  // its revocation arrives and its read in flight ends: shards the change
  // made garbage stay that long.
  s->store_->SetGarbageDelay((int64_t(cfg.mds.lease_ms) + cfg.client.rpc_timeout_ms) * 1000000);
  // A brand-new store had no earlier incarnation whose leases could linger.
  if (s->store_->created()) s->leases_.SkipGrace();
  Repairer::Cluster cluster{
      [p = s.get()] { return p->WritableDss(); }, [p = s.get()] { return p->GoneDss(); },
      [p = s.get()](uint32_t id) { return id < p->dss_.size() ? p->dss_[id].channel.get() : nullptr; }};
  s->repairer_ = std::make_unique<Repairer>(*s->store_, s->leases_, std::move(cluster), cfg.repair);
  s->RegisterNamespaceHandlers();
  s->RegisterDataHandlers();
  s->RegisterSessionHandlers();
  return s;
}

std::vector<uint32_t> MdsService::AliveDss() {
  std::lock_guard lk(dss_mu_);
  const auto now = std::chrono::steady_clock::now();
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < dss_.size(); i++)
    if (Alive(dss_[i], now)) out.push_back(i);
  return out;
}

std::set<uint32_t> MdsService::GoneDss() {
  std::lock_guard lk(dss_mu_);
  const auto now = std::chrono::steady_clock::now();
  const auto grace = std::chrono::milliseconds(cfg_.repair.grace_ms);
  std::set<uint32_t> out;
  for (uint32_t i = 0; i < dss_.size(); i++)
    if (!Alive(dss_[i], now) && now - std::max(dss_[i].last_seen, started_) > grace) out.insert(i);
  return out;
}

void MdsService::RepairLoop() {
  static Counter& passes = GetCounter("mds.scrub_passes");
  const auto interval = std::chrono::seconds(cfg_.repair.scrub_interval_s);
  auto scrub_due = std::chrono::steady_clock::now() + interval;
  while (!stop_) {
    // Repair rewrites chunk placements: not while clients may still be
    // reclaiming state after an MDS restart.
    if (!leases_.InGrace()) repairer_->Pass(stop_);
    // Scrub a few chunks per round, so repairs found meanwhile are not kept waiting.
    if (interval.count() && std::chrono::steady_clock::now() >= scrub_due && repairer_->Scrub(stop_, 16)) {
      passes.Inc();
      scrub_due = std::chrono::steady_clock::now() + interval;
    }
    const bool scrubbing = interval.count() && std::chrono::steady_clock::now() >= scrub_due;
    for (int i = 0; i < (scrubbing ? 1 : 10) && !stop_; i++)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void MdsService::CollectIfUnused(uint64_t ino) {
  static Counter& collected = GetCounter("mds.orphans_collected");
  if (leases_.InGrace() || leases_.Referenced(ino) || !store_->IsOrphan(ino)) return;
  if (Status s = store_->CollectOrphan(ino); !s.ok()) {
    LOG_WARN("collect orphan inode {}: {}", ino, s.ToString());
    return;
  }
  collected.Inc();
}

void MdsService::OnSessionsEnded(const LeaseTable::Ended& e) {
  for (uint64_t id : e.sessions) locks_.DropSession(id);
  for (uint64_t ino : e.unreferenced) CollectIfUnused(ino);
}

namespace {
constexpr int64_t kGarbageRetryNs = 30'000'000'000;  // garbage on an absent DSS: tried again after 30 s
}  // namespace

void MdsService::CollectGarbage() {
  static Counter& deleted = GetCounter("mds.gc_shards_deleted");
  static Counter& deferred = GetCounter("mds.gc_deferred");
  // A DSS that is down, or fails once in this pass (stalled: each call
  // would wait out the RPC timeout), is skipped for the rest of the pass;
  // its garbage stays queued for a later one. GC never stalls on a server.
  const std::vector<uint32_t> alive = AliveDss();
  std::set<uint32_t> skip;
  for (uint32_t d = 0; d < dss_.size(); d++)
    if (std::find(alive.begin(), alive.end(), d) == alive.end()) skip.insert(d);
  for (auto& [key, g] : store_->PeekGarbage(256, NowNs())) {
    pb::ChunkEntry left = g.chunk();  // positions still to delete
    bool all = true;
    for (int s = 0; s < g.chunk().dss_size() && !stop_; s++) {
      uint32_t d = g.chunk().dss(s);
      if (d >= dss_.size()) continue;
      if (skip.count(d)) {
        all = false;
        continue;
      }
      pb::DeleteShardReq req;
      *req.mutable_key() = layout::MakeShardKey(g.ino(), g.chunk(), uint32_t(s));
      auto r = dss_[d].channel->Call(pb::M_DELETE_SHARD, req);
      if (r || r.error().code() == Code::kNotFound) {
        if (r) deleted.Inc();
        left.set_dss(s, layout::kNoDss);
      } else {
        all = false;
        skip.insert(d);
      }
    }
    if (all) {
      (void)store_->DropGarbage(key);
    } else {
      // What is left goes to the back of the queue, due again later, so
      // garbage of an absent server never holds up the rest.
      deferred.Inc();
      (void)store_->RequeueGarbage(key, g.ino(), left, NowNs() + kGarbageRetryNs);
    }
  }
}

void MdsService::BackgroundLoop() {
  bool swept_orphans = false;
  for (int tick = 0; !stop_; tick++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    OnSessionsEnded(leases_.Reap());
    // After a restart, orphans whose clients did not come back to reclaim
    // them within the grace period are nobody's.
    if (!swept_orphans && !leases_.InGrace()) {
      for (uint64_t ino : store_->Orphans()) CollectIfUnused(ino);
      swept_orphans = true;
    }
    if (tick % 10 == 0) CollectGarbage();
  }
}

Status MdsService::Start() {
  RUSTFS_RETURN_IF_ERROR(server_.Start(cfg_.mds.address));
  background_ = std::thread([this] { BackgroundLoop(); });
  repair_ = std::thread([this] { RepairLoop(); });
  LOG_INFO("MDS listening on {} (store {})", cfg_.mds.address, cfg_.mds.data_dir);
  return Status::Ok();
}

void MdsService::Stop() {
  stop_ = true;
  if (background_.joinable()) background_.join();
  if (repair_.joinable()) repair_.join();
  server_.Stop();
}

}  // namespace rustfs::mds

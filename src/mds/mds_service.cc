#include "mds/mds_service.h"

#include "common/log.h"
#include "mds/placement.h"

namespace rustfs::mds {

using net::ParseBody;
using net::RpcReply;

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

// Shards per chunk, and how many of them hold distinct data.
uint32_t LayoutWidth(const pb::Layout& l) { return l.kind() == 1 ? l.replicas() : l.k() + l.m(); }
uint32_t DataShards(const pb::Layout& l) { return l.kind() == 1 ? 1 : l.k(); }

// A layout a client asks for (SET_LAYOUT) must be one this cluster can place.
Status CheckLayout(const pb::Layout& l, size_t num_dss) {
  const std::string what = "layout " + std::string(l.kind() == 1 ? "replica:" + std::to_string(l.replicas())
                                                                  : "ec:" + std::to_string(l.k()) + "+" + std::to_string(l.m()));
  if (l.kind() > 1) return InvalidArgument("layout kind " + std::to_string(l.kind()) + " is unknown");
  if (l.kind() == 1 && l.replicas() < 1) return InvalidArgument(what + ": needs at least 1 replica");
  if (l.kind() == 0 && l.k() < 1) return InvalidArgument(what + ": needs k >= 1");
  if (LayoutWidth(l) > num_dss)
    return InvalidArgument(what + " needs " + std::to_string(LayoutWidth(l)) + " data servers, the cluster has " +
                           std::to_string(num_dss));
  const uint64_t row = l.stripe_unit() * DataShards(l);
  if (l.stripe_unit() == 0 || l.stripe_unit() % Config::kChecksumBlock || l.chunk_size() == 0 ||
      l.chunk_size() % row)
    return InvalidArgument(what + ": chunk size " + std::to_string(l.chunk_size()) +
                           " must be a multiple of the row (" + std::to_string(row) + " bytes)");
  return Status::Ok();
}

// Adapts a typed handler `Result<Rep>(const Req&)` to the server's signature.
template <class Req, class Fn>
net::RpcServer::Handler Typed(Fn fn) {
  return [fn](const std::string& body, std::string&, RpcReply& reply) -> Status {
    auto req = ParseBody<Req>(body, "request");
    if (!req) return req.error();
    auto rep = fn(*req);
    if (!rep) return rep.error();
    rep->SerializeToString(&reply.body);
    return Status::Ok();
  };
}

template <class T>
Result<pb::AttrReply> WrapAttr(Result<T> a) {
  if (!a) return Err(a.error());
  pb::AttrReply r;
  *r.mutable_attr() = std::move(*a);
  return r;
}

Result<pb::Empty> WrapStatus(Status s) {
  if (!s.ok()) return Err(s);
  return pb::Empty{};
}

}  // namespace

MdsService::MdsService(const Config& cfg)
    : cfg_(cfg),
      server_("mds", 8),
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
  std::unique_ptr<MdsService> s(new MdsService(cfg));
  auto store = MdsStore::Open(cfg.mds.data_dir, LayoutFromConfig(cfg));
  if (!store) return Err(store.error());
  s->store_ = std::move(*store);
  // A brand-new store had no earlier incarnation whose leases could linger.
  if (s->store_->created()) s->leases_.SkipGrace();
  s->RegisterHandlers();
  return s;
}

std::vector<uint32_t> MdsService::AliveDss() {
  std::lock_guard lk(dss_mu_);
  auto now = std::chrono::steady_clock::now();
  auto timeout = std::chrono::milliseconds(cfg_.mds.heartbeat_timeout_ms);
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < dss_.size(); i++)
    if (dss_[i].registered && now - dss_[i].last_seen < timeout) out.push_back(i);
  return out;
}

void MdsService::RegisterHandlers() {
  MdsStore* st = store_.get();
  LeaseTable* lt = &leases_;
  // Reads grant a lease before reading (so a racing change revokes it);
  // changes revoke other holders after committing and before replying.
  server_.Handle(pb::M_LOOKUP, Typed<pb::LookupReq>([st, lt](const pb::LookupReq& r) {
    lt->Grant(r.client_id(), r.parent());
    auto a = st->Lookup(r.parent(), r.name());
    if (a) lt->Grant(r.client_id(), a->ino());
    // The child was found before its lease was granted: read its
    // attributes again under the grant, so a racing change revokes them.
    if (a) a = st->GetAttr(a->ino());
    return WrapAttr(std::move(a));
  }));
  server_.Handle(pb::M_GETATTR, Typed<pb::GetAttrReq>([st, lt](const pb::GetAttrReq& r) {
    lt->Grant(r.client_id(), r.ino());
    return WrapAttr(st->GetAttr(r.ino()));
  }));
  server_.Handle(pb::M_SETATTR, Typed<pb::SetAttrReq>([this, st, lt](const pb::SetAttrReq& r) -> Result<pb::AttrReply> {
    RUSTFS_RETURN_ERR(lt->CheckGrace());
    if (r.valid() & pb::SET_LAYOUT) RUSTFS_RETURN_ERR(CheckLayout(r.layout(), cfg_.dss.size()));
    auto a = st->SetAttr(r);
    if (a) lt->Revoke(r.ino(), "", r.client_id());
    return WrapAttr(std::move(a));
  }));
  auto create = [st, lt](bool dir) {
    return Typed<pb::CreateReq>([st, lt, dir](const pb::CreateReq& r) -> Result<pb::AttrReply> {
      RUSTFS_RETURN_ERR(lt->CheckGrace());
      lt->Grant(r.client_id(), r.parent());
      auto a = st->Create(r, dir);
      if (a) {
        lt->Grant(r.client_id(), a->ino());
        lt->Revoke(r.parent(), r.name(), r.client_id());
      }
      return WrapAttr(std::move(a));
    });
  };
  server_.Handle(pb::M_CREATE, create(false));
  server_.Handle(pb::M_MKDIR, create(true));
  server_.Handle(pb::M_READDIR, Typed<pb::ReadDirReq>([st](const pb::ReadDirReq& r) {
    return st->ReadDir(r.ino(), r.after(), r.max() ? r.max() : 1024);
  }));
  auto remove = [st, lt](bool dir) {
    return Typed<pb::NameReq>([st, lt, dir](const pb::NameReq& r) -> Result<pb::Empty> {
      RUSTFS_RETURN_ERR(lt->CheckGrace());
      auto victim = st->Lookup(r.parent(), r.name());
      Status s = dir ? st->Rmdir(r.parent(), r.name()) : st->Unlink(r.parent(), r.name());
      if (s.ok()) {
        lt->Revoke(r.parent(), r.name(), r.client_id());
        if (victim) lt->Revoke(victim->ino(), "", r.client_id());
      }
      return WrapStatus(s);
    });
  };
  server_.Handle(pb::M_UNLINK, remove(false));
  server_.Handle(pb::M_RMDIR, remove(true));
  server_.Handle(pb::M_RENAME, Typed<pb::RenameReq>([st, lt](const pb::RenameReq& r) -> Result<pb::Empty> {
    RUSTFS_RETURN_ERR(lt->CheckGrace());
    auto moved = st->Lookup(r.parent(), r.name());
    auto replaced = st->Lookup(r.new_parent(), r.new_name());
    Status s = st->Rename(r);
    if (s.ok()) {
      lt->Revoke(r.parent(), r.name(), r.client_id());
      lt->Revoke(r.new_parent(), r.new_name(), r.client_id());
      if (moved) lt->Revoke(moved->ino(), "", r.client_id());
      if (replaced) lt->Revoke(replaced->ino(), "", r.client_id());
    }
    return WrapStatus(s);
  }));
  server_.Handle(pb::M_REGISTER_CLIENT,
                 Typed<pb::RegisterClientReq>([lt](const pb::RegisterClientReq& r)
                                                  -> Result<pb::RegisterClientReply> {
    if (r.callback_address().empty()) return Err(InvalidArgument("empty callback address"));
    pb::RegisterClientReply rep;
    rep.set_client_id(lt->Register(r.callback_address()));
    rep.set_lease_ms(uint32_t(lt->lease().count()));
    return rep;
  }));
  server_.Handle(pb::M_END_SESSION, Typed<pb::RenewLeasesReq>([lt](const pb::RenewLeasesReq& r) {
    lt->End(r.client_id());
    return WrapStatus(Status::Ok());
  }));
  server_.Handle(pb::M_RENEW_LEASES, Typed<pb::RenewLeasesReq>([lt](const pb::RenewLeasesReq& r) {
    return WrapStatus(lt->Renew(r.client_id()));
  }));
  server_.Handle(pb::M_STATFS, Typed<pb::Empty>([this, st](const pb::Empty&) -> Result<pb::StatFsReply> {
    pb::StatFsReply r;
    uint64_t free = 0;
    {
      std::lock_guard lk(dss_mu_);
      for (auto& d : dss_) free += d.free_bytes;
    }
    // Usable space: parity (or extra replicas) take the rest of every chunk.
    const pb::Layout layout = LayoutFromConfig(cfg_);
    r.set_free_bytes(free / LayoutWidth(layout) * DataShards(layout));
    r.set_total_bytes(r.free_bytes());
    r.set_files(st->FileCount());
    return r;
  }));
  server_.Handle(pb::M_GET_CHUNK_MAP, Typed<pb::GetChunkMapReq>([st, lt](const pb::GetChunkMapReq& r) {
    GetCounter("mds.chunk_map_rpcs").Inc();
    lt->Grant(r.client_id(), r.ino());  // the layout lease (LLD-002 §1.1)
    return st->GetChunkMap(r.ino(), r.offset(), r.length());
  }));
  server_.Handle(pb::M_ALLOCATE_CHUNK,
                 Typed<pb::AllocateChunkReq>([this, st](const pb::AllocateChunkReq& r)
                                                 -> Result<pb::AllocateChunkReply> {
    auto attr = st->GetAttr(r.ino());
    if (!attr) return Err(attr.error());
    auto place = PlaceChunk(AliveDss(), LayoutWidth(attr->layout()), r.ino(), r.index());
    if (!place) return Err(place.error());
    return st->AllocateChunk(r.ino(), r.index(), *place);
  }));
  server_.Handle(pb::M_COMMIT_CHUNK, Typed<pb::CommitChunkReq>([st, lt](const pb::CommitChunkReq& r) -> Result<pb::AttrReply> {
    RUSTFS_RETURN_ERR(lt->CheckGrace());
    auto a = st->CommitChunk(r);
    // New chunk versions (and maybe a new size): every other holder's map
    // and cached bytes of this file are stale.
    if (a) lt->Revoke(r.ino(), "", r.client_id());
    return WrapAttr(std::move(a));
  }));
  server_.Handle(pb::M_REGISTER_DSS,
                 Typed<pb::RegisterDssReq>([this](const pb::RegisterDssReq& r) -> Result<pb::Empty> {
    std::lock_guard lk(dss_mu_);
    uint32_t id = r.info().id();
    if (id >= dss_.size())
      return Err(InvalidArgument("DSS id " + std::to_string(id) + " is not in [[dss]]"));
    if (dss_[id].address != r.info().address())
      return Err(InvalidArgument("DSS " + std::to_string(id) + " claims address " +
                                 r.info().address() + ", config says " + dss_[id].address));
    if (!dss_[id].registered) LOG_INFO("DSS {} at {} registered", id, r.info().address());
    dss_[id].registered = true;
    dss_[id].last_seen = std::chrono::steady_clock::now();
    dss_[id].free_bytes = r.info().free_bytes();
    return pb::Empty{};
  }));
  server_.Handle(pb::M_LIST_DSS, Typed<pb::Empty>([this](const pb::Empty&) -> Result<pb::ListDssReply> {
    auto alive = AliveDss();
    pb::ListDssReply r;
    std::lock_guard lk(dss_mu_);
    for (uint32_t i = 0; i < dss_.size(); i++) {
      auto* d = r.add_dss();
      d->set_id(i);
      d->set_address(dss_[i].address);
      d->set_alive(std::find(alive.begin(), alive.end(), i) != alive.end());
      d->set_free_bytes(dss_[i].free_bytes);
    }
    return r;
  }));
  server_.Handle(pb::M_REPORT_BAD_SHARD,
                 Typed<pb::ReportBadShardReq>([st](const pb::ReportBadShardReq& r) {
    LOG_WARN("bad shard reported: ino {} chunk {} v{} shard {} on DSS {}: {}", r.ino(), r.index(),
             r.version(), r.shard(), r.dss(), r.reason());
    GetCounter("mds.bad_shards_reported").Inc();
    return WrapStatus(st->RecordBadShard(r));
  }));
}

void MdsService::GcLoop() {
  Counter& deleted = GetCounter("mds.gc_shards_deleted");
  while (!stop_) {
    for (int i = 0; i < 10 && !stop_; i++) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (auto& [key, g] : store_->PeekGarbage(256)) {
      bool all = true;
      for (int s = 0; s < g.chunk().dss_size(); s++) {
        uint32_t d = g.chunk().dss(s);
        if (d >= dss_.size()) continue;
        pb::DeleteShardReq req;
        req.mutable_key()->set_ino(g.ino());
        req.mutable_key()->set_chunk(g.chunk().index());
        req.mutable_key()->set_version(g.chunk().version());
        req.mutable_key()->set_shard(s);
        auto r = dss_[d].channel->Call(pb::M_DELETE_SHARD, req);
        if (r) {
          deleted.Inc();
        } else if (r.error().code() != Code::kNotFound) {
          all = false;  // DSS down: retry on a later pass
        }
      }
      if (all) (void)store_->DropGarbage(key);
    }
  }
}

Status MdsService::Start() {
  RUSTFS_RETURN_IF_ERROR(server_.Start(cfg_.mds.address));
  gc_ = std::thread([this] { GcLoop(); });
  LOG_INFO("MDS listening on {} (store {})", cfg_.mds.address, cfg_.mds.data_dir);
  return Status::Ok();
}

void MdsService::Stop() {
  stop_ = true;
  if (gc_.joinable()) gc_.join();
  server_.Stop();
}

}  // namespace rustfs::mds

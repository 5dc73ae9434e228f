// MDS handlers for file data: chunk maps (the layout lease of LLD-002
// §1.1), chunk versions, hole punching, bad shard reports, and the DSS
// registry they place chunks on.
#include <algorithm>

#include "common/log.h"
#include "mds/handler_util.h"
#include "mds/layout_check.h"
#include "mds/mds_service.h"
#include "mds/placement.h"

namespace rustfs::mds {

void MdsService::RegisterDataHandlers() {
  MdsStore* st = store_.get();
  LeaseTable* lt = &leases_;
  server_.Handle(pb::M_GET_CHUNK_MAP, Typed<pb::GetChunkMapReq>([st, lt](const pb::GetChunkMapReq& r) {
    GetCounter("mds.chunk_map_rpcs").Inc();
    lt->Grant(r.client_id(), r.ino());  // the layout lease (LLD-002 §1.1)
    // Taken before reading, like the lease: an unlink racing with this
    // open asks the client whether it keeps the file.
    if (r.open()) lt->AddRef(r.client_id(), r.ino());
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
  server_.Handle(pb::M_PUNCH, Typed<pb::PunchReq>([st, lt](const pb::PunchReq& r) -> Result<pb::AttrReply> {
    RUSTFS_RETURN_ERR(lt->CheckGrace());
    lt->Revoke(r.ino(), "", r.client_id(), /*recall=*/true);  // buffered writes land first
    auto a = st->Punch(r);
    if (a) lt->Revoke(r.ino(), "", r.client_id());
    return WrapAttr(std::move(a));
  }));
  server_.Handle(pb::M_REPORT_BAD_SHARD,
                 Typed<pb::ReportBadShardReq>([st](const pb::ReportBadShardReq& r) {
    LOG_WARN("bad shard reported: ino {} chunk {} v{} shard {} on DSS {}: {}", r.ino(), r.index(),
             r.version(), r.shard(), r.dss(), r.reason());
    GetCounter("mds.bad_shards_reported").Inc();
    return WrapStatus(st->RecordBadShard(r));
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
}

}  // namespace rustfs::mds

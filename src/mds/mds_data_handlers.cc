// MDS handlers for file data: chunk maps (the layout lease of LLD-002
// §1.1), chunk versions, hole punching, bad shard reports, and the DSS
// registry they place chunks on.
#include <algorithm>

#include "common/log.h"
#include "mds/handler_util.h"
#include "layout/layout_rules.h"
#include "mds/mds_service.h"
#include "mds/placement.h"

namespace rustfs::mds {

std::vector<uint32_t> MdsService::WritableDss() {
  // A DSS reporting less room than two of the largest shards (a whole
  // chunk, replicated) takes no new shards: it still serves reads, and
  // writes to chunks it holds move their shard elsewhere.
  const uint64_t min_free = 2 * cfg_.layout.chunk_size;
  std::vector<uint32_t> out;
  std::lock_guard lk(dss_mu_);
  const auto now = std::chrono::steady_clock::now();
  for (uint32_t i = 0; i < dss_.size(); i++)
    if (Alive(dss_[i], now) && dss_[i].free_bytes >= min_free) out.push_back(i);
  return out;
}

Status MdsService::CheckPlacement(const pb::ChunkEntry& c, const pb::Layout& l) {
  const uint32_t width = layout::LayoutWidth(l);
  if (uint32_t(c.dss_size()) != width)
    return InvalidArgument("chunk placed on " + std::to_string(c.dss_size()) +
                           " positions, the file's layout has " + std::to_string(width));
  std::vector<uint32_t> seen;
  for (uint32_t d : c.dss()) {
    if (d == layout::kNoDss) continue;
    if (d >= dss_.size()) return InvalidArgument("chunk names DSS " + std::to_string(d) + ", which does not exist");
    if (std::find(seen.begin(), seen.end(), d) != seen.end())
      return InvalidArgument("chunk names DSS " + std::to_string(d) + " twice");
    seen.push_back(d);
  }
  const uint32_t min = layout::MinWriteShards(l, cfg_.layout.min_write_shards);
  if (seen.size() < min)
    return Unavailable("only " + std::to_string(seen.size()) + " shards of the chunk were stored, " +
                       "layout.min_write_shards needs " + std::to_string(min));
  return Status::Ok();
}

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
    const std::vector<uint32_t> writable = WritableDss();
    return st->AllocateChunk(r.ino(), r.index(), [&](const pb::Layout& l, std::span<const uint32_t> cur)
                                                     -> Result<std::vector<uint32_t>> {
      const uint32_t min = layout::MinWriteShards(l, cfg_.layout.min_write_shards);
      auto p = PlaceWrite(writable, layout::LayoutWidth(l), min, r.ino(), r.index(), cur);
      // Enough servers are up but too few have room: the cluster is full.
      if (!p && AliveDss().size() >= min)
        return Err({Code::kNoSpace, "too few DSS with room for a chunk (" + std::to_string(writable.size()) +
                                        " of the " + std::to_string(min) + " it needs)"});
      return p;
    });
  }));
  server_.Handle(pb::M_COMMIT_CHUNK, Typed<pb::CommitChunkReq>([this, st, lt](const pb::CommitChunkReq& r) -> Result<pb::AttrReply> {
    RUSTFS_RETURN_ERR(lt->CheckGrace());
    auto attr = st->GetAttr(r.ino());
    if (attr) RUSTFS_RETURN_ERR(CheckPlacement(r.chunk(), attr->layout()));
    auto a = st->CommitChunk(r);
    if (a && layout::IsDegraded(r.chunk())) GetCounter("mds.degraded_commits").Inc();
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

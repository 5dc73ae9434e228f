#include "mds/repairer.h"

#include <algorithm>
#include <thread>

#include "common/clock.h"
#include "common/log.h"
#include "ec/rs_codec.h"
#include "layout/layout_rules.h"

namespace rustfs::mds {

namespace {
constexpr size_t kQueueBatch = 64;  // queued chunks read from the store at a time

// Positions of `h`'s chunk with no healthy copy: stored nowhere, on a DSS
// gone past the grace period, or reported corrupt.
std::vector<bool> MissingOf(const MdsStore::ChunkHealth& h, const std::set<uint32_t>& gone) {
  std::vector<bool> missing(size_t(h.chunk.dss_size()));
  for (int s = 0; s < h.chunk.dss_size(); s++) {
    const uint32_t d = h.chunk.dss(s);
    missing[size_t(s)] = d == layout::kNoDss || gone.count(d) ||
                         std::find(h.bad_shards.begin(), h.bad_shards.end(), uint32_t(s)) != h.bad_shards.end();
  }
  return missing;
}
}  // namespace

Repairer::Repairer(MdsStore& store, LeaseTable& leases, Cluster cluster, const Config::Repair& cfg)
    : store_(store),
      leases_(leases),
      cluster_(std::move(cluster)),
      cfg_(cfg),
      chunks_repaired_(GetCounter("mds.repair_chunks")),
      bytes_repaired_(GetCounter("mds.repair_bytes_written")),
      deferred_(GetCounter("mds.repair_deferred")),
      queued_(GetCounter("mds.repair_queued_chunks")),
      bytes_left_(GetCounter("mds.repair_bytes_left")),
      rate_(GetCounter("mds.repair_rate_bytes_per_s")),
      gone_(GetCounter("mds.dss_gone")),
      scrubbed_(GetCounter("mds.scrub_shards")),
      scrub_bad_(GetCounter("mds.scrub_bad_shards")) {
  GetCounter("mds.repair_limit_bytes_per_s").Set(cfg.max_bytes_per_s);
}

void Repairer::Pace(uint64_t bytes, const std::atomic<bool>& stop) {
  // A budget of max_bytes_per_s that refills continuously: after moving
  // `bytes`, wait until the clock has caught up with what was spent.
  const int64_t now = SteadyNowUs();
  if (budget_start_us_ == 0 || now - budget_start_us_ > 2'000'000) {
    budget_start_us_ = now;
    budget_bytes_ = 0;
  }
  budget_bytes_ += bytes;
  const int64_t due_us = budget_start_us_ + int64_t(budget_bytes_ * 1'000'000 / cfg_.max_bytes_per_s);
  while (!stop && SteadyNowUs() < due_us)
    std::this_thread::sleep_for(std::chrono::microseconds(std::min<int64_t>(due_us - SteadyNowUs(), 100'000)));
}

void Repairer::Pass(const std::atomic<bool>& stop) {
  const std::set<uint32_t> gone = cluster_.gone();
  for (uint32_t d : gone)
    if (queued_gone_.insert(d).second) {
      auto n = store_.QueueChunksOn(d);
      LOG_WARN("DSS {} gone past repair.grace_ms: {} chunks queued for repair", d,
               n ? std::to_string(*n) : n.error().ToString());
      if (!n) queued_gone_.erase(d);
    }
  std::erase_if(queued_gone_, [&](uint32_t d) { return !gone.count(d); });

  // What is left, before starting: missing shards x their capacity.
  uint64_t chunks = 0, left = 0;
  for (auto q = store_.RepairQueue(kQueueBatch); !q.empty(); q = store_.RepairQueue(kQueueBatch, q.back())) {
    for (auto [ino, index] : q) {
      chunks++;
      auto h = store_.GetChunkHealth(ino, index);
      auto a = store_.GetAttr(ino);
      if (!h || !a) continue;
      const auto missing = MissingOf(*h, gone);
      left += uint64_t(std::count(missing.begin(), missing.end(), true)) *
              layout::GeometryOf(a->layout()).shard_capacity();
    }
  }
  queued_.Set(chunks);
  bytes_left_.Set(left);
  // Set after the queue gauge, so a reader that sees a DSS counted gone
  // also sees its chunks counted queued.
  gone_.Set(gone.size());
  if (chunks == 0) {
    rate_.Set(0);
    return;
  }

  const int64_t started = SteadyNowUs();
  const uint64_t moved_before = moved_bytes_;
  std::string waiting;  // why a chunk stays queued, logged once per pass
  for (auto q = store_.RepairQueue(kQueueBatch); !q.empty() && !stop;
       q = store_.RepairQueue(kQueueBatch, q.back())) {
    for (auto [ino, index] : q) {
      if (stop) break;
      rustfs::Status s = RepairChunk(ino, index, gone, stop);
      if (!s.ok()) {
        deferred_.Inc();
        waiting = "chunk " + std::to_string(index) + " of inode " + std::to_string(ino) + ": " + s.message();
      }
    }
  }
  const int64_t took_us = std::max<int64_t>(1, SteadyNowUs() - started);
  const size_t still = store_.RepairQueueSize();
  queued_.Set(still);
  if (still == 0) bytes_left_.Set(0);
  rate_.Set((moved_bytes_ - moved_before) * 1'000'000 / uint64_t(took_us));
  // A chunk waiting for a server (one down within its grace) is retried
  // every pass; saying so once a minute is enough.
  if (!waiting.empty() && SteadyNowUs() - last_warned_us_ > 60'000'000) {
    LOG_WARN("repair: {} chunks still queued; last: {}", still, waiting);
    last_warned_us_ = SteadyNowUs();
  }
}

bool Repairer::Scrub(const std::atomic<bool>& stop, size_t max_chunks) {
  const std::set<uint32_t> gone = cluster_.gone();
  auto chunks = store_.ScanChunks(scrub_after_, max_chunks);
  for (auto& [ino, c] : chunks) {
    if (stop) return false;
    scrub_after_ = {ino, c.index()};
    auto attr = store_.GetAttr(ino);
    if (!attr) continue;
    const uint64_t cap = layout::GeometryOf(attr->layout()).shard_capacity();
    for (int s = 0; s < c.dss_size() && !stop; s++) {
      const uint32_t d = c.dss(s);
      net::RpcChannel* ch = d == layout::kNoDss || gone.count(d) ? nullptr : cluster_.channel(d);
      if (!ch) continue;  // nothing stored, or already queued for repair
      pb::ReadShardReq req;
      *req.mutable_key() = layout::MakeShardKey(ino, c, uint32_t(s));
      req.set_length(cap);
      req.set_from_disk(true);
      auto r = ch->Call(pb::M_READ_SHARD, req);
      scrubbed_.Inc();
      moved_bytes_ += cap;
      Pace(cap, stop);
      if (r || (r.error().code() != Code::kCorruption && r.error().code() != Code::kNotFound)) continue;
      // NotFound of a version just replaced is a race with the writer,
      // not a loss: only the chunk's current version counts.
      auto h = store_.GetChunkHealth(ino, c.index());
      if (!h || h->chunk.version() != c.version()) continue;
      scrub_bad_.Inc();
      LOG_WARN("scrub: shard {} of chunk {} v{} of inode {} on DSS {}: {}", s, c.index(), c.version(), ino, d,
               r.error().message());
      pb::ReportBadShardReq bad;
      bad.set_ino(ino);
      bad.set_index(c.index());
      bad.set_version(c.version());
      bad.set_shard(uint32_t(s));
      bad.set_dss(d);
      bad.set_reason("scrub: " + r.error().message());
      (void)store_.RecordBadShard(bad);
    }
  }
  if (chunks.size() < max_chunks) {
    scrub_after_ = {0, 0};
    return true;
  }
  return false;
}

rustfs::Status Repairer::RepairChunk(uint64_t ino, uint64_t index, const std::set<uint32_t>& gone,
                                     const std::atomic<bool>& stop) {
  auto h = store_.GetChunkHealth(ino, index);
  auto attr = store_.GetAttr(ino);
  if (!h || !attr) {  // the chunk or its file went away: nothing to repair
    if ((!h && h.error().code() != Code::kNotFound) || (!attr && attr.error().code() != Code::kNotFound))
      return !h ? h.error() : attr.error();
    return store_.DropFromRepair(ino, index);
  }
  const pb::ChunkEntry& c = h->chunk;
  const layout::EcGeometry g = layout::GeometryOf(attr->layout());
  const uint32_t n = g.k + g.m;
  if (uint32_t(c.dss_size()) != n) return InvalidArgument("chunk placement does not match the file's layout");
  std::vector<bool> missing = MissingOf(*h, gone);
  if (std::none_of(missing.begin(), missing.end(), [](bool b) { return b; }))
    return store_.DropFromRepair(ino, index);

  // Where a rebuilt shard goes: a corrupt copy on a live server is
  // rewritten in place; others go to a writable DSS the chunk does not use
  // yet, spread by chunk. Checked before anything is read: a chunk with
  // nowhere to go waits without costing reads.
  const std::vector<uint32_t> writable = cluster_.writable();
  std::vector<uint32_t> used;
  for (uint32_t s = 0; s < n; s++)
    if (!missing[s]) used.push_back(c.dss(int(s)));
  const size_t rot = size_t(ino * 0x9E3779B97F4A7C15ull >> 32) + index;
  auto target_for = [&](uint32_t s) {
    const uint32_t old = c.dss(int(s));
    auto unused = [&](uint32_t d) { return std::find(used.begin(), used.end(), d) == used.end(); };
    if (old != layout::kNoDss && !gone.count(old) &&
        std::binary_search(writable.begin(), writable.end(), old) && unused(old))
      return old;
    for (size_t j = 0; j < writable.size(); j++) {
      const uint32_t d = writable[(rot + j) % writable.size()];
      if (unused(d) && d != old) return d;
    }
    return layout::kNoDss;
  };
  bool any_target = false;
  for (uint32_t s = 0; s < n && !any_target; s++) any_target = missing[s] && target_for(s) != layout::kNoDss;
  if (!any_target) return Unavailable("no live DSS with room that the chunk does not use already");

  // Whole shards from healthy positions until `need` answered; a shard
  // found corrupt or absent is rebuilt too.
  const uint64_t cap = g.shard_capacity();
  const uint32_t need = g.replicated ? 1 : g.k;
  std::vector<std::string> bufs(n);
  uint32_t got = 0;
  for (uint32_t s = 0; s < n && got < need && !stop; s++) {
    if (missing[s]) continue;
    net::RpcChannel* ch = cluster_.channel(c.dss(int(s)));
    if (!ch) continue;
    pb::ReadShardReq req;
    *req.mutable_key() = layout::MakeShardKey(ino, c, s);
    req.set_offset(0);
    req.set_length(cap);
    auto r = ch->Call(pb::M_READ_SHARD, req);
    if (!r || r->payload.size() != cap) {
      if (!r && (r.error().code() == Code::kCorruption || r.error().code() == Code::kNotFound)) {
        missing[s] = true;  // no healthy copy there either: rebuilt, in place if it can be
        std::erase(used, c.dss(int(s)));
      }
      continue;
    }
    bufs[s] = std::move(r->payload);
    got++;
    moved_bytes_ += cap;
    Pace(cap, stop);
  }
  if (got < need)
    return Unavailable("only " + std::to_string(got) + " of the " + std::to_string(need) +
                       " healthy shards it needs could be read");

  std::vector<uint32_t> want;
  for (uint32_t s = 0; s < n; s++)
    if (missing[s]) want.push_back(s);
  std::vector<std::string> rebuilt(want.size(), std::string(cap, '\0'));
  if (g.replicated) {
    for (auto& r : rebuilt)
      for (uint32_t s = 0; s < n; s++)
        if (!bufs[s].empty()) r = bufs[s];
  } else {
    auto codec = ec::RsCodec::Shared(g.k, g.m);
    if (!codec) return codec.error();
    std::vector<const uint8_t*> srcs(n, nullptr);
    for (uint32_t s = 0; s < n; s++)
      if (!bufs[s].empty()) srcs[s] = reinterpret_cast<const uint8_t*>(bufs[s].data());
    std::vector<uint8_t*> outs;
    for (auto& r : rebuilt) outs.push_back(reinterpret_cast<uint8_t*>(r.data()));
    RUSTFS_RETURN_IF_ERROR((*codec)->Reconstruct(srcs, want, outs, cap));
  }

  pb::ChunkEntry placed = c;
  std::vector<uint32_t> done;
  std::string blocked;
  for (size_t i = 0; i < want.size() && !stop; i++) {
    const uint32_t s = want[i], target = target_for(s);
    if (target == layout::kNoDss) {
      blocked = "no live DSS with room that the chunk does not use already";
      continue;
    }
    net::RpcChannel* ch = cluster_.channel(target);
    pb::WriteShardReq w;
    *w.mutable_key() = layout::MakeShardKey(ino, c, s);
    w.set_offset(0);
    w.set_capacity(cap);
    auto r = ch ? ch->Call(pb::M_WRITE_SHARD, w, rebuilt[i]) : Err(Unavailable("no channel"));
    if (!r) {
      blocked = "write to DSS " + std::to_string(target) + ": " + r.error().message();
      continue;
    }
    used.push_back(target);
    placed.set_dss(int(s), target);
    done.push_back(s);
    moved_bytes_ += cap;
    bytes_repaired_.Add(cap);
    Pace(cap, stop);
  }
  if (!done.empty()) {
    RUSTFS_RETURN_IF_ERROR(store_.RecordRepair(ino, placed, done));
    // Readers holding the old map would keep decoding around the hole.
    leases_.Revoke(ino, "", 0);
    if (done.size() == want.size()) chunks_repaired_.Inc();
    bytes_left_.Set(bytes_left_.Get() - std::min<uint64_t>(bytes_left_.Get(), done.size() * cap));
  }
  if (done.size() < want.size()) return Unavailable(blocked.empty() ? "stopped" : blocked);
  return rustfs::Status::Ok();
}

}  // namespace rustfs::mds

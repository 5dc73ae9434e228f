// EcReader's repair paths: degraded EC reads (the same byte range of K
// other shards, decoded) and other replicas, for the pieces the fast path
// (ec_reader.cc) could not serve.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <map>

#include "client/ec_reader.h"
#include "net/wire_status.h"
#include "common/clock.h"
#include "common/log.h"

namespace rustfs::client {

namespace {

// Starts a read of [offset, offset+length) of `shard`; a position stored
// nowhere gets no call (an already-failed PendingCall stands in). A DSS
// marked down is asked all the same: RepairOrder puts it last, so it is
// asked only when the others cannot make up K, and it may be back.
net::PendingCall StartShardRead(DssPool& dss, uint64_t ino, const pb::ChunkEntry& c,
                                uint32_t shard, uint64_t offset, uint64_t length) {
  uint32_t id = c.dss(shard);
  net::Transport* ch = dss.Get(id);
  if (!ch) return {};
  pb::ReadShardReq req;
  *req.mutable_key() = MakeShardKey(ino, c, shard);
  req.set_offset(offset);
  req.set_length(length);
  return ch->Start(pb::M_READ_SHARD, req);
}

// Shards to try for a repair, in index order within each group: those on
// healthy DSS, then recently slow ones (a stalled server is used only when
// nothing else is left), then ones marked down (they may be back).
std::vector<uint32_t> RepairOrder(DssPool& dss, const pb::ChunkEntry& c, uint32_t n) {
  std::vector<uint32_t> order(n);
  for (uint32_t s = 0; s < n; s++) order[s] = s;
  auto down_from = std::stable_partition(order.begin(), order.end(), [&](uint32_t s) { return !dss.IsDown(c.dss(s)); });
  std::stable_partition(order.begin(), down_from, [&](uint32_t s) { return !dss.IsSlow(c.dss(s)); });
  return order;
}

Result<net::RpcReply> WaitShard(DssPool& dss, net::PendingCall& pc, uint32_t dss_id) {
  auto r = pc.Wait();
  if (!r && r.error().code() == Code::kUnavailable) dss.MarkDown(dss_id);
  return r;
}

}  // namespace

void EcReader::ReportBad(uint64_t ino, const pb::ChunkEntry& c, uint32_t shard, const Status& why) {
  corrupt_reported_.Inc();
  LOG_WARN("corrupt shard {}-{}-{}-{} on DSS {}: {}", ino, c.index(), c.version(), shard,
           c.dss(shard), why.message());
  pb::ReportBadShardReq req;
  req.set_ino(ino);
  req.set_index(c.index());
  req.set_version(c.version());
  req.set_shard(shard);
  req.set_dss(c.dss(shard));
  req.set_reason(why.message());
  (void)mds_.CallStatus(pb::M_REPORT_BAD_SHARD, req);
}

Status EcReader::Repair(const std::vector<Failed>& failed) {
  std::vector<Failed> ec;  // erasure-coded jobs: rebuilt together when there are several
  for (const Failed& f : failed) {
    const ReadExtent& e = *f.job->extent;
    if (f.why.code() == Code::kCorruption) ReportBad(e.ino, *e.chunk, f.job->read.shard, f.why);
    if (f.why.code() == Code::kInvalidArgument) return f.why;  // our bug, not a failure to repair
    if (!e.geo->replicated) ec.push_back(f);
  }
  const bool batched = ec.size() > 1;
  if (batched) RUSTFS_RETURN_IF_ERROR(RepairEcBatch(ec));
  for (const Failed& f : failed) {
    const ReadExtent& e = *f.job->extent;
    const layout::EcGeometry& g = *e.geo;
    if (!g.replicated && batched) continue;
    std::vector<bool> bad(g.k + g.m, false);
    bad[f.job->read.shard] = true;
    RUSTFS_RETURN_IF_ERROR(g.replicated ? FromReplica(e.ino, g, *f.job, bad, f.why)
                                        : Degraded(e.ino, g, *f.job, bad, f.why, f.slow));
  }
  return Status::Ok();
}

Status EcReader::Rebuild(const layout::EcGeometry& g, const std::vector<const uint8_t*>& srcs,
                         uint32_t want, uint64_t len, uint8_t* out) {
  auto codec = ec::RsCodec::Shared(g.k, g.m);
  if (!codec) return codec.error();
  RUSTFS_RETURN_IF_ERROR((*codec)->Reconstruct(srcs, std::span<const uint32_t>(&want, 1),
                                               std::span<uint8_t* const>(&out, 1), len));
  reconstructions_.Inc();
  degraded_bytes_.Add(len * g.k);
  return Status::Ok();
}

// Several pieces to repair at once (a hedged or failed BatchRead, a down
// server): each needs the same range of K other shards of its chunk, and
// all of those travel as one BatchRead per DSS, so N pieces cost K round
// trips in parallel, not N x K.
Status EcReader::RepairEcBatch(const std::vector<Failed>& failed) {
  constexpr uint64_t kBlock = Config::kChecksumBlock;
  struct Work {
    const Failed* f;
    uint64_t off = 0, len = 0;       // the 4 KiB-aligned shard range to rebuild
    std::vector<std::string> bufs;   // by shard: the sources' bytes
    std::vector<bool> bad;           // shards that failed or are excluded
    bool ok = true;
  };
  std::vector<Work> work(failed.size());
  struct Seg {
    size_t w;
    uint32_t shard;
  };
  std::map<uint32_t, std::pair<pb::BatchReadReq, std::vector<Seg>>> per_dss;
  for (size_t i = 0; i < failed.size(); i++) {
    Work& w = work[i];
    const Job& job = *failed[i].job;
    const pb::ChunkEntry& c = *job.extent->chunk;
    const layout::EcGeometry& g = *job.extent->geo;
    const uint32_t n = g.k + g.m;
    w.f = &failed[i];
    w.off = job.read.shard_offset / kBlock * kBlock;
    w.len = std::min((job.read.shard_offset + job.read.length + kBlock - 1) / kBlock * kBlock,
                     g.shard_capacity()) - w.off;
    w.bufs.resize(n);
    w.bad.assign(n, false);
    w.bad[job.read.shard] = true;
    uint32_t chosen = 0;
    for (uint32_t s : RepairOrder(dss_, c, n)) {
      if (chosen == g.k) break;
      if (s == job.read.shard || dss_.IsDown(c.dss(s))) continue;
      auto& [req, segs] = per_dss[c.dss(s)];
      auto* r = req.add_reads();
      *r->mutable_key() = MakeShardKey(job.extent->ino, c, s);
      r->set_offset(w.off);
      r->set_length(w.len);
      segs.push_back({i, s});
      chosen++;
    }
    w.ok = chosen == g.k;
  }
  std::vector<std::pair<uint32_t, net::PendingCall>> calls;
  for (auto& [id, batch] : per_dss) {
    net::Transport* ch = dss_.Get(id);
    calls.emplace_back(id, ch ? ch->Start(pb::M_BATCH_READ, batch.first) : net::PendingCall());
    batch_rpcs_.Inc();
    segments_.Add(batch.second.size());
  }
  for (auto& [id, call] : calls) {
    const auto& segs = per_dss[id].second;
    auto r = WaitShard(dss_, call, id);
    auto rep = r ? net::ParseBody<pb::BatchReadReply>(r->body, "BatchRead reply")
                 : Result<pb::BatchReadReply>(Err(r.error()));
    const bool whole = rep && size_t(rep->results_size()) == segs.size();
    uint64_t pos = 0;
    for (size_t k = 0; k < segs.size(); k++) {
      Work& w = work[segs[k].w];
      const uint32_t s = segs[k].shard;
      const bool good = whole && rep->results(int(k)).code() == 0 &&
                        rep->results(int(k)).length() == w.len && pos + w.len <= r->payload.size();
      if (!good) {
        w.ok = false;
        w.bad[s] = true;
        if (whole && rep->results(int(k)).code() == net::ToWire(Code::kCorruption))
          ReportBad(w.f->job->extent->ino, *w.f->job->extent->chunk, s, Corruption(rep->results(int(k)).error()));
        continue;
      }
      w.bufs[s].assign(r->payload.data() + pos, w.len);
      pos += w.len;
      shard_bytes_.Add(w.len);
    }
  }
  degraded_batches_.Inc();
  for (Work& w : work) {
    const Job& job = *w.f->job;
    const layout::EcGeometry& g = *job.extent->geo;
    const uint32_t n = g.k + g.m;
    if (!w.ok) {  // one by one, from whichever shards still answer
      RUSTFS_RETURN_IF_ERROR(Degraded(job.extent->ino, g, job, w.bad, w.f->why, w.f->slow));
      continue;
    }
    std::vector<const uint8_t*> srcs(n, nullptr);
    for (uint32_t s = 0; s < n; s++)
      if (!w.bufs[s].empty()) srcs[s] = reinterpret_cast<const uint8_t*>(w.bufs[s].data());
    std::string rebuilt(w.len, '\0');
    RUSTFS_RETURN_IF_ERROR(Rebuild(g, srcs, job.read.shard, w.len, reinterpret_cast<uint8_t*>(rebuilt.data())));
    for (auto& p : job.read.pieces)
      std::memcpy(job.extent->dst + p.buf_offset, rebuilt.data() + (p.shard_offset - w.off), p.length);
  }
  return Status::Ok();
}

EcReader::Gathered EcReader::ReadFirst(uint64_t ino, const pb::ChunkEntry& c, bool replicated,
                                      uint32_t need, uint64_t off, uint64_t len,
                                      std::vector<bool>& bad,
                                      const std::function<void(uint32_t, std::string&&)>& on_shard) {
  const std::vector<uint32_t> order = RepairOrder(dss_, c, uint32_t(c.dss_size()));
  struct Pending {
    uint32_t shard;
    net::PendingCall call;
  };
  std::deque<Pending> laggards;  // hedged past, still running
  Gathered out;
  uint32_t& got = out.got;
  auto take = [&](Pending& p) {
    auto r = WaitShard(dss_, p.call, c.dss(p.shard));
    if (!r || r->payload.size() != len) {
      bad[p.shard] = true;
      out.failures += " shard " + std::to_string(p.shard) + " (DSS " + std::to_string(c.dss(p.shard)) +
                      "): " + (r ? "short reply" : r.error().message()) + ";";
      if (!r && r.error().code() == Code::kCorruption) ReportBad(ino, c, p.shard, r.error());
      if (r || r.error().code() != Code::kNotFound) out.all_not_found = false;
      return;
    }
    shard_bytes_.Add(len);
    on_shard(p.shard, std::move(r->payload));
    got++;
  };
  for (size_t next = 0; got < need;) {
    std::vector<Pending> round;
    for (; next < order.size() && got + round.size() < need; next++)
      if (!bad[order[next]]) round.push_back({order[next], StartShardRead(dss_, ino, c, order[next], off, len)});
    if (round.empty()) {
      if (laggards.empty()) break;  // nothing left to try
      take(laggards.front());       // nothing left to start: wait for a slow one
      laggards.pop_front();
      continue;
    }
    const int64_t deadline = SteadyNowUs() + HedgeDelayUs(replicated);
    for (Pending& p : round) {
      if (opt_.hedge && !p.call.Ready(int((deadline - SteadyNowUs() + 999) / 1000))) {
        hedged_.Inc();
        if (replicated) dss_.MarkSlow(c.dss(p.shard));
        laggards.push_back(std::move(p));
        continue;
      }
      take(p);
    }
    for (auto it = laggards.begin(); it != laggards.end() && got < need;) {
      if (!it->call.Ready(0)) {
        ++it;
        continue;
      }
      take(*it);
      it = laggards.erase(it);
    }
  }
  return out;  // laggards still running are dropped (their connections closed)
}

// Serves a replicated job from whichever other replica answers first.
// Every shard of the version is missing: not a failure to repair, but a map
// older than the chunk (an overwrite published a new version and the old
// one was collected); the caller fetches the map again.
Status EcReader::VersionGone(uint64_t ino, const pb::ChunkEntry& c) {
  return {Code::kStale, "chunk " + std::to_string(c.index()) + " version " + std::to_string(c.version()) +
                            " of inode " + std::to_string(ino) + " is gone"};
}

Status EcReader::FromReplica(uint64_t ino, const layout::EcGeometry& g, const Job& job,
                             std::vector<bool>& bad, const Status& first_failure) {
  const pb::ChunkEntry& c = *job.extent->chunk;
  const uint64_t off = job.read.shard_offset;
  Gathered got = ReadFirst(ino, c, true, 1, off, job.read.length, bad, [&](uint32_t, std::string&& bytes) {
    for (auto& p : job.read.pieces)
      std::memcpy(job.extent->dst + p.buf_offset, bytes.data() + (p.shard_offset - off), p.length);
  });
  if (got.got == 1) return Status::Ok();
  if (first_failure.code() == Code::kNotFound && got.all_not_found) return VersionGone(ino, c);
  return IoError("chunk " + std::to_string(c.index()) + " of inode " + std::to_string(ino) +
                 ": no replica readable");
}

Status EcReader::Degraded(uint64_t ino, const layout::EcGeometry& g, const Job& job,
                          std::vector<bool>& bad, const Status& first_failure, bool own_shard_slow) {
  const pb::ChunkEntry& c = *job.extent->chunk;
  // Reed-Solomon codes each byte position across the shards on its own, so
  // the lost range is rebuilt from the same range of K other shards (in
  // whole 4 KiB checksum blocks, which the DSS verifies anyway), not from
  // whole stripe rows: a degraded 4 KiB read costs K x 4 KiB.
  constexpr uint64_t kBlock = Config::kChecksumBlock;
  uint64_t off = job.read.shard_offset / kBlock * kBlock;
  uint64_t len = std::min((job.read.shard_offset + job.read.length + kBlock - 1) / kBlock * kBlock,
                          g.shard_capacity()) - off;
  const uint32_t n = g.k + g.m;
  std::vector<std::string> bufs(n);
  std::vector<bool> have(n, false);
  // The first K shards to answer (data first, then parity; recently slow
  // DSS last; one that does not answer within the hedge delay is replaced).
  Gathered got = ReadFirst(ino, c, false, g.k, off, len, bad, [&](uint32_t s, std::string&& bytes) {
    bufs[s] = std::move(bytes);
    have[s] = true;
  });
  if (got.got < g.k && own_shard_slow) {
    // With servers down, the slow server's own shard may be one of the
    // last K: read it after all, with the ones not tried yet.
    std::vector<bool> skip = bad;
    for (uint32_t s = 0; s < n; s++) skip[s] = skip[s] || have[s];
    skip[job.read.shard] = false;
    Gathered more = ReadFirst(ino, c, false, g.k - got.got, off, len, skip, [&](uint32_t s, std::string&& bytes) {
      bufs[s] = std::move(bytes);
      have[s] = true;
    });
    got.got += more.got;
    got.failures += more.failures;
    got.all_not_found = got.all_not_found && more.all_not_found;
  }
  if (got.got < g.k && first_failure.code() == Code::kNotFound && got.all_not_found)
    return VersionGone(ino, c);
  if (got.got < g.k)
    return IoError("chunk " + std::to_string(c.index()) + " of inode " + std::to_string(ino) +
                   ": fewer than " + std::to_string(g.k) + " shards readable;" + got.failures);
  std::string rebuilt;
  if (have[job.read.shard]) {  // the slow server answered after all
    rebuilt = std::move(bufs[job.read.shard]);
  } else {
    std::vector<const uint8_t*> srcs(n, nullptr);
    for (uint32_t s = 0; s < n; s++)
      if (have[s]) srcs[s] = reinterpret_cast<const uint8_t*>(bufs[s].data());
    rebuilt.assign(len, '\0');
    RUSTFS_RETURN_IF_ERROR(Rebuild(g, srcs, job.read.shard, len, reinterpret_cast<uint8_t*>(rebuilt.data())));
  }
  for (auto& p : job.read.pieces)
    std::memcpy(job.extent->dst + p.buf_offset, rebuilt.data() + (p.shard_offset - off), p.length);
  return Status::Ok();
}

}  // namespace rustfs::client

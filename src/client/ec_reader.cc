#include "client/ec_reader.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <tuple>

#include "layout/coalesce.h"

#include "common/log.h"

namespace rustfs::client {

pb::ShardKey MakeShardKey(uint64_t ino, const pb::ChunkEntry& c, uint32_t shard) {
  pb::ShardKey k;
  k.set_ino(ino);
  k.set_chunk(c.index());
  k.set_version(c.version());
  k.set_shard(shard);
  return k;
}

EcReader::EcReader(DssPool& dss, MdsClient& mds, const Options& options)
    : dss_(dss),
      mds_(mds),
      opt_(options),
      batch_rpcs_(GetCounter("client.batch_reads")),
      segments_(GetCounter("client.batch_segments")),
      coalesced_(GetCounter("client.pieces_coalesced")),
      reconstructions_(GetCounter("client.reconstructions")),
      degraded_bytes_(GetCounter("client.degraded_read_bytes")),
      corrupt_reported_(GetCounter("client.corrupt_shards_reported")),
      shard_bytes_(GetCounter("client.shard_bytes_received")),
      hedged_(GetCounter("client.hedged_reads")) {}

namespace {
constexpr size_t kLatencySamples = 512;  // the "recent" of recent p95
constexpr size_t kRecomputeEvery = 64;
int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

// A replica hedge costs one extra read, so replicated reads hedge at the
// p95; an EC hedge is a degraded read of K shards, so EC hedges at the p99
// to keep healthy-cluster amplification near 1.
int64_t EcReader::HedgeDelayUs(bool replicated) {
  int64_t p = (replicated ? p95_us_ : p99_us_).load(std::memory_order_relaxed);
  // Until there are enough samples, only a clearly stalled server is hedged.
  if (p == 0) return 10 * int64_t(opt_.hedge_min_us);
  return std::max<int64_t>(p, opt_.hedge_min_us);
}

void EcReader::RecordLatency(int64_t us) {
  std::lock_guard lk(lat_mu_);
  if (lat_us_.size() < kLatencySamples) lat_us_.push_back(us);
  else lat_us_[lat_next_ % kLatencySamples] = us;
  if (++lat_next_ % kRecomputeEvery || lat_us_.size() < kRecomputeEvery) return;
  std::vector<int64_t> v = lat_us_;
  for (auto [pct, out] : {std::pair{95, &p95_us_}, std::pair{99, &p99_us_}}) {
    auto at = v.begin() + ptrdiff_t(v.size() * pct / 100);
    std::nth_element(v.begin(), at, v.end());
    out->store(*at, std::memory_order_relaxed);
  }
}

uint32_t EcReader::PickReplica(const pb::ChunkEntry& c, uint32_t replicas) {
  thread_local uint64_t seed = uint64_t(NowUs()) * 0x9E3779B97F4A7C15ull + uint64_t(pthread_self());
  auto next = [&] {
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    return seed;
  };
  std::vector<uint32_t> up;
  for (uint32_t s = 0; s < replicas; s++)
    if (!dss_.IsDown(c.dss(s)) && !dss_.IsSlow(c.dss(s))) up.push_back(s);
  if (up.empty()) return uint32_t(next() % replicas);  // all suspect: try one anyway
  if (up.size() == 1) return up[0];
  size_t i = next() % up.size(), j = next() % (up.size() - 1);
  if (j >= i) j++;  // two distinct candidates
  return dss_.Inflight(c.dss(up[i])) <= dss_.Inflight(c.dss(up[j])) ? up[i] : up[j];
}

Result<std::shared_ptr<ec::RsCodec>> EcReader::Codec(uint32_t k, uint32_t m) {
  std::lock_guard lk(mu_);
  auto& c = codecs_[{k, m}];
  if (!c) {
    auto r = ec::RsCodec::Create(k, m);
    if (!r) return Err(r.error());
    c = *r;
  }
  return c;
}

namespace {

// Starts a read of [offset, offset+length) of `shard`; a DSS known to be
// down gets no call (an already-failed PendingCall stands in).
net::PendingCall StartShardRead(DssPool& dss, uint64_t ino, const pb::ChunkEntry& c,
                                uint32_t shard, uint64_t offset, uint64_t length) {
  uint32_t id = c.dss(shard);
  net::Transport* ch = dss.Get(id);
  if (!ch || dss.IsDown(id)) return {};
  pb::ReadShardReq req;
  *req.mutable_key() = MakeShardKey(ino, c, shard);
  req.set_offset(offset);
  req.set_length(length);
  return ch->Start(pb::M_READ_SHARD, req);
}

// Shards to try for a repair: those on DSS not recently slow first (a
// stalled server is used only when nothing else is left), in index order.
std::vector<uint32_t> RepairOrder(DssPool& dss, const pb::ChunkEntry& c, uint32_t n) {
  std::vector<uint32_t> order(n);
  for (uint32_t s = 0; s < n; s++) order[s] = s;
  std::stable_partition(order.begin(), order.end(), [&](uint32_t s) { return !dss.IsSlow(c.dss(s)); });
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

Status EcReader::Read(uint64_t ino, const layout::EcGeometry& g,
                      std::span<const ReadExtent> extents) {
  std::vector<Job> jobs;
  for (const ReadExtent& e : extents) {
    if (uint32_t(e.chunk->dss_size()) != g.k + g.m)
      return Corruption("chunk " + std::to_string(e.chunk->index()) + " has " +
                        std::to_string(e.chunk->dss_size()) + " shards, layout wants " +
                        std::to_string(g.k + g.m));
    for (auto& r : layout::MergeShardPieces(layout::MapChunkRange(g, e.chunk_offset, e.length))) {
      if (g.replicated) r.shard = PickReplica(*e.chunk, g.k + g.m);  // r.shard was 0
      jobs.push_back({&e, std::move(r)});
    }
  }
  // One BatchRead per DSS carrying every range wanted from it, ranges of
  // one shard coalesced (LLD-002 §5.2, §5.3); all DSS are asked before any
  // answer is awaited, so the whole read costs one round trip.
  std::vector<size_t> failed;
  std::vector<Status> failures;
  std::map<uint32_t, std::vector<size_t>> by_dss;  // DSS id -> job indexes
  for (size_t i = 0; i < jobs.size(); i++) by_dss[jobs[i].extent->chunk->dss(jobs[i].read.shard)].push_back(i);
  struct Segment {
    size_t first_job;  // the shard key comes from this job
    uint64_t offset, length;
    std::vector<size_t> jobs;
  };
  struct Batch {
    uint32_t dss;
    std::vector<Segment> segments;
    net::PendingCall call;
    bool sent = false;
  };
  std::vector<Batch> batches;
  for (auto& [dss_id, idx] : by_dss) {
    Batch b{dss_id, {}, {}};
    // Group this DSS's jobs by shard, then coalesce each shard's ranges.
    std::map<std::tuple<uint64_t, uint64_t, uint32_t>, std::vector<layout::RangeRead>> by_shard;
    for (size_t i : idx) {
      const Job& j = jobs[i];
      by_shard[{j.extent->chunk->index(), j.extent->chunk->version(), j.read.shard}].push_back(
          {j.read.shard_offset, j.read.length, i});
    }
    for (auto& [key, reads] : by_shard)
      for (auto& c : layout::CoalesceReads(std::move(reads), opt_.gap_threshold)) {
        Segment seg{c.members[0].id, c.offset, c.length, {}};
        for (auto& m : c.members) seg.jobs.push_back(m.id);
        b.segments.push_back(std::move(seg));
      }
    net::Transport* ch = dss_.Get(dss_id);
    // A DSS down or recently too slow is not asked: its pieces go straight
    // to the repair path (another replica, a degraded read).
    if (ch && !dss_.IsDown(dss_id) && !dss_.IsSlow(dss_id)) {
      pb::BatchReadReq req;
      for (auto& seg : b.segments) {
        const Job& j = jobs[seg.first_job];
        auto* r = req.add_reads();
        *r->mutable_key() = MakeShardKey(ino, *j.extent->chunk, j.read.shard);
        r->set_offset(seg.offset);
        r->set_length(seg.length);
      }
      b.call = ch->Start(pb::M_BATCH_READ, req);
      b.sent = true;
      dss_.AddInflight(dss_id, 1);
      batch_rpcs_.Inc();
      segments_.Add(b.segments.size());
      coalesced_.Add(idx.size() - b.segments.size());
    }
    batches.push_back(std::move(b));
  }
  const int64_t started_us = NowUs();
  const int64_t hedge_at_us = started_us + HedgeDelayUs(g.replicated);
  for (Batch& b : batches) {
    auto fail_all = [&](const Status& st) {
      for (auto& seg : b.segments)
        for (size_t i : seg.jobs) failed.push_back(i), failures.push_back(st);
    };
    if (b.sent) dss_.AddInflight(b.dss, -1);
    if (b.sent && opt_.hedge && !b.call.Ready(int((hedge_at_us - NowUs() + 999) / 1000))) {
      // Abandoned (dropping the call closes its connection): its pieces are
      // served another way below, and the DSS is avoided for a while.
      hedged_.Inc();
      if (g.replicated) dss_.MarkSlow(b.dss);  // replicas have cheap alternatives
      b.call = {};
      fail_all(Unavailable("DSS " + std::to_string(b.dss) + " slower than the hedge delay"));
      continue;
    }
    auto r = b.call.Wait();
    if (b.sent && r) RecordLatency(NowUs() - started_us);
    if (!r) {
      if (b.sent && r.error().code() == Code::kUnavailable) dss_.MarkDown(b.dss);
      fail_all(r.error());
      continue;
    }
    auto rep = net::ParseBody<pb::BatchReadReply>(r->body, "BatchRead reply");
    if (!rep || size_t(rep->results_size()) != b.segments.size()) {
      fail_all(IoError("malformed BatchRead reply from DSS " + std::to_string(b.dss)));
      continue;
    }
    uint64_t pos = 0;
    for (size_t s = 0; s < b.segments.size(); s++) {
      const Segment& seg = b.segments[s];
      const auto& res = rep->results(int(s));
      if (res.code() != 0 || res.length() != seg.length || pos + seg.length > r->payload.size()) {
        Status st = res.code() ? Status(Code(res.code()), res.error()) : IoError("short segment");
        for (size_t i : seg.jobs) failed.push_back(i), failures.push_back(st);
        continue;
      }
      const char* base = r->payload.data() + pos;
      pos += seg.length;
      shard_bytes_.Add(seg.length);
      for (size_t i : seg.jobs)  // scatter back to every piece it serves
        for (auto& p : jobs[i].read.pieces)
          std::memcpy(jobs[i].extent->dst + p.buf_offset, base + (p.shard_offset - seg.offset), p.length);
    }
  }
  for (size_t f = 0; f < failed.size(); f++) {
    const Job& j = jobs[failed[f]];
    const Status& why = failures[f];
    if (why.code() == Code::kCorruption) ReportBad(ino, *j.extent->chunk, j.read.shard, why);
    if (why.code() == Code::kInvalidArgument) return why;  // our bug, not a failure to repair
    std::vector<bool> bad(g.k + g.m, false);
    bad[j.read.shard] = true;
    RUSTFS_RETURN_IF_ERROR(g.replicated ? FromReplica(ino, g, j, bad) : Degraded(ino, g, j, bad));
  }
  return Status::Ok();
}

uint32_t EcReader::ReadFirst(uint64_t ino, const pb::ChunkEntry& c, bool replicated, uint32_t need,
                             uint64_t off,
                             uint64_t len, std::vector<bool>& bad,
                             const std::function<void(uint32_t, std::string&&)>& on_shard) {
  const std::vector<uint32_t> order = RepairOrder(dss_, c, uint32_t(c.dss_size()));
  struct Pending {
    uint32_t shard;
    net::PendingCall call;
  };
  std::deque<Pending> laggards;  // hedged past, still running
  uint32_t got = 0;
  auto take = [&](Pending& p) {
    auto r = WaitShard(dss_, p.call, c.dss(p.shard));
    if (!r || r->payload.size() != len) {
      bad[p.shard] = true;
      if (!r && r.error().code() == Code::kCorruption) ReportBad(ino, c, p.shard, r.error());
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
    const int64_t deadline = NowUs() + HedgeDelayUs(replicated);
    for (Pending& p : round) {
      if (opt_.hedge && !p.call.Ready(int((deadline - NowUs() + 999) / 1000))) {
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
  return got;  // laggards still running are dropped (their connections closed)
}

// Serves a replicated job from whichever other replica answers first.
Status EcReader::FromReplica(uint64_t ino, const layout::EcGeometry& g, const Job& job,
                             std::vector<bool>& bad) {
  const pb::ChunkEntry& c = *job.extent->chunk;
  const uint64_t off = job.read.shard_offset;
  uint32_t got = ReadFirst(ino, c, true, 1, off, job.read.length, bad, [&](uint32_t, std::string&& bytes) {
    for (auto& p : job.read.pieces)
      std::memcpy(job.extent->dst + p.buf_offset, bytes.data() + (p.shard_offset - off), p.length);
  });
  if (got == 1) return Status::Ok();
  return IoError("chunk " + std::to_string(c.index()) + " of inode " + std::to_string(ino) +
                 ": no replica readable");
}

Status EcReader::Degraded(uint64_t ino, const layout::EcGeometry& g, const Job& job,
                          std::vector<bool>& bad) {
  reconstructions_.Inc();
  const pb::ChunkEntry& c = *job.extent->chunk;
  // Reed-Solomon codes each byte position across the shards on its own, so
  // the lost range is rebuilt from the same range of K other shards (in
  // whole 4 KiB checksum blocks, which the DSS verifies anyway), not from
  // whole stripe rows: a degraded 4 KiB read costs K x 4 KiB.
  constexpr uint64_t kBlock = Config::kChecksumBlock;
  uint64_t off = job.read.shard_offset / kBlock * kBlock;
  uint64_t len = std::min((job.read.shard_offset + job.read.length + kBlock - 1) / kBlock * kBlock,
                          g.shard_capacity()) - off;
  auto codec = Codec(g.k, g.m);
  if (!codec) return codec.error();

  const uint32_t n = g.k + g.m;
  std::vector<std::string> bufs(n);
  std::vector<bool> have(n, false);
  // The first K shards to answer (data first, then parity; recently slow
  // DSS last; one that does not answer within the hedge delay is replaced).
  uint32_t got = ReadFirst(ino, c, false, g.k, off, len, bad, [&](uint32_t s, std::string&& bytes) {
    bufs[s] = std::move(bytes);
    have[s] = true;
  });
  if (got < g.k)
    return IoError("chunk " + std::to_string(c.index()) + " of inode " + std::to_string(ino) +
                   ": fewer than " + std::to_string(g.k) + " shards readable");
  std::vector<const uint8_t*> srcs(n, nullptr);
  for (uint32_t s = 0; s < n; s++)
    if (have[s]) srcs[s] = reinterpret_cast<const uint8_t*>(bufs[s].data());
  std::string rebuilt(len, '\0');
  uint32_t want = job.read.shard;
  uint8_t* out = reinterpret_cast<uint8_t*>(rebuilt.data());
  RUSTFS_RETURN_IF_ERROR((*codec)->Reconstruct(srcs, std::span<const uint32_t>(&want, 1),
                                               std::span<uint8_t* const>(&out, 1), len));
  degraded_bytes_.Add(len * g.k);
  for (auto& p : job.read.pieces)
    std::memcpy(job.extent->dst + p.buf_offset, rebuilt.data() + (p.shard_offset - off), p.length);
  return Status::Ok();
}

}  // namespace rustfs::client

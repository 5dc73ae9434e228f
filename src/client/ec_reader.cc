#include "client/ec_reader.h"

#include <cstring>
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

EcReader::EcReader(DssPool& dss, MdsClient& mds, uint64_t gap_threshold)
    : dss_(dss),
      mds_(mds),
      gap_threshold_(gap_threshold),
      batch_rpcs_(GetCounter("client.batch_reads")),
      segments_(GetCounter("client.batch_segments")),
      coalesced_(GetCounter("client.pieces_coalesced")),
      reconstructions_(GetCounter("client.reconstructions")),
      degraded_bytes_(GetCounter("client.degraded_read_bytes")),
      corrupt_reported_(GetCounter("client.corrupt_shards_reported")),
      shard_bytes_(GetCounter("client.shard_bytes_received")) {}

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
  net::RpcChannel* ch = dss.Get(id);
  if (!ch || dss.IsDown(id)) return {};
  pb::ReadShardReq req;
  *req.mutable_key() = MakeShardKey(ino, c, shard);
  req.set_offset(offset);
  req.set_length(length);
  return ch->Start(pb::M_READ_SHARD, req);
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
    for (auto& r : layout::MergeShardPieces(layout::MapChunkRange(g, e.chunk_offset, e.length)))
      jobs.push_back({&e, std::move(r)});
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
      for (auto& c : layout::CoalesceReads(std::move(reads), gap_threshold_)) {
        Segment seg{c.members[0].id, c.offset, c.length, {}};
        for (auto& m : c.members) seg.jobs.push_back(m.id);
        b.segments.push_back(std::move(seg));
      }
    net::RpcChannel* ch = dss_.Get(dss_id);
    if (ch && !dss_.IsDown(dss_id)) {
      pb::BatchReadReq req;
      for (auto& seg : b.segments) {
        const Job& j = jobs[seg.first_job];
        auto* r = req.add_reads();
        *r->mutable_key() = MakeShardKey(ino, *j.extent->chunk, j.read.shard);
        r->set_offset(seg.offset);
        r->set_length(seg.length);
      }
      b.call = ch->Start(pb::M_BATCH_READ, req);
      batch_rpcs_.Inc();
      segments_.Add(b.segments.size());
      coalesced_.Add(idx.size() - b.segments.size());
    }
    batches.push_back(std::move(b));
  }
  for (Batch& b : batches) {
    auto fail_all = [&](const Status& st) {
      for (auto& seg : b.segments)
        for (size_t i : seg.jobs) failed.push_back(i), failures.push_back(st);
    };
    auto r = b.call.Wait();
    if (!r) {
      if (r.error().code() == Code::kUnavailable) dss_.MarkDown(b.dss);
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
    RUSTFS_RETURN_IF_ERROR(Degraded(ino, g, j, bad));
  }
  return Status::Ok();
}

Status EcReader::Degraded(uint64_t ino, const layout::EcGeometry& g, const Job& job,
                          std::vector<bool>& bad) {
  reconstructions_.Inc();
  const pb::ChunkEntry& c = *job.extent->chunk;
  const uint64_t S = g.stripe_unit;
  // The rows the lost range spans: row r of every shard is [r*S, (r+1)*S).
  uint64_t row0 = job.read.shard_offset / S;
  uint64_t row1 = (job.read.shard_offset + job.read.length - 1) / S;
  uint64_t off = row0 * S;
  uint64_t len = (row1 - row0 + 1) * S;
  auto codec = Codec(g.k, g.m);
  if (!codec) return codec.error();

  const uint32_t n = g.k + g.m;
  std::vector<std::string> bufs(n);
  std::vector<bool> have(n, false);
  uint32_t got = 0;
  // Try shards in order (data first, then parity) until K rows are in hand;
  // each round reads from just enough untried shards.
  for (uint32_t next = 0; got < g.k;) {
    std::vector<uint32_t> batch;
    for (; next < n && got + batch.size() < g.k; next++)
      if (!bad[next]) batch.push_back(next);
    if (batch.empty())
      return IoError("chunk " + std::to_string(c.index()) + " of inode " + std::to_string(ino) +
                     ": fewer than " + std::to_string(g.k) + " shards readable");
    std::vector<net::PendingCall> calls;
    for (uint32_t s : batch) calls.push_back(StartShardRead(dss_, ino, c, s, off, len));
    for (size_t i = 0; i < batch.size(); i++) {
      uint32_t s = batch[i];
      auto r = WaitShard(dss_, calls[i], c.dss(s));
      if (!r || r->payload.size() != len) {
        bad[s] = true;
        if (!r && r.error().code() == Code::kCorruption) ReportBad(ino, c, s, r.error());
        continue;
      }
      shard_bytes_.Add(len);
      bufs[s] = std::move(r->payload);
      have[s] = true;
      got++;
    }
  }
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

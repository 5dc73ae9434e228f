#include "client/ec_reader.h"
#include "net/wait_hook.h"
#include "net/wire_status.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <tuple>

#include "common/clock.h"
#include "layout/coalesce.h"

#include "common/log.h"

namespace rustfs::client {

namespace {
constexpr size_t kLatencySamples = 512;  // the "recent" of recent p95
constexpr size_t kRecomputeEvery = 64;
// Hedge budget: 5 % of the pieces read (credit in thousandths of a piece),
// and at most 20 pieces' worth saved up.
constexpr int64_t kCreditPerPiece = 50;
constexpr int64_t kMaxHedgeCredit = 20 * 1000;
// Another server late within this window means the machine, not one
// server, is slow: then nobody is hedged.
constexpr int64_t kLateWindowUs = 100'000;
// A reply this late (and 10 hedge delays) means a stalled or failed server.
constexpr int64_t kStallMinUs = 500'000;
}  // namespace

EcReader::EcReader(DssPool& dss, MdsClient& mds, const Options& options)
    : dss_(dss),
      mds_(mds),
      opt_(options),
      batch_rpcs_(GetCounter("client.batch_reads")),
      segments_(GetCounter("client.batch_segments")),
      coalesced_(GetCounter("client.pieces_coalesced")),
      reconstructions_(GetCounter("client.reconstructions")),
      degraded_bytes_(GetCounter("client.degraded_read_bytes")),
      degraded_batches_(GetCounter("client.degraded_batches")),
      corrupt_reported_(GetCounter("client.corrupt_shards_reported")),
      shard_bytes_(GetCounter("client.shard_bytes_received")),
      hedged_(GetCounter("client.hedged_reads")),
      hedged_batches_(GetCounter("client.hedged_batches")),
      stall_failovers_(GetCounter("client.stall_failovers")),
      hedges_declined_(GetCounter("client.hedges_declined")) {
  late_at_us_.reset(new std::atomic<int64_t>[dss.size()]);
  for (size_t i = 0; i < dss.size(); i++) late_at_us_[i] = INT64_MIN / 2;
  hedge_credit_ = kMaxHedgeCredit;
}


// A replica hedge costs one extra read, so replicated reads hedge at the
// p95; an EC hedge is a degraded read of K shards, so EC hedges only well
// past the p99, for a server that is clearly stalled rather than a little
// slow.
int64_t EcReader::HedgeDelayUs(bool replicated) {
  const int64_t min_us = int64_t(opt_.hedge_min_us) * (replicated ? 1 : 5);
  int64_t p = (replicated ? p95_us_ : p99_us_).load(std::memory_order_relaxed);
  // Until there are enough samples, only a clearly stalled server is hedged.
  if (p == 0) return 10 * int64_t(opt_.hedge_min_us);
  return std::max<int64_t>(replicated ? p : 3 * p, min_us);
}

int64_t EcReader::StallDelayUs(bool replicated) {
  return std::max<int64_t>(10 * HedgeDelayUs(replicated), kStallMinUs);
}

void EcReader::NoteLate(uint32_t dss, int64_t now_us) {
  if (dss < dss_.size()) late_at_us_[dss].store(now_us, std::memory_order_relaxed);
}

bool EcReader::MachineBusy(uint32_t dss, int64_t now_us) {
  for (uint32_t d = 0; d < dss_.size(); d++)
    if (d != dss && late_at_us_[d].load(std::memory_order_relaxed) > now_us - kLateWindowUs)
      return true;  // more than one server slow at once
  return false;
}

bool EcReader::TakeHedgeBudget(size_t pieces) {
  const int64_t cost = int64_t(pieces) * 1000;
  int64_t credit = hedge_credit_.load(std::memory_order_relaxed);
  do {
    if (credit < cost) return false;
  } while (!hedge_credit_.compare_exchange_weak(credit, credit - cost, std::memory_order_relaxed));
  return true;
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
  thread_local uint64_t seed = uint64_t(SteadyNowUs()) * 0x9E3779B97F4A7C15ull + uint64_t(pthread_self());
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

Status EcReader::Read(std::span<const ReadExtent> extents) {
  std::vector<Job> jobs;
  std::vector<Failed> failed;
  bool all_replicated = true;  // the hedge delay: replicas' is the shorter
  for (const ReadExtent& e : extents) {
    const layout::EcGeometry& g = *e.geo;
    if (uint32_t(e.chunk->dss_size()) != g.k + g.m)
      return Corruption("chunk " + std::to_string(e.chunk->index()) + " of inode " + std::to_string(e.ino) +
                        " has " + std::to_string(e.chunk->dss_size()) + " shards, layout wants " +
                        std::to_string(g.k + g.m));
    all_replicated &= g.replicated;
    for (auto& r : layout::MergeShardPieces(layout::MapChunkRange(g, e.chunk_offset, e.length))) {
      if (g.replicated) r.shard = PickReplica(*e.chunk, g.k + g.m);  // r.shard was 0
      jobs.push_back({&e, std::move(r)});
    }
  }
  {
    const int64_t earned = int64_t(jobs.size()) * kCreditPerPiece;
    int64_t credit = hedge_credit_.load(std::memory_order_relaxed);
    while (credit < kMaxHedgeCredit &&
           !hedge_credit_.compare_exchange_weak(credit, std::min(kMaxHedgeCredit, credit + earned),
                                                std::memory_order_relaxed)) {
    }
  }
  // One BatchRead per DSS carrying every range wanted from it, ranges of
  // one shard coalesced (LLD-002 §5.2, §5.3); all DSS are asked before any
  // answer is awaited, so the whole read costs one round trip.
  std::map<uint32_t, std::vector<size_t>> by_dss;  // DSS id -> job indexes
  for (size_t i = 0; i < jobs.size(); i++) {
    if (!opt_.partial_read_fast_path && !jobs[i].extent->geo->replicated) {
      failed.push_back({&jobs[i], Unavailable("ec.partial_read_fast_path = false")});
      continue;
    }
    by_dss[jobs[i].extent->chunk->dss(jobs[i].read.shard)].push_back(i);
  }
  struct Segment {
    size_t first_job;  // the shard key comes from this job
    uint64_t offset, length;
    std::vector<size_t> jobs;
  };
  struct Batch {
    uint32_t dss;
    std::vector<Segment> segments;
    size_t pieces = 0;
    net::PendingCall call;
    bool sent = false;
  };
  std::vector<Batch> batches;
  for (auto& [dss_id, idx] : by_dss) {
    Batch b{dss_id, {}, idx.size()};
    // Group this DSS's jobs by shard, then coalesce each shard's ranges.
    std::map<std::tuple<uint64_t, uint64_t, uint64_t, uint32_t>, std::vector<layout::RangeRead>> by_shard;
    for (size_t i : idx) {
      const Job& j = jobs[i];
      by_shard[{j.extent->ino, j.extent->chunk->index(), j.extent->chunk->version(), j.read.shard}].push_back(
          {j.read.shard_offset, j.read.length, i});
    }
    for (auto& [key, reads] : by_shard)
      for (auto& c : layout::CoalesceReads(std::move(reads), opt_.gap_threshold)) {
        Segment seg{c.members[0].id, c.offset, c.length, {}};
        for (auto& m : c.members) seg.jobs.push_back(m.id);
        b.segments.push_back(std::move(seg));
      }
    net::Transport* ch = dss_.Get(dss_id);
    // A DSS down or stalled is not asked: its pieces go straight to the
    // repair path (another replica, a degraded read).
    if (!ch || dss_.IsDown(dss_id) || dss_.IsSlow(dss_id)) {
      const bool slow = ch && !dss_.IsDown(dss_id);
      if (slow) hedged_.Add(idx.size());  // routed around a slow server
      for (size_t i : idx)
        failed.push_back({&jobs[i], Unavailable("DSS " + std::to_string(dss_id) +
                                                (slow ? " is stalled" : " is down")), slow});
      continue;
    }
    pb::BatchReadReq req;
    for (auto& seg : b.segments) {
      const Job& j = jobs[seg.first_job];
      auto* r = req.add_reads();
      *r->mutable_key() = MakeShardKey(j.extent->ino, *j.extent->chunk, j.read.shard);
      r->set_offset(seg.offset);
      r->set_length(seg.length);
    }
    b.call = ch->Start(pb::M_BATCH_READ, req);
    b.sent = true;
    dss_.AddInflight(dss_id, 1);
    batch_rpcs_.Inc();
    segments_.Add(b.segments.size());
    coalesced_.Add(idx.size() - b.segments.size());
    batches.push_back(std::move(b));
  }
  const int64_t started_us = SteadyNowUs();
  const int64_t hedge_at_us = started_us + HedgeDelayUs(all_replicated);
  // While this thread waits for the replies it may start other reads (a
  // FUSE ring thread's newly arrived ones, net/wait_hook.h): the caller
  // holds only the file's map lock, which those reads only try-lock. Their
  // time counts in these replies' latency: that only raises the hedge delay.
  net::WaitWindow may_start_other_reads;
  for (size_t bi = 0; bi < batches.size(); bi++) {
    Batch& b = batches[bi];
    auto fail_all = [&](const Status& st, bool slow = false) {
      for (auto& seg : b.segments)
        for (size_t i : seg.jobs) failed.push_back({&jobs[i], st, slow});
    };
    dss_.AddInflight(b.dss, -1);
    if (opt_.hedge && !b.call.Ready(int((hedge_at_us - SteadyNowUs() + 999) / 1000))) {
      // Late. A hedge needs a server slow on its own (the read's other
      // servers have answered, nobody else was late just now) and budget;
      // until then the reply is awaited, and re-examined every hedge
      // delay. A server that has not answered by the stall delay is taken
      // for failed, whatever the budget: waiting out the RPC timeout would
      // stall the reader.
      const int64_t step_us = hedge_at_us - started_us;
      const int64_t stall_at_us = started_us + StallDelayUs(all_replicated);
      bool abandon = false, stalled = false;
      for (;;) {
        const int64_t now = SteadyNowUs();
        NoteLate(b.dss, now);
        bool others_answered = true;
        for (size_t j = bi + 1; j < batches.size() && others_answered; j++)
          others_answered = batches[j].call.Ready(0);
        const bool busy = MachineBusy(b.dss, now);
        if (others_answered && !busy && TakeHedgeBudget(b.pieces)) {
          abandon = true;
          break;
        }
        // Past the stall delay the server is taken for failed, unless the
        // whole machine is slow (then only past 4 stall delays).
        if (now >= stall_at_us && (!busy || now >= started_us + 4 * (stall_at_us - started_us))) {
          abandon = stalled = true;
          break;
        }
        if (b.call.Ready(int((std::min(step_us, stall_at_us - now) + 999) / 1000))) break;
      }
      if (abandon) {
        // Abandoned (dropping the call closes its connection): its pieces
        // are served another way below.
        (stalled ? stall_failovers_ : hedged_batches_).Inc();
        hedged_.Add(b.pieces);
        dss_.NoteHedged(b.dss);
        if (all_replicated) dss_.MarkSlow(b.dss);  // replicas have cheap alternatives
        b.call = {};
        fail_all(Unavailable("DSS " + std::to_string(b.dss) + (stalled ? " stalled" : " slower than the hedge delay")),
                 /*slow=*/true);
        continue;
      }
      hedges_declined_.Inc();
    }
    auto r = b.call.Wait();
    if (!r) {
      if (r.error().code() == Code::kUnavailable) dss_.MarkDown(b.dss);
      fail_all(r.error());
      continue;
    }
    RecordLatency(SteadyNowUs() - started_us);
    dss_.NoteAnswered(b.dss);
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
        Status st = res.code() ? net::FromWire(res.code(), res.error())
                               : Status(Code::kShortRead, "short segment");
        for (size_t i : seg.jobs) failed.push_back({&jobs[i], st});
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
  may_start_other_reads.Close();  // the repair's waits hold more than the map lock
  if (failed.empty()) return Status::Ok();
  return Repair(failed);
}

}  // namespace rustfs::client

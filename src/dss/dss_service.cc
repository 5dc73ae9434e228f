#include "dss/dss_service.h"
#include "net/auth.h"
#include "net/wire_status.h"

#include <pthread.h>

#include <chrono>
#include <cstring>
#include <filesystem>

#include "common/log.h"
#include "common/uninit.h"
#include "dss/numa_pinning.h"

namespace rustfs::dss {

namespace {
// Threads serving RPCs; each submits and reaps its own reads, so this is
// also how many BatchReads the disk has in flight at once.
constexpr int kIoThreads = 4;
ShardId FromPb(const pb::ShardKey& k) { return {k.ino(), k.chunk(), k.version(), k.shard()}; }
cache::ObjectId HotKey(const ShardId& s) { return {s.ino, s.chunk << 8 | s.shard, s.version}; }
}  // namespace

DssService::DssService(const Config& cfg, uint32_t id)
    : cfg_(cfg),
      id_(id),
      server_("dss", kIoThreads, net::RpcServer::Threading::kPerThread),
      mds_(cfg.mds.address, cfg.client.rpc_timeout_ms, "dss.mds") {}

DssService::~DssService() { Stop(); }

Result<std::unique_ptr<DssService>> DssService::Create(const Config& cfg, uint32_t id) {
  if (id >= cfg.dss.size())
    return Err(InvalidArgument("--id " + std::to_string(id) + " but [[dss]] lists " +
                               std::to_string(cfg.dss.size()) + " servers"));
  RUSTFS_RETURN_ERR(net::UseClusterKey(cfg.cluster.key_file));
  std::unique_ptr<DssService> s(new DssService(cfg, id));
  // NUMA (LLD-002 §5.4): the threads that reap the disk's completions (the
  // RPC I/O threads: they submit and reap themselves) on a core of the
  // disk's node, and this process's memory preferably from that node.
  PinningOptions po;
  po.mode = cfg.random_io.numa_pinning;
  po.data_dir = cfg.dss[id].data_dir;
  po.reserved_cpus = cfg.random_io.reserved_cores;
  po.disk_index = id;
  if (po.mode == "manual") {
    auto cpus = ParseCpuList(cfg.random_io.poller_cpus);
    if (!cpus) return Err(InvalidArgument("random_io.poller_cpus: " + cpus.error().message()));
    if (cpus->empty()) return Err(InvalidArgument("random_io.poller_cpus is empty"));
    po.manual_cpu = (*cpus)[id % cpus->size()];
  }
  auto place = PlacePoller(po);
  if (!place) return Err(place.error());
  LOG_INFO("dss {}: I/O threads (io_uring reapers) on {} (NUMA node {}): {}", id,
           place->cpus.empty() ? std::string("no CPU in particular")
                               : (place->cpus.size() == 1 ? "CPU " : "CPUs ") + JoinCpus(place->cpus),
           place->node, place->reason);
  GetCounter("dss.poller_pinned").Add(place->cpus.empty() ? 0 : 1);
  PreferNodeForNewMemory(place->node);
  std::error_code ec;  // the engine probes IOPOLL in the data folder: it must exist
  std::filesystem::create_directories(cfg.dss[id].data_dir, ec);
  s->server_.OnThreadStart([] { pthread_setname_np(pthread_self(), "dss-io"); });
  s->server_.PinThreads(place->cpus);
  if (cfg.emulation.dss_reply_delay_us > 0) {
    LOG_WARN("dss {}: EMULATION: every reply delayed {} us (emulation.dss_reply_delay_us)", id,
             cfg.emulation.dss_reply_delay_us);
    s->server_.SetReplyDelay(std::chrono::microseconds(cfg.emulation.dss_reply_delay_us));
  }
  RandomReadEngine::Options eo;
  eo.queue_depth = cfg.random_io.queue_depth;
  eo.io_poll = cfg.random_io.io_poll;
  eo.probe_dir = cfg.dss[id].data_dir;
  auto engine = RandomReadEngine::Create(eo);
  if (!engine) return Err(engine.error());
  ShardStoreOptions options;
  options.max_capacity = std::min<uint64_t>(cfg.layout.chunk_size, ShardStore::kMaxCapacity);
  auto store = ShardStore::Open(cfg.dss[id].data_dir, std::move(*engine), options);
  if (!store) return Err(store.error());
  s->store_ = std::move(*store);
  if (cfg.dss_hot_tier.enabled) {
    Config::FragmentCache hc;
    hc.capacity = cfg.dss_hot_tier.capacity;
    hc.policy = cfg.dss_hot_tier.policy;
    auto hot = cache::FragmentCache::Create(hc, "dss.hot_tier");
    if (!hot) return Err(hot.error());
    s->hot_ = std::move(*hot);
  }
  s->RegisterHandlers();
  return s;
}

void DssService::RegisterHandlers() {
  ShardStore* st = store_.get();
  server_.Handle(pb::M_WRITE_SHARD, [this, st](const std::string& body, std::string& payload,
                                         net::RpcReply& reply) -> Status {
    auto req = net::ParseBody<pb::WriteShardReq>(body, "WriteShard");
    if (!req) return req.error();
    RUSTFS_RETURN_IF_ERROR(st->Write(FromPb(req->key()), req->base_version(), req->offset(),
                                     payload, req->capacity()));
    if (hot_) hot_->Erase(HotKey(FromPb(req->key())));  // a rewrite of the same version
    reply.body = pb::Empty().SerializeAsString();
    return Status::Ok();
  });
  Counter& served = GetCounter("dss.bytes_served");
  Counter& reads = GetCounter("dss.reads");
  server_.Handle(pb::M_READ_SHARD, [this, &served, &reads](const std::string& body, std::string&,
                                                           net::RpcReply& reply) -> Status {
    auto req = net::ParseBody<pb::ReadShardReq>(body, "ReadShard");
    if (!req) return req.error();
    if (req->length() > net::kMaxPayloadBytes) return InvalidArgument("read length too large");
    RUSTFS_RETURN_IF_ERROR(store_->CheckReadRange(req->offset(), req->length()));
    RUSTFS_RETURN_IF_ERROR(req->from_disk()
                               ? store_->Read(FromPb(req->key()), req->offset(), req->length(), reply.payload)
                               : ReadShard(FromPb(req->key()), req->offset(), req->length(), reply.payload));
    reads.Inc();
    served.Add(reply.payload.size());
    return Status::Ok();
  });
  Counter& batches = GetCounter("dss.batch_reads");
  server_.Handle(pb::M_BATCH_READ, [this, &served, &reads, &batches](
                                       const std::string& body, std::string&,
                                       net::RpcReply& reply) -> Status {
    auto req = net::ParseBody<pb::BatchReadReq>(body, "BatchRead");
    if (!req) return req.error();
    uint64_t total = 0;  // each segment is at most a shard: no overflow
    for (auto& r : req->reads()) {
      RUSTFS_RETURN_IF_ERROR(store_->CheckReadRange(r.offset(), r.length()));
      total += r.length();
    }
    if (total > net::kMaxPayloadBytes) return InvalidArgument("batch read too large");
    batches.Inc();
    pb::BatchReadReply rep;
    BatchRead(*req, rep, reply.payload);
    for (const auto& res : rep.results()) {
      if (res.code() != 0) continue;
      reads.Inc();
      served.Add(res.length());
    }
    rep.SerializeToString(&reply.body);
    return Status::Ok();
  });
  server_.Handle(pb::M_DELETE_SHARD, [this, st](const std::string& body, std::string&,
                                                net::RpcReply& reply) -> Status {
    auto req = net::ParseBody<pb::DeleteShardReq>(body, "DeleteShard");
    if (!req) return req.error();
    if (hot_) hot_->Erase(HotKey(FromPb(req->key())));
    return st->Delete(FromPb(req->key()));
  });
}

// Serves what the hot tier holds; reads the rest from disk in whole,
// verified 4 KiB pages, buffered as ShardStore::Read (the sequential path:
// whole shards for repair), and keeps them there.
Status DssService::ReadShard(const ShardId& id, uint64_t offset, uint64_t length,
                             std::string& out) {
  if (!hot_) return store_->Read(id, offset, length, out);
  ResizeUninitialized(out, length);  // written whole, or the read fails
  cache::ThroughRead read{HotKey(id), offset, length, out.data()};
  return ReadThroughHotTier(std::span(&read, 1), std::span(&id, 1), /*buffered=*/true);
}

// The hot tier's read-through (cache/read_through.h): what it lacks is
// read from the store as one batch (one io_uring submission for the random
// pieces), straight into the reads' buffers where a piece fits. Without a
// hot tier every read is one such piece.
Status DssService::ReadThroughHotTier(std::span<cache::ThroughRead> reads, std::span<const ShardId> ids,
                                      bool buffered) {
  return cache::ReadThrough(
      hot_.get(), reads,
      [&](std::span<cache::ThroughPiece> pieces) {
        std::vector<ShardRead> batch;
        batch.reserve(pieces.size());
        for (const cache::ThroughPiece& p : pieces) batch.push_back({ids[p.read], p.offset, p.length, p.buf, {}});
        store_->ReadBatch(batch, buffered);
        for (size_t j = 0; j < pieces.size(); j++) pieces[j].status = std::move(batch[j].status);
      },
      [] { return true; });
}

// Serves a BatchRead into one reply payload: each segment has its place in
// it (request order) and is read through the hot tier into that place. A
// failed segment (a missing or corrupt shard) fails only itself, and its
// place is cut out: the client repairs just that piece.
void DssService::BatchRead(const pb::BatchReadReq& req, pb::BatchReadReply& rep, std::string& payload) {
  const int n = req.reads_size();
  std::vector<uint64_t> at(n + 1, 0);
  for (int i = 0; i < n; i++) at[i + 1] = at[i] + req.reads(i).length();
  // Every byte of a segment is written by the read-through, or the segment
  // fails and is cut out.
  payload.clear();
  ResizeUninitialized(payload, at[n]);
  std::vector<ShardId> ids(n);
  std::vector<cache::ThroughRead> reads(n);
  for (int i = 0; i < n; i++) {
    const auto& r = req.reads(i);
    ids[i] = FromPb(r.key());
    reads[i] = {HotKey(ids[i]), r.offset(), r.length(), payload.data() + at[i]};
  }
  (void)ReadThroughHotTier(reads, ids, /*buffered=*/false);  // each segment's status is in its read
  // Results, and the payload closed up over failed segments (rare).
  uint64_t out = 0;
  for (int i = 0; i < n; i++) {
    auto* res = rep.add_results();
    const uint64_t len = at[i + 1] - at[i];
    if (!reads[i].status.ok()) {
      res->set_code(net::ToWire(reads[i].status.code()));
      res->set_error(reads[i].status.message());
      continue;
    }
    res->set_length(len);
    if (out != at[i]) std::memmove(payload.data() + out, payload.data() + at[i], len);
    out += len;
  }
  payload.resize(out);
}

void DssService::HeartbeatLoop() {
  bool registered = false;
  while (!stop_) {
    pb::RegisterDssReq req;
    req.mutable_info()->set_id(id_);
    req.mutable_info()->set_address(cfg_.dss[id_].address);
    req.mutable_info()->set_free_bytes(store_->FreeBytes());
    auto r = mds_.Call(pb::M_REGISTER_DSS, req);
    if (r && !registered) LOG_INFO("registered with MDS {}", cfg_.mds.address);
    if (!r && registered) LOG_WARN("MDS heartbeat failed: {}", r.error().ToString());
    if (!r && r.error().code() == Code::kInvalidArgument) LOG_ERROR("{}", r.error().ToString());
    registered = r.has_value();
    for (int i = 0; i < 10 && !stop_; i++) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

Status DssService::Start() {
  RUSTFS_RETURN_IF_ERROR(server_.Start(cfg_.dss[id_].address));
  heartbeat_ = std::thread([this] { HeartbeatLoop(); });
  LOG_INFO("DSS {} listening on {} (data {})", id_, cfg_.dss[id_].address, cfg_.dss[id_].data_dir);
  return Status::Ok();
}

void DssService::Stop() {
  stop_ = true;
  if (heartbeat_.joinable()) heartbeat_.join();
  server_.Stop();
}

}  // namespace rustfs::dss

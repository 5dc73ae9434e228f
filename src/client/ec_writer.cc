#include "client/ec_writer.h"

#include <cstring>

namespace rustfs::client {

EcWriter::EcWriter(DssPool& dss, MdsClient& mds, EcReader& reader,
                   const std::atomic<uint64_t>& client_id)
    : dss_(dss),
      mds_(mds),
      reader_(reader),
      client_id_(client_id),
      bytes_written_(GetCounter("client.shard_bytes_written")),
      rmw_bytes_read_(GetCounter("client.rmw_bytes_read")),
      degraded_writes_(GetCounter("client.degraded_writes")) {}

Status EcWriter::FlushChunk(FileState& st, uint64_t index, const DirtyChunk& d, bool grow_size) {
  constexpr int kAttempts = 5;
  Status last;
  for (int i = 0; i < kAttempts; i++) {
    last = WriteOnce(st, index, d, grow_size);
    if (last.code() != Code::kStale) return last;
  }
  return last;
}

Status EcWriter::WriteOnce(FileState& st, uint64_t index, const DirtyChunk& d, bool grow_size) {
  const layout::EcGeometry& g = st.geo;
  pb::AllocateChunkReq areq;
  areq.set_ino(st.ino);
  areq.set_index(index);
  auto alloc = mds_.Call<pb::AllocateChunkReply>(pb::M_ALLOCATE_CHUNK, areq);
  if (!alloc) return alloc.error();
  const uint64_t base = alloc->base_version();
  const pb::ChunkEntry& fresh = alloc->chunk();
  if (uint32_t(fresh.dss_size()) != g.k + g.m)  // the file's layout changed under the buffer
    return Unavailable("chunk " + std::to_string(index) + " was placed on " +
                       std::to_string(fresh.dss_size()) + " servers, the buffered layout has " +
                       std::to_string(g.k + g.m) + " shards");

  // The base we read old rows from must be the version the MDS will check.
  pb::ChunkEntry base_entry;
  if (base != 0) {
    auto it = st.chunks.find(index);
    if (it != st.chunks.end() && it->second.version() == base) {
      base_entry = it->second;
    } else {
      pb::GetChunkMapReq mreq;
      mreq.set_ino(st.ino);
      mreq.set_offset(index * g.chunk_size);
      mreq.set_length(g.chunk_size);
      mreq.set_client_id(client_id_);
      auto m = mds_.Call<pb::GetChunkMapReply>(pb::M_GET_CHUNK_MAP, mreq);
      if (!m) return m.error();
      if (m->chunks_size() != 1 || m->chunks(0).version() != base)
        return {Code::kStale, "chunk changed while flushing"};
      base_entry = m->chunks(0);
    }
  }

  // A position the MDS moved to another server (its old one is down or
  // full) has no base copy there to clone from: that shard is written whole,
  // which needs every row of the chunk (rows never written read as zeros).
  const uint32_t n = g.k + g.m;
  bool moved_any = false;
  std::vector<bool> whole(n, base == 0);
  for (uint32_t s = 0; s < n && base != 0; s++)
    if (fresh.dss(s) != layout::kNoDss && fresh.dss(s) != base_entry.dss(s))
      whole[s] = moved_any = true;

  // Rows to rewrite. A new chunk is written from row 0 so every shard's
  // data is contiguous and fully checksummed (holes read as zeros).
  const uint64_t R = g.row_bytes(), S = g.stripe_unit;
  const uint64_t dirty_row0 = base ? d.ranges.min() / R : 0;
  const uint64_t dirty_row1 = (d.ranges.max() - 1) / R;
  const uint64_t row0 = moved_any ? 0 : dirty_row0;
  const uint64_t row1 = moved_any ? g.rows_per_chunk() - 1 : dirty_row1;
  const uint64_t nrows = row1 - row0 + 1;
  std::string rows(nrows * R, '\0');

  if (base != 0) {
    std::vector<ReadExtent> old;
    for (uint64_t r = row0; r <= row1; r++)
      if (!d.ranges.Covers(r * R, (r + 1) * R))
        old.push_back({st.ino, &g, &base_entry, r * R, R, rows.data() + (r - row0) * R});
    if (!old.empty()) {
      RUSTFS_RETURN_IF_ERROR(reader_.Read(old));
      rmw_bytes_read_.Add(old.size() * R);
    }
  }
  for (auto [s, e] : d.ranges.intervals())
    std::memcpy(rows.data() + (s - row0 * R), d.data.data() + s, e - s);

  // Shard images of the rows: data shard j's row r is chunk bytes
  // [r*R + j*S, r*R + (j+1)*S), i.e. contiguous inside the row buffer.
  std::vector<std::string> shards(n, std::string(nrows * S, '\0'));
  if (g.replicated) {
    // k = 1: the row buffer is the data shard, and every shard is a copy.
    for (uint32_t s = 0; s < n; s++) shards[s] = rows;
  } else {
    auto codec = ec::RsCodec::Shared(g.k, g.m);
    if (!codec) return codec.error();
    std::vector<const uint8_t*> data(g.k);
    std::vector<uint8_t*> parity(g.m);
    for (uint64_t r = 0; r < nrows; r++) {
      for (uint32_t j = 0; j < g.k; j++) {
        std::memcpy(shards[j].data() + r * S, rows.data() + r * R + j * S, S);
        data[j] = reinterpret_cast<const uint8_t*>(shards[j].data() + r * S);
      }
      for (uint32_t p = 0; p < g.m; p++)
        parity[p] = reinterpret_cast<uint8_t*>(shards[g.k + p].data() + r * S);
      (*codec)->Encode(data, parity, S);
    }
  }

  // Every shard that has a server is sent; a shard its server fails to
  // take leaves that position empty (degraded), and the MDS decides whether
  // what was stored is enough to publish (layout.min_write_shards).
  pb::ChunkEntry written = fresh;
  std::vector<net::PendingCall> calls(n);
  for (uint32_t s = 0; s < n; s++) {
    if (fresh.dss(s) == layout::kNoDss) continue;
    net::Transport* ch = dss_.Get(fresh.dss(s));
    if (!ch) return Unavailable("unknown DSS " + std::to_string(fresh.dss(s)));
    pb::WriteShardReq w;
    *w.mutable_key() = MakeShardKey(st.ino, fresh, s);
    w.set_capacity(g.shard_capacity());
    std::string_view image = shards[s];
    if (whole[s]) {
      w.set_offset(row0 * S);
    } else {  // the dirty rows only; the DSS clones the rest from its base copy
      w.set_base_version(base);
      w.set_offset(dirty_row0 * S);
      image = image.substr((dirty_row0 - row0) * S, (dirty_row1 - dirty_row0 + 1) * S);
    }
    calls[s] = ch->Start(pb::M_WRITE_SHARD, w, image);
  }
  Status first_error;
  uint32_t stored = 0;
  for (uint32_t s = 0; s < n; s++) {
    if (fresh.dss(s) == layout::kNoDss) continue;
    auto r = calls[s].Wait();
    if (r) {
      stored++;
      bytes_written_.Add(shards[s].size());
      continue;
    }
    if (r.error().code() == Code::kUnavailable) dss_.MarkDown(fresh.dss(s));
    if (first_error.ok())
      first_error = Status(r.error().code(), "write shard " + std::to_string(s) + " to DSS " +
                               std::to_string(fresh.dss(s)) + ": " + r.error().message());
    written.set_dss(int(s), layout::kNoDss);
  }
  // Nothing is published, so the old version stays readable; the shards
  // already written are orphans of an unpublished version.
  if (stored < g.k) return first_error.ok() ? Unavailable("no shard could be stored") : first_error;
  if (stored < n) degraded_writes_.Inc();

  pb::CommitChunkReq c;
  c.set_ino(st.ino);
  *c.mutable_chunk() = written;
  c.set_base_version(base);
  c.set_client_id(client_id_);
  if (grow_size) c.set_size_at_least(index * g.chunk_size + d.ranges.max());
  c.set_mtime_ns(st.attr.mtime_ns());  // when the bytes were written (Client::Write)
  auto attr = mds_.Call<pb::AttrReply>(pb::M_COMMIT_CHUNK, c);
  if (!attr) {
    // Refused as too degraded: the shard write's failure says why.
    if (attr.error().code() == Code::kUnavailable && !first_error.ok()) return first_error;
    return attr.error();
  }
  st.chunks[index] = written;
  st.mapped.Add(index, index + 1);
  st.attr.set_mtime_ns(attr->attr().mtime_ns());
  st.attr.set_ctime_ns(attr->attr().ctime_ns());
  return Status::Ok();
}

}  // namespace rustfs::client

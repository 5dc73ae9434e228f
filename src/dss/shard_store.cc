#include "dss/shard_store.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstring>

#include "common/log.h"
#include "common/uninit.h"
#include "ec/crc.h"

namespace rustfs::dss {


ShardStore::~ShardStore() = default;

Result<std::unique_ptr<ShardStore>> ShardStore::Open(const std::string& data_dir,
                                                     std::unique_ptr<RandomReadEngine> engine,
                                                     const ShardStoreOptions& options) {
  if (options.max_capacity == 0 || options.max_capacity > kMaxCapacity)
    return Err(InvalidArgument("shard store max_capacity " + std::to_string(options.max_capacity)));
  std::unique_ptr<ShardStore> st(
      new ShardStore(data_dir, std::move(engine), options.io ? *options.io : DiskIo::Real()));
  st->max_capacity_ = options.max_capacity;
  auto files = SlotFiles::Open(data_dir + "/slots", options.data_file_bytes, st->engine_ != nullptr);
  if (!files) return Err(files.error());
  st->files_ = std::move(*files);
  auto index = ShardIndex::Open(data_dir + "/index");
  if (!index) return Err(index.error());
  st->index_ = std::move(*index);
  // Slots the index names are in use; every other slot is free (a version
  // written but never recorded before a crash included).
  Status bad;
  st->index_->ForEach([&](const ShardId& id, const ShardMeta& m) {
    if (!st->files_->Locate(m.slot) && bad.ok())
      bad = Corruption("shard " + id.ToString() + " names a slot no data file has");
    st->files_->MarkUsed(m.slot);
  });
  RUSTFS_RETURN_ERR(bad);
  return st;
}

Status ShardStore::BuildVersion(const ShardId& id, const ShardMeta* base, uint64_t offset,
                                std::string_view data, ShardMeta& meta) {
  auto to = files_->Locate(meta.slot);
  if (!to) return to.error();
  const std::string& path = *to->path;
  const uint64_t end = offset + data.size();
  meta.crcs.assign((meta.capacity + kBlock - 1) / kBlock, 0);
  meta.data_len = 0;
  if (base) {
    auto from = files_->Locate(base->slot);
    if (!from) return from.error();
    meta.crcs = base->crcs;
    meta.data_len = base->data_len;
    const uint64_t head = std::min(offset, base->data_len);
    // The base version's bytes outside the new ones, copied in the kernel
    // (they never cross into user space).
    auto copy = [&](uint64_t at, uint64_t len) {
      return io_.Copy(from->fd, off_t(from->offset + at), to->fd, off_t(to->offset + at), len);
    };
    if (head) RUSTFS_RETURN_IF_ERROR(copy(0, head));
    if (end < base->data_len) RUSTFS_RETURN_IF_ERROR(copy(end, base->data_len - end));
    disk_read_.Add(base->data_len - std::min(base->data_len, data.size()));
  }
  // Keep [0, data_len) contiguous and checksummed: a write past the current
  // end first fills the gap with zeros, so every block below data_len has a
  // real CRC and the gap reads back as zeros (a reused slot holds old bytes).
  if (offset > meta.data_len) {
    static const std::string kZeros(1 << 20, '\0');  // written in pieces: no gap-sized buffer
    static const uint32_t kZeroCrc = ec::Crc32c(kZeros.data(), kBlock);
    for (uint64_t at = meta.data_len; at < offset;) {
      const uint64_t n = std::min<uint64_t>(offset - at, kZeros.size());
      RUSTFS_RETURN_IF_ERROR(io_.Write(to->fd, kZeros.data(), n, off_t(to->offset + at), path));
      at += n;
    }
    for (uint64_t b = meta.data_len / kBlock; b < offset / kBlock; b++) meta.crcs[b] = kZeroCrc;
    disk_written_.Add(offset - meta.data_len);
    meta.data_len = offset;
  }
  for (uint64_t off = 0; off < data.size(); off += kBlock)
    meta.crcs[(offset + off) / kBlock] = ec::Crc32c(data.data() + off, kBlock);
  RUSTFS_RETURN_IF_ERROR(io_.Write(to->fd, data.data(), data.size(), off_t(to->offset + offset), path));
  meta.data_len = std::max(meta.data_len, end);
  RUSTFS_RETURN_IF_ERROR(io_.Sync(to->fd, path));
  disk_written_.Add(data.size());
  (void)id;
  return Status::Ok();
}

Status ShardStore::Write(const ShardId& id, uint64_t base_version, uint64_t offset,
                         std::string_view data, uint64_t capacity) {
  if (offset % kBlock || data.size() % kBlock)
    return InvalidArgument("shard write at " + std::to_string(offset) + "+" +
                           std::to_string(data.size()) + " is not 4 KiB aligned");
  if (capacity == 0 || capacity % kBlock || capacity > max_capacity_)
    return InvalidArgument("shard capacity " + std::to_string(capacity) + " (at most " +
                           std::to_string(max_capacity_) + ")");
  if (offset > capacity || data.size() > capacity - offset)
    return InvalidArgument("shard write past capacity " + std::to_string(capacity));
  std::shared_ptr<const ShardMeta> base;
  if (base_version != 0) {
    ShardId b = id;
    b.version = base_version;
    base = index_->Find(b);
    if (!base) return NotFound("base version " + b.ToString() + " to clone");
    if (base->capacity != capacity) return InvalidArgument("base shard capacity differs");
  }
  auto slot = files_->Allocate(capacity);
  if (!slot) return slot.error();
  ShardMeta meta;
  meta.slot = *slot;
  meta.capacity = capacity;
  Status s = BuildVersion(id, base.get(), offset, data, meta);
  if (!s.ok()) {
    files_->Free(*slot);  // never recorded: nobody reads it
    return s;
  }
  auto old = index_->Put(id, std::move(meta));
  if (!old) {
    files_->Free(*slot);
    return old.error();
  }
  if (*old) files_->Free((*old)->slot);  // the same version written again
  return Status::Ok();
}

Status ShardStore::Read(const ShardId& id, uint64_t offset, uint64_t length, std::string& out) {
  ResizeUninitialized(out, length);  // ReadPieces writes all of it
  ShardRead r{id, offset, length, out.data(), {}};
  ReadPieces({&r, 1}, /*use_engine=*/false);
  return r.status;
}

void ShardStore::ReadBatch(std::span<ShardRead> reads, bool buffered) {
  ReadPieces(reads, !buffered && engine_ != nullptr && !engine_off_.load(std::memory_order_relaxed));
}

void ShardStore::ReadPieces(std::span<ShardRead> reads, bool use_engine) {
  // Each piece is widened to whole checksum blocks, so every byte returned
  // is verified, and read into one block-aligned arena (O_DIRECT reads land
  // there with no bounce copy).
  struct Piece {
    std::shared_ptr<const ShardMeta> meta;
    SlotFiles::Location loc;
    uint64_t a_start = 0, a_end = 0;  // block-aligned, within data_len
    uint64_t end = 0;                 // min(offset + length, data_len)
    size_t at = 0;                    // arena offset
  };
  std::vector<Piece> pieces(reads.size());
  size_t arena_bytes = 0;
  for (size_t i = 0; i < reads.size(); i++) {
    ShardRead& r = reads[i];
    auto m = index_->Find(r.id);
    if (!m) {
      r.status = NotFound("shard " + r.id.ToString());
      continue;
    }
    if (r.offset > m->capacity || r.length > m->capacity - r.offset) {
      r.status = InvalidArgument("shard read " + std::to_string(r.offset) + "+" +
                                 std::to_string(r.length) + " past capacity " +
                                 std::to_string(m->capacity));
      continue;
    }
    auto loc = files_->Locate(m->slot);
    if (!loc) {
      r.status = loc.error();
      continue;
    }
    r.status = Status::Ok();
    Piece& p = pieces[i];
    p.end = std::min(r.offset + r.length, m->data_len);
    // Bytes past the data read as zeros; the rest is copied in below (dst
    // need not be initialised).
    const uint64_t data_bytes = r.offset >= p.end ? 0 : p.end - r.offset;
    std::memset(r.dst + data_bytes, 0, r.length - data_bytes);
    if (data_bytes == 0) continue;
    p.a_start = r.offset / kBlock * kBlock;
    p.a_end = std::min((p.end + kBlock - 1) / kBlock * kBlock, m->data_len);
    p.at = arena_bytes;
    arena_bytes += (p.a_end - p.a_start + kBlock - 1) / kBlock * kBlock;
    p.meta = std::move(m);
    p.loc = *loc;
  }
  if (arena_bytes == 0) return;
  std::unique_ptr<char, decltype(&std::free)> arena(
      static_cast<char*>(std::aligned_alloc(kBlock, arena_bytes)), &std::free);
  if (!arena) {
    for (auto& r : reads) r.status = Status::FromErrno(ENOMEM, "shard read batch");
    return;
  }
  std::vector<ReadOp> ops;
  std::vector<size_t> op_piece;
  for (size_t i = 0; i < reads.size(); i++) {
    Piece& p = pieces[i];
    if (!p.meta) continue;
    const uint64_t n = p.a_end - p.a_start;
    char* dst = arena.get() + p.at;
    if (use_engine && n <= kRandomReadMax) {
      ops.push_back({p.loc.direct_fd, p.loc.offset + p.a_start, n, dst, 0});
      op_piece.push_back(i);
    } else {
      reads[i].status = io_.Read(p.loc.fd, dst, n, off_t(p.loc.offset + p.a_start), *p.loc.path);
    }
  }
  if (!ops.empty()) {
    std::vector<Status> per_op;
    Status batch = engine_->ReadBatch(ops, &per_op);
    if (batch.ok()) {
      engine_failures_in_a_row_ = 0;
      for (size_t j = 0; j < ops.size(); j++) reads[op_piece[j]].status = per_op[j];
    } else {
      // The ring itself failed (not one read): serve this batch with
      // buffered reads, and after a few such batches stop using the ring
      // rather than fail every read while the DSS heartbeats as healthy.
      engine_failures_.Inc();
      if (++engine_failures_in_a_row_ >= kEngineFailuresToGiveUp && !engine_off_.exchange(true))
        LOG_ERROR("io_uring engine failed {} batches in a row ({}): reads go through buffered pread from now on",
                  kEngineFailuresToGiveUp, batch.ToString());
      for (size_t j = 0; j < ops.size(); j++) {
        const Piece& p = pieces[op_piece[j]];
        reads[op_piece[j]].status = io_.Read(p.loc.fd, ops[j].dst, ops[j].length,
                                             off_t(ops[j].offset), *p.loc.path);
      }
    }
  }
  for (size_t i = 0; i < reads.size(); i++) {
    ShardRead& r = reads[i];
    Piece& p = pieces[i];
    if (!p.meta || !r.status.ok()) continue;
    const char* buf = arena.get() + p.at;
    disk_read_.Add(p.a_end - p.a_start);
    for (uint64_t b = p.a_start; b < p.a_end; b += kBlock) {
      if (ec::Crc32c(buf + (b - p.a_start), kBlock) != p.meta->crcs[b / kBlock]) {
        crc_failures_.Inc();
        r.status = Corruption("checksum mismatch in shard " + r.id.ToString() + " block " +
                              std::to_string(b / kBlock));
        break;
      }
    }
    if (r.status.ok()) std::memcpy(r.dst, buf + (r.offset - p.a_start), p.end - r.offset);
  }
}

Status ShardStore::CheckReadRange(uint64_t offset, uint64_t length) const {
  if (offset > max_capacity_ || length > max_capacity_ - offset)
    return InvalidArgument("shard range " + std::to_string(offset) + "+" + std::to_string(length) +
                           " is past the largest shard (" + std::to_string(max_capacity_) + " bytes)");
  return Status::Ok();
}

Status ShardStore::Delete(const ShardId& id) {
  auto old = index_->Erase(id);
  if (!old) return old.error();
  files_->Free((*old)->slot);
  return Status::Ok();
}

uint64_t ShardStore::FreeBytes() const {
  struct statvfs v;
  uint64_t fs = ::statvfs(dir_.c_str(), &v) < 0 ? 0 : uint64_t(v.f_bavail) * v.f_frsize;
  return fs + files_->FreeSlotBytes();
}

Result<std::pair<std::string, uint64_t>> ShardStore::Locate(const ShardId& id) const {
  auto m = index_->Find(id);
  if (!m) return Err(NotFound("shard " + id.ToString()));
  auto loc = files_->Locate(m->slot);
  if (!loc) return Err(loc.error());
  return std::make_pair(*loc->path, loc->offset);
}

}  // namespace rustfs::dss

#include "dss/shard_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "ec/crc.h"

namespace rustfs::dss {

namespace {

constexpr char kMagic[8] = {'R', 'F', 'S', 'S', 'H', 'R', 'D', '1'};
constexpr uint64_t kHeaderFixed = 64;  // magic, capacity, data_len, then CRCs

uint64_t HeaderBytes(uint64_t capacity) {
  uint64_t blocks = (capacity + ShardStore::kBlock - 1) / ShardStore::kBlock;
  uint64_t raw = kHeaderFixed + 4 * blocks;
  return (raw + ShardStore::kBlock - 1) / ShardStore::kBlock * ShardStore::kBlock;
}

Status PwriteAll(int fd, const void* buf, size_t len, off_t off, const std::string& what) {
  auto* p = static_cast<const char*>(buf);
  while (len > 0) {
    ssize_t n = ::pwrite(fd, p, len, off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, "write " + what);
    }
    p += n;
    len -= n;
    off += n;
  }
  return Status::Ok();
}

Status PreadAll(int fd, void* buf, size_t len, off_t off, const std::string& what) {
  auto* p = static_cast<char*>(buf);
  while (len > 0) {
    ssize_t n = ::pread(fd, p, len, off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, "read " + what);
    }
    if (n == 0) return Status(Code::kShortRead, "short read of " + what);
    p += n;
    len -= n;
    off += n;
  }
  return Status::Ok();
}

void Put64(char* p, uint64_t v) { std::memcpy(p, &v, 8); }
uint64_t Get64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

Status FsyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + dir);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc < 0) return Status::FromErrno(err, "fsync " + dir);
  return Status::Ok();
}

}  // namespace

std::string ShardId::ToString() const {
  return std::to_string(ino) + "-" + std::to_string(chunk) + "-" + std::to_string(version) + "-" +
         std::to_string(shard);
}

size_t ShardStore::IdHash::operator()(const ShardId& s) const {
  uint64_t h = s.ino * 0x9E3779B97F4A7C15ull;
  h ^= s.chunk + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
  h ^= s.version + 0x85EBCA77C2B2AE63ull + (h << 6) + (h >> 2);
  h ^= s.shard + (h << 6) + (h >> 2);
  return h;
}

ShardStore::OpenShard::~OpenShard() {
  if (fd >= 0) ::close(fd);
  if (direct_fd >= 0) ::close(direct_fd);
}

ShardStore::ShardStore(std::string dir, std::unique_ptr<RandomReadEngine> engine)
    : dir_(std::move(dir)),
      engine_(std::move(engine)),
      disk_read_(GetCounter("dss.disk_bytes_read")),
      disk_written_(GetCounter("dss.disk_bytes_written")),
      crc_failures_(GetCounter("dss.checksum_failures")) {}

ShardStore::~ShardStore() = default;

Result<std::unique_ptr<ShardStore>> ShardStore::Open(const std::string& data_dir,
                                                     std::unique_ptr<RandomReadEngine> engine) {
  std::error_code ec;
  std::filesystem::create_directories(data_dir + "/shards", ec);
  if (ec) return Err(IoError("create " + data_dir + "/shards: " + ec.message()));
  for (int i = 0; i < 256; i++) {
    char sub[8];
    snprintf(sub, sizeof sub, "/%02x", i);
    std::filesystem::create_directories(data_dir + "/shards" + sub, ec);
    if (ec) return Err(IoError("create shard folder: " + ec.message()));
  }
  return std::unique_ptr<ShardStore>(new ShardStore(data_dir, std::move(engine)));
}

std::string ShardStore::PathOf(const ShardId& id) const {
  char sub[8];
  snprintf(sub, sizeof sub, "%02x", unsigned((id.ino ^ id.chunk) & 0xff));
  return dir_ + "/shards/" + sub + "/" + id.ToString();
}

Result<std::shared_ptr<ShardStore::OpenShard>> ShardStore::Load(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Err(Status::FromErrno(errno, "open shard " + path));
  auto s = std::make_shared<OpenShard>();
  s->fd = fd;
  char fixed[kHeaderFixed];
  RUSTFS_RETURN_ERR(PreadAll(fd, fixed, kHeaderFixed, 0, path));
  if (std::memcmp(fixed, kMagic, 8) != 0) return Err(Corruption("bad shard header in " + path));
  s->capacity = Get64(fixed + 8);
  s->data_len = Get64(fixed + 16);
  s->data_start = HeaderBytes(s->capacity);
  if (s->data_len > s->capacity || s->capacity > (1ull << 40))
    return Err(Corruption("bad shard header lengths in " + path));
  uint64_t blocks = (s->capacity + kBlock - 1) / kBlock;
  s->crcs.resize(blocks);
  RUSTFS_RETURN_ERR(PreadAll(fd, s->crcs.data(), blocks * 4, kHeaderFixed, path));
  disk_read_.Add(kHeaderFixed + blocks * 4);
  if (engine_) {
    auto d = RandomReadEngine::OpenForRead(path, /*direct=*/true);
    if (!d) return Err(d.error());
    s->direct_fd = d->fd;
  }
  return s;
}

Result<std::shared_ptr<ShardStore::OpenShard>> ShardStore::Get(const ShardId& id) {
  {
    std::lock_guard lk(mu_);
    auto it = index_.find(id);
    if (it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
  }
  auto s = Load(PathOf(id));
  if (!s) return s;
  std::lock_guard lk(mu_);
  if (index_.count(id)) return index_[id]->second;
  lru_.emplace_front(id, *s);
  index_[id] = lru_.begin();
  if (lru_.size() > kMaxOpen) {
    index_.erase(lru_.back().first);
    lru_.pop_back();  // in-flight readers keep their shared_ptr
  }
  return s;
}

void ShardStore::Forget(const ShardId& id) {
  std::lock_guard lk(mu_);
  auto it = index_.find(id);
  if (it == index_.end()) return;
  lru_.erase(it->second);
  index_.erase(it);
}

Status ShardStore::Write(const ShardId& id, uint64_t base_version, uint64_t offset,
                         std::string_view data, uint64_t capacity) {
  if (offset % kBlock || data.size() % kBlock)
    return InvalidArgument("shard write at " + std::to_string(offset) + "+" +
                           std::to_string(data.size()) + " is not 4 KiB aligned");
  if (capacity == 0 || offset + data.size() > capacity)
    return InvalidArgument("shard write past capacity " + std::to_string(capacity));
  std::string final_path = PathOf(id);
  std::string tmp = final_path + ".tmp";
  uint64_t blocks = (capacity + kBlock - 1) / kBlock;
  std::vector<uint32_t> crcs(blocks, 0);
  uint64_t data_len = 0;
  uint64_t data_start = HeaderBytes(capacity);

  int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, "create " + tmp);
  auto fail = [&](Status st) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return st;
  };
  if (base_version != 0) {
    ShardId base = id;
    base.version = base_version;
    auto b = Get(base);
    if (!b) return fail(b.error());
    if ((*b)->capacity != capacity) return fail(InvalidArgument("base shard capacity differs"));
    crcs = (*b)->crcs;
    data_len = (*b)->data_len;
    // In-kernel copy: the unchanged rows never cross into user space.
    loff_t in_off = 0, out_off = 0;
    uint64_t total = (*b)->data_start + data_len;
    while (uint64_t(in_off) < total) {
      ssize_t n = ::copy_file_range((*b)->fd, &in_off, fd, &out_off, total - in_off, 0);
      if (n < 0) return fail(Status::FromErrno(errno, "clone " + base.ToString()));
      if (n == 0) return fail(IoError("short clone of " + base.ToString()));
    }
    disk_read_.Add(total);
    disk_written_.Add(total);
  }
  // Keep [0, data_len) contiguous and checksummed: a write past the current
  // end first fills the gap with zeros, so every block below data_len has a
  // real CRC and the gap reads back as zeros.
  if (offset > data_len) {
    static const std::string kZeros(kBlock, '\0');
    const uint32_t zero_crc = ec::Crc32c(kZeros.data(), kBlock);
    std::string gap(offset - data_len, '\0');
    if (Status st = PwriteAll(fd, gap.data(), gap.size(), data_start + data_len, tmp); !st.ok())
      return fail(st);
    for (uint64_t b = data_len / kBlock; b < offset / kBlock; b++) crcs[b] = zero_crc;
    disk_written_.Add(gap.size());
    data_len = offset;
  }
  for (uint64_t off = 0; off < data.size(); off += kBlock)
    crcs[(offset + off) / kBlock] = ec::Crc32c(data.data() + off, kBlock);
  if (Status st = PwriteAll(fd, data.data(), data.size(), data_start + offset, tmp); !st.ok())
    return fail(st);
  data_len = std::max(data_len, offset + data.size());
  std::string header(data_start, '\0');
  std::memcpy(header.data(), kMagic, 8);
  Put64(header.data() + 8, capacity);
  Put64(header.data() + 16, data_len);
  std::memcpy(header.data() + kHeaderFixed, crcs.data(), blocks * 4);
  if (Status st = PwriteAll(fd, header.data(), header.size(), 0, tmp); !st.ok()) return fail(st);
  if (::fdatasync(fd) < 0) return fail(Status::FromErrno(errno, "sync " + tmp));
  disk_written_.Add(data.size() + header.size());
  ::close(fd);
  if (::rename(tmp.c_str(), final_path.c_str()) < 0) {
    Status st = Status::FromErrno(errno, "rename " + tmp);
    ::unlink(tmp.c_str());
    return st;
  }
  Forget(id);
  return FsyncDir(std::filesystem::path(final_path).parent_path());
}

Status ShardStore::Read(const ShardId& id, uint64_t offset, uint64_t length, std::string& out) {
  out.assign(length, '\0');
  ShardRead r{id, offset, length, out.data(), {}};
  ReadPieces({&r, 1}, /*use_engine=*/false);
  return r.status;
}

void ShardStore::ReadBatch(std::span<ShardRead> reads) { ReadPieces(reads, engine_ != nullptr); }

void ShardStore::ReadPieces(std::span<ShardRead> reads, bool use_engine) {
  // Each piece is widened to whole checksum blocks, so every byte returned
  // is verified, and read into one block-aligned arena (O_DIRECT reads land
  // there with no bounce copy).
  struct Piece {
    std::shared_ptr<OpenShard> shard;
    uint64_t a_start = 0, a_end = 0;  // block-aligned, within data_len
    uint64_t end = 0;                 // min(offset + length, data_len)
    size_t at = 0;                    // arena offset
  };
  std::vector<Piece> pieces(reads.size());
  size_t arena_bytes = 0;
  for (size_t i = 0; i < reads.size(); i++) {
    ShardRead& r = reads[i];
    std::memset(r.dst, 0, r.length);  // bytes past the data read as zeros
    auto s = Get(r.id);
    if (!s) {
      r.status = s.error();
      continue;
    }
    const OpenShard& sh = **s;
    if (r.offset + r.length > sh.capacity || r.offset + r.length < r.offset) {
      r.status = InvalidArgument("shard read " + std::to_string(r.offset) + "+" +
                                 std::to_string(r.length) + " past capacity " +
                                 std::to_string(sh.capacity));
      continue;
    }
    r.status = Status::Ok();
    Piece& p = pieces[i];
    p.end = std::min(r.offset + r.length, sh.data_len);
    if (r.offset >= p.end) continue;  // wholly past the data: zeros
    p.a_start = r.offset / kBlock * kBlock;
    p.a_end = std::min((p.end + kBlock - 1) / kBlock * kBlock, sh.data_len);
    p.at = arena_bytes;
    arena_bytes += (p.a_end - p.a_start + kBlock - 1) / kBlock * kBlock;
    p.shard = std::move(*s);
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
    if (!p.shard) continue;
    const uint64_t n = p.a_end - p.a_start;
    char* dst = arena.get() + p.at;
    if (use_engine && n <= kRandomReadMax) {
      ops.push_back({p.shard->direct_fd >= 0 ? p.shard->direct_fd : p.shard->fd,
                     p.shard->data_start + p.a_start, n, dst, 0});
      op_piece.push_back(i);
    } else {
      reads[i].status = PreadAll(p.shard->fd, dst, n, p.shard->data_start + p.a_start, PathOf(reads[i].id));
    }
  }
  if (!ops.empty()) {
    std::vector<Status> per_op;
    Status batch = engine_->ReadBatch(ops, &per_op);
    for (size_t j = 0; j < ops.size(); j++)
      reads[op_piece[j]].status = batch.ok() ? per_op[j] : batch;
  }
  for (size_t i = 0; i < reads.size(); i++) {
    ShardRead& r = reads[i];
    Piece& p = pieces[i];
    if (!p.shard || !r.status.ok()) continue;
    const char* buf = arena.get() + p.at;
    disk_read_.Add(p.a_end - p.a_start);
    for (uint64_t b = p.a_start; b < p.a_end; b += kBlock) {
      if (ec::Crc32c(buf + (b - p.a_start), kBlock) != p.shard->crcs[b / kBlock]) {
        crc_failures_.Inc();
        r.status = Corruption("checksum mismatch in shard " + r.id.ToString() + " block " +
                              std::to_string(b / kBlock));
        break;
      }
    }
    if (r.status.ok()) std::memcpy(r.dst, buf + (r.offset - p.a_start), p.end - r.offset);
  }
}

Status ShardStore::Delete(const ShardId& id) {
  Forget(id);
  std::string p = PathOf(id);
  if (::unlink(p.c_str()) < 0) return Status::FromErrno(errno, "delete " + p);
  return Status::Ok();
}

uint64_t ShardStore::FreeBytes() const {
  struct statvfs v;
  if (::statvfs(dir_.c_str(), &v) < 0) return 0;
  return uint64_t(v.f_bavail) * v.f_frsize;
}

}  // namespace rustfs::dss

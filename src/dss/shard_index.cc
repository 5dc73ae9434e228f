#include "dss/shard_index.h"

#include <rocksdb/write_batch.h>

#include <cstring>

namespace rustfs::dss {

namespace {

// Key: ino, chunk, version (big-endian u64) and shard (big-endian u32).
// Value: file u32, slot u32, capacity u64, data_len u64, then the CRCs.
void PutBe(std::string& s, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; i--) s.push_back(char(v >> (8 * i)));
}
uint64_t GetBe(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; i++) v = (v << 8) | uint8_t(p[i]);
  return v;
}
constexpr size_t kKeyBytes = 28;
constexpr size_t kFixedValue = 24;

std::string KeyOf(const ShardId& id) {
  std::string k;
  PutBe(k, id.ino, 8);
  PutBe(k, id.chunk, 8);
  PutBe(k, id.version, 8);
  PutBe(k, id.shard, 4);
  return k;
}

std::string ValueOf(const ShardMeta& m) {
  std::string v;
  PutBe(v, m.slot.file, 4);
  PutBe(v, m.slot.slot, 4);
  PutBe(v, m.capacity, 8);
  PutBe(v, m.data_len, 8);
  v.append(reinterpret_cast<const char*>(m.crcs.data()), m.crcs.size() * 4);
  return v;
}

rocksdb::WriteOptions Synced() {
  rocksdb::WriteOptions o;
  o.sync = true;
  return o;
}

}  // namespace

std::string ShardId::ToString() const {
  return std::to_string(ino) + "-" + std::to_string(chunk) + "-" + std::to_string(version) + "-" +
         std::to_string(shard);
}

size_t ShardIndex::IdHash::operator()(const ShardId& s) const {
  uint64_t h = s.ino * 0x9E3779B97F4A7C15ull;
  h ^= s.chunk + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
  h ^= s.version + 0x85EBCA77C2B2AE63ull + (h << 6) + (h >> 2);
  h ^= s.shard + (h << 6) + (h >> 2);
  return h;
}

Result<std::unique_ptr<ShardIndex>> ShardIndex::Open(const std::string& dir) {
  rocksdb::Options opts;
  opts.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(opts, dir, &raw);
  if (!s.ok()) return Err(IoError("open shard index " + dir + ": " + s.ToString()));
  std::unique_ptr<ShardIndex> idx(new ShardIndex(std::unique_ptr<rocksdb::DB>(raw)));
  RUSTFS_RETURN_ERR(idx->Load());
  return idx;
}

Status ShardIndex::Load() {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator({}));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto k = it->key();
    auto v = it->value();
    if (k.size() != kKeyBytes || v.size() < kFixedValue || (v.size() - kFixedValue) % 4)
      return Corruption("shard index entry of " + std::to_string(k.size()) + "/" + std::to_string(v.size()) + " bytes");
    ShardId id{GetBe(k.data(), 8), GetBe(k.data() + 8, 8), GetBe(k.data() + 16, 8),
               uint32_t(GetBe(k.data() + 24, 4))};
    auto m = std::make_shared<ShardMeta>();
    m->slot = {uint32_t(GetBe(v.data(), 4)), uint32_t(GetBe(v.data() + 4, 4))};
    m->capacity = GetBe(v.data() + 8, 8);
    m->data_len = GetBe(v.data() + 16, 8);
    m->crcs.resize((v.size() - kFixedValue) / 4);
    std::memcpy(m->crcs.data(), v.data() + kFixedValue, m->crcs.size() * 4);
    map_[id] = std::move(m);
  }
  if (!it->status().ok()) return IoError("read shard index: " + it->status().ToString());
  return Status::Ok();
}

std::shared_ptr<const ShardMeta> ShardIndex::Find(const ShardId& id) const {
  std::shared_lock lk(mu_);
  auto it = map_.find(id);
  return it == map_.end() ? nullptr : it->second;
}

Result<std::shared_ptr<const ShardMeta>> ShardIndex::Put(const ShardId& id, ShardMeta meta) {
  rocksdb::Status s = db_->Put(Synced(), KeyOf(id), ValueOf(meta));
  if (!s.ok()) return Err(IoError("shard index write: " + s.ToString()));
  auto m = std::make_shared<const ShardMeta>(std::move(meta));
  std::unique_lock lk(mu_);
  auto& slot = map_[id];
  std::shared_ptr<const ShardMeta> old = std::move(slot);
  slot = std::move(m);
  return old;
}

Result<std::shared_ptr<const ShardMeta>> ShardIndex::Erase(const ShardId& id) {
  if (!Find(id)) return Err(NotFound("shard " + id.ToString()));
  rocksdb::Status s = db_->Delete(Synced(), KeyOf(id));
  if (!s.ok()) return Err(IoError("shard index delete: " + s.ToString()));
  std::unique_lock lk(mu_);
  auto it = map_.find(id);
  if (it == map_.end()) return Err(NotFound("shard " + id.ToString()));
  std::shared_ptr<const ShardMeta> old = std::move(it->second);
  map_.erase(it);
  return old;
}

void ShardIndex::ForEach(const std::function<void(const ShardId&, const ShardMeta&)>& fn) const {
  std::shared_lock lk(mu_);
  for (const auto& [id, m] : map_) fn(id, *m);
}

size_t ShardIndex::size() const {
  std::shared_lock lk(mu_);
  return map_.size();
}

}  // namespace rustfs::dss

// MdsStore: the repair queue (chunks with a shard missing or bad) and the
// record of rebuilt shards. The repair worker (mds/repairer.*) drives it.
#include <rocksdb/write_batch.h>

#include <algorithm>

#include "layout/layout_rules.h"
#include "mds/mds_store.h"
#include "mds/store_keys.h"

namespace rustfs::mds {

using namespace keys;

std::vector<std::pair<uint64_t, uint64_t>> MdsStore::RepairQueue(size_t max,
                                                                 std::pair<uint64_t, uint64_t> after) {
  std::lock_guard lk(mu_);
  std::vector<std::pair<uint64_t, uint64_t>> out;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator({}));
  const std::string start = Repair(after.first, after.second);
  for (it->Seek(start); it->Valid() && it->key().starts_with("R") && out.size() < max; it->Next()) {
    auto key = ParseInoIndex(it->key().ToStringView());
    if (!key || it->key() == rocksdb::Slice(start)) continue;
    out.push_back(*key);
  }
  return out;
}

size_t MdsStore::RepairQueueSize() {
  std::lock_guard lk(mu_);
  size_t n = 0;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator({}));
  for (it->Seek("R"); it->Valid() && it->key().starts_with("R"); it->Next()) n++;
  return n;
}

std::vector<std::pair<uint64_t, pb::ChunkEntry>> MdsStore::ScanChunks(std::pair<uint64_t, uint64_t> after,
                                                                      size_t max) {
  std::lock_guard lk(mu_);
  std::vector<std::pair<uint64_t, pb::ChunkEntry>> out;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator({}));
  const std::string start = Chunk(after.first, after.second);
  for (it->Seek(start); it->Valid() && it->key().starts_with("C") && out.size() < max; it->Next()) {
    pb::ChunkEntry c;
    auto key = ParseInoIndex(it->key().ToStringView());
    if (!key || it->key() == rocksdb::Slice(start) || !c.ParseFromString(it->value().ToString())) continue;
    out.emplace_back(key->first, std::move(c));
  }
  return out;
}

Result<size_t> MdsStore::QueueChunksOn(uint32_t dss) {
  std::lock_guard lk(mu_);
  rocksdb::WriteBatch wb;
  size_t n = 0;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator({}));
  for (it->Seek("C"); it->Valid() && it->key().starts_with("C"); it->Next()) {
    pb::ChunkEntry c;
    auto key = ParseInoIndex(it->key().ToStringView());
    if (!key || !c.ParseFromString(it->value().ToString())) continue;
    for (uint32_t d : c.dss())
      if (d == dss) {
        wb.Put(Repair(key->first, c.index()), "");
        n++;
        break;
      }
  }
  RUSTFS_RETURN_ERR(Commit(wb));
  return n;
}

Status MdsStore::DropFromRepair(uint64_t ino, uint64_t index) {
  std::lock_guard lk(mu_);
  rocksdb::WriteBatch wb;
  wb.Delete(Repair(ino, index));
  return Commit(wb);
}

Result<MdsStore::ChunkHealth> MdsStore::GetChunkHealth(uint64_t ino, uint64_t index) {
  std::lock_guard lk(mu_);
  std::string v;
  ChunkHealth h;
  if (!db_->Get({}, Chunk(ino, index), &v).ok() || !h.chunk.ParseFromString(v))
    return Err(NotFound("chunk " + std::to_string(index) + " of inode " + std::to_string(ino)));
  std::string prefix = BadShardPrefix(ino, index);
  PutBe64(prefix, h.chunk.version());
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator({}));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next())
    if (it->key().size() == prefix.size() + 8)
      h.bad_shards.push_back(uint32_t(GetBe64(it->key().data() + prefix.size())));
  return h;
}

Status MdsStore::RecordRepair(uint64_t ino, const pb::ChunkEntry& rebuilt,
                              const std::vector<uint32_t>& shards) {
  std::lock_guard lk(mu_);
  std::string v;
  pb::ChunkEntry cur;
  rocksdb::WriteBatch wb;
  if (!db_->Get({}, Chunk(ino, rebuilt.index()), &v).ok() || !cur.ParseFromString(v) ||
      cur.version() != rebuilt.version() || cur.dss_size() != rebuilt.dss_size()) {
    // Rewritten or dropped meanwhile: the rebuilt copies are nobody's.
    pb::ChunkEntry orphans = rebuilt;
    for (int s = 0; s < orphans.dss_size(); s++)
      if (std::find(shards.begin(), shards.end(), uint32_t(s)) == shards.end())
        orphans.set_dss(s, layout::kNoDss);
    QueueGarbage(ino, orphans, wb);
    RUSTFS_RETURN_IF_ERROR(Commit(wb));
    return {Code::kStale, "chunk changed while it was repaired"};
  }
  // The replaced copies (a dead server's, a corrupt one) are garbage: a
  // chunk entry naming only those positions.
  pb::ChunkEntry old = cur;
  for (int s = 0; s < old.dss_size(); s++) old.set_dss(s, layout::kNoDss);
  bool any_old = false;
  for (uint32_t s : shards) {
    // A copy rewritten in place (same server, same key) replaced itself.
    if (cur.dss(int(s)) != layout::kNoDss && cur.dss(int(s)) != rebuilt.dss(int(s))) {
      old.set_dss(int(s), cur.dss(int(s)));
      any_old = true;
    }
    cur.set_dss(int(s), rebuilt.dss(int(s)));
    std::string bad = BadShardPrefix(ino, rebuilt.index());
    PutBe64(bad, rebuilt.version());
    PutBe64(bad, s);
    wb.Delete(bad);
  }
  if (any_old) QueueGarbage(ino, old, wb);
  wb.Put(Chunk(ino, cur.index()), cur.SerializeAsString());
  if (!layout::IsDegraded(cur)) wb.Delete(Repair(ino, cur.index()));
  return Commit(wb);
}

}  // namespace rustfs::mds

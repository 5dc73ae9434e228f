// What a ShardStore knows of each shard version: its slot, capacity, data
// length and a CRC32C per 4 KiB block. All of it lives in RAM (4 bytes of
// CRC per 4 KiB stored: 0.1 % of the data), so a read needs nothing from the
// disk but its data; a RocksDB database in the store's folder keeps it
// durable (every change a synced write).
//
// Thread-safe: lookups share a lock, changes take it alone.
#pragma once

#include <rocksdb/db.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "dss/slot_files.h"

namespace rustfs::dss {

struct ShardId {
  uint64_t ino = 0;
  uint64_t chunk = 0;
  uint64_t version = 0;
  uint32_t shard = 0;
  bool operator==(const ShardId&) const = default;
  std::string ToString() const;
};

struct ShardMeta {
  SlotRef slot;
  uint64_t capacity = 0;        // bytes the shard may hold
  uint64_t data_len = 0;        // bytes written; the rest reads as zeros
  std::vector<uint32_t> crcs;   // one per 4 KiB block of capacity
};

class ShardIndex {
 public:
  static Result<std::unique_ptr<ShardIndex>> Open(const std::string& dir);

  std::shared_ptr<const ShardMeta> Find(const ShardId& id) const;
  // Records `meta` for id (durable before it returns); the entry it
  // replaces, if any.
  Result<std::shared_ptr<const ShardMeta>> Put(const ShardId& id, ShardMeta meta);
  // Forgets id (durable before it returns); the entry it had, or kNotFound.
  Result<std::shared_ptr<const ShardMeta>> Erase(const ShardId& id);
  // Every entry, in no particular order.
  void ForEach(const std::function<void(const ShardId&, const ShardMeta&)>& fn) const;
  size_t size() const;

 private:
  struct IdHash {
    size_t operator()(const ShardId& s) const;
  };
  explicit ShardIndex(std::unique_ptr<rocksdb::DB> db) : db_(std::move(db)) {}
  Status Load();

  std::unique_ptr<rocksdb::DB> db_;
  mutable std::shared_mutex mu_;
  std::unordered_map<ShardId, std::shared_ptr<const ShardMeta>, IdHash> map_;
};

}  // namespace rustfs::dss

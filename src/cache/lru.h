// Plain LRU over uint64_t keys with byte charges: the baseline the
// W-TinyLFU policy is compared against (policy = "lru").
#pragma once

#include <cstdint>
#include <list>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cache/policy.h"

namespace rustfs::cache {

class LruPolicy final : public Policy {
 public:
  explicit LruPolicy(uint64_t capacity_bytes);

  void RecordAccess(uint64_t key) override {}
  bool Contains(uint64_t key) const override { return index_.contains(key); }
  void Touch(uint64_t key) override;
  void Insert(uint64_t key, uint64_t charge, std::vector<uint64_t>* evicted) override;
  void Erase(uint64_t key) override;
  uint64_t used_bytes() const override { return used_; }
  uint64_t capacity_bytes() const override { return capacity_; }
  size_t size() const override { return index_.size(); }
  std::string_view name() const override { return "lru"; }

  // Resident keys from least to most recently used (tests).
  std::vector<uint64_t> KeysLruToMru() const;

 private:
  struct Node {
    uint64_t key;
    uint64_t charge;
  };
  using List = std::list<Node>;

  uint64_t capacity_;
  uint64_t used_ = 0;
  List list_;  // front = least recently used
  std::unordered_map<uint64_t, List::iterator> index_;
};

}  // namespace rustfs::cache

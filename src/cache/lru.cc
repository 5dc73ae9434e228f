#include "cache/lru.h"

namespace rustfs::cache {

LruPolicy::LruPolicy(uint64_t capacity_bytes) : capacity_(capacity_bytes) {}

void LruPolicy::Touch(uint64_t key) {
  auto it = index_.find(key);
  if (it == index_.end()) return;
  list_.splice(list_.end(), list_, it->second);
}

void LruPolicy::Insert(uint64_t key, uint64_t charge, std::vector<uint64_t>* evicted) {
  evicted->clear();
  if (charge > capacity_) {
    // Could never fit; admitting it would flush the whole cache for nothing.
    if (index_.contains(key)) Erase(key);
    evicted->push_back(key);
    return;
  }
  auto it = index_.find(key);
  if (it != index_.end()) {
    used_ = used_ - it->second->charge + charge;
    it->second->charge = charge;
    list_.splice(list_.end(), list_, it->second);
  } else {
    list_.push_back(Node{key, charge});
    index_.emplace(key, std::prev(list_.end()));
    used_ += charge;
  }
  // The new key sits at the MRU end and charge <= capacity, so it is never
  // its own victim.
  while (used_ > capacity_) {
    const Node& victim = list_.front();
    used_ -= victim.charge;
    evicted->push_back(victim.key);
    index_.erase(victim.key);
    list_.pop_front();
  }
}

void LruPolicy::Erase(uint64_t key) {
  auto it = index_.find(key);
  if (it == index_.end()) return;
  used_ -= it->second->charge;
  list_.erase(it->second);
  index_.erase(it);
}

std::vector<uint64_t> LruPolicy::KeysLruToMru() const {
  std::vector<uint64_t> out;
  out.reserve(list_.size());
  for (const Node& n : list_) out.push_back(n.key);
  return out;
}

}  // namespace rustfs::cache

#include "cache/policy.h"

#include "cache/lru.h"
#include "cache/wtinylfu.h"

namespace rustfs::cache {

std::unique_ptr<Policy> MakePolicy(std::string_view name, uint64_t capacity_bytes,
                                   uint64_t expected_entries) {
  if (name == "tinylfu") return std::make_unique<WTinyLfuPolicy>(capacity_bytes, expected_entries);
  if (name == "lru") return std::make_unique<LruPolicy>(capacity_bytes);
  return nullptr;
}

}  // namespace rustfs::cache

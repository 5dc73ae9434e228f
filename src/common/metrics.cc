#include "common/metrics.h"

#include <memory>
#include <mutex>

namespace rustfs {

namespace {
std::mutex g_mu;
std::map<std::string, std::unique_ptr<Counter>>& Registry() {
  static auto* r = new std::map<std::string, std::unique_ptr<Counter>>();
  return *r;
}
}  // namespace

unsigned Counter::NextStripe() {
  static std::atomic<unsigned> next{0};
  return next.fetch_add(1, std::memory_order_relaxed) % kStripes;
}

Counter& GetCounter(const std::string& name) {
  std::lock_guard lk(g_mu);
  auto& slot = Registry()[name];
  if (!slot) slot = std::make_unique<Counter>();
  return *slot;
}

std::map<std::string, uint64_t> SnapshotCounters() {
  std::lock_guard lk(g_mu);
  std::map<std::string, uint64_t> out;
  for (auto& [k, v] : Registry()) out[k] = v->Get();
  return out;
}

std::string CountersToJson(const std::map<std::string, uint64_t>& counters) {
  std::string s = "{";
  bool first = true;
  for (auto& [k, v] : counters) {
    if (!first) s += ", ";
    first = false;
    s += "\"" + k + "\": " + std::to_string(v);
  }
  return s + "}";
}

}  // namespace rustfs

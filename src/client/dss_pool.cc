#include "client/dss_pool.h"

#include <algorithm>

#include "common/clock.h"

namespace rustfs::client {

namespace {
constexpr int64_t kDownForNs = 1'000'000'000;  // 1 s, then a read probes it again
constexpr int64_t kSlowForNs = 200'000'000;    // 200 ms
}  // namespace

DssPool::DssPool(const std::vector<std::string>& addresses, int timeout_ms, bool poll_replies)
    : down_until_ns_(new std::atomic<int64_t>[addresses.size()]),
      slow_until_ns_(new std::atomic<int64_t>[addresses.size()]),
      inflight_(new std::atomic<int>[addresses.size()]),
      hedged_in_a_row_(new std::atomic<int>[addresses.size()]) {
  for (size_t i = 0; i < addresses.size(); i++) {
    channels_.push_back(std::make_unique<net::RpcChannel>(addresses[i], timeout_ms, "client", poll_replies));
    down_until_ns_[i] = 0;
    slow_until_ns_[i] = 0;
    inflight_[i] = 0;
    hedged_in_a_row_[i] = 0;
  }
}

net::Transport* DssPool::Get(uint32_t id) {
  return id < channels_.size() ? channels_[id].get() : nullptr;
}

void DssPool::MarkDown(uint32_t id) {
  if (id < channels_.size()) down_until_ns_[id] = SteadyNowNs() + kDownForNs;
}

void DssPool::MarkSlow(uint32_t id) {
  if (id < channels_.size()) slow_until_ns_[id] = SteadyNowNs() + kSlowForNs;
}

void DssPool::NoteHedged(uint32_t id) {
  if (id >= channels_.size()) return;
  // One hedge is weak evidence (a scheduling hiccup); two in a row with no
  // timely answer between them is a stalled server.
  const int n = ++hedged_in_a_row_[id];
  if (n < 2) return;
  const int64_t until = SteadyNowNs() + (kSlowForNs << std::min(n - 2, 5));
  if (until > slow_until_ns_[id].load()) slow_until_ns_[id] = until;
}

void DssPool::NoteAnswered(uint32_t id) {
  if (id < channels_.size() && hedged_in_a_row_[id].load(std::memory_order_relaxed) != 0)
    hedged_in_a_row_[id] = 0;
}

bool DssPool::IsSlow(uint32_t id) const {
  return id < channels_.size() && slow_until_ns_[id].load() > SteadyNowNs();
}

bool DssPool::IsDown(uint32_t id) const {
  // An id out of range (layout::kNoDss: the shard is stored nowhere) is as
  // good as down.
  return id >= channels_.size() || down_until_ns_[id].load() > SteadyNowNs();
}

}  // namespace rustfs::client

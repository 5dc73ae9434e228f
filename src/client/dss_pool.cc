#include "client/dss_pool.h"

#include <algorithm>

namespace rustfs::client {

namespace {
constexpr int64_t kDownForNs = 1'000'000'000;  // 1 s, then a read probes it again
constexpr int64_t kSlowForNs = 200'000'000;    // 200 ms
int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

DssPool::DssPool(const std::vector<std::string>& addresses, int timeout_ms)
    : down_until_ns_(new std::atomic<int64_t>[addresses.size()]),
      slow_until_ns_(new std::atomic<int64_t>[addresses.size()]),
      inflight_(new std::atomic<int>[addresses.size()]) {
  for (size_t i = 0; i < addresses.size(); i++) {
    channels_.push_back(std::make_unique<net::RpcChannel>(addresses[i], timeout_ms, "client"));
    down_until_ns_[i] = 0;
    slow_until_ns_[i] = 0;
    inflight_[i] = 0;
  }
}

net::Transport* DssPool::Get(uint32_t id) {
  return id < channels_.size() ? channels_[id].get() : nullptr;
}

void DssPool::MarkDown(uint32_t id) {
  if (id < channels_.size()) down_until_ns_[id] = NowNs() + kDownForNs;
}

void DssPool::MarkSlow(uint32_t id) {
  if (id < channels_.size()) slow_until_ns_[id] = NowNs() + kSlowForNs;
}

bool DssPool::IsSlow(uint32_t id) const {
  return id < channels_.size() && slow_until_ns_[id].load() > NowNs();
}

bool DssPool::IsDown(uint32_t id) const {
  return id < channels_.size() && down_until_ns_[id].load() > NowNs();
}

}  // namespace rustfs::client

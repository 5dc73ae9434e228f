#include "client/dss_pool.h"

namespace rustfs::client {

namespace {
constexpr int64_t kDownForNs = 1'000'000'000;  // 1 s, then a read probes it again
int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

DssPool::DssPool(const std::vector<std::string>& addresses, int timeout_ms)
    : down_until_ns_(new std::atomic<int64_t>[addresses.size()]) {
  for (size_t i = 0; i < addresses.size(); i++) {
    channels_.push_back(std::make_unique<net::RpcChannel>(addresses[i], timeout_ms, "client"));
    down_until_ns_[i] = 0;
  }
}

net::RpcChannel* DssPool::Get(uint32_t id) {
  return id < channels_.size() ? channels_[id].get() : nullptr;
}

void DssPool::MarkDown(uint32_t id) {
  if (id < channels_.size()) down_until_ns_[id] = NowNs() + kDownForNs;
}

bool DssPool::IsDown(uint32_t id) const {
  return id < channels_.size() && down_until_ns_[id].load() > NowNs();
}

}  // namespace rustfs::client

// Connections to every DSS, by id (behind net::Transport, so an RDMA
// transport could replace TCP), and what the client knows of their health.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "common/config.h"
#include "net/rpc_channel.h"

namespace rustfs::client {

class DssPool {
 public:
  // addresses[i] is DSS i's "host:port"; poll_replies: see net::RpcChannel.
  DssPool(const std::vector<std::string>& addresses, int timeout_ms, bool poll_replies);

  size_t size() const { return channels_.size(); }
  // nullptr for an id the client has never heard of.
  net::Transport* Get(uint32_t id);

  // A DSS that just failed a call is skipped (its reads go straight to the
  // degraded path) for a short while instead of paying a connect per read.
  void MarkDown(uint32_t id);
  // True too for an id the client has never heard of (layout::kNoDss).
  bool IsDown(uint32_t id) const;
  // A DSS that let a read be hedged away: for a shorter while, reads avoid
  // it when they have a choice, but repairs may still use it.
  void MarkSlow(uint32_t id);
  bool IsSlow(uint32_t id) const;
  // A read to `id` was hedged away (NoteHedged) or answered in time
  // (NoteAnswered). A server that keeps being hedged (a stalled one) is
  // marked slow for a period that doubles while it goes on (200 ms up to
  // 6.4 s), so reads route around it instead of each waiting out the hedge
  // delay; one timely answer ends that.
  void NoteHedged(uint32_t id);
  void NoteAnswered(uint32_t id);

  // Requests this client has in flight at DSS `id`: what power-of-two
  // choices compares.
  void AddInflight(uint32_t id, int delta) {
    if (id < channels_.size()) inflight_[id].fetch_add(delta, std::memory_order_relaxed);
  }
  int Inflight(uint32_t id) const {
    return id < channels_.size() ? inflight_[id].load(std::memory_order_relaxed) : 0;
  }

 private:
  std::vector<std::unique_ptr<net::Transport>> channels_;  // TCP (RpcChannel) today
  std::unique_ptr<std::atomic<int64_t>[]> down_until_ns_;  // steady clock
  std::unique_ptr<std::atomic<int64_t>[]> slow_until_ns_;
  std::unique_ptr<std::atomic<int>[]> inflight_;
  std::unique_ptr<std::atomic<int>[]> hedged_in_a_row_;
};

}  // namespace rustfs::client

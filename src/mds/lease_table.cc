#include "mds/lease_table.h"

#include <thread>
#include <vector>

#include "common/log.h"
#include "common/metrics.h"

namespace rustfs::mds {

LeaseTable::LeaseTable(std::chrono::milliseconds lease, int callback_timeout_ms)
    : lease_(lease), callback_timeout_ms_(callback_timeout_ms), started_(Clock::now()) {}

uint64_t LeaseTable::Register(const std::string& callback_address) {
  auto s = std::make_shared<Session>();
  s->address = callback_address;
  s->channel = std::make_unique<net::RpcChannel>(callback_address, callback_timeout_ms_, "mds.cb");
  s->expires = Clock::now() + lease_;
  std::lock_guard lk(mu_);
  uint64_t id = next_id_++;
  sessions_[id] = std::move(s);
  return id;
}

Status LeaseTable::Renew(uint64_t client_id) {
  std::lock_guard lk(mu_);
  auto it = sessions_.find(client_id);
  if (it == sessions_.end()) return NotFound("unknown client session " + std::to_string(client_id));
  if (it->second->lost) return {Code::kStale, "leases of session " + std::to_string(client_id) + " were revoked"};
  it->second->expires = Clock::now() + lease_;
  return Status::Ok();
}

void LeaseTable::End(uint64_t client_id) {
  std::lock_guard lk(mu_);
  sessions_.erase(client_id);
  for (auto it = holders_.begin(); it != holders_.end();) {
    it->second.erase(client_id);
    it = it->second.empty() ? holders_.erase(it) : std::next(it);
  }
}

void LeaseTable::Grant(uint64_t client_id, uint64_t ino) {
  if (client_id == 0) return;
  std::lock_guard lk(mu_);
  auto it = sessions_.find(client_id);
  if (it == sessions_.end() || it->second->lost) return;  // it will re-register and ask again
  holders_[ino].insert(client_id);
}

void LeaseTable::Revoke(uint64_t ino, const std::string& name, uint64_t except) {
  std::vector<std::pair<uint64_t, std::shared_ptr<Session>>> targets;
  {
    std::lock_guard lk(mu_);
    auto it = holders_.find(ino);
    if (it == holders_.end()) return;
    auto now = Clock::now();
    for (auto c = it->second.begin(); c != it->second.end();) {
      auto s = sessions_.find(*c);
      if (*c == except) {
        ++c;
        continue;
      }
      if (s != sessions_.end() && !s->second->lost && s->second->expires > now)
        targets.emplace_back(*c, s->second);
      c = it->second.erase(c);
    }
    if (it->second.empty()) holders_.erase(it);
  }
  if (targets.empty()) return;
  static Counter& revokes = GetCounter("mds.lease_revocations");
  static Counter& waited = GetCounter("mds.lease_revocations_waited_out");
  pb::RevokeReq req;
  req.set_ino(ino);
  req.set_name(name);
  std::vector<net::PendingCall> calls;
  for (auto& [id, s] : targets) calls.push_back(s->channel->Start(pb::M_REVOKE, req));
  for (size_t i = 0; i < targets.size(); i++) {
    revokes.Inc();
    if (calls[i].Wait()) continue;
    // No ack: make sure the client can no longer renew, then wait until
    // what it holds has expired on its own clock.
    Clock::time_point until;
    {
      std::lock_guard lk(mu_);
      targets[i].second->lost = true;
      until = targets[i].second->expires;
    }
    waited.Inc();
    LOG_WARN("client {} did not acknowledge revocation of inode {}; waiting out its lease",
             targets[i].first, ino);
    std::this_thread::sleep_until(until);
  }
}

Status LeaseTable::CheckGrace() const {
  if (grace_ && Clock::now() < started_ + lease_)
    return {Code::kRetry, "MDS restarted: changes wait for old leases to expire"};
  return Status::Ok();
}

}  // namespace rustfs::mds

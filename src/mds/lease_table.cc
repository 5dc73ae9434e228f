#include "mds/lease_table.h"

#include <algorithm>
#include <ctime>
#include <thread>
#include <vector>

#include "common/log.h"
#include "common/metrics.h"

namespace rustfs::mds {

namespace {
// Session ids are not reused across MDS restarts: a client of the previous
// incarnation that still sends its old id must not be taken for a new one.
uint64_t FirstSessionId() { return (uint64_t(::time(nullptr)) << 20) + 1; }
}  // namespace

LeaseTable::LeaseTable(std::chrono::milliseconds lease, int callback_timeout_ms, Clock& clock)
    : clock_(clock),
      lease_(lease),
      callback_timeout_ms_(callback_timeout_ms),
      started_(clock.Now()),
      next_id_(FirstSessionId()) {}

uint64_t LeaseTable::Register(const std::string& callback_address) {
  auto s = std::make_shared<Session>();
  s->address = callback_address;
  s->channel = std::make_unique<net::RpcChannel>(callback_address, callback_timeout_ms_, "mds.cb");
  s->expires = clock_.Now() + lease_;
  std::lock_guard lk(mu_);
  uint64_t id = next_id_++;
  sessions_[id] = std::move(s);
  return id;
}

Status LeaseTable::Renew(uint64_t client_id) {
  std::lock_guard lk(mu_);
  auto it = sessions_.find(client_id);
  if (it == sessions_.end()) return NotFound("unknown client session " + std::to_string(client_id));
  Session& s = *it->second;
  // A lease that ran out is over, even if the client is back now: changes
  // may have been made without asking it, so it must drop what it cached.
  if (!s.lost && s.expires < clock_.Now()) s.lost = true;
  if (s.lost) return {Code::kStale, "leases of session " + std::to_string(client_id) + " ran out or were revoked"};
  s.expires = clock_.Now() + lease_;
  return Status::Ok();
}

Status LeaseTable::CheckSession(uint64_t client_id) {
  std::lock_guard lk(mu_);
  auto it = sessions_.find(client_id);
  if (it == sessions_.end()) return NotFound("unknown client session " + std::to_string(client_id));
  if (it->second->lost || it->second->expires < clock_.Now())
    return {Code::kStale, "session " + std::to_string(client_id) + " lost its lease"};
  return Status::Ok();
}

void LeaseTable::EraseLocked(uint64_t client_id, Ended& out) {
  auto it = sessions_.find(client_id);
  if (it == sessions_.end()) return;
  for (uint64_t ino : it->second->refs) {
    auto r = refs_.find(ino);
    if (r == refs_.end()) continue;
    r->second.erase(client_id);
    if (r->second.empty()) {
      refs_.erase(r);
      out.unreferenced.push_back(ino);
    }
  }
  sessions_.erase(it);
  out.sessions.push_back(client_id);
  for (auto h = holders_.begin(); h != holders_.end();) {
    h->second.erase(client_id);
    h = h->second.empty() ? holders_.erase(h) : std::next(h);
  }
}

LeaseTable::Ended LeaseTable::End(uint64_t client_id) {
  Ended out;
  std::lock_guard lk(mu_);
  EraseLocked(client_id, out);
  return out;
}

LeaseTable::Ended LeaseTable::Reap() {
  Ended out;
  std::lock_guard lk(mu_);
  const auto now = clock_.Now();
  std::vector<uint64_t> gone;
  for (auto& [id, s] : sessions_)
    if (s->expires < now) gone.push_back(id);
  for (uint64_t id : gone) {
    LOG_INFO("client session {} ended: its lease ran out", id);
    EraseLocked(id, out);
  }
  return out;
}

void LeaseTable::Grant(uint64_t client_id, uint64_t ino) {
  if (client_id == 0) return;
  std::lock_guard lk(mu_);
  auto it = sessions_.find(client_id);
  if (it == sessions_.end() || it->second->lost) return;  // it will re-register and ask again
  holders_[ino].insert(client_id);
}

void LeaseTable::AddRef(uint64_t client_id, uint64_t ino) {
  if (client_id == 0) return;
  std::lock_guard lk(mu_);
  auto it = sessions_.find(client_id);
  if (it == sessions_.end()) return;
  it->second->refs.insert(ino);
  refs_[ino].insert(client_id);
}

bool LeaseTable::DropRef(uint64_t client_id, uint64_t ino) {
  std::lock_guard lk(mu_);
  if (auto s = sessions_.find(client_id); s != sessions_.end()) s->second->refs.erase(ino);
  auto r = refs_.find(ino);
  if (r == refs_.end()) return false;
  r->second.erase(client_id);
  if (!r->second.empty()) return false;
  refs_.erase(r);
  return true;
}

bool LeaseTable::Referenced(uint64_t ino) {
  std::lock_guard lk(mu_);
  return refs_.count(ino) != 0;
}

bool LeaseTable::Revoke(uint64_t ino, const std::string& name, uint64_t except, bool recall) {
  struct Target {
    uint64_t id;
    std::shared_ptr<Session> session;
    Clock::time_point expires;
  };
  std::vector<Target> targets;
  {
    std::lock_guard lk(mu_);
    std::set<uint64_t> ids;
    if (auto h = holders_.find(ino); h != holders_.end()) {
      ids = h->second;
      // A changed name leaves the directory's lease in place (only that
      // entry is stale); anything else ends every other holder's lease.
      if (name.empty()) {
        holders_.erase(h);
        if (except && ids.count(except)) holders_[ino].insert(except);  // the changer keeps its lease
      }
    }
    if (name.empty())
      if (auto r = refs_.find(ino); r != refs_.end()) ids.insert(r->second.begin(), r->second.end());
    ids.erase(except);
    const auto now = clock_.Now();
    for (uint64_t id : ids) {
      auto s = sessions_.find(id);
      // A lost or lapsed session trusts nothing it cached any more.
      if (s != sessions_.end() && !s->second->lost && s->second->expires > now)
        targets.push_back({id, s->second, s->second->expires});
    }
  }
  if (!targets.empty()) {
    static Counter& revokes = GetCounter("mds.lease_revocations");
    static Counter& waited = GetCounter("mds.lease_revocations_waited_out");
    pb::RevokeReq req;
    req.set_ino(ino);
    req.set_name(name);
    req.set_recall(recall);
    std::vector<net::PendingCall> calls;
    for (auto& t : targets) calls.push_back(t.session->channel->Start(pb::M_REVOKE, req));
    // All calls are out; each answer is awaited until its client's lease
    // would run out anyway, so the total wait is the slowest one's.
    Clock::time_point wait_until = clock_.Now();
    for (size_t i = 0; i < targets.size(); i++) {
      revokes.Inc();
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          targets[i].expires - clock_.Now());
      Result<net::RpcReply> r = Err(Unavailable("no answer before the lease ran out"));
      if (calls[i].Ready(int(std::max<int64_t>(0, left.count())))) r = calls[i].Wait();
      if (r) {
        pb::RevokeReply rep;
        if (name.empty() && rep.ParseFromString(r->body) && !rep.open()) DropRef(targets[i].id, ino);
        continue;
      }
      // No ack: make sure the client can no longer renew, then wait until
      // what it holds has expired on its own clock.
      {
        std::lock_guard lk(mu_);
        targets[i].session->lost = true;
      }
      waited.Inc();
      wait_until = std::max(wait_until, targets[i].expires);
      LOG_WARN("client {} did not acknowledge revocation of inode {}: {}; waiting out its lease",
               targets[i].id, ino, r.error().message());
    }
    clock_.SleepUntil(wait_until);
  }
  return !Referenced(ino);
}

Status LeaseTable::CheckGrace() const {
  if (grace_ && clock_.Now() < started_ + lease_)
    return {Code::kRetry, "MDS restarted: changes wait for old leases to expire"};
  return Status::Ok();
}

}  // namespace rustfs::mds

// Client sessions and the leases they hold (LLD-002 §1.1, §3.3).
//
// A client registers a callback address and gets a session id. Anything it
// learns from the MDS about an inode (attributes, directory entries, the
// chunk map) it may cache while it holds a lease on that inode, and all of
// a client's leases live and die with its session: renewed together every
// lease/3, lost together when lease passes without renewal.
//
// A change to an inode revokes every other holder's lease before the change
// is acknowledged: the MDS calls each holder back and waits for its ack. A
// holder that does not answer is waited out: its session is marked lost
// (renewals refused from then on) and the change completes when the
// session's current lease has expired, after which that client trusts
// nothing it cached.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

#include "common/status.h"
#include "net/rpc_channel.h"

namespace rustfs::mds {

class LeaseTable {
 public:
  using Clock = std::chrono::steady_clock;

  LeaseTable(std::chrono::milliseconds lease, int callback_timeout_ms);

  std::chrono::milliseconds lease() const { return lease_; }

  // A new session calling back at `callback_address`.
  uint64_t Register(const std::string& callback_address);
  // Extends every lease of the session. kNotFound for an unknown session
  // (e.g. the MDS restarted), kStale for one whose leases were revoked
  // without an ack: the client must drop its caches and register again.
  Status Renew(uint64_t client_id);

  // The client is shutting down: its leases go now instead of at expiry,
  // so nobody waits for them.
  void End(uint64_t client_id);

  // Records that `client_id` (0 = an anonymous caller: nothing recorded)
  // may cache what it learns about `ino`. Call BEFORE reading the state
  // returned to the client, so a change racing with the read revokes it.
  void Grant(uint64_t client_id, uint64_t ino);

  // Revokes the lease on `ino` (or on directory entry `name` of it) held by
  // every client except `except`; returns once each has acknowledged or its
  // lease has run out.
  void Revoke(uint64_t ino, const std::string& name, uint64_t except);

  // Clients of the previous MDS incarnation may still trust what they
  // cached for up to one lease; its holders are unknown here, so mutations
  // are refused with kRetry until that has expired (NFS's grace period,
  // for the same reason). Clients retry kRetry by themselves.
  Status CheckGrace() const;
  void SkipGrace() { grace_ = false; }

 private:
  struct Session {
    std::string address;
    std::unique_ptr<net::RpcChannel> channel;
    Clock::time_point expires;
    bool lost = false;
  };

  const std::chrono::milliseconds lease_;
  const int callback_timeout_ms_;
  const Clock::time_point started_;
  bool grace_ = true;
  std::mutex mu_;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, std::shared_ptr<Session>> sessions_;
  std::unordered_map<uint64_t, std::set<uint64_t>> holders_;  // ino -> clients
};

}  // namespace rustfs::mds

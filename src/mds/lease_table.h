// Client sessions, the leases they hold and the inodes they keep open
// (LLD-002 §1.1, §3.3; DESIGN.md §7).
//
// A client registers a callback address and gets a session id. Anything it
// learns from the MDS about an inode (attributes, directory entries, the
// chunk map) it may cache while it holds a lease on that inode, and all of
// a client's leases live and die with its session: renewed together every
// lease/3, lost together when lease passes without renewal.
//
// A change to an inode revokes every other holder's lease before the change
// is acknowledged: the MDS calls each holder back (all at once) and waits
// for its ack, or for its lease to run out if it does not answer; such a
// session is marked lost (renewals refused from then on), and after its
// lease that client trusts nothing it cached. A revocation with `recall`
// also makes the holder publish its buffered writes first.
//
// Open references: a client that keeps an inode's state (it has it open,
// or cached it after closing) holds a reference, so an inode whose last
// name goes stays alive for it. The reference ends when the client says so
// (Release, or "not open" in a revocation's answer) or when its session
// ends (unmount, or a lease that ran out: Reap).
//
// Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "net/rpc_channel.h"

namespace rustfs::mds {

class LeaseTable {
 public:
  // `clock` (not owned, outlives the table) times leases and the waits for
  // them; tests pass a FakeClock.
  LeaseTable(std::chrono::milliseconds lease, int callback_timeout_ms, Clock& clock = SteadyClock());

  std::chrono::milliseconds lease() const { return lease_; }

  // A new session calling back at `callback_address`.
  uint64_t Register(const std::string& callback_address);
  // Extends every lease of the session. kNotFound for an unknown session
  // (e.g. the MDS restarted), kStale for one whose lease ran out or whose
  // leases were revoked without an ack: the client must drop its caches
  // and register again.
  Status Renew(uint64_t client_id);

  // OK for a live session; kStale for a lost one, kNotFound for none.
  Status CheckSession(uint64_t client_id);

  // What went with ended sessions: inodes that lost their last reference
  // (the caller collects those that are orphans).
  struct Ended {
    std::vector<uint64_t> sessions;
    std::vector<uint64_t> unreferenced;
  };
  // The client is shutting down: its leases and references go now instead
  // of at expiry, so nobody waits for them.
  Ended End(uint64_t client_id);
  // Ends every session whose lease has run out.
  Ended Reap();

  // Records that `client_id` (0 = an anonymous caller: nothing recorded)
  // may cache what it learns about `ino`. Call BEFORE reading the state
  // returned to the client, so a change racing with the read revokes it.
  void Grant(uint64_t client_id, uint64_t ino);
  // References (see the top of the file). AddRef ignores unknown sessions.
  void AddRef(uint64_t client_id, uint64_t ino);
  // True when that was the inode's last reference.
  bool DropRef(uint64_t client_id, uint64_t ino);
  bool Referenced(uint64_t ino);

  // Revokes the lease on `ino` (name empty: its attributes, map, data, and
  // for a directory all its entries; or only its directory entry `name`,
  // which leaves the directory's lease in place) held by every client
  // except `except`
  // (0: none excepted); an inode revocation also reaches the clients that
  // hold references to it, and drops the references of those that answer
  // they no longer use it. Returns once each has answered or its lease has
  // run out (all called at once, so the wait is the slowest one's).
  // Returns true when `ino` is left with no reference.
  bool Revoke(uint64_t ino, const std::string& name, uint64_t except, bool recall = false);

  // Clients of the previous MDS incarnation may still trust what they
  // cached for up to one lease; its holders are unknown here, so mutations
  // are refused with kRetry until that has expired (NFS's grace period,
  // for the same reason), and the clients re-register (reclaiming their
  // open references). Clients retry kRetry by themselves.
  Status CheckGrace() const;
  bool InGrace() const { return !CheckGrace().ok(); }
  void SkipGrace() { grace_ = false; }

 private:
  struct Session {
    std::string address;
    std::unique_ptr<net::RpcChannel> channel;
    Clock::time_point expires;  // on clock_
    bool lost = false;
    std::set<uint64_t> refs;  // inodes it holds references to
  };
  // Caller holds mu_. Erases the session and its leases and references.
  void EraseLocked(uint64_t client_id, Ended& out);

  Clock& clock_;
  const std::chrono::milliseconds lease_;
  const int callback_timeout_ms_;
  const Clock::time_point started_;
  bool grace_ = true;
  std::mutex mu_;
  uint64_t next_id_;
  std::unordered_map<uint64_t, std::shared_ptr<Session>> sessions_;
  std::unordered_map<uint64_t, std::set<uint64_t>> holders_;  // ino -> clients holding a lease
  std::unordered_map<uint64_t, std::set<uint64_t>> refs_;     // ino -> clients holding a reference
};

}  // namespace rustfs::mds

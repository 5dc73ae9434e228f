// Client: the lease session with the MDS (LLD-002 §1.1, §3.3). Everything
// cached (attributes, entries, chunk maps, fragment-cache bytes, the
// kernel's copies) is trusted only while the session's lease lasts; a
// revocation or a lapsed lease drops it. Open references (DESIGN.md §7)
// ride on the same session.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include "client/client.h"
#include "common/clock.h"
#include "common/log.h"

namespace rustfs::client {

namespace {


// The local IP the MDS would see us from: the callback server binds there,
// so the MDS can call back across hosts (or network namespaces) too.
std::string LocalAddressToward(const std::string& mds_address) {
  auto hp = net::SplitHostPort(mds_address);
  if (!hp) return "127.0.0.1";
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(hp->second);
  std::string ip = "127.0.0.1";
  if (fd >= 0 && ::inet_pton(AF_INET, hp->first.c_str(), &dst.sin_addr) == 1 &&
      ::connect(fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) == 0) {
    sockaddr_in me{};
    socklen_t len = sizeof me;
    char buf[INET_ADDRSTRLEN];
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&me), &len) == 0 &&
        ::inet_ntop(AF_INET, &me.sin_addr, buf, sizeof buf))
      ip = buf;
  }
  if (fd >= 0) ::close(fd);
  return ip;
}

// Revocations run on these threads; a recall can take a while (it publishes
// buffered writes), and must not hold up the others.
constexpr int kCallbackThreads = 4;

}  // namespace

Status Client::RegisterSession() {
  if (!callback_) {
    callback_ = std::make_unique<net::RpcServer>("client.cb", kCallbackThreads);
    callback_->Handle(pb::M_REVOKE, [this](const std::string& body, std::string&,
                                           net::RpcReply& reply) -> Status {
      auto req = net::ParseBody<pb::RevokeReq>(body, "Revoke");
      if (!req) return req.error();
      pb::RevokeReply rep;
      rep.set_open(OnRevoke(req->ino(), req->name(), req->recall()));
      reply.body = rep.SerializeAsString();
      return Status::Ok();
    });
    RUSTFS_RETURN_IF_ERROR(callback_->Start(LocalAddressToward(cfg_.mds.address) + ":0"));
  }
  pb::RegisterClientReq r;
  r.set_callback_address(LocalAddressToward(cfg_.mds.address) + ":" +
                         std::to_string(callback_->port()));
  {
    // Files still open here stay alive at the MDS (after its restart, or
    // after it gave up on us while they were unlinked meanwhile: too late).
    std::lock_guard lk(open_mu_);
    for (auto& [ino, st] : open_)
      if (st->opens > 0) r.add_open_inos(ino);
  }
  int64_t sent = SteadyNowNs();
  auto rep = mds_.Call<pb::RegisterClientReply>(pb::M_REGISTER_CLIENT, r);
  if (!rep) return rep.error();
  lease_ms_ = rep->lease_ms();
  client_id_ = rep->client_id();
  // Our clock starts the lease when we asked, before the MDS's did, and a
  // 10% margin covers clock-rate differences.
  lease_valid_until_ns_ = sent + int64_t(lease_ms_) * 900000;
  std::lock_guard lk(lapse_mu_);
  lapse_handled_ = false;
  return Status::Ok();
}

void Client::RenewLoop() {
  int64_t next_renew = SteadyNowNs() + int64_t(lease_ms_) * 1000000 / 3;
  while (!stop_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    // A lapse is handled here too, not only when a read notices it, so the
    // kernel's copies go as soon as the lease does.
    CheckLease();
    if (stop_ || SteadyNowNs() < next_renew) continue;
    pb::RenewLeasesReq r;
    r.set_client_id(client_id_);
    int64_t sent = SteadyNowNs();
    Status s = mds_.CallOnce(pb::M_RENEW_LEASES, r);
    if (s.ok()) {
      lease_valid_until_ns_ = sent + int64_t(lease_ms_) * 900000;
      std::lock_guard lk(lapse_mu_);
      lapse_handled_ = false;
    } else if (s.code() == Code::kNotFound || s.code() == Code::kStale) {
      // The MDS restarted, or our lease ran out or was given up on: nothing
      // we cached is protected any more.
      LOG_WARN("lease session lost ({}); dropping caches", s.message());
      lease_valid_until_ns_ = 0;
      CheckLease();
      if (Status rs = RegisterSession(); !rs.ok()) LOG_WARN("re-register: {}", rs.message());
    }
    // Unavailable: keep trying; trust lapses by itself at the expiry.
    next_renew = SteadyNowNs() + int64_t(lease_ms_) * 1000000 / 3;
  }
}

bool Client::LeaseValid() const { return SteadyNowNs() < lease_valid_until_ns_.load(); }

void Client::CheckLease() {
  if (LeaseValid()) return;
  {
    std::lock_guard lk(lapse_mu_);
    if (lapse_handled_) return;
    lapse_handled_ = true;
  }
  static Counter& lapses = GetCounter("client.lease_lapses");
  lapses.Inc();
  DropAllCaches();
}

void Client::DropAllCaches() {
  revoke_seq_++;
  KernelWork work;
  {
    std::lock_guard lk(meta_mu_);
    for (auto& [ino, a] : attrs_) work.inos.push_back(ino);
    for (auto& [key, ino] : entries_) work.names.push_back(key);
    attrs_.clear();
    entries_.clear();
  }
  {
    std::lock_guard lk(open_mu_);
    for (auto& [ino, st] : open_) {
      st->map_stale = true;
      work.inos.push_back(ino);
    }
  }
  if (fcache_) fcache_->Clear();
  QueueKernel(std::move(work));  // the kernel's copies were cached under the same lease
}

void Client::QueueKernel(KernelWork work) {
  if (!invalidate_hook_ || (work.inos.empty() && work.names.empty())) return;
  {
    std::lock_guard lk(kernel_mu_);
    kernel_work_.inos.insert(kernel_work_.inos.end(), work.inos.begin(), work.inos.end());
    kernel_work_.names.insert(kernel_work_.names.end(), work.names.begin(), work.names.end());
  }
  kernel_cv_.notify_one();
}

void Client::NotifierLoop() {
  for (;;) {
    KernelWork work;
    {
      std::unique_lock lk(kernel_mu_);
      kernel_cv_.wait(lk, [&] { return stop_ || !kernel_work_.inos.empty() || !kernel_work_.names.empty(); });
      if (stop_) return;
      std::swap(work, kernel_work_);
    }
    for (uint64_t ino : work.inos) invalidate_hook_(ino, "");
    for (auto& [parent, name] : work.names) invalidate_hook_(parent, name);
  }
}

bool Client::OnRevoke(uint64_t ino, const std::string& name, bool recall) {
  static Counter& revoked = GetCounter("client.leases_revoked");
  static Counter& recalled = GetCounter("client.recalls");
  revoked.Inc();
  revoke_seq_++;
  KernelWork names;
  {
    std::lock_guard lk(meta_mu_);
    attrs_.erase(ino);
    if (!name.empty()) {
      entries_.erase({ino, name});
      names.names.emplace_back(ino, name);
    } else {
      // The lease on a directory covered all of its entries we cached: no
      // later change to them would reach us now.
      auto it = entries_.lower_bound({ino, std::string()});
      while (it != entries_.end() && it->first.first == ino) {
        names.names.push_back(it->first);
        it = entries_.erase(it);
      }
    }
  }
  bool open = false;
  if (name.empty()) {
    if (auto st = FindOpen(ino)) {
      if (recall) {
        // Another client's change is waiting on our buffered writes: they
        // land first (errors go to the writers' next fsync and close).
        std::unique_lock lk(st->mu);
        if (!st->dirty.empty()) {
          recalled.Inc();
          (void)FlushLocked(*st);
        }
      }
      {
        std::lock_guard lk(open_mu_);
        if (st->opens > 0) {
          st->map_stale = true;
          st->drop_at_close = true;
          open = true;
        } else if (auto it = open_.find(ino); it != open_.end() && it->second == st) {
          open_.erase(it);  // closed and now stale: not worth keeping
        }
      }
      // A hand-off storing plan bytes of the file in the kernel finishes
      // before the kernel's copy goes below (later ones see map_stale).
      std::lock_guard hl(st->handoff_mu);
    }
    if (fcache_) fcache_->Erase({ino});
  }
  // The kernel's copy of the inode (attributes, pages) goes before we
  // answer; invalidating a name takes the directory's lock in the kernel,
  // which one of our own requests in flight may hold while it waits for the
  // MDS, which waits for this answer: names go from the notifier thread.
  if (name.empty() && invalidate_hook_) invalidate_hook_(ino, "");
  QueueKernel(std::move(names));
  return open;
}

void Client::ReleaseRefs(const std::vector<uint64_t>& inos) {
  if (inos.empty()) return;
  pb::ReleaseReq r;
  r.set_client_id(client_id_);
  for (uint64_t ino : inos) r.add_inos(ino);
  if (Status s = mds_.CallOnce(pb::M_RELEASE, r); !s.ok())
    LOG_WARN("release of {} inodes: {}", inos.size(), s.ToString());  // the session's end frees them
}

}  // namespace rustfs::client

// MDS handlers for client sessions: registration (with the open inodes a
// client reclaims after an MDS restart), lease renewal and end, references
// to open inodes, and advisory locks.
#include "mds/handler_util.h"
#include "mds/mds_service.h"

namespace rustfs::mds {

namespace {

Lock LockOf(const pb::LockReq& r) {
  Lock l;
  l.who = {r.client_id(), r.owner()};
  l.pid = r.pid();
  l.type = LockType(r.type());
  l.start = r.start();
  l.end = r.end();
  l.flock = r.flock();
  return l;
}

pb::LockReply ReplyOf(const std::optional<Lock>& l) {
  pb::LockReply rep;
  rep.set_type(uint32_t(l ? l->type : LockType::kUnlock));
  if (l) {
    rep.set_start(l->start);
    rep.set_end(l->end);
    rep.set_pid(l->pid);
  }
  return rep;
}

Status CheckLockReq(const pb::LockReq& r) {
  if (r.type() > uint32_t(LockType::kUnlock)) return InvalidArgument("lock type " + std::to_string(r.type()));
  if (r.start() > r.end()) return InvalidArgument("lock range ends before it starts");
  return Status::Ok();
}

}  // namespace

void MdsService::RegisterSessionHandlers() {
  MdsStore* st = store_.get();
  LeaseTable* lt = &leases_;
  server_.Handle(pb::M_REGISTER_CLIENT,
                 Typed<pb::RegisterClientReq>([st, lt](const pb::RegisterClientReq& r)
                                                  -> Result<pb::RegisterClientReply> {
    // Revocations go back to the host that registered, whatever address
    // it names: only the port is the client's to choose (else a peer could
    // aim the MDS's callbacks at any host:port).
    auto hp = net::SplitHostPort(r.callback_address());
    if (!hp) return Err(hp.error());
    const std::string& peer = net::CurrentPeerIp();
    if (peer.empty()) return Err(Internal("no peer address for the registering connection"));
    const std::string callback =
        (peer.find(':') != std::string::npos ? "[" + peer + "]" : peer) + ":" + std::to_string(hp->second);
    pb::RegisterClientReply rep;
    const uint64_t id = lt->Register(callback);
    for (uint64_t ino : r.open_inos())
      if (st->GetAttr(ino)) lt->AddRef(id, ino);
    rep.set_client_id(id);
    rep.set_lease_ms(uint32_t(lt->lease().count()));
    return rep;
  }));
  server_.Handle(pb::M_END_SESSION, Typed<pb::RenewLeasesReq>([this, lt](const pb::RenewLeasesReq& r) {
    OnSessionsEnded(lt->End(r.client_id()));
    return WrapStatus(Status::Ok());
  }));
  server_.Handle(pb::M_RENEW_LEASES, Typed<pb::RenewLeasesReq>([lt](const pb::RenewLeasesReq& r) {
    return WrapStatus(lt->Renew(r.client_id()));
  }));
  server_.Handle(pb::M_RELEASE, Typed<pb::ReleaseReq>([this, lt](const pb::ReleaseReq& r) {
    for (uint64_t ino : r.inos())
      if (lt->DropRef(r.client_id(), ino)) CollectIfUnused(ino);
    return WrapStatus(Status::Ok());
  }));
  server_.Handle(pb::M_SETLK, Typed<pb::LockReq>([this, lt](const pb::LockReq& r) -> Result<pb::LockReply> {
    RUSTFS_RETURN_ERR(CheckLockReq(r));
    // A lock outlives nothing but its session: one that is gone could never
    // be released.
    if (r.type() != uint32_t(LockType::kUnlock)) RUSTFS_RETURN_ERR(lt->CheckSession(r.client_id()));
    RUSTFS_RETURN_ERR(locks_.Set(r.ino(), LockOf(r)));  // kWouldBlock: someone else holds it
    return ReplyOf(std::nullopt);
  }));
  server_.Handle(pb::M_GETLK, Typed<pb::LockReq>([this](const pb::LockReq& r) -> Result<pb::LockReply> {
    RUSTFS_RETURN_ERR(CheckLockReq(r));
    return ReplyOf(locks_.Test(r.ino(), LockOf(r)));
  }));
}

}  // namespace rustfs::mds

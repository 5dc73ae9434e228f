// MDS handlers for the namespace: names, attributes, links, extended
// attributes. Reads grant a lease before reading (so a racing change
// revokes it); changes revoke the other holders after committing and
// before replying, and changes that depend on a file's contents (truncate,
// layout, times) first recall buffered writes from every client holding
// the file.
#include <sys/stat.h>

#include "common/log.h"
#include "mds/handler_util.h"
#include "layout/layout_rules.h"
#include "mds/mds_service.h"

namespace rustfs::mds {

void MdsService::RegisterNamespaceHandlers() {
  MdsStore* st = store_.get();
  LeaseTable* lt = &leases_;
  server_.Handle(pb::M_LOOKUP, Typed<pb::LookupReq>([st, lt](const pb::LookupReq& r) {
    lt->Grant(r.client_id(), r.parent());
    auto a = st->Lookup(r.parent(), r.name());
    if (a) lt->Grant(r.client_id(), a->ino());
    // The child was found before its lease was granted: read its
    // attributes again under the grant, so a racing change revokes them.
    if (a) a = st->GetAttr(a->ino());
    return WrapAttr(std::move(a));
  }));
  server_.Handle(pb::M_GETATTR, Typed<pb::GetAttrReq>([st, lt](const pb::GetAttrReq& r) {
    lt->Grant(r.client_id(), r.ino());
    return WrapAttr(st->GetAttr(r.ino()));
  }));
  server_.Handle(pb::M_SETATTR, Typed<pb::SetAttrReq>([this, st, lt](const pb::SetAttrReq& r) -> Result<pb::AttrReply> {
    RUSTFS_RETURN_ERR(lt->CheckGrace());
    if (r.valid() & pb::SET_LAYOUT) RUSTFS_RETURN_ERR(layout::CheckLayout(r.layout(), cfg_.dss.size()));
    // Writes other clients buffered before this change land before it:
    // a truncate must cut them, new times must not be overwritten by
    // their later publication, a layout change must see the data.
    lt->Revoke(r.ino(), "", r.client_id(), /*recall=*/true);
    auto a = st->SetAttr(r);
    if (a) lt->Revoke(r.ino(), "", r.client_id());  // anyone who looked meanwhile
    return WrapAttr(std::move(a));
  }));
  auto create = [st, lt](bool mkdir) {
    return Typed<pb::CreateReq>([st, lt, mkdir](const pb::CreateReq& in) -> Result<pb::AttrReply> {
      RUSTFS_RETURN_ERR(lt->CheckGrace());
      pb::CreateReq r = in;
      if (mkdir) r.set_mode(S_IFDIR | (r.mode() & 07777));
      lt->Grant(r.client_id(), r.parent());
      auto a = st->Create(r);
      if (a) {
        lt->Grant(r.client_id(), a->ino());
        lt->Revoke(r.parent(), r.name(), r.client_id());
        lt->Revoke(r.parent(), "", r.client_id());  // its times and link count
      }
      return WrapAttr(std::move(a));
    });
  };
  server_.Handle(pb::M_CREATE, create(false));
  server_.Handle(pb::M_MKDIR, create(true));
  server_.Handle(pb::M_LINK, Typed<pb::LinkReq>([st, lt](const pb::LinkReq& r) -> Result<pb::AttrReply> {
    RUSTFS_RETURN_ERR(lt->CheckGrace());
    auto a = st->Link(r);
    if (a) {
      lt->Revoke(r.new_parent(), r.new_name(), r.client_id());
      lt->Revoke(r.new_parent(), "", r.client_id());
      lt->Revoke(r.ino(), "", r.client_id());  // its link count and ctime
    }
    return WrapAttr(std::move(a));
  }));
  server_.Handle(pb::M_READDIR, Typed<pb::ReadDirReq>([st](const pb::ReadDirReq& r) {
    return st->ReadDir(r.ino(), r.after(), r.max() ? r.max() : 1024);
  }));
  // The inode that lost a name: every client holding it hears of it (the
  // caller too, whose answer says whether it still has the file open); an
  // orphan that nobody has open goes now.
  auto lost_name = [this, lt](const Unlinked& u) {
    if (u.ino == 0) return;
    bool unused = lt->Revoke(u.ino, "", /*except=*/0);
    if (u.orphan && unused) CollectIfUnused(u.ino);
  };
  server_.Handle(pb::M_UNLINK, Typed<pb::NameReq>([st, lt, lost_name](const pb::NameReq& r) -> Result<pb::Empty> {
    RUSTFS_RETURN_ERR(lt->CheckGrace());
    auto u = st->Unlink(r.parent(), r.name());
    if (!u) return Err(u.error());
    lt->Revoke(r.parent(), r.name(), r.client_id());
    lt->Revoke(r.parent(), "", r.client_id());
    lost_name(*u);
    return pb::Empty{};
  }));
  server_.Handle(pb::M_RMDIR, Typed<pb::NameReq>([st, lt](const pb::NameReq& r) -> Result<pb::Empty> {
    RUSTFS_RETURN_ERR(lt->CheckGrace());
    auto ino = st->Rmdir(r.parent(), r.name());
    if (!ino) return Err(ino.error());
    lt->Revoke(r.parent(), r.name(), r.client_id());
    lt->Revoke(r.parent(), "", r.client_id());
    lt->Revoke(*ino, "", r.client_id());
    return pb::Empty{};
  }));
  server_.Handle(pb::M_RENAME, Typed<pb::RenameReq>([st, lt, lost_name](const pb::RenameReq& r) -> Result<pb::Empty> {
    RUSTFS_RETURN_ERR(lt->CheckGrace());
    auto moved = st->Lookup(r.parent(), r.name());
    auto replaced = st->Rename(r);
    if (!replaced) return Err(replaced.error());
    lt->Revoke(r.parent(), r.name(), r.client_id());
    lt->Revoke(r.new_parent(), r.new_name(), r.client_id());
    lt->Revoke(r.parent(), "", r.client_id());
    if (r.new_parent() != r.parent()) lt->Revoke(r.new_parent(), "", r.client_id());
    if (moved) lt->Revoke(moved->ino(), "", r.client_id());  // ctime, and ".." of a directory
    lost_name(*replaced);
    return pb::Empty{};
  }));
  server_.Handle(pb::M_SETXATTR, Typed<pb::XattrReq>([st, lt](const pb::XattrReq& r) -> Result<pb::AttrReply> {
    RUSTFS_RETURN_ERR(lt->CheckGrace());
    auto a = st->SetXattr(r);
    if (a) lt->Revoke(r.ino(), "", r.client_id());
    return WrapAttr(std::move(a));
  }));
  server_.Handle(pb::M_REMOVEXATTR, Typed<pb::XattrReq>([st, lt](const pb::XattrReq& r) -> Result<pb::AttrReply> {
    RUSTFS_RETURN_ERR(lt->CheckGrace());
    auto a = st->RemoveXattr(r.ino(), r.name());
    if (a) lt->Revoke(r.ino(), "", r.client_id());
    return WrapAttr(std::move(a));
  }));
  server_.Handle(pb::M_GETXATTR, Typed<pb::XattrReq>([st](const pb::XattrReq& r) -> Result<pb::XattrReply> {
    auto v = st->GetXattr(r.ino(), r.name());
    if (!v) return Err(v.error());
    pb::XattrReply rep;
    rep.set_value(std::move(*v));
    return rep;
  }));
  server_.Handle(pb::M_LISTXATTR, Typed<pb::XattrReq>([st](const pb::XattrReq& r) -> Result<pb::XattrReply> {
    auto names = st->ListXattr(r.ino());
    if (!names) return Err(names.error());
    pb::XattrReply rep;
    for (auto& n : *names) rep.add_names(std::move(n));
    return rep;
  }));
  server_.Handle(pb::M_STATFS, Typed<pb::Empty>([this, st](const pb::Empty&) -> Result<pb::StatFsReply> {
    pb::StatFsReply r;
    uint64_t free = 0;
    {
      std::lock_guard lk(dss_mu_);
      for (auto& d : dss_) free += d.free_bytes;
    }
    // Usable space: parity (or extra replicas) take the rest of every chunk.
    const pb::Layout layout = LayoutFromConfig(cfg_);
    r.set_free_bytes(free / layout::LayoutWidth(layout) * layout::DataShards(layout));
    r.set_total_bytes(r.free_bytes());
    r.set_files(st->FileCount());
    return r;
  }));
}

}  // namespace rustfs::mds

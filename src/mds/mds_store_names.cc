// MdsStore: names and their inodes (create, link, unlink, rmdir, rename)
// and orphans (inodes whose last name went while they were open).
#include <rocksdb/write_batch.h>
#include <sys/stat.h>

#include "mds/mds_store.h"
#include "mds/store_keys.h"

namespace rustfs::mds {

using namespace keys;

namespace {

bool IsDir(const pb::Attr& a) { return S_ISDIR(a.mode()); }

Status CheckName(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos)
    return InvalidArgument("bad file name '" + name + "'");
  if (name.size() > kMaxName) return {Code::kNameTooLong, "file name longer than 255 bytes"};
  return Status::Ok();
}

// The inode type a create makes, from the type bits of its mode.
Result<uint32_t> TypeOf(const pb::CreateReq& req) {
  uint32_t type = req.mode() & S_IFMT;
  switch (type) {
    case 0: return uint32_t(S_IFREG);
    case S_IFREG: case S_IFDIR: case S_IFIFO: case S_IFSOCK: case S_IFCHR: case S_IFBLK:
      return type;
    case S_IFLNK:
      if (req.symlink().empty()) return Err({Code::kNotFound, "empty symbolic link target"});
      if (req.symlink().size() > kMaxSymlink)
        return Err({Code::kNameTooLong, "symbolic link target longer than 4095 bytes"});
      return type;
    default:
      return Err(InvalidArgument("unknown file type in mode " + std::to_string(req.mode())));
  }
}

}  // namespace

Result<pb::Attr> MdsStore::Create(const pb::CreateReq& req) {
  RUSTFS_RETURN_ERR(CheckName(req.name()));
  auto type = TypeOf(req);
  if (!type) return Err(type.error());
  std::lock_guard lk(mu_);
  auto parent = LoadDir(req.parent());
  if (!parent) return parent;
  if (auto d = LoadDirent(req.parent(), req.name()); d) {
    if (req.exclusive() || *type != S_IFREG)
      return Err({Code::kAlreadyExists, "'" + req.name() + "' exists"});
    return LoadInode(d->ino());
  }
  auto ino = NextCounter(kNextIno);
  if (!ino) return Err(ino.error());
  rocksdb::WriteBatch wb;
  const int64_t now = NowNs();
  const bool is_dir = *type == S_IFDIR;
  uint32_t perm = *type == S_IFLNK ? 0777 : req.mode() & 07777;
  uint32_t gid = req.gid();
  // BSD group semantics in a setgid directory (as Linux's inode_init_owner):
  // the new inode takes the directory's group, and a directory the bit too.
  if (parent->mode() & S_ISGID) {
    gid = parent->gid();
    if (is_dir) perm |= S_ISGID;
  }
  pb::Attr a;
  a.set_ino(*ino);
  a.set_mode(*type | perm);
  a.set_uid(req.uid());
  a.set_gid(gid);
  a.set_nlink(is_dir ? 2 : 1);
  a.set_atime_ns(now);
  a.set_mtime_ns(now);
  a.set_ctime_ns(now);
  if (*type == S_IFREG || is_dir) *a.mutable_layout() = parent->layout();
  if (*type == S_IFLNK) {
    a.set_symlink(req.symlink());
    a.set_size(req.symlink().size());
  }
  if (*type == S_IFCHR || *type == S_IFBLK) a.set_rdev(req.rdev());
  if (is_dir) a.set_parent(req.parent());
  pb::Dirent d;
  d.set_ino(*ino);
  d.set_mode(a.mode());
  wb.Put(Inode(*ino), a.SerializeAsString());
  wb.Put(Dirent(req.parent(), req.name()), d.SerializeAsString());
  TouchDir(*parent, now, is_dir ? 1 : 0, wb);
  RUSTFS_RETURN_ERR(Commit(wb));
  return a;
}

Result<pb::Attr> MdsStore::Link(const pb::LinkReq& req) {
  RUSTFS_RETURN_ERR(CheckName(req.new_name()));
  std::lock_guard lk(mu_);
  auto a = LoadInode(req.ino());
  if (!a) return a;
  if (IsDir(*a)) return Err({Code::kNotPermitted, "hard link to a directory"});
  // An inode whose last name is gone cannot get a new one (only O_TMPFILE
  // files can, which this file system does not make).
  if (a->nlink() == 0) return Err(NotFound("inode " + std::to_string(req.ino()) + " was unlinked"));
  if (a->nlink() >= kMaxLinks) return Err({Code::kTooManyLinks, "too many links"});
  auto parent = LoadDir(req.new_parent());
  if (!parent) return parent;
  if (LoadDirent(req.new_parent(), req.new_name()))
    return Err({Code::kAlreadyExists, "'" + req.new_name() + "' exists"});
  const int64_t now = NowNs();
  rocksdb::WriteBatch wb;
  a->set_nlink(a->nlink() + 1);
  a->set_ctime_ns(now);
  wb.Put(Inode(req.ino()), a->SerializeAsString());
  pb::Dirent d;
  d.set_ino(req.ino());
  d.set_mode(a->mode());
  wb.Put(Dirent(req.new_parent(), req.new_name()), d.SerializeAsString());
  TouchDir(*parent, now, 0, wb);
  RUSTFS_RETURN_ERR(Commit(wb));
  return a;
}

Unlinked MdsStore::DropName(pb::Attr& victim, int64_t now, rocksdb::WriteBatch& wb) {
  Unlinked u{victim.ino(), false};
  victim.set_nlink(victim.nlink() > 0 ? victim.nlink() - 1 : 0);
  victim.set_ctime_ns(now);
  wb.Put(Inode(victim.ino()), victim.SerializeAsString());
  if (victim.nlink() == 0) {
    wb.Put(Orphan(victim.ino()), "");
    u.orphan = true;
  }
  return u;
}

Status MdsStore::DeleteInode(uint64_t ino, rocksdb::WriteBatch& wb) {
  RUSTFS_RETURN_IF_ERROR(DropChunks(ino, 0, UINT64_MAX, wb));
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator({}));
  const std::string xp = XattrPrefix(ino);
  for (it->Seek(xp); it->Valid() && it->key().starts_with(xp); it->Next()) wb.Delete(it->key());
  wb.Delete(Inode(ino));
  wb.Delete(Orphan(ino));
  return Status::Ok();
}

Result<MdsStore::Named> MdsStore::LoadNamed(uint64_t parent, const std::string& name) {
  Named n;
  auto p = LoadDir(parent);
  if (!p) return Err(p.error());
  n.dir = std::move(*p);
  auto d = LoadDirent(parent, name);
  if (!d) return Err(d.error());
  auto a = LoadInode(d->ino());
  if (!a) return Err(a.error());
  n.inode = std::move(*a);
  return n;
}

Result<Unlinked> MdsStore::Unlink(uint64_t parent, const std::string& name) {
  std::lock_guard lk(mu_);
  auto n = LoadNamed(parent, name);
  if (!n) return Err(n.error());
  if (IsDir(n->inode)) return Err({Code::kIsDirectory, "'" + name + "' is a directory"});
  const int64_t now = NowNs();
  rocksdb::WriteBatch wb;
  wb.Delete(Dirent(parent, name));
  Unlinked u = DropName(n->inode, now, wb);
  TouchDir(n->dir, now, 0, wb);
  RUSTFS_RETURN_ERR(Commit(wb));
  return u;
}

Result<uint64_t> MdsStore::Rmdir(uint64_t parent, const std::string& name) {
  std::lock_guard lk(mu_);
  auto n = LoadNamed(parent, name);
  if (!n) return Err(n.error());
  const uint64_t ino = n->inode.ino();
  if (!IsDir(n->inode)) return Err({Code::kNotDirectory, "'" + name + "' is not a directory"});
  if (!DirIsEmpty(ino)) return Err({Code::kNotEmpty, "'" + name + "' is not empty"});
  rocksdb::WriteBatch wb;
  RUSTFS_RETURN_ERR(DeleteInode(ino, wb));
  wb.Delete(Dirent(parent, name));
  TouchDir(n->dir, NowNs(), -1, wb);
  RUSTFS_RETURN_ERR(Commit(wb));
  return ino;
}

Result<Unlinked> MdsStore::Rename(const pb::RenameReq& req) {
  RUSTFS_RETURN_ERR(CheckName(req.new_name()));
  constexpr uint32_t kNoReplace = 1;  // RENAME_NOREPLACE
  if (req.flags() & ~kNoReplace) return Err(InvalidArgument("rename flags not supported"));
  std::lock_guard lk(mu_);
  auto op = LoadDir(req.parent());
  if (!op) return Err(op.error());
  auto src = LoadDirent(req.parent(), req.name());
  if (!src) return Err(src.error());
  auto src_attr = LoadInode(src->ino());
  if (!src_attr) return Err(src_attr.error());
  auto np = LoadDir(req.new_parent());
  if (!np) return Err(np.error());
  const bool src_dir = IsDir(*src_attr);
  if (src_dir) {
    // Moving a directory under itself would detach a cycle from the tree.
    for (uint64_t cur = req.new_parent();;) {
      if (cur == src->ino()) return Err(InvalidArgument("cannot move a directory into itself"));
      if (cur == kRootIno) break;
      auto c = LoadInode(cur);
      if (!c) return Err(c.error());
      cur = c->parent();
    }
  }
  const int64_t now = NowNs();
  rocksdb::WriteBatch wb;
  Unlinked replaced;
  int new_parent_links = 0;  // nlink change of the new parent from ".." entries
  auto dst = LoadDirent(req.new_parent(), req.new_name());
  if (dst) {
    // Two names of one inode: POSIX says rename does nothing.
    if (dst->ino() == src->ino()) return replaced;
    if (req.flags() & kNoReplace) return Err({Code::kAlreadyExists, "'" + req.new_name() + "' exists"});
    auto dst_attr = LoadInode(dst->ino());
    if (!dst_attr) return Err(dst_attr.error());
    if (IsDir(*dst_attr)) {
      if (!src_dir) return Err({Code::kIsDirectory, "'" + req.new_name() + "' is a directory"});
      if (!DirIsEmpty(dst->ino())) return Err({Code::kNotEmpty, "'" + req.new_name() + "' not empty"});
      RUSTFS_RETURN_ERR(DeleteInode(dst->ino(), wb));
      new_parent_links--;
      replaced.ino = dst->ino();
    } else {
      if (src_dir) return Err({Code::kNotDirectory, "'" + req.new_name() + "' is not a directory"});
      replaced = DropName(*dst_attr, now, wb);
    }
  }
  wb.Delete(Dirent(req.parent(), req.name()));
  wb.Put(Dirent(req.new_parent(), req.new_name()), src->SerializeAsString());
  src_attr->set_ctime_ns(now);
  if (src_dir && req.parent() != req.new_parent()) {
    src_attr->set_parent(req.new_parent());
    new_parent_links++;
  }
  wb.Put(Inode(src->ino()), src_attr->SerializeAsString());
  if (req.parent() != req.new_parent()) {
    TouchDir(*op, now, src_dir ? -1 : 0, wb);
    TouchDir(*np, now, new_parent_links, wb);
  } else {
    TouchDir(*np, now, new_parent_links, wb);
  }
  RUSTFS_RETURN_ERR(Commit(wb));
  return replaced;
}

std::vector<uint64_t> MdsStore::Orphans() {
  std::lock_guard lk(mu_);
  std::vector<uint64_t> out;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator({}));
  for (it->Seek("O"); it->Valid() && it->key().starts_with("O"); it->Next())
    if (it->key().size() == 9) out.push_back(GetBe64(it->key().data() + 1));
  return out;
}

bool MdsStore::IsOrphan(uint64_t ino) {
  std::lock_guard lk(mu_);
  std::string v;
  return db_->Get({}, Orphan(ino), &v).ok();
}

Status MdsStore::CollectOrphan(uint64_t ino) {
  std::lock_guard lk(mu_);
  std::string v;
  if (!db_->Get({}, Orphan(ino), &v).ok()) return Status::Ok();
  rocksdb::WriteBatch wb;
  RUSTFS_RETURN_IF_ERROR(DeleteInode(ino, wb));
  return Commit(wb);
}

}  // namespace rustfs::mds

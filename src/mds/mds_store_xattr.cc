// MdsStore: extended attributes, one RocksDB key per (inode, name). The
// inode's xattr count travels in its attributes so clients can answer "no
// such attribute" for the (frequent) kernel query of security.capability on
// every write without asking the MDS.
#include <rocksdb/write_batch.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "mds/mds_store.h"
#include "mds/store_keys.h"

namespace rustfs::mds {

using namespace keys;

namespace {

// Namespaces stored as plain name/value pairs. system.* (POSIX ACLs) is not
// supported: the kernel then falls back to the mode bits.
Status CheckXattrName(const std::string& name, const pb::Attr& a) {
  if (name.empty() || name.size() > kMaxXattrName)
    return {Code::kRange, "extended attribute name of " + std::to_string(name.size()) + " bytes"};
  const bool user = name.starts_with("user.");
  if (!user && !name.starts_with("trusted.") && !name.starts_with("security."))
    return {Code::kNotSupported, "extended attribute namespace of '" + name + "'"};
  // As on Linux: user.* only on regular files and directories.
  if (user && !S_ISREG(a.mode()) && !S_ISDIR(a.mode()))
    return {Code::kNotPermitted, "user.* attributes only on files and directories"};
  return Status::Ok();
}

}  // namespace

Result<pb::Attr> MdsStore::SetXattr(const pb::XattrReq& req) {
  if (req.value().size() > kMaxXattrValue)
    return Err({Code::kTooBig, "extended attribute value of " + std::to_string(req.value().size()) +
                                   " bytes (at most 65536)"});
  std::lock_guard lk(mu_);
  auto a = LoadInode(req.ino());
  if (!a) return a;
  RUSTFS_RETURN_ERR(CheckXattrName(req.name(), *a));
  std::string old;
  const bool exists = db_->Get({}, Xattr(req.ino(), req.name()), &old).ok();
  if (exists && (req.flags() & XATTR_CREATE))
    return Err({Code::kAlreadyExists, "extended attribute '" + req.name() + "' exists"});
  if (!exists && (req.flags() & XATTR_REPLACE))
    return Err({Code::kNoData, "no extended attribute '" + req.name() + "'"});
  rocksdb::WriteBatch wb;
  wb.Put(Xattr(req.ino(), req.name()), req.value());
  if (!exists) a->set_xattrs(a->xattrs() + 1);
  a->set_ctime_ns(NowNs());
  wb.Put(Inode(req.ino()), a->SerializeAsString());
  RUSTFS_RETURN_ERR(Commit(wb));
  return a;
}

Result<std::string> MdsStore::GetXattr(uint64_t ino, const std::string& name) {
  std::lock_guard lk(mu_);
  auto a = LoadInode(ino);
  if (!a) return Err(a.error());
  std::string v;
  rocksdb::Status s = db_->Get({}, Xattr(ino, name), &v);
  if (s.IsNotFound()) return Err({Code::kNoData, "no extended attribute '" + name + "'"});
  if (!s.ok()) return Err(IoError(s.ToString()));
  return v;
}

Result<std::vector<std::string>> MdsStore::ListXattr(uint64_t ino) {
  std::lock_guard lk(mu_);
  auto a = LoadInode(ino);
  if (!a) return Err(a.error());
  std::vector<std::string> out;
  const std::string prefix = XattrPrefix(ino);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator({}));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next())
    out.push_back(it->key().ToString().substr(prefix.size()));
  return out;
}

Result<pb::Attr> MdsStore::RemoveXattr(uint64_t ino, const std::string& name) {
  std::lock_guard lk(mu_);
  auto a = LoadInode(ino);
  if (!a) return a;
  std::string v;
  if (!db_->Get({}, Xattr(ino, name), &v).ok())
    return Err({Code::kNoData, "no extended attribute '" + name + "'"});
  rocksdb::WriteBatch wb;
  wb.Delete(Xattr(ino, name));
  a->set_xattrs(a->xattrs() > 0 ? a->xattrs() - 1 : 0);
  a->set_ctime_ns(NowNs());
  wb.Put(Inode(ino), a->SerializeAsString());
  RUSTFS_RETURN_ERR(Commit(wb));
  return a;
}

}  // namespace rustfs::mds

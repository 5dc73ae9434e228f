// librustfs: the C API of include/rustfs/rustfs.h over client::Client.
//
// Nothing C++ crosses this boundary: every entry point catches exceptions
// (a C caller could not unwind through them), turns Status into -errno with
// Status::ToErrno (the mapping the FUSE daemon replies with, so both ways in
// report the same errno), and keeps the words in a thread-local for
// rustfs_last_error().
#include "rustfs/rustfs.h"
#include "rustfs/ioctl.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "client/client.h"
#include "common/config.h"
#include "common/log.h"
#include "common/metrics.h"

using rustfs::Code;
using rustfs::Result;
using rustfs::Status;
using rustfs::client::Client;
using rustfs::client::OpenFile;

struct rustfs_client {
  std::unique_ptr<Client> client;
};

struct rustfs_file {
  rustfs_client* owner;
  std::shared_ptr<OpenFile> file;
  bool readable;
  bool writable;
};

namespace {

constexpr uint64_t kRootIno = 1;

thread_local std::string last_error;

int Fail(const Status& s) {
  last_error = s.ToString();
  return -s.ToErrno();
}

int Fail(int err, std::string what) {
  last_error = std::move(what) + ": " + std::strerror(err);
  return -err;
}

// Runs fn, turning any exception into -errno: nothing may unwind into C.
template <class Fn>
auto Guard(Fn&& fn) noexcept -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return Fail(ENOMEM, "out of memory");
  } catch (const std::exception& e) {
    return Fail(EIO, std::string("internal error: ") + e.what());
  } catch (...) {
    return Fail(EIO, "internal error");
  }
}

// The components of a path under the rustfs root, "." and ".." resolved
// lexically (rustfs has no symbolic links, so that is exact).
std::vector<std::string> Components(std::string_view path) {
  std::vector<std::string> out;
  while (!path.empty()) {
    size_t slash = path.find('/');
    std::string_view c = path.substr(0, slash);
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
    if (c.empty() || c == ".") continue;
    if (c == "..") {
      if (!out.empty()) out.pop_back();  // ".." of the root is the root
      continue;
    }
    out.emplace_back(c);
  }
  return out;
}

// The directory holding the last component of `comps`, walked one Lookup
// per component from the root (served from the client's lease-covered
// cache after the first time).
Result<uint64_t> ParentOf(Client& c, const std::vector<std::string>& comps) {
  uint64_t ino = kRootIno;
  for (size_t i = 0; i + 1 < comps.size(); i++) {
    auto a = c.Lookup(ino, comps[i]);
    if (!a) return rustfs::Err(a.error());
    if (!S_ISDIR(a->mode())) return rustfs::Err({Code::kNotDirectory, "'" + comps[i] + "' is not a directory"});
    ino = a->ino();
  }
  return ino;
}

bool BadArg(const void* p, const char* what, int* rc) {
  if (p) return false;
  *rc = Fail(EINVAL, std::string(what) + " is NULL");
  return true;
}

// rustfs_read_batch{,_files}: reqs[i] reads files[i], all in one
// Client::ReadFiles. Runs inside Guard.
int ReadBatchFiles(rustfs_file* const* files, struct rustfs_read_req* reqs, size_t n) {
  int rc;
  if (n && BadArg(reqs, "reqs", &rc)) return rc;
  for (size_t i = 0; i < n; i++) {
    const std::string at = "[" + std::to_string(i) + "]";
    if (BadArg(files[i], ("files" + at).c_str(), &rc)) return rc;
    if (!files[i]->readable) return Fail(EBADF, "files" + at + ": read on a write-only file");
    if (files[i]->owner != files[0]->owner) return Fail(EINVAL, "files" + at + " belongs to another client");
    if (reqs[i].length && !reqs[i].buf) return Fail(EINVAL, "reqs" + at + ".buf is NULL");
  }
  std::vector<Client::ReadReq> batch(n);
  for (size_t i = 0; i < n; i++) {
    Client::ReadReq& r = batch[i];
    r.offset = reqs[i].offset;
    r.length = std::min<size_t>(reqs[i].length, SSIZE_MAX);
    r.buf = static_cast<char*>(reqs[i].buf);
    r.via = files[i]->file.get();
  }
  Status first = n ? files[0]->owner->client->ReadFiles(batch) : Status::Ok();
  for (size_t i = 0; i < n; i++) {
    const Client::ReadReq& r = batch[i];
    reqs[i].result = r.status.ok() ? ssize_t(r.bytes) : -r.status.ToErrno();
  }
  return first.ok() ? 0 : Fail(first);
}

}  // namespace

extern "C" {

int rustfs_connect(const char* config_path, rustfs_client** out) {
  return Guard([&]() -> int {
    int rc;
    if (BadArg(out, "out", &rc)) return rc;
    *out = nullptr;
    // Warnings go to stderr like the daemons'; never to stdout, which the
    // host program (fio --output-format=json) may be using.
    static std::once_flag logging;
    std::call_once(logging, [] { rustfs::InitLogging("librustfs"); });
    auto cfg = rustfs::LoadConfig(config_path ? config_path : "");
    if (!cfg) return Fail(cfg.error());
    auto c = Client::Create(*cfg);
    if (!c) return Fail(c.error());
    *out = new rustfs_client{std::move(*c)};
    return 0;
  });
}

void rustfs_disconnect(rustfs_client* client) {
  Guard([&] {
    delete client;
    return 0;
  });
}

int rustfs_open(rustfs_client* client, const char* path, int flags, unsigned mode,
                rustfs_file** out) {
  return Guard([&]() -> int {
    int rc;
    if (BadArg(client, "client", &rc) || BadArg(path, "path", &rc) || BadArg(out, "out", &rc))
      return rc;
    *out = nullptr;
    const int acc = flags & O_ACCMODE;
    if (acc != O_RDONLY && acc != O_WRONLY && acc != O_RDWR) return Fail(EINVAL, "open flags");
    const bool writable = acc != O_RDONLY;
    if ((flags & O_TRUNC) && !writable) return Fail(EINVAL, "O_TRUNC on a read-only open");
    Client& c = *client->client;
    auto comps = Components(path);
    if (comps.empty()) return Fail(EISDIR, std::string("open '") + path + "'");
    auto parent = ParentOf(c, comps);
    if (!parent) return Fail(parent.error());
    Result<rustfs::pb::Attr> a =
        (flags & O_CREAT)
            ? c.Create(*parent, comps.back(), mode & 07777, geteuid(), getegid(), flags & O_EXCL)
            : c.Lookup(*parent, comps.back());
    if (!a) return Fail(a.error());
    if (S_ISDIR(a->mode())) return Fail(EISDIR, std::string("open '") + path + "'");
    auto f = c.Open(a->ino());
    if (!f) return Fail(f.error());
    if ((flags & O_TRUNC) && a->size() != 0) {
      rustfs::pb::SetAttrReq r;
      r.set_ino(a->ino());
      r.set_valid(rustfs::pb::SET_SIZE);
      r.set_size(0);
      if (auto t = c.SetAttr(r); !t) {
        (void)c.Release(*f);
        return Fail(t.error());
      }
    }
    *out = new rustfs_file{client, std::move(*f), acc != O_WRONLY, writable};
    return 0;
  });
}

int rustfs_close(rustfs_file* file) {
  return Guard([&]() -> int {
    if (!file) return 0;
    std::unique_ptr<rustfs_file> owned(file);  // freed whatever Release says
    Status s = owned->owner->client->Release(std::move(owned->file));
    return s.ok() ? 0 : Fail(s);
  });
}

ssize_t rustfs_pread(rustfs_file* file, void* buf, size_t len, uint64_t offset) {
  return Guard([&]() -> ssize_t {
    int rc;
    if (BadArg(file, "file", &rc) || (len && BadArg(buf, "buf", &rc))) return rc;
    if (!file->readable) return Fail(EBADF, "read on a write-only file");
    len = std::min<size_t>(len, SSIZE_MAX);  // the result must fit
    auto n = file->owner->client->Read(*file->file, offset, len, static_cast<char*>(buf));
    if (!n) return Fail(n.error());
    return ssize_t(*n);
  });
}

ssize_t rustfs_pwrite(rustfs_file* file, const void* buf, size_t len, uint64_t offset) {
  return Guard([&]() -> ssize_t {
    int rc;
    if (BadArg(file, "file", &rc) || (len && BadArg(buf, "buf", &rc))) return rc;
    if (!file->writable) return Fail(EBADF, "write on a read-only file");
    len = std::min<size_t>(len, SSIZE_MAX);
    Status s = file->owner->client->Write(*file->file, offset, static_cast<const char*>(buf), len);
    if (!s.ok()) return Fail(s);
    return ssize_t(len);
  });
}

int rustfs_fsync(rustfs_file* file) {
  return Guard([&]() -> int {
    int rc;
    if (BadArg(file, "file", &rc)) return rc;
    Status s = file->owner->client->Fsync(*file->file);
    return s.ok() ? 0 : Fail(s);
  });
}

int64_t rustfs_size(rustfs_file* file) {
  return Guard([&]() -> int64_t {
    int rc;
    if (BadArg(file, "file", &rc)) return rc;
    auto a = file->owner->client->GetAttr(file->file->state->ino);
    if (!a) return Fail(a.error());
    return int64_t(a->size());
  });
}

int rustfs_fadvise(rustfs_file* file, uint64_t offset, uint64_t len, int advice) {
  return Guard([&]() -> int {
    int rc;
    if (BadArg(file, "file", &rc)) return rc;
    Status s = file->owner->client->Advise(*file->file, offset, len, advice);
    return s.ok() ? 0 : Fail(s);
  });
}

int rustfs_submit_access_plan(rustfs_file* file, const struct rustfs_plan_entry* entries, size_t n,
                              uint32_t depth) {
  return Guard([&]() -> int {
    int rc;
    if (BadArg(file, "file", &rc) || (n && BadArg(entries, "entries", &rc))) return rc;
    std::vector<rustfs::client::PlanEntry> plan(n);
    for (size_t i = 0; i < n; i++) plan[i] = {entries[i].offset, entries[i].length};
    Status s = file->owner->client->SubmitPlan(file->file->state->ino, std::move(plan), depth);
    return s.ok() ? 0 : Fail(s);
  });
}

int rustfs_read_batch(rustfs_file* file, struct rustfs_read_req* reqs, size_t n) {
  return Guard([&]() -> int {
    int rc;
    if (BadArg(file, "file", &rc)) return rc;
    if (!file->readable) return Fail(EBADF, "read on a write-only file");
    std::vector<rustfs_file*> files(n, file);
    return ReadBatchFiles(files.data(), reqs, n);
  });
}

int rustfs_read_batch_files(rustfs_file* const* files, struct rustfs_read_req* reqs, size_t n) {
  return Guard([&]() -> int {
    int rc;
    if (n && BadArg(files, "files", &rc)) return rc;
    return ReadBatchFiles(files, reqs, n);
  });
}

int rustfs_mkdir(rustfs_client* client, const char* path, unsigned mode) {
  return Guard([&]() -> int {
    int rc;
    if (BadArg(client, "client", &rc) || BadArg(path, "path", &rc)) return rc;
    auto comps = Components(path);
    if (comps.empty()) return Fail(EEXIST, "mkdir of the root");
    auto parent = ParentOf(*client->client, comps);
    if (!parent) return Fail(parent.error());
    auto a = client->client->Mkdir(*parent, comps.back(), mode & 07777, geteuid(), getegid());
    return a ? 0 : Fail(a.error());
  });
}

int rustfs_unlink(rustfs_client* client, const char* path) {
  return Guard([&]() -> int {
    int rc;
    if (BadArg(client, "client", &rc) || BadArg(path, "path", &rc)) return rc;
    auto comps = Components(path);
    if (comps.empty()) return Fail(EISDIR, "unlink of the root");
    auto parent = ParentOf(*client->client, comps);
    if (!parent) return Fail(parent.error());
    Status s = client->client->Unlink(*parent, comps.back());
    return s.ok() ? 0 : Fail(s);
  });
}

int rustfs_stats_json(rustfs_client* client, char* buf, size_t len) {
  return Guard([&]() -> int {
    int rc;
    if (BadArg(client, "client", &rc) || (len && BadArg(buf, "buf", &rc))) return rc;
    std::string json = rustfs::CountersToJson(client->client->Stats());
    if (len) {
      size_t n = std::min(json.size(), len - 1);
      std::memcpy(buf, json.data(), n);
      buf[n] = '\0';
    }
    return int(std::min<size_t>(json.size(), INT_MAX));
  });
}

const char* rustfs_last_error(void) { return last_error.c_str(); }

}  // extern "C"

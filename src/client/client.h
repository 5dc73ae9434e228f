// The rustfs client library: namespace calls to the MDS, and the data path
// (reads resolved in client memory from the chunk map fetched at open, EC
// partial reads, buffered writes published as new chunk versions).
//
// Thread-safe. The FUSE daemon and the C API sit on top of this class.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "client/dss_pool.h"
#include "client/ec_reader.h"
#include "client/ec_writer.h"
#include "client/file_state.h"
#include "client/mds_client.h"
#include "common/config.h"

namespace rustfs::client {

// An open file. Owned by the caller (shared_ptr), passed back to Read/Write.
struct OpenFile {
  std::shared_ptr<FileState> state;
};

class Client {
 public:
  // Connects to the MDS in cfg and learns the DSS addresses from it.
  static Result<std::unique_ptr<Client>> Create(const Config& cfg);

  // --- namespace (each is one MDS RPC) ---
  Result<pb::Attr> Lookup(uint64_t parent, const std::string& name);
  // Attributes, with the size of writes buffered here included.
  Result<pb::Attr> GetAttr(uint64_t ino);
  // Truncation flushes buffered writes and zeroes the cut-off tail first.
  Result<pb::Attr> SetAttr(const pb::SetAttrReq& req);
  Result<pb::Attr> Create(uint64_t parent, const std::string& name, uint32_t mode, uint32_t uid,
                          uint32_t gid, bool exclusive);
  Result<pb::Attr> Mkdir(uint64_t parent, const std::string& name, uint32_t mode, uint32_t uid,
                         uint32_t gid);
  Result<pb::ReadDirReply> ReadDir(uint64_t ino, const std::string& after, uint32_t max);
  Status Unlink(uint64_t parent, const std::string& name);
  Status Rmdir(uint64_t parent, const std::string& name);
  Status Rename(uint64_t parent, const std::string& name, uint64_t new_parent,
                const std::string& new_name, uint32_t flags);
  Result<pb::StatFsReply> StatFs();

  // --- data ---
  // Fetches the whole chunk map in one MDS RPC (LLD-002 §1.1); later reads
  // resolve shard locations from it with no MDS traffic.
  Result<std::shared_ptr<OpenFile>> Open(uint64_t ino);
  // Reads up to `len` bytes at `offset` into `buf`; short at end of file.
  Result<size_t> Read(OpenFile& f, uint64_t offset, size_t len, char* buf);
  Status Write(OpenFile& f, uint64_t offset, const char* data, size_t len);
  // Publishes every buffered write of the file (close, fsync).
  Status Flush(OpenFile& f);
  // Flushes, and forgets the file's state when its last handle goes.
  Status Release(std::shared_ptr<OpenFile> f);

  std::map<std::string, uint64_t> Stats() const;

 private:
  explicit Client(const Config& cfg);
  Status Connect();
  Result<std::shared_ptr<FileState>> LoadState(uint64_t ino);
  Status FlushLocked(FileState& st);
  Status FlushOne(FileState& st, uint64_t index, bool grow_size = true);
  Status ZeroTail(FileState& st, uint64_t new_size);

  Config cfg_;
  MdsClient mds_;
  std::unique_ptr<DssPool> dss_;
  std::unique_ptr<EcReader> reader_;
  std::unique_ptr<EcWriter> writer_;

  std::mutex open_mu_;
  std::unordered_map<uint64_t, std::shared_ptr<FileState>> open_;

  Counter& app_bytes_read_;
  Counter& app_bytes_written_;
  Counter& app_reads_;
};

}  // namespace rustfs::client

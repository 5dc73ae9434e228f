// The FUSE low-level operations table over a client::Client.
#pragma once

#define FUSE_USE_VERSION 312
#include <fuse3/fuse_lowlevel.h>

#include "client/client.h"

namespace rustfs::fuse {

// The operations; userdata passed to fuse_session_new must be a
// client::Client* that outlives the session.
const fuse_lowlevel_ops& Operations();

// The FUSE requests the kernel keeps in flight for asynchronous reads
// (max_background, set at INIT): the most reads the daemon can hold at once.
inline constexpr unsigned kMaxBackground = 256;

class ReadBatcher;
// Reads go to `b` (asynchronous replies) when set; null: each read is
// served by the FUSE worker that received it. Set before the session loop.
void UseReadBatcher(ReadBatcher* b);

// The control socket's path, given as RUSTFS_CONTROL_XATTR of every file.
// Set before the session loop.
void AdvertiseControlSocket(const std::string& path);

// Forwards the client's lease revocations to the kernel's caches, and
// lets access plans put fetched records into the kernel's page cache.
void InstallKernelHooks(client::Client& c, fuse_session* se);

// Ends the hooks' calls into the kernel: waits for those in progress, and
// makes later ones do nothing. Those calls (page stores, invalidations)
// wait for the locks of pages that FUSE reads in flight hold, which are
// released only when the reads are answered: call this while the session
// loop still answers, before it stops (else a call can wait forever and
// the daemon never exits). Idempotent; thread-safe.
void CloseKernelCalls();

// The xattr that returns this daemon's counters as JSON
// (`getfattr -n user.rustfs.stats MOUNT`).
inline constexpr const char* kStatsXattr = "user.rustfs.stats";
// The access mode of an open file's most recent read ("random", ...).
inline constexpr const char* kModeXattr = "user.rustfs.mode";
// Read: the inode's layout ("ec:4+2", "replica:3"); write: set it (see
// Client::SetLayout).
inline constexpr const char* kLayoutXattr = "user.rustfs.layout";

}  // namespace rustfs::fuse

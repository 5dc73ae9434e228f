/*
 * librustfs: the native C API of the rustfs client (DESIGN.md §1, way 2).
 * Programs link it (-lrustfs) and reach the cluster with no kernel crossing
 * and no FUSE daemon: the same client library rustfs-fuse runs, in-process.
 *
 * Conventions, for every function below:
 * - Errors are negative errno values (-ENOENT, -EIO, ...); 0 or a count of
 *   bytes is success. Nothing sets errno. rustfs_last_error() names the
 *   cause of the calling thread's most recent failure in words.
 * - Offsets, lengths and sizes are bytes.
 * - Paths are inside the rustfs namespace, from its root: "/a/b.bin" (a
 *   missing leading '/' means the same). "." and ".." are resolved; empty
 *   components ("//") are ignored. There is no current directory.
 * - Handles are opaque and owned by the caller: every rustfs_connect is
 *   matched by one rustfs_disconnect, every rustfs_open by one rustfs_close.
 *   A rustfs_file must be closed before its rustfs_client is disconnected.
 * - Thread-safe: one client may be used from many threads, and so may one
 *   file (reads and writes at independent offsets, as with pread/pwrite).
 *   A client must not cross fork(): connect in the child (the client runs
 *   threads, which a forked child does not inherit).
 * - Writes are buffered in the client and published as new chunk versions
 *   on rustfs_fsync or rustfs_close (as on NFS: close-to-open); reads by the
 *   same client see them at once.
 *
 * <rustfs/ioctl.h> declares `struct rustfs_fadvise`, the ioctl argument of a
 * FUSE mount; the function rustfs_fadvise() below is unrelated and can be
 * used in the same program (in C++ spell the struct `struct rustfs_fadvise`).
 */
#ifndef RUSTFS_RUSTFS_H_
#define RUSTFS_RUSTFS_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h> /* ssize_t */

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define RUSTFS_API __attribute__((visibility("default")))
#else
#define RUSTFS_API
#endif

typedef struct rustfs_client rustfs_client; /* a connection to one cluster */
typedef struct rustfs_file rustfs_file;     /* an open regular file */

/*
 * Connects to the cluster described by the config file at config_path (the
 * TOML of `rustfs cluster up`'s DIR/rustfs.toml or /etc/rustfs/...). NULL
 * or "" means the default: /etc/rustfs/random-read.toml if it exists, else
 * built-in defaults (an MDS on 127.0.0.1:9400). On success *out is a new
 * client. -EINVAL: the config was refused (rustfs_last_error() names the key
 * and value); -ENOENT: no such file; -EIO and others: the MDS did not answer.
 */
RUSTFS_API int rustfs_connect(const char* config_path, rustfs_client** out);

/* Ends the client's lease session and frees it. NULL is a no-op. */
RUSTFS_API void rustfs_disconnect(rustfs_client* client);

/*
 * Opens the regular file at path. flags: one of O_RDONLY, O_WRONLY, O_RDWR,
 * optionally with O_CREAT (create it if missing, mode = its permission bits,
 * e.g. 0644; no umask is applied; owner = the caller's effective uid/gid),
 * O_EXCL (with O_CREAT: fail with -EEXIST if it exists) and O_TRUNC (cut it
 * to 0 bytes; needs write access). Other flags (O_DIRECT, O_CLOEXEC, ...)
 * are accepted and ignored: there is no page cache or descriptor to affect.
 * The file's chunk map is fetched here, in one MDS request; later reads need
 * no MDS. On success *out is a new handle. -ENOENT, -ENOTDIR, -EISDIR,
 * -EEXIST, -EINVAL (bad flags or path).
 */
RUSTFS_API int rustfs_open(rustfs_client* client, const char* path, int flags, unsigned mode,
                           rustfs_file** out);

/*
 * Publishes the file's buffered writes and frees the handle (always, even
 * when publishing fails). Returns the publishing error, as close(2) does.
 */
RUSTFS_API int rustfs_close(rustfs_file* file);

/*
 * Reads up to len bytes at offset into buf. Returns the bytes read: fewer
 * than len only at end of file, 0 at or past it. -EBADF on a write-only
 * handle; -EIO when the data cannot be read or reconstructed (a checksum
 * failure is never returned as data).
 */
RUSTFS_API ssize_t rustfs_pread(rustfs_file* file, void* buf, size_t len, uint64_t offset);

/*
 * Writes len bytes from buf at offset, extending the file if needed.
 * Returns len, or -EBADF on a read-only handle, -EFBIG when offset + len
 * would pass 2^63 - 1 (the largest file size, as off_t holds it), or an
 * error from publishing an earlier buffered write (the client holds a few
 * chunks per file).
 */
RUSTFS_API ssize_t rustfs_pwrite(rustfs_file* file, const void* buf, size_t len, uint64_t offset);

/* Publishes the file's buffered writes: durable on the DSS when it returns 0. */
RUSTFS_API int rustfs_fsync(rustfs_file* file);

/* The file's size in bytes, buffered writes included; or -errno. */
RUSTFS_API int64_t rustfs_size(rustfs_file* file);

/*
 * A posix_fadvise-style hint on [offset, offset+len), len 0 = to end of
 * file. advice is POSIX_FADV_* from <fcntl.h>: RANDOM / SEQUENTIAL fix this
 * handle's access mode (read-ahead off / on), NORMAL returns to automatic
 * detection, WILLNEED prefetches the range into the client's fragment
 * cache, DONTNEED drops it from there. Unknown advice is ignored. 0 or -errno.
 */
RUSTFS_API int rustfs_fadvise(rustfs_file* file, uint64_t offset, uint64_t len, int advice);

/*
 * An access plan (LLD-002 §4.2): the order in which ranges of this file will
 * be read, by this client's readers of it (every rustfs_file open on it).
 * entries[i] = {offset, length} (struct rustfs_plan_entry, also in
 * <rustfs/ioctl.h>), n of them in reading order; the client fetches the
 * entries ahead of the readers (`depth` entries ahead, 0 = the config's
 * access_plan.default_prefetch_depth) into its fragment cache. A new plan
 * replaces the file's old one; the file's last close ends it. 0, -EINVAL (no
 * entries, an entry of length 0), -EOPNOTSUPP (plans off in the config, or
 * no fragment cache).
 */
struct rustfs_plan_entry;
RUSTFS_API int rustfs_submit_access_plan(rustfs_file* file, const struct rustfs_plan_entry* entries,
                                         size_t n, uint32_t depth);

/*
 * One read of a batch. The caller fills offset, length and buf (length bytes,
 * caller-owned, must stay valid for the call); rustfs_read_batch sets result:
 * the bytes read (short at end of file, 0 past it) or -errno for this read
 * alone.
 */
struct rustfs_read_req {
  uint64_t offset;
  size_t length;
  void* buf;
  ssize_t result; /* out */
};

/*
 * Serves n reads of one file together and returns when all are done: cached
 * data is copied, and every DSS gets ONE request carrying all the pieces the
 * misses need (scatter-gather), instead of one request per read. Reads may
 * overlap. Returns 0 when every read succeeded, else the first -errno (each
 * request's result says which failed); -EBADF on a write-only handle.
 */
RUSTFS_API int rustfs_read_batch(rustfs_file* file, struct rustfs_read_req* reqs, size_t n);

/*
 * rustfs_read_batch over several files: reqs[i] reads files[i] (files of one
 * client, opened for reading; one file may appear many times). The misses
 * of every file go together: each DSS gets ONE request for the whole batch,
 * so reads spread over many files (a shuffled epoch over a folder of
 * samples) cost one round trip, as reads of one file do. Returns as
 * rustfs_read_batch; -EINVAL when the files belong to different clients.
 */
RUSTFS_API int rustfs_read_batch_files(rustfs_file* const* files, struct rustfs_read_req* reqs, size_t n);

/*
 * Creates the directory at path with permission bits mode (e.g. 0755, no
 * umask; owner = the caller's effective uid/gid). 0, -EEXIST if something
 * has that name, -ENOENT if its parent is missing, or another -errno.
 */
RUSTFS_API int rustfs_mkdir(rustfs_client* client, const char* path, unsigned mode);

/* Removes the file at path (not a directory). 0 or -errno. */
RUSTFS_API int rustfs_unlink(rustfs_client* client, const char* path);

/*
 * The counters of this process's rustfs clients (bytes requested and
 * fetched, cache hits, BatchRead RPCs, MDS RPCs, ...) as one JSON object of
 * numbers, the same names `rustfs stats` prints. Writes at most len bytes,
 * NUL-terminated, into buf and returns the full length without the NUL, as
 * snprintf does: call with len 0 to size the buffer.
 */
RUSTFS_API int rustfs_stats_json(rustfs_client* client, char* buf, size_t len);

/*
 * Words for the calling thread's most recent failed call ("NotFound: no entry
 * 'x' in inode 1"), or "" when none has failed. Valid until the thread's next
 * rustfs call.
 */
RUSTFS_API const char* rustfs_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* RUSTFS_RUSTFS_H_ */

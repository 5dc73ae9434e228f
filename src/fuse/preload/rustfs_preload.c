/*
 * librustfs_preload.so: forwards posix_fadvise hints to a rustfs FUSE mount.
 *
 * The kernel's FUSE module applies posix_fadvise to its own page cache and
 * never tells the daemon, yet the daemon's read path (access detection,
 * read-ahead, fragment cache) is where the hint matters (LLD-002 §1.2). With
 * LD_PRELOAD=librustfs_preload.so an unmodified program's posix_fadvise
 * calls also reach the daemon, as RUSTFS_IOC_FADVISE (include/rustfs/ioctl.h).
 *
 * Every call first runs the real posix_fadvise, and its return value is what
 * the caller gets, always: files elsewhere behave exactly as without the
 * shim, and a daemon that rejects the hint cannot turn a successful call into
 * a failure. errno is left as it was, since posix_fadvise reports errors in
 * its return value and callers do not expect errno to move.
 *
 * Set RUSTFS_PRELOAD_DEBUG=1 to log each forwarded hint to stderr.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/types.h>
#include <sys/vfs.h>

#include "rustfs/ioctl.h"

#define EXPORT __attribute__((visibility("default")))

typedef int (*fadvise_fn)(int, off_t, off_t, int);
typedef int (*fadvise64_fn)(int, off64_t, off64_t, int);

/*
 * Resolved on first use. Racing threads store the same pointer, so relaxed
 * atomics suffice; they only keep the race defined.
 */
static fadvise_fn real_fadvise;
static fadvise64_fn real_fadvise64;
static int debug_level = -1; /* -1: RUSTFS_PRELOAD_DEBUG not read yet */

static int debug_enabled(void) {
  int level = __atomic_load_n(&debug_level, __ATOMIC_RELAXED);
  if (level < 0) {
    const char* v = getenv("RUSTFS_PRELOAD_DEBUG");
    level = (v != NULL && v[0] != '\0' && v[0] != '0') ? 1 : 0;
    __atomic_store_n(&debug_level, level, __ATOMIC_RELAXED);
  }
  return level;
}

/*
 * Whether fd is on a rustfs mount. statfs first: it is cheap and keeps the
 * ioctl away from every non-FUSE file (the number is also a <linux/random.h>
 * command). Not cached per fd, because fds are reused after close() and
 * dup2() behind our back, and fadvise is rare enough that two syscalls do
 * not matter.
 */
static int on_rustfs(int fd) {
  struct statfs sfs;
  if (fstatfs(fd, &sfs) != 0) return 0;
  if ((uint32_t)sfs.f_type != (uint32_t)RUSTFS_FUSE_SUPER_MAGIC) return 0;
  uint64_t magic = 0;
  if (ioctl(fd, RUSTFS_IOC_MAGIC_GET, &magic) != 0) return 0;
  return magic == RUSTFS_MAGIC;
}

/* Sends the hint if fd is on rustfs; never fails, never touches errno. */
static void forward(int fd, int64_t offset, int64_t len, int advice) {
  const int saved_errno = errno;
  if (on_rustfs(fd)) {
    struct rustfs_fadvise arg;
    arg.offset = (uint64_t)offset;
    arg.length = (uint64_t)len;
    arg.advice = (uint32_t)advice;
    arg.reserved = 0;
    const int rc = ioctl(fd, RUSTFS_IOC_FADVISE, &arg);
    if (debug_enabled()) {
      fprintf(stderr, "rustfs_preload: fd %d advice %d [%lld, +%lld) -> %s\n", fd, advice,
              (long long)offset, (long long)len, rc == 0 ? "sent" : "refused");
    }
  }
  errno = saved_errno;
}

EXPORT int posix_fadvise(int fd, off_t offset, off_t len, int advice) {
  fadvise_fn real = __atomic_load_n(&real_fadvise, __ATOMIC_RELAXED);
  if (real == NULL) {
    real = (fadvise_fn)dlsym(RTLD_NEXT, "posix_fadvise");
    if (real == NULL) return ENOSYS; /* no libc below us: nothing to call */
    __atomic_store_n(&real_fadvise, real, __ATOMIC_RELAXED);
  }
  const int rc = real(fd, offset, len, advice);
  /* An invalid call (EBADF, EINVAL, ESPIPE) carries no hint worth sending. */
  if (rc == 0) forward(fd, (int64_t)offset, (int64_t)len, advice);
  return rc;
}

EXPORT int posix_fadvise64(int fd, off64_t offset, off64_t len, int advice) {
  fadvise64_fn real = __atomic_load_n(&real_fadvise64, __ATOMIC_RELAXED);
  if (real == NULL) {
    real = (fadvise64_fn)dlsym(RTLD_NEXT, "posix_fadvise64");
    if (real == NULL) return ENOSYS;
    __atomic_store_n(&real_fadvise64, real, __ATOMIC_RELAXED);
  }
  const int rc = real(fd, offset, len, advice);
  if (rc == 0) forward(fd, (int64_t)offset, (int64_t)len, advice);
  return rc;
}

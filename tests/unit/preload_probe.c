/*
 * preload_probe PATH [OFFSET LENGTH]: calls posix_fadvise and posix_fadvise64
 * on PATH with every advice and prints what they return, so a test can run
 * it with and without LD_PRELOAD=librustfs_preload.so and compare.
 *
 * Output, one item per line:
 *   file PATH rustfs=yes|no
 *   resolved posix_fadvise from OBJECT       (the preload when it is active)
 *   posix_fadvise NORMAL 0                   (one line per advice, then the same
 *   ...                                       for posix_fadvise64)
 *   bad_fd 9                                 (EBADF: errors stay return values)
 *   bad_advice 22                            (EINVAL)
 * Exit status 0 when every advice returned 0 and the two error cases
 * returned EBADF and EINVAL; 1 otherwise; 2 on usage or open errors.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "rustfs/ioctl.h"

static const struct {
  const char* name;
  int advice;
} kAdvice[] = {
    {"NORMAL", POSIX_FADV_NORMAL},     {"SEQUENTIAL", POSIX_FADV_SEQUENTIAL},
    {"RANDOM", POSIX_FADV_RANDOM},     {"WILLNEED", POSIX_FADV_WILLNEED},
    {"DONTNEED", POSIX_FADV_DONTNEED}, {"NOREUSE", POSIX_FADV_NOREUSE},
};

static int on_rustfs(int fd) {
  struct statfs sfs;
  if (fstatfs(fd, &sfs) != 0 || (uint32_t)sfs.f_type != (uint32_t)RUSTFS_FUSE_SUPER_MAGIC) {
    return 0;
  }
  uint64_t magic = 0;
  return ioctl(fd, RUSTFS_IOC_MAGIC_GET, &magic) == 0 && magic == RUSTFS_MAGIC;
}

int main(int argc, char** argv) {
  if (argc != 2 && argc != 4) {
    fprintf(stderr, "usage: %s PATH [OFFSET LENGTH]\n", argv[0]);
    return 2;
  }
  const off_t offset = argc == 4 ? (off_t)strtoll(argv[2], NULL, 0) : 0;
  const off_t length = argc == 4 ? (off_t)strtoll(argv[3], NULL, 0) : 0;
  const int fd = open(argv[1], O_RDONLY);
  if (fd < 0) {
    fprintf(stderr, "open %s: %s\n", argv[1], strerror(errno));
    return 2;
  }
  printf("file %s rustfs=%s\n", argv[1], on_rustfs(fd) ? "yes" : "no");
  Dl_info info;
  if (dladdr((void*)&posix_fadvise, &info) != 0 && info.dli_fname != NULL) {
    printf("resolved posix_fadvise from %s\n", info.dli_fname);
  }

  int failures = 0;
  for (size_t i = 0; i < sizeof(kAdvice) / sizeof(kAdvice[0]); ++i) {
    const int rc = posix_fadvise(fd, offset, length, kAdvice[i].advice);
    printf("posix_fadvise %s %d\n", kAdvice[i].name, rc);
    failures += rc != 0;
  }
  for (size_t i = 0; i < sizeof(kAdvice) / sizeof(kAdvice[0]); ++i) {
    const int rc = posix_fadvise64(fd, offset, length, kAdvice[i].advice);
    printf("posix_fadvise64 %s %d\n", kAdvice[i].name, rc);
    failures += rc != 0;
  }
  /* glibc returns the error number and leaves errno alone; so must the shim. */
  const int bad_fd = posix_fadvise(-1, 0, 0, POSIX_FADV_NORMAL);
  printf("bad_fd %d\n", bad_fd);
  failures += bad_fd != EBADF;
  const int bad_advice = posix_fadvise(fd, 0, 0, 12345);
  printf("bad_advice %d\n", bad_advice);
  failures += bad_advice != EINVAL;

  close(fd);
  return failures == 0 ? 0 : 1;
}

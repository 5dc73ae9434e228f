/*
 * Exercises librustfs (include/rustfs/rustfs.h) from plain C against a
 * running cluster: capi_probe CONFIG. Prints "capi_probe: ok" and exits 0,
 * or names the first failed check and exits 1. Run by test_fio_engine.py.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rustfs/rustfs.h"

#define CHECK(cond)                                                                  \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      fprintf(stderr, "capi_probe: line %d: %s failed (last error: %s)\n", __LINE__, \
              #cond, rustfs_last_error());                                           \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)

/* Deliberately not a multiple of 4 KiB, the stripe unit or a chunk. */
enum { kSize = (5 << 20) + 123 };

static unsigned char expected(uint64_t off) { return (unsigned char)(off * 2654435761u >> 13); }

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: capi_probe CONFIG\n");
    return 2;
  }
  rustfs_client* c = NULL;
  rustfs_file* f = NULL;
  CHECK(rustfs_connect("/nonexistent/rustfs.toml", &c) < 0 && c == NULL);
  CHECK(rustfs_last_error()[0] != '\0');
  CHECK(rustfs_connect(argv[1], &c) == 0);

  /* Namespace errors arrive as negative errno. */
  CHECK(rustfs_open(c, "/no/such/file", O_RDONLY, 0, &f) == -ENOENT && f == NULL);
  CHECK(rustfs_open(c, "/", O_RDONLY, 0, &f) == -EISDIR);
  CHECK(rustfs_open(c, "/capi.bin", O_RDWR | O_CREAT | O_EXCL, 0644, &f) == 0);
  rustfs_file* again = NULL;
  CHECK(rustfs_open(c, "capi.bin", O_RDWR | O_CREAT | O_EXCL, 0644, &again) == -EEXIST);
  CHECK(rustfs_open(c, "/capi.bin/x", O_RDONLY, 0, &again) == -ENOTDIR);
  CHECK(rustfs_mkdir(c, "/capi.d", 0755) == 0 && rustfs_mkdir(c, "/capi.d", 0755) == -EEXIST);
  CHECK(rustfs_open(c, "/capi.d/../capi.d/in.bin", O_WRONLY | O_CREAT, 0600, &again) == 0);
  CHECK(rustfs_close(again) == 0 && rustfs_unlink(c, "/capi.d/in.bin") == 0);

  /* Writes, then reads of them: before and after they are published. */
  unsigned char* data = malloc(kSize);
  unsigned char* buf = malloc(kSize);
  CHECK(data && buf);
  for (uint64_t i = 0; i < kSize; i++) data[i] = expected(i);
  CHECK(rustfs_pwrite(f, data, kSize, 0) == kSize);
  CHECK(rustfs_size(f) == kSize);
  CHECK(rustfs_pread(f, buf, 4096, 8192) == 4096 && memcmp(buf, data + 8192, 4096) == 0);
  CHECK(rustfs_fsync(f) == 0);
  CHECK(rustfs_pread(f, buf, kSize, 0) == kSize && memcmp(buf, data, kSize) == 0);
  CHECK(rustfs_pread(f, buf, 4096, kSize - 100) == 100);  /* short at EOF */
  CHECK(rustfs_pread(f, buf, 4096, kSize + 4096) == 0);   /* past it */
  CHECK(rustfs_fadvise(f, 0, 0, POSIX_FADV_RANDOM) == 0);
  CHECK(rustfs_fadvise(f, 0, 0, POSIX_FADV_DONTNEED) == 0);
  CHECK(rustfs_pwrite(f, data, 100, UINT64_MAX - 10) == -EFBIG); /* would end past 2^64 */
  CHECK(rustfs_pwrite(f, data, 100, INT64_MAX - 10) == -EFBIG);  /* past 2^63 - 1, which off_t holds */
  CHECK(rustfs_size(f) == kSize);
  CHECK(rustfs_close(f) == 0);

  /* A batch: scattered 4 KiB reads, overlapping ones, one at EOF, one past. */
  CHECK(rustfs_open(c, "/./capi.bin", O_RDONLY, 0, &f) == 0);
  enum { kReqs = 67 };
  struct rustfs_read_req reqs[kReqs];
  unsigned char* bufs = malloc((size_t)kReqs * 4096);
  CHECK(bufs);
  uint64_t x = 12345;
  for (int i = 0; i < kReqs; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    reqs[i].offset = (x >> 20) % (kSize - 4096);
    if (i % 7 == 0) reqs[i].offset &= ~4095ull; /* some page-aligned */
    reqs[i].length = 4096;
    reqs[i].buf = bufs + (size_t)i * 4096;
    reqs[i].result = -1;
  }
  reqs[1].offset = reqs[0].offset + 100; /* overlaps reqs[0] */
  reqs[kReqs - 2].offset = kSize - 10;
  reqs[kReqs - 1].offset = kSize + 1;
  CHECK(rustfs_read_batch(f, reqs, kReqs) == 0);
  for (int i = 0; i < kReqs; i++) {
    ssize_t want = i == kReqs - 2 ? 10 : i == kReqs - 1 ? 0 : 4096;
    CHECK(reqs[i].result == want);
    CHECK(memcmp(reqs[i].buf, data + reqs[i].offset, (size_t)want) == 0);
  }
  /* One batch over several files: capi.bin and another file through two
   * handles; every read checked against its own file's bytes. */
  enum { kSize2 = (1 << 20) + 7 };
  rustfs_file *w2 = NULL, *g1 = NULL, *g2 = NULL;
  CHECK(rustfs_open(c, "/capi2.bin", O_WRONLY | O_CREAT | O_EXCL, 0644, &w2) == 0);
  for (uint64_t i = 0; i < kSize2; i++) buf[i] = expected(i) ^ 0x5a;
  CHECK(rustfs_pwrite(w2, buf, kSize2, 0) == kSize2 && rustfs_close(w2) == 0);
  CHECK(rustfs_open(c, "/capi2.bin", O_RDONLY, 0, &g1) == 0 && rustfs_open(c, "/capi2.bin", O_RDONLY, 0, &g2) == 0);
  rustfs_file* files[kReqs];
  for (int i = 0; i < kReqs; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    files[i] = i % 3 == 0 ? f : i % 3 == 1 ? g1 : g2;
    const uint64_t size = files[i] == f ? kSize : kSize2;
    reqs[i].offset = (x >> 20) % (size - 4096);
    reqs[i].length = 4096;
    reqs[i].result = -1;
  }
  reqs[kReqs - 1].offset = kSize2 - 5; /* the last: short, at the end of capi2.bin */
  files[kReqs - 1] = g2;
  CHECK(rustfs_read_batch_files(files, reqs, kReqs) == 0);
  for (int i = 0; i < kReqs; i++) {
    ssize_t want = i == kReqs - 1 ? 5 : 4096;
    CHECK(reqs[i].result == want);
    for (ssize_t b = 0; b < want; b++) {
      const uint64_t off = reqs[i].offset + (uint64_t)b;
      CHECK(((unsigned char*)reqs[i].buf)[b] == (files[i] == f ? data[off] : (unsigned char)(expected(off) ^ 0x5a)));
    }
  }
  rustfs_file* wo = NULL;
  CHECK(rustfs_open(c, "/capi2.bin", O_WRONLY, 0, &wo) == 0);
  files[1] = wo;
  CHECK(rustfs_read_batch_files(files, reqs, kReqs) == -EBADF); /* a write-only handle among them */
  rustfs_client* c2 = NULL;
  rustfs_file* other = NULL;
  CHECK(rustfs_connect(argv[1], &c2) == 0 && rustfs_open(c2, "/capi2.bin", O_RDONLY, 0, &other) == 0);
  files[1] = other;
  CHECK(rustfs_read_batch_files(files, reqs, kReqs) == -EINVAL); /* another client's file */
  CHECK(rustfs_close(other) == 0 && rustfs_close(wo) == 0 && rustfs_close(g1) == 0 && rustfs_close(g2) == 0);
  rustfs_disconnect(c2);
  CHECK(rustfs_unlink(c, "/capi2.bin") == 0);

  CHECK(rustfs_pwrite(f, data, 1, 0) == -EBADF); /* read-only handle */
  CHECK(rustfs_close(f) == 0);

  /* O_TRUNC, counters, unlink. */
  CHECK(rustfs_open(c, "/capi.bin", O_WRONLY | O_TRUNC, 0, &f) == 0);
  CHECK(rustfs_size(f) == 0);
  CHECK(rustfs_pread(f, buf, 1, 0) == -EBADF); /* write-only handle */
  CHECK(rustfs_close(f) == 0);
  char stats[1 << 16];
  int n = rustfs_stats_json(c, stats, sizeof stats);
  CHECK(n > 0 && (size_t)n < sizeof stats && strstr(stats, "\"client.batch_reads\"") != NULL);
  CHECK(rustfs_unlink(c, "/capi.bin") == 0);
  CHECK(rustfs_open(c, "/capi.bin", O_RDONLY, 0, &f) == -ENOENT);
  rustfs_disconnect(c);
  free(bufs);
  free(buf);
  free(data);
  printf("capi_probe: ok\n");
  return 0;
}

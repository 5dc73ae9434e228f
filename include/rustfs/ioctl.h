/*
 * ioctls a rustfs FUSE mount accepts on an open regular file. Plain C so that
 * C programs, the LD_PRELOAD shim (src/fuse/preload) and the C++ daemon share
 * one definition.
 *
 * FUSE passes ioctls on regular files to the daemon only in "restricted"
 * form: the kernel copies in (_IOW) or out (_IOR) exactly _IOC_SIZE(cmd)
 * bytes at the argument pointer, and nothing else. Hence every command here
 * has a fixed-size encoding and its argument holds no pointers, and the
 * structs have the same layout on 32- and 64-bit ABIs (no implicit padding),
 * so a 32-bit process on a 64-bit kernel sends the same bytes.
 *
 * Type 'R' is shared with <linux/random.h> (RNDGETENTCNT etc., numbers
 * 0x00-0x07); the commands differ in size or only ever reach a rustfs
 * daemon, which is why the collision is harmless (see RUSTFS_IOC_MAGIC_GET).
 */
#ifndef RUSTFS_IOCTL_H_
#define RUSTFS_IOCTL_H_

#include <stdint.h>
#include <sys/ioctl.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Argument of RUSTFS_IOC_FADVISE: posix_fadvise(fd, offset, length, advice)
 * carried to the daemon, which the kernel's FUSE module otherwise never
 * tells. offset and length are bytes; length 0 means "through end of file",
 * as for posix_fadvise. advice is a POSIX_FADV_* value from <fcntl.h>
 * (NORMAL 0, RANDOM 1, SEQUENTIAL 2, WILLNEED 3, DONTNEED 4, NOREUSE 5 on
 * Linux); the daemon ignores values it does not know. reserved must be 0, so
 * that a later version can give it a meaning. 24 bytes.
 */
struct rustfs_fadvise {
  uint64_t offset;
  uint64_t length;
  uint32_t advice;
  uint32_t reserved;
};

#ifdef __cplusplus
static_assert(sizeof(struct rustfs_fadvise) == 24, "ioctl ABI: rustfs_fadvise is 24 bytes");
#else
_Static_assert(sizeof(struct rustfs_fadvise) == 24, "ioctl ABI: rustfs_fadvise is 24 bytes");
#endif

/* The ioctl type byte of every rustfs command. */
#define RUSTFS_IOC_TYPE 'R'

/*
 * ioctl(fd, RUSTFS_IOC_FADVISE, &(struct rustfs_fadvise){...}) -> 0, or -1
 * with errno EINVAL (reserved != 0), ENOTTY (not a rustfs file).
 * = 0x40185201.
 */
#define RUSTFS_IOC_FADVISE _IOW(RUSTFS_IOC_TYPE, 1, struct rustfs_fadvise)

/*
 * ioctl(fd, RUSTFS_IOC_MAGIC_GET, &u64) -> 0 and u64 = RUSTFS_MAGIC on a
 * rustfs file. It lets a caller tell a rustfs mount from any other FUSE
 * mount (all share f_type FUSE_SUPER_MAGIC) before sending it other
 * commands. Compare the value, not just the return code: the same number is
 * RNDGETPOOL of <linux/random.h>, long unimplemented, and another FUSE
 * daemon could in principle answer it. = 0x80085202.
 */
#define RUSTFS_IOC_MAGIC_GET _IOR(RUSTFS_IOC_TYPE, 2, uint64_t)

/*
 * Access plans (LLD-002 §4.2): the order in which a file's ranges will be
 * read, handed to the mount so that it fetches them ahead of the readers.
 * Small plans go by ioctl on an open descriptor of the file; larger ones
 * (up to RUSTFS_PLAN_MAX_ENTRIES) through the mount's control socket: its
 * path is the value of the extended attribute "user.rustfs.control" of any
 * file of the mount. A new plan replaces the file's old one; the file's
 * last close (in every process) ends it.
 */
struct rustfs_plan_entry {
  uint64_t offset; /* bytes into the file */
  uint64_t length; /* bytes, > 0 */
};

#define RUSTFS_PLAN_IOCTL_ENTRIES 1000
/* ioctl(fd, RUSTFS_IOC_PLAN, &plan) -> 0, or -1 with errno EINVAL (count 0
 * or above RUSTFS_PLAN_IOCTL_ENTRIES, reserved != 0, an entry of length 0),
 * EOPNOTSUPP (plans are off on this mount). 16016 bytes. */
struct rustfs_plan_ioctl {
  uint32_t count;    /* entries used, 1..RUSTFS_PLAN_IOCTL_ENTRIES */
  uint32_t depth;    /* entries fetched ahead of the readers; 0 = the mount's default */
  uint64_t reserved; /* must be 0 */
  struct rustfs_plan_entry entries[RUSTFS_PLAN_IOCTL_ENTRIES];
};
#define RUSTFS_IOC_PLAN _IOW(RUSTFS_IOC_TYPE, 3, struct rustfs_plan_ioctl)

/* The control socket (AF_UNIX, SOCK_STREAM): one plan per connection, a
 * 32-byte header then `count` entries (little endian, as in memory here);
 * the reply is one int32: 0, or the errno the ioctl would have given
 * (ENOENT: the file is not open in any process of the mount). */
#define RUSTFS_CONTROL_MAGIC 0x50534652u /* "RFSP" */
#define RUSTFS_PLAN_MAX_ENTRIES (UINT64_C(1) << 26)
struct rustfs_control_plan {
  uint32_t magic;    /* RUSTFS_CONTROL_MAGIC */
  uint32_t version;  /* 1 */
  uint64_t ino;      /* st_ino of the file, open in the sender */
  uint64_t count;    /* 1..RUSTFS_PLAN_MAX_ENTRIES */
  uint32_t depth;    /* 0 = the mount's default */
  uint32_t reserved; /* 0 */
};
#define RUSTFS_CONTROL_XATTR "user.rustfs.control"

#ifdef __cplusplus
static_assert(sizeof(struct rustfs_plan_ioctl) == 16016, "ioctl ABI: rustfs_plan_ioctl");
static_assert(sizeof(struct rustfs_control_plan) == 32, "control ABI: rustfs_control_plan");
#else
_Static_assert(sizeof(struct rustfs_plan_ioctl) == 16016, "ioctl ABI: rustfs_plan_ioctl");
_Static_assert(sizeof(struct rustfs_control_plan) == 32, "control ABI: rustfs_control_plan");
#endif

/* "RUSTFS" in ASCII, then an ioctl ABI version (1) in the low 16 bits. */
#define RUSTFS_MAGIC UINT64_C(0x5255535446530001)

/* statfs(2) f_type of every FUSE mount (<linux/magic.h> FUSE_SUPER_MAGIC). */
#define RUSTFS_FUSE_SUPER_MAGIC 0x65735546

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* RUSTFS_IOCTL_H_ */

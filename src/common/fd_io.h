// Blocking whole-buffer I/O on a file descriptor (sockets, pipes).
#pragma once

#include <cstddef>

namespace rustfs {

// Reads exactly len bytes into buf (caller-owned), retrying on EINTR and
// short reads. False on error or end of file before len bytes; what was
// read so far is then in buf. Thread-safe as far as the fd is not shared.
bool ReadFull(int fd, void* buf, size_t len);

}  // namespace rustfs

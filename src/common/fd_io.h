// Blocking whole-buffer I/O on a file descriptor (sockets, pipes).
#pragma once

#include <cstddef>

namespace rustfs {

// Reads exactly len bytes into buf (caller-owned), retrying on EINTR and
// short reads. False on error or end of file before len bytes; what was
// read so far is then in buf. Thread-safe as far as the fd is not shared.
bool ReadFull(int fd, void* buf, size_t len);

// Raises this process's open-file limit (RLIMIT_NOFILE) to its hard limit:
// a server holds a descriptor per connection, and the soft default (1024)
// is reached long before memory is. Returns the limit now in force.
size_t RaiseFdLimit();

}  // namespace rustfs

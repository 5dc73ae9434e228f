// Pinning the calling thread to one CPU (the DSS's I/O threads, the FUSE
// daemon's ring queue threads).
#pragma once

#include "common/status.h"

namespace rustfs {

// Restricts the calling thread to `cpu`. cpu < 0 does nothing and is OK
// (the "no pinning" placement); a CPU the thread may not use is an error,
// and the thread's affinity is then unchanged. Affects only the caller.
Status PinCurrentThread(int cpu);

}  // namespace rustfs

#include "common/thread_affinity.h"

#include <pthread.h>
#include <sched.h>

#include <string>

namespace rustfs {

Status PinCurrentThread(int cpu) {
  if (cpu < 0) return Status::Ok();
  if (cpu >= CPU_SETSIZE) {
    return InvalidArgument("PinCurrentThread: cpu " + std::to_string(cpu) + " >= CPU_SETSIZE");
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  // pthread_* return the error instead of setting errno.
  int err = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  if (err != 0) return Status::FromErrno(err, "pin thread to cpu " + std::to_string(cpu));
  return Status::Ok();
}

}  // namespace rustfs

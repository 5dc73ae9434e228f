// rustfs-fuse: mounts a rustfs cluster. Runs in the foreground until
// unmounted (fusermount3 -u MOUNT) or sent SIGTERM, SIGINT or SIGHUP (StopOnSignal).
#include <CLI/CLI.hpp>
#include <pthread.h>
#include <signal.h>
#include <sys/sysinfo.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "common/fd_io.h"
#include "common/log.h"
#include "fuse/control_socket.h"
#include "fuse/fuse_ops.h"
#include "fuse/read_batcher.h"
#include "fuse/uring_channel.h"

namespace {

// SIGINT, SIGTERM, SIGHUP stop the daemon (libfuse's handlers would stop
// the session loop at once); SIGUSR1 only wakes a thread: the loop's main
// thread, or StopOnSignal's once the loop has returned.
sigset_t StopSignals() {
  sigset_t s;
  sigemptyset(&s);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&s, sig);
  return s;
}

// Stopping on a signal: first the client's calls into the kernel end
// (CloseKernelCalls: they may wait for pages whose reads only the running
// loop answers), then the loop. The loop's main thread sleeps in sem_wait,
// which a signal interrupts: it is woken with SIGUSR1 until the loop has
// returned (one wake could land just before it sleeps). Returns once the
// loop has returned (`loop_done`), by a signal or by an unmount: main then
// wakes this thread with SIGUSR1 (one from elsewhere is ignored).
void StopOnSignal(fuse_session* se, pthread_t loop_thread, const std::atomic<bool>& loop_done) {
  sigset_t wait = StopSignals();
  sigaddset(&wait, SIGUSR1);
  int sig = 0;
  while (sigwait(&wait, &sig) != 0 || sig == SIGUSR1)
    if (loop_done) return;  // unmounted
  LOG_INFO("stopping on signal {}", sig);
  rustfs::fuse::CloseKernelCalls();
  fuse_session_exit(se);
  while (!loop_done) {
    pthread_kill(loop_thread, SIGUSR1);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Before any thread starts (they inherit the mask): the stop signals are
  // taken by StopOnSignal's thread alone, and SIGUSR1 only by the loop.
  sigset_t blocked = StopSignals();
  sigaddset(&blocked, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &blocked, nullptr);
  CLI::App app{"rustfs FUSE mount"};
  std::string config_path, mountpoint;
  unsigned threads = 16;
  app.add_option("--config", config_path, "config file (default /etc/rustfs/random-read.toml)");
  app.add_option("--mount", mountpoint, "where to mount")->required();
  // Few enough that under load a worker finds the next request already
  // queued instead of being woken for it; enough for blocking requests
  // (lock waits, flushes) beside the reads.
  app.add_option("--threads", threads, "FUSE worker threads (requests served at once)");
  bool sync_reads = false;
  // Over io_uring every CPU's queue thread leads its reads, and again while
  // it waits for them (net/wait_hook.h): two per CPU, at least 4.
  unsigned leaders = std::max(4u, 2 * unsigned(get_nprocs_conf()));
  app.add_flag("--sync-reads", sync_reads,
               "serve each read in the FUSE worker that received it (no batching; for comparison)");
  app.add_option("--read-leaders", leaders, "threads serving batched reads at once (default: 2 per CPU, at least 4)");
  CLI11_PARSE(app, argc, argv);
  rustfs::InitLogging("fuse");
  rustfs::RaiseFdLimit();

  auto cfg = rustfs::LoadConfig(config_path);
  if (!cfg) {
    fprintf(stderr, "rustfs-fuse: %s\n", cfg.error().message().c_str());
    return 2;
  }
  auto client = rustfs::client::Client::Create(*cfg);
  if (!client) {
    fprintf(stderr, "rustfs-fuse: %s\n", client.error().ToString().c_str());
    return 1;
  }

  std::vector<std::string> argstore = {"rustfs-fuse", "-o", "fsname=rustfs,subtype=rustfs,default_permissions"};
  if (geteuid() == 0) argstore.back() += ",allow_other";
  std::vector<char*> fargv;
  for (auto& s : argstore) fargv.push_back(s.data());
  fuse_args args = FUSE_ARGS_INIT(int(fargv.size()), fargv.data());
  fuse_session* se = fuse_session_new(&args, &rustfs::fuse::Operations(),
                                      sizeof(fuse_lowlevel_ops), client->get());
  if (!se) {
    fprintf(stderr, "rustfs-fuse: cannot create FUSE session\n");
    return 1;
  }
  rustfs::fuse::InstallKernelHooks(**client, se);
  if (fuse_set_signal_handlers(se) != 0 || fuse_session_mount(se, mountpoint.c_str()) != 0) {
    fprintf(stderr, "rustfs-fuse: cannot mount on %s\n", mountpoint.c_str());
    fuse_session_destroy(se);
    return 1;
  }
  LOG_INFO("mounted on {}", mountpoint);
  std::unique_ptr<rustfs::fuse::ControlSocket> control;
  if (auto cs = rustfs::fuse::ControlSocket::Start(rustfs::fuse::DefaultControlPath(), **client); cs) {
    control = std::move(*cs);
    rustfs::fuse::AdvertiseControlSocket(control->path());
  } else {
    LOG_WARN("no control socket (large access plans only through the C API): {}", cs.error().ToString());
  }
  std::unique_ptr<rustfs::fuse::ReadBatcher> batcher;
  if (!sync_reads) {
    batcher = std::make_unique<rustfs::fuse::ReadBatcher>(**client, leaders);
    rustfs::fuse::UseReadBatcher(batcher.get());
  }
  std::unique_ptr<rustfs::fuse::UringChannel> ring;
  if (cfg->fuse.io_uring) {
    auto r = rustfs::fuse::UringChannel::Install(se, {.queue_depth = cfg->fuse.ring_depth, .workers = threads},
                                                 batcher.get());
    if (!r) {
      fprintf(stderr, "rustfs-fuse: %s\n", r.error().ToString().c_str());
      fuse_session_unmount(se);
      fuse_session_destroy(se);
      return 1;
    }
    ring = std::move(*r);
  }
  std::atomic<bool> loop_done{false};
  // Started while SIGUSR1 is still blocked here: it inherits the block, so
  // a SIGUSR1 for it always waits for its sigwait.
  std::thread stopper(StopOnSignal, se, pthread_self(), std::cref(loop_done));
  struct sigaction wake {};
  wake.sa_handler = [](int) {};  // no SA_RESTART: the loop's sem_wait returns
  sigaction(SIGUSR1, &wake, nullptr);
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  pthread_sigmask(SIG_UNBLOCK, &usr1, nullptr);  // this thread, and the loop's workers it starts
  fuse_loop_config* lc = fuse_loop_cfg_create();
  fuse_loop_cfg_set_clone_fd(lc, 1);  // one /dev/fuse fd per thread: no shared-queue contention
  fuse_loop_cfg_set_max_threads(lc, threads);
  fuse_loop_cfg_set_idle_threads(lc, threads);
  int rc = fuse_session_loop_mt(se, lc);
  fuse_loop_cfg_destroy(lc);
  loop_done = true;
  pthread_kill(stopper.native_handle(), SIGUSR1);
  stopper.join();
  rustfs::fuse::CloseKernelCalls();  // unmounted: nothing to call into
  ring.reset();  // its threads reply through the session and lead the batcher's reads
  rustfs::fuse::UseReadBatcher(nullptr);
  batcher.reset();  // answers what is queued before the session goes
  control.reset();
  client->reset();  // its threads call into the session (kernel invalidations): before it goes
  fuse_session_unmount(se);
  fuse_remove_signal_handlers(se);
  fuse_session_destroy(se);
  LOG_INFO("unmounted {}", mountpoint);
  return rc == 0 ? 0 : 1;
}

// rustfs-fuse: mounts a rustfs cluster. Runs in the foreground until
// unmounted (fusermount3 -u MOUNT) or sent SIGTERM/SIGINT.
#include <CLI/CLI.hpp>

#include "common/fd_io.h"
#include "common/log.h"
#include "fuse/control_socket.h"
#include "fuse/fuse_ops.h"
#include "fuse/read_batcher.h"

int main(int argc, char** argv) {
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
  unsigned leaders = 4;
  app.add_flag("--sync-reads", sync_reads,
               "serve each read in the FUSE worker that received it (no batching; for comparison)");
  app.add_option("--read-leaders", leaders, "FUSE workers serving batched reads at once");
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
  fuse_loop_config* lc = fuse_loop_cfg_create();
  fuse_loop_cfg_set_clone_fd(lc, 1);  // one /dev/fuse fd per thread: no shared-queue contention
  fuse_loop_cfg_set_max_threads(lc, threads);
  fuse_loop_cfg_set_idle_threads(lc, threads);
  int rc = fuse_session_loop_mt(se, lc);
  fuse_loop_cfg_destroy(lc);
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

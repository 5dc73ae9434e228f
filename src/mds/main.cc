// rustfs-mds: the metadata service.
#include <CLI/CLI.hpp>
#include <csignal>
#include <filesystem>

#include "common/fd_io.h"
#include "common/log.h"
#include "mds/mds_service.h"

int main(int argc, char** argv) {
  CLI::App app{"rustfs metadata service"};
  std::string config_path;
  app.add_option("--config", config_path, "config file (default /etc/rustfs/random-read.toml)");
  CLI11_PARSE(app, argc, argv);
  rustfs::InitLogging("mds");
  rustfs::RaiseFdLimit();

  auto cfg = rustfs::LoadConfig(config_path);
  if (!cfg) {
    fprintf(stderr, "rustfs-mds: %s\n", cfg.error().message().c_str());
    return 2;
  }
  std::error_code ec;
  std::filesystem::create_directories(cfg->mds.data_dir, ec);
  auto svc = rustfs::mds::MdsService::Create(*cfg);
  if (!svc) {
    fprintf(stderr, "rustfs-mds: %s\n", svc.error().ToString().c_str());
    return 1;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // threads started below inherit the mask
  if (auto st = (*svc)->Start(); !st.ok()) {
    fprintf(stderr, "rustfs-mds: %s\n", st.ToString().c_str());
    return 1;
  }
  int sig = 0;
  sigwait(&set, &sig);
  LOG_INFO("MDS stopping on signal {}", sig);
  (*svc)->Stop();
  return 0;
}

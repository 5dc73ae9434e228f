// rustfs-dss: one data storage service.
#include <CLI/CLI.hpp>
#include <csignal>

#include "common/fd_io.h"
#include "common/log.h"
#include "dss/dss_service.h"

int main(int argc, char** argv) {
  CLI::App app{"rustfs data storage service"};
  std::string config_path;
  uint32_t id = 0;
  app.add_option("--config", config_path, "config file (default /etc/rustfs/random-read.toml)");
  app.add_option("--id", id, "which [[dss]] entry of the config this process is")->required();
  CLI11_PARSE(app, argc, argv);
  rustfs::InitLogging("dss-" + std::to_string(id));
  rustfs::RaiseFdLimit();

  auto cfg = rustfs::LoadConfig(config_path);
  if (!cfg) {
    fprintf(stderr, "rustfs-dss: %s\n", cfg.error().message().c_str());
    return 2;
  }
  auto svc = rustfs::dss::DssService::Create(*cfg, id);
  if (!svc) {
    fprintf(stderr, "rustfs-dss: %s\n", svc.error().ToString().c_str());
    return 1;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  if (auto st = (*svc)->Start(); !st.ok()) {
    fprintf(stderr, "rustfs-dss: %s\n", st.ToString().c_str());
    return 1;
  }
  int sig = 0;
  sigwait(&set, &sig);
  (*svc)->Stop();
  return 0;
}

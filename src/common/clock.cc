#include "common/clock.h"

namespace rustfs {

namespace {
class Steady final : public Clock {
 public:
  time_point Now() const override { return std::chrono::steady_clock::now(); }
  void SleepUntil(time_point t) override { std::this_thread::sleep_until(t); }
};
}  // namespace

Clock& SteadyClock() {
  static Steady* clock = new Steady;  // never destroyed: threads may still read it at exit
  return *clock;
}

}  // namespace rustfs

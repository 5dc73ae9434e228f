// SpinPolicy: polls while polling pays off, backs off to rare probes when it
// does not, and comes back once probes catch their event again. Counted in
// calls of the poll callback, never in time: the budget only bounds a miss.
#include "common/spin_policy.h"

#include <gtest/gtest.h>

namespace rustfs {
namespace {

constexpr auto kBudget = std::chrono::microseconds(200);

TEST(SpinPolicyTest, PollReturnsAsSoonAsTheEventIsCaught) {
  SpinPolicy p;
  int calls = 0;
  EXPECT_TRUE(p.Poll(std::chrono::seconds(60), [&] { return ++calls == 5; }));
  EXPECT_EQ(calls, 5);
}

TEST(SpinPolicyTest, PollGivesUpWhenTheBudgetRunsOut) {
  SpinPolicy p;
  int calls = 0;
  EXPECT_FALSE(p.Poll(kBudget, [&] { return ++calls, false; }));
  EXPECT_GE(calls, 1);
}

TEST(SpinPolicyTest, MissesStopThePollingExceptForRareProbes) {
  SpinPolicy p;
  // Each miss costs two points of a starting score of 8: four misses and
  // polling stops, but for one probe in 32 calls.
  for (int i = 0; i < 4; i++) p.Record(false);
  int polled = 0;  // Poll calls that polled at all
  for (int i = 0; i < 64; i++) {
    bool any = false;
    p.Poll(kBudget, [&] { return any = true, false; });
    polled += any;
  }
  EXPECT_EQ(polled, 2);  // the 1st and the 33rd; both missed, so no more
}

TEST(SpinPolicyTest, ProbesThatCatchBringPollingBack) {
  SpinPolicy p;
  for (int i = 0; i < 4; i++) p.Record(false);
  // Eight caught probes, one per 32 calls (the 1st, 33rd, ... 225th),
  // restore the score of 8.
  int caught = 0;
  for (int i = 0; i < 32 * 7 + 1; i++) caught += p.Poll(kBudget, [] { return true; });
  ASSERT_EQ(caught, 8);
  for (int i = 0; i < 100; i++) EXPECT_TRUE(p.ShouldSpin()) << i;
}

}  // namespace
}  // namespace rustfs

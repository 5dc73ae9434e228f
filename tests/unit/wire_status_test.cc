// The wire's status codes: every rustfs::Code crosses and comes back as
// itself, the numbers are the ones rustfs.proto pins (a renumbering would
// make old and new peers misread each other), and a number nobody knows is
// an error of its own rather than some other status.
#include "net/wire_status.h"

#include <gtest/gtest.h>

#include <set>

#include "rustfs.pb.h"

namespace rustfs::net {
namespace {

TEST(WireStatusTest, EveryCodeRoundTripsAndMatchesTheSchema) {
  const google::protobuf::EnumDescriptor* d = pb::StatusCode_descriptor();
  std::set<int32_t> seen;
  // Code has no "last" marker: walk the schema, which must list them all.
  for (int i = 0; i < d->value_count(); i++) {
    const int32_t wire = d->value(i)->number();
    Status s = FromWire(wire, "m");
    EXPECT_EQ(ToWire(s.code()), wire) << d->value(i)->name();
    EXPECT_EQ(s.message(), "m");
    seen.insert(ToWire(s.code()));
  }
  EXPECT_EQ(seen.size(), size_t(d->value_count()));  // no two codes share a number
  // Spot checks of the pinned numbers peers depend on.
  EXPECT_EQ(ToWire(Code::kOk), 0);
  EXPECT_EQ(ToWire(Code::kNotFound), 2);
  EXPECT_EQ(ToWire(Code::kCorruption), 9);
  EXPECT_EQ(ToWire(Code::kUnavailable), 10);
  EXPECT_EQ(ToWire(Code::kStale), 11);
  EXPECT_EQ(ToWire(Code::kShortRead), 23);
  EXPECT_EQ(ToWire(Code::kInterrupted), 24);
  EXPECT_EQ(d->FindValueByNumber(ToWire(Code::kShortRead))->name(), "S_SHORT_READ");
}

TEST(WireStatusTest, UnknownCodesAreErrorsNamingTheNumber) {
  for (int32_t bad : {-1, 1000, INT32_MAX}) {
    Status s = FromWire(bad, "why");
    EXPECT_EQ(s.code(), Code::kInternal);
    EXPECT_NE(s.message().find(std::to_string(bad)), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("why"), std::string::npos);
  }
}

}  // namespace
}  // namespace rustfs::net

#include "common/config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <string>

namespace rustfs {
namespace {

constexpr const char* kSrc = "test.toml";

Config ParseOk(std::string_view text) {
  Result<Config> r = ParseConfig(text, kSrc);
  EXPECT_TRUE(r.has_value()) << r.error().ToString() << "\n--- text ---\n" << text;
  return r.value_or(Config{});
}

// Asserts the text is refused and the message holds every `needle` (the key,
// the value, the file name: whatever lets a user find and fix the mistake).
void ExpectRefused(std::string_view text, std::initializer_list<std::string_view> needles) {
  Result<Config> r = ParseConfig(text, kSrc);
  ASSERT_FALSE(r.has_value()) << "accepted:\n" << text;
  EXPECT_EQ(r.error().code(), Code::kInvalidArgument);
  const std::string& msg = r.error().message();
  for (std::string_view needle : needles) {
    EXPECT_NE(msg.find(needle), std::string::npos)
        << "message lacks '" << needle << "': " << msg;
  }
}

void ExpectInvalid(const Config& cfg, std::initializer_list<std::string_view> needles) {
  Status st = ValidateConfig(cfg);
  ASSERT_FALSE(st.ok()) << "accepted";
  EXPECT_EQ(st.code(), Code::kInvalidArgument);
  for (std::string_view needle : needles) {
    EXPECT_NE(st.message().find(needle), std::string::npos)
        << "message lacks '" << needle << "': " << st.message();
  }
}

std::string SixDss() {
  std::string text;
  for (int i = 0; i < 6; ++i) {
    text += "[[dss]]\naddress = \"10.0.0." + std::to_string(i + 1) + ":9500\"\n" +
            "data_dir = \"/data/dss" + std::to_string(i) + "\"\n";
  }
  return text;
}

Config WithDss(int n) {
  Config cfg;
  for (int i = 0; i < n; ++i) {
    cfg.dss.push_back({"host" + std::to_string(i) + ":9500", "/d" + std::to_string(i)});
  }
  return cfg;
}

// ---------------------------------------------------------------------------
// Defaults (LLD-002 §7).

TEST(ConfigDefaults, MatchLld002) {
  const Config c;
  EXPECT_EQ(c.ec.stripe_unit, 64 * kKiB);
  EXPECT_TRUE(c.ec.partial_read_fast_path);
  EXPECT_EQ(c.fragment_cache.grain_size, 64 * kKiB);
  EXPECT_EQ(c.fragment_cache.capacity, 8 * kGiB);
  EXPECT_EQ(c.fragment_cache.policy, "tinylfu");
  EXPECT_TRUE(c.fragment_cache.enabled);
  EXPECT_EQ(c.dss_hot_tier.capacity, 32 * kGiB);
  EXPECT_EQ(c.dss_hot_tier.policy, "tinylfu");
  EXPECT_EQ(c.access_plan.default_prefetch_depth, 64u);
  EXPECT_TRUE(c.access_plan.enabled);
  EXPECT_TRUE(c.access_plan.auto_detect);
  EXPECT_TRUE(c.access_plan.kernel_handoff);
  EXPECT_EQ(c.random_io.queue_depth, 1024u);
  EXPECT_TRUE(c.random_io.io_poll);
  EXPECT_EQ(c.random_io.coalesce_gap_threshold, 16 * kKiB);
  EXPECT_EQ(c.random_io.numa_pinning, "auto");
  EXPECT_EQ(c.layout.chunk_size, 4 * kMiB);
  EXPECT_EQ(c.layout.kind, "ec");
  EXPECT_EQ(c.layout.k, 4u);
  EXPECT_EQ(c.layout.m, 2u);
  EXPECT_TRUE(c.random_read.prefetch_full_chunkmap);
  EXPECT_TRUE(c.random_read.hold_layout_lease);
  EXPECT_EQ(c.client.reply_wait, "auto");
  EXPECT_TRUE(c.dss.empty());
}

TEST(ConfigDefaults, AreValid) { EXPECT_TRUE(ValidateConfig(Config{}).ok()); }

TEST(ConfigDefaults, EmptyTextGivesDefaults) {
  EXPECT_EQ(ParseOk(""), Config{});
  EXPECT_EQ(ParseOk("# only a comment\n\n"), Config{});
  EXPECT_EQ(ParseOk("[ec]\n[layout]\n"), Config{});
}

TEST(ConfigDefaults, UnsetKeysKeepDefaults) {
  const Config c = ParseOk("[ec]\nstripe_unit = \"128KiB\"\n");
  Config expected;
  expected.ec.stripe_unit = 128 * kKiB;
  EXPECT_EQ(c, expected);
}

// ---------------------------------------------------------------------------
// Accepted forms.

TEST(ConfigParse, SizeAcceptsUnitStringOrInteger) {
  EXPECT_EQ(ParseOk("[ec]\nstripe_unit = \"64KiB\"\n").ec.stripe_unit, 64 * kKiB);
  EXPECT_EQ(ParseOk("[ec]\nstripe_unit = \"64 KiB\"\n").ec.stripe_unit, 64 * kKiB);
  EXPECT_EQ(ParseOk("[ec]\nstripe_unit = 8192\n").ec.stripe_unit, 8192u);
  EXPECT_EQ(ParseOk("[random_io]\ncoalesce_gap_threshold = 0\n").random_io.coalesce_gap_threshold,
            0u);
  EXPECT_EQ(ParseOk("[fragment_cache]\ncapacity = \"1TiB\"\n").fragment_cache.capacity,
            1024 * kGiB);
}

TEST(ConfigParse, InlineTablesWork) {
  const Config c = ParseOk("ec = { stripe_unit = \"32KiB\" }\n");
  EXPECT_EQ(c.ec.stripe_unit, 32 * kKiB);
}

TEST(ConfigParse, DssListKeepsOrderAsIds) {
  const Config c = ParseOk(SixDss());
  ASSERT_EQ(c.dss.size(), 6u);
  EXPECT_EQ(c.dss[0].address, "10.0.0.1:9500");
  EXPECT_EQ(c.dss[0].data_dir, "/data/dss0");
  EXPECT_EQ(c.dss[5].address, "10.0.0.6:9500");
  EXPECT_EQ(c.dss[5].data_dir, "/data/dss5");
}

TEST(ConfigParse, DssDataDirIsOptional) {
  const Config c = ParseOk(
      "[layout]\nkind = \"replica\"\nreplicas = 1\n[[dss]]\naddress = \"a:1\"\n");
  ASSERT_EQ(c.dss.size(), 1u);
  EXPECT_EQ(c.dss[0].data_dir, "");
}

TEST(ConfigParse, BracketedIpv6Address) {
  EXPECT_EQ(ParseOk("[mds]\naddress = \"[::1]:9400\"\n").mds.address, "[::1]:9400");
}

// ---------------------------------------------------------------------------
// Refusals while parsing.

TEST(ConfigRefuses, DecimalUnit) {
  ExpectRefused("[ec]\nstripe_unit = \"64KB\"\n",
                {"ec.stripe_unit = \"64KB\"", kSrc, "KiB"});
  ExpectRefused("[fragment_cache]\ncapacity = \"1GB\"\n",
                {"fragment_cache.capacity = \"1GB\""});
  ExpectRefused("[random_io]\ncoalesce_gap_threshold = \"1k\"\n",
                {"random_io.coalesce_gap_threshold = \"1k\""});
  ExpectRefused("[layout]\nchunk_size = \"1.5MiB\"\n", {"layout.chunk_size = \"1.5MiB\""});
}

TEST(ConfigRefuses, NegativeSize) {
  ExpectRefused("[ec]\nstripe_unit = -4096\n", {"ec.stripe_unit = -4096", "negative"});
  ExpectRefused("[ec]\nstripe_unit = \"-64KiB\"\n", {"ec.stripe_unit = \"-64KiB\""});
}

TEST(ConfigRefuses, NegativeInteger) {
  ExpectRefused("[layout]\nm = -1\n", {"layout.m = -1", "negative"});
  ExpectRefused("[random_io]\nqueue_depth = -5\n", {"random_io.queue_depth = -5"});
}

TEST(ConfigRefuses, IntegerTooLargeFor32Bits) {
  ExpectRefused("[client]\nrpc_timeout_ms = 4294967296\n",
                {"client.rpc_timeout_ms = 4294967296"});
}

TEST(ConfigRefuses, ZeroStripeUnit) {
  ExpectRefused("[ec]\nstripe_unit = 0\n", {"ec.stripe_unit", "0B", "> 0", kSrc});
  ExpectRefused("[ec]\nstripe_unit = \"0KiB\"\n", {"ec.stripe_unit"});
}

TEST(ConfigRefuses, StripeUnitNotMultipleOfChecksumBlock) {
  ExpectRefused("[ec]\nstripe_unit = 6000\n", {"ec.stripe_unit = \"6000B\"", "4KiB"});
}

TEST(ConfigRefuses, KPlusMMoreThanDss) {
  ExpectRefused("[layout]\nk = 5\nm = 2\nchunk_size = \"5MiB\"\n" + SixDss(),
                {"layout k+m = 7 needs 7 DSS but [[dss]] lists 6", kSrc});
}

TEST(ConfigRefuses, ReplicasMoreThanDss) {
  ExpectRefused("[layout]\nkind = \"replica\"\nreplicas = 7\n" + SixDss(),
                {"layout.replicas = 7 needs 7 DSS but [[dss]] lists 6"});
}

TEST(ConfigRefuses, UnknownKey) {
  ExpectRefused("[ec]\nstripe = \"64KiB\"\n", {"unknown key 'ec.stripe' in test.toml"});
  ExpectRefused("[[dss]]\naddress = \"a:1\"\nport = 1\n", {"unknown key 'dss[0].port'"});
  ExpectRefused("[ec.extra]\nx = 1\n", {"unknown key 'ec.extra'"});
}

TEST(ConfigRefuses, UnknownSection) {
  ExpectRefused("[cache]\nenabled = true\n", {"unknown section 'cache' in test.toml"});
  ExpectRefused("stripe_unit = \"64KiB\"\n", {"'stripe_unit'", kSrc});
}

TEST(ConfigRefuses, WrongType) {
  ExpectRefused("[layout]\nk = \"4\"\n", {"layout.k = \"4\"", "expected an integer", "string"});
  ExpectRefused("[ec]\npartial_read_fast_path = 1\n",
                {"ec.partial_read_fast_path = 1", "expected a boolean"});
  ExpectRefused("[layout]\nkind = 3\n", {"layout.kind = 3", "expected a string"});
  ExpectRefused("[ec]\nstripe_unit = 65536.0\n", {"ec.stripe_unit = 65536", "float"});
  ExpectRefused("[ec]\nstripe_unit = true\n", {"ec.stripe_unit = true"});
  ExpectRefused("[mds]\naddress = [\"a:1\"]\n", {"mds.address", "array"});
  ExpectRefused("ec = 5\n", {"ec = 5", "expected a table"});
  ExpectRefused("[dss]\naddress = \"a:1\"\n", {"dss", "array of tables"});
  ExpectRefused("dss = [1, 2]\n", {"dss[0] = 1", "expected a table"});
}

TEST(ConfigRefuses, BadAddress) {
  ExpectRefused("[mds]\naddress = \"localhost\"\n", {"mds.address = \"localhost\"", "host:port"});
  ExpectRefused("[mds]\naddress = \"host:0\"\n", {"mds.address = \"host:0\"", "port"});
  ExpectRefused("[mds]\naddress = \"host:65536\"\n", {"mds.address = \"host:65536\""});
  ExpectRefused("[mds]\naddress = \"host:http\"\n", {"mds.address = \"host:http\""});
  ExpectRefused("[mds]\naddress = \":9400\"\n", {"mds.address = \":9400\""});
  ExpectRefused("[mds]\naddress = \"::1:9400\"\n", {"mds.address = \"::1:9400\"", "brackets"});
  ExpectRefused("[[dss]]\naddress = \"a b:1\"\n", {"dss[0].address = \"a b:1\""});
  ExpectRefused("[[dss]]\naddress = \"\"\n", {"dss[0].address = \"\""});
}

TEST(ConfigRefuses, DssWithoutAddress) {
  ExpectRefused("[[dss]]\ndata_dir = \"/d\"\n", {"dss[0] has no address", kSrc});
}

TEST(ConfigRefuses, DuplicateDssAddress) {
  ExpectRefused("[[dss]]\naddress = \"a:1\"\n[[dss]]\naddress = \"a:1\"\n",
                {"dss[1].address = \"a:1\"", "twice"});
}

TEST(ConfigRefuses, TomlSyntaxErrorNamesFileAndLine) {
  ExpectRefused("[ec]\nstripe_unit = \n", {"test.toml:2"});
  ExpectRefused("[ec]\nstripe_unit = 4096\nstripe_unit = 8192\n", {"test.toml:3"});
}

TEST(ConfigRefuses, ErrorsGiveTheLine) {
  ExpectRefused("[ec]\n\n\nstripe_unit = \"64KB\"\n", {"test.toml:4"});
}

// ---------------------------------------------------------------------------
// ValidateConfig on configs built in code.

TEST(ConfigValidate, ChunkSizeMustBeMultipleOfStripe) {
  Config c;
  c.layout.chunk_size = 0;
  ExpectInvalid(c, {"layout.chunk_size = \"0B\"", "> 0"});
  c.layout.chunk_size = 4 * kMiB;
  c.layout.k = 6;  // 6 * 64KiB does not divide 4MiB
  ExpectInvalid(c, {"layout.chunk_size = \"4MiB\"", "layout.k * ec.stripe_unit"});
  c.layout.chunk_size = 6 * kMiB;
  EXPECT_TRUE(ValidateConfig(c).ok());
}

TEST(ConfigValidate, ChunkSizeHugeStripeDoesNotOverflow) {
  Config c;
  c.ec.stripe_unit = (uint64_t{1} << 62);
  c.layout.chunk_size = (uint64_t{1} << 62);
  ExpectInvalid(c, {"layout.chunk_size"});
}

TEST(ConfigValidate, LayoutKind) {
  Config c;
  c.layout.kind = "raid5";
  ExpectInvalid(c, {"layout.kind = \"raid5\"", "must be \"ec\" or \"replica\""});
  c.layout.kind = "replica";
  EXPECT_TRUE(ValidateConfig(c).ok());
}

TEST(ConfigValidate, ShardCounts) {
  Config c;
  c.layout.k = 0;
  ExpectInvalid(c, {"layout.k = 0", ">= 1"});
  c = Config{};
  c.layout.k = 30;
  c.layout.m = 3;
  c.layout.chunk_size = 30 * 64 * kKiB;
  ExpectInvalid(c, {"layout k+m = 33", "<= 32"});
  c.layout.m = 2;
  EXPECT_TRUE(ValidateConfig(c).ok());
  c = Config{};
  c.layout.m = 0;
  EXPECT_TRUE(ValidateConfig(c).ok());
}

TEST(ConfigValidate, Replicas) {
  Config c;
  c.layout.replicas = 0;
  ExpectInvalid(c, {"layout.replicas = 0"});
  c.layout.replicas = 17;
  ExpectInvalid(c, {"layout.replicas = 17", "1..16"});
  c.layout.replicas = 16;
  EXPECT_TRUE(ValidateConfig(c).ok());
}

TEST(ConfigValidate, PlacementNeedsEnoughDss) {
  Config c = WithDss(5);
  ExpectInvalid(c, {"layout k+m = 6 needs 6 DSS but [[dss]] lists 5"});
  c = WithDss(6);
  EXPECT_TRUE(ValidateConfig(c).ok());
  c = WithDss(2);
  c.layout.kind = "replica";
  ExpectInvalid(c, {"layout.replicas = 3 needs 3 DSS but [[dss]] lists 2"});
  c = WithDss(3);
  c.layout.kind = "replica";
  EXPECT_TRUE(ValidateConfig(c).ok());
}

TEST(ConfigValidate, FragmentCache) {
  Config c;
  for (uint64_t bad : {uint64_t{0}, uint64_t{2048}, uint64_t{3 * 4096}, uint64_t{65535}}) {
    c.fragment_cache.grain_size = bad;
    ExpectInvalid(c, {"fragment_cache.grain_size", "power of two"});
  }
  c.fragment_cache.grain_size = 4096;
  EXPECT_TRUE(ValidateConfig(c).ok());
  c.fragment_cache.capacity = 0;
  ExpectInvalid(c, {"fragment_cache.capacity = \"0B\""});
  c.fragment_cache.enabled = false;
  EXPECT_TRUE(ValidateConfig(c).ok());
  c.fragment_cache.policy = "arc";
  ExpectInvalid(c, {"fragment_cache.policy = \"arc\"", "must be \"tinylfu\" or \"lru\""});
  c.fragment_cache.policy = "lru";
  EXPECT_TRUE(ValidateConfig(c).ok());
}

TEST(ConfigValidate, HotTier) {
  Config c;
  c.dss_hot_tier.capacity = 0;
  ExpectInvalid(c, {"dss_hot_tier.capacity = \"0B\""});
  c.dss_hot_tier.enabled = false;
  EXPECT_TRUE(ValidateConfig(c).ok());
  c.dss_hot_tier.policy = "LRU";
  ExpectInvalid(c, {"dss_hot_tier.policy = \"LRU\""});
}

TEST(ConfigValidate, AccessPlanAndRandomIo) {
  Config c;
  c.access_plan.default_prefetch_depth = 0;
  ExpectInvalid(c, {"access_plan.default_prefetch_depth = 0"});
  c = Config{};
  c.random_io.queue_depth = 0;
  ExpectInvalid(c, {"random_io.queue_depth = 0", "1..32768"});
  c.random_io.queue_depth = 32769;
  ExpectInvalid(c, {"random_io.queue_depth = 32769"});
  c.random_io.queue_depth = 32768;
  EXPECT_TRUE(ValidateConfig(c).ok());
  c.random_io.numa_pinning = "on";
  ExpectInvalid(c, {"random_io.numa_pinning = \"on\"", "must be \"auto\", \"manual\" or \"off\""});
  c.random_io.numa_pinning = "manual";  // manual names the poller CPUs
  ExpectInvalid(c, {"random_io.poller_cpus = \"\"", "manual"});
  c.random_io.poller_cpus = "1";
  for (const char* ok : {"auto", "manual", "off"}) {
    c.random_io.numa_pinning = ok;
    EXPECT_TRUE(ValidateConfig(c).ok()) << ok;
  }
}

TEST(ConfigValidate, Timeouts) {
  Config c;
  c.mds.heartbeat_timeout_ms = 0;
  ExpectInvalid(c, {"mds.heartbeat_timeout_ms = 0"});
  c = Config{};
  c.client.rpc_timeout_ms = 0;
  ExpectInvalid(c, {"client.rpc_timeout_ms = 0"});
}

TEST(ConfigValidate, ReplyWait) {
  Config c;
  c.client.reply_wait = "spin";
  ExpectInvalid(c, {"client.reply_wait = \"spin\"", "\"auto\", \"poll\" or \"sleep\""});
  for (const char* ok : {"auto", "poll", "sleep"}) {
    c.client.reply_wait = ok;
    EXPECT_TRUE(ValidateConfig(c).ok()) << ok;
  }
}

// ---------------------------------------------------------------------------
// Round trip through ConfigToToml.

// Every field differs from its default, so a field that ConfigToToml forgot
// to write would come back as the default and fail the comparison.
Config EveryFieldChanged() {
  Config c;
  c.mds = {"mds.example:7000", "/srv/mds \"quoted\" \\ dir", 1234};
  c.dss = {{"10.1.0.1:7100", "/srv/dss0"}, {"[fe80::1]:7101", "/srv/dss\t1"},
           {"dss-c:7102", ""}, {"dss-d:7103", "/srv/\xC3\xA9t\xC3\xA9"},
           {"dss-e:7104", "/e"}, {"dss-f:7105", "/f"}, {"dss-g:7106", "/g"},
           {"dss-h:7107", "/h"}};
  c.layout = {6 * 32 * kKiB * 3, "ec", 6, 2, 5};
  c.random_read = {false, false};
  c.ec = {32 * kKiB, false};
  c.fragment_cache = {false, 128 * kKiB, 3 * kGiB + 4096, "lru"};
  c.dss_hot_tier = {false, 1000, "lru"};
  c.access_plan = {false, 7, false};
  c.random_io = {77, false, 0, "manual", "0", "1,3"};
  c.client = {999, false, 1234, "sleep"};
  return c;
}

TEST(ConfigToToml, DefaultsRoundTrip) {
  const Config c;
  EXPECT_EQ(ParseOk(ConfigToToml(c)), c);
}

TEST(ConfigToToml, EveryFieldRoundTrips) {
  const Config c = EveryFieldChanged();
  ASSERT_TRUE(ValidateConfig(c).ok()) << ValidateConfig(c).ToString();
  const std::string text = ConfigToToml(c);
  const Config back = ParseOk(text);
  EXPECT_EQ(back, c) << text;
  // Spot checks, so a failure says which field broke.
  EXPECT_EQ(back.mds.data_dir, c.mds.data_dir);
  EXPECT_EQ(back.dss, c.dss);
  EXPECT_EQ(back.fragment_cache.capacity, c.fragment_cache.capacity);
  EXPECT_EQ(back.dss_hot_tier.capacity, 1000u);
  EXPECT_EQ(back.random_io.coalesce_gap_threshold, 0u);
}

TEST(ConfigToToml, WritesSizesWithUnits) {
  const std::string text = ConfigToToml(Config{});
  EXPECT_NE(text.find("stripe_unit = \"64KiB\""), std::string::npos) << text;
  EXPECT_NE(text.find("chunk_size = \"4MiB\""), std::string::npos) << text;
  EXPECT_NE(text.find("capacity = \"8GiB\""), std::string::npos) << text;
  EXPECT_NE(text.find("capacity = \"32GiB\""), std::string::npos) << text;
  EXPECT_EQ(text.find("[[dss]]"), std::string::npos) << text;
}

TEST(ConfigToToml, ReplicaLayoutRoundTrips) {
  Config c = WithDss(3);
  c.layout.kind = "replica";
  c.layout.replicas = 3;
  EXPECT_EQ(ParseOk(ConfigToToml(c)), c);
}

// ---------------------------------------------------------------------------
// Files.

class ConfigFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "config_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (const std::string& f : files_) ::unlink(f.c_str());
    ::rmdir(dir_.c_str());
  }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    files_.push_back(path);
    return path;
  }

  std::string dir_;
  std::vector<std::string> files_;
};

constexpr const char* kFullExample = R"(# /etc/rustfs/random-read.toml for a six-server cluster
[mds]
address = "10.0.0.10:9400"
data_dir = "/var/lib/rustfs/mds"
heartbeat_timeout_ms = 3000

[[dss]]
address = "10.0.0.1:9500"
data_dir = "/data/dss0"
[[dss]]
address = "10.0.0.2:9500"
data_dir = "/data/dss1"
[[dss]]
address = "10.0.0.3:9500"
data_dir = "/data/dss2"
[[dss]]
address = "10.0.0.4:9500"
data_dir = "/data/dss3"
[[dss]]
address = "10.0.0.5:9500"
data_dir = "/data/dss4"
[[dss]]
address = "10.0.0.6:9500"
data_dir = "/data/dss5"

[layout]
chunk_size = "8MiB"
kind = "ec"
k = 4
m = 2
replicas = 3

[random_read]
prefetch_full_chunkmap = true
hold_layout_lease = false

[ec]
stripe_unit = "128KiB"
partial_read_fast_path = true

[fragment_cache]
enabled = true
grain_size = "64KiB"
capacity = "16GiB"
policy = "lru"

[dss_hot_tier]
enabled = true
capacity = 68719476736   # 64GiB, as plain bytes
policy = "tinylfu"

[access_plan]
enabled = true
default_prefetch_depth = 128
auto_detect = false
kernel_handoff = false

[random_io]
queue_depth = 4096
io_poll = false
coalesce_gap_threshold = "32 KiB"
numa_pinning = "manual"
reserved_cores = "0"
poller_cpus = "1"

[client]
rpc_timeout_ms = 2500
)";

TEST_F(ConfigFileTest, FullExampleFile) {
  Result<Config> r = LoadConfigFile(Write("full.toml", kFullExample));
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  const Config& c = *r;
  EXPECT_EQ(c.mds.address, "10.0.0.10:9400");
  EXPECT_EQ(c.mds.data_dir, "/var/lib/rustfs/mds");
  EXPECT_EQ(c.mds.heartbeat_timeout_ms, 3000u);
  ASSERT_EQ(c.dss.size(), 6u);
  EXPECT_EQ(c.dss[3].address, "10.0.0.4:9500");
  EXPECT_EQ(c.dss[3].data_dir, "/data/dss3");
  EXPECT_EQ(c.layout.chunk_size, 8 * kMiB);
  EXPECT_EQ(c.layout.kind, "ec");
  EXPECT_EQ(c.layout.k, 4u);
  EXPECT_EQ(c.layout.m, 2u);
  EXPECT_EQ(c.layout.replicas, 3u);
  EXPECT_TRUE(c.random_read.prefetch_full_chunkmap);
  EXPECT_FALSE(c.random_read.hold_layout_lease);
  EXPECT_EQ(c.ec.stripe_unit, 128 * kKiB);
  EXPECT_TRUE(c.ec.partial_read_fast_path);
  EXPECT_TRUE(c.fragment_cache.enabled);
  EXPECT_EQ(c.fragment_cache.grain_size, 64 * kKiB);
  EXPECT_EQ(c.fragment_cache.capacity, 16 * kGiB);
  EXPECT_EQ(c.fragment_cache.policy, "lru");
  EXPECT_TRUE(c.dss_hot_tier.enabled);
  EXPECT_EQ(c.dss_hot_tier.capacity, 64 * kGiB);
  EXPECT_EQ(c.dss_hot_tier.policy, "tinylfu");
  EXPECT_TRUE(c.access_plan.enabled);
  EXPECT_EQ(c.access_plan.default_prefetch_depth, 128u);
  EXPECT_FALSE(c.access_plan.auto_detect);
  EXPECT_FALSE(c.access_plan.kernel_handoff);
  EXPECT_EQ(c.random_io.queue_depth, 4096u);
  EXPECT_FALSE(c.random_io.io_poll);
  EXPECT_EQ(c.random_io.coalesce_gap_threshold, 32 * kKiB);
  EXPECT_EQ(c.random_io.numa_pinning, "manual");
  EXPECT_EQ(c.random_io.reserved_cores, "0");
  EXPECT_EQ(c.random_io.poller_cpus, "1");
  EXPECT_EQ(c.client.rpc_timeout_ms, 2500u);

  // The written form of a real config round-trips too.
  EXPECT_EQ(ParseOk(ConfigToToml(c)), c);
}

TEST_F(ConfigFileTest, MissingFileNamesPath) {
  const std::string path = dir_ + "/nope.toml";
  Result<Config> r = LoadConfigFile(path);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), Code::kNotFound);
  EXPECT_NE(r.error().message().find(path), std::string::npos) << r.error().message();
}

TEST_F(ConfigFileTest, ErrorsNameThePath) {
  const std::string path = Write("bad.toml", "[ec]\nstripe_unit = \"64KB\"\n");
  Result<Config> r = LoadConfigFile(path);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find(path + ":2"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("ec.stripe_unit = \"64KB\""), std::string::npos);
}

TEST_F(ConfigFileTest, DirectoryIsRefused) {
  Result<Config> r = LoadConfigFile(dir_);
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find(dir_), std::string::npos) << r.error().message();
}

TEST_F(ConfigFileTest, LoadConfigUsesGivenPath) {
  Result<Config> r = LoadConfig(Write("given.toml", "[layout]\nk = 2\n"));
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->layout.k, 2u);
  EXPECT_FALSE(LoadConfig(dir_ + "/absent.toml").has_value());
}

TEST(LoadConfig, NoPathAndNoDefaultFileGivesDefaults) {
  struct stat st;
  if (::stat(kDefaultConfigPath, &st) == 0) {
    GTEST_SKIP() << kDefaultConfigPath << " exists on this machine";
  }
  Result<Config> r = LoadConfig("");
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(*r, Config{});
}

}  // namespace
}  // namespace rustfs

#include "common/config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <exception>
#include <limits>
#include <set>
#include <sstream>
#include <variant>

// The Debian package ships toml++ as a shared library built with exceptions,
// and toml++ puts the exception/no-exception APIs in different ABI
// namespaces, so TOML_EXCEPTIONS=0 would not link. Parse errors are caught
// in ParseConfig instead; nothing thrown by toml++ leaves this file.
#include <toml++/toml.h>

namespace rustfs {

namespace {

// ---------------------------------------------------------------------------
// Schema: one list of (section, key, field) drives parsing and ConfigToToml,
// so a key cannot be readable without also being written, or vice versa.

// Every uint64_t field in Config is a byte size; that is what lets those keys
// accept "64KiB" as well as a plain integer.
using Target = std::variant<bool*, uint32_t*, uint64_t*, std::string*>;

struct Field {
  std::string_view name;
  Target target;
};

struct Section {
  std::string_view name;
  std::vector<Field> fields;
};

// [[dss]] is a list, not a table, so it is handled apart from these.
constexpr std::string_view kDssSection = "dss";

std::vector<Section> Schema(Config& c) {
  return {
      {"cluster", {{"key_file", &c.cluster.key_file}}},
      {"mds",
       {{"address", &c.mds.address},
        {"data_dir", &c.mds.data_dir},
        {"heartbeat_timeout_ms", &c.mds.heartbeat_timeout_ms},
        {"lease_ms", &c.mds.lease_ms}}},
      {"layout",
       {{"chunk_size", &c.layout.chunk_size},
        {"kind", &c.layout.kind},
        {"k", &c.layout.k},
        {"m", &c.layout.m},
        {"replicas", &c.layout.replicas},
        {"min_write_shards", &c.layout.min_write_shards}}},
      {"repair",
       {{"grace_ms", &c.repair.grace_ms},
        {"max_bytes_per_s", &c.repair.max_bytes_per_s},
        {"scrub_interval_s", &c.repair.scrub_interval_s}}},
      {"random_read",
       {{"prefetch_full_chunkmap", &c.random_read.prefetch_full_chunkmap},
        {"hold_layout_lease", &c.random_read.hold_layout_lease}}},
      {"ec",
       {{"stripe_unit", &c.ec.stripe_unit},
        {"partial_read_fast_path", &c.ec.partial_read_fast_path}}},
      {"fragment_cache",
       {{"enabled", &c.fragment_cache.enabled},
        {"grain_size", &c.fragment_cache.grain_size},
        {"capacity", &c.fragment_cache.capacity},
        {"policy", &c.fragment_cache.policy}}},
      {"dss_hot_tier",
       {{"enabled", &c.dss_hot_tier.enabled},
        {"capacity", &c.dss_hot_tier.capacity},
        {"policy", &c.dss_hot_tier.policy}}},
      {"access_plan",
       {{"enabled", &c.access_plan.enabled},
        {"default_prefetch_depth", &c.access_plan.default_prefetch_depth},
        {"max_prefetch_bytes", &c.access_plan.max_prefetch_bytes},
        {"auto_detect", &c.access_plan.auto_detect},
        {"kernel_handoff", &c.access_plan.kernel_handoff}}},
      {"emulation", {{"dss_reply_delay_us", &c.emulation.dss_reply_delay_us}}},
      {"random_io",
       {{"queue_depth", &c.random_io.queue_depth},
        {"io_poll", &c.random_io.io_poll},
        {"coalesce_gap_threshold", &c.random_io.coalesce_gap_threshold},
        {"numa_pinning", &c.random_io.numa_pinning},
        {"reserved_cores", &c.random_io.reserved_cores},
        {"poller_cpus", &c.random_io.poller_cpus}}},
      {"fuse", {{"io_uring", &c.fuse.io_uring}, {"ring_depth", &c.fuse.ring_depth}}},
      {"client",
       {{"rpc_timeout_ms", &c.client.rpc_timeout_ms},
        {"hedge_reads", &c.client.hedge_reads},
        {"hedge_min_us", &c.client.hedge_min_us},
        {"reply_wait", &c.client.reply_wait}}},
  };
}

std::vector<Field> DssFields(DssEndpointConfig& d) {
  return {{"address", &d.address}, {"data_dir", &d.data_dir}};
}

template <class T>
const T* FindByName(const std::vector<T>& items, std::string_view name) {
  for (const T& item : items) {
    if (item.name == name) return &item;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------
// Rendering values for TOML output and for error messages.

void AppendUnicodeEscape(std::string& out, unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof(buf), "\\u%04X", c);
  out += buf;
}

// A TOML basic string. Non-ASCII bytes pass through: TOML text is UTF-8.
std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\f': out += "\\f"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7F) {
          AppendUnicodeEscape(out, c);
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

std::string TypeName(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    case toml::node_type::none: break;
  }
  return "nothing";
}

// The value as the user wrote it, near enough to find it in the file.
std::string Repr(const toml::node& n) {
  if (n.is_table()) return "{...}";
  if (n.is_array()) return "[...]";
  if (const auto* s = n.as_string()) return Quote(s->get());
  std::ostringstream os;
  n.visit([&os](const auto& v) { os << v; });
  return os.str();
}

// ---------------------------------------------------------------------------
// Decoding one TOML value into one field. The returned status carries only
// the reason; the caller adds the key, the value and where it is.

Status ExpectedType(std::string_view what, const toml::node& n) {
  return InvalidArgument("expected " + std::string(what) + ", got " + TypeName(n));
}

Status Decode(const toml::node& n, bool* out) {
  const auto* v = n.as_boolean();
  if (v == nullptr) return ExpectedType("a boolean", n);
  *out = v->get();
  return Status::Ok();
}

Status Decode(const toml::node& n, uint32_t* out) {
  const auto* v = n.as_integer();
  if (v == nullptr) return ExpectedType("an integer", n);
  const int64_t x = v->get();
  if (x < 0) return InvalidArgument("must not be negative");
  if (x > std::numeric_limits<uint32_t>::max()) {
    return InvalidArgument("must be at most " +
                           std::to_string(std::numeric_limits<uint32_t>::max()));
  }
  *out = static_cast<uint32_t>(x);
  return Status::Ok();
}

// Byte sizes: "64KiB" or an integer number of bytes.
Status Decode(const toml::node& n, uint64_t* out) {
  if (const auto* s = n.as_string()) {
    Result<uint64_t> bytes = ParseByteSize(s->get());
    if (!bytes) return bytes.error();
    *out = *bytes;
    return Status::Ok();
  }
  if (const auto* i = n.as_integer()) {
    if (i->get() < 0) return InvalidArgument("a size must not be negative");
    *out = static_cast<uint64_t>(i->get());
    return Status::Ok();
  }
  return ExpectedType("a size such as \"64KiB\" or an integer number of bytes", n);
}

Status Decode(const toml::node& n, std::string* out) {
  const auto* v = n.as_string();
  if (v == nullptr) return ExpectedType("a string", n);
  *out = v->get();
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Walking the document.

class DocumentReader {
 public:
  explicit DocumentReader(std::string_view source) : source_(source) {}

  Status Read(const toml::table& doc, Config& cfg) const {
    std::vector<Section> schema = Schema(cfg);
    for (auto&& [key, node] : doc) {
      if (key.str() == kDssSection) {
        RUSTFS_RETURN_IF_ERROR(ReadDssList(node, cfg.dss));
        continue;
      }
      const Section* section = FindByName(schema, key.str());
      if (section == nullptr) {
        return InvalidArgument("unknown section '" + std::string(key.str()) + "' in " +
                               Where(key.source()));
      }
      RUSTFS_RETURN_IF_ERROR(ReadTable(std::string(key.str()), section->fields, node));
    }
    return Status::Ok();
  }

 private:
  std::string Where(const toml::source_region& region) const {
    std::string where(source_);
    if (region.begin.line > 0) where += ":" + std::to_string(region.begin.line);
    return where;
  }

  Status ValueError(const std::string& path, const toml::node& n, std::string_view why) const {
    return InvalidArgument(Where(n.source()) + ": " + path + " = " + Repr(n) + ": " +
                           std::string(why));
  }

  // `prefix` is the dotted path of the table ("ec", "dss[2]").
  Status ReadTable(const std::string& prefix, const std::vector<Field>& fields,
                   const toml::node& node) const {
    const toml::table* table = node.as_table();
    if (table == nullptr) return ValueError(prefix, node, "expected a table, got " + TypeName(node));
    for (auto&& [key, value] : *table) {
      const std::string path = prefix + "." + std::string(key.str());
      const Field* field = FindByName(fields, key.str());
      if (field == nullptr) {
        return InvalidArgument("unknown key '" + path + "' in " + Where(key.source()));
      }
      Status st = std::visit([&](auto* out) { return Decode(value, out); }, field->target);
      if (!st.ok()) return ValueError(path, value, st.message());
    }
    return Status::Ok();
  }

  Status ReadDssList(const toml::node& node, std::vector<DssEndpointConfig>& out) const {
    const toml::array* list = node.as_array();
    if (list == nullptr) {
      return ValueError(std::string(kDssSection), node,
                        "expected an array of tables ([[dss]]), got " + TypeName(node));
    }
    out.clear();
    for (size_t i = 0; i < list->size(); ++i) {
      const std::string prefix = std::string(kDssSection) + "[" + std::to_string(i) + "]";
      DssEndpointConfig dss;
      RUSTFS_RETURN_IF_ERROR(ReadTable(prefix, DssFields(dss), (*list)[i]));
      // The list index is the DSS id, so an entry cannot be skipped; an
      // entry without an address could never be dialed. data_dir may be
      // empty: only the DSS itself needs it, and clients share this file.
      if (!(*list)[i].as_table()->contains("address")) {
        return InvalidArgument(Where((*list)[i].source()) + ": " + prefix +
                               " has no address");
      }
      out.push_back(std::move(dss));
    }
    return Status::Ok();
  }

  std::string_view source_;
};

// ---------------------------------------------------------------------------
// Validation helpers. Each message starts "key = value: ".

std::string IntKv(std::string_view key, uint64_t v) {
  return std::string(key) + " = " + std::to_string(v);
}
std::string SizeKv(std::string_view key, uint64_t v) {
  return std::string(key) + " = " + Quote(FormatByteSize(v));
}
std::string StrKv(std::string_view key, std::string_view v) {
  return std::string(key) + " = " + Quote(v);
}
Status Invalid(const std::string& key_value, std::string_view why) {
  return InvalidArgument(key_value + ": " + std::string(why));
}

bool IsAllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Empty when fine, else what is wrong. Accepts "host:port" and
// "[v6addr]:port"; a bare IPv6 address is refused because its last colon
// would silently be read as the port separator.
std::string AddressProblem(std::string_view address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string_view::npos) return "expected host:port";
  const std::string_view host = address.substr(0, colon);
  const std::string_view port = address.substr(colon + 1);
  if (host.empty()) return "missing host before ':'";
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return "unterminated [IPv6] host";
  } else if (host.find(':') != std::string_view::npos) {
    return "an IPv6 host must be in brackets, e.g. [::1]:9400";
  }
  for (char c : host) {
    if (static_cast<unsigned char>(c) <= ' ') return "host contains whitespace";
  }
  uint32_t number = 0;
  if (!IsAllDigits(port) || port.size() > 5 ||
      std::from_chars(port.data(), port.data() + port.size(), number).ec != std::errc() ||
      number < 1 || number > 65535) {
    return "port must be a number in 1..65535";
  }
  return "";
}

Status ValidateAddress(std::string_view key, const std::string& address) {
  const std::string problem = AddressProblem(address);
  if (problem.empty()) return Status::Ok();
  return Invalid(StrKv(key, address), problem);
}

// A key whose value must be one of `choices` (at least two); the message
// lists them: must be "a", "b" or "c".
Status ValidateOneOf(std::string_view key, const std::string& value,
                     std::initializer_list<std::string_view> choices) {
  for (std::string_view c : choices) {
    if (value == c) return Status::Ok();
  }
  std::string why = "must be ";
  size_t i = 0;
  for (std::string_view c : choices) {
    if (i > 0) why += i + 1 == choices.size() ? " or " : ", ";
    why += "\"" + std::string(c) + "\"";
    i++;
  }
  return Invalid(StrKv(key, value), why);
}

Status ValidatePolicy(std::string_view key, const std::string& policy) {
  return ValidateOneOf(key, policy, {"tinylfu", "lru"});
}

Status ValidatePositiveMs(std::string_view key, uint32_t ms) {
  if (ms > 0) return Status::Ok();
  return Invalid(IntKv(key, ms), "must be > 0");
}

Status ValidateMds(const Config::Mds& mds) {
  RUSTFS_RETURN_IF_ERROR(ValidateAddress("mds.address", mds.address));
  RUSTFS_RETURN_IF_ERROR(ValidatePositiveMs("mds.lease_ms", mds.lease_ms));
  return ValidatePositiveMs("mds.heartbeat_timeout_ms", mds.heartbeat_timeout_ms);
}

Status ValidateDssList(const std::vector<DssEndpointConfig>& dss) {
  std::set<std::string> seen;
  for (size_t i = 0; i < dss.size(); ++i) {
    const std::string key = "dss[" + std::to_string(i) + "].address";
    RUSTFS_RETURN_IF_ERROR(ValidateAddress(key, dss[i].address));
    // Two ids on one address would make placement count one server twice.
    if (!seen.insert(dss[i].address).second) {
      return Invalid(StrKv(key, dss[i].address), "listed twice in [[dss]]");
    }
  }
  return Status::Ok();
}

Status ValidateEc(const Config::Ec& ec) {
  if (ec.stripe_unit == 0) return Invalid(SizeKv("ec.stripe_unit", 0), "must be > 0");
  if (ec.stripe_unit % Config::kChecksumBlock != 0) {
    return Invalid(SizeKv("ec.stripe_unit", ec.stripe_unit),
                   "must be a multiple of the 4KiB checksum block");
  }
  return Status::Ok();
}

Status ValidateShardCounts(const Config::Layout& layout) {
  RUSTFS_RETURN_IF_ERROR(ValidateOneOf("layout.kind", layout.kind, {"ec", "replica"}));
  if (layout.k < 1) return Invalid(IntKv("layout.k", layout.k), "must be >= 1");
  const uint64_t width = uint64_t{layout.k} + layout.m;
  if (width > 32) {
    return Invalid("layout k+m = " + std::to_string(width) + " (k = " +
                       std::to_string(layout.k) + ", m = " + std::to_string(layout.m) + ")",
                   "must be <= 32");
  }
  if (layout.replicas < 1 || layout.replicas > 16) {
    return Invalid(IntKv("layout.replicas", layout.replicas), "must be in 1..16");
  }
  if (layout.min_write_shards != 0) {
    const bool ec = layout.kind == "ec";
    const uint32_t lo = ec ? layout.k : 1, hi = ec ? layout.k + layout.m : layout.replicas;
    if (layout.min_write_shards < lo || layout.min_write_shards > hi)
      return Invalid(IntKv("layout.min_write_shards", layout.min_write_shards),
                     "must be 0 (the default) or in " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return Status::Ok();
}

Status ValidateChunkSize(const Config::Layout& layout, const Config::Ec& ec) {
  if (layout.chunk_size == 0) return Invalid(SizeKv("layout.chunk_size", 0), "must be > 0");
  uint64_t stripe = 0;
  if (__builtin_mul_overflow(uint64_t{layout.k}, ec.stripe_unit, &stripe) ||
      layout.chunk_size % stripe != 0) {
    return Invalid(SizeKv("layout.chunk_size", layout.chunk_size),
                   "must be a multiple of layout.k * ec.stripe_unit = " +
                       std::to_string(layout.k) + " * " + FormatByteSize(ec.stripe_unit));
  }
  return Status::Ok();
}

// Only checked when [[dss]] is listed: a client or tool may carry a layout
// without knowing the cluster's servers.
Status ValidatePlacement(const Config::Layout& layout, size_t dss_count) {
  if (dss_count == 0) return Status::Ok();
  const std::string listed = " DSS but [[dss]] lists " + std::to_string(dss_count);
  if (layout.kind == "ec") {
    const uint64_t width = uint64_t{layout.k} + layout.m;
    if (width > dss_count) {
      return InvalidArgument("layout k+m = " + std::to_string(width) + " needs " +
                             std::to_string(width) + listed);
    }
  } else if (layout.replicas > dss_count) {
    return InvalidArgument("layout.replicas = " + std::to_string(layout.replicas) +
                           " needs " + std::to_string(layout.replicas) + listed);
  }
  return Status::Ok();
}

Status ValidateFragmentCache(const Config::FragmentCache& fc) {
  const uint64_t g = fc.grain_size;
  if (g < 4096 || (g & (g - 1)) != 0) {
    return Invalid(SizeKv("fragment_cache.grain_size", g),
                   "must be a power of two >= 4KiB");
  }
  if (fc.enabled && fc.capacity == 0) {
    return Invalid(SizeKv("fragment_cache.capacity", 0), "must be > 0 when enabled");
  }
  return ValidatePolicy("fragment_cache.policy", fc.policy);
}

Status ValidateHotTier(const Config::DssHotTier& hot) {
  if (hot.enabled && hot.capacity == 0) {
    return Invalid(SizeKv("dss_hot_tier.capacity", 0), "must be > 0 when enabled");
  }
  return ValidatePolicy("dss_hot_tier.policy", hot.policy);
}

Status ValidateAccessPlan(const Config::AccessPlan& plan) {
  if (plan.default_prefetch_depth >= 1) return Status::Ok();
  return Invalid(IntKv("access_plan.default_prefetch_depth", plan.default_prefetch_depth),
                 "must be >= 1");
}

Status ValidateRandomIo(const Config::RandomIo& io) {
  if (io.queue_depth < 1 || io.queue_depth > 32768) {
    return Invalid(IntKv("random_io.queue_depth", io.queue_depth), "must be in 1..32768");
  }
  const std::string& numa = io.numa_pinning;
  RUSTFS_RETURN_IF_ERROR(ValidateOneOf("random_io.numa_pinning", numa, {"auto", "manual", "off"}));
  if (numa == "manual" && io.poller_cpus.empty()) {
    return Invalid(StrKv("random_io.poller_cpus", io.poller_cpus),
                   "numa_pinning = \"manual\" needs a CPU list (DSS i pins to its i-th CPU)");
  }
  return Status::Ok();
}

Status ValidateFuse(const Config::Fuse& f) {
  if (f.ring_depth < 1 || f.ring_depth > 1024) {
    return Invalid(IntKv("fuse.ring_depth", f.ring_depth), "must be in 1..1024");
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Writing TOML.

std::string Encode(bool v) { return v ? "true" : "false"; }
std::string Encode(uint32_t v) { return std::to_string(v); }
std::string Encode(uint64_t v) { return Quote(FormatByteSize(v)); }
std::string Encode(const std::string& v) { return Quote(v); }

void AppendFields(std::string& out, const std::vector<Field>& fields) {
  for (const Field& f : fields) {
    out += std::string(f.name) + " = " +
           std::visit([](auto* p) { return Encode(*p); }, f.target) + "\n";
  }
}

// ---------------------------------------------------------------------------
// Files.

Result<std::string> ReadWholeFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Err(Status::FromErrno(errno, "open config file " + path));
  std::string data;
  char buf[16 * 1024];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return Err(Status::FromErrno(err, "read config file " + path));
    }
    if (n == 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return data;
}

}  // namespace

Result<Config> ParseConfig(std::string_view toml_text, std::string_view source) {
  const std::string src = source.empty() ? std::string("<config>") : std::string(source);
  try {
    toml::table doc;
    try {
      doc = toml::parse(toml_text, std::string_view(src));
    } catch (const toml::parse_error& e) {
      const toml::source_position& at = e.source().begin;
      return Err(InvalidArgument(src + ":" + std::to_string(at.line) + ":" +
                                 std::to_string(at.column) + ": " +
                                 std::string(e.description())));
    }
    Config cfg;
    Status st = DocumentReader(src).Read(doc, cfg);
    if (!st.ok()) return Err(std::move(st));
    st = ValidateConfig(cfg);
    if (!st.ok()) return Err(InvalidArgument(src + ": " + st.message()));
    return cfg;
  } catch (const std::exception& e) {
    // Only allocation failure is expected here; keep the no-throw promise.
    return Err(Internal(src + ": " + e.what()));
  }
}

Result<Config> LoadConfigFile(const std::string& path) {
  Result<std::string> text = ReadWholeFile(path);
  if (!text) return Err(text.error());
  return ParseConfig(*text, path);
}

Result<Config> LoadConfig(const std::string& path_or_empty) {
  if (!path_or_empty.empty()) return LoadConfigFile(path_or_empty);
  struct stat st;
  if (::stat(kDefaultConfigPath, &st) == 0) return LoadConfigFile(kDefaultConfigPath);
  // A default file that exists but cannot be checked (EACCES) must not be
  // silently replaced by defaults: the cluster would run with other settings.
  if (errno != ENOENT && errno != ENOTDIR) {
    return Err(Status::FromErrno(errno, std::string("stat ") + kDefaultConfigPath));
  }
  return Config{};
}

Status ValidateConfig(const Config& cfg) {
  RUSTFS_RETURN_IF_ERROR(ValidateMds(cfg.mds));
  RUSTFS_RETURN_IF_ERROR(ValidateDssList(cfg.dss));
  RUSTFS_RETURN_IF_ERROR(ValidateEc(cfg.ec));
  RUSTFS_RETURN_IF_ERROR(ValidateShardCounts(cfg.layout));
  RUSTFS_RETURN_IF_ERROR(ValidateChunkSize(cfg.layout, cfg.ec));
  RUSTFS_RETURN_IF_ERROR(ValidatePlacement(cfg.layout, cfg.dss.size()));
  RUSTFS_RETURN_IF_ERROR(ValidateFragmentCache(cfg.fragment_cache));
  RUSTFS_RETURN_IF_ERROR(ValidateHotTier(cfg.dss_hot_tier));
  RUSTFS_RETURN_IF_ERROR(ValidateAccessPlan(cfg.access_plan));
  RUSTFS_RETURN_IF_ERROR(ValidateRandomIo(cfg.random_io));
  RUSTFS_RETURN_IF_ERROR(ValidateFuse(cfg.fuse));
  RUSTFS_RETURN_IF_ERROR(ValidatePositiveMs("repair.grace_ms", cfg.repair.grace_ms));
  if (cfg.repair.max_bytes_per_s == 0)
    return Invalid(SizeKv("repair.max_bytes_per_s", 0), "must be > 0");
  RUSTFS_RETURN_IF_ERROR(ValidateOneOf("client.reply_wait", cfg.client.reply_wait, {"auto", "poll", "sleep"}));
  return ValidatePositiveMs("client.rpc_timeout_ms", cfg.client.rpc_timeout_ms);
}

std::string ConfigToToml(const Config& cfg) {
  // Schema() binds mutable pointers; a copy keeps `cfg` const.
  Config copy = cfg;
  std::vector<Section> schema = Schema(copy);
  std::string out = "# rustfs configuration\n";
  for (const Section& section : schema) {
    out += "\n[" + std::string(section.name) + "]\n";
    AppendFields(out, section.fields);
    // [[dss]] right after [mds]: the cluster's servers read best together.
    if (section.name != "mds") continue;
    for (DssEndpointConfig& dss : copy.dss) {
      out += "\n[[" + std::string(kDssSection) + "]]\n";
      AppendFields(out, DssFields(dss));
    }
  }
  return out;
}

}  // namespace rustfs

#include "ec/rs_codec.h"

#include <isa-l/erasure_code.h>

#include <algorithm>
#include <cassert>
#include <climits>
#include <string>

namespace rustfs::ec {

namespace {

// ISA-L takes lengths as int; longer buffers are coded in pieces. Any split
// works because RS coding is byte-position independent.
constexpr size_t kMaxPass = size_t{1} << 30;
static_assert(kMaxPass <= static_cast<size_t>(INT_MAX));

// Bounds memory if a caller cycles through many erasure patterns; past this
// the tables are built per call. Entries are never erased, which is what makes
// it safe to use one after dropping the lock.
constexpr size_t kMaxCachedPatterns = 4096;

// Runs ec_encode_data over [0, len) in passes ISA-L's int length can express.
void RunCoder(size_t len, int k, int rows, const uint8_t* tables, const uint8_t* const* src,
              uint8_t* const* dst) {
  uint8_t* srcp[32];
  uint8_t* dstp[32];
  for (size_t done = 0; done < len;) {
    const size_t n = std::min(len - done, kMaxPass);
    // ISA-L's API is not const-correct; it only reads sources and tables.
    for (int i = 0; i < k; ++i) srcp[i] = const_cast<uint8_t*>(src[i]) + done;
    for (int i = 0; i < rows; ++i) dstp[i] = dst[i] + done;
    ec_encode_data(static_cast<int>(n), k, rows, const_cast<uint8_t*>(tables), srcp, dstp);
    done += n;
  }
}

}  // namespace

Result<std::shared_ptr<RsCodec>> RsCodec::Create(uint32_t k, uint32_t m) {
  if (k < 1 || k + m > 32 || m > 32) {
    return Err(InvalidArgument("RS geometry k=" + std::to_string(k) + " m=" + std::to_string(m) +
                               " out of range (need k >= 1, k + m <= 32)"));
  }
  // The constructor is private, so make_shared cannot reach it.
  return std::shared_ptr<RsCodec>(new RsCodec(k, m));
}

Result<std::shared_ptr<RsCodec>> RsCodec::Shared(uint32_t k, uint32_t m) {
  static std::mutex mu;
  static auto* codecs = new std::map<std::pair<uint32_t, uint32_t>, std::shared_ptr<RsCodec>>;  // never freed
  std::lock_guard lk(mu);
  auto& c = (*codecs)[{k, m}];
  if (!c) {
    auto r = Create(k, m);
    if (!r) {
      codecs->erase({k, m});
      return r;
    }
    c = *r;
  }
  return c;
}

RsCodec::RsCodec(uint32_t k, uint32_t m) : k_(k), m_(m) {
  const int rows = static_cast<int>(k + m);
  encode_matrix_.resize(static_cast<size_t>(rows) * k);
  // Top k rows are the identity (systematic code); the parity rows are the
  // Cauchy matrix 1 / (i ^ j), whose every square submatrix is invertible.
  gf_gen_cauchy1_matrix(encode_matrix_.data(), rows, static_cast<int>(k));
  if (m > 0) {
    encode_tables_.resize(32u * k * m);
    ec_init_tables(static_cast<int>(k), static_cast<int>(m), &encode_matrix_[k * k],
                   encode_tables_.data());
  }
}

void RsCodec::Encode(std::span<const uint8_t* const> data, std::span<uint8_t* const> parity,
                     size_t len) const {
  assert(data.size() == k_);
  assert(parity.size() == m_);
  if (m_ == 0 || len == 0) return;
  RunCoder(len, static_cast<int>(k_), static_cast<int>(m_), encode_tables_.data(), data.data(),
           parity.data());
}

Status RsCodec::Reconstruct(std::span<const uint8_t* const> shards, std::span<const uint32_t> want,
                            std::span<uint8_t* const> out, size_t len) const {
  const uint32_t n = k_ + m_;
  if (shards.size() != n) {
    return InvalidArgument("Reconstruct: got " + std::to_string(shards.size()) +
                           " shard slots, want " + std::to_string(n));
  }
  if (out.size() != want.size()) {
    return InvalidArgument("Reconstruct: " + std::to_string(want.size()) + " wanted shards but " +
                           std::to_string(out.size()) + " output buffers");
  }
  uint64_t want_mask = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const uint32_t w = want[i];
    if (w >= n) {
      return InvalidArgument("Reconstruct: wanted shard " + std::to_string(w) + " out of range");
    }
    if (shards[w] != nullptr) {
      return InvalidArgument("Reconstruct: wanted shard " + std::to_string(w) + " is not missing");
    }
    if (want_mask & (uint64_t{1} << w)) {
      return InvalidArgument("Reconstruct: shard " + std::to_string(w) + " wanted twice");
    }
    if (out[i] == nullptr && len > 0) {
      return InvalidArgument("Reconstruct: null output buffer for shard " + std::to_string(w));
    }
    want_mask |= uint64_t{1} << w;
  }

  // The first k available shards are the sources.
  uint32_t src_idx[32];
  uint32_t nsrc = 0;
  uint64_t src_mask = 0;
  for (uint32_t i = 0; i < n && nsrc < k_; ++i) {
    if (shards[i] != nullptr) {
      src_idx[nsrc++] = i;
      src_mask |= uint64_t{1} << i;
    }
  }
  if (nsrc < k_) {
    return Unavailable("Reconstruct: only " + std::to_string(nsrc) + " of " + std::to_string(n) +
                       " shards available, need " + std::to_string(k_));
  }
  if (want.empty() || len == 0) return Status::Ok();

  // Tables are built for the wanted shards in ascending index order, so one
  // cache entry serves every ordering of the same `want` set.
  uint32_t wanted_sorted[32];
  uint32_t nwant = 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (want_mask & (uint64_t{1} << i)) wanted_sorted[nwant++] = i;
  }

  const std::pair<uint64_t, uint64_t> key{src_mask, want_mask};
  const std::vector<uint8_t>* tables = nullptr;
  std::vector<uint8_t> local_tables;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = decode_cache_.find(key);
    if (it != decode_cache_.end()) tables = &it->second;
  }
  if (tables == nullptr) {
    // Built outside the lock: inversion is O(k^3) and other patterns should not
    // wait for it. Two threads racing on one new pattern just build it twice.
    const uint32_t k = k_;
    std::vector<uint8_t> sub(k * k), inv(k * k);
    for (uint32_t r = 0; r < k; ++r) {
      std::copy_n(&encode_matrix_[src_idx[r] * k], k, &sub[r * k]);
    }
    if (gf_invert_matrix(sub.data(), inv.data(), static_cast<int>(k)) != 0) {
      return Internal("Reconstruct: source submatrix is singular");  // impossible for Cauchy
    }
    // inv maps the sources back to the data shards. A wanted data shard is one
    // row of inv; a wanted parity shard is its encode row applied to that data.
    std::vector<uint8_t> rows(nwant * k);
    for (uint32_t w = 0; w < nwant; ++w) {
      const uint32_t idx = wanted_sorted[w];
      uint8_t* row = &rows[w * k];
      if (idx < k) {
        std::copy_n(&inv[idx * k], k, row);
      } else {
        const uint8_t* enc = &encode_matrix_[idx * k];
        for (uint32_t c = 0; c < k; ++c) {
          uint8_t acc = 0;
          for (uint32_t j = 0; j < k; ++j) acc ^= gf_mul(enc[j], inv[j * k + c]);
          row[c] = acc;
        }
      }
    }
    local_tables.resize(32u * k * nwant);
    ec_init_tables(static_cast<int>(k), static_cast<int>(nwant), rows.data(), local_tables.data());

    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = decode_cache_.find(key); it != decode_cache_.end()) {
      tables = &it->second;
    } else if (decode_cache_.size() < kMaxCachedPatterns) {
      tables = &decode_cache_.emplace(key, std::move(local_tables)).first->second;
    } else {
      tables = &local_tables;
    }
  }

  const uint8_t* srcs[32];
  for (uint32_t r = 0; r < k_; ++r) srcs[r] = shards[src_idx[r]];
  uint8_t* dsts[32];
  for (uint32_t w = 0; w < nwant; ++w) {
    const uint32_t idx = wanted_sorted[w];
    const auto pos = std::find(want.begin(), want.end(), idx) - want.begin();
    dsts[w] = out[pos];
  }
  RunCoder(len, static_cast<int>(k_), static_cast<int>(nwant), tables->data(), srcs, dsts);
  return Status::Ok();
}

}  // namespace rustfs::ec

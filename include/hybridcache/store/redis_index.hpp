#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `redis_segment_index`: the segment index shared by every serving node, kept in Redis
/// (HYPIC's gateway reusing segments cached on other prefill nodes; SparseX's segments shared
/// across engine instances). Optional component: link `hybridcache::redis` (hiredis + OpenSSL).
/// Not part of the umbrella headers.
///
/// **Keys.** Every node holds the same deployment secret S (at least 16 bytes). A segment's key
/// is the segment key of keys.hpp under HMAC-SHA-256, K = trunc128(HMAC(S, "HCK1" ‖ kind ‖
/// len(ns) ‖ ns ‖ n ‖ tokens)); a prefix block's key is the chained key h_i of keys.hpp under the
/// same policy. The Redis key is
///
///     prefix ‖ tag(ns) ‖ ":" ‖ K          (K as its 16 raw bytes)
///     tag(ns) = "t" ‖ hex(trunc64(HMAC(S, "HCT1" ‖ len(tenant) ‖ tenant)))   if ns has a tenant
///             = "s"                                                           otherwise
///
/// so neither token ids nor tenant names appear in the key space, and all keys of one tenant
/// share the prefix `prefix ‖ tag(ns) ‖ ":"` — the pattern a Redis ACL user is limited to
/// (`acl_setuser_command`).
///
/// **Records** (the value, 45 bytes, integers little-endian):
///
///     0   1  format version = 1
///     1   4  node id           5   4  pool
///     9   8  offset            17  8  bytes          25  4  token count
///     29  16 tag = trunc128(HMAC(S_v, "HCR1" ‖ K ‖ record[0, 29)))
///
/// with S_v = trunc128(HMAC(S, "HCRV1 record tag key")) a second key derived from S. A lookup
/// reports a hit only if the record has the right length and version, its tag verifies for the
/// key that was looked up (constant-time compare), and its token count is the query's. A record
/// written by someone without S, or copied from another key (another tenant's, another block's),
/// is therefore a miss (counted in `stats().rejected`), never a wrong hit.
///
/// **Operations.** `insert` is first-writer-wins (`SET key record NX PX ttl`); `refresh` renews
/// the TTL (`PEXPIRE`); `erase` deletes (`DEL`); `find` reads (`GET`). The `_chain` variants do
/// the same for a request's whole block chain in ONE pipelined round trip.
///
/// **Failure semantics.** A refused or lost connection, a timeout, a reply of the wrong shape, a
/// partial pipeline or a denied command throws `redis_error` (a `hybridcache::error`) and returns
/// nothing partial: the caller falls back to its local index. Every socket operation is bounded
/// by `connect_timeout`/`io_timeout`, and waiting for a pooled connection by `io_timeout`, so no
/// call hangs. A connection that failed is closed, never reused. After a server restart the idle
/// pooled connections are stale: the first I/O failure on a reused connection closes all idle
/// ones and retries the call once on a fresh connection (every operation is idempotent), so a
/// restart or `FLUSHALL` shows up as misses, not errors. Replies are bounded before hiredis
/// builds them: an array header announcing more than `detail::redis_max_reply_elements` (64)
/// elements is refused from the header (hiredis 0.14 would allocate and free the whole element
/// table: `*2147483647` stalled a call for seconds), and more than
/// `detail::redis_max_reply_bytes` (1 MiB) received while one reply is still incomplete stops the
/// read; both are `redis_errc::protocol` errors saying which bound was hit.
///
/// Thread safety: every member function may be called concurrently (a mutex-guarded pool of at
/// most `pool_size` connections; each call holds one connection for its round trip).

#include <hiredis/hiredis.h>
#include <openssl/crypto.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <pthread.h>
#include <sys/time.h>
#include <time.h>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/segment/digest.hpp"
#include "hybridcache/segment/keys.hpp"
#include "hybridcache/segment/namespace_key.hpp"
#include "hybridcache/segment/sha256_hash.hpp"
#include "hybridcache/store/segment_location.hpp"
#include "hybridcache/types.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// What went wrong talking to Redis.
enum class redis_errc {
  unavailable,  ///< connection refused, reset or closed (server down)
  timeout,      ///< connect, read, write or pool wait exceeded its timeout
  protocol,     ///< a reply of the wrong shape, an error reply, a broken pipeline
  denied,       ///< the server refused the command for this user (ACL `NOPERM`)
  auth,         ///< AUTH failed or was required
};

/// A failed Redis operation. Nothing was returned partially; fall back to the local index.
class redis_error : public error {
 public:
  redis_error(redis_errc code, const std::string& what) : error(what), code_(code) {}
  [[nodiscard]] redis_errc code() const noexcept { return code_; }

 private:
  redis_errc code_;
};

/// Connection settings of a `redis_segment_index`.
struct redis_options {
  std::string host = "127.0.0.1";  ///< server address (IPv4/IPv6 literal or name)
  int port = 6379;                 ///< TCP port, 1..65535
  std::string username;            ///< ACL user; empty: `AUTH <password>` (the default user)
  std::string password;            ///< empty: no AUTH
  std::string key_prefix = "hc:";  ///< prefix of every key; no glob characters `*?[]\`
  std::chrono::milliseconds connect_timeout{200};  ///< TCP connect + AUTH bound
  std::chrono::milliseconds io_timeout{100};       ///< per read/write bound, and pool wait bound
  std::size_t pool_size = 8;                       ///< most connections open at once
  std::chrono::milliseconds ttl{std::chrono::hours(1)};  ///< entry lifetime (insert, refresh)
};

/// Counters of a `redis_segment_index` (monotonic, relaxed snapshots).
struct redis_index_stats {
  std::uint64_t hits = 0;        ///< verified records returned
  std::uint64_t misses = 0;      ///< absent keys
  std::uint64_t rejected = 0;    ///< present records that failed verification (treated as misses)
  std::uint64_t errors = 0;      ///< calls that threw `redis_error`
  std::uint64_t reconnects = 0;  ///< retries on a fresh connection after a stale one failed
};

namespace detail {
// Helpers of store/redis_index.hpp.

inline constexpr std::size_t redis_record_bytes = 45;
inline constexpr std::size_t redis_record_body_bytes = 29;
inline constexpr std::uint8_t redis_record_version = 1;

inline std::uint64_t redis_get_le(const unsigned char* p, int n) noexcept {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return v;
}
inline void redis_put_le(unsigned char* p, std::uint64_t v, int n) noexcept {
  for (int i = 0; i < n; ++i) p[i] = static_cast<unsigned char>((v >> (8 * i)) & 0xffu);
}

/// Blocks SIGPIPE in the calling thread while hiredis writes to a socket the peer may have
/// closed, and consumes a SIGPIPE raised meanwhile (the write then fails with EPIPE instead of
/// killing the process). The process's signal dispositions are left untouched.
class sigpipe_guard {
 public:
  sigpipe_guard() noexcept {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    blocked_ = pthread_sigmask(SIG_BLOCK, &pipe_, &old_) == 0;
  }
  sigpipe_guard(const sigpipe_guard&) = delete;
  sigpipe_guard& operator=(const sigpipe_guard&) = delete;
  ~sigpipe_guard() {
    if (!blocked_) return;
    if (!was_pending_) {
      sigset_t pending;
      sigemptyset(&pending);
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        const timespec zero{0, 0};
        while (sigtimedwait(&pipe_, nullptr, &zero) == -1 && errno == EINTR) {
        }
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t pipe_{};
  sigset_t old_{};
  bool was_pending_ = false;
  bool blocked_ = false;
};

struct redis_reply_deleter {
  void operator()(redisReply* r) const noexcept { freeReplyObject(r); }
};
using redis_reply_ptr = std::unique_ptr<redisReply, redis_reply_deleter>;

/// Most elements an array reply may announce. None of the index's commands (AUTH, SET, GET,
/// PEXPIRE, DEL) answers with an array; the bound exists because hiredis 0.14 (Debian 12)
/// allocates an array's element table whole from its header and, on error, frees it element by
/// element: a server answering `*2147483647` cost seconds past `io_timeout`. A larger header is
/// refused before anything is allocated.
inline constexpr int redis_max_reply_elements = 64;
/// Most bytes received while waiting for one reply. The index's replies are below 1 KiB (a
/// 45-byte record, an error line); the bound keeps a bulk header such as `$2147483647` followed by
/// a stream of bytes from buffering gigabytes.
inline constexpr std::size_t redis_max_reply_bytes = std::size_t{1} << 20;

/// No array header refused (`redis_refused_elements`).
inline constexpr long long redis_none_refused = std::numeric_limits<long long>::min();
/// The element count of the array header `redis_bounded_array` last refused in this thread
/// during the current `redis_read_reply` (else `redis_none_refused`). hiredis reports the refusal
/// only as "out of memory"; this says what was refused.
inline thread_local long long redis_refused_elements = redis_none_refused;

/// hiredis's default reply functions (one static table, copied from a throwaway reader).
inline const redisReplyObjectFunctions& redis_default_functions() {
  static const redisReplyObjectFunctions fns = [] {
    redisReader* r = redisReaderCreate();
    if (r == nullptr) throw std::bad_alloc();
    const redisReplyObjectFunctions copy = *r->fn;
    redisReaderFree(r);
    return copy;
  }();
  return fns;
}

/// `createArray` that refuses headers above `redis_max_reply_elements` (returning null makes the
/// reader fail with REDIS_ERR_OOM before any allocation). `Count` is the element count type of the
/// hiredis in use (`int` in 0.14, `size_t` in 1.x), deduced where the pointer is taken.
template <class Count>
void* redis_bounded_array(const redisReadTask* task, Count elements) {
  const auto n = static_cast<long long>(elements);
  if (n < 0 || n > redis_max_reply_elements) {
    redis_refused_elements = n;
    return nullptr;
  }
  return redis_default_functions().createArray(task, elements);
}

/// Makes `c`'s reader refuse oversized array headers (see `redis_max_reply_elements`).
inline void redis_bound_reader(redisContext* c) {
  static redisReplyObjectFunctions bounded = [] {
    redisReplyObjectFunctions f = redis_default_functions();
    f.createArray = &redis_bounded_array;
    return f;
  }();
  c->reader->fn = &bounded;
}

/// Outcome of `redis_read_reply`.
enum class redis_read { ok, failed, too_many_bytes };

/// hiredis's blocking `redisGetReply` (flush the output buffer, then read until one reply is
/// complete), with at most `redis_max_reply_bytes` received while waiting for it. Each read is
/// still bounded by the socket timeout.
inline redis_read redis_read_reply(redisContext* c, void** reply) {
  *reply = nullptr;
  redis_refused_elements = redis_none_refused;
  void* aux = nullptr;
  if (redisGetReplyFromReader(c, &aux) != REDIS_OK) return redis_read::failed;
  if (aux == nullptr) {
    int done = 0;
    do {
      if (redisBufferWrite(c, &done) != REDIS_OK) return redis_read::failed;
    } while (done == 0);
    std::size_t received = 0;
    do {
      // A feed only appends to the reader's buffer (or refills an empty one).
      const std::size_t before = c->reader->len;
      if (redisBufferRead(c) != REDIS_OK) return redis_read::failed;
      received += c->reader->len - before;
      if (redisGetReplyFromReader(c, &aux) != REDIS_OK) return redis_read::failed;
      if (aux == nullptr && received > redis_max_reply_bytes) return redis_read::too_many_bytes;
    } while (aux == nullptr);
  }
  *reply = aux;
  return redis_read::ok;
}

inline timeval redis_timeval(std::chrono::milliseconds ms) noexcept {
  timeval tv{};
  tv.tv_sec = static_cast<decltype(tv.tv_sec)>(ms.count() / 1000);
  tv.tv_usec = static_cast<decltype(tv.tv_usec)>((ms.count() % 1000) * 1000);
  return tv;
}

}  // namespace detail

/// The shared segment index over Redis (see the file comment for keys, records and failures).
class redis_segment_index {
 public:
  /// Most blocks one chain call may carry (bounds the pipeline; 4096 blocks of 16 tokens = 64 Ki
  /// tokens).
  static constexpr std::size_t max_chain_blocks = 4096;
  /// Size of a stored record in bytes.
  static constexpr std::size_t record_bytes = detail::redis_record_bytes;

  /// Connects lazily (the first call opens the first connection).
  /// @param options connection settings (validated here).
  /// @param deployment_secret the secret every node shares (>= 16 bytes; random in production).
  /// @throws invalid_argument for a bad option or a short secret.
  redis_segment_index(redis_options options, std::span<const std::byte> deployment_secret)
      : opts_(std::move(options)),
        key_hash_(deployment_secret),
        tag_hash_(derive(key_hash_, "HCRV1 record tag key")),
        pool_(std::make_unique<pool>()) {
    validate(opts_);
  }

  redis_segment_index(const redis_segment_index&) = delete;
  redis_segment_index& operator=(const redis_segment_index&) = delete;
  ~redis_segment_index() { close_idle(); }

  // -------------------------------------------------------------------------------------------
  // Key space

  /// The key prefix of `ns`'s tenant: `prefix ‖ tag(ns) ‖ ":"` (file comment). Every key of a
  /// namespace with this tenant starts with it; an ACL user limited to `prefix*` sees no other.
  [[nodiscard]] std::string tenant_prefix(const namespace_key& ns) const {
    std::string out = opts_.key_prefix;
    const auto& tenant = ns.tenant();
    if (!tenant) {
      out.append("s:");
      return out;
    }
    std::string msg = "HCT1";
    unsigned char len[4];
    detail::redis_put_le(len, tenant->size(), 4);
    msg.append(reinterpret_cast<const char*>(len), 4);
    msg.append(*tenant);
    const digest d = key_hash_(as_bytes(msg), {});
    static constexpr char hex[] = "0123456789abcdef";
    out.push_back('t');
    for (int i = 0; i < 16; ++i) out.push_back(hex[(d.lo >> (4 * (15 - i))) & 0xfu]);
    out.push_back(':');
    return out;
  }

  /// The Redis key of segment (ns, tokens): `tenant_prefix(ns) ‖ K` (16 raw bytes).
  /// @throws invalid_argument for an empty segment.
  [[nodiscard]] std::string key_of(const namespace_key& ns, std::span<const token_id> tokens,
                                   segment_kind kind = segment_kind::position_independent) const {
    check_segment(tokens);
    return tenant_prefix(ns) + raw(hybridcache::segment_key(key_hash_, ns, tokens, kind));
  }

  /// The Redis keys of the full blocks of `tokens` (chained keys h_1..h_m of keys.hpp).
  /// @throws invalid_argument if `block_size == 0` or there are more than `max_chain_blocks`.
  [[nodiscard]] std::vector<std::string> chain_keys(const namespace_key& ns,
                                                    std::span<const token_id> tokens,
                                                    std::size_t block_size) const {
    check_chain(tokens, block_size);
    const std::size_t m = tokens.size() / block_size;
    std::vector<digest> h(m);
    hybridcache::block_keys_into(key_hash_, ns, tokens, block_size, std::span<digest>(h));
    const std::string prefix = tenant_prefix(ns);
    std::vector<std::string> keys;
    keys.reserve(m);
    for (const auto& d : h) keys.push_back(prefix + raw(d));
    return keys;
  }

  /// The 45-byte record for `loc` stored under `key` (file comment). Public so that tests and
  /// tools can build records; `decode_record` is its inverse.
  [[nodiscard]] std::string encode_record(std::string_view key, const segment_location& loc) const {
    std::string rec(record_bytes, '\0');
    auto* p = reinterpret_cast<unsigned char*>(rec.data());
    p[0] = detail::redis_record_version;
    detail::redis_put_le(p + 1, loc.node, 4);
    detail::redis_put_le(p + 5, loc.pool, 4);
    detail::redis_put_le(p + 9, loc.offset, 8);
    detail::redis_put_le(p + 17, loc.bytes, 8);
    detail::redis_put_le(p + 25, loc.tokens, 4);
    const auto tag = record_tag(key, p).to_bytes();
    std::memcpy(p + detail::redis_record_body_bytes, tag.data(), tag.size());
    return rec;
  }

  /// Verifies and decodes a record read from `key`. @returns nothing unless the record has the
  /// right length and version, its tag verifies for `key`, and it covers `expected_tokens`.
  [[nodiscard]] std::optional<segment_location> decode_record(std::string_view key,
                                                              std::string_view record,
                                                              std::uint32_t expected_tokens) const {
    if (record.size() != record_bytes) return std::nullopt;
    const auto* p = reinterpret_cast<const unsigned char*>(record.data());
    if (p[0] != detail::redis_record_version) return std::nullopt;
    const auto tag = record_tag(key, p).to_bytes();
    if (CRYPTO_memcmp(tag.data(), p + detail::redis_record_body_bytes, tag.size()) != 0)
      return std::nullopt;
    segment_location loc;
    loc.node = static_cast<std::uint32_t>(detail::redis_get_le(p + 1, 4));
    loc.pool = static_cast<std::uint32_t>(detail::redis_get_le(p + 5, 4));
    loc.offset = detail::redis_get_le(p + 9, 8);
    loc.bytes = detail::redis_get_le(p + 17, 8);
    loc.tokens = static_cast<std::uint32_t>(detail::redis_get_le(p + 25, 4));
    if (loc.tokens != expected_tokens) return std::nullopt;
    return loc;
  }

  /// ACL rule that limits `user` to the keys of `ns`'s tenant and to the commands this index
  /// sends: `ACL SETUSER <user> reset on ><password> ~<tenant_prefix>* +get +set +pexpire +del
  /// +ping` (as an argument vector for a Redis client; `redis-cli` takes the same words).
  [[nodiscard]] std::vector<std::string> acl_setuser_command(const namespace_key& ns,
                                                             std::string_view user,
                                                             std::string_view password) const {
    if (user.empty() || user.find_first_of(" \t\r\n") != std::string_view::npos)
      hybridcache::detail::throw_invalid("user", user, "must be non-empty without whitespace");
    if (password.empty())
      hybridcache::detail::throw_invalid("password", std::string_view("<empty>"),
                                         "an ACL user needs a password");
    return {"ACL",
            "SETUSER",
            std::string(user),
            "reset",
            "on",
            ">" + std::string(password),
            "~" + tenant_prefix(ns) + "*",
            "+get",
            "+set",
            "+pexpire",
            "+del",
            "+ping"};
  }

  // -------------------------------------------------------------------------------------------
  // Segment operations (one key each)

  /// Inserts (ns, tokens) → `loc` unless present (first writer wins), with the configured TTL.
  /// @returns true if this call stored it.
  /// @throws invalid_argument for an empty segment or `loc.tokens != tokens.size()`;
  ///         redis_error on failure (nothing is known about the key then).
  bool insert(const namespace_key& ns, std::span<const token_id> tokens,
              const segment_location& loc, segment_kind kind = segment_kind::position_independent) {
    check_location("loc", loc, tokens.size());
    const std::string key = key_of(ns, tokens, kind);
    std::vector<std::string> keys{key};
    std::vector<std::string> recs{encode_record(key, loc)};
    return insert_keys(keys, recs).front();
  }

  /// @returns the verified location of (ns, tokens), or nothing (absent, expired, rejected).
  /// @throws redis_error on failure — never a partial or unverified answer.
  [[nodiscard]] std::optional<segment_location> find(
      const namespace_key& ns, std::span<const token_id> tokens,
      segment_kind kind = segment_kind::position_independent) {
    std::vector<std::string> keys{key_of(ns, tokens, kind)};
    return get_keys(keys, static_cast<std::uint32_t>(tokens.size())).front();
  }

  /// Renews (ns, tokens)'s TTL. @returns true if the key existed.
  bool refresh(const namespace_key& ns, std::span<const token_id> tokens,
               segment_kind kind = segment_kind::position_independent) {
    std::vector<std::string> keys{key_of(ns, tokens, kind)};
    return simple_keys(keys, "PEXPIRE").front();
  }

  /// Removes (ns, tokens). @returns true if the key existed.
  bool erase(const namespace_key& ns, std::span<const token_id> tokens,
             segment_kind kind = segment_kind::position_independent) {
    std::vector<std::string> keys{key_of(ns, tokens, kind)};
    return simple_keys(keys, "DEL").front();
  }

  // -------------------------------------------------------------------------------------------
  // Block-chain operations (one pipelined round trip each)

  /// Inserts the m = tokens.size() / block_size full blocks of a request, block i at
  /// `locs[i]` (first writer wins per block). @returns which blocks this call stored.
  /// @throws invalid_argument if `locs.size() != m` or a `locs[i].tokens != block_size`.
  std::vector<bool> insert_chain(const namespace_key& ns, std::span<const token_id> tokens,
                                 std::size_t block_size, std::span<const segment_location> locs) {
    const std::vector<std::string> keys = chain_keys(ns, tokens, block_size);
    if (locs.size() != keys.size())
      hybridcache::detail::throw_invalid(
          "locs.size()", locs.size(),
          "must equal the number of full blocks (" + std::to_string(keys.size()) + ")");
    std::vector<std::string> recs;
    recs.reserve(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
      check_location(hybridcache::detail::indexed("locs", i), locs[i], block_size);
      recs.push_back(encode_record(keys[i], locs[i]));
    }
    return insert_keys(keys, recs);
  }

  /// Looks up every full block of a request in ONE pipelined round trip.
  /// @returns one entry per full block: its verified location or nothing.
  [[nodiscard]] std::vector<std::optional<segment_location>> find_chain(
      const namespace_key& ns, std::span<const token_id> tokens, std::size_t block_size) {
    const std::vector<std::string> keys = chain_keys(ns, tokens, block_size);
    return get_keys(keys, static_cast<std::uint32_t>(block_size));
  }

  /// Renews the TTL of every full block. @returns which blocks existed.
  std::vector<bool> refresh_chain(const namespace_key& ns, std::span<const token_id> tokens,
                                  std::size_t block_size) {
    return simple_keys(chain_keys(ns, tokens, block_size), "PEXPIRE");
  }

  /// Removes every full block. @returns which blocks existed.
  std::vector<bool> erase_chain(const namespace_key& ns, std::span<const token_id> tokens,
                                std::size_t block_size) {
    return simple_keys(chain_keys(ns, tokens, block_size), "DEL");
  }

  /// Number of leading blocks of a `find_chain` result that hit (the reusable prefix depth).
  [[nodiscard]] static std::size_t leading_hits(
      std::span<const std::optional<segment_location>> chain) noexcept {
    std::size_t n = 0;
    while (n < chain.size() && chain[n].has_value()) ++n;
    return n;
  }

  /// A snapshot of the counters.
  [[nodiscard]] redis_index_stats stats() const noexcept {
    redis_index_stats s;
    s.hits = hits_.load(std::memory_order_relaxed);
    s.misses = misses_.load(std::memory_order_relaxed);
    s.rejected = rejected_.load(std::memory_order_relaxed);
    s.errors = errors_.load(std::memory_order_relaxed);
    s.reconnects = reconnects_.load(std::memory_order_relaxed);
    return s;
  }

  /// The options in use.
  [[nodiscard]] const redis_options& options() const noexcept { return opts_; }

 private:
  // ---- validation ---------------------------------------------------------------------------
  static void validate(const redis_options& o) {
    if (o.host.empty()) hybridcache::detail::throw_invalid("options.host", o.host, "empty");
    if (o.port < 1 || o.port > 65535)
      hybridcache::detail::throw_invalid("options.port", o.port, "must be in 1..65535");
    if (o.key_prefix.find_first_of("*?[]\\") != std::string::npos)
      hybridcache::detail::throw_invalid("options.key_prefix", o.key_prefix,
                                         "must not contain glob characters *?[]\\");
    if (o.connect_timeout.count() <= 0)
      hybridcache::detail::throw_invalid("options.connect_timeout", o.connect_timeout.count(),
                                         "must be > 0 ms");
    if (o.io_timeout.count() <= 0)
      hybridcache::detail::throw_invalid("options.io_timeout", o.io_timeout.count(),
                                         "must be > 0 ms");
    if (o.pool_size == 0)
      hybridcache::detail::throw_invalid("options.pool_size", o.pool_size, "must be >= 1");
    if (o.ttl.count() <= 0)
      hybridcache::detail::throw_invalid("options.ttl", o.ttl.count(), "must be > 0 ms");
    if (!o.username.empty() && o.password.empty())
      hybridcache::detail::throw_invalid("options.password", std::string_view("<empty>"),
                                         "a username needs a password");
  }
  static void check_segment(std::span<const token_id> tokens) {
    if (tokens.empty())
      hybridcache::detail::throw_invalid("tokens.size()", tokens.size(),
                                         "a segment has at least one token");
    if (tokens.size() > 0xffffffffull)
      hybridcache::detail::throw_invalid("tokens.size()", tokens.size(), "must be < 2^32");
  }
  static void check_chain(std::span<const token_id> tokens, std::size_t block_size) {
    if (block_size == 0 || block_size > 0xffffffffull)
      hybridcache::detail::throw_invalid("block_size", block_size, "must be in 1..2^32-1");
    if (tokens.size() / block_size > max_chain_blocks)
      hybridcache::detail::throw_invalid("tokens.size() / block_size", tokens.size() / block_size,
                                         "more blocks than max_chain_blocks (4096)");
  }
  static void check_location(const std::string& name, const segment_location& loc,
                             std::size_t tokens) {
    if (loc.tokens != tokens)
      hybridcache::detail::throw_invalid(
          name + ".tokens", loc.tokens,
          "must equal the entry's token count " + std::to_string(tokens));
  }

  // ---- keys and tags ------------------------------------------------------------------------
  static std::span<const std::byte> as_bytes(std::string_view s) noexcept {
    return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
  }
  static std::string raw(const digest& d) {
    const auto b = d.to_bytes();
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  }
  static sha256_hash derive(const sha256_hash& h, std::string_view label) {
    const auto b = h(as_bytes(label), {}).to_bytes();
    return hybridcache::sha256_hash(std::span<const std::byte>(b.data(), b.size()));
  }
  // tag = trunc128(HMAC(S_v, "HCR1" ‖ K ‖ body)), K = the key's last 16 bytes (its digest).
  [[nodiscard]] digest record_tag(std::string_view key, const unsigned char* body) const {
    unsigned char head[4 + 16];
    std::memcpy(head, "HCR1", 4);
    std::memset(head + 4, 0, 16);
    const std::size_t n = std::min<std::size_t>(key.size(), 16);
    std::memcpy(head + 4 + 16 - n, key.data() + key.size() - n, n);
    return tag_hash_(std::span<const std::byte>(reinterpret_cast<const std::byte*>(head), 20),
                     std::span<const std::byte>(reinterpret_cast<const std::byte*>(body),
                                                detail::redis_record_body_bytes));
  }

  // ---- connection pool ----------------------------------------------------------------------
  struct pool {
    std::mutex mutex;
    std::condition_variable freed;
    std::vector<redisContext*> idle;
    std::size_t open = 0;
  };

  // One leased connection; returned to the pool if healthy, closed otherwise.
  class lease {
   public:
    lease(redis_segment_index& owner, redisContext* c, bool reused) noexcept
        : owner_(&owner), ctx_(c), reused_(reused) {}
    lease(const lease&) = delete;
    lease& operator=(const lease&) = delete;
    ~lease() { owner_->give_back(ctx_, healthy_); }
    [[nodiscard]] redisContext* get() const noexcept { return ctx_; }
    [[nodiscard]] bool reused() const noexcept { return reused_; }
    void poison() noexcept { healthy_ = false; }

   private:
    redis_segment_index* owner_;
    redisContext* ctx_;
    bool reused_;
    bool healthy_ = true;
  };

  [[noreturn]] void fail(redis_errc code, const std::string& what) {
    throw redis_error(
        code, "hybridcache: redis " + opts_.host + ":" + std::to_string(opts_.port) + ": " + what);
  }

  static redis_errc classify_io(const redisContext* c, int saved_errno) noexcept {
#ifdef REDIS_ERR_TIMEOUT
    if (c->err == REDIS_ERR_TIMEOUT) return redis_errc::timeout;
#endif
    if (c->err == REDIS_ERR_IO &&
        (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK || saved_errno == ETIMEDOUT ||
         std::strstr(c->errstr, "temporarily unavailable") != nullptr ||
         std::strstr(c->errstr, "timed out") != nullptr))
      return redis_errc::timeout;
    if (c->err == REDIS_ERR_PROTOCOL || c->err == REDIS_ERR_OOM) return redis_errc::protocol;
    return redis_errc::unavailable;
  }

  // The error of a failed `detail::redis_read_reply`: an oversized reply is a protocol error,
  // anything else as hiredis reports it.
  static redis_errc read_failure_code(const redisContext* c, detail::redis_read got,
                                      int saved_errno) noexcept {
    if (got == detail::redis_read::too_many_bytes ||
        detail::redis_refused_elements != detail::redis_none_refused)
      return redis_errc::protocol;
    return classify_io(c, saved_errno);
  }
  static std::string read_failure_text(const redisContext* c, detail::redis_read got) {
    if (got == detail::redis_read::too_many_bytes)
      return "a reply exceeds " + std::to_string(detail::redis_max_reply_bytes) +
             " bytes (redis_max_reply_bytes) and is still incomplete";
    if (detail::redis_refused_elements != detail::redis_none_refused)
      return "an array reply announces " + std::to_string(detail::redis_refused_elements) +
             " elements, more than the " + std::to_string(detail::redis_max_reply_elements) +
             " accepted (redis_max_reply_elements); it was refused from its header";
    return c->errstr;
  }

  redisContext* connect() {
    errno = 0;
    redisContext* c = redisConnectWithTimeout(opts_.host.c_str(), opts_.port,
                                              detail::redis_timeval(opts_.connect_timeout));
    if (c == nullptr) fail(redis_errc::unavailable, "cannot allocate a connection");
    if (c->err != 0) {
      const redis_errc code = classify_io(c, errno);
      const std::string why = c->errstr;
      redisFree(c);
      fail(code, "connect: " + why);
    }
    detail::redis_bound_reader(c);
    // AUTH and every later read/write are bounded: the connect timeout covers AUTH, the I/O
    // timeout the rest.
    if (redisSetTimeout(c, detail::redis_timeval(opts_.connect_timeout)) != REDIS_OK) {
      redisFree(c);
      fail(redis_errc::unavailable, "cannot set socket timeouts");
    }
    if (!opts_.password.empty()) {
      std::vector<const char*> argv{"AUTH"};
      std::vector<std::size_t> lens{4};
      if (!opts_.username.empty()) {
        argv.push_back(opts_.username.data());
        lens.push_back(opts_.username.size());
      }
      argv.push_back(opts_.password.data());
      lens.push_back(opts_.password.size());
      detail::sigpipe_guard guard;
      errno = 0;
      void* r = nullptr;
      const auto got = redisAppendCommandArgv(c, static_cast<int>(argv.size()), argv.data(),
                                              lens.data()) == REDIS_OK
                           ? detail::redis_read_reply(c, &r)
                           : detail::redis_read::failed;
      const int saved = errno;
      detail::redis_reply_ptr reply(static_cast<redisReply*>(r));
      if (got != detail::redis_read::ok || !reply) {
        const redis_errc code = read_failure_code(c, got, saved);
        const std::string why = read_failure_text(c, got);
        redisFree(c);
        fail(code, "AUTH: " + why);
      }
      if (reply->type != REDIS_REPLY_STATUS) {
        const std::string why = reply->type == REDIS_REPLY_ERROR
                                    ? std::string(reply->str, reply->len)
                                    : std::string("unexpected reply type");
        redisFree(c);
        fail(redis_errc::auth,
             "AUTH failed for user '" +
                 (opts_.username.empty() ? std::string("default") : opts_.username) + "': " + why);
      }
    }
    if (redisSetTimeout(c, detail::redis_timeval(opts_.io_timeout)) != REDIS_OK) {
      redisFree(c);
      fail(redis_errc::unavailable, "cannot set socket timeouts");
    }
    return c;
  }

  // Takes an idle connection or opens one; waits at most io_timeout when all are in use.
  std::unique_ptr<lease> acquire(bool fresh_only) {
    std::unique_lock lock(pool_->mutex);
    const auto deadline = std::chrono::steady_clock::now() + opts_.io_timeout;
    while (true) {
      if (!fresh_only && !pool_->idle.empty()) {
        redisContext* c = pool_->idle.back();
        pool_->idle.pop_back();
        return std::make_unique<lease>(*this, c, true);
      }
      if (fresh_only && !pool_->idle.empty()) {  // a stale idle connection makes room
        redisContext* c = pool_->idle.back();
        pool_->idle.pop_back();
        --pool_->open;
        lock.unlock();
        redisFree(c);
        lock.lock();
        continue;
      }
      if (pool_->open < opts_.pool_size) break;
      if (pool_->freed.wait_until(lock, deadline) == std::cv_status::timeout &&
          pool_->idle.empty() && pool_->open >= opts_.pool_size)
        fail(redis_errc::timeout, "no pooled connection within io_timeout");
    }
    ++pool_->open;
    lock.unlock();
    redisContext* c = nullptr;
    try {
      c = connect();
    } catch (...) {
      lock.lock();
      --pool_->open;
      pool_->freed.notify_one();
      throw;
    }
    return std::make_unique<lease>(*this, c, false);
  }

  void give_back(redisContext* c, bool healthy) noexcept {
    {
      std::lock_guard lock(pool_->mutex);
      if (healthy && c->err == 0) {
        pool_->idle.push_back(c);
        c = nullptr;
      } else {
        --pool_->open;
      }
    }
    pool_->freed.notify_one();
    if (c != nullptr) redisFree(c);
  }

  void close_idle() noexcept {
    std::vector<redisContext*> victims;
    {
      std::lock_guard lock(pool_->mutex);
      victims.swap(pool_->idle);
      pool_->open -= victims.size();
    }
    pool_->freed.notify_all();
    for (redisContext* c : victims) redisFree(c);
  }

  // ---- one pipelined round trip ----------------------------------------------------------
  // Sends `commands` (argument vectors) and reads exactly one reply per command. Returns the
  // replies, or throws: on any I/O failure (the connection is closed), or on any error reply
  // (after draining the pipeline so the connection stays usable).
  struct io_failure {
    redis_errc code;
    std::string what;
  };

  std::vector<detail::redis_reply_ptr> round_trip_on(
      lease& conn, const std::vector<std::vector<std::string_view>>& commands,
      std::optional<io_failure>& io) {
    redisContext* c = conn.get();
    std::vector<const char*> argv;
    std::vector<std::size_t> lens;
    for (const auto& cmd : commands) {
      argv.clear();
      lens.clear();
      for (std::string_view a : cmd) {
        argv.push_back(a.data());
        lens.push_back(a.size());
      }
      if (redisAppendCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data()) !=
          REDIS_OK) {
        conn.poison();
        io = io_failure{redis_errc::protocol, std::string("cannot encode command: ") + c->errstr};
        return {};
      }
    }
    std::vector<detail::redis_reply_ptr> replies;
    replies.reserve(commands.size());
    detail::sigpipe_guard guard;
    for (std::size_t i = 0; i < commands.size(); ++i) {
      void* r = nullptr;
      errno = 0;
      const detail::redis_read got = detail::redis_read_reply(c, &r);
      if (got != detail::redis_read::ok || r == nullptr) {
        const int saved = errno;
        conn.poison();
        io = io_failure{read_failure_code(c, got, saved),
                        std::string(i == 0 ? "no reply: " : "pipeline broken after ") +
                            (i == 0 ? std::string()
                                    : std::to_string(i) + " of " + std::to_string(commands.size()) +
                                          " replies: ") +
                            read_failure_text(c, got)};
        return {};
      }
      replies.emplace_back(static_cast<redisReply*>(r));
    }
    return replies;
  }

  std::vector<detail::redis_reply_ptr> round_trip(
      const std::vector<std::vector<std::string_view>>& commands) {
    if (commands.empty()) return {};
    for (int attempt = 0;; ++attempt) {
      std::optional<io_failure> io;
      std::vector<detail::redis_reply_ptr> replies;
      bool reused = false;
      {
        std::unique_ptr<lease> conn;
        try {
          conn = acquire(attempt > 0);
        } catch (const redis_error&) {
          errors_.fetch_add(1, std::memory_order_relaxed);
          throw;
        }
        reused = conn->reused();
        replies = round_trip_on(*conn, commands, io);
      }
      if (!io) {
        for (const auto& r : replies) {
          if (r->type == REDIS_REPLY_ERROR) {
            errors_.fetch_add(1, std::memory_order_relaxed);
            const std::string msg(r->str, r->len);
            const redis_errc code =
                msg.rfind("NOPERM", 0) == 0 ? redis_errc::denied
                : (msg.rfind("NOAUTH", 0) == 0 || msg.rfind("WRONGPASS", 0) == 0)
                    ? redis_errc::auth
                    : redis_errc::protocol;
            fail(code, "error reply: " + msg);
          }
        }
        return replies;
      }
      // A reused connection that fails with anything but a timeout is probably stale (the
      // server restarted): close the idle ones and retry once on a fresh connection.
      if (attempt == 0 && reused && io->code == redis_errc::unavailable) {
        reconnects_.fetch_add(1, std::memory_order_relaxed);
        close_idle();
        continue;
      }
      errors_.fetch_add(1, std::memory_order_relaxed);
      fail(io->code, io->what);
    }
  }

  // ---- operations over key lists -------------------------------------------------------------
  std::vector<bool> insert_keys(const std::vector<std::string>& keys,
                                const std::vector<std::string>& recs) {
    const std::string ttl = std::to_string(opts_.ttl.count());
    std::vector<std::vector<std::string_view>> cmds;
    cmds.reserve(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i)
      cmds.push_back({"SET", keys[i], recs[i], "NX", "PX", ttl});
    const auto replies = round_trip(cmds);
    std::vector<bool> out(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const redisReply* r = replies[i].get();
      if (r->type == REDIS_REPLY_STATUS)
        out[i] = true;
      else if (r->type == REDIS_REPLY_NIL)
        out[i] = false;
      else
        bad_reply("SET", i);
    }
    return out;
  }

  std::vector<std::optional<segment_location>> get_keys(const std::vector<std::string>& keys,
                                                        std::uint32_t expected_tokens) {
    std::vector<std::vector<std::string_view>> cmds;
    cmds.reserve(keys.size());
    for (const auto& k : keys) cmds.push_back({"GET", k});
    const auto replies = round_trip(cmds);
    std::vector<std::optional<segment_location>> out(keys.size());
    std::uint64_t hit = 0, miss = 0, rej = 0;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const redisReply* r = replies[i].get();
      if (r->type == REDIS_REPLY_NIL) {
        ++miss;
      } else if (r->type == REDIS_REPLY_STRING) {
        out[i] = decode_record(keys[i], std::string_view(r->str, r->len), expected_tokens);
        ++(out[i] ? hit : rej);
      } else {
        bad_reply("GET", i);
      }
    }
    hits_.fetch_add(hit, std::memory_order_relaxed);
    misses_.fetch_add(miss, std::memory_order_relaxed);
    rejected_.fetch_add(rej, std::memory_order_relaxed);
    return out;
  }

  std::vector<bool> simple_keys(const std::vector<std::string>& keys, std::string_view verb) {
    const std::string ttl = std::to_string(opts_.ttl.count());
    std::vector<std::vector<std::string_view>> cmds;
    cmds.reserve(keys.size());
    for (const auto& k : keys) {
      if (verb == "PEXPIRE")
        cmds.push_back({verb, k, ttl});
      else
        cmds.push_back({verb, k});
    }
    const auto replies = round_trip(cmds);
    std::vector<bool> out(keys.size());
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const redisReply* r = replies[i].get();
      if (r->type != REDIS_REPLY_INTEGER) bad_reply(std::string(verb), i);
      out[i] = r->integer > 0;
    }
    return out;
  }

  [[noreturn]] void bad_reply(const std::string& verb, std::size_t i) {
    errors_.fetch_add(1, std::memory_order_relaxed);
    fail(redis_errc::protocol, "unexpected reply type to " + verb + " #" + std::to_string(i));
  }

  redis_options opts_;
  sha256_hash key_hash_;
  sha256_hash tag_hash_;
  std::unique_ptr<pool> pool_;
  std::atomic<std::uint64_t> hits_{0}, misses_{0}, rejected_{0}, errors_{0}, reconnects_{0};
};

HYBRIDCACHE_NAMESPACE_END

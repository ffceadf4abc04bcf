// SPDX-License-Identifier: Apache-2.0
// store/redis_index.hpp against a real redis-server (tests/support/redis_server.hpp). Key and
// record bytes are compared with an independent reference (tests/support/redis_reference.hpp);
// lookups with a brute-force prefix comparison and with the set of records actually written.
#include <doctest/doctest.h>

#include <hybridcache/dispatch/shared_affinity.hpp>
#include <hybridcache/store/redis_index.hpp>

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/redis_reference.hpp"
#include "support/redis_server.hpp"

using hybridcache::token_id;
namespace hc = hybridcache;
using namespace std::chrono_literals;

namespace {

const std::string secret_text = "0123456789abcdef-deployment-secret";

std::span<const std::byte> secret_bytes(const std::string& s = secret_text) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

hc::redis_options options_for(const hc_test::redis_server& srv) {
  hc::redis_options o;
  o.port = srv.port();
  o.password = hc_test::redis_server::admin_password;
  o.io_timeout = 200ms;
  o.connect_timeout = 200ms;
  return o;
}

std::vector<token_id> random_tokens(std::mt19937& rng, std::size_t n) {
  std::vector<token_id> t(n);
  for (auto& x : t) x = static_cast<token_id>(rng());
  return t;
}

hc::segment_location loc_of(std::uint32_t node, std::uint64_t offset, std::uint32_t tokens) {
  return {node, node % 2, offset, 4096 + offset, tokens};
}

// Skip (with a message) only if the binary is absent.
#define HC_REQUIRE_REDIS()                                                        \
  if (!hc_test::redis_server::available()) {                                      \
    MESSAGE("redis-server not found on PATH: skipped (scripts/install-deps.sh)"); \
    return;                                                                       \
  }

}  // namespace

TEST_CASE("redis keys: independent HMAC reference, no tokens or tenant names in the key") {
  hc::redis_options o;
  o.key_prefix = "hc:";
  const hc::redis_segment_index idx(o, secret_bytes());
  const auto ns = hc::namespace_key{}.with_tenant("acme-corp").with_model("qwen3");
  const std::vector<token_id> toks{0x61626364u, 7, 8, 9, 10};
  const std::string tenant = "acme-corp";
  const std::string expect =
      hc_test::redis_ref::segment_key(secret_text, "hc:", &tenant, ns.bytes(), toks);
  CHECK(idx.key_of(ns, toks) == expect);
  CHECK(idx.tenant_prefix(ns) ==
        "hc:" + hc_test::redis_ref::tenant_tag(secret_text, &tenant) + ":");
  CHECK(idx.key_of(ns, toks).find("acme") == std::string::npos);
  CHECK(idx.key_of(ns, toks).find("abcd") == std::string::npos);
  CHECK(idx.key_of(ns, toks).find("dcba") == std::string::npos);
  // The shared namespace has the "s" tag; namespaces of one tenant share a prefix, others not.
  CHECK(idx.tenant_prefix(hc::namespace_key::shared()) == "hc:s:");
  CHECK(idx.key_of(hc::namespace_key::shared(), toks) ==
        hc_test::redis_ref::segment_key(secret_text, "hc:", nullptr,
                                        hc::namespace_key::shared().bytes(), toks));
  CHECK(idx.tenant_prefix(ns.with_knowledge_base("kb")) == idx.tenant_prefix(ns));
  CHECK(idx.tenant_prefix(hc::namespace_key{}.with_tenant("other")) != idx.tenant_prefix(ns));
  // Namespace is in the HMAC: same tenant, different model -> different key.
  CHECK(idx.key_of(ns.with_model("llama"), toks) != idx.key_of(ns, toks));
  // Chain keys: the documented chain policy under HMAC with the same secret.
  const hc::sha256_hash h(secret_bytes());
  const std::vector<token_id> req{1, 2, 3, 4, 5, 6, 7, 8, 9};
  const auto keys = idx.chain_keys(ns, req, 4);
  REQUIRE(keys.size() == 2);
  const auto d = hc::block_keys(h, ns, req, 4);
  for (std::size_t i = 0; i < 2; ++i) {
    const auto b = d[i].to_bytes();
    CHECK(keys[i] ==
          idx.tenant_prefix(ns) + std::string(reinterpret_cast<const char*>(b.data()), b.size()));
  }
}

TEST_CASE("redis records: byte layout equals the reference, every corruption is rejected") {
  const hc::redis_segment_index idx(hc::redis_options{}, secret_bytes());
  const auto ns = hc::namespace_key{}.with_tenant("t1");
  const std::vector<token_id> toks{5, 6, 7};
  const std::string key = idx.key_of(ns, toks);
  const hc::segment_location loc{3, 1, 0x1122334455667788ull, 0xabcdefull, 3};
  const std::string rec = idx.encode_record(key, loc);
  REQUIRE(rec.size() == hc::redis_segment_index::record_bytes);
  CHECK(rec == hc_test::redis_ref::record(secret_text, key.substr(key.size() - 16), 3, 1,
                                          0x1122334455667788ull, 0xabcdefull, 3));
  REQUIRE(idx.decode_record(key, rec, 3) == loc);
  CHECK_FALSE(idx.decode_record(key, rec, 4));                          // wrong token count
  CHECK_FALSE(idx.decode_record(key, rec.substr(0, 44), 3));            // short
  CHECK_FALSE(idx.decode_record(key, rec + "x", 3));                    // long
  CHECK_FALSE(idx.decode_record(idx.key_of(ns, {{5, 6, 8}}), rec, 3));  // another key
  for (std::size_t i = 0; i < rec.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = rec;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      CHECK_FALSE(idx.decode_record(key, bad, 3));
    }
  }
  // A record made with another deployment secret does not verify.
  const std::string other_secret = "another-secret-of-32-bytes-long!";
  const hc::redis_segment_index other(hc::redis_options{}, secret_bytes(other_secret));
  CHECK_FALSE(idx.decode_record(key, other.encode_record(key, loc), 3));
}

TEST_CASE("redis: bad options and bad input throw invalid_argument naming the argument") {
  using hybridcache::invalid_argument;
  auto make = [](auto edit) {
    hc::redis_options o;
    edit(o);
    return hc::redis_segment_index(o, secret_bytes());
  };
  CHECK_THROWS_AS(make([](auto& o) { o.port = 0; }), invalid_argument);
  CHECK_THROWS_AS(make([](auto& o) { o.port = 65536; }), invalid_argument);
  CHECK_THROWS_AS(make([](auto& o) { o.host.clear(); }), invalid_argument);
  CHECK_THROWS_AS(make([](auto& o) { o.key_prefix = "hc*"; }), invalid_argument);
  CHECK_THROWS_AS(make([](auto& o) { o.key_prefix = "hc["; }), invalid_argument);
  CHECK_THROWS_AS(make([](auto& o) { o.io_timeout = 0ms; }), invalid_argument);
  CHECK_THROWS_AS(make([](auto& o) { o.connect_timeout = -1ms; }), invalid_argument);
  CHECK_THROWS_AS(make([](auto& o) { o.pool_size = 0; }), invalid_argument);
  CHECK_THROWS_AS(make([](auto& o) { o.ttl = 0ms; }), invalid_argument);
  CHECK_THROWS_AS(make([](auto& o) { o.username = "u"; }), invalid_argument);
  try {
    make([](auto& o) { o.port = 70000; });
    FAIL("no throw");
  } catch (const invalid_argument& e) {
    CHECK(e.argument() == "options.port");
    CHECK(e.value() == "70000");
  }
  const std::string short_secret = "too-short";
  CHECK_THROWS_AS(hc::redis_segment_index(hc::redis_options{}, secret_bytes(short_secret)),
                  invalid_argument);

  // Input checks happen before any I/O: no server is needed (port 1 is never contacted).
  hc::redis_options o;
  o.port = 1;
  hc::redis_segment_index idx(o, secret_bytes());
  const auto ns = hc::namespace_key{}.with_tenant("t");
  const std::vector<token_id> none;
  const std::vector<token_id> toks{1, 2, 3, 4, 5, 6, 7, 8};
  CHECK_THROWS_AS(idx.insert(ns, none, loc_of(0, 0, 0)), invalid_argument);
  CHECK_THROWS_AS((void)idx.find(ns, none), invalid_argument);
  CHECK_THROWS_AS(idx.insert(ns, toks, loc_of(0, 0, 7)), invalid_argument);  // tokens mismatch
  CHECK_THROWS_AS((void)idx.find_chain(ns, toks, 0), invalid_argument);
  const std::vector<token_id> huge(hc::redis_segment_index::max_chain_blocks + 1, 1);
  CHECK_THROWS_AS((void)idx.find_chain(ns, huge, 1), invalid_argument);
  const std::vector<hc::segment_location> one{loc_of(0, 0, 4)};
  CHECK_THROWS_AS(idx.insert_chain(ns, toks, 4, one), invalid_argument);  // 2 blocks, 1 loc
  const std::vector<hc::segment_location> two_bad{loc_of(0, 0, 4), loc_of(0, 0, 5)};
  try {
    idx.insert_chain(ns, toks, 4, two_bad);
    FAIL("no throw");
  } catch (const invalid_argument& e) {
    CHECK(e.argument() == "locs[1].tokens");
  }
  CHECK_THROWS_AS((void)idx.acl_setuser_command(ns, "bad user", "pw"), invalid_argument);
  CHECK_THROWS_AS((void)idx.acl_setuser_command(ns, "u", ""), invalid_argument);
  CHECK(idx.stats().errors == 0);  // nothing was sent
}

TEST_CASE("redis: insert is first-writer-wins with a TTL, find, refresh, erase") {
  HC_REQUIRE_REDIS();
  hc_test::redis_server srv;
  auto o = options_for(srv);
  o.ttl = 60s;
  hc::redis_segment_index idx(o, secret_bytes());
  const auto ns = hc::namespace_key{}.with_tenant("acme");
  const std::vector<token_id> seg{10, 11, 12, 13, 14};

  CHECK_FALSE(idx.find(ns, seg));
  CHECK(idx.insert(ns, seg, loc_of(1, 100, 5)));
  CHECK_FALSE(idx.insert(ns, seg, loc_of(2, 200, 5)));  // second writer loses
  REQUIRE(idx.find(ns, seg) == loc_of(1, 100, 5));
  // The anchored kind is a different key.
  CHECK_FALSE(idx.find(ns, seg, hc::segment_kind::anchored));
  // Other namespace, other tokens: misses.
  CHECK_FALSE(idx.find(ns.with_model("m"), seg));
  CHECK_FALSE(idx.find(hc::namespace_key::shared(), seg));
  CHECK_FALSE(idx.find(ns, std::vector<token_id>{10, 11, 12, 13}));

  // The TTL is set (PTTL in (0, 60000]) and refresh renews it.
  const std::string key = idx.key_of(ns, seg);
  const long pttl = std::stol(srv.command({"PTTL", key}));
  CHECK(pttl > 0);
  CHECK(pttl <= 60000);
  CHECK(srv.command({"PEXPIRE", key, "5000"}) == "1");
  CHECK(idx.refresh(ns, seg));
  CHECK(std::stol(srv.command({"PTTL", key})) > 5000);
  CHECK(srv.command({"GET", key}).size() == hc::redis_segment_index::record_bytes);

  CHECK(idx.erase(ns, seg));
  CHECK_FALSE(idx.erase(ns, seg));
  CHECK_FALSE(idx.refresh(ns, seg));
  CHECK_FALSE(idx.find(ns, seg));
  CHECK(idx.insert(ns, seg, loc_of(2, 200, 5)));  // a new first writer after erase
  CHECK(idx.find(ns, seg) == loc_of(2, 200, 5));

  // Expiry: a short TTL makes the entry a miss.
  auto o2 = o;
  o2.ttl = 30ms;
  hc::redis_segment_index shortlived(o2, secret_bytes());
  const std::vector<token_id> seg2{99, 98};
  CHECK(shortlived.insert(ns, seg2, loc_of(3, 0, 2)));
  std::this_thread::sleep_for(120ms);
  CHECK_FALSE(shortlived.find(ns, seg2));
  const auto s = idx.stats();
  CHECK(s.errors == 0);
  CHECK(s.rejected == 0);
}

TEST_CASE("redis: a block chain in one pipelined call matches a brute-force prefix reference") {
  HC_REQUIRE_REDIS();
  hc_test::redis_server srv;
  hc::redis_segment_index idx(options_for(srv), secret_bytes());
  const auto ns = hc::namespace_key{}.with_tenant("acme");
  std::mt19937 rng(7);
  constexpr std::size_t bs = 16;
  // Cached requests: a shared system prompt of 3 blocks, then their own tails.
  const auto system = random_tokens(rng, 3 * bs);
  std::vector<std::vector<token_id>> cached;
  for (int r = 0; r < 4; ++r) {
    auto t = system;
    const auto tail = random_tokens(rng, (2 + r) * bs + 5);  // + a partial block
    t.insert(t.end(), tail.begin(), tail.end());
    cached.push_back(t);
    std::vector<hc::segment_location> locs;
    for (std::size_t b = 0; b < t.size() / bs; ++b)
      locs.push_back(loc_of(static_cast<std::uint32_t>(r), b * 1000, bs));
    const auto stored = idx.insert_chain(ns, t, bs, locs);
    // Reference: the shared blocks were stored by request 0 only.
    for (std::size_t b = 0; b < stored.size(); ++b) CHECK(stored[b] == (r == 0 || b >= 3));
  }
  // Queries: each cached request, prefixes and divergent variants.
  std::vector<std::vector<token_id>> queries = cached;
  for (int q = 0; q < 20; ++q) {
    auto t = cached[rng() % cached.size()];
    t.resize(rng() % (t.size() + 1));
    if (!t.empty() && (rng() % 2 == 0)) t[rng() % t.size()] ^= 1u;
    queries.push_back(t);
  }
  for (const auto& q : queries) {
    const auto got = idx.find_chain(ns, q, bs);
    REQUIRE(got.size() == q.size() / bs);
    for (std::size_t b = 0; b < got.size(); ++b) {
      // Brute force: the first cached request whose first (b+1)·bs tokens equal the query's.
      std::optional<hc::segment_location> expect;
      for (std::size_t r = 0; r < cached.size() && !expect; ++r) {
        const auto& c = cached[r];
        if (c.size() / bs > b && std::equal(q.begin(), q.begin() + (b + 1) * bs, c.begin()))
          expect = loc_of(static_cast<std::uint32_t>(r), b * 1000, bs);
      }
      CHECK(got[b] == expect);
    }
    // Chains are prefix-closed: a hit never follows a miss.
    CHECK(hc::redis_segment_index::leading_hits(got) ==
          static_cast<std::size_t>(
              std::count_if(got.begin(), got.end(), [](const auto& x) { return x.has_value(); })));
  }
  // Another namespace sees nothing.
  for (const auto& x : idx.find_chain(ns.with_adapter("lora"), cached[0], bs)) CHECK_FALSE(x);
  // refresh_chain / erase_chain report per block; erase leaves the other requests' blocks.
  CHECK(idx.refresh_chain(ns, cached[1], bs) == std::vector<bool>(cached[1].size() / bs, true));
  const auto erased = idx.erase_chain(ns, cached[1], bs);
  CHECK(erased == std::vector<bool>(cached[1].size() / bs, true));
  const auto after = idx.find_chain(ns, cached[0], bs);
  CHECK_FALSE(after[0]);  // the shared system blocks are gone with request 1's erase
  CHECK(after[3]);        // request 0's own tail stays
  CHECK(idx.find_chain(ns, std::vector<token_id>(bs - 1, 1), bs).empty());
  CHECK(idx.stats().errors == 0);
}

TEST_CASE("redis: 8 client threads race on the same keys, exactly one writer wins each") {
  HC_REQUIRE_REDIS();
  hc_test::redis_server srv;
  auto o = options_for(srv);
  o.pool_size = 4;  // fewer connections than threads: the pool is shared and waited on
  o.io_timeout = 2s;
  hc::redis_segment_index idx(o, secret_bytes());
  const auto ns = hc::namespace_key{}.with_tenant("race");
  constexpr int threads = 8, segments = 48;
  std::vector<std::vector<token_id>> segs;
  std::mt19937 rng(11);
  for (int i = 0; i < segments; ++i) segs.push_back(random_tokens(rng, 1 + rng() % 40));
  std::vector<std::vector<char>> won(threads, std::vector<char>(segments, 0));
  std::atomic<int> failures{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      try {
        for (int i = 0; i < segments; ++i) {
          const int s = (i + 5 * t) % segments;
          const auto n = static_cast<std::uint32_t>(segs[s].size());
          won[t][s] =
              idx.insert(ns, segs[s],
                         loc_of(static_cast<std::uint32_t>(t), static_cast<std::uint64_t>(s), n))
                  ? 1
                  : 0;
          const auto f = idx.find(ns, segs[s]);
          if (!f || f->offset != static_cast<std::uint64_t>(s)) failures.fetch_add(1);
        }
      } catch (...) {
        failures.fetch_add(1000);
      }
    });
  }
  for (auto& th : pool) th.join();
  CHECK(failures.load() == 0);
  for (int s = 0; s < segments; ++s) {
    int winners = 0, winner = -1;
    for (int t = 0; t < threads; ++t)
      if (won[t][s]) ++winners, winner = t;
    REQUIRE(winners == 1);
    CHECK(idx.find(ns, segs[s])->node == static_cast<std::uint32_t>(winner));
  }
  CHECK(idx.stats().rejected == 0);
}

TEST_CASE("redis faults: server down, hung server, restart and flush -> typed errors or misses") {
  HC_REQUIRE_REDIS();
  hc_test::redis_server srv;
  auto o = options_for(srv);
  o.io_timeout = 100ms;
  o.connect_timeout = 100ms;
  hc::redis_segment_index idx(o, secret_bytes());
  const auto ns = hc::namespace_key{}.with_tenant("f");
  const std::vector<token_id> seg{1, 2, 3};
  REQUIRE(idx.insert(ns, seg, loc_of(1, 1, 3)));
  REQUIRE(idx.find(ns, seg));

  auto timed = [](auto&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::steady_clock::now() - t0;
  };

  SUBCASE("hung server: timeout error, bounded, then recovery") {
    srv.pause();
    hc::redis_errc code{};
    const auto dt = timed([&] {
      try {
        (void)idx.find(ns, seg);
        FAIL("no throw");
      } catch (const hc::redis_error& e) {
        code = e.code();
      }
    });
    srv.resume();
    CHECK(code == hc::redis_errc::timeout);
    CHECK(dt < 2s);
    CHECK(idx.find(ns, seg) == loc_of(1, 1, 3));  // the timed-out connection was dropped
  }
  SUBCASE("server down: unavailable, fast; restart: misses only") {
    srv.stop();
    hc::redis_errc code{};
    const auto dt = timed([&] {
      try {
        (void)idx.find_chain(ns, std::vector<token_id>(64, 1), 1);
        FAIL("no throw");
      } catch (const hc::redis_error& e) {
        code = e.code();
        const hybridcache::error& base = e;  // a hybridcache::error subtype
        CHECK(std::string(base.what()).find("127.0.0.1") != std::string::npos);
      }
    });
    CHECK(code == hc::redis_errc::unavailable);
    CHECK(dt < 2s);
    CHECK_THROWS_AS(idx.insert(ns, seg, loc_of(2, 2, 3)), hc::redis_error);
    srv.start();
    CHECK_FALSE(idx.find(ns, seg));  // data gone: a miss, not an error
    CHECK(idx.insert(ns, seg, loc_of(2, 2, 3)));
  }
  SUBCASE("restart with pooled connections: the stale connection is retried once") {
    srv.stop();
    srv.start();
    CHECK_FALSE(idx.find(ns, seg));
    CHECK(idx.stats().reconnects >= 1);
  }
  SUBCASE("flush: misses only") {
    CHECK(srv.command({"FLUSHALL"}) == "OK");
    CHECK_FALSE(idx.find(ns, seg));
    CHECK(idx.find_chain(ns, seg, 1) == std::vector<std::optional<hc::segment_location>>(3));
  }
  SUBCASE("8 threads through a stop/restart: every answer is an error or exactly right") {
    constexpr std::size_t bs = 4;
    std::vector<token_id> req(64 * bs);
    for (std::size_t i = 0; i < req.size(); ++i) req[i] = static_cast<token_id>(i * 7 + 1);
    std::vector<hc::segment_location> locs;
    for (std::size_t b = 0; b < 64; ++b) locs.push_back(loc_of(5, b, bs));
    idx.insert_chain(ns, req, bs, locs);
    std::atomic<bool> done{false};
    std::atomic<int> wrong{0}, errors{0}, answers{0};
    std::vector<std::thread> ths;
    for (int t = 0; t < 8; ++t) {
      ths.emplace_back([&] {
        while (!done.load()) {
          try {
            const auto got = idx.find_chain(ns, req, bs);
            answers.fetch_add(1);
            if (got.size() != 64) wrong.fetch_add(1);
            for (std::size_t b = 0; b < got.size(); ++b)
              if (got[b] && *got[b] != locs[b]) wrong.fetch_add(1);
          } catch (const hc::redis_error&) {
            errors.fetch_add(1);
          } catch (...) {
            wrong.fetch_add(1000);
          }
        }
      });
    }
    std::this_thread::sleep_for(50ms);
    srv.stop();
    std::this_thread::sleep_for(100ms);
    srv.start();
    std::this_thread::sleep_for(50ms);
    idx.insert_chain(ns, req, bs, locs);
    std::this_thread::sleep_for(50ms);
    done = true;
    for (auto& th : ths) th.join();
    CHECK(wrong.load() == 0);
    CHECK(errors.load() > 0);
    CHECK(answers.load() > 0);
    CHECK(idx.find_chain(ns, req, bs)[63] == locs[63]);
  }
}

TEST_CASE("redis ACL: a tenant's credentials cannot read or overwrite another tenant's keys") {
  HC_REQUIRE_REDIS();
  hc_test::redis_server srv;
  hc::redis_segment_index admin(options_for(srv), secret_bytes());
  const auto ns_a = hc::namespace_key{}.with_tenant("tenant-a");
  const auto ns_b = hc::namespace_key{}.with_tenant("tenant-b").with_knowledge_base("kb");
  REQUIRE(srv.command(admin.acl_setuser_command(ns_a, "user-a", "pw-a")) == "OK");
  REQUIRE(srv.command(admin.acl_setuser_command(ns_b, "user-b", "pw-b")) == "OK");
  auto as = [&](const char* user, const char* pw) {
    auto o = options_for(srv);
    o.username = user;
    o.password = pw;
    return std::make_unique<hc::redis_segment_index>(o, secret_bytes());
  };
  auto a = as("user-a", "pw-a");
  auto b = as("user-b", "pw-b");
  const std::vector<token_id> seg{42, 43, 44, 45};
  CHECK(b->insert(ns_b, seg, loc_of(2, 7, 4)));
  CHECK(a->insert(ns_a, seg, loc_of(1, 7, 4)));
  CHECK(a->find(ns_a, seg) == loc_of(1, 7, 4));
  CHECK(b->find(ns_b, seg) == loc_of(2, 7, 4));

  auto denied = [](auto&& f) {
    try {
      f();
    } catch (const hc::redis_error& e) {
      return e.code() == hc::redis_errc::denied;
    }
    return false;
  };
  CHECK(denied([&] { (void)a->find(ns_b, seg); }));
  CHECK(denied([&] { (void)a->insert(ns_b, seg, loc_of(1, 9, 4)); }));
  CHECK(denied([&] { (void)a->erase(ns_b, seg); }));
  CHECK(denied([&] { (void)a->refresh(ns_b, seg); }));
  CHECK(denied([&] { (void)a->find_chain(ns_b, seg, 2); }));
  CHECK(denied([&] { (void)b->find(ns_a, seg); }));
  // Raw commands with A's credentials on B's key are refused by the server, too.
  CHECK(denied([&] { (void)a->find(hc::namespace_key::shared(), seg); }));
  CHECK(b->find(ns_b, seg) == loc_of(2, 7, 4));  // B's record is intact

  // AUTH: wrong password and missing password are auth errors.
  auto bad = as("user-a", "wrong");
  try {
    (void)bad->find(ns_a, seg);
    FAIL("no throw");
  } catch (const hc::redis_error& e) {
    CHECK(e.code() == hc::redis_errc::auth);
    CHECK(std::string(e.what()).find("wrong") == std::string::npos);  // no password in messages
  }
  auto o = options_for(srv);
  o.password.clear();
  hc::redis_segment_index anonymous(o, secret_bytes());
  try {
    (void)anonymous.find(ns_a, seg);
    FAIL("no throw");
  } catch (const hc::redis_error& e) {
    CHECK(e.code() == hc::redis_errc::auth);
  }
}

TEST_CASE("redis: a forged record from a compromised peer never produces a hit") {
  HC_REQUIRE_REDIS();
  hc_test::redis_server srv;
  hc::redis_segment_index idx(options_for(srv), secret_bytes());
  const auto ns_a = hc::namespace_key{}.with_tenant("tenant-a");
  const auto ns_b = hc::namespace_key{}.with_tenant("tenant-b");
  const std::vector<token_id> seg{1, 2, 3, 4, 5, 6, 7, 8};
  REQUIRE(idx.insert(ns_a, seg, loc_of(1, 10, 8)));
  const std::string key_a = idx.key_of(ns_a, seg), key_b = idx.key_of(ns_b, seg);
  const std::string rec_a = srv.command({"GET", key_a});
  REQUIRE(rec_a.size() == hc::redis_segment_index::record_bytes);

  // A peer with write access to everything (a compromised node, a misconfigured ACL) but not the
  // deployment secret: copies A's valid record to B's key, writes garbage, or a record signed
  // with another secret, or replays a record for a different token count.
  const std::string other_secret = "not-the-deployment-secret-000000";
  hc::redis_segment_index outsider(options_for(srv), secret_bytes(other_secret));
  const std::vector<std::string> forgeries{
      rec_a, std::string(hc::redis_segment_index::record_bytes, '\x01'),
      outsider.encode_record(key_b, loc_of(9, 9, 8)), idx.encode_record(key_b, loc_of(9, 9, 7)),
      rec_a.substr(0, 20)};
  std::uint64_t rejected = idx.stats().rejected;
  for (const auto& f : forgeries) {
    REQUIRE(srv.command({"SET", key_b, f}) == "OK");
    CHECK_FALSE(idx.find(ns_b, seg));
    CHECK(idx.stats().rejected == ++rejected);
  }
  // The same forgery on a chain block: the block misses, later blocks too.
  const auto chain_b = idx.chain_keys(ns_b, seg, 4);
  REQUIRE(srv.command({"SET", chain_b[0], rec_a}) == "OK");
  for (const auto& x : idx.find_chain(ns_b, seg, 4)) CHECK_FALSE(x);
  // A's own entry still hits.
  CHECK(idx.find(ns_a, seg) == loc_of(1, 10, 8));
}

TEST_CASE("redis -> dispatch: segments held by peers are dispatched to them as hits") {
  HC_REQUIRE_REDIS();
  hc_test::redis_server srv;
  hc::redis_segment_index idx(options_for(srv), secret_bytes());
  const auto ns = hc::namespace_key{}.with_tenant("acme");
  // Four segments; node 20 cached segment 0, node 30 segment 2; segment 1 and 3 are cold.
  const std::vector<std::vector<token_id>> segs{
      std::vector<token_id>(900, 1), std::vector<token_id>(700, 2), std::vector<token_id>(500, 3),
      std::vector<token_id>(300, 4)};
  REQUIRE(idx.insert(ns, segs[0], {20, 0, 0, 1 << 20, 900}));
  REQUIRE(idx.insert(ns, segs[2], {30, 0, 0, 1 << 19, 500}));
  std::vector<std::size_t> tokens;
  std::vector<std::optional<hc::segment_location>> located;
  for (const auto& s : segs) {
    tokens.push_back(s.size());
    located.push_back(idx.find(ns, s));
  }
  const std::vector<std::uint32_t> workers{10, 20, 30};  // worker w runs on node workers[w]
  const auto jobs = hybridcache::jobs_from_locations(tokens, located, workers);
  CHECK(jobs[0].cached_on == 1);
  CHECK(jobs[1].cached_on == hybridcache::no_worker);
  CHECK(jobs[2].cached_on == 2);
  CHECK(jobs[3].cached_on == hybridcache::no_worker);
  const hybridcache::prefill_cost_model model{.per_token = 1.0, .transfer_per_token = 0.01};
  const std::vector<double> speeds(3, 1.0);
  const auto d = hybridcache::dispatch_segments(jobs, speeds, model);
  CHECK(d.hit[0]);
  CHECK(d.plan.worker_of[0] == 1);
  CHECK(d.hit[2]);
  CHECK(d.plan.worker_of[2] == 2);
  CHECK_FALSE(d.hit[1]);
  CHECK_FALSE(d.hit[3]);
}

namespace {

// A scripted fake "Redis" on a free loopback port: accepts one connection, reads what the client
// sends, writes `response`, then closes (or keeps the socket open, silent, until destroyed).
class fake_redis {
 public:
  fake_redis(std::string response, bool close_after) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    REQUIRE(::listen(fd_, 4) == 0);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this, response = std::move(response), close_after] {
      pollfd p{fd_, POLLIN, 0};
      while (::poll(&p, 1, 10) != 1)
        if (stop_.load()) return;
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      pollfd q{c, POLLIN, 0};
      char buf[65536];
      if (::poll(&q, 1, 2000) == 1) (void)::read(c, buf, sizeof buf);
      std::size_t off = 0;
      while (off < response.size()) {
        const ssize_t n = ::send(c, response.data() + off, response.size() - off, MSG_NOSIGNAL);
        if (n <= 0) break;
        off += static_cast<std::size_t>(n);
      }
      if (!close_after)
        while (!stop_.load()) std::this_thread::sleep_for(5ms);
      ::close(c);
    });
  }
  fake_redis(const fake_redis&) = delete;
  fake_redis& operator=(const fake_redis&) = delete;
  ~fake_redis() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  [[nodiscard]] int port() const noexcept { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

}  // namespace

TEST_CASE("redis: a misbehaving server gives a typed error or misses, never a hit or a hang") {
  const auto ns = hc::namespace_key{}.with_tenant("t");
  std::vector<token_id> req(64 * 4);
  for (std::size_t i = 0; i < req.size(); ++i) req[i] = static_cast<token_id>(i);
  auto index_for = [](const fake_redis& f) {
    hc::redis_options o;
    o.port = f.port();
    o.io_timeout = 150ms;
    return std::make_unique<hc::redis_segment_index>(o, secret_bytes());
  };
  auto code_of = [&](hc::redis_segment_index& idx) -> std::optional<hc::redis_errc> {
    try {
      const auto got = idx.find_chain(ns, req, 4);
      for (const auto& x : got) CHECK_FALSE(x);
      return std::nullopt;
    } catch (const hc::redis_error& e) {
      return e.code();
    }
  };
  SUBCASE("partial pipeline: 10 of 64 replies, then the connection closes") {
    fake_redis f(repeat("$-1\r\n", 10), true);
    auto idx = index_for(f);
    CHECK(code_of(*idx) == hc::redis_errc::unavailable);
    CHECK(idx->stats().errors == 1);
    CHECK(idx->stats().misses == 0);  // nothing partial was counted or returned
  }
  SUBCASE("not the Redis protocol") {
    fake_redis f("@@ hello, I am not redis\r\n", true);
    auto idx = index_for(f);
    CHECK(code_of(*idx) == hc::redis_errc::protocol);
  }
  SUBCASE("replies of the wrong type") {
    fake_redis f(repeat(":1\r\n", 64), false);
    auto idx = index_for(f);
    CHECK(code_of(*idx) == hc::redis_errc::protocol);
  }
  SUBCASE("a silent server: timeout after io_timeout") {
    fake_redis f("", false);
    auto idx = index_for(f);
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(code_of(*idx) == hc::redis_errc::timeout);
    CHECK(std::chrono::steady_clock::now() - t0 < 2s);
  }
  SUBCASE("a lying server: 64 well-formed 45-byte values, all rejected") {
    std::mt19937 rng(5);
    std::string resp;
    for (int i = 0; i < 64; ++i) {
      std::string v(hc::redis_segment_index::record_bytes, '\0');
      for (auto& ch : v) ch = static_cast<char>(rng());
      v[0] = 1;  // the right version byte
      resp += "$45\r\n" + v + "\r\n";
    }
    fake_redis f(resp, false);
    auto idx = index_for(f);
    CHECK(code_of(*idx) == std::nullopt);
    CHECK(idx->stats().rejected == 64);
    CHECK(idx->stats().hits == 0);
  }
  // Issue #21 item 12: hiredis 0.14 allocates an array reply's element table whole from its
  // header and frees it element by element, so `*2147483647` cost seconds past io_timeout. Both
  // huge headers must be refused from the header (an array) or within the byte bound (a bulk
  // string streamed in), as a protocol error that says which bound was hit.
  SUBCASE("an array header of 2^31 - 1 elements: protocol error, refused from the header") {
    fake_redis f("*2147483647\r\n", false);
    auto idx = index_for(f);
    const auto t0 = std::chrono::steady_clock::now();
    try {
      (void)idx->find_chain(ns, req, 4);
      FAIL("no error");
    } catch (const hc::redis_error& e) {
      CHECK(e.code() == hc::redis_errc::protocol);
      CHECK(std::string(e.what()).find("2147483647") != std::string::npos);
      CHECK(std::string(e.what()).find("elements") != std::string::npos);
    }
    CHECK(std::chrono::steady_clock::now() - t0 < 2s);  // generous: io_timeout is 150 ms
    CHECK(idx->stats().errors == 1);
  }
  SUBCASE("a bulk string of 2^31 - 1 bytes streamed in: protocol error at the byte bound") {
    std::string resp = "$2147483647\r\n";
    resp.append(std::size_t{3} << 20, 'x');  // 3 MiB: past the bound, far short of the length
    fake_redis f(resp, false);
    auto idx = index_for(f);
    try {
      (void)idx->find_chain(ns, req, 4);
      FAIL("no error");
    } catch (const hc::redis_error& e) {
      CHECK(e.code() == hc::redis_errc::protocol);
      CHECK(std::string(e.what()).find("bytes") != std::string::npos);
    }
  }
  SUBCASE("nothing listening: unavailable") {
    int port = 0;
    {
      fake_redis f("", true);
      port = f.port();
    }
    hc::redis_options o;
    o.port = port;
    hc::redis_segment_index idx(o, secret_bytes());
    CHECK(code_of(idx) == hc::redis_errc::unavailable);
  }
}

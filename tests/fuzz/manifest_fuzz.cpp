// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the manifest reader of `hybridcache verify`
// (tools/hybridcache/verify_manifest.hpp, issue #21 item 7). Run by scripts/test.d/fuzz.sh. The
// input is manifest.json's text.
//
// Properties (the target aborts when one fails): parse_manifest either returns or throws
// `hybridcache::invalid_argument` — no other exception (no nlohmann type_error from a field of
// the wrong type), no crash, no sanitizer report, no stack overflow — with a printable, bounded
// message. When it returns, re-checked here independently: every case name and manifest path is
// relative without a '..' component, no reference or bound-weight file is named out_* (a
// candidate output's name), every key is one file-name component, ∏ shape fits 64 bits
// (128-bit product), time_axis is null or an axis; and for entries of at most 4096 elements the
// tolerance computations verify runs (plan_tolerance, fused_check, tolerances) run clean under
// the sanitizers on arrays of that size.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <hybridcache/error.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "hybridcache/verify_fast.hpp"
#include "hybridcache/verify_manifest.hpp"

namespace {

namespace hv = hybridcache_cli::vectors;
using json = nlohmann::json;

[[noreturn]] void die(const char* what, std::string_view msg) {
  std::fprintf(stderr, "manifest_fuzz: %s: %.*s\n", what,
               static_cast<int>(msg.size() > 2000 ? 2000 : msg.size()), msg.data());
  std::abort();
}

void check_message(std::string_view msg) {
  if (msg.size() > 2048) die("message too long", msg);
  for (const char c : msg)
    if (c < 0x20 || c > 0x7e) die("non-printable byte in message", msg);
}

void check_path(const std::string& p) {
  if (p.empty() || p[0] == '/') die("accepted an empty or absolute path", p);
  std::size_t b = 0;
  while (true) {
    const auto e = p.find('/', b);
    if (p.substr(b, e == std::string::npos ? std::string::npos : e - b) == "..")
      die("accepted a '..' component", p);
    if (e == std::string::npos) break;
    b = e + 1;
  }
}

// A vectors file is never named like a candidate output (<case>/out_<key>.npy, issue #25).
void check_not_candidate_name(const std::string& p) {
  const auto slash = p.rfind('/');
  if (p.compare(slash == std::string::npos ? 0 : slash + 1, hv::candidate_prefix.size(),
                hv::candidate_prefix) == 0)
    die("accepted a vectors file named like a candidate output", p);
}

void check_accepted(const json& m) {
  for (const auto& c : m.at("cases")) {
    check_path(c.at("name").get<std::string>());
    for (const auto& [key, e] : c.at("expected").items()) {
      if (key.empty() || key == "." || key == ".." || key.find('/') != std::string::npos)
        die("accepted a key that is not a file name", key);
      check_path(e.at("reference").get<std::string>());
      check_not_candidate_name(e.at("reference").get<std::string>());
      __extension__ using u128 = unsigned __int128;
      u128 count = 1;
      for (const auto& d : e.at("shape")) {
        count *= d.get<std::size_t>();
        if (count > SIZE_MAX) die("accepted a shape whose count overflows", key);
      }
      if (count != hv::shape_count(e)) die("shape_count disagrees", key);
      if (hv::is_exact(e)) continue;
      check_path(e.at("bound_weight").get<std::string>());
      check_not_candidate_name(e.at("bound_weight").get<std::string>());
      const auto& ax = e.at("time_axis");
      if (!ax.is_null() && ax.get<std::size_t>() >= e.at("shape").size())
        die("accepted a time_axis outside the shape", key);
      if (count > 4096) continue;
      const std::size_t n = static_cast<std::size_t>(count);
      const std::vector<double> ref(n, 0.5), weight(n, 1.0), cand(n, 0.5);
      const hybridcache::error_model model{};
      const auto plan = hv::plan_tolerance(e, model);
      double worst = 0;
      (void)hv::fused_check(cand.data(), ref.data(), weight.data(), n, plan, &worst);
      (void)hv::tolerances(e, ref, weight, model);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    check_accepted(hv::parse_manifest(text, "fuzz/manifest.json"));
  } catch (const hybridcache::invalid_argument& e) {
    check_message(e.what());
  } catch (const std::exception& e) {
    die("untyped exception", e.what());
  }
  return 0;
}

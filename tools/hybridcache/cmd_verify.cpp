// SPDX-License-Identifier: Apache-2.0
// `hybridcache verify --vectors DIR --candidate DIR`: checks an engine's arrays against the
// golden vectors with the derived tolerances of state/tolerance.hpp; see docs/verification.md.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include <fmt/format.h>
#include <hybridcache/error.hpp>
#include <hybridcache/state/npy.hpp>
#include <hybridcache/state/tolerance.hpp>
#include <nlohmann/json.hpp>

#include "hybridcache/command.hpp"
#include "hybridcache/vectors_common.hpp"
#include "hybridcache/verify_fast.hpp"
#include "hybridcache/verify_manifest.hpp"

namespace {

namespace hc = hybridcache;
namespace hv = hybridcache_cli::vectors;

hc::precision precision_option(const hybridcache_cli::args& a, std::string_view name,
                               hc::precision fallback) {
  const auto v = a.get(name);
  if (!v) return fallback;
  const auto p = hc::parse_precision(*v);
  if (!p)
    throw hybridcache_cli::usage_error{"--" + std::string(name) +
                                       " must be fp64, fp32, fp16 or bf16 (got " + *v + ")"};
  return *p;
}

hc::precision precision_of_descr(const std::string& d) {
  if (d == "<f8") return hc::precision::fp64;
  if (d == "<f2") return hc::precision::fp16;
  return hc::precision::fp32;
}

int run(std::span<const std::string_view> argv) {
  const hybridcache_cli::args a(argv, {"require-all", "quiet"});
  const auto vec = a.get("vectors");
  const auto cand = a.get("candidate");
  if (!vec || !cand)
    throw hybridcache_cli::usage_error{"--vectors DIR and --candidate DIR are required"};
  const std::filesystem::path vdir(*vec), cdir(*cand);
  std::error_code ec;
  if (!std::filesystem::exists(vdir / "manifest.json", ec))
    throw hybridcache_cli::usage_error{"no manifest.json in " + vdir.string()};
  // Untrusted: every field is checked, every path must stay inside its directory.
  const auto manifest = hv::read_manifest(vdir / "manifest.json");
  const auto vroot = hv::resolved_dir(vdir, "--vectors");
  const auto croot = hv::resolved_dir(cdir, "--candidate");
  hc::error_model model;
  model.accumulate = precision_option(a, "accumulate", hc::precision::fp32);
  model.state_storage = precision_option(a, "state-storage", model.accumulate);
  const auto forced_output = a.get("output");
  if (forced_output) model.output = precision_option(a, "output", hc::precision::fp32);
  const std::string filter = a.get_or("filter", "");
  const bool require_all = a.has("require-all"), quiet = a.has("quiet");

  std::size_t checked = 0, failed = 0, missing = 0;
  std::uintmax_t bytes = 0;
  fmt::print("error model: accumulate {}, state storage {}, output {}\n",
             hc::to_string(model.accumulate), hc::to_string(model.state_storage),
             forced_output ? std::string(hc::to_string(model.output)) : "from candidate dtype");
  const auto& cases = manifest.at("cases");
  for (std::size_t ci = 0; ci < cases.size(); ++ci) {
    const auto& c = cases[ci];
    const auto name = c.at("name").get<std::string>();
    if (!filter.empty() && name.find(filter) == std::string::npos) continue;
    for (const auto& [key, e] : c.at("expected").items()) {
      const std::string field = "cases[" + std::to_string(ci) + "].expected[\"" + key + "\"]";
      const auto cpath =
          hv::confined(croot, name + "/" + key + ".npy", "--candidate",
                       "the candidate of " + field + " (" + name + "/" + key + ".npy)");
      if (!std::filesystem::exists(cpath, ec)) {
        ++missing;
        if (require_all) fmt::print("MISSING {} {}\n", name, key);
        continue;
      }
      const auto ref_path = hv::confined(vroot, e.at("reference").get<std::string>(), "--vectors",
                                         field + ".reference")
                                .string();
      const std::size_t expected_n = hv::shape_count(e);
      const auto check_count = [&](std::size_t n, const std::string& file, const char* what) {
        if (n != expected_n)
          throw hybridcache::invalid_argument(
              "--vectors", hybridcache::detail::excerpt(file, 512),
              std::string(what) + " of " + field + " has " + std::to_string(n) +
                  " elements but the manifest's shape has " + std::to_string(expected_n));
      };
      const auto csize = std::filesystem::file_size(cpath, ec);
      if (!ec) bytes += csize;
      if (!hv::is_exact(e)) {
        const auto weight_path = hv::confined(vroot, e.at("bound_weight").get<std::string>(),
                                              "--vectors", field + ".bound_weight")
                                     .string();
        // Fast path: float32/float64 candidate against float64 reference and weights, mapped in
        // place and checked in one fused pass (verify_fast.hpp).
        auto mr = hv::mapped_npy::open(ref_path);
        auto mw = hv::mapped_npy::open(weight_path);
        auto mc = hv::mapped_npy::open(cpath.string());
        if (mr) check_count(mr->size(), ref_path, "the reference");
        if (mw) check_count(mw->size(), weight_path, "the bound weights");
        if (mr && mw && mc && mr->is_f8() && mw->is_f8()) {
          ++checked;
          if (mc->size() != mr->size()) {
            ++failed;
            fmt::print("FAIL {} {}: {} elements, expected {}\n", name, key, mc->size(), mr->size());
            continue;
          }
          hc::error_model m = model;
          if (!forced_output) m.output = mc->is_f8() ? hc::precision::fp64 : hc::precision::fp32;
          const auto plan = hv::plan_tolerance(e, m);
          double tol_worst = 0;
          const auto r =
              mc->is_f8()
                  ? hv::fused_check(mc->f8(), mr->f8(), mw->f8(), mr->size(), plan, &tol_worst)
                  : hv::fused_check(mc->f4(), mr->f8(), mw->f8(), mr->size(), plan, &tol_worst);
          if (!r.passed()) ++failed;
          if (!quiet || !r.passed())
            fmt::print("{} {} {}: n={} max|err|={:.3g} max err/tol={:.3g} (tol {:.3g} at [{}]){}\n",
                       r.passed() ? "PASS" : "FAIL", name, key, r.count, r.max_abs_error,
                       r.max_ratio, tol_worst, r.worst,
                       r.passed() ? "" : fmt::format(", {} over", r.failures));
          continue;
        }
      }
      const auto ref = hc::npy::load(ref_path);
      check_count(ref.size(), ref_path, "the reference");
      const auto cv = hc::npy::load(cpath.string());
      ++checked;
      if (cv.size() != ref.size()) {
        ++failed;
        fmt::print("FAIL {} {}: {} elements, expected {}\n", name, key, cv.size(), ref.size());
        continue;
      }
      if (hv::is_exact(e)) {  // integers, bytes, index lists: element-for-element equality
        std::size_t first = ref.size(), diff = 0;
        for (std::size_t i = 0; i < ref.size(); ++i)
          if (cv.values[i] != ref.values[i]) {
            if (diff++ == 0) first = i;
          }
        if (diff != 0) ++failed;
        if (diff != 0)
          fmt::print("FAIL {} {}: n={} exact, {} differ; first at [{}]: got {}, expected {}\n",
                     name, key, ref.size(), diff, first, cv.values[first], ref.values[first]);
        else if (!quiet)
          fmt::print("PASS {} {}: n={} exact\n", name, key, ref.size());
        continue;
      }
      const auto weight_path = hv::confined(vroot, e.at("bound_weight").get<std::string>(),
                                            "--vectors", field + ".bound_weight")
                                   .string();
      const auto wt = hc::npy::load(weight_path);
      check_count(wt.size(), weight_path, "the bound weights");
      hc::error_model m = model;
      if (!forced_output) m.output = precision_of_descr(cv.descr);
      const auto tol = hv::tolerances(e, ref.values, wt.values, m);
      const auto r = hc::check_close(cv.values, ref.values, tol);
      if (!r.passed()) ++failed;
      if (!quiet || !r.passed())
        fmt::print("{} {} {}: n={} max|err|={:.3g} max err/tol={:.3g} (tol {:.3g} at [{}]){}\n",
                   r.passed() ? "PASS" : "FAIL", name, key, r.count, r.max_abs_error, r.max_ratio,
                   tol[r.worst], r.worst, r.passed() ? "" : fmt::format(", {} over", r.failures));
    }
  }
  fmt::print("{} arrays checked ({:.1f} MB of candidates), {} failed, {} missing\n", checked,
             static_cast<double>(bytes) / 1e6, failed, missing);
  if (checked == 0) {
    fmt::print("nothing checked: the candidate directory holds no <case>/<array>.npy files\n");
    return 1;
  }
  return failed != 0 || (require_all && missing != 0) ? 1 : 0;
}

const hybridcache_cli::registrar reg{
    {"verify", "check an engine's arrays against golden vectors with derived tolerances",
     "usage: hybridcache verify --vectors DIR --candidate DIR [--accumulate P]\n"
     "                          [--state-storage P] [--output P] [--filter TEXT]\n"
     "                          [--require-all] [--quiet]\n"
     "  The candidate holds <case name>/<expected key>.npy (e.g. "
     "state/gla/outputs/T64/fp32/o.npy).\n"
     "  P is fp64, fp32, fp16 or bf16: the kernel's accumulator (default fp32), the format its\n"
     "  state is kept in between tokens (default: the accumulator's), and its output format\n"
     "  (default: the candidate file's dtype). Exits 1 if any array fails its bound, if nothing\n"
     "  was checked, or (with --require-all) if an expected array is missing.",
     run}};

}  // namespace

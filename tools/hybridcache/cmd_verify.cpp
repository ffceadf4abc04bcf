// SPDX-License-Identifier: Apache-2.0
// `hybridcache verify --vectors DIR --candidate DIR`: checks an engine's arrays against the
// golden vectors with the derived tolerances of state/tolerance.hpp; see docs/verification.md.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

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

/// What a candidate case directory holds when none of the case's outputs is there.
enum class stray { none, vectors, old_names };

/// Looks, without reading any file, at the names of the regular files directly in the candidate
/// directory of case `c` (manifest entry, checked): `vectors` when one is named like a vectors
/// file — in_/ref_/bound_*, or a file name the manifest gives a reference or bound weights of
/// this case (so a copy of a 0.1 vectors folder is recognised too) — or when the candidate root
/// holds a manifest.json; `old_names` when one is named <key>.npy for an expected key (0.1's
/// candidate names). `example` receives the file found, relative to `croot`: the first input by
/// name if there is one, else the first other such file by name.
stray look_at(const std::filesystem::path& croot, const nlohmann::json& c, std::string& example) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto name = c.at("name").get<std::string>();
  std::set<std::string> vector_files, old_candidates;
  for (const auto& [key, e] : c.at("expected").items()) {
    old_candidates.insert(key + ".npy");
    for (const char* f : {"reference", "bound_weight"})
      if (e.contains(f))
        vector_files.insert(fs::path(e.at(f).get<std::string>()).filename().string());
  }
  const auto starts = [](const std::string& s, std::string_view p) {
    return s.compare(0, p.size(), p) == 0;
  };
  std::set<std::string> inputs, others, olds;
  fs::directory_iterator it(croot / name, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string f = it->path().filename().string();
    if (starts(f, hv::input_prefix))
      inputs.insert(f);
    else if (starts(f, hv::reference_prefix) || starts(f, hv::bound_prefix) ||
             vector_files.count(f) != 0)
      others.insert(f);
    else if (old_candidates.count(f) != 0)
      olds.insert(f);
  }
  const auto& pick = !inputs.empty() ? inputs : (!others.empty() ? others : olds);
  if (!pick.empty()) example = (fs::path(name) / *pick.begin()).string();
  if (!inputs.empty() || !others.empty()) return stray::vectors;
  if (fs::exists(croot / "manifest.json", ec)) {
    example = "manifest.json";
    return stray::vectors;
  }
  return olds.empty() ? stray::none : stray::old_names;
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
  const auto version = manifest.at("format_version").get<int>();
  if (version != hv::format_version)
    fmt::print(
        "note: {} has format_version {} (hybridcache 0.1's file names, deprecated): its references "
        "are read through the manifest as before, but regenerate it with `hybridcache vectors` "
        "and the manifest's seed (same arrays, 0.2's names); candidate outputs are "
        "<case>/{}<key>.npy in either format\n",
        (vdir / "manifest.json").string(), version, hv::candidate_prefix);
  fmt::print("error model: accumulate {}, state storage {}, output {}\n",
             hc::to_string(model.accumulate), hc::to_string(model.state_storage),
             forced_output ? std::string(hc::to_string(model.output)) : "from candidate dtype");
  // Cases without an output: the first one; those whose directory holds vectors files instead
  // (a copy of --vectors: the error when nothing was checked) and those holding 0.1-named
  // outputs (an error, whatever else passed: they would be skipped unread).
  std::string first_missing, first_inputs_only;
  std::size_t old_named = 0, inputs_only = 0;
  const auto shown = [&](const std::string& rel) { return (cdir / rel).string(); };
  const auto& cases = manifest.at("cases");
  for (std::size_t ci = 0; ci < cases.size(); ++ci) {
    const auto& c = cases[ci];
    const auto name = c.at("name").get<std::string>();
    if (!filter.empty() && name.find(filter) == std::string::npos) continue;
    std::size_t found = 0;
    std::vector<std::pair<std::string, std::string>> absent;  // key, candidate file
    for (const auto& [key, e] : c.at("expected").items()) {
      const std::string field = "cases[" + std::to_string(ci) + "].expected[\"" + key + "\"]";
      const std::string rel = hv::candidate_file(name, key);
      const auto cpath =
          hv::confined(croot, rel, "--candidate", "the candidate of " + field + " (" + rel + ")");
      if (!std::filesystem::exists(cpath, ec)) {
        ++missing;
        absent.emplace_back(key, rel);
        continue;
      }
      ++found;
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
    if (absent.empty()) continue;
    const std::string& rel0 = absent.front().second;
    if (first_missing.empty()) first_missing = "case " + name + " (expected " + shown(rel0) + ")";
    // None of the case's outputs: what does its directory hold instead?
    std::string example;
    const stray st = found == 0 ? look_at(croot, c, example) : stray::none;
    if (st == stray::old_names) {  // outputs under 0.1's names: never skip them silently
      if (old_named++ < 3)
        fmt::print(
            "error: no candidate output for case {} (expected {}); found {}, hybridcache 0.1's "
            "name for it: since 0.2 a candidate output is named <case>/{}<key>.npy\n",
            name, shown(rel0), shown(example), hv::candidate_prefix);
      continue;
    }
    std::string hint;
    if (st == stray::vectors) {
      const std::string file = std::filesystem::path(example).filename().string();
      const bool input = file.compare(0, hv::input_prefix.size(), hv::input_prefix) == 0;
      hint = example == "manifest.json"
                 ? "; the directory holds a vectors manifest ("
                 : "; the directory holds the " + std::string(input ? "inputs" : "vectors files") +
                       " of case " + name + " (";
      hint += shown(example) + "): did you point --candidate at the vectors folder?";
    }
    if (st == stray::vectors && inputs_only++ == 0)
      first_inputs_only =
          "no candidate output for case " + name + " (expected " + shown(rel0) + ")" + hint;
    if (require_all)
      for (const auto& [key, rel] : absent)
        fmt::print("MISSING {} {}: no candidate output for case {} (expected {}){}\n", name, key,
                   name, shown(rel), hint);
  }
  fmt::print("{} arrays checked ({:.1f} MB of candidates), {} failed, {} missing\n", checked,
             static_cast<double>(bytes) / 1e6, failed, missing);
  if (old_named != 0) {
    fmt::print(
        "error: {} case(s) hold outputs under hybridcache 0.1's names <case>/<key>.npy and none "
        "named <case>/{}<key>.npy: rename the engine's outputs (docs/verification.md)\n",
        old_named, hv::candidate_prefix);
    return 1;
  }
  if (checked == 0) {
    if (inputs_only != 0)
      fmt::print("error: {} ({} case(s) hold vectors files and no output)\n", first_inputs_only,
                 inputs_only);
    else
      fmt::print(
          "nothing checked: no candidate output for {}, nor for any other case: the candidate "
          "directory holds no <case>/{}<key>.npy file\n",
          first_missing, hv::candidate_prefix);
    return 1;
  }
  if (missing != 0 && !require_all)
    fmt::print(
        "{} expected arrays have no candidate output and were skipped (--require-all fails "
        "on them); first: no candidate output for {}\n",
        missing, first_missing);
  return failed != 0 || (require_all && missing != 0) ? 1 : 0;
}

const hybridcache_cli::registrar reg{
    {"verify", "check an engine's arrays against golden vectors with derived tolerances",
     "usage: hybridcache verify --vectors DIR --candidate DIR [--accumulate P]\n"
     "                          [--state-storage P] [--output P] [--filter TEXT]\n"
     "                          [--require-all] [--quiet]\n"
     "  The candidate holds <case name>/out_<expected key>.npy (e.g. "
     "state/gla/outputs/T64/fp32/out_o.npy);\n"
     "  the vectors' own files are in_*, ref_*, bound_* (never read as candidates).\n"
     "  P is fp64, fp32, fp16 or bf16: the kernel's accumulator (default fp32), the format its\n"
     "  state is kept in between tokens (default: the accumulator's), and its output format\n"
     "  (default: the candidate file's dtype). Exits 1 if any array fails its bound, if nothing\n"
     "  was checked, or (with --require-all) if an expected array is missing.",
     run}};

}  // namespace

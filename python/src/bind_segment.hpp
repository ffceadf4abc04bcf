#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Python bindings of segment/ as the submodule `hybridcache.segment`: typed, injective cache
/// namespaces (SparseX's extra key e in h_virt = H(B, e), SparseX §4.3), keyed XXH3-128 digests,
/// position-independent segment keys K(ns, x) and chained prefix block keys h_i (the byte format
/// is docs/design/key_format.md).

#include <hybridcache/segment.hpp>

#include <nanobind/operators.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common.hpp"

namespace hybridcache_python {

/// Token ids as uint32 (hybridcache::token_id). A uint32 array is used in place; any
/// other integer array or sequence is range-checked (never wrapped modulo 2^32).
struct token_ids {
  std::vector<hybridcache::token_id> copy;
  std::span<const hybridcache::token_id> view;
};

inline token_ids to_token_ids(nb::handle obj) {
  namespace hc = hybridcache;
  using tid = hc::token_id;
  token_ids out;
  in_array<tid> exact;
  if (nb::try_cast(obj, exact, /*convert=*/false)) {
    out.view = as_span(exact);
    return out;
  }
  nb::object holder;
  const auto wide = as_array<std::int64_t>(obj, "int64", holder, "tokens");
  out.copy.resize(wide.size());
  for (std::size_t i = 0; i < wide.size(); ++i) {
    const std::int64_t t = wide.data()[i];
    if (t < 0 || t > std::int64_t{std::numeric_limits<tid>::max()})
      hc::detail::throw_invalid(hc::detail::indexed("tokens", i), t, "token ids are uint32");
    out.copy[i] = static_cast<tid>(t);
  }
  out.view = out.copy;
  return out;
}

inline void bind_segment(nb::module_& m) {
  namespace hc = hybridcache;
  using namespace nb::literals;
  nb::module_ s = m.def_submodule(
      "segment",
      "Cache namespaces and keys: typed injective namespace_key, keyed XXH3-128 digests, "
      "position-independent segment keys and chained prefix block keys.");

  nb::class_<hc::digest>(s, "digest", "A 128-bit key (an address: hits are still verified).")
      .def(nb::init<>())
      .def_rw("lo", &hc::digest::lo)
      .def_rw("hi", &hc::digest::hi)
      .def(
          "to_bytes",
          [](const hc::digest& d) {
            const auto b = d.to_bytes();
            return nb::bytes(reinterpret_cast<const char*>(b.data()), b.size());
          },
          "The 16 bytes: lo then hi, little-endian.")
      .def("to_hex", &hc::digest::to_hex, "32 lowercase hex digits of to_bytes().")
      .def(nb::self == nb::self)
      .def("__lt__", [](const hc::digest& a, const hc::digest& b) { return a < b; })
      .def("__hash__", [](const hc::digest& d) { return hc::digest_hasher{}(d); })
      .def("__repr__", [](const hc::digest& d) { return "digest(" + d.to_hex() + ")"; });

  nb::enum_<hc::namespace_field>(s, "namespace_field")
      .value("tenant", hc::namespace_field::tenant)
      .value("knowledge_base", hc::namespace_field::knowledge_base)
      .value("adapter", hc::namespace_field::adapter)
      .value("model", hc::namespace_field::model)
      .value("extra", hc::namespace_field::extra);

  nb::class_<hc::namespace_key>(
      s, "namespace_key",
      "Who may see a cache entry: typed optional fields (tenant, knowledge_base, adapter, model) "
      "plus ordered extras, encoded injectively. namespace_key() is the shared namespace.")
      .def(nb::init<>())
      .def_static("shared", &hc::namespace_key::shared)
      .def("with_tenant", &hc::namespace_key::with_tenant, "value"_a)
      .def("with_knowledge_base", &hc::namespace_key::with_knowledge_base, "value"_a)
      .def("with_adapter", &hc::namespace_key::with_adapter, "value"_a)
      .def("with_model", &hc::namespace_key::with_model, "value"_a)
      .def("with_extra", &hc::namespace_key::with_extra, "value"_a)
      .def("with_field", &hc::namespace_key::with_field, "field"_a, "value"_a)
      .def_prop_ro("tenant", &hc::namespace_key::tenant)
      .def_prop_ro("knowledge_base", &hc::namespace_key::knowledge_base)
      .def_prop_ro("adapter", &hc::namespace_key::adapter)
      .def_prop_ro("model", &hc::namespace_key::model)
      .def_prop_ro("extras", &hc::namespace_key::extras)
      .def_prop_ro("is_shared", &hc::namespace_key::is_shared)
      .def(
          "to_bytes",
          [](const hc::namespace_key& k) {
            const auto b = k.bytes();
            return nb::bytes(b.data(), b.size());
          },
          "The canonical byte encoding (HCNS format).")
      .def_static(
          "decode",
          [](nb::bytes b) {
            return hc::namespace_key::decode(std::string_view(b.c_str(), b.size()));
          },
          "data"_a, "Parses the byte encoding; raises InvalidArgument unless it is canonical.")
      .def_static("parse", &hc::namespace_key::parse, "text"_a,
                  "Parses the text form, e.g. 'ns{tenant=org_1;extra=a}'.")
      .def("__str__", &hc::namespace_key::to_string)
      .def("__repr__",
           [](const hc::namespace_key& k) { return "namespace_key(" + k.to_string() + ")"; })
      .def(nb::self == nb::self)
      .def("__hash__",
           [](const hc::namespace_key& k) { return std::hash<std::string_view>{}(k.bytes()); });

  nb::class_<hc::xxh3_hash>(s, "xxh3_hash",
                            "XXH3-128 keyed by a 192-byte secret; xxh3_hash() draws a random "
                            "secret, so keys are unpredictable to other processes.")
      .def(nb::init<>())
      .def(
          "__init__",
          [](hc::xxh3_hash* self, nb::bytes secret) {
            new (self) hc::xxh3_hash(std::span<const std::byte>(
                reinterpret_cast<const std::byte*>(secret.c_str()), secret.size()));
          },
          "secret"_a, "A caller-provided secret of exactly secret_size random bytes.")
      .def_ro_static("secret_size", &hc::xxh3_hash::secret_size);

  nb::enum_<hc::segment_kind>(s, "segment_kind")
      .value("position_independent", hc::segment_kind::position_independent)
      .value("anchored", hc::segment_kind::anchored);

  s.def(
      "segment_key",
      [](const hc::xxh3_hash& h, const hc::namespace_key& ns, nb::handle tokens,
         hc::segment_kind kind) {
        const token_ids t = to_token_ids(tokens);
        nb::gil_scoped_release unlocked;
        return hc::segment_key(h, ns, t.view, kind);
      },
      "hash"_a, "ns"_a, "tokens"_a, "kind"_a = hc::segment_kind::position_independent,
      "Position-independent key K(ns, tokens) = H('HCK1' | kind | len(ns) | ns | n | tokens).\n"
      "tokens: uint32 token ids (a NumPy array or a sequence of ints).");
  s.def(
      "root_key",
      [](const hc::xxh3_hash& h, const hc::namespace_key& ns) { return hc::root_key(h, ns); },
      "hash"_a, "ns"_a, "h_0 = H('HCK1' | 'R' | len(ns) | ns), the root of a namespace's chain.");
  s.def(
      "chain_key",
      [](const hc::xxh3_hash& h, const hc::digest& prev, nb::handle block) {
        const token_ids t = to_token_ids(block);
        return hc::chain_key(h, prev, t.view);
      },
      "hash"_a, "prev"_a, "block"_a, "h_i = H('HCK1' | 'B' | h_(i-1) | n | block).");
  s.def(
      "block_keys",
      [](const hc::xxh3_hash& h, const hc::namespace_key& ns, nb::handle tokens,
         std::size_t block_size) {
        const token_ids t = to_token_ids(tokens);
        nb::gil_scoped_release unlocked;
        return hc::block_keys(h, ns, t.view, block_size);
      },
      "hash"_a, "ns"_a, "tokens"_a, "block_size"_a,
      "Chained keys h_1..h_m of the m = len(tokens) // block_size full blocks; h_i identifies\n"
      "(ns, tokens[:i * block_size]). A trailing partial block has no key.");
  s.def(
      "block_keys_array",
      [](const hc::xxh3_hash& h, const hc::namespace_key& ns, nb::handle tokens,
         std::size_t block_size) {
        const token_ids t = to_token_ids(tokens);
        std::vector<std::uint64_t> rows;
        {
          nb::gil_scoped_release unlocked;
          const auto keys = hc::block_keys(h, ns, t.view, block_size);
          rows.reserve(2 * keys.size());
          for (const auto& k : keys) {
            rows.push_back(k.lo);
            rows.push_back(k.hi);
          }
        }
        const std::size_t n = rows.size() / 2;
        return to_numpy_2d(std::move(rows), n, 2);
      },
      "hash"_a, "ns"_a, "tokens"_a, "block_size"_a,
      "block_keys as one (m, 2) uint64 array: row i is (h_(i+1).lo, h_(i+1).hi). The tree\n"
      "policy's key calls take it as they take the list, without a digest object per block.");
}

}  // namespace hybridcache_python

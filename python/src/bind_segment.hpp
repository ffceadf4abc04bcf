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
  in_array<std::int64_t> wide;
  nb::object holder;  // a converted array, kept alive while `wide` points into it
  if (!nb::try_cast(obj, wide, /*convert=*/true)) {
    // Sequences (lists, tuples): through NumPy, which reports what it could not convert.
    nb::object np = nb::module_::import_("numpy");
    holder = np.attr("asarray")(obj, nb::arg("dtype") = np.attr("int64"));
    wide = nb::cast<in_array<std::int64_t>>(holder);
  }
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
  namespace sg = hybridcache::segment;
  using namespace nb::literals;
  nb::module_ s = m.def_submodule(
      "segment",
      "Cache namespaces and keys: typed injective namespace_key, keyed XXH3-128 digests, "
      "position-independent segment keys and chained prefix block keys.");

  nb::class_<sg::digest>(s, "digest", "A 128-bit key (an address: hits are still verified).")
      .def(nb::init<>())
      .def_rw("lo", &sg::digest::lo)
      .def_rw("hi", &sg::digest::hi)
      .def(
          "to_bytes",
          [](const sg::digest& d) {
            const auto b = d.to_bytes();
            return nb::bytes(reinterpret_cast<const char*>(b.data()), b.size());
          },
          "The 16 bytes: lo then hi, little-endian.")
      .def("to_hex", &sg::digest::to_hex, "32 lowercase hex digits of to_bytes().")
      .def(nb::self == nb::self)
      .def("__lt__", [](const sg::digest& a, const sg::digest& b) { return a < b; })
      .def("__hash__", [](const sg::digest& d) { return sg::digest_hasher{}(d); })
      .def("__repr__", [](const sg::digest& d) { return "digest(" + d.to_hex() + ")"; });

  nb::enum_<sg::namespace_field>(s, "namespace_field")
      .value("tenant", sg::namespace_field::tenant)
      .value("knowledge_base", sg::namespace_field::knowledge_base)
      .value("adapter", sg::namespace_field::adapter)
      .value("model", sg::namespace_field::model)
      .value("extra", sg::namespace_field::extra);

  nb::class_<sg::namespace_key>(
      s, "namespace_key",
      "Who may see a cache entry: typed optional fields (tenant, knowledge_base, adapter, model) "
      "plus ordered extras, encoded injectively. namespace_key() is the shared namespace.")
      .def(nb::init<>())
      .def_static("shared", &sg::namespace_key::shared)
      .def("with_tenant", &sg::namespace_key::with_tenant, "value"_a)
      .def("with_knowledge_base", &sg::namespace_key::with_knowledge_base, "value"_a)
      .def("with_adapter", &sg::namespace_key::with_adapter, "value"_a)
      .def("with_model", &sg::namespace_key::with_model, "value"_a)
      .def("with_extra", &sg::namespace_key::with_extra, "value"_a)
      .def("with_field", &sg::namespace_key::with_field, "field"_a, "value"_a)
      .def_prop_ro("tenant", &sg::namespace_key::tenant)
      .def_prop_ro("knowledge_base", &sg::namespace_key::knowledge_base)
      .def_prop_ro("adapter", &sg::namespace_key::adapter)
      .def_prop_ro("model", &sg::namespace_key::model)
      .def_prop_ro("extras", &sg::namespace_key::extras)
      .def_prop_ro("is_shared", &sg::namespace_key::is_shared)
      .def(
          "to_bytes",
          [](const sg::namespace_key& k) {
            const auto b = k.bytes();
            return nb::bytes(b.data(), b.size());
          },
          "The canonical byte encoding (HCNS format).")
      .def_static(
          "decode",
          [](nb::bytes b) {
            return sg::namespace_key::decode(std::string_view(b.c_str(), b.size()));
          },
          "data"_a, "Parses the byte encoding; raises InvalidArgument unless it is canonical.")
      .def_static("parse", &sg::namespace_key::parse, "text"_a,
                  "Parses the text form, e.g. 'ns{tenant=org_1;extra=a}'.")
      .def("__str__", &sg::namespace_key::to_string)
      .def("__repr__",
           [](const sg::namespace_key& k) { return "namespace_key(" + k.to_string() + ")"; })
      .def(nb::self == nb::self)
      .def("__hash__",
           [](const sg::namespace_key& k) { return std::hash<std::string_view>{}(k.bytes()); });

  nb::class_<sg::xxh3_hash>(s, "xxh3_hash",
                            "XXH3-128 keyed by a 192-byte secret; xxh3_hash() draws a random "
                            "secret, so keys are unpredictable to other processes.")
      .def(nb::init<>())
      .def(
          "__init__",
          [](sg::xxh3_hash* self, nb::bytes secret) {
            new (self) sg::xxh3_hash(std::span<const std::byte>(
                reinterpret_cast<const std::byte*>(secret.c_str()), secret.size()));
          },
          "secret"_a, "A caller-provided secret of exactly secret_size random bytes.")
      .def_ro_static("secret_size", &sg::xxh3_hash::secret_size);

  nb::enum_<sg::segment_kind>(s, "segment_kind")
      .value("position_independent", sg::segment_kind::position_independent)
      .value("anchored", sg::segment_kind::anchored);

  s.def(
      "segment_key",
      [](const sg::xxh3_hash& h, const sg::namespace_key& ns, nb::handle tokens,
         sg::segment_kind kind) {
        const token_ids t = to_token_ids(tokens);
        nb::gil_scoped_release unlocked;
        return sg::segment_key(h, ns, t.view, kind);
      },
      "hash"_a, "ns"_a, "tokens"_a, "kind"_a = sg::segment_kind::position_independent,
      "Position-independent key K(ns, tokens) = H('HCK1' | kind | len(ns) | ns | n | tokens).\n"
      "tokens: uint32 token ids (a NumPy array or a sequence of ints).");
  s.def(
      "root_key",
      [](const sg::xxh3_hash& h, const sg::namespace_key& ns) { return sg::root_key(h, ns); },
      "hash"_a, "ns"_a, "h_0 = H('HCK1' | 'R' | len(ns) | ns), the root of a namespace's chain.");
  s.def(
      "chain_key",
      [](const sg::xxh3_hash& h, const sg::digest& prev, nb::handle block) {
        const token_ids t = to_token_ids(block);
        return sg::chain_key(h, prev, t.view);
      },
      "hash"_a, "prev"_a, "block"_a, "h_i = H('HCK1' | 'B' | h_(i-1) | n | block).");
  s.def(
      "block_keys",
      [](const sg::xxh3_hash& h, const sg::namespace_key& ns, nb::handle tokens,
         std::size_t block_size) {
        const token_ids t = to_token_ids(tokens);
        nb::gil_scoped_release unlocked;
        return sg::block_keys(h, ns, t.view, block_size);
      },
      "hash"_a, "ns"_a, "tokens"_a, "block_size"_a,
      "Chained keys h_1..h_m of the m = len(tokens) // block_size full blocks; h_i identifies\n"
      "(ns, tokens[:i * block_size]). A trailing partial block has no key.");
}

}  // namespace hybridcache_python

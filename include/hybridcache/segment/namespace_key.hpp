#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `namespace_key`: who may see a cache entry. SparseX's "extra key" (SparseX §4.3,
/// h_virt = H(B, e)) made typed and injective.
///
/// A namespace is a tuple of *typed, optional* fields — tenant, knowledge base, adapter, model —
/// plus an ordered list of free-form `extra` strings. It is encoded to bytes so that different
/// tuples never give the same bytes (the encoding is injective; `decode(encode(x)) == x` and the
/// decoder accepts only canonical encodings):
///
/// ```
/// offset  size  content
/// 0       4     magic "HCNS"
/// 4       1     format version = 1
/// then, for each PRESENT field, in increasing tag order (tenant 0x01, knowledge_base 0x02,
/// adapter 0x03, model 0x04; then every extra string 0x05 in the order given):
///         1     tag
///         4     value length L, little-endian uint32
///         L     value bytes (any bytes, UTF-8 not required)
/// last    1     0x00 end tag
/// ```
///
/// Consequences, each tested in tests/segment/namespace_key_test.cpp:
/// - `("org_1","2345")` and `("org_12345","")` as extras differ (length prefixes), and a value
///   moved from one field to another differs (tags);
/// - a present-but-empty field differs from an absent one (tag + length 0 vs nothing);
/// - the namespace with no fields at all, `namespace_key::shared()` (= `namespace_key{}`), is the
///   one explicitly shared namespace. Nothing falls back to it: parsing malformed text or bytes
///   throws `hybridcache::invalid_argument`.
///
/// Text form (for CLIs and traces): `ns{}` for the shared namespace, else
/// `ns{tenant=org_1;kb=docs;adapter=lora-7;model=qwen3;extra=a;extra=b}` with `%`, `;`, `=`,
/// `{`, `}` and bytes < 0x20 or >= 0x7f written as `%XX`. Fields may be given in any order in
/// text; each of tenant/kb/adapter/model at most once.
///
/// The key keeps its encoding in a shared immutable string, so copying a key is cheap and an
/// index can compare namespaces by pointer first, bytes second.

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// The typed fields of a namespace, in encoding order.
enum class namespace_field : std::uint8_t {
  tenant = 0x01,
  knowledge_base = 0x02,
  adapter = 0x03,
  model = 0x04,
  extra = 0x05,
};

/// An injective, typed cache namespace. See the file comment for the byte format.
class namespace_key {
 public:
  /// Largest accepted field value, in bytes (defends the encoder against absurd inputs).
  static constexpr std::size_t max_field_bytes = 1u << 16;
  /// Largest number of `extra` strings.
  static constexpr std::size_t max_extras = 256;
  /// Format version byte written after the magic.
  static constexpr std::uint8_t format_version = 1;

  /// The shared namespace (no fields). Entries inserted under it are visible to every request
  /// that also names the shared namespace explicitly — and to no other.
  namespace_key() : encoded_(shared_encoding()) {}

  /// Same as `namespace_key{}`; spelled out where sharing is intended.
  [[nodiscard]] static namespace_key shared() { return namespace_key{}; }

  /// @returns a copy with the tenant set (replacing any previous tenant).
  /// @throws invalid_argument if `value` is longer than `max_field_bytes`.
  [[nodiscard]] namespace_key with_tenant(std::string_view value) const {
    return with_field(namespace_field::tenant, value);
  }
  /// @returns a copy with the knowledge base set.
  [[nodiscard]] namespace_key with_knowledge_base(std::string_view value) const {
    return with_field(namespace_field::knowledge_base, value);
  }
  /// @returns a copy with the adapter (e.g. a LoRA id) set. A base-model request has no adapter
  /// and therefore never aliases an adapter namespace.
  [[nodiscard]] namespace_key with_adapter(std::string_view value) const {
    return with_field(namespace_field::adapter, value);
  }
  /// @returns a copy with the model id set.
  [[nodiscard]] namespace_key with_model(std::string_view value) const {
    return with_field(namespace_field::model, value);
  }
  /// @returns a copy with one more free-form string appended (order matters).
  [[nodiscard]] namespace_key with_extra(std::string_view value) const {
    return with_field(namespace_field::extra, value);
  }

  /// @returns a copy with `field` set to `value` (appended for `extra`).
  /// @throws invalid_argument on an oversize value or too many extras.
  [[nodiscard]] namespace_key with_field(namespace_field field, std::string_view value) const {
    check_value(field, value);
    namespace_key out = *this;
    switch (field) {
      case namespace_field::tenant: out.tenant_ = std::string(value); break;
      case namespace_field::knowledge_base: out.knowledge_base_ = std::string(value); break;
      case namespace_field::adapter: out.adapter_ = std::string(value); break;
      case namespace_field::model: out.model_ = std::string(value); break;
      case namespace_field::extra:
        if (out.extras_.size() >= max_extras)
          hybridcache::detail::throw_invalid("namespace_key.extra", out.extras_.size(),
                                "too many extra strings (max 256)");
        out.extras_.emplace_back(value);
        break;
      default:
        hybridcache::detail::throw_invalid("namespace_key.field", static_cast<unsigned>(field),
                              "unknown field tag");
    }
    out.encoded_ = std::make_shared<const std::string>(out.encode_fields());
    return out;
  }

  [[nodiscard]] const std::optional<std::string>& tenant() const noexcept { return tenant_; }
  [[nodiscard]] const std::optional<std::string>& knowledge_base() const noexcept {
    return knowledge_base_;
  }
  [[nodiscard]] const std::optional<std::string>& adapter() const noexcept { return adapter_; }
  [[nodiscard]] const std::optional<std::string>& model() const noexcept { return model_; }
  [[nodiscard]] const std::vector<std::string>& extras() const noexcept { return extras_; }

  /// True for the shared namespace (no field present).
  [[nodiscard]] bool is_shared() const noexcept {
    return !tenant_ && !knowledge_base_ && !adapter_ && !model_ && extras_.empty();
  }

  /// The canonical encoding (file comment). Stable for the life of the key.
  [[nodiscard]] std::string_view bytes() const noexcept { return *encoded_; }
  /// The shared pointer to the encoding, for structures that store it (pointer-equality fast
  /// path before byte comparison).
  [[nodiscard]] const std::shared_ptr<const std::string>& shared_bytes() const noexcept {
    return encoded_;
  }

  /// Decodes a canonical encoding.
  /// @throws invalid_argument naming the offset when the bytes are not exactly one canonical
  /// encoding (bad magic or version, truncated, unknown tag, tags out of order, duplicate field,
  /// oversize value, trailing bytes). Never returns the shared namespace for bad input.
  [[nodiscard]] static namespace_key decode(std::string_view bytes) {
    auto fail = [&](std::size_t offset, std::string_view why) {
      hybridcache::detail::throw_invalid(hybridcache::detail::indexed("namespace_key bytes", offset),
                            static_cast<unsigned>(offset < bytes.size()
                                                      ? static_cast<unsigned char>(bytes[offset])
                                                      : 0u),
                            why);
    };
    if (bytes.size() < 6 || bytes.substr(0, 4) != "HCNS")
      fail(0, "missing magic \"HCNS\" (not a namespace encoding)");
    if (static_cast<unsigned char>(bytes[4]) != format_version) fail(4, "unsupported version");
    namespace_key out;
    std::size_t pos = 5;
    unsigned last_tag = 0;
    for (;;) {
      if (pos >= bytes.size()) fail(pos, "truncated: no end tag");
      const unsigned tag = static_cast<unsigned char>(bytes[pos]);
      if (tag == 0) {
        if (pos + 1 != bytes.size()) fail(pos + 1, "trailing bytes after end tag");
        break;
      }
      if (tag > 0x05) fail(pos, "unknown field tag");
      if (tag < last_tag || (tag == last_tag && tag != 0x05))
        fail(pos, "field out of canonical order or repeated");
      if (pos + 5 > bytes.size()) fail(pos, "truncated length");
      std::uint32_t len = 0;
      for (int i = 0; i < 4; ++i)
        len |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[pos + 1 + i]))
               << (8 * i);
      if (len > max_field_bytes) fail(pos + 1, "field longer than max_field_bytes");
      if (pos + 5 + len > bytes.size()) fail(pos + 5, "truncated value");
      const std::string_view value = bytes.substr(pos + 5, len);
      const auto field = static_cast<namespace_field>(tag);
      switch (field) {
        case namespace_field::tenant: out.tenant_ = std::string(value); break;
        case namespace_field::knowledge_base: out.knowledge_base_ = std::string(value); break;
        case namespace_field::adapter: out.adapter_ = std::string(value); break;
        case namespace_field::model: out.model_ = std::string(value); break;
        case namespace_field::extra:
          if (out.extras_.size() >= max_extras) fail(pos, "too many extra strings");
          out.extras_.emplace_back(value);
          break;
      }
      last_tag = tag;
      pos += 5 + len;
    }
    out.encoded_ = std::make_shared<const std::string>(out.encode_fields());
    return out;
  }

  /// The text form, e.g. `ns{tenant=org_1;extra=a}`; `ns{}` for the shared namespace.
  [[nodiscard]] std::string to_string() const {
    std::string s = "ns{";
    bool first = true;
    auto put = [&](std::string_view name, std::string_view value) {
      if (!first) s.push_back(';');
      first = false;
      s.append(name).push_back('=');
      escape_into(s, value);
    };
    if (tenant_) put("tenant", *tenant_);
    if (knowledge_base_) put("kb", *knowledge_base_);
    if (adapter_) put("adapter", *adapter_);
    if (model_) put("model", *model_);
    for (const auto& e : extras_) put("extra", e);
    s.push_back('}');
    return s;
  }

  /// Parses the text form. `ns{}` is the shared namespace; the empty string, a missing `ns{`
  /// wrapper, an unknown field name, a missing `=`, a repeated single field or a bad `%XX`
  /// escape throw `invalid_argument` (never a fall-back to the shared namespace).
  [[nodiscard]] static namespace_key parse(std::string_view text) {
    auto fail = [&](std::string_view why) { hybridcache::detail::throw_invalid("namespace text", text, why); };
    if (text.size() < 4 || text.substr(0, 3) != "ns{" || text.back() != '}')
      fail("expected ns{field=value;...} (ns{} is the shared namespace)");
    std::string_view body = text.substr(3, text.size() - 4);
    namespace_key out;
    bool seen[5] = {false, false, false, false, false};
    while (!body.empty()) {
      const std::size_t semi = body.find(';');
      const std::string_view item = body.substr(0, semi);
      body = semi == std::string_view::npos ? std::string_view{} : body.substr(semi + 1);
      if (semi != std::string_view::npos && body.empty()) fail("trailing ';'");
      const std::size_t eq = item.find('=');
      if (eq == std::string_view::npos) fail("field without '='");
      const std::string_view name = item.substr(0, eq);
      const std::string value = unescape(item.substr(eq + 1), text);
      namespace_field field{};
      if (name == "tenant") field = namespace_field::tenant;
      else if (name == "kb") field = namespace_field::knowledge_base;
      else if (name == "adapter") field = namespace_field::adapter;
      else if (name == "model") field = namespace_field::model;
      else if (name == "extra") field = namespace_field::extra;
      else fail("unknown field name (tenant, kb, adapter, model, extra)");
      const auto idx = static_cast<std::size_t>(field) - 1;
      if (field != namespace_field::extra && seen[idx]) fail("field given twice");
      seen[idx] = true;
      out = out.with_field(field, value);
    }
    return out;
  }

  /// Namespaces are equal iff their encodings are equal (iff all fields are equal).
  friend bool operator==(const namespace_key& a, const namespace_key& b) noexcept {
    return a.encoded_ == b.encoded_ || *a.encoded_ == *b.encoded_;
  }

 private:
  static void check_value(namespace_field field, std::string_view value) {
    if (value.size() > max_field_bytes)
      hybridcache::detail::throw_invalid("namespace_key value length", value.size(),
                            static_cast<unsigned>(field) == 5 ? "extra longer than 65536 bytes"
                                                              : "field longer than 65536 bytes");
  }

  static void put_field(std::string& s, namespace_field tag, std::string_view value) {
    s.push_back(static_cast<char>(tag));
    const auto len = static_cast<std::uint32_t>(value.size());
    for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((len >> (8 * i)) & 0xffu));
    s.append(value);
  }

  [[nodiscard]] std::string encode_fields() const {
    std::string s = "HCNS";
    s.push_back(static_cast<char>(format_version));
    if (tenant_) put_field(s, namespace_field::tenant, *tenant_);
    if (knowledge_base_) put_field(s, namespace_field::knowledge_base, *knowledge_base_);
    if (adapter_) put_field(s, namespace_field::adapter, *adapter_);
    if (model_) put_field(s, namespace_field::model, *model_);
    for (const auto& e : extras_) put_field(s, namespace_field::extra, e);
    s.push_back('\0');
    return s;
  }

  static const std::shared_ptr<const std::string>& shared_encoding() {
    static const std::shared_ptr<const std::string> enc =
        std::make_shared<const std::string>(std::string("HCNS\x01\x00", 6));
    return enc;
  }

  static void escape_into(std::string& s, std::string_view value) {
    static constexpr char hex[] = "0123456789ABCDEF";
    for (char ch : value) {
      const auto c = static_cast<unsigned char>(ch);
      if (c < 0x20 || c >= 0x7f || c == '%' || c == ';' || c == '=' || c == '{' || c == '}') {
        s.push_back('%');
        s.push_back(hex[c >> 4]);
        s.push_back(hex[c & 0xfu]);
      } else {
        s.push_back(ch);
      }
    }
  }

  static std::string unescape(std::string_view value, std::string_view whole) {
    auto nibble = [&](char c) -> unsigned {
      if (c >= '0' && c <= '9') return static_cast<unsigned>(c - '0');
      if (c >= 'A' && c <= 'F') return static_cast<unsigned>(c - 'A' + 10);
      if (c >= 'a' && c <= 'f') return static_cast<unsigned>(c - 'a' + 10);
      hybridcache::detail::throw_invalid("namespace text", whole, "bad %XX escape");
    };
    std::string out;
    for (std::size_t i = 0; i < value.size(); ++i) {
      const char c = value[i];
      if (c == '%') {
        if (i + 2 >= value.size())
          hybridcache::detail::throw_invalid("namespace text", whole, "truncated %XX escape");
        out.push_back(static_cast<char>((nibble(value[i + 1]) << 4) | nibble(value[i + 2])));
        i += 2;
      } else if (c == '=' || c == '{' || c == '}') {
        hybridcache::detail::throw_invalid("namespace text", whole, "unescaped '=', '{' or '}' in a value");
      } else {
        out.push_back(c);
      }
    }
    return out;
  }

  std::optional<std::string> tenant_;
  std::optional<std::string> knowledge_base_;
  std::optional<std::string> adapter_;
  std::optional<std::string> model_;
  std::vector<std::string> extras_;
  std::shared_ptr<const std::string> encoded_;
};

HYBRIDCACHE_NAMESPACE_END

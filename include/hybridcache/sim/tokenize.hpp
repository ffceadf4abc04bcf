#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Simple, documented tokenizers for building traces from text, and the expansion of
/// Mooncake-style block-hash traces into token ids.
///
/// The simulations only need *which* tokens two requests share, never what they mean, so a model
/// tokenizer is not required. Two stand-ins are provided:
///
/// - `word_tokenizer` (the default of every builder): a token is a maximal run of non-whitespace
///   bytes (ASCII space, \t, \n, \v, \f, \r separate words). Ids are assigned in order of first
///   appearance from one vocabulary shared by the whole trace, so the same word always maps to
///   the same id and shared text stays shared.
/// - `byte_tokenizer`: one token per byte (id = byte value).
///
/// Absolute lengths differ from a model tokenizer's: a BPE tokenizer produces roughly 1.3 tokens
/// per English word and about 0.25 tokens per byte, so a 4,000-word QuALITY article is about
/// 5,000 model tokens. Overlap depths, budgets and the block size B are all in these units;
/// relative results (savings, reduction factors, the ranking of strategies) are what carries over.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/keyed_hash.hpp"
#include "hybridcache/sim/trace.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Whitespace-word tokenizer with a growing vocabulary (see the file comment).
class word_tokenizer {
 public:
  /// Appends the ids of the words of `text` to `out`.
  void encode(std::string_view text, std::vector<token_id>& out) {
    std::size_t i = 0;
    const std::size_t n = text.size();
    while (i < n) {
      while (i < n && is_space(text[i])) ++i;
      const std::size_t begin = i;
      while (i < n && !is_space(text[i])) ++i;
      if (i > begin) out.push_back(id_of(text.substr(begin, i - begin)));
    }
  }
  /// The ids of the words of `text`.
  [[nodiscard]] std::vector<token_id> encode(std::string_view text) {
    std::vector<token_id> out;
    encode(text, out);
    return out;
  }
  /// Number of distinct words seen so far.
  [[nodiscard]] std::size_t vocabulary_size() const noexcept { return vocab_.size(); }

  static constexpr bool is_space(char c) noexcept {
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
  }

 private:
  token_id id_of(std::string_view word) {
    auto it = vocab_.find(std::string(word));
    if (it != vocab_.end()) return it->second;
    const auto id = static_cast<token_id>(vocab_.size());
    vocab_.emplace(std::string(word), id);
    return id;
  }
  keyed_map<std::string, token_id> vocab_;  // keyed: words are input text
};

/// One token per byte.
struct byte_tokenizer {
  void encode(std::string_view text, std::vector<token_id>& out) const {
    for (char c : text) out.push_back(static_cast<unsigned char>(c));
  }
  [[nodiscard]] std::vector<token_id> encode(std::string_view text) const {
    std::vector<token_id> out;
    encode(text, out);
    return out;
  }
};

/// The token ids of one block of a block-hash trace: `block_size` ids derived from the block's
/// hash id, distinct for distinct hash ids (a 32-bit mix of (hash, position); two different
/// blocks share a token at the same position with probability 2^-32), so requests sharing
/// leading hash ids share exactly that many tokens.
/// @param count how many of the block's tokens to produce (the last block may be partial).
inline void expand_block_hash(std::uint64_t hash_id, std::size_t count,
                              std::vector<token_id>& out) {
  for (std::size_t j = 0; j < count; ++j) {
    std::uint64_t z = hash_id * 0x9E3779B97F4A7C15ULL + (static_cast<std::uint64_t>(j) << 1) + 1;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    out.push_back(static_cast<token_id>((z ^ (z >> 31)) & 0xFFFFFFFFu));
  }
}

HYBRIDCACHE_NAMESPACE_END

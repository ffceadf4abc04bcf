// SPDX-License-Identifier: Apache-2.0
// A consumer of the core components only (no Eigen on its include path): placement, overlap,
// segment keys (xxHash, header-only), stores, dispatch, RoPE and the root vocabulary.
#include <hybridcache/dispatch.hpp>
#include <hybridcache/numeric.hpp>
#include <hybridcache/overlap.hpp>
#include <hybridcache/placement.hpp>
#include <hybridcache/rope.hpp>
#include <hybridcache/segment.hpp>
#include <hybridcache/store.hpp>
#include <hybridcache/types.hpp>

#include <cstdio>
#include <vector>

#if __has_include(<Eigen/Core>)
#error "the core consumer must build without Eigen on its include path"
#endif

int main() {
  const std::vector<double> w{0.5, 0.0, 0.25, 0.25};
  const auto p = hybridcache::place_optimal(w, 1);
  const hybridcache::token_range r{2, 5};
  std::printf("hybridcache core: checkpoint at %zu, range of %zu tokens, bf16(1.5) = %g\n",
              p.checkpoints.empty() ? 0 : p.checkpoints[0], r.size(),
              static_cast<double>(static_cast<float>(hybridcache::bfloat16(1.5f))));
  return p.checkpoints.size() == 1 && r.size() == 3 ? 0 : 1;
}

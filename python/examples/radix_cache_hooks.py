# SPDX-License-Identifier: Apache-2.0
"""A radix cache for a hybrid model whose recurrent-state decisions come from hybridcache.tree.

The class below has the hooks an SGLang-style radix cache exposes to its scheduler
(``match_prefix``, ``cache_unfinished_req``, ``cache_finished_req``, ``evict``,
``inc_lock_ref``/``dec_lock_ref``); each hook makes the matching ``state_policy`` call:

- ``match_prefix``       -> ``policy.match``: the node to resume from (pinned) + tokens to replay;
- scheduling the prefill -> ``policy.prefill_plan``: where to snapshot, on the chunk grid;
- ``cache_unfinished_req`` (after prefill) -> ``policy.insert`` + ``policy.admit`` for each
  snapshot taken; the victims it returns are freed from the state pool;
- ``cache_finished_req`` -> ``policy.insert`` of prompt + output, ``admit`` of the final state,
  ``dec_lock_ref`` -> ``policy.unpin``;
- ``evict``              -> ``policy.evict`` (exact least increase of E[r] per byte first).

The "model" is a dictionary of fake state tensors; everything else is the library's real API.
Run: python python/examples/radix_cache_hooks.py
"""

import random

import hybridcache as hc
from hybridcache import segment, tree

BLOCK = 16          # tokens per radix node (the state/KV block grid)
CHUNK = 128         # the scheduler's prefill chunk (snapshots only at chunk ends)
STATE_BYTES = 1 << 20
POOL_STATES = 12


class HybridRadixCache:
    """The engine's radix cache; recurrent-state placement is delegated to the policy."""

    def __init__(self):
        self.policy = tree.state_policy(
            tree.policy_options(block_size=BLOCK, state_bytes=STATE_BYTES,
                                capacity_bytes=POOL_STATES * STATE_BYTES, replan_every=10))
        self.states = {}        # node id -> the engine's state tensor (here: a tag)

    # -- hooks ----------------------------------------------------------------------------------
    def match_prefix(self, ns, tokens):
        # SGLang caps a match at len - 1 so that at least one token is computed for the logits.
        m = self.policy.match(ns, tokens[: len(tokens) - 1])
        assert m.resume_node in self.states or m.resume_tokens == 0
        return m

    def plan_prefill(self, m, prompt_len):
        ends = list(range(m.resume_tokens + CHUNK, prompt_len, CHUNK)) + [prompt_len]
        return list(self.policy.prefill_plan(m, prompt_len, ends))

    def cache_unfinished_req(self, ns, tokens, snapshots):
        path = self.policy.insert(ns, tokens)
        for pos in snapshots:
            node = int(path[pos // BLOCK - 1])
            r = self.policy.admit(node, STATE_BYTES)
            for v in r.victims:
                del self.states[v]
            if r.admitted:
                self.states[node] = f"state@{pos}"

    def cache_finished_req(self, ns, tokens):
        path = self.policy.insert(ns, tokens)
        if len(path):
            node = int(path[-1])
            r = self.policy.admit(node, STATE_BYTES)
            for v in r.victims:
                del self.states[v]
            if r.admitted:
                self.states[node] = "final"

    def dec_lock_ref(self, m):
        self.policy.unpin(m.resume_node)

    def evict(self, num_states):
        for v in self.policy.evict(num_states * STATE_BYTES):
            del self.states[v]


def main():
    rng = random.Random(0)
    cache = HybridRadixCache()
    tenants = [segment.namespace_key().with_tenant(t) for t in ("acme", "globex")]
    system = [rng.randrange(32000) for _ in range(400)]
    chats = [(tenants[i % 2], list(system)) for i in range(8)]
    prompt_total = computed = 0
    for step in range(80):
        ns, history = chats[rng.randrange(len(chats))]
        history += [rng.randrange(32000) for _ in range(rng.randrange(40, 200))]   # user turn
        m = cache.match_prefix(ns, history)
        snaps = cache.plan_prefill(m, len(history))
        cache.cache_unfinished_req(ns, history, snaps)
        cache.dec_lock_ref(m)
        history += [rng.randrange(32000) for _ in range(60)]                        # answer
        cache.cache_finished_req(ns, history)
        prompt_total += len(history) - 60
        computed += len(history) - 60 - m.resume_tokens
        assert cache.policy.used_bytes <= cache.policy.capacity_bytes
        assert len(cache.states) == cache.policy.state_count
        if step == 40:
            cache.evict(2)   # external memory pressure
    saved = 1 - computed / prompt_total
    print(f"radix cache hooks: {prompt_total} prompt tokens, {computed} computed "
          f"({100 * saved:.1f}% saved); states {cache.policy.state_count}/{POOL_STATES}, "
          f"nodes {cache.policy.node_count}, E[r] now {cache.policy.expected_recompute():.1f}")
    # The exact planner on the same kind of question, small enough to print.
    plan = hc.place_optimal_tree([0, 0, 1, 1], [0, 100, 110, 120], [0, 0, 1, 1], 1)
    junction = [int(v) for v in plan.checkpoints]
    print("tree planner: junction", junction, "E[r] =", plan.expected_recompute)
    return saved


if __name__ == "__main__":
    main()

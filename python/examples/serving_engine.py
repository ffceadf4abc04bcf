# SPDX-License-Identifier: Apache-2.0
"""How a Python serving engine (vLLM/SGLang-style scheduler) calls hybridcache per request.

A toy engine serves a hybrid model whose linear-attention layers keep a recurrent state. For each
request it:

1. keys the request's document segments by token ids *and* the tenant's namespace, so cached
   states are never shared across tenants (hybridcache.segment);
2. reports how deep the request overlapped the cached prefix; the refresh policy re-plans the
   checkpoint positions every 10 requests from an exponentially weighted histogram (the sparse
   prefix caching paper's online loop) and tells the engine where to keep states;
3. sends the cold (uncached) segments to prefill workers with LPT (HYPIC eq. 9);
4. splices the cached segment summaries onto the prefix state with the composition law
   S = T_C S_prev + S_C|0 (HYPIC eq. 6) instead of re-running the recurrence.

The model is replaced by random keys/values; everything else is the library's real API.
Run: python python/examples/serving_engine.py
"""

import numpy as np

import hybridcache as hc
from hybridcache import segment, state

DK, DV = 16, 16          # one head of one linear-attention layer
PREFIX_LEN = 2048        # the shared system prompt / cached prefix
BLOCK = 64               # the engine stores states at block boundaries only
BUDGET = 6               # state checkpoints the engine can afford for the prefix
WORKERS = 3              # prefill workers for cold segments


class ToyEngine:
    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)
        self.hash = segment.xxh3_hash()  # per-deployment random secret
        self.checkpoints = np.array([], dtype=np.int64)
        self.plan = hc.refresh_policy(PREFIX_LEN, BUDGET, self.on_plan, granularity=BLOCK)
        self.summaries = {}  # segment key -> cached segment_summary
        self.hits = 0

    def on_plan(self, plan):
        """Called by the refresh policy with each new plan: move the checkpoint slots."""
        self.checkpoints = plan.checkpoints

    def model_inputs(self, tokens):
        """Stand-in for the layer's projections: per-token keys, values and log-gates (Mamba2)."""
        local = np.random.default_rng(int(tokens.sum()) % (2**32))
        k = local.standard_normal((len(tokens), DK)) / np.sqrt(DK)
        v = local.standard_normal((len(tokens), DV))
        g = -0.01 * local.random(len(tokens))
        return k, v, g

    def serve(self, tenant, documents, overlap_depth):
        ns = segment.namespace_key().with_tenant(tenant)
        # 1. Segment keys: position-independent, namespaced.
        keys = [segment.segment_key(self.hash, ns, doc) for doc in documents]
        cold = [i for i, key in enumerate(keys) if key not in self.summaries]
        self.hits += len(documents) - len(cold)

        # 2. Overlap statistics -> checkpoint placement (re-planned every 10 requests).
        self.plan.observe(overlap_depth)

        # 3. Cold segments to prefill workers, cost ~ tokens (LPT, deterministic ties).
        if cold:
            dispatch = hc.lpt_assign([len(documents[i]) for i in cold], WORKERS)
            for i, worker in zip(cold, dispatch.worker_of):
                k, v, g = self.model_inputs(documents[i])  # "worker" prefills segment i
                self.summaries[keys[i]] = state.summarize(k, v, log_gate=g)

        # 4. Splice: prefix state, then every segment's summary in request order (eq. 6).
        prefix_state = np.zeros((DK, DV))
        run = [self.summaries[key] for key in keys]
        return state.apply(run, prefix_state)


def main():
    engine = ToyEngine()
    rng = np.random.default_rng(1)
    corpus = [rng.integers(0, 50_000, size=int(n), dtype=np.uint32)
              for n in rng.integers(100, 600, size=12)]
    for request in range(40):
        tenant = "tenant-a" if request % 3 else "tenant-b"
        docs = [corpus[i] for i in rng.choice(len(corpus), size=3, replace=False)]
        depth = int(min(PREFIX_LEN, rng.gamma(2.0, 300.0)))  # how much of the prefix matched
        out = engine.serve(tenant, docs, depth)
        # The spliced state equals running the recurrence over all segments token by token.
        if request == 39:
            k, v, g = (np.concatenate(x) for x in zip(*(engine.model_inputs(d) for d in docs)))
            direct = state.run_recurrence(k, v, np.zeros((DK, DV)), log_gate=g)
            err = float(np.abs(out - direct).max())
            print(f"spliced vs token-by-token state: max |diff| = {err:.2e}")
            assert err < 1e-9
    print(f"segment cache hits: {engine.hits} of {40 * 3}")
    print(f"checkpoints (block {BLOCK}): {engine.checkpoints.tolist()}  plans: {engine.plan.plans}")
    assert engine.plan.plans == 4 and len(engine.checkpoints) <= BUDGET
    assert np.all(engine.checkpoints % BLOCK == 0)


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
"""Namespaces against their byte specification; keys for the properties engines rely on."""

import numpy as np
import pytest

import hybridcache as hc
import reference as ref
from hybridcache import segment as sg

SECRET = bytes((i * 37 + 11) % 256 for i in range(sg.xxh3_hash.secret_size))


@pytest.mark.parametrize(
    "build, fields",
    [
        (lambda: sg.namespace_key(), {}),
        (lambda: sg.namespace_key().with_tenant("org_1"), {"tenant": "org_1"}),
        (lambda: sg.namespace_key().with_model("qwen3").with_tenant("t"),
         {"tenant": "t", "model": "qwen3"}),
        (lambda: sg.namespace_key().with_extra("org_1").with_extra("2345"),
         {"extras": ("org_1", "2345")}),
        (lambda: sg.namespace_key().with_knowledge_base("").with_adapter("lora-7"),
         {"knowledge_base": "", "adapter": "lora-7"}),
    ],
)
def test_namespace_encoding_matches_the_specification(build, fields):
    ns = build()
    assert ns.to_bytes() == ref.namespace_bytes(**fields)
    assert sg.namespace_key.decode(ns.to_bytes()) == ns
    assert sg.namespace_key.parse(str(ns)) == ns
    assert ns.is_shared == (not fields)
    assert ns.tenant == fields.get("tenant")
    assert list(ns.extras) == list(fields.get("extras", ()))


def test_namespaces_are_injective():
    a = sg.namespace_key().with_extra("org_1").with_extra("2345")
    b = sg.namespace_key().with_extra("org_12345").with_extra("")
    c = sg.namespace_key().with_tenant("x")
    d = sg.namespace_key().with_model("x")
    e = sg.namespace_key().with_tenant("")
    keys = [a, b, c, d, e, sg.namespace_key.shared()]
    assert len({k.to_bytes() for k in keys}) == len(keys)
    assert len(set(keys)) == len(keys)  # hashable, equal iff bytes equal


def test_malformed_namespaces_raise_never_share():
    for text in ["", "tenant=a", "ns{bogus=1}", "ns{tenant=a;tenant=b}"]:
        with pytest.raises(hc.InvalidArgument):
            sg.namespace_key.parse(text)
    good = sg.namespace_key().with_tenant("a").to_bytes()
    for bad in [b"", good[:-1], good + b"\x00", b"XXXX" + good[4:]]:
        with pytest.raises(hc.InvalidArgument):
            sg.namespace_key.decode(bad)


def test_segment_keys_are_position_independent_and_namespaced():
    h = sg.xxh3_hash(SECRET)
    ns = sg.namespace_key().with_tenant("org_1")
    request_a = np.array([5, 6, 7, 100, 101, 102, 103], dtype=np.uint32)
    request_b = np.array([9, 100, 101, 102, 103], dtype=np.uint32)
    # The same segment at different positions of two requests has the same key.
    assert sg.segment_key(h, ns, request_a[3:]) == sg.segment_key(h, ns, request_b[1:])
    # Reproducible with the same secret, in another hasher instance, from any integer input.
    again = sg.xxh3_hash(SECRET)
    assert sg.segment_key(again, ns, [100, 101, 102, 103]) == sg.segment_key(h, ns, request_b[1:])
    # Different namespace, kind, tokens or secret: different keys.
    base = sg.segment_key(h, ns, request_b[1:])
    assert sg.segment_key(h, ns.with_extra("x"), request_b[1:]) != base
    assert sg.segment_key(h, sg.namespace_key(), request_b[1:]) != base
    assert sg.segment_key(h, ns, request_b[1:], sg.segment_kind.anchored) != base
    assert sg.segment_key(h, ns, request_b[2:]) != base
    assert sg.segment_key(sg.xxh3_hash(), ns, request_b[1:]) != base
    assert len(base.to_bytes()) == 16
    assert base.to_hex() == base.to_bytes().hex()
    assert int.from_bytes(base.to_bytes()[:8], "little") == base.lo


def test_block_keys_chain_the_whole_prefix():
    h = sg.xxh3_hash(SECRET)
    ns = sg.namespace_key().with_model("m")
    tokens = np.arange(1000, 1000 + 4 * 5 + 3)  # 5 full blocks of 4, plus a partial block
    keys = sg.block_keys(h, ns, tokens, 4)
    assert len(keys) == 5
    prev = sg.root_key(h, ns)
    for i, key in enumerate(keys):  # h_i = chain(h_{i-1}, block_i)
        prev = sg.chain_key(h, prev, tokens[4 * i: 4 * i + 4])
        assert key == prev
    changed = tokens.copy()
    changed[9] += 1  # inside block 2
    keys2 = sg.block_keys(h, ns, changed, 4)
    assert keys2[:2] == keys[:2] and all(a != b for a, b in zip(keys2[2:], keys[2:]))
    other_ns = sg.block_keys(h, ns.with_tenant("t"), tokens, 4)
    assert all(a != b for a, b in zip(other_ns, keys))  # the namespace reaches every block
    assert sg.block_keys(h, ns, tokens[:3], 4) == []


def test_token_and_secret_errors():
    h = sg.xxh3_hash(SECRET)
    ns = sg.namespace_key()
    with pytest.raises(hc.InvalidArgument, match=r"tokens\[1\]"):
        sg.segment_key(h, ns, [1, -2])
    with pytest.raises(hc.InvalidArgument, match=r"tokens\[0\]"):
        sg.segment_key(h, ns, np.array([2**32], dtype=np.int64))
    with pytest.raises(hc.InvalidArgument, match="block_size"):
        sg.block_keys(h, ns, [1, 2], 0)
    with pytest.raises(hc.InvalidArgument, match="secret"):
        sg.xxh3_hash(b"short")

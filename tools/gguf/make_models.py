#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes tiny random-weight GGUF models of two hybrid families for the real-engine tests.

    make_models.py OUT_DIR [--seed N]

writes OUT_DIR/qwen35-tiny.gguf (Gated DeltaNet + attention, llama.cpp arch "qwen35") and
OUT_DIR/granite-hybrid-tiny.gguf (Mamba2 + attention, arch "granitehybrid"). The weights are
drawn from numpy's PCG64 with a fixed seed, so the same seed gives byte-identical files. Needs
only the PyPI packages `gguf` (0.19.0) and `numpy`; no model is downloaded and no torch is used.
The weights are meaningless: the models exist to exercise llama.cpp's recurrent-state cache
(snapshot, restore, chunked prefill) on real kernels, whose outputs the tests compare.

The tensor shapes follow llama.cpp's loaders (src/models/qwen35.cpp, granite-hybrid.cpp,
vendored in llama-cpp-python 0.3.36). Shapes below are numpy shapes: numpy (a, b) is ggml {b, a}.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

import gguf

VOCAB = 1024  # token ids the tests use are folded into [0, VOCAB)


def byte_tokens() -> list[str]:
    """GPT-2's byte-to-unicode table: the 256 byte tokens of a byte-level BPE vocabulary."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, (chr(c) for c in cs)))
    return [table[b] for b in range(256)]


def add_vocab(w: gguf.GGUFWriter) -> None:
    """A byte-level BPE vocabulary of VOCAB tokens: 256 bytes, merged pairs, 2 control tokens.

    llama.cpp refuses a BPE vocabulary without merges, so the extra tokens are real merges of
    byte tokens ("ab" from "a" + "b"), which keeps the vocabulary self-consistent.
    """
    toks = byte_tokens()
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    merges = []
    for a in letters:
        for b in letters:
            if len(toks) >= VOCAB - 2:
                break
            toks.append(a + b)
            merges.append(f"{a} {b}")
    while len(toks) < VOCAB - 2:  # filler that no merge produces
        toks.append(f"<unused{len(toks)}>")
    toks += ["<|bos|>", "<|eos|>"]
    types = [gguf.TokenType.NORMAL] * (VOCAB - 2) + [gguf.TokenType.CONTROL] * 2
    for i, t in enumerate(toks):
        if t.startswith("<unused"):
            types[i] = gguf.TokenType.UNUSED
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(toks)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(VOCAB - 2)
    w.add_eos_token_id(VOCAB - 1)
    w.add_add_bos_token(False)


class Weights:
    """Seeded random tensors; the draw order is fixed by the call order."""

    def __init__(self, w: gguf.GGUFWriter, seed: int):
        self.w = w
        self.rng = np.random.Generator(np.random.PCG64(seed))

    def mat(self, name: str, shape: tuple[int, ...], scale: float | None = None) -> None:
        fan_in = shape[-1]
        s = scale if scale is not None else 1.0 / np.sqrt(fan_in)
        self.w.add_tensor(name, (self.rng.standard_normal(shape) * s).astype(np.float32))

    def norm(self, name: str, shape: tuple[int, ...]) -> None:
        self.w.add_tensor(name, (1.0 + 0.1 * self.rng.standard_normal(shape)).astype(np.float32))

    def uniform(self, name: str, shape: tuple[int, ...], lo: float, hi: float) -> None:
        self.w.add_tensor(name, self.rng.uniform(lo, hi, shape).astype(np.float32))

    def embeddings(self, n_embd: int) -> None:
        """Token embeddings, the final norm and the (untied) output projection."""
        self.mat("token_embd.weight", (VOCAB, n_embd), 1.0)
        self.norm("output_norm.weight", (n_embd,))
        self.mat("output.weight", (VOCAB, n_embd))

    def ffn(self, block: str, n_embd: int, n_ff: int) -> None:
        """A SwiGLU feed-forward (gate, up, down)."""
        self.mat(f"{block}.ffn_gate.weight", (n_ff, n_embd))
        self.mat(f"{block}.ffn_up.weight", (n_ff, n_embd))
        self.mat(f"{block}.ffn_down.weight", (n_embd, n_ff))


def write(path: pathlib.Path, arch: str, fill) -> None:
    w = gguf.GGUFWriter(str(path), arch)
    w.add_name(f"hybridcache-tiny-{arch}")
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    add_vocab(w)
    fill(w)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def add_shape(w: gguf.GGUFWriter, n_embd: int, n_layer: int, n_ff: int, n_head: int,
              n_head_kv) -> None:
    """The keys every architecture reads (llama_model_base::load_hparams)."""
    w.add_context_length(4096)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)


def add_ssm(w: gguf.GGUFWriter, d_conv: int, d_inner: int, d_state: int, dt_rank: int,
            groups: int) -> None:
    """The recurrent layers' keys (ssm.*), read by both loaders."""
    w.add_ssm_conv_kernel(d_conv)
    w.add_ssm_inner_size(d_inner)
    w.add_ssm_state_size(d_state)
    w.add_ssm_time_step_rank(dt_rank)
    w.add_ssm_group_count(groups)


def qwen35(w: gguf.GGUFWriter, seed: int) -> None:
    """Qwen3.5: 3 Gated DeltaNet layers, then 1 gated attention layer (full_attention_interval 4)."""
    n_embd, n_layer, n_head, n_head_kv, head = 128, 4, 4, 2, 32
    n_ff, d_conv, d_state, n_k_heads, n_v_heads = 256, 4, 32, 2, 4
    key_dim, value_dim = d_state * n_k_heads, d_state * n_v_heads
    add_shape(w, n_embd, n_layer, n_ff, n_head, n_head_kv)
    w.add_key_length(head)
    w.add_value_length(head)
    w.add_rope_dimension_count(head // 2)  # partial rotary, as Qwen3.5
    w.add_rope_dimension_sections([3, 3, 2, 0])  # sums to n_rot / 2
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_full_attention_interval(4)
    add_ssm(w, d_conv, value_dim, d_state, n_v_heads, n_k_heads)
    r = Weights(w, seed)
    r.embeddings(n_embd)
    for i in range(n_layer):
        b = f"blk.{i}"
        r.norm(f"{b}.attn_norm.weight", (n_embd,))
        r.norm(f"{b}.post_attention_norm.weight", (n_embd,))
        if (i + 1) % 4 != 0:  # Gated DeltaNet
            r.mat(f"{b}.attn_qkv.weight", (key_dim * 2 + value_dim, n_embd))
            r.mat(f"{b}.attn_gate.weight", (value_dim, n_embd))
            r.mat(f"{b}.ssm_conv1d.weight", (key_dim * 2 + value_dim, d_conv), 0.5)
            r.uniform(f"{b}.ssm_dt.bias", (n_v_heads,), -1.0, 1.0)
            r.uniform(f"{b}.ssm_a", (n_v_heads,), -1.5, -0.2)  # A = −exp(A_log) < 0: decay
            r.mat(f"{b}.ssm_beta.weight", (n_v_heads, n_embd))
            r.mat(f"{b}.ssm_alpha.weight", (n_v_heads, n_embd))
            r.norm(f"{b}.ssm_norm.weight", (d_state,))
            r.mat(f"{b}.ssm_out.weight", (n_embd, value_dim))
        else:  # attention whose q projection also carries the output gate
            r.mat(f"{b}.attn_q.weight", (head * n_head * 2, n_embd))
            r.mat(f"{b}.attn_k.weight", (head * n_head_kv, n_embd))
            r.mat(f"{b}.attn_v.weight", (head * n_head_kv, n_embd))
            r.mat(f"{b}.attn_output.weight", (n_embd, head * n_head))
            r.norm(f"{b}.attn_q_norm.weight", (head,))
            r.norm(f"{b}.attn_k_norm.weight", (head,))
        r.ffn(b, n_embd, n_ff)


def granite_hybrid(w: gguf.GGUFWriter, seed: int) -> None:
    """Granite-4 hybrid: 3 Mamba2 layers, then 1 attention layer (n_head_kv = 0 marks Mamba2)."""
    n_embd, n_layer, n_head, n_head_kv = 128, 4, 4, 2
    n_ff, d_conv, d_state, n_group, n_ssm_head = 256, 4, 16, 1, 8
    d_inner = 2 * n_embd  # llama.cpp supports an expansion factor of 2 only
    d_in_proj = 2 * d_inner + 2 * n_group * d_state + n_ssm_head
    head_kv = [0, 0, 0, n_head_kv]
    add_shape(w, n_embd, n_layer, n_ff, n_head, head_kv)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_logit_scale(1.0)
    w.add_residual_scale(1.0)
    w.add_embedding_scale(1.0)
    w.add_attention_scale(1.0 / np.sqrt(n_embd // n_head))
    add_ssm(w, d_conv, d_inner, d_state, n_ssm_head, n_group)
    r = Weights(w, seed)
    r.embeddings(n_embd)
    for i in range(n_layer):
        b = f"blk.{i}"
        r.norm(f"{b}.attn_norm.weight", (n_embd,))
        if head_kv[i] == 0:  # Mamba2
            r.mat(f"{b}.ssm_in.weight", (d_in_proj, n_embd))
            r.mat(f"{b}.ssm_conv1d.weight", (d_inner + 2 * n_group * d_state, d_conv), 0.5)
            r.mat(f"{b}.ssm_conv1d.bias", (d_inner + 2 * n_group * d_state,), 0.1)
            r.uniform(f"{b}.ssm_dt.bias", (n_ssm_head,), -1.0, 1.0)
            r.uniform(f"{b}.ssm_a", (n_ssm_head, 1), -1.5, -0.2)
            r.norm(f"{b}.ssm_d", (n_ssm_head, 1))
            r.norm(f"{b}.ssm_norm.weight", (n_group, d_inner // n_group))
            r.mat(f"{b}.ssm_out.weight", (n_embd, d_inner))
        else:
            hd = n_embd // n_head
            r.mat(f"{b}.attn_q.weight", (hd * n_head, n_embd))
            r.mat(f"{b}.attn_k.weight", (hd * head_kv[i], n_embd))
            r.mat(f"{b}.attn_v.weight", (hd * head_kv[i], n_embd))
            r.mat(f"{b}.attn_output.weight", (n_embd, hd * n_head))
        r.norm(f"{b}.ffn_norm.weight", (n_embd,))
        r.ffn(b, n_embd, n_ff)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", type=pathlib.Path)
    ap.add_argument("--seed", type=int, default=20260523)
    args = ap.parse_args(argv)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for name, arch, fill in (("qwen35-tiny.gguf", "qwen35", qwen35),
                             ("granite-hybrid-tiny.gguf", "granitehybrid", granite_hybrid)):
        path = args.out_dir / name
        tmp = path.with_suffix(".tmp")
        write(tmp, arch, lambda w, f=fill: f(w, args.seed))
        tmp.replace(path)  # readers never see a half-written model
        print(f"{path} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

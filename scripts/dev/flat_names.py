#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Rewrite the 0.1 nested spellings (state::X, segment::X, store::X, sim::X, tree::X) to the flat
names of docs/design/namespaces.md ("One spelling", issue #25).

Usage:
    scripts/dev/flat_names.py [--check] [--format] [PATH ...]

With no PATH: the whole tree (include, kernels, tests, tools, bench, examples, python/src, docs,
README.md). A PATH may be a file or a folder. --check rewrites nothing and exits 1 if some file
would change (for CI or a merge: "is anything still spelled the old way?"). --format runs
clang-format on the lines this run changed (only those), so a longer qualification cannot leave a
line over the column limit.

What it rewrites, in C++ code and comments (never inside string or character literals, where a
spelling may be meant as text), and in Markdown:

  - `[::]hybridcache::state::X`, `hc::state::X`, and bare `state::X` (likewise segment, store, sim,
    tree) -> `[::]hybridcache::X`, `hc::X`, `X`, except that a bare qualified call in code stays
    qualified, `state::apply(s, p)` -> `hybridcache::apply(s, p)` (an unqualified call would add
    argument-dependent lookup: std::apply for a std::span argument); renamed ones take their new name
    (RENAMES below, the table of the 0.1 alias blocks): `state::family` -> `transition_family`, ...
  - `state::detail::X` -> `detail::X`; the adapter namespaces stay: `state::npy::load` ->
    `npy::load`, `hybridcache::state::fla::X` -> `hybridcache::fla::X`.
  - namespace aliases of an old namespace (`namespace hs = hybridcache::state;`): the declaration
    goes, its uses `hs::X` become `hc::X`; where the file has no `namespace hc = hybridcache;`
    yet, the first such declaration becomes that one (one alias for the library, as elsewhere).
    An alias declared in a project header applies to the files that include it (HEADER_ALIASES
    keeps those of 0.1 for a re-run).
  - `using namespace hybridcache::state;` -> `using namespace hybridcache;`, and
    `namespace hybridcache::state {` (docs' API sketches) -> `namespace hybridcache {`.
  - `using hybridcache::sim::strategy;` -> `using hybridcache::placement_strategy;`, and the file's
    uses of the old name as a qualifier (`strategy::dp`) -> `placement_strategy::dp`; any other
    bare use of the old name is reported (rename it by hand).
  - `#include` of a removed forwarding header -> its real home (dropped if already included).
  - the 0.1 alias blocks (`namespace state {  // deprecated spellings ...`) at the end of a
    header are deleted; a name in one that is not in the 0.1 table is reported (it must be added
    to include/hybridcache/compat/v0_1.hpp, the one place the old spellings live now).

It skips the files that spell the old names on purpose (the compat header, its test, the design
note, this script). It is idempotent: a second run changes nothing. Renames are fixed (they come
from the 0.1 headers); any other name after `state::` etc. is accepted (a name that another branch
added to an alias block is flattened the same way) and listed on stderr as "not in the 0.1
table" so that it can be checked.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_PATHS = ["include", "kernels", "tests", "tools", "bench", "examples", "python/src", "docs",
                 "README.md"]
CODE_EXT = {".hpp", ".cpp", ".h", ".cc", ".cu", ".cuh", ".inl", ".ipp"}
TEXT_EXT = {".md"}
# Files that name the old spellings on purpose.
SKIP = {"include/hybridcache/compat", "tests/compat", "docs/design/namespaces.md",
        "scripts/dev/flat_names.py"}

COMPONENTS = ("state", "segment", "store", "sim", "tree")

# Old name -> flat name where they differ (the 0.1 alias blocks: state/token_inputs.hpp,
# state/eigen.hpp, segment/split.hpp, sim/sparse_prefix.hpp).
RENAMES = {
    "state": {"family": "transition_family", "rule": "transition_rule", "matrix": "state_matrix"},
    "segment": {"split": "split_request", "splice": "splice_request"},
    "sim": {"strategy": "placement_strategy", "all_strategies": "all_placement_strategies"},
    "store": {},
    "tree": {},
}

# Every name of the 0.1 alias blocks (for the "not in the 0.1 table" report only).
KNOWN = {
    "segment": """block_keys block_keys_into chain_key constant_hash digest digest_hasher hash_policy
        key_view namespace_field namespace_key root_key segment_index segment_key segment_kind
        segment_range segment_role segmentation sha256_hash splice split split_options
        verified_key verified_key_equal verified_key_hash xxh3_hash""",
    "sim": """agent_loop agent_loop_options all_strategies arrival_options block_hash_record
        block_tree build_block_hash_trace build_document_qa build_rag build_system_prompts
        byte_tokenizer check_dominance code_edit code_edit_options cold_dispatch
        cold_segments_request composition_costs composition_ttft deepest_held detail doc_qa_skewed
        doc_qa_skewed_options dominance_check dominance_status expand_block_hash family_draft
        family_event family_request find_model from_trace generate_requests
        hypic_fig14_composition hypic_fig14_prefill is_fixed_baseline kv_budget kv_mode
        last_k_overlap library_policy llamacpp_policy lru_engine_policy make_tree_policy
        marconi_policy model_presets model_shape multi_node_options multi_node_result
        multi_turn_options namespace_stats oracle_exact_policy oracle_policy parse_strategy
        progress_fn qwen3_5_0_8b qwen3_next_80b_a3b rag_options rag_sessions recency_order
        replay_tree request request_group segment_reuse_options segment_reuse_result
        sglang_extra_buffer_lazy_policy sglang_extra_buffer_policy sglang_no_buffer_policy
        sglang_policy simulate_multi_node simulate_segment_reuse simulate_sparse_prefix
        simulate_tree sparse_prefix_options sparse_prefix_result sparse_prefix_simulator state_pool
        static_optimum strategy strategy_result synthetic_document_qa synthetic_multi_turn
        synthetic_multimodal synthetic_options synthetic_rag synthetic_rag_options
        synthetic_system_prompt text_document text_rag_prompt to_string token_id token_slice trace
        tree_context tree_cost_model tree_family tree_family_draft tree_family_names
        tree_family_options tree_metrics tree_options tree_policy tree_policy_names
        tree_policy_variants tree_replayer tree_request tree_result tree_step tree_trace
        tree_trace_builder trtllm_policy ttft_breakdown ttft_summary tune_marconi_alpha
        usable_matches uses_budget vllm_align_dense_policy vllm_align_policy vllm_all_policy
        vllm_policy word_tokenizer""",
    "state": """abs_bound_weights apply apply_dense apply_elementwise apply_heads batch_options
        bf16_summary bound_weights bulk_executor cached_interior check_close check_report compose
        compose_dense compose_elementwise default_scale delta_product_inputs detail dplr_inputs
        element_tolerance elementwise_summary end_state_matrix error_model exp_budget_ulps expand
        expanded_delta_product family family_of fla fold gamma_of gate_kind mamba matrix
        naive_addition naive_error naive_error_report npy outputs parse_precision plan_seams
        precision promote rerotate rerotate_state role_of round_to_bf16 rule run_recurrence
        seam_options seam_plan segment_outputs segment_role segment_summary selective_inputs splice
        splice_options splice_step summarize summarize_heads summarize_method summarize_options
        to_bf16 to_float to_string token_inputs token_range transition_matrix unit_roundoff""",
    "store": """detail entry_class frozen_pool insert_status last_k_cache last_k_match last_k_overlap
        lru_pool pic_store pic_store_options pool_stats redis_errc redis_error redis_index_stats
        redis_options redis_segment_index release_reason segment_location virtual_block_index""",
    "tree": """admit_result basic_state_policy detail match_result no_node node_id policy_options
        replan_result state_policy""",
}
KNOWN = {k: set(v.split()) for k, v in KNOWN.items()}

# Removed forwarding headers -> their real home.
MOVED_HEADERS = {
    "hybridcache/segment/token.hpp": ["hybridcache/types.hpp"],
    "hybridcache/rope/half.hpp": ["hybridcache/numeric.hpp"],
    "hybridcache/overlap/refresh_policy.hpp": ["hybridcache/placement/refresh_policy.hpp"],
    "hybridcache/cuda/detail/plan.cuh": ["hybridcache/cuda/detail/launch.cuh",
                                         "hybridcache/cuda/detail/rope_plan.cuh",
                                         "hybridcache/cuda/detail/scores_plan.cuh"],
}

# Aliases of an old namespace that a shared header declared in 0.1 and its includers use
# (`hcs::summarize` in tests/state/*_test.cpp through tests/state/common.hpp). Read from the header
# when it still declares them; this table keeps a re-run right after the header was rewritten.
HEADER_ALIASES = {
    "tests/state/common.hpp": {"hcs": "state"},
    "tools/hybridcache/vectors_state.hpp": {"hs": "state"},
    "python/src/bind_testing.hpp": {"hs": "state"},
    "python/src/bind_store.hpp": {"hs": "store", "sg": "segment"},
}

_COMP = "|".join(COMPONENTS)
# `namespace hs = hybridcache::state;` (the whole old namespace; `...::state::detail` is not one)
ALIAS_DECL = re.compile(
    r"^(?P<indent>[ \t]*)namespace\s+(?P<alias>\w+)\s*=\s*(?:::)?(?:hybridcache|hc)::"
    r"(?P<comp>" + _COMP + r")\s*;[ \t]*(?P<comment>//[^\n]*)?\n", re.M)
HC_DECL = re.compile(r"\bnamespace\s+hc\s*=\s*(?:::)?hybridcache\s*;")
# `X::Y` is not an old spelling when X is itself qualified or a member (`a.state::`, `p->sim::`).
_NOT_AFTER = r"(?<![\w.:])(?<!->)"
QUALIFIED = re.compile(_NOT_AFTER + r"(?P<pre>(?:::)?(?:hybridcache|hc)::)?(?P<comp>" + _COMP +
                       r")::(?P<name>[A-Za-z_]\w*)")
# `using namespace hybridcache::state;`, `namespace hybridcache::state {`
WHOLE_NS = re.compile(_NOT_AFTER + r"(?P<pre>(?:::)?(?:hybridcache|hc))::(?:" + _COMP +
                      r")\b(?!::)(?=\s*[;{])")
RENAMED_USING = re.compile(r"\busing\s+(?:::)?(?:hybridcache::|hc::)?(?P<comp>" + _COMP +
                           r")::(?P<name>\w+)\s*;")
# The 0.1 alias blocks at the end of a header (their spellings live in compat/v0_1.hpp now).
ALIAS_BLOCK = re.compile(
    r"^namespace (?P<comp>" + _COMP + r") \{  // deprecated spellings[^\n]*\n(?P<body>.*?)"
    r"^\}  // namespace (?P=comp)\n", re.M | re.S)
INCLUDE = re.compile(r'^(?P<head>[ \t]*#[ \t]*include[ \t]*)(?P<open>[<"])(?P<path>[^>"]+)'
                     r'(?P<close>[>"])(?P<tail>[^\n]*)\n', re.M)

unknown: set[tuple[str, str, str]] = set()


def split_regions(text: str):
    """Yields (kind, chunk), kind "literal" (a string or character literal, raw strings
    included), "comment" or "code"."""
    i, n, start = 0, len(text), 0
    while i < n:
        c = text[i]
        if c == "/" and (text.startswith("//", i) or text.startswith("/*", i)):
            if text.startswith("//", i):
                j = text.find("\n", i)
                j = n if j < 0 else j
            else:
                j = text.find("*/", i + 2)
                j = n if j < 0 else j + 2
            if i > start:
                yield "code", text[start:i]
            yield "comment", text[i:j]
            start = i = j
            continue
        if c == '"' or c == "'":
            # literal prefix: R, u8R, LR, ... (raw) or u8, L, u, U; a ' after a digit/letter that is
            # not such a prefix is a digit separator (1'000).
            m = re.search(r"(?:\b(u8|u|U|L)?(R)?)$", text[max(0, i - 3):i])
            prefix = m.group(0) if m else ""
            before = text[i - len(prefix) - 1] if i - len(prefix) - 1 >= 0 else ""
            if c == "'" and not prefix and i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_"):
                i += 1
                continue
            if prefix and (before.isalnum() or before == "_"):
                prefix = ""  # an identifier ending in R/L/u, not a literal prefix
                if c == "'":
                    i += 1
                    continue
            lit_start = i - len(prefix)
            if c == '"' and prefix.endswith("R"):
                m = re.match(r'"([^ ()\\\t\n]{0,16})\(', text[i:])
                if m:
                    end = text.find(")" + m.group(1) + '"', i)
                    j = n if end < 0 else end + len(m.group(1)) + 2
                else:
                    j = i + 1
            else:
                j = i + 1
                while j < n and text[j] != c and text[j] != "\n":
                    j += 2 if text[j] == "\\" else 1
                j = min(j + 1, n)
            if lit_start > start:
                yield "code", text[start:lit_start]
            yield "literal", text[lit_start:j]
            start = i = j
            continue
        i += 1
    if start < n:
        yield "code", text[start:]


def rewrite_chunk(chunk: str, path: str, aliases: dict[str, str], local_renames: dict[str, str],
                  code: bool = False):
    def flat(comp: str, name: str) -> str:
        if name not in KNOWN[comp]:
            unknown.add((path, comp, name))
        return RENAMES[comp].get(name, name)

    if aliases:
        alias_re = re.compile(_NOT_AFTER + r"(?P<alias>" + "|".join(map(re.escape, aliases)) +
                              r")::(?P<name>[A-Za-z_]\w*)")

        def sub_alias(m):
            return "hc::" + flat(aliases[m.group("alias")], m.group("name"))

        chunk = alias_re.sub(sub_alias, chunk)

    def sub_qualified(m):
        pre = m.group("pre") or ""
        if not pre and code and re.match(r"\s*\(", chunk[m.end():]):
            # A call stays qualified: `state::apply(s, span)` looked up no other namespace, and an
            # unqualified `apply(s, span)` would also find std::apply by ADL.
            pre = "hybridcache::"
        return pre + flat(m.group("comp"), m.group("name"))

    chunk = QUALIFIED.sub(sub_qualified, chunk)
    chunk = WHOLE_NS.sub(lambda m: m.group("pre"), chunk)
    for old, new in local_renames.items():
        chunk = re.sub(_NOT_AFTER + r"\b" + re.escape(old) + r"(?=::)", new, chunk)
    return chunk


def rewrite_includes(text: str) -> str:
    included = {m.group("path") for m in INCLUDE.finditer(text)}

    def sub(m):
        targets = MOVED_HEADERS.get(m.group("path"))
        if targets is None:
            return m.group(0)
        out = []
        for t in targets:
            if t in included:
                continue
            included.add(t)
            tail = m.group("tail") if len(targets) == 1 else ""
            out.append(f'{m.group("head")}{m.group("open")}{t}{m.group("close")}{tail}\n')
        return "".join(out)

    return INCLUDE.sub(sub, text)


def drop_alias_blocks(text: str, path: str) -> str:
    def sub(m):
        body = re.sub(r"///[^\n]*", "", m.group("body"))
        names = set(re.findall(r"using\s+::hybridcache::(\w+)\s*;", body))
        names |= set(re.findall(r"\b(\w+)\s*=\s*::hybridcache::", body))
        names |= set(re.findall(r"\b(\w+)\s*\([^;{]*\)\s*\{", body))
        for name in sorted(names - KNOWN[m.group("comp")]):
            print(f"{path}: dropped the alias block's {m.group('comp')}::{name}, which is not in the "
                  "0.1 table: add it to include/hybridcache/compat/v0_1.hpp", file=sys.stderr)
        return ""

    return ALIAS_BLOCK.sub(sub, text)


def declared_aliases(text: str) -> dict[str, str]:
    return {m.group("alias"): m.group("comp") for m in ALIAS_DECL.finditer(text)}


def inherited_aliases(path: Path, seen=None) -> dict[str, str]:
    """The aliases of old namespaces that `path` gets from the project headers it includes."""
    seen = set() if seen is None else seen
    out: dict[str, str] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return out
    for m in INCLUDE.finditer(text):
        inc = m.group("path")
        for base in (path.parent, ROOT / "tests", ROOT / "tools", ROOT / "python/src", ROOT / "bench"):
            h = (base / inc).resolve()
            if h.is_file() and h not in seen and ROOT in h.parents:
                seen.add(h)
                out.update(inherited_aliases(h, seen))
                out.update(HEADER_ALIASES.get(rel(h), {}))
                out.update(declared_aliases(h.read_text(encoding="utf-8")))
                break
    return out


def rewrite_code(text: str, path: str, inherited: dict[str, str] | None = None) -> str:
    text = drop_alias_blocks(text, path)
    text = rewrite_includes(text)
    # Aliases of a whole old namespace: collect, then drop or turn into `namespace hc`.
    aliases = dict(inherited or {})
    # A file-level `namespace hc` (unindented) serves every file-level alias; an indented (block
    # scope) alias needs an `hc` in its own group of declarations, else it becomes one.
    have_hc = bool(re.search(r"^namespace\s+hc\s*=\s*(?:::)?hybridcache\s*;", text, re.M))
    original = text
    # An alias named like an old namespace (`namespace sim = hybridcache::sim;`) still resolves
    # through QUALIFIED if left out of `aliases`; put it in so its uses become `hc::X` too.

    def sub_alias_decl(m):
        nonlocal have_hc
        aliases[m.group("alias")] = m.group("comp")
        if m.group("alias") == "hc":
            raise SystemExit(f"{path}: `namespace hc` aliases hybridcache::{m.group('comp')}; "
                             "rename it by hand first")
        if m.group("indent") and not have_hc:
            # the declarations just above, in the same block (same indent, no brace between)
            lines = original[:m.start()].splitlines()[::-1]
            group = []
            for line in lines:
                if not line.startswith(m.group("indent")) or line[len(m.group("indent")):][:1] in (
                        " ", "}", "{", "") or "{" in line or "}" in line:
                    break
                group.append(line)
            if any(HC_DECL.search(line) or ALIAS_DECL.match(line + "\n") for line in group):
                return ""  # hc is there already, or the alias just above became it
        elif have_hc:
            return ""
        else:
            have_hc = True  # this file-level alias becomes the file's `namespace hc`
        comment = (" " + m.group("comment")) if m.group("comment") else ""
        return f"{m.group('indent')}namespace hc = hybridcache;{comment}\n"

    text = ALIAS_DECL.sub(sub_alias_decl, text)
    local_renames = {}
    for m in RENAMED_USING.finditer(text):
        new = RENAMES[m.group("comp")].get(m.group("name"))
        if new:
            local_renames[m.group("name")] = new
    out = []
    for kind, chunk in split_regions(text):
        out.append(chunk if kind == "literal" else
                   rewrite_chunk(chunk, path, aliases, local_renames, code=kind == "code"))
    text = "".join(out)
    for old, new in local_renames.items():
        # a bare use of the old name that is not a qualifier: report (a variable may share it)
        for kind, chunk in split_regions(text):
            if kind == "code" and re.search(_NOT_AFTER + r"\b" + old + r"\b(?!::)(?!\s*[(=])",
                                            chunk):
                print(f"{path}: `using ...::{old}` became `{new}`: check the file's other "
                      f"uses of `{old}`", file=sys.stderr)
                break
    return text


def rewrite_markdown(text: str, path: str) -> str:
    for old, new in MOVED_HEADERS.items():
        if len(new) == 1:
            text = text.replace(old, new[0])
    return rewrite_chunk(text, path, {}, {})


def files_of(paths):
    for p in paths:
        p = Path(p)
        if not p.is_absolute():
            p = (Path.cwd() / p)
        if p.is_dir():
            for dp, dirs, fs in os.walk(p):
                dirs[:] = sorted(d for d in dirs if d not in {"build", ".git", "__pycache__"})
                for f in sorted(fs):
                    yield Path(dp) / f
        elif p.exists():
            yield p


def rel(p: Path) -> str:
    try:
        return p.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return p.as_posix()


def changed_lines(old: str, new: str):
    import difflib
    lines = []
    sm = difflib.SequenceMatcher(a=old.splitlines(), b=new.splitlines(), autojunk=False)
    for tag, _, _, j1, j2 in sm.get_opcodes():
        if tag in ("replace", "insert") and j2 > j1:
            lines.append((j1 + 1, j2))
    return lines


# (input, expected output, file name) cases for --self-test: the tricky parts, each once.
SELF_TEST = [
    ("auto s = state::summarize(in, state::rule::delta);\n",
     "auto s = hybridcache::summarize(in, transition_rule::delta);\n", "a.hpp"),
    ('throw error("tree::state_policy: full"); // tree::state_policy\n',
     'throw error("tree::state_policy: full"); // state_policy\n', "a.hpp"),
    ("int n = 1'000; const char* r = R\"x(sim::trace)x\"; sim::trace t;\n",
     "int n = 1'000; const char* r = R\"x(sim::trace)x\"; trace t;\n", "a.hpp"),
    ("namespace hs = hybridcache::state;\nhs::segment_summary<float> x; hs::npy::array a;\n",
     "namespace hc = hybridcache;\nhc::segment_summary<float> x; hc::npy::array a;\n", "a.cpp"),
    ("namespace hc = hybridcache;\nnamespace sg = hybridcache::segment;\nsg::digest d;\n",
     "namespace hc = hybridcache;\nhc::digest d;\n", "a.cpp"),
    ("void f() {\n  namespace st = hybridcache::store;\n  st::lru_pool<int, int> p(1);\n}\n",
     "void f() {\n  namespace hc = hybridcache;\n  hc::lru_pool<int, int> p(1);\n}\n", "a.cpp"),
    ("using hybridcache::sim::strategy;\nauto k = strategy::dp;\n",
     "using hybridcache::placement_strategy;\nauto k = placement_strategy::dp;\n", "a.cpp"),
    ("hc::state::detail::rng r; ::hybridcache::segment::split(t, o); x.state::y; a->sim::b;\n",
     "hc::detail::rng r; ::hybridcache::split_request(t, o); x.state::y; a->sim::b;\n", "a.cpp"),
    ("using namespace hybridcache::state;\n#include <hybridcache/segment/token.hpp>\n",
     "using namespace hybridcache;\n#include <hybridcache/types.hpp>\n", "a.cpp"),
    ("x;\n\nnamespace state {  // deprecated spellings (docs/design/namespaces.md): use hybridcache::X\n"
     "using ::hybridcache::summarize;\n}  // namespace state\nHYBRIDCACHE_NAMESPACE_END\n",
     "x;\n\nHYBRIDCACHE_NAMESPACE_END\n", "a.hpp"),
    ("See `sim::all_strategies` and `hybridcache/segment/token.hpp`.\n",
     "See `all_placement_strategies` and `hybridcache/types.hpp`.\n", "a.md"),
]


def self_test() -> int:
    bad = 0
    for text, want, name in SELF_TEST:
        rewrite = rewrite_markdown if name.endswith(".md") else rewrite_code
        got = rewrite(text, name)
        again = rewrite(got, name)
        if got != want or again != got:
            bad += 1
            print(f"self-test: {text!r}\n  got  {got!r}\n  want {want!r}\n  rerun {again!r}",
                  file=sys.stderr)
    print(f"flat_names self-test: {len(SELF_TEST) - bad}/{len(SELF_TEST)} cases", file=sys.stderr)
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file would")
    ap.add_argument("--format", action="store_true",
                    help="clang-format the changed lines of the rewritten C++ files")
    ap.add_argument("--self-test", action="store_true", help="run the built-in cases and exit")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    paths = args.paths or [str(ROOT / p) for p in DEFAULT_PATHS]
    changed = []
    for f in files_of(paths):
        r = rel(f)
        if any(r == s or r.startswith(s + "/") for s in SKIP):
            continue
        if f.suffix in CODE_EXT:
            rewrite = rewrite_code
        elif f.suffix in TEXT_EXT:
            rewrite = rewrite_markdown
        else:
            continue
        old = f.read_text(encoding="utf-8")
        new = rewrite(old, r, inherited_aliases(f)) if rewrite is rewrite_code else rewrite(old, r)
        if new == old:
            continue
        changed.append(r)
        if args.check:
            continue
        f.write_text(new, encoding="utf-8")
        if args.format and f.suffix in CODE_EXT:
            ranges = [f"--lines={a}:{b}" for a, b in changed_lines(old, new)]
            if ranges:
                subprocess.run(["clang-format", "-i", *ranges, str(f)], check=True)
    for path, comp, name in sorted(unknown):
        print(f"{path}: {comp}::{name} is not in the 0.1 table (flattened to {name}; check it)",
              file=sys.stderr)
    verb = "would change" if args.check else "changed"
    print(f"flat_names: {verb} {len(changed)} file(s)", file=sys.stderr)
    for r in changed:
        print(f"  {r}", file=sys.stderr)
    return 1 if (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())

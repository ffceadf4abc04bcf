#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# CLI tests of `hybridcache simulate`'s trace readers and option checks (tools/tests/simulate_io.cmake).
# usage: simulate_io.sh HYBRIDCACHE CASE — makes the case's tiny trace in the working directory,
# runs simulate, prints its output (at most 4000 bytes), then "bytes=N" (the output's size) and
# "rc=N" (its exit status) for the test's PASS_REGULAR_EXPRESSION.
hc=$1
case_name=$2
dir=case_$case_name
rm -rf "$dir" && mkdir "$dir" && cd "$dir" || exit 1
common="--segments none --fig14 0 --no-plot --quiet --out out"

# Token-id JSONL of N requests: 4 documents of 200 tokens under 1-token questions.
tokens() {
  i=0
  while [ "$i" -lt "$1" ]; do
    d=$((i % 4)); printf '{"segments": [['
    j=0; while [ "$j" -lt 199 ]; do printf '%d,' $((d * 1000 + j)); j=$((j + 1)); done
    printf '%d], [%d]], "query_last": true}\n' $((d * 1000 + 199)) $((9000 + i))
    i=$((i + 1))
  done
}
# An L-Eval-style document of $2 words with $3 questions.
leval_row() {
  printf '{"input": "'; k=0; while [ "$k" -lt "$2" ]; do printf 'w%s_%d ' "$1" "$k"; k=$((k + 1)); done
  printf '", "instructions": ['; q=0
  while [ "$q" -lt "$3" ]; do [ "$q" -gt 0 ] && printf ', '; printf '"question %d about %s?"' "$q" "$1"; q=$((q + 1)); done
  printf ']}\n'
}

run() { out=$("$hc" simulate "$@" 2>&1); rc=$?; }
case $case_name in
  deep_json) head -c 200000 /dev/zero | tr '\0' '[' > deep.jsonl; echo >> deep.jsonl
    run --trace jsonl:deep.jsonl $common ;;
  number_overflow) printf '[1, 2]\n[1e400]\n' > big.jsonl; run --trace jsonl:big.jsonl $common ;;
  embedded_nul) printf '[1, 2]\000[3, 4]\n' > nul.jsonl; run --trace jsonl:nul.jsonl $common ;;
  binary_echo) { printf '[1, 2, \033[31m\001\377'; head -c 3000 /dev/zero | tr '\000' '\377'; printf ']\n'; } > bin.jsonl
    run --trace jsonl:bin.jsonl $common
    # No byte of the message may be outside printable ASCII.
    if printf '%s' "$out" | LC_ALL=C grep -q '[^ -~]'; then echo "RAW BYTES IN MESSAGE"; fi ;;
  truncated_document) { printf '{"input": "'; head -c 120000 /dev/zero | tr '\0' 'w'; printf '\n'; } > doc.jsonl
    run --trace leval:./doc.jsonl $common ;;
  jsonl_directory) mkdir adir; run --trace jsonl:adir $common ;;
  mooncake_path) # hash ids >= 2^63 (Mooncake's) are read as unsigned; labelled mooncake-STEM.
    printf '{"timestamp": 0, "input_length": 600, "hash_ids": [18446744073709551615, 9223372036854775808]}\n' > my_trace.jsonl
    printf '{"timestamp": 5, "input_length": 1000, "hash_ids": [18446744073709551615, 9223372036854775808]}\n' >> my_trace.jsonl
    printf '{"timestamp": 9, "hash_ids": [18446744073709551615, 1]}\n' >> my_trace.jsonl
    run --trace mooncake:my_trace.jsonl --budgets 1,2 $common ;;
  mooncake_input_length) printf '{"timestamp": 0, "hash_ids": [1]}\n{"timestamp": 1, "input_length": 5000, "hash_ids": [1]}\n' > mc.jsonl
    run --trace mooncake:mc.jsonl $common ;;
  leval_path) { leval_row a 300 3; leval_row b 200 2; } > held_out.jsonl
    run --trace leval:held_out.jsonl --requests 60 --budgets 1,2 $common ;;
  leval_no_questions) leval_row a 30 0 > noq.jsonl; run --trace leval:noq.jsonl $common ;;
  system_prompts_path) mkdir prompts; leval_row p 100 0 > prompts/one.md; leval_row q 120 0 > prompts/two.md
    printf '[{"conversations": [{"from": "human", "value": "hello there"}]}, {"conversations": [{"from": "human", "value": "bye"}]}]' > q.json
    run --trace system-prompts:prompts --queries q.json --requests 40 --budgets 1 $common ;;
  musique_path) printf '[{"ctxs": [{"title": "A", "text": "alpha beta"}, {"title": "B", "text": "gamma"}], "question": "q1?"},
 {"ctxs": [{"title": "A", "text": "alpha beta"}, {"title": "C", "text": "delta"}], "question": "q2?"}]' > mini_musique.json
    run --trace none --segments musique:mini_musique.json --workers 1,2 --fig14 0 --no-plot --quiet --out out ;;
  multi_news_path) printf '{"context": "Passage 1:\\nalpha\\nPassage 2:\\nbeta\\n"}\n{"context": "Passage 1:\\nalpha\\n"}\n' > news.jsonl
    run --trace none --segments multi_news:news.jsonl --workers 1 --fig14 0 --no-plot --quiet --out out ;;
  cache_entries_capped) tokens 500 > t.jsonl
    run --trace jsonl:t.jsonl --cache-entries 10000000 --budgets 1,4 $common
    grep -q ',dp,1,' out/sparse_prefix.csv && echo "csv ok" ;;
  budgets_empty_item) run --budgets 1,,2 $common ;;
  budgets_trailing_comma) run --budgets 1,2, $common ;;
  unknown_flag_last) run $common --frobnicate ;;
  unknown_flag_valued) run --frobnicate 3 $common ;;
  gamma_interval) run --gamma 1 $common ;;
  requests_interval) run --requests 0 $common ;;
  workers_interval) run --workers 2,0 $common ;;
  *) echo "unknown case $case_name"; exit 1 ;;
esac
printf '%s\n' "$out" | head -c 4000
echo
echo "bytes=$(printf '%s' "$out" | wc -c | tr -d ' ')"
echo "rc=$rc"

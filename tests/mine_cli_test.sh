#!/usr/bin/env bash
# Tests of `nce mine`: a small generated pairs file (with query_id, several positives for some
# queries, fields with commas and quotes) and a corpus are mined by BM25; the CSV has the
# promised columns, never gives a query one of its positives, repeats byte for byte, and
# `nce train --loss infonce` learns from it; a model trained on it mines by model and by
# both; every bad input is one line on stderr, a non-zero exit and no file.
# Usage: bash tests/mine_cli_test.sh PATH/TO/nce   (meson test runs it as 'mine-cli')
set -uo pipefail

if [[ $# -ne 1 || ! -x "$1" ]]; then
    echo "usage: bash tests/mine_cli_test.sh PATH/TO/nce (got: $*)" >&2
    exit 2
fi
nce="$1"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
stdout="$scratch/stdout"
stderr="$scratch/stderr"
failures=0
source "$(dirname "${BASH_SOURCE[0]}")/cli_test_helpers.sh"

# ---- the files: 60 animals, each with a home and a food; two questions about each ----
/usr/bin/python3 - "$scratch" <<'PY'
import csv, json, random, sys
folder = sys.argv[1]
rng = random.Random(11)
syllables = ["ka", "lo", "mi", "ren", "tu", "sa", "vo", "pel", "dri", "no", "ga", "fi"]
places = ["river", "forest", "desert", "mountain", "lake", "meadow", "cave", "island"]
foods = ["berries", "fish", "seeds", "leaves", "insects", "roots", "grass", "nuts"]
animals = []
while len(animals) < 80:
    name = "".join(rng.choice(syllables) for _ in range(3))
    if name not in animals:
        animals.append(name)
facts = {a: (rng.choice(places), rng.choice(foods)) for a in animals}
def home(a):
    return f"the {a} lives near the {facts[a][0]}, a \"quiet\" place"
def food(a):
    return f"the {a} eats {facts[a][1]} every day, and sleeps"
with open(f"{folder}/train.csv", "w", newline="") as f:
    writer = csv.writer(f)
    writer.writerow(["query_id", "anchor", "positive"])
    for number, a in enumerate(animals[:60]):
        writer.writerow([f"q{number}", f"tell me about the {a}", home(a)])
        if number % 3 == 0:  # a second positive for every third query
            writer.writerow([f"q{number}", f"tell me about the {a}", food(a)])
with open(f"{folder}/train.jsonl", "w") as f:
    for a in animals[:60]:
        f.write(json.dumps({"anchor": f"where does the {a} live", "positive": home(a)}) + "\n")
with open(f"{folder}/corpus.txt", "w") as f:
    for a in animals[60:]:
        f.write(home(a) + "\n" + food(a) + "\n")
PY
printf 'anchor,positive\n' >"$scratch/header_only.csv"

cat >"$scratch/tiny.json" <<'JSON'
{"d_model": 32, "nhead": 2, "num_layers": 1, "dim_feedforward": 64, "max_query_length": 16,
 "max_passage_length": 24, "batch_size": 16, "max_steps": 3, "warmup_steps": 1, "evaluate_every": 3,
 "candidate_depth": 20}
JSON

# check_mined FILE PAIRS K: the columns, K distinct negatives per row, none a positive of its
# query (by query_id, or anchor), every row's query and positive from PAIRS.
check_mined() {
    /usr/bin/python3 - "$1" "$2" "$3" <<'PY'
import csv, json, sys
mined, pairs, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
def rows(path):
    if path.endswith(".jsonl"):
        return [json.loads(line) for line in open(path)]
    return list(csv.DictReader(open(path, newline="")))
source = rows(pairs)
key = "query_id" if "query_id" in source[0] else "anchor"
positives = {}
for row in source:
    positives.setdefault(row[key], set()).add(row["positive"])
with open(mined, newline="") as f:
    reader = csv.reader(f)
    header = next(reader)
    expected = ([key] if key == "query_id" else []) + ["anchor", "positive"] + [f"negative_{i}" for i in range(1, k + 1)]
    if header != expected:
        sys.exit(f"header {header}, expected {expected}")
    count = 0
    for row in reader:
        record = dict(zip(header, row))
        negatives = row[len(header) - k:]
        if len(set(negatives)) != k:
            sys.exit(f"row {row}: negatives not {k} distinct texts")
        if record["positive"] not in positives[record[key]]:
            sys.exit(f"row {row}: the positive is not one of its query's")
        if set(negatives) & positives[record[key]]:
            sys.exit(f"row {row}: a negative is a positive of its query")
        count += 1
    print(count)
PY
}

# ---- --help ----
run mine --help
expect_exit_zero "nce mine --help"
for flag in --pairs --corpus --output --by --checkpoint --range --negatives --absolute-margin --relative-margin; do
    expect_in "$stdout" "$flag" "nce mine --help lists $flag"
done

# ---- BM25 with a corpus and a relative margin ----
run mine --pairs "$scratch/train.csv" --corpus "$scratch/corpus.txt" --output "$scratch/mined.csv" --negatives 3 \
    --range 2:30 --relative-margin 0.05
expect_exit_zero "mine (bm25, corpus, relative margin)"
expect_in "$stdout" "^mine: .*train.csv: 60 queries, 80 rows; 120 candidates \\(80 from the pairs file, 40 more from the corpus\\)" \
    "the summary counts queries, rows and candidates"
expect_in "$stdout" "^mine: by bm25 \\(whitespace tokens\\), ranks 2..30, 3 negatives per query \\(top\\), relative margin 0.05" \
    "the summary names the scorer, range, K and margin"
expect_in "$stdout" "^mine: [0-9]+ candidates in range removed by the margin as likely false negatives" \
    "the summary counts the candidates the margin removed"
expect_in "$stdout" "^mine: wrote 80 rows \\(60 queries\\) to .*mined.csv; dropped 0 queries \\(0 rows\\)" \
    "every query has 3 negatives, one row per positive"
if rows=$(check_mined "$scratch/mined.csv" "$scratch/train.csv" 3) && [[ $rows == 80 ]]; then
    pass "mined.csv: query_id, anchor, positive, negative_1..3; no query gets its own positive"
else
    fail "mined.csv is not as promised: $rows"
fi

# ---- the same inputs give the same file, whatever the threads ----
run mine --pairs "$scratch/train.csv" --corpus "$scratch/corpus.txt" --output "$scratch/again.csv" --negatives 3 \
    --range 2:30 --relative-margin 0.05 --threads 1
expect_exit_zero "mine (again, one thread)"
if cmp -s "$scratch/mined.csv" "$scratch/again.csv"; then pass "same inputs, same file"; else fail "mined twice, two files"; fi

# ---- nce train learns from the mined file (infonce with its negatives) ----
run train --config "$scratch/tiny.json" --train "$scratch/mined.csv" --loss infonce --no-pretrain --output "$scratch/run"
expect_exit_zero "train --loss infonce on the mined file"
if [[ -s "$scratch/run/model.safetensors" ]]; then pass "the run on mined.csv wrote its model"; else fail "no model"; fi

# ---- JSON lines without query_id: anchor, positive, negative_1..K ----
run mine --pairs "$scratch/train.jsonl" --output "$scratch/from_jsonl.csv" --negatives 2 --absolute-margin 0.5
expect_exit_zero "mine (jsonl, absolute margin)"
if rows=$(check_mined "$scratch/from_jsonl.csv" "$scratch/train.jsonl" 2) && [[ $rows == 60 ]]; then
    pass "from_jsonl.csv: anchor, positive, negative_1..2"
else
    fail "from_jsonl.csv is not as promised: $rows"
fi

# ---- by the trained model, and by both, with a random pick ----
run mine --pairs "$scratch/train.csv" --output "$scratch/by_model.csv" --by model \
    --checkpoint "$scratch/run/model.safetensors" --negatives 2 --range 1:10
expect_exit_zero "mine --by model"
expect_in "$stdout" "^mine: by model, ranks 1..10" "the summary names the model"
if check_mined "$scratch/by_model.csv" "$scratch/train.csv" 2 >/dev/null; then pass "by_model.csv as promised"; else fail "by_model.csv"; fi
run mine --pairs "$scratch/train.csv" --corpus "$scratch/corpus.txt" --output "$scratch/by_both.csv" --by both \
    --checkpoint "$scratch/run/model.safetensors" --negatives 2 --range 1:20 --relative-margin 0.05 --pick random --seed 4
expect_exit_zero "mine --by both --pick random"
expect_in "$stdout" "^mine: by bm25 \\(whitespace tokens\\) \\+ model, ranks 1..20, 2 negatives per query \\(random\\)" \
    "the summary names both scorers"
if check_mined "$scratch/by_both.csv" "$scratch/train.csv" 2 >/dev/null; then pass "by_both.csv as promised"; else fail "by_both.csv"; fi

# ---- bad input: one line, non-zero exit, nothing written ----
out="$scratch/bad.csv"
good=(--pairs "$scratch/train.csv" --output "$out")
run mine --pairs "$scratch/missing.csv" --output "$out"
expect_one_line_error "--pairs .*missing.csv: no such file" "$out" "a missing pairs file"
run mine "${good[@]}" --corpus "$scratch/missing.txt"
expect_one_line_error "--corpus .*missing.txt: no such file" "$out" "a missing corpus"
run mine "${good[@]}" --range 0:5
expect_one_line_error "--range 0:5: ranks count from 1" "$out" "--range 0:5"
run mine "${good[@]}" --range 10:5
expect_one_line_error "--range 10:5: FIRST must not exceed LAST" "$out" "--range 10:5"
run mine "${good[@]}" --range ten
expect_one_line_error "--range 'ten': give the ranks as FIRST:LAST" "$out" "--range ten"
run mine "${good[@]}" --range 1:2 --negatives 3
expect_one_line_error "--range 1:2 holds 2 ranks, fewer than --negatives 3" "$out" "a range narrower than K"
run mine "${good[@]}" --absolute-margin -0.1
expect_one_line_error "--absolute-margin -0.1: give a margin >= 0" "$out" "a negative absolute margin"
run mine "${good[@]}" --relative-margin -0.1
expect_one_line_error "--relative-margin -0.1: give a fraction in \\[0, 1\\)" "$out" "a negative relative margin"
run mine "${good[@]}" --relative-margin 1
expect_one_line_error "--relative-margin 1: give a fraction in \\[0, 1\\)" "$out" "a relative margin of 1"
run mine "${good[@]}" --by model
expect_one_line_error "--by model ranks with a model: give --checkpoint" "$out" "--by model without --checkpoint"
run mine "${good[@]}" --checkpoint "$scratch/run/model.safetensors"
expect_one_line_error "--checkpoint is read only with --by model or --by both" "$out" "--checkpoint with --by bm25"
run mine "${good[@]}" --by model --checkpoint "$scratch/missing.safetensors"
expect_one_line_error "missing.safetensors" "$out" "a missing checkpoint"
run mine "${good[@]}" --negatives 0
expect_one_line_error "--negatives 0: give at least 1" "$out" "--negatives 0"
run mine "${good[@]}" --seed 3
expect_one_line_error "--seed is used only with --pick random" "$out" "--seed without --pick random"
run mine --pairs "$scratch/header_only.csv" --output "$out"
expect_one_line_error "header_only.csv: nothing but the header; add rows" "$out" "a pairs file with no rows"
run mine --pairs "$scratch/train.csv" --output "$scratch/mined.tsv"
expect_one_line_error "--output .*mined.tsv: the mined pairs are CSV; name the file .csv" "$scratch/mined.tsv" "--output not .csv"
run mine --pairs "$scratch/train.csv" --output "$scratch/train.csv"
expect_one_line_error "--output .*train.csv is the --pairs file" "" "--output the same file as --pairs"
run mine --pairs "$scratch/train.csv" --output "$scratch/no/such/folder/mined.csv"
expect_one_line_error "the folder .*no/such/folder does not exist" "" "--output in a missing folder"
run mine "${good[@]}" --range 1:2 --negatives 2 --absolute-margin 1000
expect_one_line_error "no query of .*train.csv has 2 negatives that pass at ranks 1:2 with absolute margin 1000" "$out" \
    "a margin that leaves no query its negatives"
# A failed run leaves an earlier file as it was, and no temporary file.
cp "$scratch/mined.csv" "$scratch/kept.csv"
run mine --pairs "$scratch/train.csv" --output "$scratch/kept.csv" --relative-margin 2
expect_exit_nonzero "mine over an existing file with a bad margin"
if cmp -s "$scratch/mined.csv" "$scratch/kept.csv"; then pass "the existing file is untouched"; else fail "the existing file changed"; fi
if ls "$scratch" | grep -q '\.tmp'; then fail "a temporary file was left: $(ls "$scratch")"; else pass "no temporary file left"; fi

if [[ $failures -ne 0 ]]; then
    echo "$failures check(s) failed"
    exit 1
fi
echo "all checks passed"

#!/usr/bin/env bash
# Tests of `nce loss`: the files it reads and writes, the values it writes (against a plain
# Python reference), and its one-line errors that leave nothing behind.
# Usage: bash tests/loss_cli_test.sh PATH/TO/nce      (meson test runs it as the suite 'loss-cli')
# The .npy files are written and read with Python's struct module (no NumPy needed).
set -uo pipefail

if [[ $# -ne 1 || ! -x "$1" ]]; then
    echo "usage: bash tests/loss_cli_test.sh PATH/TO/nce (got: $*)" >&2
    exit 2
fi
if ! command -v python3 >/dev/null; then
    echo "python3 not found: skipping (it writes the .npy fixtures)"
    exit 77  # meson: skipped
fi
nce="$1"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
stdout="$scratch/stdout"
stderr="$scratch/stderr"
failures=0
source "$(dirname "${BASH_SOURCE[0]}")/cli_test_helpers.sh"

# The Python helper: `npy write PATH DESCR SHAPE VALUES`, `npy read PATH` (prints descr,
# shape, values as JSON), and `npy infonce DIR TAU` (the spec's formula, plain loops).
helper="$scratch/npy.py"
cat >"$helper" <<'PYTHON'
import json, math, struct, sys

from npy_files import read, write  # tests/npy_files.py

def infonce(directory, tau):
    def matrix(name):
        _, shape, values = read("%s/%s.npy" % (directory, name))
        return [values[i * shape[1]:(i + 1) * shape[1]] for i in range(shape[0])]
    q, c = matrix("q"), matrix("p")
    try:
        c += matrix("neg")
    except FileNotFoundError:
        pass
    total = 0.0
    for i, qi in enumerate(q):
        logits = [sum(a * b for a, b in zip(qi, cj)) / tau for cj in c]
        top = max(logits)
        total += top + math.log(sum(math.exp(l - top) for l in logits)) - logits[i]
    return total / len(q)

command = sys.argv[1]
if command == "write":
    write(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), json.loads(sys.argv[5]))
elif command == "read":
    print(json.dumps(read(sys.argv[2])))
elif command == "infonce":
    print(repr(infonce(sys.argv[2], float(sys.argv[3]))))
PYTHON
npy() { python3 "$helper" "$@"; }

# close A B TOLERANCE: |A - B| <= TOLERANCE · max(1, |B|)
close() { python3 -c "import sys; a, b, t = map(float, sys.argv[1:]); sys.exit(0 if abs(a - b) <= t * max(1.0, abs(b)) else 1)" "$@"; }

loss_value() { python3 -c "import json, sys; print(repr(json.loads(sys.argv[1])[2][0]))" "$(npy read "$1")"; }
shape_of() { python3 -c "import json, sys; d = json.loads(sys.argv[1]); print(d[0], d[1])" "$(npy read "$1")"; }

# --- fixtures: infonce with 3 pairs and 2 negatives in dimension 4 ---
inputs="$scratch/inputs"
mkdir -p "$inputs"
npy write "$inputs/q.npy" '<f8' '[3, 4]' '[0.5, 0.5, 0.5, 0.5, 0.9, -0.1, 0.3, 0.3, -0.2, 0.8, 0.4, -0.4]'
npy write "$inputs/p.npy" '<f8' '[3, 4]' '[0.6, 0.4, 0.5, 0.5, 0.7, 0.1, 0.5, 0.1, -0.3, 0.7, 0.5, -0.3]'
npy write "$inputs/neg.npy" '<f8' '[2, 4]' '[0.1, 0.9, -0.3, 0.2, -0.5, -0.5, 0.5, 0.5]'
npy write "$inputs/unrelated.npy" '<i8' '[2]' '[7, 8]'  # a file no loss takes: ignored

# --- help and listing ---
run loss --help
expect_exit_zero "nce loss --help"
expect_in "$stdout" '--inputs' "nce loss --help documents --inputs"
expect_in "$stdout" '--set' "nce loss --help documents --set"

run loss --list
expect_exit_zero "nce loss --list"
expect_in "$stdout" '^infonce .*tau=0\.05' "nce loss --list shows infonce with tau=0.05"
expect_in "$stdout" '^ntxent .*mask_self=1' "nce loss --list shows ntxent's mask_self=1"

# --- infonce: files, shapes and the value ---
out="$scratch/out"
run loss infonce --inputs "$inputs" --out "$out"
expect_exit_zero "nce loss infonce"
for file in loss.npy grad_q.npy grad_p.npy grad_neg.npy; do
    if [[ -f "$out/$file" ]]; then pass "infonce writes $file"; else fail "infonce did not write $file"; fi
done
if [[ ! -e "$out/grad_log_tau.npy" && ! -e "$out/grad_unrelated.npy" ]]; then
    pass "infonce writes no gradient for inputs it did not read"
else
    fail "infonce wrote a gradient for an input it did not read"
fi
[[ "$(shape_of "$out/loss.npy")" == "<f8 []" ]] && pass "loss.npy is float64, shape []" || fail "loss.npy is $(shape_of "$out/loss.npy")"
[[ "$(shape_of "$out/grad_q.npy")" == "<f8 [3, 4]" ]] && pass "grad_q.npy is float64 [3, 4]" || fail "grad_q.npy is $(shape_of "$out/grad_q.npy")"
[[ "$(shape_of "$out/grad_neg.npy")" == "<f8 [2, 4]" ]] && pass "grad_neg.npy is float64 [2, 4]" || fail "grad_neg.npy is $(shape_of "$out/grad_neg.npy")"
if close "$(loss_value "$out/loss.npy")" "$(npy infonce "$inputs" 0.05)" 1e-12; then
    pass "infonce loss equals the Python reference at tau=0.05"
else
    fail "infonce loss $(loss_value "$out/loss.npy") != Python reference $(npy infonce "$inputs" 0.05)"
fi

out_set="$scratch/out_set"
run loss infonce --inputs "$inputs" --out "$out_set" --set tau=0.2
expect_exit_zero "nce loss infonce --set tau=0.2"
if close "$(loss_value "$out_set/loss.npy")" "$(npy infonce "$inputs" 0.2)" 1e-12; then
    pass "--set tau=0.2 gives the Python reference at tau=0.2"
else
    fail "--set tau=0.2: $(loss_value "$out_set/loss.npy") != $(npy infonce "$inputs" 0.2)"
fi

# A learnable temperature: log_tau [1] in float32 gets grad_log_tau.npy of shape [1].
inputs_tau="$scratch/inputs_tau"
cp -r "$inputs" "$inputs_tau"
npy write "$inputs_tau/log_tau.npy" '<f4' '[1]' '[-2.0]'
run loss infonce --inputs "$inputs_tau" --out "$scratch/out_tau"
expect_exit_zero "nce loss infonce with log_tau.npy"
[[ "$(shape_of "$scratch/out_tau/grad_log_tau.npy")" == "<f8 [1]" ]] && pass "grad_log_tau.npy is float64 [1]" ||
    fail "grad_log_tau.npy missing or wrong: $(ls "$scratch/out_tau")"

run loss infonce --inputs "$inputs" --out "$scratch/out32" --dtype float32
expect_exit_zero "nce loss infonce --dtype float32"
if close "$(loss_value "$scratch/out32/loss.npy")" "$(loss_value "$out/loss.npy")" 1e-5; then
    pass "--dtype float32 agrees with float64 to 1e-5"
else
    fail "--dtype float32 loss $(loss_value "$scratch/out32/loss.npy")"
fi

inputs_z="$scratch/inputs_z"
mkdir -p "$inputs_z"
npy write "$inputs_z/z.npy" '<f8' '[4, 3]' '[0.6, 0.8, 0.0, 0.0, 0.6, 0.8, 0.8, 0.0, 0.6, 0.0, 0.8, 0.6]'
run loss ntxent --inputs "$inputs_z" --out "$scratch/out_z" --set mask_self=0 --set tau=0.5
expect_exit_zero "nce loss ntxent --set mask_self=0 --set tau=0.5"
[[ "$(shape_of "$scratch/out_z/grad_z.npy")" == "<f8 [4, 3]" ]] && pass "ntxent writes grad_z.npy [4, 3]" ||
    fail "ntxent grad_z.npy missing or wrong"

# --- errors: one line, non-zero exit, nothing written ---
bad_out="$scratch/bad_out"
run loss infonce --inputs "$inputs" --out "$bad_out" --set tau=0
expect_one_line_error 'parameter tau must be > 0' "" "--set tau=0"
expect_nothing_written "$bad_out" "--set tau=0"

run loss infonce --inputs "$inputs" --out "$bad_out" --set tau=abc
expect_one_line_error "tau must be a finite number, got 'abc'" "" "--set tau=abc"
run loss infonce --inputs "$inputs" --out "$bad_out" --set temperature=0.1
expect_one_line_error "unknown parameter 'temperature'; infonce takes: tau" "" "--set temperature=0.1"
run loss infonce --inputs "$inputs" --out "$bad_out" --set tau
expect_one_line_error "--set expects key=value" "" "--set tau"
run loss ntxent --inputs "$inputs_z" --out "$bad_out" --set mask_self=2
expect_one_line_error "mask_self is a flag: 0 or 1" "" "--set mask_self=2"
run loss simclr --inputs "$inputs" --out "$bad_out"
expect_one_line_error "unknown loss 'simclr'; known losses: infonce" "" "an unknown loss"
run loss infonce --inputs "$inputs" --out "$bad_out" --dtype float16
expect_one_line_error "float16" "" "--dtype float16"
expect_nothing_written "$bad_out" "the parameter errors"

missing="$scratch/missing_q"
mkdir -p "$missing"
cp "$inputs/p.npy" "$missing/"
run loss infonce --inputs "$missing" --out "$bad_out"
expect_one_line_error "missing input file .*q\.npy" "" "a missing q.npy"
expect_nothing_written "$bad_out" "a missing q.npy"

malformed="$scratch/malformed"
mkdir -p "$malformed"
cp "$inputs/p.npy" "$malformed/"
printf 'this is not a numpy file' >"$malformed/q.npy"
run loss infonce --inputs "$malformed" --out "$bad_out"
expect_one_line_error "q\.npy" "" "a malformed q.npy"
expect_nothing_written "$bad_out" "a malformed q.npy"

truncated="$scratch/truncated"
mkdir -p "$truncated"
cp "$inputs/p.npy" "$truncated/"
head -c 140 "$inputs/q.npy" >"$truncated/q.npy"
run loss infonce --inputs "$truncated" --out "$bad_out"
expect_one_line_error "q\.npy" "" "a truncated q.npy"

shapes="$scratch/shapes"
mkdir -p "$shapes"
cp "$inputs/q.npy" "$shapes/"
npy write "$shapes/p.npy" '<f8' '[3, 5]' '[0.1, 0.2, 0.3, 0.4, 0.5, 0.1, 0.2, 0.3, 0.4, 0.5, 0.1, 0.2, 0.3, 0.4, 0.5]'
run loss infonce --inputs "$shapes" --out "$bad_out"
expect_one_line_error 'q \[3, 4\] and p \[3, 5\]' "" "p of shape [3, 5] against q [3, 4]"
expect_nothing_written "$bad_out" "a shape mismatch"

integers="$scratch/integers"
mkdir -p "$integers"
cp "$inputs/p.npy" "$integers/"
npy write "$integers/q.npy" '<i8' '[3, 4]' '[1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0]'
run loss infonce --inputs "$integers" --out "$bad_out"
expect_one_line_error "q\.npy: q must be float32 or float64, got int64" "" "an int64 q.npy"

odd="$scratch/odd"
mkdir -p "$odd"
npy write "$odd/z.npy" '<f8' '[3, 2]' '[1, 0, 0, 1, 0.6, 0.8]'
run loss ntxent --inputs "$odd" --out "$bad_out"
expect_one_line_error "2B rows" "" "ntxent on z with 3 rows"
expect_nothing_written "$bad_out" "every input error"

run loss infonce --inputs "$scratch/no_such_folder" --out "$bad_out"
expect_one_line_error "input folder .*no_such_folder does not exist" "" "a missing input folder"

# An output path that is a file: nothing can be written, and the message says where.
touch "$scratch/a_file"
run loss infonce --inputs "$inputs" --out "$scratch/a_file"
expect_one_line_error "a_file" "" "--out naming a file"

# A write that fails half way (grad_p.npy is a folder, so it cannot be replaced): the files
# written before it (loss.npy, grad_q.npy) are removed again.
half="$scratch/half"
mkdir -p "$half/grad_p.npy"
run loss infonce --inputs "$inputs" --out "$half"
expect_one_line_error "grad_p\.npy.*nothing was written" "" "a write that fails at grad_p.npy"
if [[ "$(ls -A "$half")" == "grad_p.npy" ]]; then pass "the failed write removed what it had written"; else
    fail "after the failed write the folder holds: $(ls -A "$half")"
fi

echo
if [[ $failures -eq 0 ]]; then
    echo "all loss-cli tests passed"
    exit 0
fi
echo "$failures loss-cli test(s) failed"
exit 1

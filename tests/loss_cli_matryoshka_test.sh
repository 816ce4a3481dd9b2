#!/usr/bin/env bash
# `nce loss matryoshka` (docs/losses_contract.md, table 3: distillation and nested
# embeddings), at the defaults and with other --set values (dims, weights, tau), with and
# without a learnable log_tau ([] and [1]), for d = 8 (default dims 1, 2, 4, 8), d = 6 (3, 6)
# and d = 1 (1 alone), on rows that are not of unit length:
#   - loss.npy equals an independent plain-Python reference of the spec's formula (1e-10 relative);
#   - exactly loss.npy, grad_q.npy, grad_p.npy (and grad_log_tau.npy when log_tau.npy is there)
#     are written, each gradient in its input's shape and equal to central differences of the
#     reference;
#   - --dtype float32 agrees with float64;
#   - one-line errors that write nothing: dims and weights that do not parse or do not fit d,
#     tau out of range, an unknown parameter, shapes that do not fit, a row that is zero in a
#     prefix, NaN, a log_tau of two elements, an int64 q, a missing file.
# Usage: bash tests/loss_cli_matryoshka_test.sh PATH/TO/nce   (meson test runs it as 'loss-cli-matryoshka')
# The Python is the standard library only (struct for .npy, math.fsum/exp/log, loops).
set -uo pipefail

if [[ $# -ne 1 || ! -x "$1" ]]; then
    echo "usage: bash tests/loss_cli_matryoshka_test.sh PATH/TO/nce (got: $*)" >&2
    exit 2
fi
if ! command -v python3 >/dev/null; then
    echo "python3 not found: skipping (it writes the .npy fixtures and computes the reference)"
    exit 77  # meson: skipped
fi
nce="$1"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
stdout="$scratch/stdout"
stderr="$scratch/stderr"
failures=0
source "$(dirname "${BASH_SOURCE[0]}")/cli_test_helpers.sh"

# ---------------------------------------------------------------------------------------
# The Python side.
#   python3 helper.py fixtures DIR                 writes DIR/<case>/{q,p[,log_tau]}.npy
#   python3 helper.py check IN OUT [key=value...]  compares OUT with the reference; prints
#                                                  ok/FAIL lines, exits with the FAIL count
#   python3 helper.py agree A B TOLERANCE          loss.npy of two runs agree (float32 vs float64)
#   python3 helper.py write PATH DESCR SHAPE VALUES   one .npy (SHAPE, VALUES as JSON)
# ---------------------------------------------------------------------------------------
helper="$scratch/helper.py"
cat >"$helper" <<'PYTHON'
import json, math, os, random, struct, sys

from npy_files import read, write  # tests/npy_files.py

DEFAULTS = {"tau": "0.05", "dims": "", "weights": ""}

def lse(values):
    top = max(values)
    return top + math.log(math.fsum(math.exp(v - top) for v in values))

def entries(text):
    return [entry.strip() for entry in text.split(",")] if text.strip() else []

# --- the spec's formula: for each prefix size m, the first m columns of q and p with each row
#     divided by its length; L = sum_m w_m infonce(u, v) / sum_m w_m; infonce(u, v) =
#     (1/N) sum_i (lse_j u_i.v_j/tau - u_i.v_i/tau). Default dims: d/8, d/4, d/2, d where
#     whole numbers >= 1; default weights: all 1. A learnable tau = max(exp(log_tau), 1e-4). ---
def matryoshka(x, P):
    (shape, q), (_, p) = x["q"], x["p"]
    N, d = shape
    tau = max(math.exp(x["log_tau"][1][0]), 1e-4) if "log_tau" in x else float(P["tau"])
    dims = [int(e) for e in entries(P["dims"])] or [d // k for k in (8, 4, 2, 1) if d % k == 0 and d // k >= 1]
    weights = [float(e) for e in entries(P["weights"])] or [1.0] * len(dims)
    terms = []
    for m, w in zip(dims, weights):
        def unit(x, i):
            row = x[i * d:i * d + m]
            length = math.sqrt(math.fsum(v * v for v in row))
            return [v / length for v in row]
        u = [unit(q, i) for i in range(N)]
        v = [unit(p, i) for i in range(N)]
        rows = []
        for i in range(N):
            l = [math.fsum(a * b for a, b in zip(u[i], v[j])) / tau for j in range(N)]
            rows.append(lse(l) - l[i])
        terms.append(w * math.fsum(rows) / N)
    return math.fsum(terms) / math.fsum(weights)

# --- fixtures: gaussian rows, each scaled by a factor in [0.5, 2) (not of unit length) ---
def rows(rng, n, d):
    values = []
    for _ in range(n):
        scale = rng.uniform(0.5, 2.0)
        values += [rng.gauss(0, 1) * scale for _ in range(d)]
    return values

def fixtures(directory):
    rng = random.Random(20261125)
    def put(case, name, descr, shape, values):
        os.makedirs(os.path.join(directory, case), exist_ok=True)
        write(os.path.join(directory, case, name + ".npy"), descr, shape, values)
    N, d = 4, 8
    q, p = rows(rng, N, d), rows(rng, N, d)
    put("base", "q", "<f8", [N, d], q)
    put("base", "p", "<f8", [N, d], p)
    # "learnable": log_tau of shape [] (tau = 0.1); "learnable_1": shape [1], float32 (tau = 0.3)
    for case, descr, shape, value in (("learnable", "<f8", [], math.log(0.1)), ("learnable_1", "<f4", [1], math.log(0.3))):
        put(case, "q", "<f8", [N, d], q)
        put(case, "p", "<f8", [N, d], p)
        put(case, "log_tau", descr, shape, [value])
    # "d6": default dims 3, 6; "d1": one column, u = sign, the gradient is 0
    put("d6", "q", "<f8", [3, 6], rows(rng, 3, 6))
    put("d6", "p", "<f8", [3, 6], rows(rng, 3, 6))
    put("d1", "q", "<f8", [3, 1], [0.7, -1.3, 0.4])
    put("d1", "p", "<f8", [3, 1], [-0.2, 0.9, 1.6])
    # "float32_files": the embeddings stored as float32 (any float dtype is read)
    put("float32_files", "q", "<f4", [N, d], q)
    put("float32_files", "p", "<f4", [N, d], p)

def check(in_dir, out_dir, settings):
    params = dict(DEFAULTS)
    for setting in settings:
        key, value = setting.split("=", 1)
        params[key] = value
    x = {}
    for name in ("q", "p", "log_tau"):
        path = os.path.join(in_dir, name + ".npy")
        if os.path.exists(path):
            _, shape, values = read(path)
            x[name] = (shape, values)
    differentiable = [name for name in ("q", "p", "log_tau") if name in x]
    failures = []
    label = " ".join([os.path.basename(in_dir)] + settings)
    def verdict(ok, text):
        print(("ok:   " if ok else "FAIL: ") + label + ": " + text)
        if not ok:
            failures.append(text)

    reference = matryoshka(x, params)
    descr, shape, values = read(os.path.join(out_dir, "loss.npy"))
    verdict(descr == "<f8" and shape == [], "loss.npy is float64 of shape [] (got %s %s)" % (descr, shape))
    error = abs(values[0] - reference) / max(abs(reference), 1e-300) if reference != 0 else abs(values[0])
    verdict(error <= 1e-10, "loss %r equals the Python reference %r (error %.2e <= 1e-10)" % (values[0], reference, error))

    expected = sorted(["loss.npy"] + ["grad_%s.npy" % n for n in differentiable])
    written = sorted(os.listdir(out_dir))
    verdict(written == expected, "writes exactly %s (got %s)" % (expected, written))

    step = 1e-6
    for name in differentiable:
        path = os.path.join(out_dir, "grad_%s.npy" % name)
        if not os.path.exists(path):
            continue
        descr, shape, grad = read(path)
        in_shape, in_values = x[name]
        verdict(descr == "<f8" and shape == in_shape,
                "grad_%s.npy is float64 of the input's shape %s (got %s %s)" % (name, in_shape, descr, shape))
        worst = 0.0
        for k in range(len(in_values)):
            def at(delta):
                moved = list(in_values)
                moved[k] += delta
                changed = dict(x)
                changed[name] = (in_shape, moved)
                return matryoshka(changed, params)
            numeric = (at(step) - at(-step)) / (2 * step)
            worst = max(worst, abs(numeric - grad[k]) if k < len(grad) else float("inf"))
        scale = max([1.0] + [abs(g) for g in grad])
        verdict(worst <= 1e-6 * scale,
                "grad_%s.npy agrees with central differences of the reference (max error %.2e)" % (name, worst))
    return len(failures)

def agree(a, b, tolerance):
    va, vb = read(os.path.join(a, "loss.npy"))[2][0], read(os.path.join(b, "loss.npy"))[2][0]
    return 0 if abs(va - vb) <= tolerance * max(1.0, abs(vb)) else 1

command = sys.argv[1]
if command == "write":
    write(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), json.loads(sys.argv[5]))
elif command == "fixtures":
    fixtures(sys.argv[2])
elif command == "check":
    sys.exit(min(check(sys.argv[2], sys.argv[3], sys.argv[4:]), 100))
elif command == "agree":
    sys.exit(agree(sys.argv[2], sys.argv[3], float(sys.argv[4])))
PYTHON
py() { python3 "$helper" "$@"; }

inputs="$scratch/inputs"
py fixtures "$inputs"

# check_case CASE [key=value...]: run `nce loss matryoshka` on a fixture and check what it wrote.
runs=0
check_case() {
    local case="$1"
    shift
    local sets=()
    for setting in "$@"; do sets+=(--set "$setting"); done
    runs=$((runs + 1))
    local out="$scratch/out_${case}_$runs"
    run loss matryoshka --inputs "$inputs/$case" --out "$out" "${sets[@]}"
    if [[ $status -ne 0 ]]; then fail "nce loss matryoshka on $case $* exits $status, expected 0"; return; fi
    pass "nce loss matryoshka on $case $* exits 0"
    py check "$inputs/$case" "$out" "$@"
    failures=$((failures + $?))
    # float32 computes the same loss to float32's precision
    run loss matryoshka --inputs "$inputs/$case" --out "$out.f32" --dtype float32 "${sets[@]}"
    if [[ $status -eq 0 ]] && py agree "$out.f32" "$out" 1e-4; then
        pass "nce loss matryoshka on $case $* --dtype float32 agrees with float64 to 1e-4"
    else
        fail "nce loss matryoshka on $case $* --dtype float32 (exit $status) disagrees with float64"
    fi
}

# --- the defaults and other values ---
check_case base
check_case base tau=0.2
check_case base dims=2,4,8 weights=1,2,3
check_case base dims=8
check_case base weights=1,1,1,5
check_case base 'dims= 4, 8' tau=1
check_case learnable
check_case learnable tau=7 dims=4,8
check_case learnable_1 weights=2,1,1,1
check_case d6
check_case d6 dims=2,6 weights=0.5,1.5
check_case d1
check_case float32_files dims=1,8

# --- parameters that do not parse, do not fit d = 8, or are unknown: one line, nothing written ---
bad_out="$scratch/bad_out"
bad_parameter() {
    local setting="$1" pattern="$2"
    run loss matryoshka --inputs "$inputs/base" --out "$bad_out" --set "$setting"
    expect_one_line_error "$pattern" "" "matryoshka --set $setting"
    expect_nothing_written "$bad_out" "matryoshka --set $setting"
}
bad_parameter dims=abc "parameter dims must be comma-separated whole numbers \(prefix sizes, e.g. 64,128,256\), got 'abc'"
bad_parameter dims=2.5,8 "parameter dims must be comma-separated whole numbers.*got '2.5'"
bad_parameter dims=2,,8 "parameter dims has an empty entry in '2,,8'"
bad_parameter dims=4,2,8 'parameter dims must be strictly ascending, got 4,2,8 \(2 after 4\)'
bad_parameter dims=4,4,8 'parameter dims must be strictly ascending'
bad_parameter dims=4,16 'parameter dims has 16 > d = 8'
bad_parameter dims=2,4 'parameter dims must end with d = 8 \(the whole embedding\), got 2,4; add 8 at the end'
bad_parameter dims=0,8 'parameter dims must hold prefix sizes >= 1, got 0'
bad_parameter weights=1,2 'parameter weights has 2 entries but dims has 4 \(1,2,4,8, the default for this d\)'
bad_parameter weights=1,0,1,1 'parameter weights must be finite numbers > 0, got 0 for prefix size 2'
bad_parameter weights=1,-1,1,1 'parameter weights must be finite numbers > 0, got -1'
bad_parameter weights=x "parameter weights must be comma-separated finite numbers \(e.g. 1,1,2\), got 'x'"
bad_parameter tau=0 'parameter tau must be > 0'
bad_parameter tau=abc "parameter tau must be a finite number, got 'abc'"
bad_parameter dim=8 "unknown parameter 'dim'; matryoshka takes: tau, dims, weights"

# --- inputs that do not fit: one line naming the input (and the shapes), nothing written ---
# bad_input NAME DESCR SHAPE VALUES PATTERN WHAT: the base fixture with one file replaced.
bad_input() {
    local name="$1" descr="$2" shape="$3" values="$4" pattern="$5" what="$6"
    local folder="$scratch/bad_inputs/$runs"
    runs=$((runs + 1))
    mkdir -p "$folder"
    cp "$inputs/base"/*.npy "$folder/"
    py write "$folder/$name.npy" "$descr" "$shape" "$values"
    run loss matryoshka --inputs "$folder" --out "$bad_out"
    expect_one_line_error "$pattern" "" "matryoshka with $what"
    expect_nothing_written "$bad_out" "matryoshka with $what"
}
halves() { python3 -c "import json; print(json.dumps([0.5] * $1))"; }
bad_input p '<f8' '[4, 6]' "$(halves 24)" 'q \[4, 8\] and p \[4, 6\] must have the same shape' "p of dimension 6 against q's 8"
bad_input p '<f8' '[3, 8]' "$(halves 24)" 'q \[4, 8\] and p \[3, 8\] must have the same shape' "p of 3 rows against q's 4"
bad_input q '<f8' '[4, 8]' "$(python3 -c "import json; print(json.dumps([0.5] * 16 + [0.0] + [0.5] * 15))")" \
    'row 2 of q is zero in its first 1 columns \(prefix size 1\), so it cannot be re-normalised to unit length' \
    "a row of q that is zero in the prefix of size 1"
bad_input p '<f8' '[4, 8]' "$(python3 -c "import json; print(json.dumps([0.5] * 8 + [0.0] * 8 + [0.5] * 16))")" \
    'row 1 of p is zero in its first 1 columns' "a row of p that is all zeros"
bad_input q '<f8' '[4, 8]' "$(python3 -c "import json; print(json.dumps([0.5] * 5 + ['NaN'] + [0.5] * 26))" | tr -d '"')" \
    'q contains NaN or Inf' "NaN in q"
bad_input log_tau '<f8' '[2]' '[0.1, 0.2]' 'log_tau must have one element \(shape \[\] or \[1\]\), got \[2\]' \
    "a log_tau of two elements"
bad_input q '<i8' '[4, 8]' "$(python3 -c "import json; print(json.dumps([1] * 32))")" 'q.npy: q must be float32 or float64' \
    "an int64 q"

# N = 1: infonce's negatives come from the batch
one_row="$scratch/one_row"
mkdir -p "$one_row"
py write "$one_row/q.npy" '<f8' '[1, 8]' "$(halves 8)"
py write "$one_row/p.npy" '<f8' '[1, 8]' "$(halves 8)"
run loss matryoshka --inputs "$one_row" --out "$bad_out"
expect_one_line_error 'needs N \(rows of q, p; the other rows are the negatives\) >= 2 \(got 1\)' "" "matryoshka with N = 1"
expect_nothing_written "$bad_out" "matryoshka with N = 1"

missing="$scratch/missing_p"
mkdir -p "$missing"
cp "$inputs/base/q.npy" "$missing/"
run loss matryoshka --inputs "$missing" --out "$bad_out"
expect_one_line_error 'missing input file .*p.npy \(p is required\)' "" "matryoshka without p.npy"
expect_nothing_written "$bad_out" "matryoshka without p.npy"

echo
if [[ $failures -eq 0 ]]; then
    echo "all loss-cli-matryoshka tests passed"
    exit 0
fi
echo "$failures loss-cli-matryoshka test(s) failed"
exit 1

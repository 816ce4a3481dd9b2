#!/usr/bin/env bash
# `nce loss distill_kl` (docs/losses_contract.md, table 3), at the defaults and
# with other --set values, on a teacher with a -inf score (0·log 0 = 0), a teacher of finite
# scores, K = 1 and N = 1:
#   - loss.npy equals an independent plain-Python reference of the spec's formula (1e-10 relative);
#   - exactly loss.npy, grad_q.npy and grad_c.npy are written (teacher is data: no gradient),
#     each gradient in its input's shape and equal to central differences of the reference;
#   - --dtype float32 agrees with float64;
#   - one-line errors that write nothing: parameters out of range or unknown, shapes that do
#     not fit, a teacher with NaN, +inf or a row of only -inf, an int64 teacher, a missing file.
# Usage: bash tests/loss_cli_distill_test.sh PATH/TO/nce   (meson test runs it as 'loss-cli-distill')
# The Python is the standard library only (struct for .npy, math.fsum/exp/log, loops).
set -uo pipefail

if [[ $# -ne 1 || ! -x "$1" ]]; then
    echo "usage: bash tests/loss_cli_distill_test.sh PATH/TO/nce (got: $*)" >&2
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
#   python3 helper.py fixtures DIR                 writes DIR/<case>/{q,c,teacher}.npy
#   python3 helper.py check IN OUT [key=value...]  compares OUT with the reference; prints
#                                                  ok/FAIL lines, exits with the FAIL count
#   python3 helper.py agree A B TOLERANCE          loss.npy of two runs agree (float32 vs float64)
#   python3 helper.py write PATH DESCR SHAPE VALUES   one .npy (SHAPE, VALUES as JSON)
# ---------------------------------------------------------------------------------------
helper="$scratch/helper.py"
cat >"$helper" <<'PYTHON'
import json, math, os, random, struct, sys

from npy_files import read, write  # tests/npy_files.py

DEFAULTS = {"tau": "0.05", "teacher_tau": "1.0"}
DIFFERENTIABLE = ["q", "c"]  # teacher is data

def dot(x, y):
    return math.fsum(a * b for a, b in zip(x, y))

def lse(values):  # a -inf value adds exp(-inf) = 0; at least one value is finite
    top = max(values)
    return top + math.log(math.fsum(math.exp(v - top) for v in values))

# --- the spec's formula: s_ik = q_i.c_ik / tau, t_ik = softmax_k(teacher_ik / teacher_tau),
#     L = (1/N) sum_ik t_ik (log t_ik - log softmax_k(s_i)_k), 0 log 0 = 0 ---
def distill_kl(x, P):
    (_, q), (c_shape, c), (_, teacher) = x["q"], x["c"], x["teacher"]
    N, K, d = c_shape
    tau, teacher_tau = float(P["tau"]), float(P["teacher_tau"])
    terms = []
    for i in range(N):
        s = [dot(q[i * d:(i + 1) * d], c[(i * K + k) * d:(i * K + k + 1) * d]) / tau for k in range(K)]
        scaled = [teacher[i * K + k] / teacher_tau for k in range(K)]
        s_lse, t_lse = lse(s), lse(scaled)
        for k in range(K):
            log_t = scaled[k] - t_lse
            t = math.exp(log_t)
            if t > 0:  # 0 log 0 = 0
                terms.append(t * (log_t - (s[k] - s_lse)))
    return math.fsum(terms) / N

# --- fixtures: unit rows from a seeded random.Random ---
def unit_rows(rng, n, d):
    rows = []
    for _ in range(n):
        row = [rng.gauss(0, 1) for _ in range(d)]
        norm = math.sqrt(math.fsum(v * v for v in row))
        rows += [v / norm for v in row]
    return rows

def fixtures(directory):
    rng = random.Random(20261124)
    def put(case, name, descr, shape, values):
        os.makedirs(os.path.join(directory, case), exist_ok=True)
        write(os.path.join(directory, case, name + ".npy"), descr, shape, values)
    N, K, d = 4, 3, 3
    q, c = unit_rows(rng, N, d), unit_rows(rng, N * K, d)
    teacher = [rng.uniform(-2, 4) for _ in range(N * K)]
    # "ruled_out": query 1's last candidate has the score -inf (t = 0 there)
    put("ruled_out", "q", "<f8", [N, d], q)
    put("ruled_out", "c", "<f8", [N, K, d], c)
    put("ruled_out", "teacher", "<f8", [N, K], teacher[:5] + [-math.inf] + teacher[6:])
    # "finite": every score finite, the teacher as float32 (any float dtype is read)
    put("finite", "q", "<f8", [N, d], q)
    put("finite", "c", "<f8", [N, K, d], c)
    put("finite", "teacher", "<f4", [N, K], teacher)
    # "one_candidate": K = 1, so L = 0 and both gradients are 0
    put("one_candidate", "q", "<f8", [N, d], q)
    put("one_candidate", "c", "<f8", [N, 1, d], c[:N * d])
    put("one_candidate", "teacher", "<f8", [N, 1], teacher[:N])
    # "one_query": N = 1 is valid
    put("one_query", "q", "<f8", [1, d], q[:d])
    put("one_query", "c", "<f8", [1, K, d], c[:K * d])
    put("one_query", "teacher", "<f8", [1, K], teacher[:K])

def check(in_dir, out_dir, settings):
    params = dict(DEFAULTS)
    for setting in settings:
        key, value = setting.split("=", 1)
        params[key] = value
    x = {}
    for name in ("q", "c", "teacher"):
        _, shape, values = read(os.path.join(in_dir, name + ".npy"))
        x[name] = (shape, values)
    failures = []
    label = " ".join([os.path.basename(in_dir)] + settings)
    def verdict(ok, text):
        print(("ok:   " if ok else "FAIL: ") + label + ": " + text)
        if not ok:
            failures.append(text)

    reference = distill_kl(x, params)
    descr, shape, values = read(os.path.join(out_dir, "loss.npy"))
    verdict(descr == "<f8" and shape == [], "loss.npy is float64 of shape [] (got %s %s)" % (descr, shape))
    error = abs(values[0] - reference) / max(abs(reference), 1e-300) if reference != 0 else abs(values[0])
    verdict(error <= 1e-10, "loss %r equals the Python reference %r (error %.2e <= 1e-10)" % (values[0], reference, error))

    expected = sorted(["loss.npy"] + ["grad_%s.npy" % n for n in DIFFERENTIABLE])
    written = sorted(os.listdir(out_dir))
    verdict(written == expected, "writes exactly %s (got %s)" % (expected, written))

    step = 1e-6
    for name in DIFFERENTIABLE:
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
                return distill_kl(changed, params)
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

# check_case CASE [key=value...]: run `nce loss distill_kl` on a fixture and check what it wrote.
runs=0
check_case() {
    local case="$1"
    shift
    local sets=()
    for setting in "$@"; do sets+=(--set "$setting"); done
    runs=$((runs + 1))
    local out="$scratch/out_${case}_$runs"
    run loss distill_kl --inputs "$inputs/$case" --out "$out" "${sets[@]}"
    if [[ $status -ne 0 ]]; then fail "nce loss distill_kl on $case $* exits $status, expected 0"; return; fi
    pass "nce loss distill_kl on $case $* exits 0"
    py check "$inputs/$case" "$out" "$@"
    failures=$((failures + $?))
    # float32 computes the same loss to float32's precision
    run loss distill_kl --inputs "$inputs/$case" --out "$out.f32" --dtype float32 "${sets[@]}"
    if [[ $status -eq 0 ]] && py agree "$out.f32" "$out" 1e-4; then
        pass "nce loss distill_kl on $case $* --dtype float32 agrees with float64 to 1e-4"
    else
        fail "nce loss distill_kl on $case $* --dtype float32 (exit $status) disagrees with float64"
    fi
}

# --- the defaults and other values ---
check_case ruled_out
check_case ruled_out tau=0.2 teacher_tau=0.5
check_case ruled_out teacher_tau=3
check_case finite
check_case finite tau=1 teacher_tau=0.1
check_case one_candidate
check_case one_query tau=0.1

# --- parameters out of range or unknown: one line naming the parameter, nothing written ---
bad_out="$scratch/bad_out"
bad_parameter() {
    local setting="$1" pattern="$2"
    run loss distill_kl --inputs "$inputs/ruled_out" --out "$bad_out" --set "$setting"
    expect_one_line_error "$pattern" "" "distill_kl --set $setting"
    expect_nothing_written "$bad_out" "distill_kl --set $setting"
}
bad_parameter tau=0 'parameter tau must be > 0'
bad_parameter tau=-0.05 'parameter tau must be > 0'
bad_parameter teacher_tau=0 'parameter teacher_tau must be > 0'
bad_parameter teacher_tau=-1 'parameter teacher_tau must be > 0'
bad_parameter teacher_tau=abc "parameter teacher_tau must be a finite number, got 'abc'"
bad_parameter temperature=1 "unknown parameter 'temperature'; distill_kl takes: tau, teacher_tau"

# --- inputs that do not fit: one line naming the input (and the shapes), nothing written ---
# bad_input NAME DESCR SHAPE VALUES PATTERN WHAT: the ruled_out fixture with one file replaced.
bad_input() {
    local name="$1" descr="$2" shape="$3" values="$4" pattern="$5" what="$6"
    local folder="$scratch/bad_inputs/$runs"
    runs=$((runs + 1))
    mkdir -p "$folder"
    cp "$inputs/ruled_out"/*.npy "$folder/"
    py write "$folder/$name.npy" "$descr" "$shape" "$values"
    run loss distill_kl --inputs "$folder" --out "$bad_out"
    expect_one_line_error "$pattern" "" "distill_kl with $what"
    expect_nothing_written "$bad_out" "distill_kl with $what"
}
zeros() { python3 -c "import json; print(json.dumps([0.5] * $1))"; }
bad_input c '<f8' '[4, 3, 4]' "$(zeros 48)" 'c must have shape \[N, K, d\] = \[4, K, 3\] to match q \[4, 3\], got \[4, 3, 4\]' \
    "c of dimension 4 against q's 3"
bad_input c '<f8' '[12, 3]' "$(zeros 36)" 'c must have shape \[N, K, d\].*got \[12, 3\]' "c a matrix, not [N, K, d]"
bad_input c '<f8' '[3, 3, 3]' "$(zeros 27)" 'c must have shape.*got \[3, 3, 3\]' "c for 3 queries against q's 4"
bad_input teacher '<f8' '[4, 2]' "$(zeros 8)" 'teacher must have shape \[N, K\] = \[4, 3\].*got \[4, 2\]' \
    "teacher [4, 2] against c [4, 3, 3]"
bad_input teacher '<f8' '[4, 3]' '[0, NaN, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]' 'teacher\[0, 1\] is nan' "a NaN teacher score"
bad_input teacher '<f8' '[4, 3]' '[0, 0, 0, 0, 0, 0, 0, Infinity, 0, 0, 0, 0]' 'teacher\[2, 1\] is inf' \
    "a +inf teacher score"
bad_input teacher '<f8' '[4, 3]' '[0, 0, 0, -Infinity, -Infinity, -Infinity, 0, 0, 0, 0, 0, 0]' \
    'teacher row 1 is all -inf' "a teacher row of only -inf"
bad_input teacher '<i8' '[4, 3]' '[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]' 'teacher.npy: teacher must be float32 or float64' \
    "an int64 teacher"
bad_input q '<f8' '[4, 3]' '[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, Infinity]' 'q contains NaN or Inf' "Inf in q"

missing="$scratch/missing_teacher"
mkdir -p "$missing"
cp "$inputs/ruled_out/q.npy" "$inputs/ruled_out/c.npy" "$missing/"
run loss distill_kl --inputs "$missing" --out "$bad_out"
expect_one_line_error 'missing input file .*teacher.npy \(teacher is required\)' "" "distill_kl without teacher.npy"
expect_nothing_written "$bad_out" "distill_kl without teacher.npy"

echo
if [[ $failures -eq 0 ]]; then
    echo "all loss-cli-distill tests passed"
    exit 0
fi
echo "$failures loss-cli-distill test(s) failed"
exit 1

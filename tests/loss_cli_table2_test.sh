#!/usr/bin/env bash
# `nce loss` for the nine losses of table 2 of the loss contract (docs/losses_contract.md):
# multi_positive_in, relaxed_hard_negative, siglip, dcl, debiased, cosent, margin_mse,
# megabatch_margin, gist. For each, at the defaults and with other --set values:
#   - loss.npy equals an independent plain-Python reference of the spec's formula (1e-10 relative);
#   - grad_<input>.npy is written exactly for the differentiable inputs read (gist's guides
#     included, as zeros), in the input's shape, and each agrees with central differences of
#     the Python reference;
#   - one-line errors that write nothing: a parameter out of range, a shape mismatch, N = 1
#     where the spec needs N >= 2 (and N = 1 accepted where it does not, siglip included).
# Usage: bash tests/loss_cli_table2_test.sh PATH/TO/nce   (meson test runs it as 'loss-cli-table2')
# The Python is the standard library only (struct for .npy, math.fsum/exp/log, loops).
set -uo pipefail

if [[ $# -ne 1 || ! -x "$1" ]]; then
    echo "usage: bash tests/loss_cli_table2_test.sh PATH/TO/nce (got: $*)" >&2
    exit 2
fi
if ! command -v python3 >/dev/null; then
    echo "python3 not found: skipping (it writes the .npy fixtures and computes the references)"
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
# The Python side: .npy files, the fixtures, the nine formulas and the checks.
#   python3 helper.py fixtures DIR            writes DIR/<loss>/<input>.npy for every loss
#   python3 helper.py check NAME IN OUT [key=value...]   compares OUT with the reference;
#                                             prints ok/FAIL lines, exits with the FAIL count
#   python3 helper.py agree A B TOLERANCE     loss.npy of two runs agree (float32 vs float64)
#   python3 helper.py first_row SRC DST        SRC cut to its first row (for the N = 1 cases)
# ---------------------------------------------------------------------------------------
helper="$scratch/helper.py"
cat >"$helper" <<'PYTHON'
import math, os, random, struct, sys

from npy_files import read, write  # tests/npy_files.py

# --- what each loss reads: (input, kind); kinds E embedding, S scalar, G guide, D data ---
INPUTS = {
    "multi_positive_in": [("q", "E"), ("p", "E"), ("qid", "D"), ("log_tau", "S")],
    "relaxed_hard_negative": [("q", "E"), ("p", "E"), ("qid", "D")],
    "siglip": [("x", "E"), ("y", "E"), ("log_scale", "S"), ("bias", "S")],
    "dcl": [("u", "E"), ("v", "E")],
    "debiased": [("u", "E"), ("v", "E")],
    "cosent": [("x", "E"), ("y", "E"), ("label", "D")],
    "margin_mse": [("q", "E"), ("p", "E"), ("n", "E"), ("label", "D")],
    "megabatch_margin": [("a", "E"), ("p", "E")],
    "gist": [("a", "E"), ("p", "E"), ("ga", "G"), ("gp", "G")],
}
DEFAULTS = {
    "multi_positive_in": {"tau": "0.1"},
    "relaxed_hard_negative": {"tau": "0.1", "p_relax": "0.1"},
    "siglip": {},
    "dcl": {"tau": "0.1"},
    "debiased": {"t": "0.5", "tau_plus": "0.1", "beta": "0.0"},
    "cosent": {"scale": "20"},
    "margin_mse": {},
    "megabatch_margin": {"pos_margin": "0.8", "neg_margin": "0.3"},
    "gist": {"tau": "0.01", "margin": "0.0", "strategy": "absolute"},
}

# --- small helpers on lists ---
def dot(x, y):
    return math.fsum(a * b for a, b in zip(x, y))

def lse(values):
    top = max(values)
    return top + math.log(math.fsum(math.exp(v - top) for v in values))

def log_sigmoid(t):  # -softplus(-t), no exp of a positive number
    return -(max(-t, 0.0) + math.log1p(math.exp(-abs(t))))

def rows_of(shape, values):
    return [values[i * shape[1]:(i + 1) * shape[1]] for i in range(shape[0])]

# --- the nine formulas of the spec's second table; x: input name -> (shape, flat values) ---
def temperature(x, tau):
    if "log_tau" in x:
        return max(math.exp(x["log_tau"][1][0]), 1e-4)
    return tau

def multi_positive_in(x, P):
    q, p, qid = rows_of(*x["q"]), rows_of(*x["p"]), x["qid"][1]
    tau = temperature(x, float(P["tau"]))
    total = []
    for i in range(len(q)):
        logits = [dot(q[i], pj) / tau for pj in p]
        group = [j for j in range(len(q)) if qid[j] == qid[i]]
        # -log( (1/|G|) sum_G softmax ) = lse(all) - lse(group) + log |G|
        total.append(lse(logits) - lse([logits[j] for j in group]) + math.log(len(group)))
    return math.fsum(total) / len(q)

def relaxed_hard_negative(x, P):
    q, p, qid = rows_of(*x["q"]), rows_of(*x["p"]), x["qid"][1]
    tau, relax = float(P["tau"]), float(P["p_relax"])
    total = []
    for i in range(len(q)):
        logits = [dot(q[i], pj) / tau for pj in p]
        row_lse = lse(logits)
        group = [j for j in range(len(q)) if qid[j] == qid[i]]
        for j in group:
            if len(group) == 1:
                t = 1.0
            else:
                t = 1.0 - relax if j == i else relax / (len(group) - 1)
            if t > 0:  # 0 log 0 = 0
                total.append(t * (math.log(t) - (logits[j] - row_lse)))
    return math.fsum(total) / len(q)

def siglip(x, P):
    xs, ys = rows_of(*x["x"]), rows_of(*x["y"])
    scale, bias = math.exp(x["log_scale"][1][0]), x["bias"][1][0]
    terms = []
    for i in range(len(xs)):
        for j in range(len(ys)):
            z = 1.0 if i == j else -1.0
            terms.append(log_sigmoid(z * (scale * dot(xs[i], ys[j]) + bias)))
    return -math.fsum(terms) / len(xs)

def dcl(x, P):
    u, v, tau = rows_of(*x["u"]), rows_of(*x["v"]), float(P["tau"])
    def one_direction(u, v):
        total = []
        for i in range(len(u)):
            negatives = [dot(u[i], u[k]) / tau for k in range(len(u)) if k != i]
            negatives += [dot(u[i], v[k]) / tau for k in range(len(v)) if k != i]
            total.append(-dot(u[i], v[i]) / tau + lse(negatives))
        return math.fsum(total) / len(u)
    return one_direction(u, v) + one_direction(v, u)

def debiased(x, P):
    u, v = rows_of(*x["u"]), rows_of(*x["v"])
    t, tau_plus, beta = float(P["t"]), float(P["tau_plus"]), float(P["beta"])
    z = u + v
    n, rows = len(u), len(z)
    M = rows - 2
    total = []
    for i in range(rows):
        partner = (i + n) % rows
        pos = math.exp(dot(z[i], z[partner]) / t)
        others = [j for j in range(rows) if j != i and j != partner]
        ng = [math.exp(dot(z[i], z[j]) / t) for j in others]
        if beta == 0:
            R = math.fsum(ng)
        else:
            imp = [math.exp(beta * dot(z[i], z[j]) / t) for j in others]
            R = math.fsum(w * g for w, g in zip(imp, ng)) / (math.fsum(imp) / M)
        Ng = max((R - tau_plus * M * pos) / (1 - tau_plus), M * math.exp(-1 / t))
        total.append(-math.log(pos / (pos + Ng)))
    return math.fsum(total) / rows

def cosent(x, P):
    xs, ys, label = rows_of(*x["x"]), rows_of(*x["y"]), x["label"][1]
    scale = float(P["scale"])
    s = [scale * dot(a, b) for a, b in zip(xs, ys)]
    pairs = [s[i] - s[j] for i in range(len(s)) for j in range(len(s)) if label[i] < label[j]]
    if not pairs:
        return 0.0
    top = max(0.0, max(pairs))
    if top == 0.0:
        return math.log1p(math.fsum(math.exp(d) for d in pairs))
    return top + math.log(math.fsum([math.exp(-top)] + [math.exp(d - top) for d in pairs]))

def margin_mse(x, P):
    q, p, n, label = rows_of(*x["q"]), rows_of(*x["p"]), rows_of(*x["n"]), x["label"][1]
    return math.fsum((dot(q[i], p[i]) - dot(q[i], n[i]) - label[i]) ** 2 for i in range(len(q))) / len(q)

def megabatch_margin(x, P):
    a, p = rows_of(*x["a"]), rows_of(*x["p"])
    pos_margin, neg_margin = float(P["pos_margin"]), float(P["neg_margin"])
    total = []
    for i in range(len(a)):
        sims = [dot(a[i], pj) for pj in p]
        hardest = None
        for j in range(len(p)):
            if j != i and (hardest is None or sims[j] > sims[hardest]):  # ties: the lowest j
                hardest = j
        total.append(max(pos_margin - sims[i], 0.0) + max(sims[hardest] - neg_margin, 0.0))
    return math.fsum(total) / len(a)

def gist(x, P):
    a, p, ga, gp = rows_of(*x["a"]), rows_of(*x["p"]), rows_of(*x["ga"]), rows_of(*x["gp"])
    tau, margin, strategy = float(P["tau"]), float(P["margin"]), P["strategy"]
    total = []
    for i in range(len(a)):
        theta = dot(ga[i], gp[i])
        threshold = theta - margin if strategy == "absolute" else theta * (1 - margin)
        row = []
        for j in range(len(a)):
            if j == i or not dot(ga[i], gp[j]) > threshold:  # AP: the diagonal is never masked
                row.append(dot(a[i], p[j]) / tau)
        for j in range(len(a)):
            if j != i and not dot(ga[i], ga[j]) > threshold:  # AA: the diagonal always is
                row.append(dot(a[i], a[j]) / tau)
        for j in range(len(a)):
            if j != i and not dot(gp[i], gp[j]) > threshold:  # PP: the diagonal always is
                row.append(dot(p[i], p[j]) / tau)
        total.append(lse(row) - dot(a[i], p[i]) / tau)
    return math.fsum(total) / len(a)

FORMULAS = {name: globals()[name] for name in INPUTS}

# --- fixtures: N = 4 rows of dimension 3, drawn from a seeded random.Random ---
def unit_rows(rng, n, d, length=1.0):
    rows = []
    for _ in range(n):
        row = [rng.gauss(0, 1) for _ in range(d)]
        norm = math.sqrt(math.fsum(v * v for v in row))
        rows += [length * v / norm for v in row]
    return rows

def near_rows(rng, rows, d, noise, length=1.0):
    out = []
    for i in range(len(rows) // d):
        row = [rows[i * d + k] + noise * rng.gauss(0, 1) for k in range(d)]
        norm = math.sqrt(math.fsum(v * v for v in row))
        out += [length * v / norm for v in row]
    return out

def fixtures(directory, n=4, d=3):
    rng = random.Random(20261122)
    def put(loss, name, descr, shape, values):
        os.makedirs(os.path.join(directory, loss), exist_ok=True)
        write(os.path.join(directory, loss, name + ".npy"), descr, shape, values)
    q, p = unit_rows(rng, n, d), unit_rows(rng, n, d)
    for loss in ("multi_positive_in", "relaxed_hard_negative"):
        put(loss, "q", "<f8", [n, d], q)
        put(loss, "p", "<f8", [n, d], p)
        put(loss, "qid", "<i8", [n], [5, 9, 5, 2])  # groups {0, 2}, {1}, {3}
    put("siglip", "x", "<f8", [n, d], q)
    put("siglip", "y", "<f8", [n, d], near_rows(rng, q, d, 0.7))
    put("siglip", "log_scale", "<f8", [1], [math.log(10.0)])
    put("siglip", "bias", "<f8", [], [-3.0])  # [] and [1] both allowed; gradients keep the shape
    for loss in ("dcl", "debiased"):
        put(loss, "u", "<f8", [n, d], q)
        put(loss, "v", "<f8", [n, d], near_rows(rng, q, d, 0.9))
    put("cosent", "x", "<f8", [n, d], q)
    put("cosent", "y", "<f8", [n, d], p)
    put("cosent", "label", "<f8", [n], [0.2, 1.0, 0.5, 1.0])  # a tie: no pair between rows 1 and 3
    put("margin_mse", "q", "<f8", [n, d], q)
    put("margin_mse", "p", "<f8", [n, d], p)
    put("margin_mse", "n", "<f8", [n, d], unit_rows(rng, n, d))
    put("margin_mse", "label", "<f8", [n], [0.3, -0.2, 0.9, 0.1])
    put("megabatch_margin", "a", "<f8", [n, d], q)
    put("megabatch_margin", "p", "<f8", [n, d], near_rows(rng, q, d, 0.5))
    # gist: rows of length 0.4 keep the default tau = 0.01 away from a saturated softmax; the
    # guides are unit rows, and rows 0 and 1 share a guide anchor so that something is masked.
    a = unit_rows(rng, n, d)
    put("gist", "a", "<f8", [n, d], [0.4 * v for v in a])
    gist_p = near_rows(rng, a, d, 0.8, 0.4)
    put("gist", "p", "<f8", [n, d], gist_p)
    ga = near_rows(rng, a, d, 0.3)
    ga[d:2 * d] = ga[0:d]
    put("gist", "ga", "<f8", [n, d], ga)
    put("gist", "gp", "<f8", [n, d], near_rows(rng, gist_p, d, 0.3))

# --- checks of one run ---
def load_inputs(name, directory):
    inputs = {}
    for input_name, _ in INPUTS[name]:
        path = os.path.join(directory, input_name + ".npy")
        if os.path.exists(path):
            _, shape, values = read(path)
            inputs[input_name] = (shape, values)
    return inputs

def check(name, in_dir, out_dir, settings):
    params = dict(DEFAULTS[name])
    for setting in settings:
        key, value = setting.split("=", 1)
        params[key] = value
    x = load_inputs(name, in_dir)
    formula = FORMULAS[name]
    failures = []
    def verdict(ok, text):
        print(("ok:   " if ok else "FAIL: ") + " ".join([name] + settings) + ": " + text)
        if not ok:
            failures.append(text)

    reference = formula(x, params)
    descr, shape, values = read(os.path.join(out_dir, "loss.npy"))
    verdict(descr == "<f8" and shape == [], "loss.npy is float64 of shape [] (got %s %s)" % (descr, shape))
    rel = abs(values[0] - reference) / max(abs(reference), 1e-300)
    verdict(rel <= 1e-10, "loss %r equals the Python reference %r (relative %.2e <= 1e-10)" % (values[0], reference, rel))

    differentiable = [n for n, kind in INPUTS[name] if kind in "ESG" and n in x]
    expected = sorted(["loss.npy"] + ["grad_%s.npy" % n for n in differentiable])
    written = sorted(os.listdir(out_dir))
    verdict(written == expected, "writes exactly %s (got %s)" % (expected, written))

    step = 1e-6
    for input_name in differentiable:
        path = os.path.join(out_dir, "grad_%s.npy" % input_name)
        if not os.path.exists(path):
            continue
        descr, shape, grad = read(path)
        in_shape, in_values = x[input_name]
        verdict(descr == "<f8" and shape == in_shape,
                "grad_%s.npy is float64 of the input's shape %s (got %s %s)" % (input_name, in_shape, descr, shape))
        if dict(INPUTS[name])[input_name] == "G":
            verdict(all(g == 0.0 for g in grad), "grad_%s.npy is all zeros (a guide only chooses the mask)" % input_name)
            continue
        worst = 0.0
        for k in range(len(in_values)):
            def at(delta):
                moved = list(in_values)
                moved[k] += delta
                changed = dict(x)
                changed[input_name] = (in_shape, moved)
                return formula(changed, params)
            numeric = (at(step) - at(-step)) / (2 * step)
            worst = max(worst, abs(numeric - grad[k]) if k < len(grad) else float("inf"))
        scale = max([1.0] + [abs(g) for g in grad])
        verdict(worst <= 1e-6 * scale,
                "grad_%s.npy agrees with central differences of the reference (max error %.2e)" % (input_name, worst))
    return len(failures)

def agree(a, b, tolerance):
    va, vb = read(os.path.join(a, "loss.npy"))[2][0], read(os.path.join(b, "loss.npy"))[2][0]
    return 0 if abs(va - vb) <= tolerance * max(1.0, abs(vb)) else 1

command = sys.argv[1]
if command == "write":
    import json
    write(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), json.loads(sys.argv[5]))
elif command == "fixtures":
    fixtures(sys.argv[2])
elif command == "check":
    sys.exit(min(check(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]), 100))
elif command == "first_row":  # the batch cut to its first row; one-element scalars stay as they are
    descr, shape, values = read(sys.argv[2])
    if os.path.basename(sys.argv[2]) not in ("log_tau.npy", "log_scale.npy", "bias.npy"):
        width = math.prod(shape[1:])
        shape, values = [1] + shape[1:], values[:width]
    write(sys.argv[3], descr, shape, values)
elif command == "agree":
    sys.exit(agree(sys.argv[2], sys.argv[3], float(sys.argv[4])))
PYTHON
py() { python3 "$helper" "$@"; }

inputs="$scratch/inputs"
py fixtures "$inputs"

# check_loss NAME [key=value...]: run `nce loss NAME` on its fixtures and check what it wrote.
runs=0
check_loss() {
    local name="$1"
    shift
    local sets=()
    for setting in "$@"; do sets+=(--set "$setting"); done
    runs=$((runs + 1))
    local out="$scratch/out_${name}_$runs"
    run loss "$name" --inputs "$inputs/$name" --out "$out" "${sets[@]}"
    if [[ $status -ne 0 ]]; then fail "nce loss $name $* exits $status, expected 0"; return; fi
    pass "nce loss $name $* exits 0"
    py check "$name" "$inputs/$name" "$out" "$@"
    local bad=$?
    failures=$((failures + bad))
    # float32 computes the same loss to float32's precision
    run loss "$name" --inputs "$inputs/$name" --out "$out.f32" --dtype float32 "${sets[@]}"
    if [[ $status -eq 0 ]] && py agree "$out.f32" "$out" 1e-4; then
        pass "nce loss $name $* --dtype float32 agrees with float64 to 1e-4"
    else
        fail "nce loss $name $* --dtype float32 (exit $status) disagrees with float64"
    fi
}

# --- every loss at its defaults and with other values ---
check_loss multi_positive_in
check_loss multi_positive_in tau=0.2
check_loss relaxed_hard_negative
check_loss relaxed_hard_negative tau=0.2 p_relax=0.3
check_loss siglip
check_loss dcl
check_loss dcl tau=0.3
check_loss debiased
check_loss debiased t=0.7 tau_plus=0.2 beta=0.5
check_loss cosent
check_loss cosent scale=7.5
check_loss margin_mse
check_loss megabatch_margin
check_loss megabatch_margin pos_margin=0.6 neg_margin=0.1
check_loss gist
check_loss gist tau=0.05 margin=0.1 strategy=relative
check_loss gist tau=0.05 margin=0.05 strategy=absolute

# A learnable temperature: multi_positive_in with log_tau.npy ([1]) writes grad_log_tau.npy,
# and tau is then ignored.
with_log_tau="$scratch/with_log_tau"
cp -r "$inputs/multi_positive_in" "$with_log_tau"
py write "$with_log_tau/log_tau.npy" '<f8' '[1]' "[$(python3 -c 'import math; print(math.log(0.15))')]"
run loss multi_positive_in --inputs "$with_log_tau" --out "$scratch/out_log_tau" --set tau=0.9
if [[ $status -eq 0 ]]; then
    pass "nce loss multi_positive_in with log_tau.npy exits 0"
    py check multi_positive_in "$with_log_tau" "$scratch/out_log_tau" tau=0.9
    failures=$((failures + $?))
else
    fail "nce loss multi_positive_in with log_tau.npy exits $status"
fi

# --- N = 1: the spec's Sizes line ---
ones="$scratch/ones"
for name in multi_positive_in relaxed_hard_negative siglip dcl debiased cosent margin_mse megabatch_margin gist; do
    mkdir -p "$ones/$name"
    for file in "$inputs/$name"/*.npy; do py first_row "$file" "$ones/$name/$(basename "$file")"; done
done
bad_out="$scratch/bad_out"
for name in multi_positive_in relaxed_hard_negative dcl debiased megabatch_margin gist; do
    run loss "$name" --inputs "$ones/$name" --out "$bad_out"
    expect_one_line_error '>= 2' "" "$name with N = 1"
    expect_nothing_written "$bad_out" "$name with N = 1"
done
for name in siglip cosent margin_mse; do
    runs=$((runs + 1))
    run loss "$name" --inputs "$ones/$name" --out "$scratch/out_one_$name"
    if [[ $status -eq 0 ]]; then
        pass "$name with N = 1 exits 0 (N >= 1 is enough)"
        py check "$name" "$ones/$name" "$scratch/out_one_$name"
        failures=$((failures + $?))
    else
        fail "$name with N = 1 exits $status, expected 0"
    fi
done

# --- parameters out of range: one line naming the parameter, nothing written ---
bad_parameter() {
    local name="$1" setting="$2" pattern="$3"
    run loss "$name" --inputs "$inputs/$name" --out "$bad_out" --set "$setting"
    expect_one_line_error "$pattern" "" "$name --set $setting"
    expect_nothing_written "$bad_out" "$name --set $setting"
}
bad_parameter multi_positive_in tau=0 'parameter tau'
bad_parameter relaxed_hard_negative p_relax=1 'parameter p_relax'
bad_parameter relaxed_hard_negative p_relax=-0.1 'parameter p_relax'
bad_parameter siglip tau=0.1 "unknown parameter 'tau'"
bad_parameter dcl tau=-1 'parameter tau'
bad_parameter debiased tau_plus=1 'parameter tau_plus'
bad_parameter debiased beta=-1 'parameter beta'
bad_parameter debiased t=0 'parameter t'
bad_parameter cosent scale=0 'parameter scale'
bad_parameter margin_mse margin=1 "unknown parameter 'margin'"
bad_parameter megabatch_margin pos_margin=-1 'parameter pos_margin'
bad_parameter megabatch_margin neg_margin=-0.5 'parameter neg_margin'
bad_parameter gist strategy=foo 'parameter strategy'
bad_parameter gist margin=-1 'parameter margin'
bad_parameter gist tau=abc 'parameter tau'

# --- a shape mismatch: the second embedding of each loss gets 4 columns instead of 3 ---
declare -A second_input=([multi_positive_in]=p [relaxed_hard_negative]=p [siglip]=y [dcl]=v [debiased]=v
    [cosent]=y [margin_mse]=n [megabatch_margin]=p [gist]=gp)
for name in "${!second_input[@]}"; do
    mismatch="$scratch/mismatch/$name"
    mkdir -p "$mismatch"
    cp "$inputs/$name"/*.npy "$mismatch/"
    wrong="${second_input[$name]}"
    py write "$mismatch/$wrong.npy" '<f8' '[4, 4]' '[0.5, 0.5, 0.5, 0.5, 0.1, 0.2, 0.3, 0.4, 1, 0, 0, 0, 0, 1, 0, 0]'
    run loss "$name" --inputs "$mismatch" --out "$bad_out"
    expect_one_line_error "$wrong.*\[4, 4\]|\[4, 4\].*$wrong" "" "$name with $wrong [4, 4] against [4, 3]"
    expect_nothing_written "$bad_out" "$name with a shape mismatch"
done

# A data vector of the wrong length.
short_qid="$scratch/short_qid"
cp -r "$inputs/relaxed_hard_negative" "$short_qid"
py write "$short_qid/qid.npy" '<i8' '[3]' '[1, 2, 1]'
run loss relaxed_hard_negative --inputs "$short_qid" --out "$bad_out"
expect_one_line_error 'qid' "" "relaxed_hard_negative with qid of length 3 for N = 4"
short_label="$scratch/short_label"
cp -r "$inputs/cosent" "$short_label"
py write "$short_label/label.npy" '<f8' '[2]' '[0.5, 1.0]'
run loss cosent --inputs "$short_label" --out "$bad_out"
expect_one_line_error 'label' "" "cosent with label of length 2 for N = 4"
expect_nothing_written "$bad_out" "the data-length errors"

echo
if [[ $failures -eq 0 ]]; then
    echo "all loss-cli-table2 tests passed"
    exit 0
fi
echo "$failures loss-cli-table2 test(s) failed"
exit 1

#!/usr/bin/env bash
# Tests of `nce graph`: the Graphviz DOT of a loss's autograd graph (the fused node, the
# --expanded op-by-op form, --values), the same text on every run, --output, every loss on
# its 3-row example, `dot -Tsvg` rendering it when Graphviz is installed, and one-line errors.
# Usage: bash tests/graph_cli_test.sh PATH/TO/nce      (meson test runs it as 'graph-cli')
set -uo pipefail

if [[ $# -ne 1 || ! -x "$1" ]]; then
    echo "usage: bash tests/graph_cli_test.sh PATH/TO/nce (got: $*)" >&2
    exit 2
fi
nce="$1"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
stdout="$scratch/stdout"
stderr="$scratch/stderr"
failures=0
source "$(dirname "${BASH_SOURCE[0]}")/cli_test_helpers.sh"

# count PATTERN FILE: lines of FILE matching the extended regex.
count() { grep -Ec -- "$1" "$2"; }
# expect_count PATTERN FILE N WHAT
expect_count() {
    local found
    found=$(count "$1" "$2")
    if [[ $found -eq $3 ]]; then pass "$4"; else fail "$4: $found lines match /$1/, expected $3"; fi
}
# The text of the output node's "value = X" (the loss), from a --values graph.
loss_line() { grep -E 'peripheries=2' "$1" | grep -Eo 'value = [^\\"]+'; }

# 1. The fused infonce on its worked example: three leaves, one node, three edges.
run graph infonce
expect_exit_zero "graph infonce"
cp "$stdout" "$scratch/infonce.dot"
if [[ "$(head -n 1 "$stdout")" == "digraph nce {" && "$(tail -n 1 "$stdout")" == "}" ]]; then
    pass "graph infonce is one digraph"
else
    fail "graph infonce does not start with 'digraph nce {' and end with '}'"
fi
expect_count '^  n[0-9]+ \[shape=' "$stdout" 4 "graph infonce: 4 nodes (q, p, log_tau, the loss)"
expect_count ' -> ' "$stdout" 3 "graph infonce: 3 edges"
expect_in "$stdout" 'label="q\\nparameter, requires_grad\\n\[2, 2\] float64"' "graph infonce: q is a leaf, [2, 2] float64"
expect_in "$stdout" 'label="log_tau\\nparameter, requires_grad\\n\[\] float64"' "graph infonce: log_tau is a leaf"
expect_in "$stdout" 'peripheries=2, label="L\\ninfonce\\n\[\] float64"' "graph infonce: the output node is infonce, []"
expect_in "$stdout" 'label="nce graph infonce: the worked example' "graph infonce: the caption names the example"
if grep -q 'value' "$stdout"; then fail "graph infonce shows values without --values"; else pass "no values unless asked"; fi

# 2. The same text on every run.
run graph infonce
if cmp -s "$stdout" "$scratch/infonce.dot"; then pass "graph infonce: the same DOT twice"; else fail "graph infonce differs between runs"; fi

# 3. --values: the loss, each input's entries and gradient.
run graph infonce --values
expect_exit_zero "graph infonce --values"
cp "$stdout" "$scratch/values.dot"
expect_in "$stdout" 'label="q\\nparameter, requires_grad\\n\[2, 2\] float64\\nvalue \[0.6, 0.8, 1, 0\]\\ngrad \[' \
    "--values: q's entries and gradient"
expect_in "$stdout" 'label="L\\ninfonce\\n\[\] float64\\nvalue = [0-9.]+\\ngrad = 1"' "--values: the loss and dL/dL = 1"

# 4. --expanded: the op-by-op graph, with the same loss.
run graph infonce --expanded --values
expect_exit_zero "graph infonce --expanded --values"
cp "$stdout" "$scratch/expanded.dot"
for op in matmul exp div log_softmax mul sum mul_scalar; do
    expect_in "$stdout" "label=\"(L\\\\n)?$op\\\\n" "--expanded draws $op"
done
if grep -q 'infonce\\n' "$stdout"; then fail "--expanded still draws the fused node"; else pass "--expanded: no fused node"; fi
expect_in "$stdout" 'label="constant, no gradient\\n\[2, 2\] float64\\nvalue \[1, 0, 0, 1\]"' \
    "--expanded: the one-hot targets are a constant, the identity"
if [[ -n "$(loss_line "$scratch/values.dot")" && "$(loss_line "$scratch/values.dot")" == "$(loss_line "$stdout")" ]]; then
    pass "--expanded gives the fused loss's value ($(loss_line "$stdout"))"
else
    fail "--expanded loss '$(loss_line "$stdout")' differs from the fused '$(loss_line "$scratch/values.dot")'"
fi

# 5. --rows 3: the random 3-row example where the worked one has 2 rows, the worked one where it has 3.
run graph infonce --rows 3
expect_exit_zero "graph infonce --rows 3"
expect_in "$stdout" 'a random example as nce gradcheck draws it, rows 3, dimension 4, seed 1' "--rows 3: infonce's random example"
expect_in "$stdout" 'label="q\\nparameter, requires_grad\\n\[3, 4\] float64"' "--rows 3: q is [3, 4]"
run graph multi_positive --rows 3
expect_in "$stdout" 'the worked example of docs/derivations/multi_positive.md, 3 rows' \
    "--rows 3: multi_positive's own 3-row worked example"
expect_count '^  n[0-9]+ \[shape=' "$stdout" 4 "multi_positive: q, p, log_tau and the fused node (qid is data the node reads, no input)"

# 6. --output: the same text in the file, written whole; a line on stdout.
run graph infonce --output "$scratch/out.dot"
expect_exit_zero "graph infonce --output"
if cmp -s "$scratch/out.dot" "$scratch/infonce.dot"; then pass "--output holds the DOT"; else fail "--output differs from stdout's DOT"; fi
expect_in "$stdout" "wrote the graph to $scratch/out.dot" "--output says where it wrote"
if ls "$scratch" | grep -q '\.tmp'; then fail "--output left a temporary file"; else pass "--output leaves no temporary file"; fi

# 7. Every loss on its 3-row example, with values.
losses=$("$nce" loss --list | awk 'NF > 1 && $2 == "inputs:" {print $1}')
all_drawn=1
for loss in $losses; do
    run graph "$loss" --rows 3 --values --output "$scratch/$loss.dot"
    if [[ $status -ne 0 ]] || ! grep -q 'peripheries=2' "$scratch/$loss.dot"; then
        fail "graph $loss --rows 3 --values"
        all_drawn=0
    fi
done
if [[ $all_drawn -eq 1 && -n "$losses" ]]; then pass "every loss draws on its 3-row example ($(echo $losses | wc -w) losses)"; fi

# 8. Graphviz draws them.
if command -v dot >/dev/null; then
    for name in infonce expanded; do
        if dot -Tsvg "$scratch/$name.dot" -o "$scratch/$name.svg" 2>"$scratch/dot_errors" && grep -q '<svg' "$scratch/$name.svg" &&
            [[ ! -s "$scratch/dot_errors" ]]; then
            pass "dot -Tsvg draws $name.dot"
        else
            fail "dot -Tsvg $name.dot: $(head -c 500 "$scratch/dot_errors")"
        fi
    done
    expect_in "$scratch/expanded.svg" '>log_softmax<' "the SVG shows log_softmax"
    expect_in "$scratch/infonce.svg" '>infonce<' "the SVG shows the infonce node"
    rendered=0
    for loss in $losses; do dot -Tsvg "$scratch/$loss.dot" -o "$scratch/$loss.svg" 2>/dev/null && rendered=$((rendered + 1)); done
    if [[ $rendered -eq $(echo $losses | wc -w) ]]; then pass "dot -Tsvg draws every loss"; else fail "dot drew $rendered losses"; fi
else
    echo "skip: dot (Graphviz) is not installed, so the DOT is not rendered (scripts/setup.sh installs graphviz)"
fi

# 9. --inputs DIR: the inputs as `nce loss` reads them (written with Python's struct module).
if command -v python3 >/dev/null; then
    mkdir -p "$scratch/inputs"
    python3 - "$scratch/inputs" <<'PYTHON'
import struct, sys
def write(path, shape, values):
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': %s, }" % repr(tuple(shape))
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack("<%dd" % len(values), *values))
write(sys.argv[1] + "/q.npy", [3, 2], [0.6, 0.8, 1, 0, 0, 1])
write(sys.argv[1] + "/p.npy", [3, 2], [0.8, 0.6, 0, 1, 1, 0])
PYTHON
    run graph infonce --inputs "$scratch/inputs"
    expect_exit_zero "graph infonce --inputs DIR"
    expect_in "$stdout" "inputs from $scratch/inputs" "--inputs: the caption names the folder"
    expect_in "$stdout" 'label="p\\nparameter, requires_grad\\n\[3, 2\] float64"' "--inputs: p is [3, 2]"
    expect_count '^  n[0-9]+ \[shape=' "$stdout" 3 "--inputs without log_tau: 3 nodes"
else
    echo "skip: python3 not found, so --inputs is not tried (it writes the .npy files)"
fi

# 10. One-line errors, nothing written.
run graph no_such_loss --output "$scratch/bad.dot"
expect_one_line_error "unknown loss 'no_such_loss'" "$scratch/bad.dot" "graph of an unknown loss"
run graph infonce --inputs "$scratch/missing" --output "$scratch/bad.dot"
expect_one_line_error "input folder .*missing does not exist" "$scratch/bad.dot" "graph with a missing --inputs folder"
run graph triplet --expanded --output "$scratch/bad.dot"
expect_one_line_error "triplet: no expanded form" "$scratch/bad.dot" "graph --expanded of a fused-only loss"
run graph infonce --inputs "$scratch" --rows 3 --output "$scratch/bad.dot"
expect_one_line_error "not both" "$scratch/bad.dot" "graph with --inputs and --rows"
run graph infonce --output "$scratch/no/such/folder/g.dot"
expect_one_line_error "cannot write" "$scratch/no/such/folder/g.dot" "graph --output into a missing folder"
run graph
expect_one_line_error "graph: name a loss" "" "graph with no loss"

if [[ $failures -gt 0 ]]; then
    echo "$failures check(s) failed"
    exit 1
fi
echo "all graph-cli checks passed"

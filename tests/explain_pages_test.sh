#!/usr/bin/env bash
# Every loss's derivation page (docs/derivations/NAME.md) and every op example's page
# (docs/derivations/ops/, as `nce explain --list` names it) shows its worked example exactly
# as `nce explain NAME` prints it: the page's numbers are the code's numbers, and each
# closed-form gradient on the page equals the backward's (nce explain exits 1 otherwise).
# Every op page shows at least one example, and only registered ones. Also `nce explain`'s
# own errors and --list (no name twice: an op example may not take a loss's name).
# Usage: bash tests/explain_pages_test.sh PATH/TO/nce DOCS/DERIVATIONS   (meson suite 'explain-pages')
# To refresh a page after a deliberate change: bash scripts/explain_pages.sh NAME (or paste the
# print of nce explain NAME between the page's "$ nce explain NAME" line and the closing ```).
set -uo pipefail

if [[ $# -ne 2 || ! -x "$1" || ! -d "$2" ]]; then
    echo "usage: bash tests/explain_pages_test.sh PATH/TO/nce DOCS/DERIVATIONS (got: $*)" >&2
    exit 2
fi
nce="$1"
pages="$2"
repo_root="$(cd "$pages/../.." && pwd)"  # the pages are named from the repository root in --list
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
stdout="$scratch/stdout"
stderr="$scratch/stderr"
failures=0
source "$(dirname "${BASH_SOURCE[0]}")/cli_test_helpers.sh"

run explain --list
expect_exit_zero "nce explain --list"
cp "$stdout" "$scratch/listing"
grep -q ' loss ' "$scratch/listing" || fail "nce explain --list names no loss"
grep -q ' op ' "$scratch/listing" || fail "nce explain --list names no op example"
run loss --list
expect_exit_zero "nce loss --list"
for name in $(grep -v '^\[' "$stdout" | awk '{print $1}'); do
    awk -v name="$name" '$1 == name && $2 == "loss" { found = 1 } END { exit !found }' "$scratch/listing" ||
        fail "nce explain --list lacks the loss $name"
done
duplicates=$(awk '{print $1}' "$scratch/listing" | sort | uniq -d)
if [[ -z "$duplicates" ]]; then pass "no name is both a loss and an op example, or listed twice"
else fail "names listed twice by nce explain --list: $duplicates"; fi

while read -r name kind page_path; do
    page="$repo_root/$page_path"
    run explain "$name"
    if [[ $status -ne 0 ]]; then
        fail "nce explain $name exits $status (a closed form that disagrees with the backward, or no example)"
        continue
    fi
    if [[ ! -f "$page" ]]; then
        fail "$kind $name has no page $page"
        continue
    fi
    # The block: the lines after "$ nce explain NAME" up to the closing fence.
    awk -v command="\$ nce explain $name" '
        $0 == command { inside = 1; next }
        inside && /^```/ { exit }
        inside { print }' "$page" >"$scratch/page_block"
    if [[ ! -s "$scratch/page_block" ]]; then
        fail "$page has no block opened by the line '\$ nce explain $name'"
    elif diff -u "$scratch/page_block" "$stdout" >"$scratch/diff"; then
        pass "$page shows exactly what nce explain $name prints"
    else
        fail "$page differs from nce explain $name (- page, + code):
$(head -40 "$scratch/diff")"
    fi
done <"$scratch/listing"

# Every op page shows a registered example, and each block on it is one that belongs there.
for page in "$pages"/ops/*.md; do
    [[ -e "$page" ]] || continue
    [[ "$(basename "$page")" == README.md ]] && continue
    page_path="docs/derivations/ops/$(basename "$page")"
    blocks=$(sed -n 's/^\$ nce explain \([A-Za-z0-9_]*\)$/\1/p' "$page")
    [[ -n "$blocks" ]] || fail "$page shows no worked example (no line '\$ nce explain NAME')"
    for name in $blocks; do
        awk -v name="$name" -v page="$page_path" '$1 == name && $3 == page { found = 1 } END { exit !found }' \
            "$scratch/listing" || fail "$page shows 'nce explain $name', which is no op example of this page"
    done
done

run explain --help
expect_exit_zero "nce explain --help"
run explain nosuchloss
expect_one_line_error "nosuchloss" "" "nce explain nosuchloss"
expect_in "$stderr" "losses: .*infonce.*; ops: .*matmul" "the unknown-name error lists the losses and the ops"
run explain
expect_exit_nonzero "nce explain with no name"

echo "$failures failure(s)"
[[ $failures -eq 0 ]]

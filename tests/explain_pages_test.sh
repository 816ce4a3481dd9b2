#!/usr/bin/env bash
# Every loss's derivation page shows its worked example exactly as `nce explain NAME` prints
# it: the page's numbers are the code's numbers, and each closed-form gradient on the page
# equals the backward's (nce explain exits 1 otherwise). Also `nce explain`'s own errors.
# Usage: bash tests/explain_pages_test.sh PATH/TO/nce DOCS/DERIVATIONS   (meson suite 'explain-pages')
# To refresh a page after a deliberate change: nce explain NAME, and paste the print between
# the page's "$ nce explain NAME" line and the closing ``` of that block.
set -uo pipefail

if [[ $# -ne 2 || ! -x "$1" || ! -d "$2" ]]; then
    echo "usage: bash tests/explain_pages_test.sh PATH/TO/nce DOCS/DERIVATIONS (got: $*)" >&2
    exit 2
fi
nce="$1"
pages="$2"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
stdout="$scratch/stdout"
stderr="$scratch/stderr"
failures=0
source "$(dirname "${BASH_SOURCE[0]}")/cli_test_helpers.sh"

run loss --list
expect_exit_zero "nce loss --list"
names=$(grep -v '^\[' "$stdout" | awk '{print $1}')
[[ -n "$names" ]] || fail "nce loss --list names no loss"

for name in $names; do
    page="$pages/$name.md"
    run explain "$name"
    if [[ $status -ne 0 ]]; then
        fail "nce explain $name exits $status (a closed form that disagrees with the backward, or no example)"
        continue
    fi
    if [[ ! -f "$page" ]]; then
        fail "$name has no page $page"
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
done

run explain --help
expect_exit_zero "nce explain --help"
run explain nosuchloss
expect_one_line_error "nosuchloss" "" "nce explain nosuchloss"
run explain
expect_exit_nonzero "nce explain with no name"

echo "$failures failure(s)"
[[ $failures -eq 0 ]]

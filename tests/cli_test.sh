#!/usr/bin/env bash
# Tests of the `nce` command line: exit codes, and what goes to stdout and stderr.
# Usage: bash tests/cli_test.sh PATH/TO/nce      (meson test runs it as the suite 'cli')
set -uo pipefail

if [[ $# -ne 1 || ! -x "$1" ]]; then
    echo "usage: bash tests/cli_test.sh PATH/TO/nce (got: $*)" >&2
    exit 2
fi
nce="$1"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
stdout="$scratch/stdout"
stderr="$scratch/stderr"
failures=0
source "$(dirname "${BASH_SOURCE[0]}")/cli_test_helpers.sh"

# --- help ---
run --help
expect_exit_zero "nce --help"
expect_in "$stdout" '^Usage: ' "nce --help prints a usage line"
expect_in "$stdout" 'gradcheck' "nce --help lists the gradcheck subcommand"

run gradcheck --help
expect_exit_zero "nce gradcheck --help"
expect_in "$stdout" '--dtype' "nce gradcheck --help documents --dtype"

# --- a known op: a table with a header, passing rows and a summary ---
run gradcheck matmul
expect_exit_zero "nce gradcheck matmul"
expect_in "$stdout" '^op +inputs +max abs err +max rel err +result$' "gradcheck prints the table header"
expect_in "$stdout" '^matmul .* pass$' "gradcheck prints passing matmul rows"
expect_in "$stdout" '^[1-9][0-9]* passed, 0 failed' "gradcheck prints the summary with 0 failed"
if grep -q 'FAIL' "$stdout"; then fail "nce gradcheck matmul printed a FAIL row"; else pass "no FAIL row for matmul"; fi
if [[ -s "$stderr" ]]; then fail "nce gradcheck matmul wrote to stderr"; else pass "nce gradcheck matmul keeps stderr empty"; fi

run gradcheck --dtype float32 matmul
expect_exit_zero "nce gradcheck --dtype float32 matmul"
expect_in "$stdout" 'float32' "gradcheck --dtype float32 says float32"

# --- an unknown op: one line on stderr naming the problem ---
run gradcheck nosuchop
expect_exit_nonzero "nce gradcheck nosuchop"
expect_in "$stderr" 'unknown op' "nce gradcheck nosuchop says 'unknown op' on stderr"
stderr_lines=$(wc -l <"$stderr")
if [[ $stderr_lines -eq 1 ]]; then pass "unknown op: exactly one stderr line"; else fail "unknown op: $stderr_lines stderr lines, expected 1"; fi

# --- bad arguments ---
run gradcheck --dtype float16 matmul
expect_exit_nonzero "nce gradcheck --dtype float16 matmul"
expect_in "$stderr" 'float16' "a bad --dtype is named on stderr"

run
expect_exit_nonzero "nce with no subcommand"

run nosuchcommand
expect_exit_nonzero "nce nosuchcommand"

echo "$failures failure(s)"
[[ $failures -eq 0 ]]

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

# Every check, encoders included, passes in float32 too (its backward against float64 differences).
run gradcheck --all --dtype float32
expect_exit_zero "nce gradcheck --all --dtype float32"
expect_in "$stdout" '^[1-9][0-9]* passed, 0 failed .tolerance 1e-04' "gradcheck --all --dtype float32: 0 failed at 1e-4"

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

# --- the command line's own mistakes: one line naming the word and the fix, exit 2 ---
# expect_usage_error PATTERN ARGS...: exit 2 and one stderr line "nce: error: ..." matching PATTERN.
expect_usage_error() {
    local pattern="$1"
    shift
    run "$@"
    if [[ $status -eq 2 && $(wc -l <"$stderr") -eq 1 ]] && grep -Eq -- "^nce: error: $pattern" "$stderr"; then
        pass "nce $*: $(cat "$stderr")"
    else
        fail "nce $*: exit $status, expected 2 and one line matching /$pattern/"
    fi
}
expect_usage_error "'trian' is not a command of nce; did you mean 'train'\\?" trian
expect_usage_error "'nosuchcommand' is not a command of nce \\(nce --help lists the commands\\)" nosuchcommand
expect_usage_error "'search' is a command of nce korquad, nce stackexchange, nce code and nce train" search
expect_usage_error "nce needs a command: gradcheck, loss" 
expect_usage_error "'pretrian' is not a command of nce korquad; did you mean 'pretrain'\\?" korquad pretrian
expect_usage_error "nce train: unknown option --bogus \\(nce train --help lists the options\\)" train --bogus 1
expect_usage_error "nce train: unknown option --max-step; did you mean --max-steps\\?" train --max-step 3
expect_usage_error "nce encode: unknown option --modle; did you mean --model\\?" encode --modle x
expect_usage_error "nce mine: --negatives takes INT, got 'abc'" mine --negatives abc
expect_usage_error "nce train: unexpected argument 'extra'" train extra
run train search "a question" --index "$scratch/no_index"
expect_one_line_error "no index.json\\); build one with .nce train index --output runs/train." "" "train search with no index"
run --help
expect_exit_zero "nce --help"

# search's help lists search's flags, not the ~50 training settings.
run train search --help
if [[ $status -eq 0 ]] && grep -q -- "--ranker" "$stdout" && ! grep -q -- "--learning-rate" "$stdout"; then
    pass "nce train search --help lists its own flags ($(wc -l <"$stdout") lines)"
else
    fail "nce train search --help: exit $status, or the training flags are listed"
fi

echo "$failures failure(s)"
[[ $failures -eq 0 ]]

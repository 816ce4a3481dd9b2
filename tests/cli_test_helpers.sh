# The shared checks of the command-line shell tests (tests/*_test.sh that run nce), sourced
# after the script has set $nce, $stdout, $stderr and failures=0.
# run ARGS...: runs nce, output to $stdout/$stderr, exit code in $status.
run() {
    "$nce" "$@" >"$stdout" 2>"$stderr" </dev/null
    status=$?
}
fail() {
    echo "FAIL: $*"
    echo "  stdout: $(tail -c 1500 "$stdout")"
    echo "  stderr: $(tail -c 1500 "$stderr")"
    failures=$((failures + 1))
}
pass() { echo "ok:   $*"; }
expect_exit_zero() {
    if [[ $status -eq 0 ]]; then pass "$1 exits 0"; else fail "$1 exits $status, expected 0"; fi
}
expect_exit_nonzero() {
    if [[ $status -ne 0 ]]; then pass "$1 exits non-zero ($status)"; else fail "$1 exits 0, expected non-zero"; fi
}
# expect_in FILE PATTERN WHAT: FILE contains a line matching the extended regex PATTERN.
expect_in() {
    if grep -Eq -- "$2" "$1"; then pass "$3"; else fail "$3 (no line matches /$2/)"; fi
}
# expect_one_line_error PATTERN OUT WHAT: non-zero exit, one line "nce: error: ..." matching
# PATTERN, and nothing at OUT (OUT may be "" when the command names no output).
expect_one_line_error() {
    local pattern="$1" out="$2" what="$3"
    if [[ $status -eq 0 ]]; then fail "$what exits 0, expected non-zero"; return; fi
    local lines
    lines=$(wc -l <"$stderr")
    if [[ $lines -ne 1 ]]; then fail "$what prints $lines lines on stderr, expected 1"; return; fi
    if ! grep -Eq -- "^nce: error: .*$pattern" "$stderr"; then fail "$what: stderr does not match /$pattern/"; return; fi
    if [[ -n "$out" && -e "$out" ]]; then fail "$what wrote $out"; return; fi
    pass "$what: one line, exit $status, nothing written"
}
# expect_nothing_written DIR WHAT: DIR is missing or holds no file.
expect_nothing_written() {
    if [[ ! -e "$1" || -z "$(ls -A "$1")" ]]; then pass "$2 writes nothing"; else fail "$2 wrote: $(ls "$1")"; fi
}
# tests/ on the Python path: the helpers the tests write import npy_files.py from it.
export PYTHONPATH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)${PYTHONPATH:+:$PYTHONPATH}"

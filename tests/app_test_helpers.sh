# The shared checks of the apps' shell tests (tests/*_app_test.sh), sourced after the
# script has set $nce, $stdout, $stderr and failures=0.
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
expect_in() {
    if grep -Eq -- "$2" "$1"; then pass "$3"; else fail "$3 (no line matches /$2/)"; fi
}
# An error: non-zero exit, one line "nce: error: ..." matching PATTERN, and nothing at OUT.
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

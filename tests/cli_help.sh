#!/bin/sh
# kgate's help: without a command the overview on stderr, exit 3 (a usage
# error); kgate help and kgate help CMD on stdout, exit 0, each command's
# own; an unknown command exit 3 in one line.
#   tests/cli_help.sh KGATE
kgate=$1
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fails=0 n=0
expect() { n=$((n + 1)); if [ "$2" = "$3" ]; then echo "ok: $1 = $3"; else echo "FAIL: $1 = $3, want $2"; fails=$((fails + 1)); fi; }
"$kgate" >"$t/out" 2>"$t/err"
expect "kgate alone: exit, the overview on stderr, nothing on stdout" "3 1 0" \
    "$? $(grep -c '^usage: kgate COMMAND' "$t/err") $(wc -c <"$t/out")"
"$kgate" help >"$t/out" 2>"$t/err"
expect "kgate help: exit, the overview on stdout" "0 1" "$? $(grep -c '^usage: kgate COMMAND' "$t/out")"
for c in devices peaks ops check run tune explain compare rejudge report version batch; do
    "$kgate" help $c >"$t/out" 2>"$t/err"
    expect "kgate help $c: exit, its own usage" "0 1" "$? $(grep -c "kgate $c" "$t/out" | sed 's/^[1-9][0-9]*$/1/')"
done
"$kgate" help frobnicate >"$t/out" 2>"$t/err"
expect "kgate help frobnicate: exit, one line" "3 1" "$? $(wc -l <"$t/err")"
echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]

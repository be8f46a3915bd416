#!/bin/sh
# Bad input to the CLI: each case in the data file must exit with its code and
# print exactly one error line (these need no GPU: they fail before one is used).
kgate=$1 data=$2 plug=$3 src=${4:-.}
fails=0 n=0
while IFS='|' read -r code args; do
    case $code in '#'*|'') continue ;; esac
    code=$(echo "$code" | tr -d ' ')
    args=$(echo "$args" | sed "s#PLUG#$plug#g; s#SRC#$src#g")
    n=$((n + 1))
    # shellcheck disable=SC2086
    "$kgate" $args >/tmp/kgate_bad_out.$$ 2>/tmp/kgate_bad_err.$$
    rc=$?
    lines=$(wc -l </tmp/kgate_bad_err.$$)
    if [ "$rc" != "$code" ] || [ "$lines" != 1 ] || ! grep -q '^kgate: ' /tmp/kgate_bad_err.$$ ||
        [ -s /tmp/kgate_bad_out.$$ ]; then
        echo "FAIL: kgate $args -> exit $rc (want $code), stderr:"
        cat /tmp/kgate_bad_err.$$
        fails=$((fails + 1))
    else
        echo "ok: kgate $args -> $rc: $(cat /tmp/kgate_bad_err.$$)"
    fi
done <"$data"
rm -f /tmp/kgate_bad_out.$$ /tmp/kgate_bad_err.$$
echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]

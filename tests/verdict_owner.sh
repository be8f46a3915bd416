#!/bin/sh
# One place decides a verdict: no file outside src/judge/ assigns one
# (reading a recorded verdict back with kg_verdict_parse is not deciding).
#   verdict_owner.sh REPO
set -u
cd "$1" || exit 1
hits=$(grep -rnE '(->|\.)verdict[[:space:]]*=[^=]' src --include='*.c' --include='*.cu' --include='*.h' | grep -v '^src/judge/')
if [ -n "$hits" ]; then
    echo "FAIL: a verdict set outside src/judge/ (judge it there):"
    echo "$hits"
    exit 1
fi
# the check itself must see an assignment where one is
probe=$(printf 'r->verdict = KG_V_OK;\n' | grep -cE '(->|\.)verdict[[:space:]]*=[^=]')
[ "$probe" = 1 ] || { echo "FAIL: the pattern misses an assignment"; exit 1; }
echo "ok: only src/judge/ sets verdicts"

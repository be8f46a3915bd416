#!/bin/sh
# scripts/include_graph.py: src/ has no arrow up or across kgate's layers and
# no cycle beyond the known ones; and the check fails on a tree that adds an
# upward include, a cycle, or drops a known arrow.
#   tests/include_graph.sh SOURCE_DIR
src=$1
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fails=0 n=0
expect() { n=$((n + 1)); if [ "$2" = "$3" ]; then echo "ok: $1 = $3"; else echo "FAIL: $1 = $3, want $2"; fails=$((fails + 1)); fi; }
python3 "$src/scripts/include_graph.py" "$src/src" >"$t/real.txt"
expect "src/: exit" 0 $?
cat "$t/real.txt"
cp -r "$src/src" "$t/src"
printf '#include "../app/commands.h"\n' >>"$t/src/measure/stats.c"   # measure reaching up to app
printf '#include "../supervise/job.h"\n' >>"$t/src/base/kg.h"     # kg <-> job
printf '#include "../app/commands.h"\n' >>"$t/src/cli/main.c"      # the CLI past the public API
python3 "$src/scripts/include_graph.py" "$t/src" >"$t/bad.txt"
expect "an upward include and a cycle: exit" 1 $?
expect "... the upward arrow named" 1 "$(grep -c '^NEW: measure/stats -> app/commands$' "$t/bad.txt")"
expect "... the cycle named" 1 "$(grep -c '^NEW: cycle -> .*base/kg.*supervise/job' "$t/bad.txt")"
expect "... the CLI past kgate.h named" 1 "$(grep -c '^NEW: cli/main -> app/commands$' "$t/bad.txt")"
rm -rf "$t/src" && cp -r "$src/src" "$t/src"
sed -i '/#include "..\/gpu\/tensors.h"/d' "$t/src/ops/ref.cuh" 2>/dev/null
python3 "$src/scripts/include_graph.py" "$t/src" >"$t/gone.txt"
expect "a known arrow fixed: exit (KNOWN must be trimmed)" 1 $?
expect "... named" 1 "$(grep -c '^FIXED, remove from KNOWN: ops/ref -> gpu/tensors$' "$t/gone.txt")"
echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]

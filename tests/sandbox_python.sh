#!/bin/sh
# --sandbox for a Python candidate (tests/python/escape_cand.py), the same
# rules as the .so one in tests/sandbox.sh: without the sandbox its import
# opens an IPv4 socket, writes a file in /tmp and signals kgate (and refuses
# to load: exit 4); with it all three are refused, the scratch directory still works, and
# the candidate loads. With a GPU its kernel then runs (wrong on purpose:
# exit 2); without one the command stops at the GPU (exit 5).
#   tests/sandbox_python.sh KGATE PYTHON
kgate=$1
export KGATE_PYTHON=$2 KG_ESCAPE_TAG=$$
cand=$(cd "$(dirname "$0")/python" && pwd)/escape_cand.py
fails=0 n=0
t() { n=$((n + 1)); if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAIL: $1: got $3, want $2"; fails=$((fails + 1)); fi; }
out=$(mktemp)
# the workers' scratch directories go here, apart from other tests' (ctest -j)
scratch=$(mktemp -d)
trap 'rm -rf "$out" "$scratch" /tmp/kgate-pyescape-$$' EXIT
export TMPDIR=$scratch
"$kgate" check "$cand" --shape small --verify-only >"$out" 2>&1
t "without --sandbox the import gets out (exit 4)" 4 $?
t "... and says what got out" 1 "$(grep -c 'escaped: socket,file,signal' "$out")"
rm -f /tmp/kgate-pyescape-$$
"$kgate" check "$cand" --shape small --verify-only --sandbox >"$out" 2>&1
rc=$?
cat "$out"
if "$kgate" devices >/dev/null 2>&1; then
    t "with --sandbox it loads and runs (exit 2: its output is wrong)" 2 $rc
else
    t "with --sandbox it loads (exit 5 at the GPU)" 5 $rc
    t "the stop is the missing GPU, not the sandbox" 1 "$(grep -c 'no usable CUDA GPU\|no CUDA GPU' "$out")"
fi
t "no file left outside" 0 "$(ls /tmp/kgate-pyescape-$$ 2>/dev/null | wc -l)"
t "scratch directories cleaned up" 0 "$(ls -d "$scratch"/kgate-worker-* 2>/dev/null | wc -l)"
echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]

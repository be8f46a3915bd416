#!/bin/sh
# --sandbox: a candidate that opens an IPv4 socket and writes a file outside
# its scratch directory is refused both inside the sandbox and loads; without
# the sandbox it gets through (and aborts on purpose: exit 4). With a GPU the
# sandboxed kernel then runs (its output is wrong on purpose: exit 2); without
# one the command stops at the GPU (exit 5), never at the sandbox.
kgate=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") plug=$2
# LeakSanitizer needs ptrace, which the sandbox refuses (the sanitizer build)
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
fails=0 n=0
t() { n=$((n + 1)); if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAIL: $1: got $3, want $2"; fails=$((fails + 1)); fi; }
out=$(mktemp)
# the workers' scratch directories go here, apart from other tests' (ctest -j)
scratch=$(mktemp -d)
export TMPDIR=$scratch
"$kgate" check "$plug/libcand_escape.so" --shape small --verify-only >"$out" 2>&1
t "without --sandbox the constructor gets out (exit 4)" 4 $?
(cd "$plug" && "$kgate" check libcand_escape.so --shape small --verify-only --sandbox) >"$out" 2>&1
rc=$?
cat "$out"
if "$kgate" devices >/dev/null 2>&1; then
    t "with --sandbox it loads and runs (exit 2: its output is wrong)" 2 $rc
else
    t "with --sandbox it loads (exit 5 at the GPU)" 5 $rc
    t "the stop is the missing GPU, not the sandbox" 1 "$(grep -c 'no usable CUDA GPU\|no CUDA GPU' "$out")"
fi
t "no file left outside" 0 "$(ls /tmp/kgate-escape-* 2>/dev/null | wc -l)"
t "scratch directories cleaned up" 0 "$(ls -d "$scratch"/kgate-worker-* 2>/dev/null | wc -l)"
rm -rf "$out" "$scratch"
echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]

#!/bin/sh
# --sandbox: a candidate that reaches out while it loads (it opens an IPv4
# socket, writes a file outside its scratch directory and probes kgate with
# signal 0) is refused all three inside the sandbox and loads; without the
# sandbox it gets out, and refuses to load on purpose (exit 4), so that the
# two runs can be told apart. With a GPU the sandboxed kernel then runs (its
# output is wrong on purpose: exit 2); without one the command stops at the
# GPU (exit 5), never at the sandbox.
#   tests/sandbox.sh KGATE PLUGIN_DIR        a shared library's constructor (tests/plugins/escape.c)
#   tests/sandbox.sh KGATE --python PYTHON   a Python file's import (tests/python/escape_cand.py),
#                                            which must still write in its scratch directory
kgate=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
if [ "$2" = --python ]; then
    export KGATE_PYTHON=$3 KG_ESCAPE_TAG=$$
    dir=$(cd "$(dirname "$0")/python" && pwd) cand=escape_cand.py left=/tmp/kgate-pyescape-$$
    said='escaped: socket,file,signal,pidfd,owner' # the import says what got out
else
    dir=$2 cand=libcand_escape.so left='/tmp/kgate-escape-*' said= # the constructor aborts
fi
# LeakSanitizer needs ptrace, which the sandbox refuses (the sanitizer build)
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0"
fails=0 n=0
t() { n=$((n + 1)); if [ "$2" = "$3" ]; then echo "ok: $1"; else echo "FAIL: $1: got $3, want $2"; fails=$((fails + 1)); fi; }
out=$(mktemp)
# the workers' scratch directories go here, apart from other tests' (ctest -j)
scratch=$(mktemp -d)
trap 'rm -rf "$out" "$scratch" /tmp/kgate-pyescape-$$' EXIT
export TMPDIR=$scratch
(cd "$dir" && "$kgate" check "$cand" --shape small --verify-only) >"$out" 2>&1
t "without --sandbox it gets out (exit 4)" 4 $?
[ -n "$said" ] && t "... and says what got out" 1 "$(grep -c "$said" "$out")"
rm -f $left
(cd "$dir" && "$kgate" check "$cand" --shape small --verify-only --sandbox) >"$out" 2>&1
rc=$?
cat "$out"
if "$kgate" devices >/dev/null 2>&1; then
    t "with --sandbox it loads and runs (exit 2: its output is wrong)" 2 $rc
else
    t "with --sandbox it loads (exit 5 at the GPU)" 5 $rc
    t "the stop is the missing GPU, not the sandbox" 1 "$(grep -c 'no usable CUDA GPU\|no CUDA GPU' "$out")"
fi
t "no file left outside" 0 "$(ls $left 2>/dev/null | wc -l)"
t "scratch directories cleaned up" 0 "$(ls -d "$scratch"/kgate-worker-* 2>/dev/null | wc -l)"
echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]

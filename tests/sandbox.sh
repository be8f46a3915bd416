#!/bin/sh
# --sandbox: a candidate that reaches out while it loads (it opens an IPv4
# socket, writes a file outside its scratch directory and probes kgate with
# signal 0) is refused all three inside the sandbox and loads; without the
# sandbox it gets out, and refuses to load on purpose (exit 4), so that the
# two runs can be told apart. With a GPU the sandboxed kernel then runs (its
# output is wrong on purpose: exit 2); without one the command stops at the
# GPU (exit 5), never at the sandbox.
# With the C candidates, each way out of tests/plugins/door.c the same way
# (io_uring, a controlling terminal, TIOCSTI and TIOCLINUX, Unix sockets,
# /dev/shm, a signal to another process of this user, System V shared
# memory, an IPv4 socket by a family with upper bits set); a candidate
# that hangs with a child that left its session: the timeout ends both; and
# one whose signal to itself must still arrive.
#   tests/sandbox.sh KGATE PLUGIN_DIR        shared libraries' constructors (tests/plugins/escape.c, door.c)
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
victim= shm= shmid=
trap 'rm -rf "$out" "$scratch" /tmp/kgate-pyescape-$$ $shm; [ -n "$victim" ] && kill $victim; [ -n "$shmid" ] && ipcrm -m $shmid' EXIT
export TMPDIR=$scratch
# kgate check in the candidates' directory, told its own pid (KG_ESCAPE_KGATE:
# a worker in a PID namespace of its own cannot learn it)
check() { sh -c 'cd "$1" && shift && KG_ESCAPE_KGATE=$$ exec "$@"' sh "$dir" "$kgate" check "$@" >"$out" 2>&1; }
check "$cand" --shape small --verify-only
t "without --sandbox it gets out (exit 4)" 4 $?
[ -n "$said" ] && t "... and says what got out" 1 "$(grep -c "$said" "$out")"
rm -f $left
check "$cand" --shape small --verify-only --sandbox
rc=$?
cat "$out"
if "$kgate" devices >/dev/null 2>&1; then
    ran=2
    t "with --sandbox it loads and runs (exit 2: its output is wrong)" 2 $rc
else
    ran=5
    t "with --sandbox it loads (exit 5 at the GPU)" 5 $rc
    t "the stop is the missing GPU, not the sandbox" 1 "$(grep -c 'no usable CUDA GPU\|no CUDA GPU' "$out")"
fi
t "no file left outside" 0 "$(ls $left 2>/dev/null | wc -l)"
# what kgate said of the workers' namespaces (kg_sandbox_fork): where the
# kernel gives none, the doors they close stay open, and the checks say so
nons=$(grep -c 'the workers get no PID namespace' "$out")
[ "$nons" = 0 ] || grep 'the workers get' "$out"
if [ -z "$said" ]; then
    # what the doors aim at: another process of this user, a file of another
    # program's in /dev/shm, another program's System V segment
    sleep 300 </dev/null >/dev/null 2>&1 &
    victim=$!
    shm=/dev/shm/kgate-door-victim-$$
    (: >"$shm") 2>/dev/null || shm=
    shmid=$(ipcmk -M 4096 2>/dev/null | sed -n 's/.*: *\([0-9][0-9]*\)$/\1/p')
    export KG_DOOR_PID=$victim KG_DOOR_VICTIM=$shm KG_DOOR_SHMID=$shmid
    # a controlling terminal for kgate (util-linux's script), which no worker may inherit
    if command -v script >/dev/null 2>&1; then tty=yes; else tty=; fi
    door() { # door NAME [OPTION...]: exit status of kgate check on libcand_door_NAME.so
        d=$1
        shift
        if [ "$d" = tty ]; then
            script -qec "sh -c 'cd \"$dir\" && exec \"$kgate\" check libcand_door_tty.so --shape small --verify-only $*'" \
                /dev/null >"$out" 2>&1
        else
            check "libcand_door_$d.so" --shape small --verify-only "$@"
        fi
    }
    for d in io_uring tty tiocsti unix shm signal sysv inet self; do
        case $d in
        tty) [ -z "$tty" ] && { echo "skip: door tty: no script(1) here to give kgate a terminal"; continue; } ;;
        shm) [ -z "$shm" ] && { echo "skip: door shm: no /dev/shm here"; continue; } ;;
        sysv) [ -z "$shmid" ] && { echo "skip: door sysv: no ipcmk(1) here"; continue; } ;;
        esac
        if [ "$nons" != 0 ] && { [ $d = signal ] || [ $d = sysv ]; }; then
            echo "skip: door $d: the kernel gives the workers no namespaces here"
            continue
        fi
        door $d
        rc=$?
        if [ $d = tty ]; then # closed for every worker, sandboxed or not
            t "door $d: no worker has a terminal, without --sandbox either (exit $ran)" $ran $rc
        elif [ $d = self ]; then # not a way out: a signal to itself arrives, sandboxed or not
            t "door $d: a worker's signal to itself arrives, without --sandbox (exit $ran)" $ran $rc
        elif [ $rc != 4 ]; then
            echo "note: door $d is closed here without the sandbox too (exit $rc): the check below proves less here"
        fi
        door $d --sandbox
        rc=$?
        if [ $d = self ]; then
            t "door $d: its signal to itself arrives under --sandbox (exit $ran)" $ran $rc
        else
            t "door $d: closed under --sandbox (exit $ran)" $ran $rc
        fi
        [ $ran = 5 ] && ! grep -q 'no usable CUDA GPU\|no CUDA GPU' "$out" && cat "$out"
    done
    # the first seccomp filter alone (before CUDA is up) refuses IPv4, its family's upper bits set or not
    KG_SANDBOX_SKIP=sockets door inet --sandbox
    t "door inet: closed by the first seccomp filter alone (exit $ran)" $ran $?
    # the timeout kills the worker and the child that left its session
    t0=$(date +%s)
    check libcand_door_hang.so --shape small --verify-only --sandbox --timeout 3
    t "door hang: its loading times out (exit 4)" 4 $?
    t "... within 20 s" 1 $(($(date +%s) - t0 < 20))
    t "... and its child is gone" 0 "$(pgrep -f 'sleep 61[.]37' | wc -l)"
fi
t "scratch directories cleaned up" 0 "$(ls -d "$scratch"/kgate-worker-* 2>/dev/null | wc -l)"
echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]

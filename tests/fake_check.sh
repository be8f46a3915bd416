#!/bin/sh
# Stands in for `kgate` in tests/batch.sh (KG_BATCH_RUNNER): `check SPEC ...
# --device D --json F` writes a small results document and logs "SPEC G SHAPE" to
# $KG_FAKE_LOG; `__health D` answers with the fake GPU's UUID, GPU-fake-G.
# G is the GPU that CUDA_VISIBLE_DEVICES=GPU-fake-G selects (D is then 0),
# or D where it is unset or KG_FAKE_IGNORE_CVD is set (a driver that does
# not take a UUID there: D counts among every GPU). Each check also logs
# "G D CUDA_VISIBLE_DEVICES KGATE_GPU_LOCK" to $KG_FAKE_ENVLOG ("-" unset). KG_FAKE_BAD_GPU makes that
# GPU fail (exit 5, and its health check); KG_FAKE_SLEEP slows every job;
# KG_FAKE_SHARED_GPU=G flags every result on GPU G shared-gpu; a candidate
# named *leaver* leaves a process in a session of its own (its pid in
# $KG_FAKE_LEFT) and hangs, and every other job appends to $KG_FAKE_LEFT.seen
# whether that process (its session) was alive when it started; a candidate
# named *forker* does the same with a chain that forks and exits as fast as
# it can (while $KG_FAKE_LEFT.run exists); with KG_FAKE_CONC=DIR each
# job appends "G N" to DIR.log, N the jobs running on its GPU G as it does.
# KG_FAKE_BREAK_DIR: a candidate named *breaker* breaks its GPU G (makes
# DIR/G) as it starts and exits 5 KG_FAKE_BREAK_AFTER (else KG_FAKE_SLEEP)
# seconds later; *wedge* breaks it and hangs; any other job on a broken GPU
# exits 5 after its KG_FAKE_SLEEP, and so does its health check.
# KG_FAKE_HEALTH_UNKNOWN=G: GPU G's health check finds its lock held (exit
# 1, its UUID printed). KG_FAKE_STOPLOG: a job asked to stop (SIGTERM) logs
# "term SPEC" there and exits 7 (each job logs SPEC to KG_FAKE_STOPLOG.armed
# once that is set up). KG_FAKE_FDLOG: each job logs "G N", N the
# pipes its supervisor holds past its standard descriptors. Candidates named *nojson*, *bigjson* and
# *badjson* exit 0 with no results document, one over 2 MiB, one not JSON;
# *junk* exits 4 with bytes of no UTF-8 and control characters in its
# results document and on its last line. With --events PATH, a line a kernel
# is appended there; *multi*, *sleepy* and *badevents* below.
log=${KG_FAKE_LOG:-/dev/null}
# the fake GPU that device $1 is under this process's CUDA_VISIBLE_DEVICES
gpu_of() {
    case ${CUDA_VISIBLE_DEVICES:-} in
    GPU-fake-*) [ -z "${KG_FAKE_IGNORE_CVD:-}" ] && { [ "$1" = 0 ] && echo "${CUDA_VISIBLE_DEVICES#GPU-fake-}" || echo none; return; } ;;
    esac
    echo "$1"
}
if [ "$1" = __health ]; then
    g=$(gpu_of "$2")
    [ "$g" = none ] && { echo "kgate: no CUDA GPU: device $2 is not visible" >&2; exit 5; }
    if [ "$g" = "${KG_FAKE_HEALTH_UNKNOWN:--1}" ]; then
        echo "kgate: GPU GPU-fake-$g is busy: its health not checked" >&2
        echo "GPU-fake-$g"
        exit 1
    fi
    [ "$g" = "${KG_FAKE_BAD_GPU:--1}" ] && { echo "kgate: GPU $2: unspecified launch failure" >&2; exit 5; }
    [ -n "${KG_FAKE_BREAK_DIR:-}" ] && [ -e "$KG_FAKE_BREAK_DIR/$g" ] && { echo "kgate: GPU $2: broken" >&2; exit 5; }
    echo "GPU-fake-$g"
    exit 0
fi
[ "$1" = check ] || { echo "fake_check: not a check" >&2; exit 3; }
spec=$2 dev= json= shape= events=
cmd="kgate $*" # the results document's command, as kgate check writes it
while [ $# -gt 0 ]; do
    case $1 in --device) dev=$2 ;; --json) json=$2 ;; --shape) shape=$2 ;; --events) events=$2 ;; esac
    shift
done
devarg=$dev
dev=$(gpu_of "$devarg")
[ "$dev" = none ] && { echo "kgate: --device $devarg: only 1 device(s)" >&2; exit 2; }
[ -n "${KG_FAKE_ENVLOG:-}" ] && echo "$dev $devarg ${CUDA_VISIBLE_DEVICES:--} ${KGATE_GPU_LOCK:--}" >>"$KG_FAKE_ENVLOG"
# the fork server kgate batch handed over (KGATE_ZYGOTE_HANDED=FD:PID): is it
# this process's child, behind a socket on FD?
if [ -n "${KG_FAKE_ZYLOG:-}" ]; then
    h=${KGATE_ZYGOTE_HANDED:-}
    if [ -z "$h" ]; then
        echo "$spec none" >>"$KG_FAKE_ZYLOG"
    else
        zfd=${h%%:*} zpid=${h#*:}
        zpp=$(awk '{ print $4 }' "/proc/$zpid/stat" 2>/dev/null)
        case $(readlink "/proc/$$/fd/$zfd" 2>/dev/null) in socket:*) sock=socket ;; *) sock=nosocket ;; esac
        echo "$spec handed $([ "$zpp" = $$ ] && echo child || echo "not-child:$zpp") $sock ${KGATE_ZYGOTE_PYTHON:+python}" >>"$KG_FAKE_ZYLOG"
    fi
fi
if [ -n "${KG_FAKE_FDLOG:-}" ]; then
    pipes=0
    for f in /proc/"$PPID"/fd/*; do
        case ${f##*/} in 0 | 1 | 2) continue ;; esac
        case $(readlink "$f") in pipe:*) pipes=$((pipes + 1)) ;; esac
    done
    echo "$dev $pipes" >>"$KG_FAKE_FDLOG"
fi
if [ -n "${KG_FAKE_STOPLOG:-}" ]; then
    trap 'echo "term $spec" >>"$KG_FAKE_STOPLOG"; exit 7' TERM
    echo "$spec" >>"$KG_FAKE_STOPLOG.armed" # the trap is set: a stop from here on is logged
fi
case $spec in *forker*)
    trap 'exit 7' TERM
    : >"$KG_FAKE_LEFT.run"
    # a session of its own, whose every process forks and exits at once
    # shellcheck disable=SC2016 # the inner shell expands them
    setsid sh -c 'g() { [ -e "$1" ] || exit 0; (g "$1") & exit 0; }; g "$0"' "$KG_FAKE_LEFT.run" &
    echo $! >"$KG_FAKE_LEFT"
    sleep 30
    exit 0 ;;
esac
case $spec in *leaver*)
    # asked to stop (SIGTERM, as kgate check is first), it says so in $KG_FAKE_LEFT.term
    trap 'echo term >>"$KG_FAKE_LEFT.term"; exit 7' TERM
    setsid sleep 60 &
    echo $! >"$KG_FAKE_LEFT"
    sleep 30
    exit 0 ;;
esac
if [ -n "${KG_FAKE_LEFT:-}" ] && [ -s "$KG_FAKE_LEFT" ]; then
    if pgrep -s "$(cat "$KG_FAKE_LEFT")" >/dev/null; then echo alive; else echo gone; fi >>"$KG_FAKE_LEFT.seen"
fi
case $spec in *breaker* | *wedge*) if [ -n "${KG_FAKE_BREAK_DIR:-}" ]; then
    : >"$KG_FAKE_BREAK_DIR/$dev"
    case $spec in *wedge*) sleep 60 ;; esac
    sleep "${KG_FAKE_BREAK_AFTER:-${KG_FAKE_SLEEP:-0}}"
    echo "kgate: no usable CUDA GPU: device $dev: unspecified launch failure" >&2
    exit 5
fi ;; esac
if [ -n "${KG_FAKE_CONC:-}" ]; then
    : >"$KG_FAKE_CONC/$dev.$$"
    echo "$dev $(ls "$KG_FAKE_CONC" | grep -c "^$dev\.")" >>"$KG_FAKE_CONC.log"
fi
[ -n "${KG_FAKE_SLEEP:-}" ] && sleep "$KG_FAKE_SLEEP"
[ -n "${KG_FAKE_CONC:-}" ] && rm -f "$KG_FAKE_CONC/$dev.$$"
if [ "$dev" = "${KG_FAKE_BAD_GPU:--1}" ] || { [ -n "${KG_FAKE_BREAK_DIR:-}" ] && [ -e "$KG_FAKE_BREAK_DIR/$dev" ]; }; then
    echo "kgate: no usable CUDA GPU: device $dev: unspecified launch failure" >&2
    exit 5
fi
echo "$spec $dev $shape" >>"$log"
case $spec in
*nojson*) exit 0 ;;
*junk*)
    # text of no UTF-8, C1 controls and escapes in its results and on its
    # last line (a worker's stderr, as kgate check said it before it cleaned it)
    printf '{"schema":"kgate.results/2","command":"kgate check c_junk\377.so","results":[{"kernel":"k","op":"relu","dtype":"fp16","shape":"4","verdict":"CRASH","flags":[],"reason":"worker killed: \377\376 \302\233[31m \\u001b[0m \\u0085 end","detail":"","summaries":{}}]}\n' >"$json"
    printf 'kgate: c_junk.so: loading it did not give a kernel table: \377\376 \302\205 \233[2J \033[0m end\n' >&2
    exit 4 ;;
*badjson*) echo '{"schema":"kgate.results/2","results":[' >"$json"; exit 0 ;;
*bigjson*) python3 -c 'import json,sys; json.dump({"schema":"kgate.results/2","pad":"x"*(3<<20),"results":[]},open(sys.argv[1],"w"))' "$json"; exit 0 ;;
esac
case $spec in *noted*)
    # what a check says without failing, among a table line and a candidate's
    # own text that are not its messages
    echo "kgate: --lib-cache: relu fp16: the library times not kept: a wide interval"
    printf 'kgate: a second note \302\233[31m in colour\n' >&2
    echo "kernel noted OK" ;;
esac
verdict=OK
case $spec in *slow*) verdict=SLOW ;; *wrong*) verdict=INCORRECT ;; *crash*) verdict=CRASH ;; esac
# a median time: the same on every GPU, except for a candidate named *skew*,
# 5% slower on GPU 1, and one named *noisy*, whose runs on GPU 0 take 100,
# 103 and 101.5 us in turn (3% apart, their median 101.5) and on GPU 1 101.5
# (counted from the log: one job a GPU at a time, as batch.sh runs them)
t=0.000100
case $spec in *skew*) [ "$dev" = 1 ] && t=0.000105 ;; esac
case $spec in *noisy*)
    if [ "$dev" = 1 ]; then t=0.0001015; else
        case $(($(grep -c "^$spec $dev " "$log") % 3)) in 1) t=0.000100 ;; 2) t=0.000103 ;; 0) t=0.0001015 ;; esac
    fi ;;
esac
# the library's times: timed in every job, or with --lib-cache and
# KG_FAKE_LIBDIR timed by the first job on each GPU and reused by the others
lib='"lib/job/wall":{"value":3.5,"unit":"s"}'
case " $cmd " in *" --lib-cache "*)
    if [ -n "${KG_FAKE_LIBDIR:-}" ]; then
        if [ -e "$KG_FAKE_LIBDIR/$dev" ]; then lib='"lib/cache/age":{"value":1,"unit":"s"}'; else : >"$KG_FAKE_LIBDIR/$dev"; fi
    fi ;;
esac
flags=
[ "$dev" = "${KG_FAKE_SHARED_GPU:--1}" ] && flags='"shared-gpu"'
# kernel K's result; the results document of the results given
result() {
    printf '{"kernel":"%s","source":"%s","op":"relu","dtype":"fp16","shape":"4","verdict":"%s","flags":[%s],"reason":"","detail":"","baseline":"","baseline_note":"","stop":"noise","summaries":{"time/gpu/median":{"value":%s,"unit":"s"},"list/wall":{"value":0.01,"unit":"s"},"job/wall":{"value":0.02,"unit":"s"},%s}}' \
        "$1" "$spec" "$verdict" "$flags" "$t" "$lib"
}
doc() { printf '{"schema":"kgate.results/2","command":"%s","device":{"name":"fake","uuid":"GPU-fake-%s"},"results":[%s]}\n' "$cmd" "$dev" "$1" >"$json"; }
# with --events, a line as each kernel is judged (kgate check --events);
# *badevents* first writes 7 lines that are not a kernel's result: not
# JSON, not an object, no result, a result without its verdict, one over
# 1 MiB, one with more after it, one with more after a NUL
if [ -n "$events" ]; then case $spec in *badevents*)
    { echo 'not json'; echo '[1]'; echo '{"event":"kernel"}'; echo '{"event":"kernel","result":{"kernel":"x"}}'
      head -c 1100000 /dev/zero | tr '\0' x; echo
      echo '{"event":"kernel","result":{"kernel":"x","verdict":"OK"}} more'
      printf '{"event":"kernel","result":{"kernel":"x","verdict":"OK"}}\000more\n'; } >>"$events" ;;
esac; fi
# *multi*: kernels k1, k2 and k3; after k1 it waits for $KG_FAKE_GATE (at
# most 30 s) where that is set, and a *sleepy* one sleeps 30 s; asked to stop
# (SIGTERM), it writes what it judged and exits 7, as kgate check does
kernels=k
case $spec in *multi*) kernels="k1 k2 k3" ;; esac
judged=
case $spec in *multi*) trap 'doc "$judged"; exit 7' TERM ;; esac
for k in $kernels; do
    r=$(result "$k")
    judged=${judged:+$judged,}$r
    [ -n "$events" ] && printf '{"event":"kernel","result":%s}\n' "$r" >>"$events"
    [ "$k" = k1 ] || continue
    if [ -n "${KG_FAKE_GATE:-}" ]; then
        for _ in $(seq 1 300); do [ -e "$KG_FAKE_GATE" ] && break; sleep 0.1; done
    fi
    case $spec in *sleepy*) sleep 30 ;; esac
done
doc "$judged"
[ $verdict = OK ] && exit 0
[ $verdict = SLOW ] && exit 1
exit 2

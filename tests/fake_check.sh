#!/bin/sh
# Stands in for `kgate` in tests/batch.sh (KG_BATCH_RUNNER): `check SPEC ...
# --device D --json F` writes a small results document and logs "SPEC G SHAPE" to
# $KG_FAKE_LOG; `__health D` answers with the fake GPU's UUID, GPU-fake-G.
# G is the GPU that CUDA_VISIBLE_DEVICES=GPU-fake-G selects (D is then 0),
# or D where it is unset or KG_FAKE_IGNORE_CVD is set (a driver that does
# not take a UUID there: D counts among every GPU). Each check also logs
# "G D CUDA_VISIBLE_DEVICES" to $KG_FAKE_ENVLOG. KG_FAKE_BAD_GPU makes that
# GPU fail (exit 5, and its health check); KG_FAKE_SLEEP slows every job;
# KG_FAKE_SHARED_GPU=G flags every result on GPU G shared-gpu; a candidate
# named *leaver* leaves a process in a session of its own (its pid in
# $KG_FAKE_LEFT) and hangs, and every other job appends to $KG_FAKE_LEFT.seen
# whether that process was alive when it started; with KG_FAKE_CONC=DIR each
# job appends "G N" to DIR.log, N the jobs running on its GPU G as it does.
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
    [ "$g" = "${KG_FAKE_BAD_GPU:--1}" ] && { echo "kgate: GPU $2: unspecified launch failure" >&2; exit 5; }
    [ -n "${KG_FAKE_BREAK_DIR:-}" ] && [ -e "$KG_FAKE_BREAK_DIR/$g" ] && { echo "kgate: GPU $2: broken" >&2; exit 5; }
    echo "GPU-fake-$g"
    exit 0
fi
[ "$1" = check ] || { echo "fake_check: not a check" >&2; exit 3; }
spec=$2 dev= json= shape=
cmd="kgate $*" # the results document's command, as kgate check writes it
while [ $# -gt 0 ]; do
    case $1 in --device) dev=$2 ;; --json) json=$2 ;; --shape) shape=$2 ;; esac
    shift
done
devarg=$dev
dev=$(gpu_of "$devarg")
[ "$dev" = none ] && { echo "kgate: --device $devarg: only 1 device(s)" >&2; exit 2; }
[ -n "${KG_FAKE_ENVLOG:-}" ] && echo "$dev $devarg ${CUDA_VISIBLE_DEVICES:--}" >>"$KG_FAKE_ENVLOG"
case $spec in *leaver*)
    # asked to stop (SIGTERM, as kgate check is first), it says so in $KG_FAKE_LEFT.term
    trap 'echo term >>"$KG_FAKE_LEFT.term"; exit 7' TERM
    setsid sleep 60 &
    echo $! >"$KG_FAKE_LEFT"
    sleep 30
    exit 0 ;;
esac
if [ -n "${KG_FAKE_LEFT:-}" ] && [ -s "$KG_FAKE_LEFT" ]; then
    if kill -0 "$(cat "$KG_FAKE_LEFT")" 2>/dev/null; then echo alive; else echo gone; fi >>"$KG_FAKE_LEFT.seen"
fi
if [ -n "${KG_FAKE_CONC:-}" ]; then
    : >"$KG_FAKE_CONC/$dev.$$"
    echo "$dev $(ls "$KG_FAKE_CONC" | grep -c "^$dev\.")" >>"$KG_FAKE_CONC.log"
fi
[ -n "${KG_FAKE_SLEEP:-}" ] && sleep "$KG_FAKE_SLEEP"
[ -n "${KG_FAKE_CONC:-}" ] && rm -f "$KG_FAKE_CONC/$dev.$$"
# a candidate named *breaker* breaks every GPU it runs on (KG_FAKE_BREAK_DIR)
case $spec in *breaker*) [ -n "${KG_FAKE_BREAK_DIR:-}" ] && : >"$KG_FAKE_BREAK_DIR/$dev" && {
    echo "kgate: no usable CUDA GPU: device $dev: unspecified launch failure" >&2
    exit 5
}; esac
if [ "$dev" = "${KG_FAKE_BAD_GPU:--1}" ]; then
    echo "kgate: no usable CUDA GPU: device $dev: unspecified launch failure" >&2
    exit 5
fi
echo "$spec $dev $shape" >>"$log"
verdict=OK
case $spec in *slow*) verdict=SLOW ;; *wrong*) verdict=INCORRECT ;; *crash*) verdict=CRASH ;; esac
# a median time: the same on every GPU, except for a candidate named *skew*,
# 5% slower on GPU 1
t=0.000100
case $spec in *skew*) [ "$dev" = 1 ] && t=0.000105 ;; esac
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
printf '{"schema":"kgate.results/2","command":"%s","device":{"name":"fake","uuid":"GPU-fake-%s"},"results":[{"kernel":"k","source":"%s","op":"relu","dtype":"fp16","shape":"4","verdict":"%s","flags":[%s],"reason":"","detail":"","baseline":"","baseline_note":"","stop":"noise","summaries":{"time/gpu/median":{"value":%s,"unit":"s"},%s}}]}\n' \
    "$cmd" "$dev" "$spec" "$verdict" "$flags" "$t" "$lib" >"$json"
[ $verdict = OK ] && exit 0
[ $verdict = SLOW ] && exit 1
exit 2

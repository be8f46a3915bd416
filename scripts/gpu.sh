#!/bin/sh
# The one GPU script: on the H200 machine, with build/ carried from the
# development machine (the same nvcc 13.0), it tests, benchmarks and
# cross-checks kgate and writes every log and JSON under $OUT.
#   scripts/gpu.sh [STEP...]   steps: info peaks refs variants faults run verdicts test
#                              ncu repeat wall flush smoke (default: the first eight)
set -u
DEST=${OUT:-$PWD/gpu-out}
OUT=$(mktemp -d)  # staged here; packed into $DEST after every step
B=${BUILD:-build}
mkdir -p "$DEST"
export XDG_CACHE_HOME=$OUT/cache
# CTest files name the source tree by the absolute path it was configured in.
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$B/CMakeCache.txt")
if [ -n "$src" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; fi
steps=${*:-info peaks refs variants faults run verdicts}
log() { echo "== $* ($(date -u +%H:%M:%S))"; }
pack() { tar czf "$DEST/kgate-gpu-out.tgz.tmp" -C "$OUT" . && mv "$DEST/kgate-gpu-out.tgz.tmp" "$DEST/kgate-gpu-out.tgz"; }
for step in $steps; do
    pack
    case $step in
    info)
        log info
        { nvidia-smi; nvidia-smi -q -d CLOCK | head -40; ldconfig -p | grep -E 'cudnn|cublasLt|cjson'; } \
            >"$OUT/info.txt" 2>&1
        "$B/kgate" devices 2>&1 | tee "$OUT/devices.txt"
        ;;
    peaks)
        log peaks
        timeout 120 "$B/kgate" peaks --json "$OUT/peaks.json" 2>&1 | tee "$OUT/peaks.txt"
        ;;
    test)
        log test
        (cd "$B" && timeout 500 ctest --output-on-failure -E results_schema) >"$OUT/ctest.log" 2>&1
        tail -25 "$OUT/ctest.log"
        ;;
    refs|variants|faults)
        log "$step"
        t=gpu_$step; [ "$step" = refs ] && t=gpu_references
        (cd "$B" && timeout 500 ctest --output-on-failure -R "^$t\$") >"$OUT/ctest-$step.log" 2>&1
        grep -E "FAIL|passed|Passed|Failed" "$OUT/ctest-$step.log" | tail -30
        ;;
    verdicts)
        log verdicts
        (cd "$B" && KG_RUN_JSON="$OUT/run.json" timeout 300 ctest --output-on-failure -R gpu_verdicts) \
            >"$OUT/ctest-verdicts.log" 2>&1
        grep -E "FAIL|passed" "$OUT/ctest-verdicts.log" | tail -40
        ;;
    run)
        log run
        t0=$(date +%s)
        timeout 500 "$B/kgate" run --json "$OUT/run.json" >"$OUT/run.txt" 2>"$OUT/run.err"
        echo "kgate run exit: $? after $(( $(date +%s) - t0 )) s wall"; cat "$OUT/run.txt"; tail -5 "$OUT/run.err"
        ;;
    ncu)
        log ncu
        timeout 500 scripts/ncu_crosscheck.sh "$B" "$OUT" >"$OUT/ncu.log" 2>&1; echo "ncu: $?"
        tail -20 "$OUT/ncu.log"
        ;;
    repeat)
        log repeat
        for i in 1 2; do
            timeout 200 "$B/kgate" check "$B/libkgate_bundled.so" --op layer_norm \
                --json "$OUT/repeat$i.json" >"$OUT/repeat$i.txt" 2>&1
        done
        cat "$OUT/repeat1.txt" "$OUT/repeat2.txt" | grep -E '^layer_norm'
        ;;
    wall)
        log wall
        for k in layer_norm_v2_bf16 matmul_v2_fp16; do
            w=$(python3 -c 'import subprocess, sys, time; t = time.time(); subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); print("%.2f" % (time.time() - t))' \
                "$B/kgate" check "$B/libkgate_bundled.so:$k" --json "$OUT/wall-$k.json")
            echo "$k: one kgate check (large, with baseline) took $w s wall"
        done | tee "$OUT/wall.txt"
        ;;
    flush)
        log flush
        for f in read memset; do
            "$B/kgate" check "$B/libkgate_bundled.so" --op layer_norm --flush $f \
                --json "$OUT/flush-$f.json" 2>&1 | grep -E '^layer_norm'
        done
        ;;
    smoke)
        log smoke
        timeout 300 "$B/kgate" check "$B/libkgate_bundled.so" --shape small --max-time 1 \
            --json "$OUT/smoke.json" 2>&1 | tee "$OUT/smoke.txt"
        ;;
    esac
done
pack

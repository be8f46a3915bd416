#!/bin/sh
# The one GPU script: on the H200 machine, with the packed build carried from
# the development machine (scripts/pack.sh: same nvcc 13.0), it runs the GPU
# tests, benchmarks and cross-checks and writes every log and JSON under $OUT.
#   scripts/gpu.sh [STEP...]
# steps: info peaks refs variants faults adversarial sandbox run verdicts ncu
#        ncu-bias memcheck diag-smoke diagnosis counters stalls diag-wall repeat wall smoke
#        sandbox-bisect sandbox-probe python tilelang tilelang-jit rtc arch baselines suite2 suite2-verify suite2-time v3 startup ablation tune tune-matmul kb-compare kb-group kb-stream serve-bench viperbench tf32 batch-bench gpu-batch lib-cache others ab watch allowance glue roofs stop (default: info peaks refs variants faults
#        adversarial sandbox run verdicts)
# The GPU tests are the same scripts CTest runs under the label gpu; they are
# called directly here because the packed build carries no CMake tree.
set -u
DEST=${OUT:-$PWD/gpu-out}
OUT=$(mktemp -d)  # staged here; packed into $DEST after every step
B=${BUILD:-.devbuild}
mkdir -p "$DEST" "$B/tests"
export XDG_CACHE_HOME=$OUT/cache
steps=${*:-info peaks refs variants faults adversarial sandbox run verdicts}
echo "== $("$B/kgate" version) from $B" # which build this call runs
log() { echo "== $* ($(date -u +%H:%M:%S))"; }
# the batch bench's folder (kept on the machine between calls), copied in at every pack
BATCH_DIR=${BATCH_OUT:-/tmp/kgate-batch}
pack() {
    if [ -d "$BATCH_DIR" ]; then rm -rf "$OUT/batch" && cp -r "$BATCH_DIR" "$OUT/batch"; fi
    tar czf "$DEST/kgate-gpu-out.tgz.tmp" -C "$OUT" . && mv "$DEST/kgate-gpu-out.tgz.tmp" "$DEST/kgate-gpu-out.tgz"
}
# stopped from outside (a `timeout` around the call): what the steps wrote so far
# comes back (the step running is left to the machine's end)
trap 'pack; exit 143' TERM
trap 'pack; exit 130' INT
# seconds of wall time of a command, process start to exit, its output dropped
walltime() { python3 -c 'import subprocess, sys, time; t = time.time(); subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); print("%.2f" % (time.time() - t))' "$@"; }
# a GPU test script: its log under $OUT, its summary line on stdout
gtest() { # gtest NAME COMMAND...
    n=$1
    shift
    t0=$(date +%s)
    timeout 550 "$@" >"$OUT/test-$n.log" 2>&1
    rc=$?
    echo "$n: exit $rc after $(($(date +%s) - t0)) s: $(grep -E 'passed, .* failed' "$OUT/test-$n.log" | tail -1)"
    grep -E '^FAIL' "$OUT/test-$n.log" | head -30
}
# issue 6's operators: every variant correct at every preset (suite2_run verify), then
# timed against their library paths at the presets the issue's targets name (suite2_run time)
suite2_run() { # suite2_run verify|time
    log "suite2-$1"
    if [ "$1" = verify ]; then
        specs="batched_matmul:small,medium,large,gemv linear_activation:small,medium,large
            conv2d:small,medium,large,f1x1,f5x5,f7x7,dw,s2 conv2d_nhwc:small,medium,large,f1x1,f5x5,f7x7,dw,s2
            attention:small,medium,large,seq512,seq4096,d64,seq512-d64,seq4096-d64" extra=--verify-only
    else
        specs=${SUITE2_TIME:-batched_matmul:large,gemv linear_activation:large conv2d:large,f1x1,dw,s2 conv2d_nhwc:large attention:large,d64}
        extra=
    fi
    for spec in $specs; do
        op=${spec%%:*} sizes=${spec#*:}
        t0=$(date +%s)
        timeout "${SUITE2_CAP:-280}" "$B/kgate" check "$B/libkgate_bundled.so" --op "$op" --sizes "$sizes" $extra \
            --time-budget $((${SUITE2_CAP:-280} - 40)) --json "$OUT/$1-$op.json" >"$OUT/$1-$op.txt" 2>&1
        echo "$op $1: exit $? after $(($(date +%s) - t0)) s"
        if [ "$1" = verify ]; then
            grep -E 'INCORRECT|CRASH|TIMEOUT|incomplete' "$OUT/$1-$op.txt" | head -8
        else
            grep -E "^${op}_v" "$OUT/$1-$op.txt" | head -24
        fi
    done
}
# one step; run in the background and waited for, so that a TERM to this
# script is handled at once (a trap waits for a foreground command)
run_step() {
    step=$1
    case $step in
    info)
        log info
        { nvidia-smi; nvidia-smi -q -d CLOCK | head -40; ldconfig -p | grep -E 'cudnn|cublasLt|cjson|seccomp'; } \
            >"$OUT/info.txt" 2>&1
        "$B/kgate" devices 2>&1 | tee "$OUT/devices.txt"
        ;;
    peaks)
        log peaks
        timeout 150 "$B/kgate" peaks --json "$OUT/peaks.json" 2>&1 | tee "$OUT/peaks.txt"
        ;;
    refs)
        log refs
        gtest references "$B/tests/gpu_references"
        ;;
    # every preset of every operator takes longer than one call: the classic three here,
    # issue 6's presets in suite2 (KG_VARIANT_SIZES=all for everything)
    variants) log variants; KG_VARIANT_SIZES=${KG_VARIANT_SIZES:-small,medium,large} gtest variants tests/gpu/gpu_variants.sh "$B/kgate" "$B" ;;
    faults) log faults; gtest faults tests/gpu/gpu_faults.sh "$B/kgate" "$B" ;;
    gpu-batch) log gpu-batch; gtest gpu-batch tests/gpu/gpu_batch.sh "$B/kgate" "$B" ;;
    lib-cache) log lib-cache; gtest lib-cache tests/gpu/gpu_lib_cache.sh "$B/kgate" "$B" ;;
    serve) log serve; gtest serve tests/gpu/gpu_serve.sh "$B/kgate" "$B" ;;
    others) log others; gtest others tests/gpu/gpu_others.sh "$B/kgate" "$B" ;;
    ab)
        # two packed builds on the same 24 jobs (scripts/ab_bench.sh): AB_A (default
        # .devbuild-a, an older build carried beside) against this one; AB_A=.devbuild
        # with AB_BATCH_B="--jobs-per-gpu 2" measures that option alone; AB_JOBS=python
        # judges Triton kernels through Python workers instead of the C jobs
        log ab
        scripts/ab_bench.sh "$OUT/ab" "${AB_A:-.devbuild-a}" "$B"
        ;;
    glue)
        # the Python worker host's glue a call (time/host/glue: the C-measured launch time
        # less the callable's own; src/gpu/provider.h believes 25 us of it) for the
        # Triton-JIT kernels at the small and large presets, GLUE_ROUNDS times
        log glue
        mkdir -p "$OUT/glue"
        for r in $(seq "${GLUE_ROUNDS:-2}"); do
            for sh in small large; do
                timeout 150 "$B/kgate" check tests/python/triton_jit.py --shape $sh \
                    --json "$OUT/glue/$sh-$r.json" >"$OUT/glue/$sh-$r.txt" 2>&1
                echo "glue $sh round $r: exit $?"
            done
        done
        python3 -c 'import glob, json, os, sys
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    for r in json.load(open(f))["results"]:
        s = r["summaries"]
        if "time/host/glue" in s:
            print("  %s %s: glue %.1f us, over 25 us %.2f, host %.1f us, gpu %.1f us, %s" % (os.path.basename(f), r["kernel"],
                  s["time/host/glue"]["value"] * 1e6, s["time/host/glue_over"]["value"], s["time/host/median"]["value"] * 1e6,
                  s["time/gpu/median"]["value"] * 1e6, r["verdict"]))' "$OUT/glue"
        ;;
    allowance)
        # the launch path's host allowance (judge/verdict.h) in the gate of a Python
        # candidate's check and of a C one's, with each result's GPU, host and judged times
        log allowance
        mkdir -p "$OUT/allowance"
        for c in "tests/python/behaviours.py:relu_host --shape large" \
            "tests/python/triton_jit.py:jit_rms_norm_fp16 --shape small" \
            "tests/python/triton_jit.py:jit_matmul_fp16 --shape small" \
            "$B/libkgate_bundled.so:softmax_v2_fp16 --shape small"; do
            n=$(echo "${c%% *}" | sed 's/.*://')
            timeout 120 "$B/kgate" check $c --timeout 60 --json "$OUT/allowance/$n.json" >"$OUT/allowance/$n.txt" 2>&1
            echo "$n: exit $?"
            python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
for r in d["results"]:
    s = {k: v["value"] * 1e6 for k, v in r["summaries"].items() if k in ("time/gpu/median", "time/host/median", "time/judged")}
    print("  %s: host_allowance %.0f us, %s %s, gpu %.1f us, host %.1f us, judged %.1f us" % (r["kernel"], d["gate"]["host_allowance"] * 1e6,
          r["verdict"], ",".join(r["flags"]), s.get("time/gpu/median", 0), s.get("time/host/median", 0), s.get("time/judged", 0)))' "$OUT/allowance/$n.json"
        done
        ;;
    watch)
        # what NVML listings of the GPU's processes (kgate's watch of other
        # processes) cost the timing: scripts/watch_bench.sh
        log watch
        scripts/watch_bench.sh "$OUT/watch" "$B"
        ;;
    adversarial) log adversarial; gtest adversarial tests/adversarial/run.sh "$B/kgate" "$B" ;;
    sandbox)
        log sandbox
        gtest sandbox tests/sandbox.sh "$B/kgate" "$B/tests/plugins"
        gtest sandbox-python tests/sandbox.sh "$B/kgate" --python python3
        timeout 200 "$B/kgate" check "$B/libkgate_bundled.so" --op layer_norm --sandbox \
            --json "$OUT/sandbox-layer_norm.json" >"$OUT/sandbox-layer_norm.txt" 2>&1
        echo "layer_norm under --sandbox: exit $?"; grep -E '^layer_norm' "$OUT/sandbox-layer_norm.txt" | head -4
        ;;
    stop)
        log stop
        gtest stop tests/stop.sh "$B/kgate" "$B/libkgate_bundled.so"
        ;;
    sandbox-probe)
        # what the driver needs of --sandbox: the bundled layer_norm kernels and a
        # Triton JIT candidate run under strace with the socket and /dev rules off
        # (KG_SANDBOX_SKIP=sockets,devices): which sockets, connects and opens for
        # writing under /dev the workers make, before the file rules (CUDA's
        # initialization: allowed) and after (refused with the rules on); then
        # both, and --memcheck, with every rule on. No strace there: carry its
        # packages in $B/strace (here: cd .devbuild/strace && apt-get download
        # strace libunwind8 liblzma5), unpacked with dpkg -x
        log sandbox-probe
        P=$OUT/sandbox-probe
        mkdir -p "$P"
        st=$(command -v strace || true)
        if [ -z "$st" ] && ls "$B"/strace/*.deb >/dev/null 2>&1; then
            x=$(mktemp -d)
            for f in "$B"/strace/*.deb; do dpkg -x "$f" "$x"; done
            # its libraries for strace alone, not for what it runs
            st="/lib64/ld-linux-x86-64.so.2 --library-path $x/usr/lib/x86_64-linux-gnu:$x/lib/x86_64-linux-gnu $x/usr/bin/strace"
        fi
        [ -n "$st" ] || echo "no strace (see above): the rules-off log is not taken"
        for what in bundled triton; do
            if [ $what = bundled ]; then
                set -- "$B/libkgate_bundled.so" --op layer_norm --shape small
            else
                set -- tests/python/triton_jit.py:jit_layer_norm_bf16 --shape small
            fi
            if [ -n "$st" ]; then
                # (a worker that crashes under strace hangs, as pid 1 of its namespace: the timeout ends it)
                KG_SANDBOX_SKIP=sockets,devices timeout 240 $st -f -qq -s 200 -o "$P/strace-$what.txt" \
                    -e trace=%process,socket,socketpair,connect,open,openat,openat2,creat,landlock_restrict_self \
                    "$B/kgate" check "$@" --verify-only --sandbox --timeout 100 >"$P/off-$what.txt" 2>&1
                echo "$what, socket and /dev rules off, under strace: exit $?"
                python3 - "$P/strace-$what.txt" <<'PY' | tee "$P/summary-$what.txt"
import re, sys
lines, pending, kids, worker, after, seen = [], {}, {}, {}, set(), {}
for raw in open(sys.argv[1], errors="replace"):
    m = re.match(r"(\d+)\s+(.*)", raw.rstrip("\n"))
    if not m:
        continue
    pid, rest = int(m[1]), m[2]
    if rest.endswith("<unfinished ...>"):
        pending[pid] = rest[: -len("<unfinished ...>")]
        continue
    r = re.match(r"<\.\.\. \w+ resumed>(.*)", rest)
    if r:
        rest = pending.pop(pid, "") + r[1]
    c = re.match(r"(\w+)\((.*)\)\s+=\s+(.*)", rest)
    if not c:
        continue
    call, args, ret = c.groups()
    if call in ("clone", "clone3", "fork", "vfork") and ret.split()[0].isdigit():
        kid = int(ret.split()[0])
        if pid in worker:  # the worker's own children (ptxas, compile pools) count as the worker
            worker[kid] = worker[pid]
            if pid in after:
                after.add(kid)
        continue
    if call == "execve" and ret.startswith("0") and ("__worker" in args or "kgate._worker" in args):
        worker[pid] = pid
        continue
    if pid not in worker:
        continue
    if call == "landlock_restrict_self":
        after.add(pid)
        continue
    what = None
    if call in ("socket", "socketpair"):
        what = call + "(" + args.split(",")[0] + ")"
    elif call == "connect":
        p = re.search(r'sun_path=(@?"[^"]*")', args)
        what = "connect(" + (p[1] if p else args.split(",", 1)[1].strip()[:60]) + ")"
    elif call in ("open", "openat", "openat2", "creat"):
        p = re.search(r'"(/dev/[^"]*)"', args)
        if p and (call == "creat" or re.search(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC", args)):
            what = "open for writing " + re.sub(r"\d+$", "N", p[1])
    if what:
        key = ("after the file rules" if pid in after else "before the file rules (CUDA's initialization)", what,
               "fails" if ret.startswith("-1") else "succeeds")
        seen[key] = seen.get(key, 0) + 1
for (when, what, ok), n in sorted(seen.items()):
    print(f"  {when}: {what} {ok} ({n}x)")
if not seen:
    print("  no socket, connect or open for writing under /dev in any worker")
PY
            fi
            timeout 240 "$B/kgate" check "$@" --sandbox --max-time 1 --json "$P/on-$what.json" >"$P/on-$what.txt" 2>&1
            rc=$?
            echo "$what, every rule on: exit $rc"
            grep -E '^(layer_norm|jit_)|kgate:|sandbox' "$P/on-$what.txt" | head -8
            if [ $rc -gt 1 ]; then # which part the driver cannot live with
                for skip in mountns pidns sockets devices; do
                    KG_SANDBOX_SKIP=$skip timeout 120 "$B/kgate" check "$@" --verify-only --sandbox \
                        >"$P/on-$what-no-$skip.txt" 2>&1
                    echo "$what without $skip: exit $? $(grep kgate: "$P/on-$what-no-$skip.txt" | tail -1 | cut -c1-160)"
                done
            fi
        done
        timeout 240 "$B/kgate" check "$B/libkgate_bundled.so:layer_norm_v2_bf16" --shape small --memcheck --sandbox \
            --max-time 1 >"$P/on-memcheck.txt" 2>&1
        echo "--memcheck --sandbox: exit $?"
        grep -iE 'memcheck|racecheck|^layer_norm|kgate:' "$P/on-memcheck.txt" | head -4
        ;;
    sandbox-bisect)
        log sandbox-bisect
        for skip in none landlock seccomp nnp fds rlimits landlock,seccomp; do
            KG_SANDBOX_SKIP=$skip timeout 60 "$B/kgate" check "$B/libkgate_bundled.so:softmax_v2_fp16" \
                --shape small --verify-only --sandbox >"$OUT/bisect-$skip.txt" 2>&1
            echo "sandbox without $skip: exit $? $(tail -1 "$OUT/bisect-$skip.txt" | cut -c1-150)"
        done
        ;;
    run)
        log run
        t0=$(date +%s)
        timeout 580 "$B/kgate" run ${KG_RUN_ARGS:-} --json "$OUT/run.json" >"$OUT/run.txt" 2>"$OUT/run.err"
        echo "kgate run exit: $? after $(($(date +%s) - t0)) s wall"
        cat "$OUT/run.txt"; tail -5 "$OUT/run.err"
        ;;
    verdicts)
        log verdicts
        KG_RUN_JSON="$OUT/run.json" gtest verdicts tests/gpu/gpu_verdicts.sh "$B/kgate" "$B"
        ;;
    ncu)
        log ncu
        timeout 500 scripts/ncu_crosscheck.sh "$B" "$OUT" >"$OUT/ncu.log" 2>&1; echo "ncu: $?"
        tail -20 "$OUT/ncu.log"
        ;;
    ncu-bias)
        # where kgate and ncu part for short kernels: an almost empty kernel
        # (relu of 64 elements) and two 5-20 us ones, with ncu flushing its
        # caches (all) and with ncu leaving the caches to kgate's flush (none)
        log ncu-bias
        cat >"$OUT/ncu-bias-list.txt" <<'EOF2'
relu_v2_fp16 relu fp16 8x8 8,8 ^relu_v2_vec$
relu_v2_fp16 relu fp16 small 1024,1024 ^relu_v2_vec$
layer_norm_v2_bf16 layer_norm bf16 small 1024,1024 ^ln_v2_kernel$
softmax_v2_fp16 softmax fp16 small 1024,4096 ^sm_v2_kernel$
EOF2
        for c in all none; do
            NCU_CACHE=$c NCU_TAG=bias-$c NCU_LIST="$OUT/ncu-bias-list.txt" timeout 280 \
                scripts/ncu_crosscheck.sh "$B" "$OUT" >"$OUT/ncu-bias-$c.log" 2>&1
            echo "ncu-bias ($c): $?"; tail -6 "$OUT/ncu-bias-$c.log"
        done
        ;;
    memcheck)
        log memcheck
        for k in "$B/libkgate_bundled.so:softmax_v2_fp16" "$B/libkgate_bundled.so:layer_norm_v2_bf16" \
            "$B/libkgate_bundled.so:layer_norm_v1_bf16"; do
            n=$(basename "${k#*:}")
            timeout 250 "$B/kgate" check "$k" --shape small --memcheck --max-time 1 \
                --json "$OUT/memcheck-$n.json" >"$OUT/memcheck-$n.txt" 2>&1
            echo "--memcheck $n: exit $?"; grep -iE "memcheck|racecheck|^${n%%_v2*}|INCORRECT|OK|SLOW" "$OUT/memcheck-$n.txt" | head -6
        done
        ;;
    diag-smoke)
        # a few kernels under --diagnose (DIAG_KERNELS: others), one line of causes each
        log diag-smoke
        for k in ${DIAG_KERNELS:-layer_norm_v1_bf16 layer_norm_v2_bf16 logsumexp_v1_fp32 leaky_relu_v1_fp16 \
            matmul_v1_fp16 matmul_v2_fp16 matrix_transpose_v1_fp16 relu_v1_fp16}; do
            t0=$(date +%s.%N)
            timeout 200 "$B/kgate" check "$B/libkgate_bundled.so:$k" --shape medium --diagnose --max-time 1 \
                --json "$OUT/diag-$k.json" >"$OUT/diag-$k.txt" 2>&1
            echo "$k: exit $? after $(awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $t0}") s"
            grep -E "^  (why|also|diagnosis)" "$OUT/diag-$k.txt" | cut -c1-220
        done
        ;;
    diagnosis)
        log diagnosis
        KG_DIAG_JSON=${KG_DIAG_JSON:-} gtest diagnosis tests/gpu/gpu_diagnosis.sh "$B/kgate" "$B"
        cp "$B/tests/diag-matrix.json" "$B/tests/diag-matrix.txt" "$B/tests/run-diag.json" "$B/tests/run-diag.txt" \
            "$B/tests/explain.txt" "$B/tests/diag-unpatched.json" "$B/tests/diag-unpatched.txt" "$OUT/" 2>/dev/null
        cat "$B/tests/diag-matrix.txt" | head -40
        ;;
    stalls)
        log stalls
        timeout 300 scripts/ncu_stalls.sh "$B" "$OUT" >"$OUT/stalls.log" 2>&1; echo "stalls: $?"
        tail -20 "$OUT/stalls.log"
        ;;
    counters)
        log counters
        timeout 500 scripts/ncu_counters.sh "$B" "$OUT" >"$OUT/counters.log" 2>&1; echo "counters: $?"
        tail -30 "$OUT/counters.log"
        ;;
    diag-wall)
        # what --diagnose adds to one check's wall time (process start to exit)
        log diag-wall
        for k in layer_norm_v2_bf16 layer_norm_v1_bf16 matmul_v2_fp16; do
            for d in "" --diagnose; do
                w=$(walltime \
                    "$B/kgate" check "$B/libkgate_bundled.so:$k" --max-time 1 $d --json "$OUT/dwall-$k$d.json")
                echo "$k ${d:-(plain)}: $w s wall"
            done
            # where the diagnosis's time went (the worker's summaries)
            python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
s = {n: v["value"] for n, v in r.get("summaries", {}).items()}
print("  " + ", ".join("%s %.3f s" % (n.split("/")[-1], s[n]) for n in sorted(s) if n.startswith(("time/phase/diagnose", "time/diagnose/"))))' \
                "$OUT/dwall-$k--diagnose.json" 2>&1
        done | tee "$OUT/diag-wall.txt"
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
            w=$(walltime \
                "$B/kgate" check "$B/libkgate_bundled.so:$k" --json "$OUT/wall-$k.json")
            echo "$k: one kgate check (large, with baseline) took $w s wall"
        done | tee "$OUT/wall.txt"
        ;;
    smoke)
        log smoke
        timeout 300 "$B/kgate" check "$B/libkgate_bundled.so" --shape small --max-time 1 \
            --json "$OUT/smoke.json" 2>&1 | tee "$OUT/smoke.txt"
        ;;
    python)
        # the Python route: its GPU test, and the times of the Triton kernels
        # through Triton's JIT (Python) against the same kernels through the .so
        log python
        gtest python tests/gpu/gpu_python.sh "$B/kgate" "$B"
        mkdir -p "$OUT/python"
        cp "$B"/tests/python/*.json "$B"/tests/python/*.txt "$OUT/python/" 2>/dev/null
        python3 scripts/python_route.py "$OUT/python" >"$OUT/python-route.json" && cat "$OUT/python-route.json"
        ;;
    ablation)
        # which of a two-defect naive variant's causes costs more: its v1, each single-fix
        # ablation (kernels/ablation/single_fix.cu) and the fast variant, at the large preset
        log ablation
        for spec in max_reduction:max_reduction_v1_fp16,max_reduction_v2_fp16 \
            index_select:index_select_v1_fp16,index_select_v2_fp16 attention:attention_v1_fp16,attention_v3_fp16; do
            op=${spec%%:*}
            for k in $(echo "${spec#*:}" | tr , ' '); do
                timeout 120 "$B/kgate" check "$B/libkgate_bundled.so:$k" --shape large --no-extra-shapes \
                    --json "$OUT/ablation-$k.json" >"$OUT/ablation-$k.txt" 2>&1
                echo "$k: exit $?"; grep -E "^$k " "$OUT/ablation-$k.txt"
            done
            # no edge rows: the ablations are for timing, and a NaN row's handling is not what they change
            timeout 200 "$B/kgate" check "$B/libkgate_ablation.so" --op "$op" --shape large --no-extra-shapes --no-edge \
                --json "$OUT/ablation-$op-fixes.json" >"$OUT/ablation-$op-fixes.txt" 2>&1
            echo "$op single fixes: exit $?"; grep -E "^${op}_fix" "$OUT/ablation-$op-fixes.txt"
        done
        ;;
    tune) log tune; gtest tune tests/gpu/gpu_tune.sh "$B/kgate" "$B" ;;
    rtc) log rtc; gtest rtc tests/gpu/gpu_rtc.sh "$B/kgate" "$B" ;;
    arch) log arch; gtest arch tests/gpu/gpu_arch.sh "$B/kgate" "$B" ;;
    baselines) log baselines; gtest baselines tests/gpu/gpu_baselines.sh "$B/kgate" "$B" ;;
    suite2) suite2_run verify; suite2_run time ;;
    suite2-verify) suite2_run verify ;;
    suite2-time) suite2_run time ;;
    v3)
        # the Hopper v3 kernels (conv2d, attention, matmul): each alone, short timeouts (a wrong
        # TMA byte count or barrier parity hangs rather than fails), simplest case first
        log v3
        for spec in ${V3_SPECS:-matmul:small matmul:medium matmul:large matmul:xl conv2d_nhwc:large conv2d_nhwc:medium \
            conv2d_nhwc:s2 conv2d:large conv2d:f1x1 attention:d64 attention:large attention:small attention:seq4096}; do
            op=${spec%%:*} size=${spec#*:}
            for dt in fp16 bf16; do
                timeout 90 "$B/kgate" check "$B/libkgate_bundled.so:${op}_v3_$dt" --shape "$size" --timeout 30 \
                    --json "$OUT/v3-$op-$size-$dt.json" >"$OUT/v3-$op-$size-$dt.txt" 2>&1
                echo "${op}_v3_$dt $size: exit $? $(grep -E "^${op}_v3" "$OUT/v3-$op-$size-$dt.txt" | head -1 | cut -c60-140)"
            done
        done
        ;;
    startup)
        # what a Python worker pays before it can work: the interpreter, torch, the driver
        log startup
        for i in 1 2; do
            echo "python3 -c pass: $(walltime python3 -c pass) s; import torch: $(walltime python3 -c 'import torch') s;" \
                "torch + CUDA context: $(walltime python3 -c 'import torch; torch.zeros(1, device="cuda")') s;" \
                "kgate devices: $(walltime "$B/kgate" devices) s"
        done | tee "$OUT/startup.txt"
        ;;
    tilelang)
        # the TileLang pairs at the large shapes: each naive kernel SLOW, each fixed one OK
        # (TL_OPS="op op ...": a part of them, where a call's time is capped)
        log tilelang
        t0=$(date +%s)
        KG_TL_OPS=${TL_OPS:-} timeout 1500 tests/gpu/gpu_tilelang.sh "$B/kgate" "$B" >"$OUT/test-tilelang.log" 2>&1
        echo "tilelang: exit $? after $(($(date +%s) - t0)) s: $(tail -1 "$OUT/test-tilelang.log")"
        grep -E '^FAIL' "$OUT/test-tilelang.log"
        mkdir -p "$OUT/tilelang"
        cp "$B"/tests/gpu_tilelang-* "$OUT/tilelang/" 2>/dev/null
        ;;
    tilelang-jit)
        # TileLang's JIT from Python against libkgate_tilelang.so; TileLang's wheels come in
        # two earlier calls (.cache/tl-wheels/a, then b: scripts/tilelang_wheels.sh)
        log tilelang-jit
        tl=${TL_PY:-/tmp/kgate-tlpy}
        [ -d "$tl/tilelang" ] || scripts/tilelang_wheels.sh install "$tl"
        PYTHONPATH="$tl${PYTHONPATH:+:$PYTHONPATH}" gtest tilelang-jit tests/gpu/gpu_tilelang_jit.sh "$B/kgate" "$B"
        mkdir -p "$OUT/python"
        cp "$B"/tests/python/tl-*.json "$B"/tests/python/tl-*.txt "$OUT/python/" 2>/dev/null
        python3 scripts/python_route.py "$OUT/python" tilelang >"$OUT/tilelang-route.json" && cat "$OUT/tilelang-route.json"
        ;;
    batch-bench)
        # issue 10 on a 2-GPU machine (kind nvidia-h200-x2): 1 GPU against 2, pinned
        # kernels on both, a kill and resume (scripts/batch_bench.sh). BENCH_PHASES splits it
        # over calls; a phase longer than a call stops at BENCH_DEADLINE (default 540 s) and
        # goes on in the next with BENCH_CONTINUE=1. The folder stays on the machine between
        # calls and comes back with every pack, a stopped call's too.
        log batch-bench
        BUILD=$B BENCH_DEADLINE=${BENCH_DEADLINE:-540} timeout 590 scripts/batch_bench.sh "$BATCH_DIR" 2>&1 | tail -30
        ;;
    tf32)
        # the paper's fp32 GEMM with TF32 on and off: matmul fp32 (v1 on the CUDA cores against cuBLASLt in
        # fp32, and cuBLASLt with TF32, which fp32's tolerance must call incorrect) at every preset; the
        # adversarial tf32_compute (operands rounded to TF32: INCORRECT) and its control (OK or SLOW)
        log tf32
        L=$B/tests/adversarial/libkgate_adversarial.so
        timeout 240 "$B/kgate" check "$B/libkgate_bundled.so" --op matmul --dtype fp32 --sizes small,medium,large \
            --json "$OUT/tf32-bundled.json" >"$OUT/tf32-bundled.txt" 2>&1
        echo "tf32 bundled: exit $?"
        KG_ADV_HONEST=1 timeout 150 "$B/kgate" check "$L:tf32_compute" --sizes small,large \
            --json "$OUT/tf32-control.json" >"$OUT/tf32-control.txt" 2>&1
        echo "tf32 control: exit $?"
        timeout 150 "$B/kgate" check "$L:tf32_compute" --sizes small,medium,large \
            --json "$OUT/tf32-cheat.json" >"$OUT/tf32-cheat.txt" 2>&1
        echo "tf32 cheat: exit $?"
        python3 - "$OUT"/tf32-bundled.json "$OUT"/tf32-control.json "$OUT"/tf32-cheat.json <<'PY' | tee "$OUT/tf32.txt"
import json, sys
for f in sys.argv[1:]:
    try:
        d = json.load(open(f))
    except (OSError, ValueError) as e:
        print(f"{f}: {e}")
        continue
    for r in d["results"]:
        v = lambda k: (r.get("summaries", {}).get(k) or {}).get("value")
        libs = " ".join(f"{l.get('name')}={l.get('status')}" + (f"@{l['time']:.4g}s" if l.get("time") else "")
                        for l in r.get("libraries", []))
        print(r["kernel"], r.get("shape"), r["verdict"], f"E={v('lib/efficiency')} rho={v('roof/fraction')}",
              f"max_scaled_err={v('check/max_scaled_err')}", libs, (r.get("reason") or "")[:140])
PY
        ;;
    tune-matmul)
        # the paper's RC2a at 16384^2: the Triton tutorial's eight configurations, then a
        # sample (TUNE_BUDGET, default 40) of the wider compiled space, against cuBLASLt
        log tune-matmul
        for k in triton_matmul_tutorial_fp16 triton_matmul_fp16; do
            timeout 290 "$B/kgate" tune "$B/triton/libkgate_triton.so:$k" --shape xl --budget "${TUNE_BUDGET:-40}" --time-budget "${TUNE_TIME:-240}" --max-time 4 \
                --json "$OUT/tune-$k.json" >"$OUT/tune-$k.txt" 2>&1
            echo "$k: exit $?"; tail -5 "$OUT/tune-$k.txt"
        done
        ;;
    kb-compare)
        # kgate against KernelBench's evaluator (KB_PROBLEMS, KB_EVAL, KB_REPS, KB_BUDGET)
        log kb-compare
        timeout 590 python3 scripts/kb_compare.py --kb .cache/kernelbench --kgate "$B/kgate" --out "$OUT" \
            --problems "${KB_PROBLEMS:-1,9,40}" --kb-problems "${KB_EVAL:-1,9,40}" --reps "${KB_REPS:-2}" \
            --budget "${KB_BUDGET:-480}" 2>&1 | tee "$OUT/kb-compare.log"
        ;;
    kb-stream)
        # kgate kernelbench over the ViperBench problems reports as it goes: each progress line's time,
        # SIGTERM at KB_STOP_S (default 60) and the JSON it leaves (OUT/kb-stream.json); KB_ARGS: more
        # arguments for kgate kernelbench (--no-serve, say)
        log kb-stream
        python3 scripts/kb_stream.py --kgate "$B/kgate" --problems .gpujobs/viperbench/problems \
            --solutions .gpujobs/viperbench/solutions --out "$OUT" --stop "${KB_STOP_S:-60}" -- ${KB_ARGS:-} 2>&1 | tee "$OUT/kb-stream.log"
        ;;
    serve-bench)
        # kgate serve's wall per verdict against plain kgate and KernelBench's evaluator (SB_PROBLEMS,
        # SB_SO, SB_REPS, SB_BUDGET): OUT/serve-bench.json
        log serve-bench
        timeout 590 python3 scripts/serve_bench.py --kb .cache/kernelbench --kgate "$B/kgate" --out "$OUT" \
            --problems "${SB_PROBLEMS:-1,9,19,23,40,95}" --reps "${SB_REPS:-3}" --budget "${SB_BUDGET:-540}" \
            --so "${SB_SO:-$B/libkgate_bundled.so:layer_norm_v2_fp16,$B/libkgate_bundled.so:softmax_v2_fp16,$B/libkgate_bundled.so:matmul_v3_fp16}" \
            2>&1 | tee "$OUT/serve-bench.log"
        ;;
    kb-group)
        # a problem's solutions in one kgate kernelbench DIR DIR (KB_PROBLEMS, KB_GROUP solutions
        # each, one without ModelNew among them): GPU time held per verdict (kb-group.json)
        log kb-group
        timeout 590 python3 scripts/kb_compare.py --kb .cache/kernelbench --kgate "$B/kgate" --out "$OUT" \
            --problems "${KB_PROBLEMS:-1,40,9,95}" --group "${KB_GROUP:-4}" --bad --budget "${KB_BUDGET:-300}" \
            2>&1 | cut -c1-400 | tee "$OUT/kb-group.log"
        ;;
    viperbench)
        # the paper artifact's ViperBench operators as KernelBench pairs, written on the
        # development machine by scripts/viperbench.py into .gpujobs/viperbench (carried):
        # one kgate kernelbench a problem under timeout VIPER_TIMEOUT (default 150 s),
        # viperbench/NAME.json each, then the table and viperbench/summary.json.
        # VIPER_ONLY="add 14_matmul" picks problems (operator or file name); VIPER_GPUS=N
        # runs N at once, one a GPU (CUDA_VISIBLE_DEVICES)
        log viperbench
        vb=${VIPER_DIR:-.gpujobs/viperbench} vo=$OUT/viperbench
        mkdir -p "$vo"
        if [ ! -f "$vb/MANIFEST.json" ]; then
            echo "viperbench: no $vb/MANIFEST.json (python3 scripts/viperbench.py ARTIFACT $vb here, then carry it)"
            return
        fi
        cp "$vb/MANIFEST.json" "$vo/"
        : >"$vo/runs.tsv"
        names=
        for p in "$vb"/problems/*.py; do
            n=$(basename "$p" .py)
            if [ -n "${VIPER_ONLY:-}" ]; then
                case " $VIPER_ONLY " in *" $n "* | *" ${n#*_} "*) ;; *) continue ;; esac
            fi
            names="$names $n"
        done
        lanes=${VIPER_GPUS:-1}
        for lane in $(seq 0 $((lanes - 1))); do
            (
                [ "$lanes" -gt 1 ] && export CUDA_VISIBLE_DEVICES="$lane"
                i=0
                for n in $names; do
                    i=$((i + 1))
                    [ $(((i - 1) % lanes)) -eq "$lane" ] || continue
                    t0=$(date +%s)
                    timeout "${VIPER_TIMEOUT:-150}" "$B/kgate" kernelbench "$vb/problems/$n.py" "$vb/solutions/$n.py" \
                        --json "$vo/$n.json" >"$vo/$n.txt" 2>&1
                    rc=$? dt=$(($(date +%s) - t0))
                    printf '%s\t%s\t%s\n' "$n" "$rc" "$dt" >>"$vo/runs.tsv"
                    echo "$n: exit $rc after $dt s${CUDA_VISIBLE_DEVICES:+ (GPU $lane)}"
                done
            ) &
        done
        wait
        python3 scripts/viperbench_summary.py "$vo" --command "scripts/gpu.sh viperbench: kgate kernelbench PROBLEM SOLUTION \
--json NAME.json a problem, timeout ${VIPER_TIMEOUT:-150} s${VIPER_ONLY:+, VIPER_ONLY=$VIPER_ONLY}, ${lanes} GPU(s)" |
            tee "$vo/summary.txt"
        ;;
    roofs)
        # the roofs as ceilings: kgate peaks (each bandwidth kernel's GB/s, the L2 write
        # credit), then the honest kernels that read highest and their fastest vendor path
        # against those roofs; the largest rho and the guard's margin (rho_impossible /
        # largest rho) go to roofs/summary.json. About 2 minutes.
        log roofs
        mkdir -p "$OUT/roofs"
        t0=$(date +%s)
        timeout 150 "$B/kgate" peaks --json "$OUT/roofs/peaks.json" >"$OUT/roofs/peaks.txt" 2>&1
        echo "kgate peaks: exit $? after $(($(date +%s) - t0)) s"
        cat "$OUT/roofs/peaks.txt"
        tri=$B/triton/libkgate_triton.so tl=$B/tilelang/libkgate_tilelang.so
        for spec in "$B/libkgate_bundled.so:mean_reduction_v2_fp32 large" "$B/libkgate_bundled.so:max_reduction_v2_fp32 large" \
            "$B/libkgate_bundled.so:max_reduction_v2_fp16 large" "$B/libkgate_bundled.so:batched_matmul_v2_fp16 gemv,large" \
            "$B/libkgate_bundled.so:embedding_v2_fp16 large" "$B/libkgate_bundled.so:rms_norm_v2_fp16 medium,large" \
            "$B/libkgate_bundled.so:add_v2_fp16 medium,large" "$B/libkgate_bundled.so:relu_v2_fp16 medium,large" \
            "$tri:triton_mean_reduction_fp32 large" "$tri:triton_rms_norm_fp16 medium,large" \
            "$tl:tilelang_rms_norm_fp16 medium,large"; do
            k=${spec% *} k=${k##*:} cand=${spec%%:*}
            [ -f "$cand" ] || continue
            timeout 90 "$B/kgate" check "${spec% *}" --sizes "${spec##* }" --max-time 1 \
                --json "$OUT/roofs/$k.json" >"$OUT/roofs/$k.txt" 2>&1
            echo "$k: exit $?"
        done
        python3 - "$OUT/roofs" <<'EOF2'
import glob, json, os, sys
d = sys.argv[1]
rows, gate, roofs, dev = [], 1.05, {}, {}
for f in sorted(glob.glob(os.path.join(d, "*.json"))):
    if os.path.basename(f) in ("peaks.json", "summary.json"):
        continue
    doc = json.load(open(f))
    gate, roofs, dev = doc["gate"]["rho_impossible"], doc["roofs"], doc["device"]
    for r in doc["results"]:
        s = {k: v["value"] for k, v in r.get("summaries", {}).items()}
        if "roof/fraction" in s:
            rows.append({"kernel": r["kernel"], "shape": r["shape"], "verdict": r["verdict"], "rho": s["roof/fraction"],
                         "roof": s.get("roof/peak", 0), "bandwidth": s.get("rate/bandwidth", 0)})
        if "lib/roof/fraction" in s:
            rows.append({"kernel": "lib:" + r.get("baseline", "?"), "shape": r["shape"], "verdict": "-",
                         "rho": s["lib/roof/fraction"], "roof": s.get("roof/peak", 0), "bandwidth": 0})
rows.sort(key=lambda x: -x["rho"])
print("%-34s %-18s %-10s %7s %9s %9s" % ("kernel", "shape", "verdict", "rho", "roof TB/s", "got TB/s"))
for x in rows:
    print("%-34s %-18s %-10s %7.3f %9.2f %9.2f" % (x["kernel"], x["shape"], x["verdict"], x["rho"], x["roof"] / 1e12,
                                                  x["bandwidth"] / 1e12))
top = rows[0] if rows else {"kernel": "none", "rho": 0}
margin = gate / top["rho"] if top["rho"] > 0 else 0
peaks = json.load(open(os.path.join(d, "peaks.json"))) if os.path.exists(os.path.join(d, "peaks.json")) else {}
out = {"schema": "kgate.roofs-check/1", "device": dev, "roofs": roofs, "peaks": peaks.get("measured", {}),
       "rho_impossible": gate, "max_rho": top["rho"], "max_rho_kernel": top["kernel"], "margin": margin,
       "over_1": [x for x in rows if x["rho"] > 1.0], "kernels": rows}
json.dump(out, open(os.path.join(d, "summary.json"), "w"), indent=1)
print("largest rho %.3f (%s); rho_impossible %.2f; margin %.3f; %d honest rho over 1.0"
      % (top["rho"], top["kernel"], gate, margin, len(out["over_1"])))
EOF2
        ;;
    *) echo "unknown step '$step'" ;;
    esac
}
for step in $steps; do
    pack
    run_step "$step" &
    wait $!
done
pack

#!/bin/sh
# Issue 10's measurements, on a machine with two GPUs (the device tool's
# nvidia-h200-x2), from a packed build (scripts/pack.sh):
#   1. verdicts per minute of one batch of >= 100 jobs, each one kernel at
#      the small preset (every bundled naive and fast kernel of every
#      operator and dtype: correct and SLOW ones; the fault candidates:
#      INCORRECT, CRASH, TIMEOUT) on GPU 0 alone, then on both;
#   2. the same ten kernels pinned to GPU 0 and to GPU 1: the batch summary's
#      cross-GPU check (medians within 1%);
#   3. a batch killed after 40 s and resumed: every job recorded once;
#   4. (phase lib) many candidates of a few operators on the first GPU of
#      BENCH_GPUS: four operators' naive and fast kernels, three copies each,
#      with the library timed in every job and with --lib-cache (a fresh
#      cache: its first job of each operator times it).
# Writes OUT/batch-bench.json and the logs beside it. A device call allows
# 600 s, so the phases can go in separate calls while the machine stays
# warm (OUT kept between them): BENCH_PHASES="one two" then "pinned resume
# report" (default: all of them, in that order). A phase longer than a call
# (125 jobs on one H200 take about 13 minutes) spans calls: BENCH_DEADLINE=S
# stops this call's batch after S seconds (its process group killed, as a
# lost node would be), and BENCH_CONTINUE=1 in the next call resumes the
# phase's results instead of starting afresh; a phase's wall time is the sum
# of its calls' (the job cut short at a deadline is run again, so the sum
# errs long). On one GPU, the resume
# phase alone: BENCH_PHASES="resume report" BENCH_GPUS=0, with
# BENCH_MAX_JOBS to take the manifest's first N jobs; the report then leaves
# the phases that did not run out (null).
# BENCH_LIB_CACHE=1 gives the jobs of the other phases --lib-cache too, and
# BENCH_CHECK_OPTS every check of every phase further options, such as
# "--min-time 0.05" to fit the phases in fewer device minutes (the report's
# check_options says which options the jobs had).
#   scripts/batch_bench.sh OUT
set -u
out=${1:?usage: scripts/batch_bench.sh OUT}
B=${BUILD:-.devbuild}
phases=${BENCH_PHASES:-one two pinned resume report}
mkdir -p "$out"
k=$B/kgate
m=$out/jobs.jsonl
has() { case " $phases " in *" $1 "*) return 0 ;; esac; return 1; }
t_start=$(date +%s)
if [ -z "${BENCH_CONTINUE:-}" ]; then
    for ph in one:one-gpu two:two-gpus pinned:pinned resume:resume lib:lib-off lib:lib-on; do
        # a fresh measurement of that phase
        has "${ph%%:*}" && rm -rf "$out/${ph#*:}.jsonl" "$out/wall-${ph%%:*}" "$out/wall-${ph#*:}" \
            "$out/lines-before" "$out/resume-rc" "$out/xdg-${ph%%:*}" "$out/xdg-${ph#*:}"
    done
fi
# seconds this call may still run a batch (BENCH_DEADLINE), at least 1
left() { echo "${BENCH_DEADLINE:-100000} $t_start $(date +%s)" | awk '{l = $1 - ($3 - $2); print l < 1 ? 1 : l}'; }
: >"$m"
ops=$("$k" ops | sed -n 's/^\([a-z0-9_]*\): .*/\1/p')
# every operator at each dtype it takes: its naive and its fast kernel, each a job
"$k" ops | awk '/^[a-z0-9_]*: /{op=$1; sub(":", "", op)} /^  dtypes:/{for (i = 2; i <= NF; i++) {d=$i; sub("[*]", "", d); if (d ~ /^(fp16|bf16|fp32)$/) print op, d}}' |
    while read -r op dt; do
        for v in v1 v2; do
            echo "{\"candidate\":\"$B/libkgate_bundled.so\",\"kernel\":\"${op}_${v}_$dt\",\"shape\":\"small\"}" >>"$m"
        done
    done
for kern in illegal spin zeros mutate simple; do
    for shape in small medium; do
        echo "{\"candidate\":\"$B/tests/plugins/libcand_faults.so\",\"kernel\":\"$kern\",\"shape\":\"$shape\"}" >>"$m"
    done
done
if [ -n "${BENCH_MAX_JOBS:-}" ]; then
    head -n "$BENCH_MAX_JOBS" "$m" >"$m.head" && mv "$m.head" "$m"
fi
n=$(wc -l <"$m")
gpus=${BENCH_GPUS:-0,1}
# phase lib: four operators' naive and fast kernels, three copies each
r=$out/jobs-repeat.jsonl
"$(dirname "$0")/repeat_jobs.sh" "$B" >"$r"
# ten kernels pinned to each GPU
p=$out/jobs-pinned.jsonl
: >"$p"
for op in $(echo "$ops" | head -10); do
    for g in 0 1; do
        echo "{\"candidate\":\"$B/libkgate_bundled.so\",\"op\":\"$op\",\"shape\":\"medium\",\"gpu\":$g}" >>"$p"
    done
done
# every batch's limits: each job's, and each check's (word-split on use),
# with BENCH_CHECK_OPTS added to every check of every phase
base="--job-timeout 300 -- --timeout 20${BENCH_CHECK_OPTS:+ $BENCH_CHECK_OPTS}"
judge=$base
# BENCH_LIB_CACHE=1: every job of phases one, two, pinned and resume with
# --lib-cache, each phase from an empty cache of its own (OUT/xdg-PHASE, the
# measured roofs copied in: phase two must not reuse what GPU 0 kept in phase
# one); the default times the library in every job, as the 1 GPU against 2
# comparison wants (each GPU would otherwise time each library job for itself)
roofs_from=${XDG_CACHE_HOME:-$HOME/.cache}
[ -n "${BENCH_LIB_CACHE:-}" ] && judge="$judge --lib-cache"
cache_for() { # cache_for DIR: XDG_CACHE_HOME=OUT/DIR, made with the roofs when absent
    if [ ! -d "$out/$1" ]; then
        mkdir -p "$out/$1/kgate"
        cp "$roofs_from"/kgate/roofs-*.json "$out/$1/kgate/" 2>/dev/null
    fi
    XDG_CACHE_HOME=$out/$1
    export XDG_CACHE_HOME
}
# A batch stopped by `timeout` goes whole: timeout signals its process group,
# supervisors and workers with it.
run() { # run PHASE NAME GPUS MANIFEST: adds this call's wall seconds to OUT/wall-PHASE
    [ -n "${BENCH_LIB_CACHE:-}" ] && cache_for "xdg-$1"
    t0=$(date +%s.%N)
    timeout -k 5 "$(left)" "$k" batch "$4" -o "$out/$2.jsonl" --gpus "$3" $judge >>"$out/$2.txt" 2>>"$out/$2.err"
    rc=$?
    prev=$(cat "$out/wall-$1" 2>/dev/null || echo 0)
    echo "$(date +%s.%N) $t0 $prev" | awk '{printf "%.1f", $1 - $2 + $3}' >"$out/wall-$1"
    [ $rc = 124 ] || [ $rc = 137 ] &&
        echo "phase $1 stopped at BENCH_DEADLINE: $(wc -l <"$out/$2.jsonl") of $(wc -l <"$4") jobs recorded; BENCH_CONTINUE=1 BENCH_PHASES=$1 goes on"
    return 0
}
# each phase's wall time is kept in OUT, so that a later call can report it
has one && run one one-gpu 0 "$m"
has two && run two two-gpus 0,1 "$m"
has pinned && run pinned pinned 0,1 "$p"
if has resume; then
    # killed (SIGKILL to the whole batch after KILL_AFTER seconds) and resumed
    [ -n "${BENCH_LIB_CACHE:-}" ] && cache_for xdg-resume
    timeout -s KILL "${KILL_AFTER:-40}" "$k" batch "$m" -o "$out/resume.jsonl" --gpus "$gpus" $judge \
        >"$out/resume-1.txt" 2>&1
    cat "$out/resume.jsonl" 2>/dev/null | wc -l >"$out/lines-before" # none yet when killed early
    t0=$(date +%s.%N)
    timeout -k 5 "$(left)" "$k" batch "$m" -o "$out/resume.jsonl" --gpus "$gpus" $judge >"$out/resume-2.txt" 2>&1
    echo "$? $(date +%s.%N) $t0" | awk '{printf "%d %.1f", $1, $2 - $3}' >"$out/resume-rc"
fi
BENCH_JUDGE=$judge
export BENCH_JUDGE
if has lib; then
    # its own options: the library timed in every job, then --lib-cache
    g1=${gpus%%,*}
    (
        judge=$base
        BENCH_LIB_CACHE=
        run lib-off lib-off "$g1" "$r"
        # a fresh library cache beside the measured roofs
        rm -rf "$out/xdg"
        cache_for xdg
        judge="$base --lib-cache"
        run lib-on lib-on "$g1" "$r"
    )
fi
has report || exit 0
BENCH_KGATE=$k
export BENCH_KGATE
val() { cat "$out/$1" 2>/dev/null || echo null; }
python3 - "$out" "$n" "$(val wall-one)" "$(val wall-two)" "$(val wall-pinned)" "$(val lines-before)" "$gpus" <<'PY'
import collections, datetime, json, os, re, shutil, subprocess, sys
out, n, gpus = sys.argv[1], int(sys.argv[2]), sys.argv[7]
w1, w2, wp, before = (None if a == "null" else float(a) for a in sys.argv[3:7])
def lines(name):
    p = os.path.join(out, name)
    return [json.loads(l) for l in open(p) if l.strip()] if os.path.exists(p) else None
res = lines("resume.jsonl")
done1, done2 = (None if lines(f) is None else len({r["id"] for r in lines(f)}) for f in ("one-gpu.jsonl", "two-gpus.jsonl"))
def verdict(line):
    # a results line's verdict: its one check result's, else how the job ended
    r = (line.get("check") or {}).get("results") or []
    return r[0].get("verdict", "?") if len(r) == 1 else "exit %s" % line.get("exit")
def lib_phase():
    # the same jobs with the library timed in every job and with --lib-cache
    off, on = lines("lib-off.jsonl"), lines("lib-on.jsonl")
    if not off or not on:
        return None
    def wall(name):
        p = os.path.join(out, "wall-" + name)
        return float(open(p).read()) if os.path.exists(p) else None
    def row(x):
        r = (x.get("check") or {}).get("results") or [{}]
        s = r[0].get("summaries", {})
        v = lambda k: s[k]["value"] if k in s else None
        return {"verdict": r[0].get("verdict"), "e_lib": v("lib/efficiency"), "t_lib": v("lib/time/median"),
                "cached": "lib/cache/age" in s, "wall_s": x.get("wall_s")}
    a, b = {x["id"]: row(x) for x in off}, {x["id"]: row(x) for x in on}
    both = sorted(set(a) & set(b))
    rel = lambda p, q: abs(p / q - 1) if p and q else None
    d_elib = [rel(b[i]["e_lib"], a[i]["e_lib"]) for i in both if rel(b[i]["e_lib"], a[i]["e_lib"]) is not None]
    w_off, w_on = wall("lib-off"), wall("lib-on")
    return {"jobs": len(both), "wall_off_s": w_off, "wall_on_s": w_on,
            "verdicts_per_min_off": 60 * len(off) / w_off if w_off else None,
            "verdicts_per_min_on": 60 * len(on) / w_on if w_on else None,
            "speedup": w_off / w_on if w_off and w_on else None,
            "library_jobs_on": sum(1 for i in b if not b[i]["cached"]),
            "same_verdicts": sum(1 for i in both if a[i]["verdict"] == b[i]["verdict"]),
            "e_lib_rel_diff_median": sorted(d_elib)[len(d_elib) // 2] if d_elib else None,
            "e_lib_rel_diff_max": max(d_elib) if d_elib else None,
            "per_job": {i: {"off": a[i], "on": b[i]} for i in both}}
rc = open(os.path.join(out, "resume-rc")).read().split() if os.path.exists(os.path.join(out, "resume-rc")) else None
doc = {"command": "scripts/batch_bench.sh OUT (BENCH_PHASES in one or more calls)",
       # the build's commit (`kgate version`): the GPU machine's copy of the tree may carry another .git
       "commit": re.sub(r".*\(commit ([0-9a-f]+).*", r"\1",
                        subprocess.run([os.environ["BENCH_KGATE"], "version"], capture_output=True, text=True).stdout.strip()),
       "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
       "device": (subprocess.run(["nvidia-smi", "--query-gpu=name,uuid", "--format=csv,noheader"],
                                 capture_output=True, text=True).stdout.strip().splitlines()
                  if shutil.which("nvidia-smi") else "no nvidia-smi (a rehearsal with fake GPUs)"),
       "jobs": n, "gpus": gpus, "check_options": os.environ.get("BENCH_JUDGE", ""), "one_gpu_wall_s": w1, "two_gpu_wall_s": w2,
       "one_gpu_done": done1, "two_gpu_done": done2}
# a phase's rate only once every job is recorded (a phase may span calls)
c1, c2 = w1 and done1 == n, w2 and done2 == n
doc.update({"verdicts_per_min_1": 60 * n / w1 if c1 else None, "verdicts_per_min_2": 60 * n / w2 if c2 else None,
       "speedup": w1 / w2 if c1 and c2 else None, "pinned_wall_s": wp,
       "lib": lib_phase(),
       "pinned_summary": open(os.path.join(out, "pinned.txt")).read().splitlines()[-4:]
       if os.path.exists(os.path.join(out, "pinned.txt")) else None,
       "resume": None if res is None else {
           "lines_after_kill": None if before is None else int(before), "lines_after_resume": len(res),
           "distinct": len({r["id"] for r in res}), "jobs": n,
           "rerun_exit": int(rc[0]) if rc else None, "rerun_wall_s": float(rc[1]) if rc else None,
           "verdicts": dict(sorted(collections.Counter(verdict(r) for r in res).items()))}})
json.dump(doc, open(os.path.join(out, "batch-bench.json"), "w"), indent=1)
print(json.dumps(doc, indent=1))
PY

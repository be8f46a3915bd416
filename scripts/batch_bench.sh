#!/bin/sh
# Issue 10's measurements, on a machine with two GPUs (the device tool's
# nvidia-h200-x2), from a packed build (scripts/pack.sh):
#   1. verdicts per minute of one batch of >= 100 jobs, each one kernel at
#      the small preset (every bundled naive and fast kernel of every
#      operator and dtype: correct and SLOW ones; the fault candidates:
#      INCORRECT, CRASH, TIMEOUT) on GPU 0 alone, then on both;
#   2. the same ten kernels pinned to GPU 0 and to GPU 1: the batch summary's
#      cross-GPU check (medians within 1%);
#   3. a batch killed after 40 s and resumed: every job recorded once.
# Writes OUT/batch-bench.json and the logs beside it. A device call allows
# 600 s, so the phases can go in separate calls while the machine stays
# warm (OUT kept between them): BENCH_PHASES="one two" then "pinned resume
# report" (default: all of them, in that order).
#   scripts/batch_bench.sh OUT
set -u
out=${1:?usage: scripts/batch_bench.sh OUT}
B=${BUILD:-.devbuild}
phases=${BENCH_PHASES:-one two pinned resume report}
mkdir -p "$out"
k=$B/kgate
m=$out/jobs.jsonl
has() { case " $phases " in *" $1 "*) return 0 ;; esac; return 1; }
for ph in one:one-gpu two:two-gpus pinned:pinned resume:resume; do
    has "${ph%%:*}" && rm -f "$out/${ph#*:}.jsonl" # a fresh measurement of that phase
done
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
n=$(wc -l <"$m")
# ten kernels pinned to each GPU
p=$out/jobs-pinned.jsonl
: >"$p"
for op in $(echo "$ops" | head -10); do
    for g in 0 1; do
        echo "{\"candidate\":\"$B/libkgate_bundled.so\",\"op\":\"$op\",\"shape\":\"medium\",\"gpu\":$g}" >>"$p"
    done
done
run() { # run NAME GPUS MANIFEST: wall seconds
    t0=$(date +%s.%N)
    "$k" batch "$3" -o "$out/$1.jsonl" --gpus "$2" --timeout 300 -- --timeout 20 >"$out/$1.txt" 2>"$out/$1.err"
    echo "$(date +%s.%N) $t0" | awk '{printf "%.1f", $1 - $2}'
}
# each phase's wall time is kept in OUT, so that a later call can report it
has one && run one-gpu 0 "$m" >"$out/wall-one"
has two && run two-gpus 0,1 "$m" >"$out/wall-two"
has pinned && run pinned 0,1 "$p" >"$out/wall-pinned"
if has resume; then
    # killed and resumed
    (setsid "$k" batch "$m" -o "$out/resume.jsonl" --gpus 0,1 --timeout 300 -- --timeout 20 >"$out/resume-1.txt" 2>&1 &
        echo $! >"$out/pid")
    sleep "${KILL_AFTER:-40}"
    kill -9 -"$(cat "$out/pid")" 2>/dev/null
    wc -l <"$out/resume.jsonl" >"$out/lines-before"
    "$k" batch "$m" -o "$out/resume.jsonl" --gpus 0,1 --timeout 300 -- --timeout 20 >"$out/resume-2.txt" 2>&1
fi
has report || exit 0
w1=$(cat "$out/wall-one") w2=$(cat "$out/wall-two") wp=$(cat "$out/wall-pinned") before=$(cat "$out/lines-before")
python3 - "$out" "$n" "$w1" "$w2" "$wp" "$before" <<'PY'
import json, os, shutil, subprocess, sys, datetime
out, n, w1, w2, wp, before = sys.argv[1], int(sys.argv[2]), *map(float, sys.argv[3:6]), int(sys.argv[6])
ids = [json.loads(l)["id"] for l in open(os.path.join(out, "resume.jsonl")) if l.strip()]
doc = {"command": "scripts/batch_bench.sh OUT (BENCH_PHASES in one or more calls)",
       "commit": subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True).stdout.strip(),
       "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
       "device": (subprocess.run(["nvidia-smi", "--query-gpu=name,uuid", "--format=csv,noheader"],
                                 capture_output=True, text=True).stdout.strip().splitlines()
                  if shutil.which("nvidia-smi") else "no nvidia-smi (a rehearsal with fake GPUs)"),
       "jobs": n, "one_gpu_wall_s": w1, "two_gpu_wall_s": w2,
       "verdicts_per_min_1": 60 * n / w1, "verdicts_per_min_2": 60 * n / w2, "speedup": w1 / w2,
       "pinned_wall_s": wp, "pinned_summary": open(os.path.join(out, "pinned.txt")).read().splitlines()[-4:],
       "resume": {"lines_after_kill": before, "lines_after_resume": len(ids), "distinct": len(set(ids)), "jobs": n}}
json.dump(doc, open(os.path.join(out, "batch-bench.json"), "w"), indent=1)
print(json.dumps(doc, indent=1))
PY

#!/bin/sh
# Issue 10's measurements, on a machine with two GPUs (the device tool's
# nvidia-h200-x2), from a packed build (scripts/pack.sh):
#   1. verdicts per minute of one batch of >= 100 jobs (the bundled suite's
#      naive and fast kernels at two shapes: correct and SLOW ones; the fault
#      candidates: INCORRECT, CRASH, TIMEOUT) on GPU 0 alone, then on both;
#   2. the same ten kernels pinned to GPU 0 and to GPU 1: the batch summary's
#      cross-GPU check (medians within 1%);
#   3. a batch killed after 40 s and resumed: every job recorded once.
# Writes OUT/batch-bench.json and the logs beside it.
#   scripts/batch_bench.sh OUT
set -u
out=${1:?usage: scripts/batch_bench.sh OUT}
B=${BUILD:-.devbuild}
mkdir -p "$out"
k=$B/kgate
m=$out/jobs.jsonl
rm -f "$out/one-gpu.jsonl" "$out/two-gpus.jsonl" "$out/pinned.jsonl" "$out/resume.jsonl" # a fresh measurement
: >"$m"
ops=$("$k" ops | sed -n 's/^\([a-z_]*\): .*/\1/p')
# every operator at each dtype it takes, two shapes: its naive and fast kernels a job
"$k" ops | awk '/^[a-z_]*: /{op=$1; sub(":", "", op)} /^  dtypes:/{for (i = 2; i <= NF; i++) {d=$i; sub("[*]", "", d); if (d ~ /^(fp16|bf16|fp32)$/) print op, d}}' |
    while read -r op dt; do
        for shape in small medium; do
            echo "{\"candidate\":\"$B/libkgate_bundled.so\",\"op\":\"$op\",\"dtype\":\"$dt\",\"shape\":\"$shape\"}" >>"$m"
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
w1=$(run one-gpu 0 "$m")
w2=$(run two-gpus 0,1 "$m")
wp=$(run pinned 0,1 "$p")
# killed and resumed
(setsid "$k" batch "$m" -o "$out/resume.jsonl" --gpus 0,1 --timeout 300 -- --timeout 20 >"$out/resume-1.txt" 2>&1 &
    echo $! >"$out/pid")
sleep "${KILL_AFTER:-40}"
kill -9 -"$(cat "$out/pid")" 2>/dev/null
before=$(wc -l <"$out/resume.jsonl")
"$k" batch "$m" -o "$out/resume.jsonl" --gpus 0,1 --timeout 300 -- --timeout 20 >"$out/resume-2.txt" 2>&1
python3 - "$out" "$n" "$w1" "$w2" "$wp" "$before" <<'PY'
import json, os, shutil, subprocess, sys, datetime
out, n, w1, w2, wp, before = sys.argv[1], int(sys.argv[2]), *map(float, sys.argv[3:6]), int(sys.argv[6])
ids = [json.loads(l)["id"] for l in open(os.path.join(out, "resume.jsonl")) if l.strip()]
doc = {"command": "scripts/batch_bench.sh OUT",
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

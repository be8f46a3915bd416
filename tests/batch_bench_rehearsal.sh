#!/bin/sh
# scripts/batch_bench.sh (issue 10's H200 x2 measurement) rehearsed on the
# CPU: tests/fake_check.sh for each job and two fake GPUs, the phases split
# over two runs as over two device calls. It must build a manifest of at
# least 100 distinct jobs (every operator, conv2d's digits included), run
# every phase, resume a killed batch with every job recorded once, and pass
# --lib-cache to every job of the lib phase's second batch and not its first,
# and BENCH_CHECK_OPTS to every check;
# as on one H200, the resume phase alone over the manifest's first 30 jobs
# (each 0.2 s, killed after 1 s: they cannot all be done by then).
#   tests/batch_bench_rehearsal.sh BUILD SRC
set -u
build=$1 src=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export KG_BATCH_RUNNER=$src/tests/fake_check.sh KG_BATCH_GPUS=2 KILL_AFTER=3 BUILD=$build
export BENCH_CHECK_OPTS="--min-time 0.05"
BENCH_PHASES="one two" "$src/scripts/batch_bench.sh" "$out" >/dev/null 2>&1
BENCH_PHASES="pinned resume lib report" "$src/scripts/batch_bench.sh" "$out" >/dev/null 2>&1
unset BENCH_CHECK_OPTS
python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
d = json.load(open(os.path.join(out, "batch-bench.json")))
errs = "".join(open(os.path.join(out, f)).read() for f in ("one-gpu.err", "two-gpus.err"))
checks = [
    ("at least 100 jobs", d["jobs"] >= 100),
    ("no duplicate job ids", "appears twice" not in errs),
    ("conv2d in the manifest", "conv2d_v1_fp16" in open(os.path.join(out, "jobs.jsonl")).read()),
    ("every job run on one GPU", sum(1 for _ in open(os.path.join(out, "one-gpu.jsonl"))) == d["jobs"]),
    ("every job run on two GPUs", sum(1 for _ in open(os.path.join(out, "two-gpus.jsonl"))) == d["jobs"]),
    ("resumed: every job once", d["resume"]["distinct"] == d["resume"]["lines_after_resume"] == d["jobs"]),
    ("resumed: the verdicts counted from each job's results",
     sum(d["resume"]["verdicts"].values()) == d["jobs"] and "OK" in d["resume"]["verdicts"]
     and not any(v.startswith("exit") or v == "?" for v in d["resume"]["verdicts"])),
    ("pinned: a cross-GPU summary", any("cross-GPU" in line for line in d["pinned_summary"])),
    ("lib: 24 jobs judged both ways", d["lib"] is not None and d["lib"]["jobs"] == 24),
    ("lib: --lib-cache passed to every job of the second batch, none of the first",
     all("--lib-cache" in json.loads(l)["check"]["command"] for l in open(os.path.join(out, "lib-on.jsonl")))
     and not any("--lib-cache" in json.loads(l)["check"]["command"] for l in open(os.path.join(out, "lib-off.jsonl")))),
    ("lib: the same verdicts", d["lib"] is not None and d["lib"]["same_verdicts"] == 24),
    ("BENCH_CHECK_OPTS reached every check of every phase and the report",
     d["check_options"].endswith("--min-time 0.05")
     and all(" --min-time 0.05 " in json.loads(l)["check"]["command"] + " "
             for f in ("one-gpu", "two-gpus", "pinned", "resume", "lib-off", "lib-on")
             for l in open(os.path.join(out, f + ".jsonl")))),
]
bad = [name for name, ok in checks if not ok]
for name, ok in checks:
    print(("ok: " if ok else "FAIL: ") + name)
sys.exit(1 if bad else 0)
PY
rc=$?
one=$(mktemp -d)
trap 'rm -rf "$out" "$one"' EXIT
KG_FAKE_SLEEP=0.2 KILL_AFTER=1 KG_BATCH_GPUS=1 BENCH_PHASES="resume report" BENCH_GPUS=0 BENCH_MAX_JOBS=30 "$src/scripts/batch_bench.sh" "$one" >/dev/null 2>&1
python3 - "$one" <<'PY' || rc=1
import json, os, sys
d = json.load(open(os.path.join(sys.argv[1], "batch-bench.json")))
r = d["resume"]
checks = [
    ("one GPU: the first 30 jobs", d["jobs"] == 30 and d["gpus"] == "0"),
    ("one GPU: phases not run are null", d["one_gpu_wall_s"] is None and d["speedup"] is None),
    ("one GPU: killed, then resumed: every job once", r["distinct"] == r["lines_after_resume"] == 30),
    ("one GPU: the kill left jobs to do", r["lines_after_kill"] < 30),
    ("one GPU: the rerun's exit recorded", r["rerun_exit"] is not None),
]
for name, ok in checks:
    print(("ok: " if ok else "FAIL: ") + name)
sys.exit(0 if all(ok for _, ok in checks) else 1)
PY
# a phase over two calls: the first stopped by BENCH_DEADLINE, the second
# (BENCH_CONTINUE=1) finishing it; every job once, the rate only at the end
two=$(mktemp -d)
trap 'rm -rf "$out" "$one" "$two"' EXIT
# (20 jobs of 0.5 s against a 5 s deadline: some done, not all, even where
# the batch is slow to start, as under the sanitizers)
export KG_FAKE_SLEEP=0.5 KG_BATCH_GPUS=1
BENCH_PHASES="one report" BENCH_MAX_JOBS=20 BENCH_DEADLINE=5 "$src/scripts/batch_bench.sh" "$two" >"$two/call1.txt" 2>&1
cp "$two/batch-bench.json" "$two/first.json"
BENCH_CONTINUE=1 BENCH_PHASES="one report" BENCH_MAX_JOBS=20 "$src/scripts/batch_bench.sh" "$two" >/dev/null 2>&1
python3 - "$two" <<'PY' || rc=1
import json, os, re, sys
d1 = json.load(open(os.path.join(sys.argv[1], "first.json")))
d2 = json.load(open(os.path.join(sys.argv[1], "batch-bench.json")))
ids = [json.loads(l)["id"] for l in open(os.path.join(sys.argv[1], "one-gpu.jsonl")) if l.strip()]
said = open(os.path.join(sys.argv[1], "call1.txt")).read()
checks = [
    ("deadline: the first call stopped short, and said how to go on",
     d1["one_gpu_done"] < 20 and "BENCH_CONTINUE=1 BENCH_PHASES=one" in said),
    ("deadline: no rate for an unfinished phase", d1["verdicts_per_min_1"] is None),
    ("continued: every job once", len(ids) == len(set(ids)) == 20 and d2["one_gpu_done"] == 20),
    ("continued: the second call resumed the first's results",
     re.search(r"\b[1-9][0-9]* already done", open(os.path.join(sys.argv[1], "one-gpu.txt")).read()) is not None),
    ("continued: the wall time is both calls'", d2["one_gpu_wall_s"] > d1["one_gpu_wall_s"]),
    ("continued: a rate", d2["verdicts_per_min_1"] is not None),
]
for name, ok in checks:
    print(("ok: " if ok else "FAIL: ") + name)
sys.exit(0 if all(ok for _, ok in checks) else 1)
PY
exit $rc

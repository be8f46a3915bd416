#!/bin/sh
# scripts/batch_bench.sh (issue 10's H200 x2 measurement) rehearsed on the
# CPU: tests/fake_check.sh for each job and two fake GPUs, the phases split
# over two runs as over two device calls. It must build a manifest of at
# least 100 distinct jobs (every operator, conv2d's digits included), run
# every phase, and resume a killed batch with every job recorded once.
#   tests/batch_bench_rehearsal.sh BUILD SRC
set -u
build=$1 src=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export KG_BATCH_RUNNER=$src/tests/fake_check.sh KG_BATCH_GPUS=2 KILL_AFTER=3 BUILD=$build
BENCH_PHASES="one two" "$src/scripts/batch_bench.sh" "$out" >/dev/null 2>&1
BENCH_PHASES="pinned resume report" "$src/scripts/batch_bench.sh" "$out" >/dev/null 2>&1
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
    ("pinned: a cross-GPU summary", any("cross-GPU" in line for line in d["pinned_summary"])),
]
bad = [name for name, ok in checks if not ok]
for name, ok in checks:
    print(("ok: " if ok else "FAIL: ") + name)
sys.exit(1 if bad else 0)
PY

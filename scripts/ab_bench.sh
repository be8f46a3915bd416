#!/bin/sh
# Two packed builds (scripts/pack.sh) on one GPU, the same jobs each
# (scripts/repeat_jobs.sh BUILD_A $AB_JOBS): with AB_JOBS=c (the default) 24
# C jobs, softmax, layer_norm, add and matmul fp16 at the small preset, naive
# and fast, three copies each (batch_bench.sh's lib phase); with
# AB_JOBS=python 12 jobs of Triton kernels through Python (a torch import
# each), all with --lib-cache.
# Each build runs twice from its own cache: "fill" from an empty one (its
# library jobs timed until two agree) and then "warm" (every library time
# reused), in the order A fill, B fill, A warm, B warm, so that drift of the
# machine falls on both. Writes OUT/ab-bench.json (wall seconds, verdicts a
# minute, each job's wall, whether A's and B's verdicts agree, how far B's
# medians and E_lib are from A's) and the logs. AB_BATCH_A and AB_BATCH_B
# are further `kgate batch` options of each side (the same build twice with
# AB_BATCH_B="--jobs-per-gpu 2" measures that option).
#   scripts/ab_bench.sh OUT BUILD_A BUILD_B [CHECK OPTIONS...]
# (default check options: --timeout 20 --lib-cache --min-time 0.05; for
# AB_JOBS=python --timeout 120, for Triton's first compiles)
set -u
out=${1:?usage: scripts/ab_bench.sh OUT BUILD_A BUILD_B [CHECK OPTIONS...]}
a=${2:?build A}
b=${3:?build B}
shift 3
kind=${AB_JOBS:-c}
if [ "$kind" = python ]; then t=120; else t=20; fi
opts=${*:---timeout $t --lib-cache --min-time 0.05}
mkdir -p "$out"
m=$out/jobs-ab.jsonl
"$(dirname "$0")/repeat_jobs.sh" "$a" "$kind" >"$m" || exit 3
va=$("$a/kgate" version) vb=$("$b/kgate" version)
if [ "$va" = "$vb" ] && [ "${AB_BATCH_A:-}" = "${AB_BATCH_B:-}" ]; then
    echo "ab_bench: A and B are the same ($va) with the same batch options: nothing to compare" >&2
    exit 3
fi
echo "A: $va ${AB_BATCH_A:-}; B: $vb ${AB_BATCH_B:-}"
# both sides judge against the same roofs, measured once here when there are none
roofs_from=${XDG_CACHE_HOME:-$HOME/.cache}
if ! ls "$roofs_from"/kgate/roofs-*.json >/dev/null 2>&1; then
    XDG_CACHE_HOME=$out/xdg-roofs "$a/kgate" peaks >"$out/peaks.txt" 2>&1 || { echo "ab_bench: kgate peaks failed" >&2; exit 5; }
    roofs_from=$out/xdg-roofs
fi
for side in A B; do
    mkdir -p "$out/xdg-$side/kgate"
    cp "$roofs_from"/kgate/roofs-*.json "$out/xdg-$side/kgate/"
done
for step in A:fill B:fill A:warm B:warm; do
    side=${step%%:*} run=${step#*:}
    if [ "$side" = A ]; then k=$a/kgate bopts=${AB_BATCH_A:-}; else k=$b/kgate bopts=${AB_BATCH_B:-}; fi
    rm -f "$out/$side-$run.jsonl"
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086 # the options are words
    XDG_CACHE_HOME=$out/xdg-$side "$k" batch "$m" -o "$out/$side-$run.jsonl" --gpus 0 --job-timeout 300 $bopts -- $opts \
        >"$out/$side-$run.txt" 2>"$out/$side-$run.err"
    echo "$side $run: exit $? after $(echo "$(date +%s.%N) $t0" | awk '{printf "%.1f", $1 - $2}') s" |
        tee "$out/$side-$run.wall"
done
AB_JOBS=$kind AB_BATCH_A=${AB_BATCH_A:-} AB_BATCH_B=${AB_BATCH_B:-} python3 - "$out" "$a" "$b" "$opts" <<'EOF'
import json, os, statistics, subprocess, sys, datetime
out, a, b, opts = sys.argv[1:5]
def version(build):
    return subprocess.run([build + "/kgate", "version"], capture_output=True, text=True).stdout.strip()
runs = {}
for side in "AB":
    for run in ("fill", "warm"):
        name = side + "-" + run
        lines = [json.loads(x) for x in open(f"{out}/{name}.jsonl")]
        wall = float(open(f"{out}/{name}.wall").read().split()[-2])
        verdicts, medians, elib = {}, {}, {}
        for l in lines:
            for r in (l.get("check") or {}).get("results", []):
                verdicts[l["id"]] = r.get("verdict")
                s = r.get("summaries", {})
                if "time/gpu/median" in s:
                    medians[l["id"]] = s["time/gpu/median"]["value"]
                if "lib/efficiency" in s:
                    elib[l["id"]] = s["lib/efficiency"]["value"]
        lib_jobs = sum(1 for l in lines for r in (l.get("check") or {}).get("results", [])
                       if "lib/cache/age" not in r.get("summaries", {}))
        # where a job's wall goes: medians over the jobs of each phase kgate records
        phases = {}
        for k in ("list/warm", "list/wall", "lib/job/wall", "job/wall", "job/gpu_wait"):
            v = [r["summaries"][k]["value"] for l in lines for r in (l.get("check") or {}).get("results", [])[:1]
                 if k in r.get("summaries", {})]
            if v:
                phases[k] = {"median_s": round(statistics.median(v), 3), "jobs": len(v)}
        runs[name] = {"jobs": len(lines), "wall_s": wall, "verdicts": len(verdicts),
                      "verdicts_per_minute": round(60 * len(verdicts) / wall, 1) if wall else None,
                      "job_wall_s_median": round(statistics.median(l["wall_s"] for l in lines), 3) if lines else None,
                      "library_timed_by": lib_jobs, "phases": phases, "verdict_by_id": verdicts,
                      "median_by_id": medians, "e_lib_by_id": elib}
dev = {}
for l in open(f"{out}/A-warm.jsonl"):
    d = (json.loads(l).get("check") or {}).get("device") or {}
    dev = {"name": d.get("name"), "uuid": d.get("uuid"), "driver": d.get("driver")}
    break
same = all(runs["A-" + r]["verdict_by_id"] == runs["B-" + r]["verdict_by_id"] for r in ("fill", "warm"))
def rel(key):  # |B - A| / A over the warm runs' jobs: median and largest
    x, y = runs["A-warm"][key], runs["B-warm"][key]
    d = sorted(abs(y[i] - x[i]) / x[i] for i in x if i in y and x[i] > 0)
    return {"median": round(d[len(d) // 2], 4), "max": round(d[-1], 4), "jobs": len(d)} if d else None
doc = {"schema": "kgate.ab-bench/1",
       "command": "AB_JOBS=%s scripts/ab_bench.sh OUT %s %s %s" % (os.environ["AB_JOBS"], a, b, opts),
       "jobs_kind": os.environ["AB_JOBS"],
       "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
       "device": dev, "build_a": version(a), "build_b": version(b), "check_options": opts,
       "batch_options": {"A": os.environ.get("AB_BATCH_A", ""), "B": os.environ.get("AB_BATCH_B", "")},
       "same_verdicts": same, "median_rel_diff": rel("median_by_id"), "e_lib_rel_diff": rel("e_lib_by_id"),
       "warm_speedup_b_over_a": round(runs["A-warm"]["wall_s"] / runs["B-warm"]["wall_s"], 3),
       "fill_speedup_b_over_a": round(runs["A-fill"]["wall_s"] / runs["B-fill"]["wall_s"], 3),
       "runs": runs}
json.dump(doc, open(f"{out}/ab-bench.json", "w"), indent=1)
print(json.dumps({k: v for k, v in doc.items() if k != "runs"}, indent=1))
for k, v in runs.items():
    print(k, {x: y for x, y in v.items() if not x.endswith("_by_id")})
EOF

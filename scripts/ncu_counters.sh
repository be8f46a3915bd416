#!/bin/sh
# Cross-checks kgate's diagnosis counters (CUPTI Range Profiler, kgate check
# --diagnose) against Nsight Compute's for the same kernels, and runs kgate
# explain --from-ncu on ncu's CSV (the parser on real output).
#   scripts/ncu_counters.sh BUILD OUTDIR   -> OUTDIR/ncu-counters.json
# NCU_SIZE=large takes the large presets, whose working sets exceed the 60 MB
# L2, so that the two profilers' cache states between passes matter less
# (medium, the default, was the first comparison: DRAM bytes and hit rates
# differed by 5-50% there).
# ncu profiles the checked calls of a verify-only worker job (its trials:
# one uniform, the alt scalars, the operator's distributions) with the
# default metric set (kgate explain --rules prints it); rows are matched to
# kgate's kernels by mangled name, and each kernel's last row is compared,
# a warm call like kgate's, which profiles after timing (on the H200 the
# first row gave the same agreement). Percentages also get their
# difference in points. ncu leaves the caches alone between
# its passes (--cache-control none), as the Range Profiler's kernel replay
# does: kgate cannot flush between passes it does not see.
B=$1 OUT=$2
. "$(dirname "$0")/ncu_job.sh"
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
plug=$(cd "$(dirname "$B/libkgate_bundled.so")" && pwd)/libkgate_bundled.so
metrics=$("$B/kgate" explain --rules | sed -n 's/^counters (default): //p')
[ -n "$metrics" ] || { echo "no metric list from kgate explain --rules"; exit 1; }
rows=""
while read -r kernel op dtype shape extents; do
    tag=$kernel-$shape
    "$B/kgate" check "$plug:$kernel" --shape "$shape" --no-extra-shapes --diagnose --max-time 0.5 \
        --json "$OUT/dc-$tag.json" >"$OUT/dc-$tag.txt" 2>&1
    ncu_job "$plug" "$kernel" "$op" "$dtype" "$extents" "$metrics" "$OUT/nc-$tag.csv" /dev/null
    "$B/kgate" explain --from-ncu "$OUT/nc-$tag.csv" --op "$op" --dtype "$dtype" --shape "$shape" \
        >"$OUT/explain-ncu-$tag.txt" 2>&1
    echo "explain --from-ncu $tag: exit $?"
    rows="$rows $tag"
done <<LIST
$(if [ "${NCU_SIZE:-medium}" = large ]; then cat <<'L'
layer_norm_v1_bf16 layer_norm bf16 large 8192,8192
layer_norm_v2_bf16 layer_norm bf16 large 8192,8192
softmax_v2_fp16 softmax fp16 large 4096,32768
leaky_relu_v1_fp16 leaky_relu fp16 large 8192,8192
logsumexp_v1_fp32 logsumexp fp32 large 8192,16384
matrix_transpose_v1_fp16 matrix_transpose fp16 large 16384,16384
matmul_v3_fp16 matmul fp16 large 8192,8192,8192
L
else cat <<'L'
layer_norm_v1_bf16 layer_norm bf16 medium 4096,4096
layer_norm_v2_bf16 layer_norm bf16 medium 4096,4096
softmax_v2_fp16 softmax fp16 medium 4096,8192
leaky_relu_v1_fp16 leaky_relu fp16 medium 4096,4096
logsumexp_v1_fp32 logsumexp fp32 medium 4096,8192
matrix_transpose_v1_fp16 matrix_transpose fp16 medium 4096,4096
matmul_v2_fp16 matmul fp16 medium 4096,4096,4096
L
fi)
LIST
python3 - "$OUT" $rows <<'PY'
import csv, json, subprocess, sys, datetime

def base(name):
    """A kernel's name up to its parameter list: ncu's CSV has demangled names."""
    n = name[5:] if name.startswith("void ") else name
    depth = 0
    for i, ch in enumerate(n):
        depth += (ch == "<") - (ch == ">")
        if ch == "(" and depth == 0:
            return n[:i].strip()
    return n.strip()

def demangle(name):
    try:
        return subprocess.run(["c++filt", name], capture_output=True, text=True, timeout=10).stdout.strip() or name
    except OSError:
        return name
out, tags = sys.argv[1], sys.argv[2:]
allrows, within, total = [], 0, 0
for tag in tags:
    try:
        kg = json.load(open(f"{out}/dc-{tag}.json"))
        res = kg["results"][0]
        diag = res.get("diagnosis") or {"kernels": []}
        lines = [l for l in open(f"{out}/nc-{tag}.csv") if l.startswith('"')]
    except (OSError, ValueError, KeyError, IndexError) as e:
        print(f"{tag}: unreadable: {e}")
        continue
    rd = list(csv.reader(lines))
    head = rd[0]
    body = [r for r in rd[1:] if r and r[0].strip()]  # skip the units row
    name_col = head.index("Kernel Name")
    for k in diag["kernels"]:
        want = base(demangle(k["name"]))
        # the last of its rows: kgate profiles a call after timing (caches, TLBs and clocks warm);
        # ncu's first row is the process's first call of the kernel, cold
        mine = [r for r in body if r[name_col] == k["name"] or base(r[name_col]) == want]
        row = mine[-1] if mine else None
        if not row:
            print(f"{tag}: {k['name'][:60]}: not in ncu's CSV")
            continue
        for m, v in k["metrics"].items():
            if m not in head or v is None:
                continue
            s = row[head.index(m)].replace(",", "")
            try:
                nv = float(s)
            except ValueError:
                continue
            if m == "gpu__time_duration.sum":
                continue  # durations are compared by scripts/ncu_crosscheck.sh
            diff = (v - nv) / abs(nv) * 100 if nv else (0.0 if v == 0 else float("inf"))
            small = abs(nv) < 1e-9 and abs(v) < 1e-9
            # ncu prints few decimals ("0.07"): its value is known to half a unit of the last digit
            digits = len(s.split(".")[1]) if "." in s else 0
            ok = small or abs(diff) <= 5 or abs(v - nv) <= 0.5 * 10 ** -digits
            total += 1
            within += ok
            allrows.append({"case": tag, "kernel": k["name"][:80], "metric": m, "kgate": v, "ncu": nv,
                            "diff_pct": None if diff == float("inf") else diff, "within_5pct": ok,
                            "ncu_rows": len(mine)})
            if m.endswith(".pct"):
                allrows[-1]["diff_points"] = v - nv
    print(f"{tag}: compared {sum(1 for r in allrows if r['case'] == tag)} metrics")
for r in allrows:
    if not r["within_5pct"]:
        pts = f", {r['diff_points']:+.2f} points" if "diff_points" in r else ""
        print(f"  off: {r['case']} {r['metric']}: kgate {r['kgate']:.4g} ncu {r['ncu']:.4g} "
              f"({'inf' if r['diff_pct'] is None else format(r['diff_pct'], '+.1f') + '%'}{pts})")
print(f"counters within 5% of ncu: {within} of {total}")
json.dump({"schema": "kgate.ncu-counters/1", "commit": kg.get("commit") if tags else None,
           "device": kg.get("device") if tags else None,
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "command": "scripts/ncu_counters.sh build OUT (kgate check --diagnose vs ncu --metrics <default set> "
                      "--clock-control none --cache-control none --replay-mode kernel, a verify-only job's checked calls, "
                      "each kernel's last row)",
           "within_5pct": within, "compared": total, "rows": allrows}, open(f"{out}/ncu-counters.json", "w"), indent=1)
PY

#!/bin/sh
# Cross-checks kgate's median against Nsight Compute's gpu__time_duration for
# the same kernels: kgate check times each kernel; ncu profiles 30 launches
# of the same kernel in a worker (cold caches, clocks left alone).
#   scripts/ncu_crosscheck.sh BUILD OUTDIR   -> OUTDIR/ncu-crosscheck[-TAG].json
# Environment:
#   NCU_CACHE=all|none  ncu's --cache-control (default all: ncu flushes its
#                       caches before each kernel; with none the kernel sees
#                       what kgate's own flush, run before it, left)
#   NCU_LIST=FILE       the kernels, one per line as in the list below
#   NCU_TAG=TAG         names the output file
B=$1 OUT=$2
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
CACHE=${NCU_CACHE:-all}
TAG=${NCU_TAG:+-$NCU_TAG}
LIST=${NCU_LIST:-$OUT/ncu-list$TAG.txt}
[ -n "$NCU_LIST" ] || cat >"$LIST" <<'EOF2'
layer_norm_v2_bf16 layer_norm bf16 small 1024,1024 ^ln_v2_kernel$
softmax_v2_fp16 softmax fp16 small 1024,4096 ^sm_v2_kernel$
index_select_v2_fp16 index_select fp16 large 65536,2048,4096 ^gather_v2_vec$
layer_norm_v2_bf16 layer_norm bf16 large 8192,8192 ^ln_v2_kernel$
softmax_v2_fp16 softmax fp16 large 4096,32768 ^sm_v2_kernel$
matmul_v2_fp16 matmul fp16 large 8192,8192,8192 ^kernel$
EOF2
plug=$(cd "$(dirname "$B/libkgate_bundled.so")" && pwd)/libkgate_bundled.so
rows=""
while read -r kernel op dtype shape extents regex; do
    tag=$kernel-$(echo "$shape" | tr , x)$TAG
    "$B/kgate" check "$plug:$kernel" --shape "$shape" --no-extra-shapes --json "$OUT/xc-$tag.json" >/dev/null 2>&1
    # the worker, run directly under ncu: one job (docs/worker.md) on stdin
    printf '{"proto":"kgate.worker/2","mode":"kernel","plugin":"%s","kernel":"%s","op":"%s","dtype":"%s","shape":[%s],"trials":1,"edge":false,"nonce":"x","stop":{"max_time":2,"min_time":0.05}}' \
        "$plug" "$kernel" "$op" "$dtype" "$extents" |
        "$NCU" --csv --page raw --clock-control none --cache-control $CACHE --replay-mode kernel \
            --kernel-name-base function -k "regex:$regex" -s 6 -c 30 \
            --metrics gpu__time_duration.sum --disable-extra-suffixes --log-file "$OUT/ncu-$tag.csv" \
            "$B/kgate" __worker --fd 3 3>/dev/null >/dev/null 2>&1
    rows="$rows $tag"
done <"$LIST"
python3 - "$OUT" "$CACHE" "$TAG" $rows <<'PY'
import csv, json, statistics, sys, datetime
out, cache, tag, kernels = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
rows = []
for k in kernels:
    kg = json.load(open(f"{out}/xc-{k}.json"))
    res = kg["results"][0]
    t_kgate = res["summaries"]["time/gpu/median"]["value"]
    lines = [l for l in open(f"{out}/ncu-{k}.csv") if l.startswith('"')]
    rd = list(csv.reader(lines))
    col = rd[0].index("gpu__time_duration.sum")
    vals = [float(r[col].replace(",", "")) for r in rd[2:] if r[col].replace(",", "").replace(".", "").isdigit()]
    t_ncu = statistics.median(vals) * 1e-9
    rows.append({"kernel": k, "shape": res["shape"], "kgate_median_s": t_kgate,
                 "ncu_median_s": t_ncu, "ncu_launches": len(vals),
                 "diff_pct": 100 * (t_kgate - t_ncu) / t_ncu})
    print(f"{k:22s} {res['shape']:16s} kgate {t_kgate*1e6:10.2f} us  ncu {t_ncu*1e6:10.2f} us "
          f"({len(vals)} launches)  diff {rows[-1]['diff_pct']:+.2f}%")
json.dump({"schema": "kgate.ncu-crosscheck/1", "commit": kg["commit"], "device": kg["device"],
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "command": f"NCU_CACHE={cache} scripts/ncu_crosscheck.sh build OUT (ncu --clock-control none --cache-control {cache}, "
                      "gpu__time_duration.sum, 30 launches; kgate check default cold timing)",
           "rows": rows}, open(f"{out}/ncu-crosscheck{tag}.json", "w"), indent=1)
PY

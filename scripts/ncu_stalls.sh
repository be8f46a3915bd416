#!/bin/sh
# Why kgate's stall ratios read lower than ncu's for fast memory-bound
# kernels (docs/diagnosis.md, Validation): the same kernels' stall counters
# from kgate with three metric sets (default 3 passes, the 2-pass set
# without SASS-patched metrics, extended 12 passes) and from ncu with the
# default set and with the stall counters alone (one pass). If kgate's sets
# agree with each other and ncu's two disagree, pass placement is ncu's
# side; if all of kgate's differ from both of ncu's, it is not placement.
#   scripts/ncu_stalls.sh BUILD OUTDIR   -> OUTDIR/ncu-stalls.json
B=$1 OUT=$2
. "$(dirname "$0")/ncu_job.sh"
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
plug=$(cd "$(dirname "$B/libkgate_bundled.so")" && pwd)/libkgate_bundled.so
all=$("$B/kgate" explain --rules | sed -n 's/^counters (default): //p')
stalls=smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warp_latency_per_inst_issued.ratio,smsp__issue_active.avg.per_cycle_active
tags="" bad=0
while read -r kernel op dtype shape extents frag; do
    for set in default unpatched extended; do
        case $set in
        default) flags=--diagnose ;;
        unpatched) flags="--diagnose --diagnose-patched-max 0" ;;
        extended) flags=--diagnose=extended ;;
        esac
        "$B/kgate" check "$plug:$kernel" --shape "$shape" --no-extra-shapes $flags --max-time 0.5 \
            --json "$OUT/st-$kernel-$set.json" >"$OUT/st-$kernel-$set.txt" 2>&1
        rc=$?
        echo "$kernel $set: exit $rc"
        [ $rc -le 1 ] || bad=1 # 0 OK, 1 SLOW: judged; anything else is a failed run
    done
    for set in default stalls; do
        if [ $set = default ]; then m=$all; else m=$stalls; fi
        ncu_job "$plug" "$kernel" "$op" "$dtype" "$extents" "$m" "$OUT/st-$kernel-ncu-$set.csv" \
            "$OUT/st-$kernel-ncu-$set.err"
        rc=$?
        echo "$kernel ncu-$set: exit $rc"
        [ $rc -eq 0 ] || bad=1
    done
    tags="$tags $kernel:$frag"
done <<'LIST'
layer_norm_v2_bf16 layer_norm bf16 large 8192,8192 ln_v2_kernel
softmax_v2_fp16 softmax fp16 large 4096,32768 sm_v2_kernel
LIST
python3 - "$OUT" "$stalls" $tags <<'PY'
import csv, json, sys, datetime
out, stalls, tags = sys.argv[1], sys.argv[2].split(","), sys.argv[3:]
res = {"schema": "kgate.ncu-stalls/1", "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
       "command": "scripts/ncu_stalls.sh BUILD OUT", "kernels": {}}
for kf in tags:
    k, frag = kf.split(":")
    one = {}
    for s in ("default", "unpatched", "extended"):
        try:
            r = json.load(open(f"{out}/st-{k}-{s}.json"))["results"][0]
            d = r["diagnosis"]
            res.setdefault("device", json.load(open(f"{out}/st-{k}-{s}.json")).get("device"))
            res.setdefault("commit", json.load(open(f"{out}/st-{k}-{s}.json")).get("commit"))
            kk = [x for x in d["kernels"] if frag in x["name"]]
            if not kk:
                raise ValueError(f"no kernel of kgate's names {frag}")
            kk = kk[0]
            one[f"kgate-{s}"] = {"passes": d["passes"], **{m: kk["metrics"].get(m) for m in stalls}}
        except Exception as e:
            one[f"kgate-{s}"] = {"error": str(e)[:200]}
    for s in ("default", "stalls"):
        try:
            lines = [l for l in open(f"{out}/st-{k}-ncu-{s}.csv") if not l.startswith("==")]
            rows = list(csv.reader(lines))
            hdr, data = rows[0], rows[2:]
            main = [r for r in data if frag in r[hdr.index("Kernel Name")]]
            if not main:
                raise ValueError(f"no row of ncu's names {frag}")
            last = main[-1]
            one[f"ncu-{s}"] = {"rows": len(data), **{m: float(last[hdr.index(m)].replace(",", "")) if m in hdr else None for m in stalls}}
        except Exception as e:
            one[f"ncu-{s}"] = {"error": str(e)[:200]}
    res["kernels"][k] = one
json.dump(res, open(f"{out}/ncu-stalls.json", "w"), indent=1)
for k, one in res["kernels"].items():
    print(k)
    for s, v in one.items():
        print(f"  {s:17s} " + " ".join(f"{x:.3f}" if isinstance(x, float) else str(x) for x in v.values()))
sys.exit(1 if any("error" in v for one in res["kernels"].values() for v in one.values()) else 0)
PY
py=$?
[ $bad -eq 0 ] && [ $py -eq 0 ]

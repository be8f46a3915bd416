#!/bin/sh
# What listing a GPU's compute processes through NVML costs the timing of
# kernels on it: kgate's watch of other processes does it before, about
# every 0.05 s during (0.5 s when this script was written), and after each
# job. The same 24 jobs (repeat_jobs.sh), with --lib-cache filled first, are
# judged while a second process lists GPU 0's compute processes at 0 Hz, at
# 2 Hz and at 200 Hz (ten times the watch's rate), in rounds none 2 200
# none 2 200. Writes
# OUT/watch-bench.json: each round's per-job medians, the median and largest
# |difference| of each rate's rounds against the "none" rounds, beside the two
# "none" rounds against each other (the noise floor), whether every round gave
# the same verdicts, and the lister's calls and its time per call.
#   scripts/watch_bench.sh OUT BUILD [CHECK OPTIONS...]
# (default check options: --timeout 20 --lib-cache --min-time 0.05)
set -u
out=${1:?usage: scripts/watch_bench.sh OUT BUILD [CHECK OPTIONS...]}
b=${2:?build}
shift 2
opts=${*:---timeout 20 --lib-cache --min-time 0.05}
mkdir -p "$out"
m=$out/jobs-watch.jsonl
"$(dirname "$0")/repeat_jobs.sh" "$b" >"$m"
export XDG_CACHE_HOME="$out/xdg"
# the lister: RATE Hz (0: none) until SIGTERM, then "calls seconds_in_calls" to its file
lister() { # lister RATE FILE; its pid in $lister_pid
    python3 - "$1" "$2" >"$2.log" 2>&1 <<'EOF' &
import ctypes, signal, sys, time
rate, path = float(sys.argv[1]), sys.argv[2]
nvml = ctypes.CDLL("libnvidia-ml.so.1")
class Info(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint), ("mem", ctypes.c_ulonglong), ("gi", ctypes.c_uint), ("ci", ctypes.c_uint)]
def ok(rc, what):
    if rc != 0:
        sys.exit("watch_bench lister: %s failed: NVML error %d" % (what, rc))
ok(nvml.nvmlInit_v2(), "nvmlInit_v2")
dev = ctypes.c_void_p()
ok(nvml.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(dev)), "nvmlDeviceGetHandleByIndex_v2")
calls, spent, stop = 0, 0.0, False
def term(*_):
    global stop
    stop = True
signal.signal(signal.SIGTERM, term)
buf = (Info * 64)()
while not stop:
    if rate > 0:
        n = ctypes.c_uint(64)
        t = time.perf_counter()
        ok(nvml.nvmlDeviceGetComputeRunningProcesses_v3(dev, ctypes.byref(n), buf), "nvmlDeviceGetComputeRunningProcesses_v3")
        spent += time.perf_counter() - t
        calls += 1
    time.sleep(1 / rate if rate > 0 else 0.1)
open(path, "w").write("%d %.6f\n" % (calls, spent))
EOF
    lister_pid=$!
}
# shellcheck disable=SC2086 # the options are words
"$b/kgate" batch "$m" -o "$out/fill.jsonl" --gpus 0 --job-timeout 300 -- $opts >"$out/fill.txt" 2>&1
echo "fill: exit $?"
i=0
for rate in 0 2 200 0 2 200; do
    i=$((i + 1))
    name=r$i-$rate
    lister "$rate" "$out/$name.lister"
    sleep 1
    kill -0 "$lister_pid" 2>/dev/null || { echo "watch_bench: the NVML lister stopped: $(tail -1 "$out/$name.lister.log")" >&2; exit 5; }
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086 # the options are words
    "$b/kgate" batch "$m" -o "$out/$name.jsonl" --gpus 0 --job-timeout 300 -- $opts >"$out/$name.txt" 2>&1
    rc=$?
    echo "$(date +%s.%N) $t0" | awk '{printf "%.1f\n", $1 - $2}' >"$out/$name.wall"
    kill "$lister_pid"
    wait "$lister_pid"
    echo "round $i at $rate Hz: exit $rc, lister $(cat "$out/$name.lister" 2>/dev/null)"
done
python3 - "$out" "$b" "$opts" <<'EOF'
import datetime, json, statistics, subprocess, sys
out, b, opts = sys.argv[1:4]
rounds = []
for i, rate in enumerate([0, 2, 200, 0, 2, 200], 1):
    name = "r%d-%d" % (i, rate)
    med, verdicts, dev = {}, {}, {}
    for line in open("%s/%s.jsonl" % (out, name)):
        l = json.loads(line)
        c = l.get("check") or {}
        dev = dev or {k: (c.get("device") or {}).get(k) for k in ("name", "uuid", "driver")}
        for r in c.get("results", []):
            verdicts[l["id"]] = r.get("verdict")
            s = r.get("summaries", {})
            if "time/gpu/median" in s:
                med[l["id"]] = s["time/gpu/median"]["value"]
    try:
        calls, spent = open("%s/%s.lister" % (out, name)).read().split()
        lister = {"calls": int(calls), "us_per_call": round(1e6 * float(spent) / int(calls), 1) if int(calls) else None}
    except (OSError, ValueError):
        lister = None
    rounds.append({"name": name, "rate_hz": rate, "wall_s": float(open("%s/%s.wall" % (out, name)).read()),
                   "lister": lister, "median_by_id": med, "verdict_by_id": verdicts, "device": dev})
def diff(x, y):  # |y - x| / x over the jobs of both: median and largest
    d = sorted(abs(y[k] - x[k]) / x[k] for k in x if k in y and x[k] > 0)
    return {"median": round(d[len(d) // 2], 4), "max": round(d[-1], 4), "jobs": len(d)} if d else None
none = [r for r in rounds if r["rate_hz"] == 0]
against = {}
for rate in (2, 200):
    mine = [r for r in rounds if r["rate_hz"] == rate]
    against["%d_hz" % rate] = [diff(none[j]["median_by_id"], mine[j]["median_by_id"]) for j in range(2)]
doc = {"schema": "kgate.watch-bench/1",
       "command": "scripts/watch_bench.sh OUT %s %s" % (b, opts),
       "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
       "build": subprocess.run([b + "/kgate", "version"], capture_output=True, text=True).stdout.strip(),
       "device": rounds[0]["device"], "check_options": opts,
       "same_verdicts": all(r["verdict_by_id"] == rounds[0]["verdict_by_id"] for r in rounds),
       "noise_none_vs_none": diff(none[0]["median_by_id"], none[1]["median_by_id"]),
       "against_none": against,
       "lister": {r["name"]: r["lister"] for r in rounds},
       "rounds": rounds}
json.dump(doc, open(out + "/watch-bench.json", "w"), indent=1)
print(json.dumps({k: v for k, v in doc.items() if k != "rounds"}, indent=1))
EOF

#!/bin/sh
# Other processes on the GPU (gpu/others, flag shared-gpu; supervise/others.h):
# while a process of the test's own holds a CUDA context and 1 GiB on the
# GPU, a check is flagged shared-gpu, counts that process and its memory, is
# judged without the library times measured beside it (no-baseline), and
# --lib-cache keeps none of them; once it is gone, the same checks have
# gpu/others 0 and no flag, --lib-cache keeps the library's times, and a
# Python candidate (the fork server, a Python worker, its library paths in
# torch) is not flagged either, and two checks at once take turns on the
# GPU lock without seeing each other. Needs torch (KGATE_PYTHON or python3).
. "$(dirname "$0")/common.sh"
src=$(cd "$(dirname "$0")/../.." && pwd)
py=${KGATE_PYTHON:-python3}
if ! "$py" -c "import torch" >/dev/null 2>&1; then
    echo "SKIP: $py has no torch for the other process"
    exit 77
fi
export KGATE_PYTHON=$py
t=$build/tests/others
rm -rf "$t" && mkdir -p "$t" || exit 1
export XDG_CACHE_HOME=$t/xdg
k="$build/libkgate_bundled.so:add_v2_fp16"
kg() { timeout -k 5 240 "$kgate" "$@"; }
"$py" -c "
import sys, time, torch
x = torch.empty(1 << 28, device='cuda')  # 1 GiB
torch.cuda.synchronize()
open(sys.argv[1], 'w').close()
time.sleep(300)
" "$t/ready" &
bg=$!
i=0
while [ ! -e "$t/ready" ] && [ $i -lt 120 ]; do sleep 0.5; i=$((i + 1)); done
expect "the other process holds its context" 1 "$([ -e "$t/ready" ] && echo 1 || echo 0)"
kg check "$k" --sizes small --max-time 1 --json "$t/shared.json" >"$t/shared.txt" 2>&1
kg check "$k" --sizes small --max-time 1 --lib-cache --json "$t/cached-shared.json" >"$t/cached-shared.txt" 2>&1
kill "$bg"
wait "$bg" 2>/dev/null
# until the driver no longer lists it (its teardown may lag its exit)
i=0
while nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null | grep -qx "$bg" && [ $i -lt 100 ]; do
    sleep 0.1
    i=$((i + 1))
done
lines() { cat "$t"/xdg/kgate/libtimes-*.jsonl 2>/dev/null | wc -l; }
expect "--lib-cache kept no library time measured beside it" 0 "$(lines)"
kg check "$k" --sizes small --max-time 1 --json "$t/alone.json" >"$t/alone.txt" 2>&1
kg check "$k" --sizes small --max-time 1 --lib-cache --json "$t/cached-alone.json" >"$t/cached-alone.txt" 2>&1
expect "--lib-cache kept the library's times once alone" 1 "$([ "$(lines)" -ge 1 ] && echo 1 || echo 0)"
kg check "$src/tests/python/problem_cand.py" --max-time 1 --json "$t/python.json" >"$t/python.txt" 2>&1
# two checks at once on the GPU take turns on its lock: neither sees the
# other as another process, and one of them waited for its turn
kg check "$k" --sizes small --max-time 1 --json "$t/twin1.json" >"$t/twin1.txt" 2>&1 &
kg check "$build/libkgate_bundled.so:add_v1_fp16" --sizes small --max-time 1 --json "$t/twin2.json" >"$t/twin2.txt" 2>&1
wait
expect "two checks at once: both judged, neither flagged, one waited for the GPU" "2 0 1" "$(python3 -c "
import json, sys
rs = [json.load(open(p))['results'][0] for p in sys.argv[1:]]
print(sum(r['verdict'] in ('OK', 'SLOW') for r in rs), sum('shared-gpu' in r['flags'] for r in rs),
      int(any(r['summaries'].get('job/gpu_wait', {}).get('value', 0) > 0 for r in rs)))
" "$t/twin1.json" "$t/twin2.json" 2>/dev/null || echo "no results")"
get() { # get JSON -> "verdict others mem_GiB shared no-baseline lib-time" of its first result
    python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))['results'][0]
s = r['summaries']
o = s.get('gpu/others', {}).get('value')
m = s.get('gpu/others/mem', {}).get('value', 0) / 2**30
# 1 GiB and its context; 0 where NVML does not say a process's memory
print(r['verdict'], 'none' if o is None else int(o), int(1 <= m < 3 or m == 0), int('shared-gpu' in r['flags']),
      int('no-baseline' in r['flags']), int('lib/time/median' in s))
" "$1" 2>/dev/null || echo "no results"
}
set -- $(get "$t/shared.json")
expect "beside another process: judged" 1 "$(echo "$1" | grep -cE '^(OK|SLOW)$')"
expect "beside another process: one other process seen" 1 "$2"
expect "beside another process: its memory, 1 to 3 GiB (1 GiB and its context), or not said" 1 "$3"
expect "beside another process: flagged shared-gpu" 1 "$4"
expect "beside another process: judged without the library (no-baseline)" "1 0" "$5 $6"
expect "the text says it" 1 "$(grep -c 'shared-gpu' "$t/shared.txt" | awk '{print ($1 > 0)}')"
set -- $(get "$t/cached-shared.json")
expect "beside another process, with --lib-cache: flagged too" "1 1" "$2 $4"
set -- $(get "$t/alone.json")
expect "alone: judged" 1 "$(echo "$1" | grep -cE '^(OK|SLOW)$')"
expect "alone: no other process, not flagged, the library used" "0 0 0 1" "$2 $4 $5 $6"
expect "a Python candidate alone: every result judged, no other process, none flagged" "2 0 0" "$(python3 -c "
import json, sys
rs = json.load(open(sys.argv[1]))['results']
print(sum(r['verdict'] in ('OK', 'SLOW', 'INCORRECT') for r in rs),
      max(int(r['summaries'].get('gpu/others', {}).get('value', -1)) for r in rs if r['verdict'] in ('OK', 'SLOW')),
      sum('shared-gpu' in r['flags'] for r in rs))
" "$t/python.json" 2>/dev/null || echo "no results")"
finish

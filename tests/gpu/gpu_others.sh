#!/bin/sh
# Other processes on the GPU (gpu/others, flag shared-gpu; core/others.h):
# while a process of the test's own holds a CUDA context and 1 GiB on the
# GPU, a check is flagged shared-gpu and counts that process and its memory,
# and --lib-cache keeps no library time measured beside it; once it is gone,
# the same check has gpu/others 0 and no flag. Needs torch for the other
# process (KGATE_PYTHON or python3); skips without it.
. "$(dirname "$0")/common.sh"
py=${KGATE_PYTHON:-python3}
if ! "$py" -c "import torch" >/dev/null 2>&1; then
    echo "SKIP: $py has no torch for the other process"
    exit 77
fi
t=$build/tests/others
rm -rf "$t" && mkdir -p "$t" || exit 1
export XDG_CACHE_HOME=$t/xdg
k="$build/libkgate_bundled.so:add_v2_fp16"
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
"$kgate" check "$k" --sizes small --max-time 1 --json "$t/shared.json" >"$t/shared.txt" 2>&1
"$kgate" check "$k" --sizes small --max-time 1 --lib-cache --json "$t/cached1.json" >"$t/cached1.txt" 2>&1
"$kgate" check "$k" --sizes small --max-time 1 --lib-cache --json "$t/cached2.json" >"$t/cached2.txt" 2>&1
kill "$bg"
wait "$bg" 2>/dev/null
"$kgate" check "$k" --sizes small --max-time 1 --json "$t/alone.json" >"$t/alone.txt" 2>&1
get() { # get JSON -> "verdict others mem_GiB flagged"
    python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))['results'][0]
s = r['summaries']
o = s.get('gpu/others', {}).get('value')
m = s.get('gpu/others/mem', {}).get('value', 0)
print(r['verdict'], 'none' if o is None else int(o), int(m / 2**30 + 0.5), int('shared-gpu' in r['flags']))
" "$1" 2>/dev/null || echo "no results"
}
set -- $(get "$t/shared.json")
expect "beside another process: judged" 1 "$(echo "$1" | grep -cE '^(OK|SLOW)$')"
expect "beside another process: one other process seen" 1 "$2"
expect "beside another process: its memory (GiB, rounded)" 1 "$3"
expect "beside another process: flagged shared-gpu" 1 "$4"
expect "the text says it" 1 "$(grep -c 'shared-gpu' "$t/shared.txt" | awk '{print ($1 > 0)}')"
expect "--lib-cache kept no library time measured beside it" 0 \
    "$(cat "$t"/xdg/kgate/libtimes-*.jsonl 2>/dev/null | wc -l)"
expect "--lib-cache: the second check timed the library again" 1 \
    "$(python3 -c "import json; print(int('lib/cache/age' not in json.load(open('$t/cached2.json'))['results'][0]['summaries']))")"
set -- $(get "$t/alone.json")
expect "alone: judged" 1 "$(echo "$1" | grep -cE '^(OK|SLOW)$')"
expect "alone: no other process" 0 "$2"
expect "alone: not flagged" 0 "$4"
finish

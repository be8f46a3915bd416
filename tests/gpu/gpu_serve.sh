#!/bin/sh
# kgate serve on a GPU (docs/serve.md): a scripted loop drives layer_norm
# fp16 at the small preset through the service, as an optimizer would: the
# naive variant, the fast one, a wrong one (the adversarial set's
# stale_output, a softmax, where built) and the naive one again. Each answer's
# verdict equals a plain kgate check's; the warm requests' wall is printed
# (serve-walls.txt) beside the plain checks', as a benchmark, not a test;
# kgate check --server gives the same verdict; kgate trajectory reads the
# answers in order.
. "$(dirname "$0")/common.sh"
t=$build/tests/serve-gpu
rm -rf "$t" && mkdir -p "$t/cache" || exit 1
export XDG_CACHE_HOME="$t/cache"
b=$build/libkgate_bundled.so
adv=$build/tests/adversarial/libkgate_adversarial.so
common='"--roof", "datasheet", "--max-time", "1", "--no-extra-shapes"'
wall() { python3 -c "import time; print(f'{time.time():.3f}')"; }
verdict_of() { python3 -c "import json; print(json.loads(open('$1').readlines()[$2])['check']['results'][0]['verdict'])"; }
req() { # req ID KERNEL [CANDIDATE OP]: a manifest line at fp16 small (default: bundled layer_norm)
    printf '{"id":"%s","candidate":"%s","kernel":"%s","op":"%s","dtype":"fp16","shape":"small","options":[%s]}\n' \
        "$1" "${3:-$b}" "$2" "${4:-layer_norm}" "$common"
}
{
    req it-1 layer_norm_v1_fp16
    req it-2 layer_norm_v2_fp16
    [ -f "$adv" ] && req it-3 stale_output "$adv" softmax
    req it-4 layer_norm_v1_fp16
} >"$t/requests.jsonl"
t0=$(wall)
"$kgate" serve --stdio <"$t/requests.jsonl" >"$t/answers.jsonl" 2>"$t/serve.txt"
expect "serve: exit at the end of the requests" 0 "$?"
t1=$(wall)
nreq=$(wc -l <"$t/requests.jsonl" | tr -d ' ')
expect "serve: an answer a request" "$nreq" "$(wc -l <"$t/answers.jsonl" | tr -d ' ')"
expect "serve: the naive variant" SLOW "$(verdict_of "$t/answers.jsonl" 0)"
expect "serve: the fast variant" OK "$(verdict_of "$t/answers.jsonl" 1)"
[ -f "$adv" ] && expect "serve: a stale output" INCORRECT "$(verdict_of "$t/answers.jsonl" 2)"
expect "serve: the naive variant again" SLOW "$(verdict_of "$t/answers.jsonl" $((nreq - 1)))"
# the same kernels through plain kgate check, for the verdicts and the walls
p0=$(wall)
for k in layer_norm_v1_fp16 layer_norm_v2_fp16; do
    "$kgate" check "$b:$k" --shape small --roof datasheet --max-time 1 --no-extra-shapes --json "$t/plain-$k.json" \
        >/dev/null 2>&1
done
p1=$(wall)
expect "plain check: the same verdicts" "SLOW OK" \
    "$(verdict "$t/plain-layer_norm_v1_fp16.json" layer_norm_v1_fp16 '') $(verdict "$t/plain-layer_norm_v2_fp16.json" layer_norm_v2_fp16 '')"
python3 - "$t/answers.jsonl" "$t0" "$t1" "$p0" "$p1" >"$t/serve-walls.txt" <<'PY'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
t0, t1, p0, p1 = map(float, sys.argv[2:])
print("request walls (s):", " ".join(f"{x['id']}={x['wall_s']:.2f}" for x in a))
print(f"service: {len(a)} requests in {t1 - t0:.2f} s; plain kgate check: 2 in {p1 - p0:.2f} s")
PY
cat "$t/serve-walls.txt"
# kgate check --server against a socket service
sock=$t/s.sock
"$kgate" serve --socket "$sock" --idle-timeout 60 2>"$t/sock.txt" &
pid=$!
for _ in $(seq 1 100); do [ -S "$sock" ] && break; sleep 0.1; done
"$kgate" check "$b:layer_norm_v2_fp16" --shape small --roof datasheet --max-time 1 --no-extra-shapes \
    --server "$sock" --json "$t/via.json" >/dev/null 2>&1
expect "check --server: exit and verdict" "0 OK" "$? $(verdict "$t/via.json" layer_norm_v2_fp16 '')"
kill -TERM $pid
wait $pid
"$kgate" trajectory "$t/answers.jsonl" >"$t/trajectory.txt" 2>&1
expect "trajectory: the answers in order" "it-1 it-2" "$(awk '$1 ~ /^[12]$/ {print $2}' "$t/trajectory.txt" | tr '\n' ' ' | sed 's/ $//')"
finish

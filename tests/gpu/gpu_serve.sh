#!/bin/sh
# kgate serve on a GPU (docs/serve.md): a scripted loop drives layer_norm
# fp16 at the small preset through the service, as an optimizer would: the
# naive variant, the fast one, a wrong one (the adversarial set's
# stale_output, a softmax, where built) and the naive one again. Each answer's
# verdict equals a plain kgate check's; the warm requests' wall is printed
# (serve-walls.txt) beside the plain checks', as a benchmark, not a test;
# kgate check --server gives the same verdict; kgate trajectory reads the
# answers in order. Each kernel's result is streamed before its answer, the
# same as the answer's; a request of many kernels cancelled after its first
# one answers at once (exit 7) with every result it streamed, and the
# service goes on.
. "$(dirname "$0")/common.sh"
t=$build/tests/serve-gpu
rm -rf "$t" && mkdir -p "$t/cache" || exit 1
export XDG_CACHE_HOME="$t/cache"
b=$build/libkgate_bundled.so
adv=$build/tests/adversarial/libkgate_adversarial.so
common='"--roof", "datasheet", "--max-time", "1", "--no-extra-shapes"'
wall() { python3 -c "import time; print(f'{time.time():.3f}')"; }
# the verdict of answer N (0-based; progress lines left out)
verdict_of() { python3 -c "import json; a=[d for d in map(json.loads, open('$1')) if 'event' not in d]; print(a[$2]['check']['results'][0]['verdict'])"; }
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
expect "serve: an answer a request" "$nreq" \
    "$(python3 -c "import json,sys; print(sum('event' not in d for d in map(json.loads, open(sys.argv[1]))))" "$t/answers.jsonl")"
expect "serve: each result streamed before its answer, as in it" True "$(python3 - "$t/answers.jsonl" <<'PY'
import json, sys
ev, ok = [], True
for d in map(json.loads, open(sys.argv[1])):
    if "event" in d:
        ev.append(d["result"])
    else:
        ok = ok and ev == d.get("check", {}).get("results")
        ev = []
print(ok and not ev)
PY
)"
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
a = [d for d in map(json.loads, open(sys.argv[1])) if "event" not in d]
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
# a request of many kernels (relu at every preset), cancelled once its
# first result is streamed: answered within seconds, exit 7, with exactly
# the results it streamed; the next request is judged as before
python3 - "$kgate" "$b" >"$t/cancel.txt" 2>"$t/cancel-serve.txt" <<'PY'
import json, os, select, subprocess, sys, time
p = subprocess.Popen([sys.argv[1], "serve", "--stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
got = b""
def send(o):
    p.stdin.write((json.dumps(o) + "\n").encode())
    p.stdin.flush()
def line(wait=300):
    global got
    end = time.time() + wait
    while b"\n" not in got:
        if time.time() > end or not select.select([p.stdout], [], [], max(0, end - time.time()))[0]:
            return None
        chunk = os.read(p.stdout.fileno(), 1 << 20)
        if not chunk:
            return None
        got += chunk
    l, got = got.split(b"\n", 1)
    return json.loads(l)
opts = ["--roof", "datasheet", "--max-time", "1", "--no-extra-shapes", "--sizes", "all"]
send({"id": "many", "candidate": sys.argv[2], "op": "relu", "options": opts})
first = line()
streamed = [first["result"]] if first and "event" in first else []
t0 = time.time()
send({"cancel": "many"})
while True:
    a = line(60)
    if a is None or "event" not in a:
        break
    streamed.append(a["result"])
took = time.time() - t0
res = a["check"]["results"] if a and "check" in a else []
print("exit|%s" % (a and a.get("exit")))
print("error|%s" % (a and a.get("error")))
print("fast|%s" % (took < 20))
print("kept|%s" % (len(res) >= 1 and res == streamed))
print("partial|%s" % (0 < len(res) < 12))
send({"id": "after", "candidate": sys.argv[2], "kernel": "layer_norm_v2_fp16", "op": "layer_norm",
      "dtype": "fp16", "shape": "small", "options": opts[:5]})
while True:
    a = line()
    if a is None or "event" not in a:
        break
print("after|%s" % (a and a["check"]["results"][0]["verdict"]))
p.stdin.close()
print("end|%s" % p.wait(timeout=120))
PY
cval() { sed -n "s/^$1|//p" "$t/cancel.txt"; }
expect "cancel: the request's answer" "7 cancelled: the client asked" "$(cval exit) $(cval error)"
expect "cancel: answered within 20 s of the cancel" True "$(cval fast)"
expect "cancel: the answer keeps every result streamed, and only those" True "$(cval kept)"
expect "cancel: the rest was not judged" True "$(cval partial)"
expect "cancel: the service goes on, the same verdict" "OK 0" "$(cval after) $(cval end)"
"$kgate" trajectory "$t/answers.jsonl" >"$t/trajectory.txt" 2>&1
expect "trajectory: the answers in order" "it-1 it-2" "$(awk '$1 ~ /^[12]$/ {print $2}' "$t/trajectory.txt" | tr '\n' ' ' | sed 's/ $//')"
finish

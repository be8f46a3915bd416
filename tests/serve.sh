#!/bin/sh
# kgate serve on the CPU, with tests/fake_check.sh standing in for each
# request's `kgate check`: requests answered in order over --stdio, each
# kernel's result streamed before its answer, bad ones answered with their
# error while the service goes on; over a socket of mode 0600 whose second
# service is refused; the idle timeout; SIGTERM during a request (its
# answer says stopped, exit 7); a running and a queued request cancelled, a
# cancel of no request, and a client that leaves mid-request.
#   serve.sh KGATE REPO
kgate=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") src=$(cd "$2" && pwd)
t=$(mktemp -d)
trap 'kill $pid 2>/dev/null; rm -rf "$t"' EXIT
pid=
fails=0 n=0
expect() { n=$((n + 1)); if [ "$2" = "$3" ]; then echo "ok: $1 = $3"; else echo "FAIL: $1 = $3, want $2"; fails=$((fails + 1)); fi; }
export KG_BATCH_RUNNER="$src/tests/fake_check.sh"
cd "$t" || exit 1
: >a.so
: >c_slow.so
: >c_wrong.so
: >c_multi.so
: >c_multi_sleepy.so
: >c_badevents.so
# the answers' ids and exit codes, "ID:EXIT" each (progress lines left out)
answers() { python3 -c "import json,sys; print(' '.join('%s:%s' % (d['id'], d['exit']) for d in map(json.loads, open(sys.argv[1])) if 'event' not in d))" "$1"; }
# every line in order: an answer as ID:EXIT, a progress line as ID:KERNEL
lines() { python3 -c "import json,sys; print(' '.join('%s:%s' % (d['id'], d['result']['kernel'] if 'event' in d else d['exit']) for d in map(json.loads, open(sys.argv[1]))))" "$1"; }

# 1. --stdio: each request answered in order, a bad one with its error
{
    echo '{"id":"r1","candidate":"a.so","op":"relu","shape":"small"}'
    echo '{"id":"r2","candidate":"c_slow.so"}'
    echo 'not json'
    echo '{"id":"r4"}'
    echo '{"id":"r5","candidate":"a.so","gpu":3}'
    printf '\n'
    echo '{"id":"r6","candidate":"c_wrong.so"}'
    echo '{"id":"m","candidate":"c_multi.so"}'
    echo '{"id":"b","candidate":"c_badevents.so"}'
} >req.jsonl
KG_FAKE_LOG=$t/log1 "$kgate" serve --stdio <req.jsonl >ans.jsonl 2>err1.txt
expect "stdio: exit at the end of its input" 0 "$?"
expect "stdio: one answer a request, in order, with each check's exit" "r1:0 r2:1 None:3 None:3 r5:3 r6:2 m:0 b:0" "$(answers ans.jsonl)"
expect "stdio: each kernel's result streamed, in order, before its request's answer" \
    "r1:k r1:0 r2:k r2:1 None:3 None:3 r5:3 r6:k r6:2 m:k1 m:k2 m:k3 m:0 b:k b:0" "$(lines ans.jsonl)"
expect "stdio: the streamed results are the answer's, and the answer is a batch line as before" "True True" "$(python3 - ans.jsonl <<'EOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
ev = [d for d in lines if d.get("id") == "m" and "event" in d]
ans = [d for d in lines if d.get("id") == "m" and "event" not in d][0]
print(all(set(d) == {"schema", "id", "event", "result"} and d["schema"] == "kgate.batch/1" for d in ev)
      and [d["result"] for d in ev] == ans["check"]["results"],
      sorted(ans) == ["check", "exit", "gpu", "id", "schema", "wall_s"])
EOF
)"
expect "stdio: a check's lines that are not a kernel's result are dropped, said" 1 \
    "$(grep -c 'request b: 7 progress line(s) of its check dropped' err1.txt)"
expect "stdio: a bad request's error names the problem" 1 "$(grep -c '"error":"line 4: no '"'"'candidate'"'"'"' ans.jsonl)"
expect "stdio: a request for another GPU is refused, saying which" 1 "$(grep -c 'this service judges on GPU 0' ans.jsonl)"
expect "stdio: each check got --lib-cache, --events and its request's options" 1 \
    "$(grep -c '"command":"kgate check a.so --op relu --shape small --lib-cache --events [^ ]*/events.jsonl --device 0' ans.jsonl)"
expect "stdio: the answers are batch results lines that kgate report reads" 0 \
    "$("$kgate" report ans.jsonl -o rep.md >/dev/null 2>&1; echo $?)"
expect "stdio: five checks ran" 5 "$(wc -l <log1 | tr -d ' ')"
"$kgate" trajectory ans.jsonl >traj1.txt 2>&1
expect "stdio: kgate trajectory reads the answers, an iteration a request" "0 8" \
    "$? $(awk 'NR > 1 && $1 ~ /^[0-9]+$/ {print $1}' traj1.txt | uniq | wc -l | tr -d ' ')"

# 1a. what a check said without failing reaches the client, as notes
: >c_noted.so
: >c_junk.so
printf '%s\n' '{"id":"n1","candidate":"c_noted.so"}' '{"id":"n2","candidate":"c_junk.so"}' |
    "$kgate" serve --stdio >ansn.jsonl 2>errn.txt
expect "notes: the check's own lines, cleaned, in its answer" \
    "0|--lib-cache: relu fp16: the library times not kept: a wide interval|a second note ?[31m in colour" \
    "$?|$(python3 -c "import json,sys; print('|'.join(*[d.get('notes', []) for d in map(json.loads, open(sys.argv[1])) if d.get('id') == 'n1' and 'event' not in d]))" ansn.jsonl)"

expect "notes: none beside an error that is the check's last line" "4 0" \
    "$(python3 -c "import json,sys; d=[d for d in map(json.loads, open(sys.argv[1])) if d.get('id') == 'n2' and 'event' not in d][0]; print(d['exit'], len(d.get('notes', [])))" ansn.jsonl)"

# 1b. the warm fork server: started while the service waits, handed to the
# next Python request's check (its child, behind a socket), kept while a
# request that is not Python runs; none left at the end
: >p1.py
: >p2.py
printf '%s\n' '{"id":"w1","candidate":"p1.py"}' '{"id":"w2","candidate":"a.so"}' '{"id":"w3","candidate":"p2.py"}' |
    KGATE_LIB=$(dirname "$kgate")/libkgate.so KG_FAKE_ZYLOG=$t/zylog "$kgate" serve --stdio >answ.jsonl 2>errw.txt
expect "warm slot: exit" "0 w1:0 w2:0 w3:0" "$? $(answers answ.jsonl)"
expect "warm slot: each Python request handed a warm fork server, a C one leaves it" \
    "p1.py handed child socket python,a.so none,p2.py handed child socket python" "$(paste -sd, zylog)"
expect "warm slot: no fork server left" 0 "$(grep -l "KG_FAKE_ZYLOG=$t/zylog" /proc/[0-9]*/environ 2>/dev/null | wc -l)"
# while the service waits, the slot and its fork server hold neither its
# standard input nor its output (the client's requests and answers)
mkfifo win
KGATE_LIB=$(dirname "$kgate")/libkgate.so KG_FAKE_ZYLOG=$t/zylog2 "$kgate" serve --stdio <win >answ2.jsonl 2>errw2.txt &
spid=$!
exec 7>win
echo '{"id":"w4","candidate":"a.so"}' >&7
for _ in $(seq 1 300); do grep -q '"id":"w4"' answ2.jsonl 2>/dev/null && break; sleep 0.05; done
held=0 kids=
for _ in $(seq 1 100); do # the slot (the service's child) and the fork server it starts (its child)
    kids=$(pgrep -P "$spid")
    [ -n "$kids" ] && break
    sleep 0.05
done
for k in $kids $(for k in $kids; do pgrep -P "$k"; done); do
    for fd in 0 1; do
        [ "$(readlink "/proc/$k/fd/$fd")" = "$(readlink "/proc/$spid/fd/$fd")" ] && held=$((held + 1))
    done
done
exec 7>&-
wait $spid
expect "warm slot: started while waiting, holding none of the service's stdin or stdout" "yes 0" \
    "$([ -n "$kids" ] && echo yes || echo no) $held"

# 2. options after -- reach every check; a request line over 64 KiB is refused and skipped
python3 -c "print('{\"id\":\"big\",\"candidate\":\"' + 'x' * 70000 + '\"}'); print('{\"id\":\"after\",\"candidate\":\"a.so\"}')" >big.jsonl
"$kgate" serve --stdio -- --trials 5 <big.jsonl >ans2.jsonl 2>/dev/null
expect "a request over 64 KiB: refused, the next one answered" "None:3 after:0" "$(answers ans2.jsonl)"
expect "options after -- reach the check" 1 "$(grep -c 'kgate check a.so --trials 5 --lib-cache' ans2.jsonl)"

# 3. bad usage
"$kgate" serve >/dev/null 2>err3.txt
expect "neither --stdio nor --socket: exit 3, said" "3 1" "$? $(grep -c 'one of --stdio or --socket' err3.txt)"
"$kgate" serve --stdio --idle-timeout 0 >/dev/null 2>err3.txt </dev/null
expect "--idle-timeout 0: exit 3" 3 "$?"
"$kgate" serve --stdio --trials 3 >/dev/null 2>err3.txt </dev/null
expect "a check's option before --: exit 3, naming it" "3 1" "$? $(grep -c "unknown option '--trials'" err3.txt)"

# 4. a socket: mode 0600, answers this user, a second service refused, the idle timeout ends it
sock=$t/s.sock
"$kgate" serve --socket "$sock" --idle-timeout 4 2>serve4.txt &
pid=$!
for _ in $(seq 1 300); do [ -S "$sock" ] && break; sleep 0.1; done
expect "socket: made, mode 0600" "600 socket" "$(stat -c "%a %F" "$sock")"
client() { python3 - "$sock" "$1" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
s.shutdown(socket.SHUT_WR)
print(s.makefile().read(), end="")
EOF
}
client '{"id":"s1","candidate":"a.so"}' >ans4.jsonl
expect "socket: a request answered" "s1:0" "$(answers ans4.jsonl)"
"$kgate" serve --socket "$sock" 2>err4.txt
expect "socket: a second service refused, naming the socket" "5 1" "$? $(grep -c "already listens on $sock" err4.txt)"
client '{"id":"s2","candidate":"c_slow.so"}' >ans5.jsonl
expect "socket: the first still answers" "s2:1" "$(answers ans5.jsonl)"
# kgate check --server: judged by the service, printed and written as check does
"$kgate" check a.so --op relu --server "$sock" --json viaserver.json >check4.txt 2>&1
expect "check --server: exit" 0 "$?"
expect "check --server: --json written from the answer, the options sent on" 1 \
    "$(python3 -c "import json,sys; print(int(json.load(open('viaserver.json'))['command'].startswith(sys.argv[1])))" "kgate check $t/a.so --op relu --lib-cache")"
"$kgate" check c_wrong.so --server="$sock" -q >check5.txt 2>&1
expect "check --server: a wrong kernel's exit" 2 "$?"
"$kgate" check c_noted.so --server "$sock" >check5n.txt 2>&1
expect "check --server: the service's notes said on stderr, as a check here says them" "0 2" \
    "$? $(grep -c -e '^kgate: --lib-cache: relu fp16: the library times not kept' -e '^kgate: a second note' check5n.txt)"
"$kgate" check c_multi.so --server "$sock" --events ev4.jsonl -q >check7.txt 2>&1
expect "check --server --events: a line a kernel, as the check's own" "0 k1 k2 k3" \
    "$? $(python3 -c "import json,sys; print(' '.join(d['result']['kernel'] for d in map(json.loads, open(sys.argv[1])) if sorted(d) == ['event', 'result']))" ev4.jsonl)"
# stopped (SIGTERM), kgate check --server cancels its request and ends as
# kgate check does: exit 7, what was judged written
"$kgate" check c_multi_sleepy.so --server "$sock" --events ev5.jsonl --json stopped.json >check8.txt 2>&1 &
cpid=$!
for _ in $(seq 1 500); do [ -s ev5.jsonl ] && break; sleep 0.05; done # k1 judged: the check sleeps
t0=$(date +%s)
kill -TERM $cpid
wait $cpid
expect "check --server stopped: exit 7 at once" "7 yes" "$? $([ $(($(date +%s) - t0)) -lt 10 ] && echo yes || echo no)"
expect "check --server stopped: what was judged written, said cancelled" "k1 1" \
    "$(python3 -c "import json; print(' '.join(r['kernel'] for r in json.load(open('stopped.json'))['results']))") $(grep -c 'cancelled' check8.txt)"
"$kgate" check a.so --server "$t/nobody.sock" >check6.txt 2>&1
expect "check --server with no service there: said, then checked here" 1 \
    "$(grep -c "no kgate serve answers at $t/nobody.sock (.*): checking here" check6.txt)"
wait $pid
expect "socket: the idle timeout ends the service (exit 0), said" "0 1" "$? $(grep -c 'no request for 4 s: ending after 7 request' serve4.txt)"
expect "socket: removed at the end" no "$([ -e "$sock" ] && echo yes || echo no)"
pid=

# 4b. --socket auto and --server auto: one path, under $XDG_RUNTIME_DIR/kgate
mkdir -m 700 rt
XDG_RUNTIME_DIR=$t/rt "$kgate" serve --socket auto --idle-timeout 3 2>serve4b.txt &
pid=$!
for _ in $(seq 1 300); do [ -S rt/kgate/serve-gpu0.sock ] && break; sleep 0.1; done
XDG_RUNTIME_DIR=$t/rt "$kgate" check c_slow.so --server auto -q >check4b.txt 2>&1
expect "check --server auto: judged by the service at the same path (no fallback line)" "1 0" \
    "$? $(grep -c 'checking here' check4b.txt)"
XDG_RUNTIME_DIR=$t/rt "$kgate" check c_slow.so --server auto --device 0 -q >check4d.txt 2>&1
expect "check --server auto --device 0: that GPU's service judges it, --device not sent on" "1 0" \
    "$? $(grep -c 'checking here' check4d.txt)"
"$kgate" check c_slow.so --server "$t/rt/kgate/serve-gpu0.sock" --device 0 -q >check4e.txt 2>&1
expect "check --server SOCK --device: the service's GPU is its own, so checked here, said" 1 \
    "$(grep -c 'with --device: a service judges on its own GPU' check4e.txt)"
XDG_RUNTIME_DIR=$t/rt "$kgate" check c_slow.so --server auto --device 1 -q >check4c.txt 2>&1
expect "check --server auto on GPU 1: that GPU's socket, none there" 1 \
    "$(grep -c "no kgate serve answers at $t/rt/kgate/serve-gpu1.sock" check4c.txt)"
wait $pid
pid=

# 5. SIGTERM during a request: it is stopped, its answer says so, exit 7
mkfifo reqs
mkdir conc
KG_FAKE_CONC=$t/conc KG_FAKE_SLEEP=30 "$kgate" serve --stdio <reqs >ans6.jsonl 2>/dev/null &
pid=$!
exec 3>reqs
echo '{"id":"long","candidate":"a.so"}' >&3
for _ in $(seq 1 500); do [ -s conc.log ] && break; sleep 0.05; done # the check is running
kill -TERM $pid
wait $pid
expect "SIGTERM mid-request: exit 7" 7 "$?"
exec 3>&-
expect "SIGTERM mid-request: answered as stopped" "long:7" "$(answers ans6.jsonl)"
pid=

# 6. over --stdio, one client's session: a result streamed while its check
# still runs (it waits at a gate for the test to see it); a queued request
# and a running one cancelled (exit 7, the running one's results so far in
# its answer); a cancel of no request, an error; the service goes on
KG_FAKE_GATE=$t/gate python3 - "$kgate" "$t/gate" >out6.txt 2>&1 <<'EOF'
import json, os, select, subprocess, sys, time
p = subprocess.Popen([sys.argv[1], "serve", "--stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL)
got = b""
def send(o):
    p.stdin.write((json.dumps(o) + "\n").encode())
    p.stdin.flush()
def line():  # the next line, or None after 20 s
    global got
    end = time.time() + 20
    while b"\n" not in got:
        left = end - time.time()
        if left <= 0 or not select.select([p.stdout], [], [], left)[0]:
            return None
        chunk = os.read(p.stdout.fileno(), 1 << 20)
        if not chunk:
            return None
        got += chunk
    l, got = got.split(b"\n", 1)
    return json.loads(l)
def tok(d):
    return "none" if d is None else "%s:%s" % (d["id"], d["result"]["kernel"] if "event" in d else d["exit"])
def say(k, v):
    print("%s|%s" % (k, v))
send({"id": "g", "candidate": "c_multi.so"})
say("streamed", tok(line()))  # k1, while the check waits at the gate
open(sys.argv[2], "w").close()
say("rest", " ".join(tok(line()) for _ in range(3)))
send({"id": "s", "candidate": "c_multi_sleepy.so"})
say("running", tok(line()))
send({"id": "q", "candidate": "a.so"})
send({"cancel": "q"})
q = line()
say("queued", "%s %s" % (tok(q), q and q.get("error")))
t0 = time.time()
send({"cancel": "s"})
a = line()
say("cancelled", "%s %s %s" % (tok(a), a and a.get("error"), a and [r["kernel"] for r in a["check"]["results"]]))
say("cancel-fast", time.time() - t0 < 10)
send({"cancel": "nobody"})
e = line()
say("unknown", "%s %s" % (tok(e), e and e.get("error")))
send({"cancel": 5})
say("not-an-id", tok(line()))
send({"id": "after", "candidate": "a.so"})
say("after", " ".join(tok(line()) for _ in range(2)))
p.stdin.close()
say("exit", p.wait(timeout=30))
EOF
val() { sed -n "s/^$1|//p" out6.txt; }
expect "stdio: a kernel's result sent while its check runs" "g:k1" "$(val streamed)"
expect "stdio: the others, then the answer" "g:k2 g:k3 g:0" "$(val rest)"
expect "cancel: a queued request dropped, answered at once" "q:7 cancelled by the client before it ran" "$(val queued)"
expect "cancel: a running request stopped, its answer with what it judged" \
    "s:7 cancelled: the client asked ['k1']" "$(val cancelled)"
expect "cancel: within seconds (its check slept 30 s)" True "$(val cancel-fast)"
expect "cancel: no request of that id, an error" \
    'None:3 cancel "nobody": no request of that id is running or queued' "$(val unknown)"
expect "cancel: not an id, an error" "None:3" "$(val not-an-id)"
expect "cancel: the service goes on" "after:k after:0" "$(val after)"
expect "cancel: the service ends at its input's end" 0 "$(val exit)"

# 7. a socket client that leaves mid-request cancels it; the service goes on
sock=$t/s7.sock
"$kgate" serve --socket "$sock" --idle-timeout 60 2>serve7.txt &
pid=$!
for _ in $(seq 1 300); do [ -S "$sock" ] && break; sleep 0.1; done
python3 - "$sock" >out7.txt <<'EOF'
import json, socket, sys, time
def connect():
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    return s, s.makefile("rb")
s, f = connect()
s.sendall(b'{"id":"d","candidate":"c_multi_sleepy.so"}\n')
print("first|%s" % json.loads(f.readline())["result"]["kernel"])  # running: k1 judged, then it sleeps 30 s
f.close()
s.close()
t0 = time.time()
s, f = connect()
s.sendall(b'{"id":"n","candidate":"a.so"}\n')
s.shutdown(socket.SHUT_WR)
print("next|%s" % " ".join(str(d.get("exit", "ev")) for d in map(json.loads, f)))
print("fast|%s" % (time.time() - t0 < 10))
EOF
expect "disconnect: the request ran" k1 "$(sed -n 's/^first|//p' out7.txt)"
expect "disconnect: the next client served" "ev 0" "$(sed -n 's/^next|//p' out7.txt)"
expect "disconnect: the left client's check ended at once (it slept 30 s)" True "$(sed -n 's/^fast|//p' out7.txt)"
kill -TERM $pid
wait $pid
pid=

# 8. over --stdio, the reader of the answers leaving mid-request cancels it,
# and the service, whose only client it was, ends (exit 6)
python3 - "$kgate" >out8.txt <<'EOF'
import json, subprocess, sys, time
p = subprocess.Popen([sys.argv[1], "serve", "--stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL)
p.stdin.write(b'{"id":"d","candidate":"c_multi_sleepy.so"}\n')
p.stdin.flush()
print("first|%s" % json.loads(p.stdout.readline())["result"]["kernel"])  # k1 judged: the check sleeps 30 s
p.stdout.close()
t0 = time.time()
print("exit|%s %s" % (p.wait(timeout=60), time.time() - t0 < 10))
EOF
expect "stdio: a reader that leaves ends its request and the service at once" "k1 6 True" \
    "$(sed -n 's/^first|//p' out8.txt) $(sed -n 's/^exit|//p' out8.txt)"

echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]

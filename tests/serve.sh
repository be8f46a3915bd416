#!/bin/sh
# kgate serve on the CPU, with tests/fake_check.sh standing in for each
# request's `kgate check`: requests answered in order over --stdio, bad ones
# answered with their error while the service goes on; over a socket of mode
# 0600 whose second service is refused; the idle timeout; and SIGTERM during
# a request (its answer says stopped, exit 7).
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
# the answers' ids and exit codes, one "ID:EXIT" a line
answers() { python3 -c "import json,sys; print(' '.join('%s:%s' % (d['id'], d['exit']) for d in map(json.loads, open(sys.argv[1]))))" "$1"; }

# 1. --stdio: each request answered in order, a bad one with its error
{
    echo '{"id":"r1","candidate":"a.so","op":"relu","shape":"small"}'
    echo '{"id":"r2","candidate":"c_slow.so"}'
    echo 'not json'
    echo '{"id":"r4"}'
    echo '{"id":"r5","candidate":"a.so","gpu":3}'
    printf '\n'
    echo '{"id":"r6","candidate":"c_wrong.so"}'
} >req.jsonl
KG_FAKE_LOG=$t/log1 "$kgate" serve --stdio <req.jsonl >ans.jsonl 2>err1.txt
expect "stdio: exit at the end of its input" 0 "$?"
expect "stdio: one answer a request, in order, with each check's exit" "r1:0 r2:1 None:3 None:3 r5:3 r6:2" "$(answers ans.jsonl)"
expect "stdio: a bad request's error names the problem" 1 "$(grep -c '"error":"line 4: no '"'"'candidate'"'"'"' ans.jsonl)"
expect "stdio: a request for another GPU is refused, saying which" 1 "$(grep -c 'this service judges on GPU 0' ans.jsonl)"
expect "stdio: each check got --lib-cache and its request's options" 1 \
    "$(grep -c '"command":"kgate check a.so --op relu --shape small --lib-cache --device 0' ans.jsonl)"
expect "stdio: the answers are batch results lines that kgate report reads" 0 \
    "$("$kgate" report ans.jsonl -o rep.md >/dev/null 2>&1; echo $?)"
expect "stdio: three checks ran" 3 "$(wc -l <log1 | tr -d ' ')"

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
for _ in $(seq 1 50); do [ -S "$sock" ] && break; sleep 0.1; done
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
"$kgate" check a.so --server "$t/nobody.sock" >check6.txt 2>&1
expect "check --server with no service there: said, then checked here" 1 \
    "$(grep -c "no kgate serve answers at $t/nobody.sock (.*): checking here" check6.txt)"
wait $pid
expect "socket: the idle timeout ends the service (exit 0), said" "0 1" "$? $(grep -c 'no request for 4 s: ending after 4 request' serve4.txt)"
expect "socket: removed at the end" no "$([ -e "$sock" ] && echo yes || echo no)"
pid=

# 4b. --socket auto and --server auto: one path, under $XDG_RUNTIME_DIR/kgate
mkdir -m 700 rt
XDG_RUNTIME_DIR=$t/rt "$kgate" serve --socket auto --idle-timeout 3 2>serve4b.txt &
pid=$!
for _ in $(seq 1 50); do [ -S rt/kgate/serve-gpu0.sock ] && break; sleep 0.1; done
XDG_RUNTIME_DIR=$t/rt "$kgate" check c_slow.so --server auto -q >check4b.txt 2>&1
expect "check --server auto: judged by the service at the same path (no fallback line)" "1 0" \
    "$? $(grep -c 'checking here' check4b.txt)"
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
for _ in $(seq 1 200); do [ -s conc.log ] && break; sleep 0.05; done # the check is running
kill -TERM $pid
wait $pid
expect "SIGTERM mid-request: exit 7" 7 "$?"
exec 3>&-
expect "SIGTERM mid-request: answered as stopped" "long:7" "$(answers ans6.jsonl)"
pid=

echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]

#!/bin/sh
# integrations/ako4all/bench.py on the CPU, with a fake kgate that writes a
# canned kernelbench result: the lines the agent reads, the causes and
# fixes, the trajectory folders that kgate trajectory reads, and the
# protocol's language-switch and library-kernels lines.
#   ako4all_bench.sh KGATE REPO
kgate=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") src=$(cd "$2" && pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fails=0 n=0
expect() { n=$((n + 1)); if [ "$2" = "$3" ]; then echo "ok: $1 = $3"; else echo "FAIL: $1 = $3, want $2"; fails=$((fails + 1)); fi; }
cd "$t" || exit 1
# canned results: a SLOW solution with its diagnosis, an OK one flagged library-kernels, a wrong one
python3 - "$src/tests/data/recorded/run-h200-diagnose.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
slow = next(r for r in d["results"] if r["kernel"] == "add_v1_fp16")
ok = next(r for r in d["results"] if r["kernel"] == "add_v2_fp16")
def doc(r, verdict, flags, speedup):
    r = dict(r, verdict=verdict, flags=flags, kernel="ModelNew")
    r["libraries"] = [{"name": "torch", "status": "ok", "time": 1e-4}]
    r["kernelbench"] = {"correct": verdict != "INCORRECT", "speedup": speedup, "fast_p": speedup > 1, "p": 1.0}
    return dict(d, results=[r])
json.dump(doc(slow, "SLOW", [], 0.15), open("slow.json", "w"))
json.dump(doc(ok, "OK", ["library-kernels"], 1.02), open("ok.json", "w"))
json.dump(doc(ok, "INCORRECT", [], 1.0), open("wrong.json", "w"))
PY
cat >fake_kgate <<'SH'
#!/bin/sh
# kgate kernelbench REF SOL --json OUT ...: $FAKE_DOC to OUT, exit $FAKE_EXIT; its arguments in args.txt
echo "$*" >"${0%/*}/args.txt"
while [ $# -gt 0 ]; do [ "$1" = --json ] && { cp "$FAKE_DOC" "$2"; }; shift; done
exit "${FAKE_EXIT:-0}"
SH
chmod +x fake_kgate
export KGATE_BIN="$t/fake_kgate"
bench="$src/integrations/ako4all/bench.py"
echo 'import triton' >kernel.py
echo 'class Model: pass' >ref.py

FAKE_DOC=slow.json FAKE_EXIT=1 python3 "$bench" --ref ref.py --solution kernel.py --trajectory traj >o1.txt 2>&1
expect "a SLOW iteration: kgate's exit" 1 "$?"
expect "... the evaluator's lines" "COMPILED: True|CORRECT: True|SPEEDUP: 0.15|VERDICT: SLOW" \
    "$(grep -E '^(COMPILED|CORRECT|SPEEDUP|VERDICT):' o1.txt | tr '\n' '|' | sed 's/|$//')"
expect "... its efficiencies" "E_BEST: 0.15 E_LIB: 0.15 RHO: 0.14" "$(grep -E '^(E_BEST|E_LIB|RHO):' o1.txt | tr '\n' ' ' | sed 's/ $//')"
expect "... the top cause with its fix" 1 "$(grep -c '^CAUSE: RC0b 0.37 unvectorized loads .* -- FIX: load 16 bytes per thread' o1.txt)"
expect "... iteration 1, its language" "ITERATION: 1 LANGUAGE: triton" "$(head -2 o1.txt | tr '\n' ' ' | sed 's/ $//')"
expect "... saved in the trajectory" "kernel.py kgate.json" "$(cd traj/iter-1 && echo *)"
expect "... through a running service's socket by default (kgate falls back when none answers)" 1 \
    "$(grep -c -- '--server auto --' args.txt)"

FAKE_DOC=ok.json python3 "$bench" --ref ref.py --solution kernel.py --trajectory traj --server none >o2.txt 2>&1
expect "an OK iteration flagged library-kernels: exit, the protocol line" "0 1" \
    "$? $(grep -c '^PROTOCOL: library-kernels' o2.txt)"
expect "--server none: no service asked" 0 "$(grep -c -- '--server' args.txt)"

echo 'import tilelang' >kernel.py
FAKE_DOC=wrong.json FAKE_EXIT=2 python3 "$bench" --ref ref.py --solution kernel.py --trajectory traj >o3.txt 2>&1
expect "a wrong iteration in another language: exit, CORRECT, the switch" "2 1 1" \
    "$? $(grep -c '^CORRECT: False' o3.txt) $(grep -c '^PROTOCOL: language switch: triton at the first iteration, tilelang now' o3.txt)"

FAKE_DOC=/nonexistent FAKE_EXIT=4 python3 "$bench" --ref ref.py --solution kernel.py --trajectory traj >o4.txt 2>&1
expect "no result: exit 4, CORRECT False, said" "4 1" "$? $(grep -c '^CORRECT: False' o4.txt)"
python3 "$bench" --ref nope.py --solution kernel.py >o5.txt 2>&1
expect "a missing reference: exit 3" 3 "$?"

"$kgate" trajectory traj >traj.txt 2>&1
expect "kgate trajectory reads the bench's folders (the fourth without a result)" "0 SLOW OK INCORRECT -" \
    "$? $(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^iter-/ {printf "%s ", $5}' traj.txt | sed 's/ $//')"

echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]

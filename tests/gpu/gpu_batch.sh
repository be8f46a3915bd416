#!/bin/sh
# kgate batch on every GPU of this machine (issue 10's GPU test): a small
# manifest of a naive kernel (SLOW), its fast variant (OK), a kernel that
# kills its CUDA context (CRASH; tests/adversarial's library, built beside)
# and a candidate that does not exist, plus the fast kernel pinned to each
# GPU present. Every valid job is recorded exactly once with the verdict it
# should get, every GPU judged a job, the missing candidate is named in one
# line while the rest went on (exit 3), each job saw its GPU alone, the
# same manifest with --jobs-per-gpu 2 gets the same verdicts with none
# flagged shared-gpu, and a rerun of the same command runs nothing and adds
# no line.
. "$(dirname "$0")/common.sh"
t=$build/tests/batch-gpu
rm -rf "$t" && mkdir -p "$t" || exit 1
b=$build/libkgate_bundled.so
adv=$build/tests/adversarial/libkgate_adversarial.so
ngpu=$("$kgate" devices 2>/dev/null | grep -c '^[0-9]')
{
    echo "{\"id\": \"add-v1\", \"candidate\": \"$b\", \"kernel\": \"add_v1_fp16\", \"shape\": \"large\"}"
    echo "{\"id\": \"add-v2\", \"candidate\": \"$b\", \"kernel\": \"add_v2_fp16\", \"shape\": \"large\"}"
    echo "{\"id\": \"softmax-v1\", \"candidate\": \"$b\", \"kernel\": \"softmax_v1_fp16\", \"shape\": \"large\"}"
    echo "{\"id\": \"softmax-v2\", \"candidate\": \"$b\", \"kernel\": \"softmax_v2_fp16\", \"shape\": \"large\"}"
    echo "{\"id\": \"illegal\", \"candidate\": \"$adv\", \"kernel\": \"illegal_address\", \"shape\": \"small\"}"
    echo "{\"id\": \"missing\", \"candidate\": \"$t/no-such.so\"}"
    g=0
    while [ "$g" -lt "$ngpu" ]; do
        echo "{\"id\": \"pinned-$g\", \"candidate\": \"$b\", \"kernel\": \"add_v2_fp16\", \"shape\": \"large\", \"gpu\": $g}"
        g=$((g + 1))
    done
} >"$t/m.jsonl"
# the jobs run through a wrapper that logs the CUDA_VISIBLE_DEVICES each job got
cat >"$t/runner.sh" <<EOF
#!/bin/sh
[ "\$1" = check ] && echo "\${CUDA_VISIBLE_DEVICES:--}" >>"$t/cvd.log"
exec "$kgate" "\$@"
EOF
chmod +x "$t/runner.sh"
KG_BATCH_RUNNER=$t/runner.sh "$kgate" batch "$t/m.jsonl" -o "$t/r.jsonl" --job-timeout 300 -- --max-time 1 >"$t/out.txt" 2>&1
rc=$?
cat "$t/out.txt"
expect "exit code (a candidate line skipped)" 3 "$rc"
expect "the missing candidate named in one line" 1 "$(grep -c 'no-such.so' "$t/out.txt")"
# id -> verdict of its one kernel, and the GPUs used
python3 - "$t/r.jsonl" >"$t/got.txt" <<'PY'
import json, sys
seen = {}
for line in open(sys.argv[1]):
    x = json.loads(line)
    r = (x.get("check") or {}).get("results") or []
    seen.setdefault(x["id"], []).append((x["gpu"], r[0]["verdict"] if len(r) == 1 else "results:%d" % len(r)))
for k, v in sorted(seen.items()):
    print(k, len(v), v[0][0], v[0][1])
PY
get() { awk -v k="$1" '$1 == k {print $'"$2"'}' "$t/got.txt"; }
want="add-v1:SLOW add-v2:OK softmax-v1:SLOW softmax-v2:OK illegal:CRASH"
for kv in $want; do
    k=${kv%%:*}
    expect "$k recorded once" 1 "$(get "$k" 2)"
    expect "$k verdict" "${kv#*:}" "$(get "$k" 4)"
done
g=0
while [ "$g" -lt "$ngpu" ]; do
    expect "pinned-$g judged on GPU $g" "$g OK" "$(get "pinned-$g" 3) $(get "pinned-$g" 4)"
    g=$((g + 1))
done
expect "nothing recorded for the missing candidate" "" "$(get missing 2)"
# each job saw its GPU alone (CUDA_VISIBLE_DEVICES=its UUID, --device 0): its
# result names the UUID `kgate devices` gives the batch's GPU index
"$kgate" devices | sed -n 's/^\([0-9][0-9]*\) .*\(GPU-[0-9a-f-]*\).*/\1 \2/p' >"$t/uuids.txt"
expect "every job judged on the batch's GPU, as device 0 of one" "$(wc -l <"$t/r.jsonl")" "$(python3 - "$t/r.jsonl" "$t/uuids.txt" <<'PY'
import json, sys
uuid = dict(l.split() for l in open(sys.argv[2]))
lines = [json.loads(l) for l in open(sys.argv[1])]
right = sum((x.get("check") or {}).get("device", {}).get("uuid") == uuid.get(str(x["gpu"])) and
            " --device 0 " in (x.get("check") or {}).get("command", "") + " " for x in lines)
print(right)
PY
)"
expect "no GPU the batch could not show alone" 0 "$(grep -c 'did not select\|could not be read' "$t/out.txt")"
expect "every job ran with CUDA_VISIBLE_DEVICES one of this machine's GPU UUIDs" "$(wc -l <"$t/r.jsonl")" \
    "$(cut -d' ' -f2 "$t/uuids.txt" | grep -cxFf - "$t/cvd.log")"
# --jobs-per-gpu 2: the same verdicts, two jobs a GPU at once taking turns
# on its lock, and no result flagged for sharing the GPU with the other
"$kgate" batch "$t/m.jsonl" -o "$t/r2.jsonl" --jobs-per-gpu 2 --job-timeout 300 -- --max-time 1 >"$t/out-2.txt" 2>&1
expect "--jobs-per-gpu 2: exit (the missing candidate again)" 3 "$?"
expect "--jobs-per-gpu 2: the same verdicts, none shared-gpu" "same 0" "$(python3 - "$t/r.jsonl" "$t/r2.jsonl" <<'PY'
import json, sys
def verdicts(p):
    out, shared = {}, 0
    for l in open(p):
        x = json.loads(l)
        for r in (x.get("check") or {}).get("results", []):
            out[x["id"]] = r["verdict"]
            shared += "shared-gpu" in r["flags"]
    return out, shared
a, _ = verdicts(sys.argv[1])
b, shared = verdicts(sys.argv[2])
print("same" if a == b else "differ: %s against %s" % (a, b), shared)
PY
)"
n1=$(wc -l <"$t/r.jsonl")
"$kgate" batch "$t/m.jsonl" -o "$t/r.jsonl" --job-timeout 300 -- --max-time 1 >"$t/out2.txt" 2>&1
expect "a rerun: exit (the missing candidate again)" 3 "$?"
expect "a rerun runs nothing" 1 "$(grep -c '^batch: 0 job(s) run' "$t/out2.txt")"
expect "a rerun adds no line" "$n1" "$(wc -l <"$t/r.jsonl")"

# the warm slot: three Triton-JIT jobs on one GPU; the first waits for its
# fork server's imports, the next two find theirs started while the job
# before them ran (list/warm absent or under half the first's), and all
# three are judged OK, as the kernel is alone
src=$(cd "$(dirname "$0")/../.." && pwd)
for i in 1 2 3; do
    echo "{\"id\": \"jit-$i\", \"candidate\": \"$src/tests/python/triton_jit.py\", \"kernel\": \"jit_layer_norm_bf16\", \"shape\": \"small\"}"
done >"$t/py.jsonl"
"$kgate" batch "$t/py.jsonl" -o "$t/rpy.jsonl" --gpus 0 --job-timeout 300 -- --max-time 1 >"$t/outpy.txt" 2>&1
expect "Python jobs: exit" 0 "$?"
grep '^job time' "$t/outpy.txt"
warm=$(python3 - "$t/rpy.jsonl" <<'PY'
import json, sys
rows = {}
for l in open(sys.argv[1]):
    d = json.loads(l)
    r = d["check"]["results"][0]
    rows[d["id"]] = (r["verdict"], r["summaries"].get("list/warm", {}).get("value", 0.0), d["wall_s"])
for k in sorted(rows):
    print("%s: %s, list/warm %.3f s, wall %.2f s" % ((k,) + rows[k]), file=sys.stderr)
v = [rows[k][0] for k in sorted(rows)]
w = [rows[k][1] for k in sorted(rows)]
print(" ".join(v), "warm" if len(w) == 3 and w[0] > 0.5 and max(w[1:]) < 0.5 * w[0] else "cold: %s" % w)
PY
)
expect "Python jobs: all OK, the second and third handed a warm fork server" "OK OK OK warm" "$warm"
finish

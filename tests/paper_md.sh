#!/bin/sh
# docs/paper.md is what scripts/paper_md.py generates from
# docs/paper-figures.json and the recorded results; it has a row for each of
# the paper's 22 operators (its Table X), Triton and TileLang, and each row's
# verdict is agree, differ or not measured. In a tree of made-up results:
# the verdict follows kgate's E_lib and rho against the paper's figures, the
# cliff comes from the naive kernel of the same run, the newest result at the
# paper's shape is the one shown, the artifact's kernels are found through
# their MANIFEST.json, and a malformed figures file is refused.
#   tests/paper_md.sh SOURCE_DIR
src=$1
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fails=0 n=0
expect() { n=$((n + 1)); if [ "$2" = "$3" ]; then echo "ok: $1 = $3"; else echo "FAIL: $1 = $3, want $2"; fails=$((fails + 1)); fi; }
gen() { python3 "$src/scripts/paper_md.py" "$@"; }
# the page's comparison rows (14 cells), as: operator|paper kernel|kgate kernel|verdict
rows() {
    python3 -c '
import sys
for line in open(sys.argv[1]):
    c = [x.strip() for x in line.strip().strip("|").split(" | ")]
    if line.startswith("| ") and len(c) == 14 and c[0] != "operator":
        print("|".join((c[0], c[1], c[7], c[13])))' "$1"
}
# the verdict of the row of operator $2, paper kernel $3 and kgate kernel matching $4
verdict() { rows "$1" | awk -F'|' -v o="$2" -v k="$3" -v g="$4" '!f && $1 == o && $2 == k && index($3, g) { print $4; f = 1 }'; }

gen --check "$src"
expect "docs/paper.md as generated: exit" 0 $?
rows "$src/docs/paper.md" >"$t/rows.txt"
missing=""
for op in matmul batched_matmul linear_activation attention conv2d layer_norm rms_norm add mul relu \
    leaky_relu softmax log_softmax logsumexp swiglu argmax max_reduction mean_reduction cross_entropy \
    matrix_transpose index_select embedding; do
    for k in "Triton naive" "TileLang naive"; do
        awk -F'|' -v o="$op" -v k="$k" '$1 == o && $2 == k { f = 1 } END { exit !f }' "$t/rows.txt" ||
            missing="$missing $op($k)"
    done
done
expect "the paper's 22 operators, each with a Triton and a TileLang row: missing" "" "$missing"
expect "rows whose verdict is not agree, differ or not measured" 0 \
    "$(awk -F'|' '$4 != "agree" && $4 !~ /^differ: ./ && $4 !~ /^not measured: ./' "$t/rows.txt" | wc -l)"
mkdir -p "$t/edited/docs" "$t/edited/results"
cp -r "$src/results/." "$t/edited/results/"
cp "$src/docs/paper-figures.json" "$src/docs/paper.md" "$t/edited/docs/"
echo "edited by hand" >>"$t/edited/docs/paper.md"
gen --check "$t/edited" >"$t/out.txt"
expect "docs/paper.md edited: exit" 1 $?
expect "... said" 1 "$(grep -c '^paper: docs/paper.md is not what scripts/paper_md.py generates' "$t/out.txt")"

# a tree of made-up results: r/a.json a suite run, then later files
g=$t/g
mkdir -p "$g/docs" "$g/results/r" "$g/results/v"
cp "$src/docs/paper-figures.json" "$g/docs/"
# result FILE DATE COMMAND then KERNEL:SHAPE:TIME:E_LIB:RHO ... (E_LIB "-": none)
result() {
    python3 - "$@" <<'EOF'
import json, sys
path, date, command = sys.argv[1:4]
res = []
for spec in sys.argv[4:]:
    k, shape, tm, e, rho = spec.split(":")
    op = "softmax" if k.startswith("kb.") else "layer_norm"
    s = {"time/gpu/median": {"value": float(tm), "unit": "s"}, "roof/fraction": {"value": float(rho), "unit": ""}}
    if e != "-":
        s["lib/efficiency"] = {"value": float(e), "unit": ""}
    res.append({"kernel": "ModelNew" if k.startswith("kb.") else k, "op": k if k.startswith("kb.") else op,
                "dtype": "fp16" if k.startswith("kb.") else "bf16", "shape": shape, "verdict": "OK", "flags": [],
                "baseline": "cudnn-layernorm", "summaries": s})
json.dump({"schema": "kgate.results/2", "command": command, "commit": "abc", "date": date,
           "device": {"name": "NVIDIA H200", "uuid": "GPU-x"}, "results": res}, open(path, "w"))
EOF
}
page() { python3 "$src/scripts/ledger.py" "$g" >/dev/null && gen "$g" && rows "$g/docs/paper.md" >"$t/g.txt"; }
ln=layer_norm
result "$g/results/r/a.json" 2026-01-01T00:00:00Z "kgate run --json a.json" \
    tilelang_layer_norm_naive_bf16:8192x8192:0.0247:0.0028:0.0026 tilelang_layer_norm_bf16:8192x8192:7.2e-5:0.97:0.88
page
expect "made-up run: the fixed TileLang layer norm (E_lib 0.97, rho 0.88; the paper's 1.20, 0.59)" agree \
    "$(verdict "$g/docs/paper.md" $ln "TileLang optimized" tilelang_layer_norm_bf16)"
expect "... its cliff, t_naive / t from the same run" 343x \
    "$(awk -F' [|] ' '/`tilelang_layer_norm_bf16`/ { print $12 }' "$g/docs/paper.md")"
expect "... the naive one (E_lib 0.0028; the paper's 0.0031)" agree \
    "$(verdict "$g/docs/paper.md" $ln "TileLang naive" tilelang_layer_norm_naive)"
expect "... a kernel without a result" "not measured: no recorded result in results/" \
    "$(verdict "$g/docs/paper.md" matmul "Triton naive" triton_matmul_tutorial)"
result "$g/results/r/b.json" 2026-01-02T00:00:00Z "kgate check x.so --json b.json" \
    tilelang_layer_norm_bf16:4096x4096:2e-5:0.30:0.88
page
expect "a newer result at another shape: the suite's at the paper's shape still shown" agree \
    "$(verdict "$g/docs/paper.md" $ln "TileLang optimized" tilelang_layer_norm_bf16)"
result "$g/results/r/c.json" 2026-01-03T00:00:00Z "kgate check x.so --json c.json" \
    tilelang_layer_norm_bf16:8192x8192:2e-4:0.30:0.88
page
v=$(verdict "$g/docs/paper.md" $ln "TileLang optimized" tilelang_layer_norm_bf16)
expect "a newer result at the paper's shape, E_lib 0.30: differ, saying why" \
    "differ: E_lib 0.30 behind, the paper's at parity" "$(echo "$v" | cut -d';' -f1)"
expect "... its cliff: no naive kernel in that run" "-" \
    "$(awk -F' [|] ' '/`tilelang_layer_norm_bf16`/ { print $12 }' "$g/docs/paper.md")"
result "$g/results/r/d.json" 2026-01-04T00:00:00Z "kgate check x.so --json d.json" \
    tilelang_layer_norm_bf16:8192x8192:7.2e-5:0.97:0.40
page
expect "E_lib in the paper's band, rho 0.40 under 0.50 where the paper's 0.59 is over: differ" \
    "differ: rho 0.40 and the paper's 0.59 either side of 0.50" \
    "$(verdict "$g/docs/paper.md" $ln "TileLang optimized" tilelang_layer_norm_bf16 | cut -d';' -f1)"
result "$g/results/r/e.json" 2026-01-05T00:00:00Z "kgate check x.so --json e.json" \
    tilelang_layer_norm_bf16:8192x8192:7.2e-5:-:0.88
page
expect "no library path (no E_lib)" "not measured: kgate has no library path for layer_norm (no E_lib)" \
    "$(verdict "$g/docs/paper.md" $ln "TileLang optimized" tilelang_layer_norm_bf16)"
# the artifact's softmax: a kgate kernelbench result beside its MANIFEST.json
pair='{"name": "21_softmax", "operator": "softmax", "description": "x:(4096,32768) fp16"}'
printf '{"schema": "kgate.viperbench/1", "pairs": [%s]}\n' "$pair" >"$g/results/v/MANIFEST.json"
result "$g/results/v/21_softmax.json" 2026-01-06T00:00:00Z "kgate check kb_21_softmax.py --json r.json" \
    kb.21_softmax:4096:1e-4:1.31:0.92
page
expect "the artifact's softmax (E_lib 1.31; the paper's 1.17)" agree \
    "$(verdict "$g/docs/paper.md" softmax "Triton naive" "artifact")"
expect "... shown at the artifact's shape" 1 \
    "$(grep -c "the artifact's \`softmax\` \[[0-9]\] | H200, x:(4096,32768) fp16 |" "$g/docs/paper.md")"
# malformed figures: a second E_lib figure to use in a row
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
d["rows"][0]["figures"][1]["use"] = True
json.dump(d, open(sys.argv[1], "w"))' "$g/docs/paper-figures.json"
gen "$g" >"$t/out.txt"
expect "a row with two E_lib figures to use: exit" 1 $?
expect "... named" 1 \
    "$(grep -c '^paper: docs/paper-figures.json: row 1 (matmul, Triton naive): more than one E_lib figure' "$t/out.txt")"
echo "$((n - fails)) passed, $fails failed"
[ "$fails" = 0 ]

#!/bin/sh
# scripts/viperbench.py on a fake ViperBench tree made here, laid out as the
# paper artifact's (ViperBench/benchmark.py's get_test_cases(), a folder an
# operator with pytorch_impl.py and triton_impl.py): two toy operators it must
# convert and four it must skip, saying why. The pairs must be what `kgate
# kernelbench` takes (NN_name.py in problems/ and solutions/, paired by
# kgate's own rule), valid Python with Model, ModelNew, get_inputs and
# get_init_inputs as the artifact's case says, its tuning lookup gone, an
# earlier run's pairs removed, MANIFEST.json right; the same from the tree's
# git directory, with its commit. Then `scripts/gpu.sh viperbench` with a
# fake kgate: VIPER_ONLY, two GPUs' lanes, a problem past VIPER_TIMEOUT, and
# the summary. Needs neither torch nor a network.
#   tests/viperbench.sh SRC
set -u
src=$(cd "$1" && pwd)
py=${PYTHON:-python3}
t=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$t"' EXIT
tree=$t/artifact vb=$tree/ViperBench
mkdir -p "$vb/scale" "$vb/gather" "$vb/arange" "$vb/notriton" "$vb/smallonly"
cat >"$vb/benchmark.py" <<'EOF'
import torch

N = 64 * 4


def get_test_cases():
    cases = {}
    cases["scale"] = [
        ("small", "scale", (torch.randn(8, device="cuda", dtype=torch.float16), 2.0), None, "x:(8,) fp16", False),
        ("large", "scale", (torch.randn(N, N, device="cuda", dtype=torch.float16), 2.0), {"bias": 1},
         "x:(N,N) fp16", False),
    ]
    cases["gather"] = [
        ("large", "gather",
         (torch.empty(16, N, device="cuda", dtype=torch.float32),
          torch.randn(N, N, device="cuda"),
          torch.randint(0, N, (16,), device="cuda", dtype=torch.int64), (N,)),
         None, "src:(N,N) idx:(16,) fp32", True),
    ]
    cases["arange"] = [("large", "arange", (torch.arange(10, device="cuda"),), None, "", False)]
    cases["notriton"] = [("large", "notriton", (torch.randn(4),), None, "", False)]
    cases["ghost"] = [("large", "ghost", (torch.randn(4),), None, "", False)]
    cases["smallonly"] = [("small", "smallonly", (torch.randn(4),), None, "", False)]
    return cases
EOF
for op in scale gather arange notriton smallonly; do
    printf 'import torch\n\n\ndef %s(x, *rest, bias=0):\n    return x  # PYTORCH-%s\n' "$op" "$op" \
        >"$vb/$op/pytorch_impl.py"
done
printf 'import torch\n\n\ndef gather(output, source, index, shape):\n    %s\n    return output\n' \
    "output.copy_(source[index])  # PYTORCH-gather" >"$vb/gather/pytorch_impl.py"
for op in scale gather arange smallonly; do
    cat >"$vb/$op/triton_impl.py" <<EOF
import torch
import triton
import triton.language as tl

try:
    import sys as _sys, os as _os
    _sys.path.insert(0, _os.path.join(_os.path.dirname(__file__), '..'))
    from tuning.cache import get_best_config as _get_best_config
    _TUNED = _get_best_config("$op", "triton") or {}
except Exception:
    _TUNED = {}


@triton.jit
def _kernel(x_ptr, BLOCK: tl.constexpr):  # TRITON-$op
    pass


def $op(*args, bias=0):
    return args[0]
EOF
done

out=$t/out
mkdir -p "$out/problems" "$out/solutions"
echo "stale" >"$out/problems/99_stale.py"
echo "stale" >"$out/solutions/99_stale.py"
echo "kept" >"$out/problems/notes.txt"
"$py" "$src/scripts/viperbench.py" "$tree" "$out" >"$t/convert.txt" 2>&1
echo "$?" >"$t/convert.rc"
"$py" "$src/scripts/viperbench.py" "$vb" "$t/out-vb" >/dev/null 2>&1
echo "$?" >"$t/convert-vb.rc"
"$py" "$src/scripts/viperbench.py" "$tree" "$t/out-small" --shapes small >/dev/null 2>&1
echo "$?" >"$t/convert-small.rc"
mkdir -p "$t/empty"
"$py" "$src/scripts/viperbench.py" "$t/empty" "$t/out-none" >"$t/none.txt" 2>&1
echo "$?" >"$t/none.rc"
# the artifact as a git repository: its git directory (bare, as the fetch tool gives it) and its checkout
git -C "$tree" init -q && git -C "$tree" add -A &&
    git -C "$tree" -c user.name=t -c user.email=t@t commit -qm artifact >/dev/null ||
    echo "git init failed" >"$t/git.err"
"$py" "$src/scripts/viperbench.py" "$tree/.git" "$t/out-git" >/dev/null 2>&1
echo "$?" >"$t/convert-git.rc"
"$py" "$src/scripts/viperbench.py" "$tree" "$t/out-co" >/dev/null 2>&1
echo "# changed" >>"$vb/scale/pytorch_impl.py"
"$py" "$src/scripts/viperbench.py" "$tree" "$t/out-dirty" >/dev/null 2>&1

# scripts/gpu.sh viperbench with a fake kgate: 02_gather outlives VIPER_TIMEOUT
mkdir -p "$t/build"
cat >"$t/build/kgate" <<'EOF'
#!/bin/sh
[ "$1" = version ] && { echo "kgate fake"; exit 0; }
[ "$1" = kernelbench ] && [ "$4" = --json ] || exit 3
n=$(basename "$2" .py)
echo "$n ${CUDA_VISIBLE_DEVICES:--} $(basename "$3")" >>"$FAKE_LOG"
case $n in *gather*) sleep 30 ;; esac
cat >"$5" <<EOJ
{"schema": "kgate.results/2", "command": "kgate check kb.py", "commit": "fakecommit",
 "device": {"name": "Fake GPU", "uuid": "GPU-fake"}, "gate": {"vendor_share": 0.2},
 "results": [{"kernel": "ModelNew", "op": "kb.$n", "verdict": "SLOW", "flags": ["library-kernels"],
   "reason": "E_lib 0.50 < 0.80", "detail": "9 kernel(s) named like PyTorch's, the first at_native",
   "summaries": {"lib/efficiency": {"value": 0.5, "unit": ""}, "roof/fraction": {"value": 0.25, "unit": ""},
     "lib/roof/fraction": {"value": 0.5, "unit": ""}, "time/vendor_share": {"value": 0.9, "unit": ""},
     "time/vendor": {"value": 9, "unit": ""}, "time/judged": {"value": 2e-3, "unit": "s"}},
   "kernelbench": {"correct": true, "max_scaled_err": 0.001, "speedup": 0.5, "fast_p": false, "p": 1.0}}]}
EOJ
exit 1
EOF
chmod +x "$t/build/kgate"
(cd "$src" && FAKE_LOG=$t/fake.log OUT=$t/gpu1 BUILD=$t/build VIPER_DIR=$out VIPER_GPUS=2 VIPER_TIMEOUT=2 \
    sh scripts/gpu.sh viperbench >"$t/gpu1.txt" 2>&1)
(cd "$src" && FAKE_LOG=$t/fake2.log OUT=$t/gpu2 BUILD=$t/build VIPER_DIR=$out VIPER_ONLY=scale \
    sh scripts/gpu.sh viperbench >"$t/gpu2.txt" 2>&1)
mkdir -p "$t/gpu1/x" "$t/gpu2/x"
tar xzf "$t/gpu1/kgate-gpu-out.tgz" -C "$t/gpu1/x" && tar xzf "$t/gpu2/kgate-gpu-out.tgz" -C "$t/gpu2/x"

"$py" - "$t" "$src" <<'PY'
import ast, json, os, py_compile, subprocess, sys
t, src = sys.argv[1:3]
sys.path.insert(0, os.path.join(src, "python"))
from kgate.kernelbench import pairs  # noqa: E402  (kgate's own pairing rule; needs no torch)

out = os.path.join(t, "out")
rd = lambda *p: open(os.path.join(t, *p)).read()  # noqa: E731
man = json.loads(rd("out", "MANIFEST.json"))
checks = []


def check(name, cond):
    checks.append((name, bool(cond)))


def tree_of(path):
    return ast.parse(open(path).read())


def top(mod, kind, name):
    return next((n for n in mod.body if isinstance(n, kind) and n.name == name), None)


def returned(mod, fn):
    return next(n.value for n in ast.walk(top(mod, ast.FunctionDef, fn)) if isinstance(n, ast.Return))


check("exit 0 with pairs", rd("convert.rc").strip() == "0")
check("2 pairs, 4 skipped said", "2 pair(s)" in rd("convert.txt") and "4 skipped" in rd("convert.txt"))
for d in ("problems", "solutions"):
    got = sorted(f for f in os.listdir(os.path.join(out, d)) if f.endswith(".py"))
    check(f"{d}: NN_name.py, numbered in name order, stale pair removed", got == ["02_gather.py", "05_scale.py"])
check("a file not a pair is kept", os.path.exists(os.path.join(out, "problems", "notes.txt")))
paired = pairs(os.path.join(out, "problems"), os.path.join(out, "solutions"))
check("kgate pairs each solution with its problem",
      [(os.path.basename(p), os.path.basename(s)) for p, s in paired] == [("02_gather.py", "02_gather.py"),
                                                                          ("05_scale.py", "05_scale.py")])
for d in ("problems", "solutions"):
    for f in ("02_gather.py", "05_scale.py"):
        try:
            py_compile.compile(os.path.join(out, d, f), doraise=True, cfile=os.path.join(t, "pyc"))
            check(f"{d}/{f} compiles", True)
        except py_compile.PyCompileError as e:
            check(f"{d}/{f} compiles: {e}", False)

for stem, op in (("05_scale", "scale"), ("02_gather", "gather")):
    p, s = (os.path.join(out, d, stem + ".py") for d in ("problems", "solutions"))
    pm, sm = tree_of(p), tree_of(s)
    ptext, stext = open(p).read(), open(s).read()
    check(f"{stem}: problem has Model, get_inputs, get_init_inputs",
          top(pm, ast.ClassDef, "Model") and top(pm, ast.FunctionDef, "get_inputs")
          and top(pm, ast.FunctionDef, "get_init_inputs"))
    check(f"{stem}: solution has ModelNew and no Model", top(sm, ast.ClassDef, "ModelNew")
          and not top(sm, ast.ClassDef, "Model"))
    fwd = lambda m, c: [a.arg for a in top(top(m, ast.ClassDef, c), ast.FunctionDef, "forward").args.args]  # noqa: E731
    check(f"{stem}: forward takes the same tensors", fwd(pm, "Model") == fwd(sm, "ModelNew"))
    check(f"{stem}: the artifact's sources copied in", f"PYTORCH-{op}" in ptext and f"TRITON-{op}" in stext
          and "TRITON" not in ptext and "PYTORCH" not in stext)
    check(f"{stem}: tuning lookup replaced", "tuning.cache" not in stext and "sys.path" not in stext
          and "\n_TUNED = {}  #" in stext and "\n@triton.jit\n" in stext)
    check(f"{stem}: get_inputs() names no device", "device" not in ast.unparse(returned(pm, "get_inputs")))

check("scale: inputs", ast.unparse(returned(tree_of(os.path.join(out, "problems", "05_scale.py")), "get_inputs"))
      == "[torch.randn(256, 256, dtype=torch.float16)]")
check("scale: init inputs", ast.literal_eval(returned(tree_of(os.path.join(out, "problems", "05_scale.py")),
                                                      "get_init_inputs")) == [2.0])
check("scale: a0.. for a signature that does not name them, the keyword constant",
      all("def forward(self, a0):\n        return scale(a0, self.arg_a1, bias=1)\n" in rd("out", d, "05_scale.py")
          for d in ("problems", "solutions")))
g = tree_of(os.path.join(out, "problems", "02_gather.py"))
check("gather: inputs (default fp32, randint's range)", ast.unparse(returned(g, "get_inputs"))
      == "[torch.randn(256, 256, dtype=torch.float32), torch.randint(0, 256, (16,), dtype=torch.int64)]")
check("gather: init inputs", ast.literal_eval(returned(g, "get_init_inputs")) == [(256,)])
check("gather: the destination buffer made in forward", "gather(torch.empty(16, 256, dtype=torch.float32, "
      "device=source.device), source, index, self.arg_shape)" in rd("out", "problems", "02_gather.py"))

pairs_by = {p["operator"]: p for p in man["pairs"]}
check("manifest: the pairs", sorted(pairs_by) == ["gather", "scale"] and pairs_by["scale"]["name"] == "05_scale")
check("manifest: scale's arguments", [(a["kind"], a.get("shape"), a.get("dtype"), a.get("value"))
                                      for a in pairs_by["scale"]["args"]]
      == [("tensor", [256, 256], "float16", None), ("constant", None, None, 2.0)]
      and pairs_by["scale"]["kwargs"] == {"bias": 1})
check("manifest: gather's kinds and slow mark", [a["kind"] for a in pairs_by["gather"]["args"]]
      == ["buffer", "tensor", "tensor", "constant"] and pairs_by["gather"]["artifact_slow"] is True
      and pairs_by["gather"]["input_bytes"] == 256 * 256 * 4 + 16 * 8)
why = {s["operator"]: s["reason"] for s in man["skipped"]}
check("manifest: skipped with reasons", sorted(why) == ["arange", "ghost", "notriton", "smallonly"]
      and "neither" in why["arange"] and "no folder" in why["ghost"] and "no triton_impl.py" in why["notriton"]
      and "no 'large' case" in why["smallonly"])
check("manifest: no commit for a plain directory", man["commit"] is None and man["shapes"] == "large")
check("the ViperBench folder itself works", rd("convert-vb.rc").strip() == "0"
      and sorted(os.listdir(os.path.join(t, "out-vb", "problems"))) == ["02_gather.py", "05_scale.py"])
small = json.loads(rd("out-small", "MANIFEST.json"))
check("--shapes small", rd("convert-small.rc").strip() == "0"
      and [p["name"] for p in small["pairs"]] == ["05_scale", "06_smallonly"]
      and small["pairs"][0]["args"][0]["shape"] == [8])
check("not the artifact: exit 1, said", rd("none.rc").strip() == "1" and "not the artifact" in rd("none.txt"))

head = subprocess.run(["git", "-C", os.path.join(t, "artifact"), "rev-parse", "HEAD"], capture_output=True,
                      text=True).stdout.strip()
gm = json.loads(rd("out-git", "MANIFEST.json"))
check("git dir: read, its HEAD recorded", not os.path.exists(os.path.join(t, "git.err"))
      and rd("convert-git.rc").strip() == "0" and len(head) == 40 and gm["commit"] == head)
same = all(rd("out-git", d, f).replace(head[:12], "unknown") == rd("out", d, f)
           for d in ("problems", "solutions") for f in ("02_gather.py", "05_scale.py"))
check("git dir: the same pairs as the checkout", same)
check("checkout: commit and clean", json.loads(rd("out-co", "MANIFEST.json"))["commit"] == head
      and json.loads(rd("out-co", "MANIFEST.json"))["dirty"] is False)
check("checkout with a change: dirty", json.loads(rd("out-dirty", "MANIFEST.json"))["dirty"] is True)

# gpu.sh viperbench with the fake kgate
log = sorted(open(os.path.join(t, "fake.log")).read().split("\n"))
check("gpu.sh: every problem, one a GPU lane, its own solution", log == ["", "02_gather 0 02_gather.py",
                                                                         "05_scale 1 05_scale.py"])
s1 = json.loads(rd("gpu1", "x", "viperbench", "summary.json"))
rows = {r["problem"]: r for r in s1["problems"]}
check("summary: the timed-out problem", rows.get("02_gather", {}).get("verdict") == "STEP-TIMEOUT"
      and rows["02_gather"]["exit"] == 124)
sc = rows.get("05_scale", {})
check("summary: verdict, E, rho, KB gate, flags, vendor share", sc.get("verdict") == "SLOW" and sc.get("exit") == 1
      and sc.get("e_torch") == 0.5 and sc.get("rho") == 0.25 and sc.get("rho_torch") == 0.5
      and sc.get("kb_correct") is True and sc.get("vendor_share") == 0.9 and sc.get("flags") == ["library-kernels"]
      and "PyTorch" in sc.get("vendor_detail", ""))
check("summary: command, commit, date, device, artifact",
      "timeout 2 s" in s1["command"] and s1["commit"] == "fakecommit" and s1["date"].endswith("Z")
      and s1["device"]["name"] == "Fake GPU" and s1["artifact"]["shapes"] == "large"
      and len(s1["skipped"]) == 4 and s1["counts"] == {"SLOW": 1, "STEP-TIMEOUT": 1})
check("summary: the table printed, passes-but-slow named", "05_scale" in rd("gpu1.txt")
      and "passes-but-slow (KernelBench admits, kgate SLOW): 05_scale" in rd("gpu1.txt"))
check("gpu.sh: NAME.json and the manifest come back", os.path.exists(os.path.join(t, "gpu1", "x", "viperbench",
                                                                                  "05_scale.json"))
      and os.path.exists(os.path.join(t, "gpu1", "x", "viperbench", "MANIFEST.json")))
check("VIPER_ONLY picks by operator name, one lane sets no GPU",
      open(os.path.join(t, "fake2.log")).read() == "05_scale - 05_scale.py\n"
      and [r["problem"] for r in json.loads(rd("gpu2", "x", "viperbench", "summary.json"))["problems"]] == ["05_scale"])

bad = [n for n, ok in checks if not ok]
for n in bad:
    print("FAIL:", n)
print(f"{len(checks) - len(bad)} passed, {len(bad)} failed")
sys.exit(1 if bad else 0)
PY

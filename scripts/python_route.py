"""The same Triton kernels through Triton's JIT from Python (tests/python/
triton_jit.py) and through the AOT-compiled .so (build/triton): kgate's
verdicts and median times side by side, from the JSON files that
tests/gpu/gpu_python.sh wrote into DIR. Prints one JSON document.

    python3 scripts/python_route.py DIR"""
import json
import os
import sys

d = sys.argv[1]
rows = []
for shape in ("small", "large"):
    try:
        jit = {r["kernel"]: r for r in json.load(open(os.path.join(d, f"jit-{shape}.json")))["results"]}
        aot = {r["kernel"]: r for r in json.load(open(os.path.join(d, f"aot-{shape}.json")))["results"]}
    except (OSError, ValueError, KeyError) as e:
        rows.append({"shape": shape, "error": str(e)})
        continue
    for pair in ("layer_norm_bf16", "rms_norm_fp16", "matmul_fp16", "argmax_fp16"):
        j, a = jit.get("jit_" + pair, {}), aot.get("triton_" + pair, {})
        tj = j.get("summaries", {}).get("time/gpu/median", {}).get("value")
        ta = a.get("summaries", {}).get("time/gpu/median", {}).get("value")
        rows.append({"kernel": pair, "shape": j.get("shape") or shape, "jit_verdict": j.get("verdict"),
                     "so_verdict": a.get("verdict"), "jit_s": tj, "so_s": ta,
                     "ratio": (tj / ta) if tj and ta else None,
                     "within_2pct": (abs(tj / ta - 1) <= 0.02) if tj and ta else None})
some = next((json.load(open(os.path.join(d, f))) for f in ("jit-large.json", "jit-small.json")
             if os.path.exists(os.path.join(d, f))), {})
print(json.dumps({"command": "tests/gpu/gpu_python.sh (kgate check tests/python/triton_jit.py and "
                             "build/triton/libkgate_triton.so --shape small|large); scripts/python_route.py",
                  "commit": some.get("commit"), "date": some.get("date"), "device": some.get("device"),
                  "pairs": rows}, indent=1))

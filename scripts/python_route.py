"""The same kernels through a DSL's JIT from Python and through the
ahead-of-time .so: kgate's verdicts and median times side by side, from the
JSON files the GPU tests wrote into DIR. Prints one JSON document.
  triton:   tests/python/triton_jit.py against build/triton (gpu_python.sh:
            jit-*.json, aot-*.json)
  tilelang: tests/python/tilelang_jit.py against build/tilelang
            (gpu_tilelang_jit.sh: tl-jit-*.json, tl-aot-*.json)

    python3 scripts/python_route.py DIR [triton|tilelang]"""
import json
import os
import sys

d = sys.argv[1]
dsl = sys.argv[2] if len(sys.argv) > 2 else "triton"
if dsl == "tilelang":
    prefix, jit_pre, aot_pre = "tl-", "jit_tilelang_", "tilelang_"
    pairs = ("layer_norm_naive_bf16", "layer_norm_bf16", "rms_norm_naive_fp16", "rms_norm_fp16",
             "softmax_naive_fp16", "softmax_fp16")
    what = "tests/gpu/gpu_tilelang_jit.sh (kgate check tests/python/tilelang_jit.py and build/tilelang/libkgate_tilelang.so"
else:
    prefix, jit_pre, aot_pre = "", "jit_", "triton_"
    pairs = ("layer_norm_bf16", "rms_norm_fp16", "matmul_fp16", "argmax_fp16")
    what = "tests/gpu/gpu_python.sh (kgate check tests/python/triton_jit.py and build/triton/libkgate_triton.so"
rows = []
for shape in ("small", "large"):
    try:
        jit = {r["kernel"]: r for r in json.load(open(os.path.join(d, f"{prefix}jit-{shape}.json")))["results"]}
        aot = {r["kernel"]: r for r in json.load(open(os.path.join(d, f"{prefix}aot-{shape}.json")))["results"]}
    except (OSError, ValueError, KeyError) as e:
        rows.append({"shape": shape, "error": str(e)})
        continue
    for pair in pairs:
        j, a = jit.get(jit_pre + pair, {}), aot.get(aot_pre + pair, {})
        tj = j.get("summaries", {}).get("time/gpu/median", {}).get("value")
        ta = a.get("summaries", {}).get("time/gpu/median", {}).get("value")
        rows.append({"kernel": pair, "shape": j.get("shape") or shape, "jit_verdict": j.get("verdict"),
                     "so_verdict": a.get("verdict"), "jit_s": tj, "so_s": ta,
                     "ratio": (tj / ta) if tj and ta else None,
                     "within_2pct": (abs(tj / ta - 1) <= 0.02) if tj and ta else None})
some = next((json.load(open(os.path.join(d, f))) for f in (prefix + "jit-large.json", prefix + "jit-small.json")
             if os.path.exists(os.path.join(d, f))), {})
print(json.dumps({"command": what + " --shape small|large); scripts/python_route.py " + dsl,
                  "commit": some.get("commit"), "date": some.get("date"), "device": some.get("device"),
                  "pairs": rows}, indent=1))

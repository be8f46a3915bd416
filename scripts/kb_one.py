"""One verdict by KernelBench's own evaluator (eval_kernel_against_ref), in
this process, for scripts/kb_compare.py: 5 correctness trials, 100 timed
trials of the solution and of the reference (CUDA events), as KernelBench's
level-1 runs use. Writes {correct, runtime_ms, ref_runtime_ms, ...} as JSON.

    python3 kb_one.py KERNELBENCH_SRC PROBLEM.py SOLUTION.py OUT.json"""
import json
import os
import sys
import tempfile
import time

t0 = time.time()
kb_src, prob, sol, out = sys.argv[1:5]
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kb_stubs"))
sys.path.insert(0, kb_src)
import torch  # noqa: E402,F401
from kernelbench.eval import eval_kernel_against_ref  # noqa: E402

t_ready = time.time()  # imports done: what follows holds the GPU

res = {"problem": os.path.basename(prob), "solution": os.path.basename(sol)}
try:
    with tempfile.TemporaryDirectory() as d:
        r = eval_kernel_against_ref(open(prob).read(), open(sol).read(), seed_num=42, num_correct_trials=5,
                                    num_perf_trials=100, measure_performance=True, timing_method="cuda_event",
                                    build_dir=d, device=0, backend="triton")
    res.update(compiled=bool(r.compiled), correct=bool(r.correctness), runtime_ms=r.runtime,
               ref_runtime_ms=r.ref_runtime,
               speedup=(r.ref_runtime / r.runtime) if r.correctness and r.runtime and r.runtime > 0 else None,
               metadata={k: str(v)[:300] for k, v in (r.metadata or {}).items()})
except Exception as e:
    res.update(error=f"{type(e).__name__}: {str(e)[:300]}")
res["wall_s"] = time.time() - t0
res["startup_s"] = t_ready - t0
with open(out, "w") as f:
    json.dump(res, f, indent=1)

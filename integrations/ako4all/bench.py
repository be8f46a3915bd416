#!/usr/bin/env python3
"""kgate as the bench of an AKO4ALL loop (GUIDE.md): judges solution/ against
the reference with `kgate kernelbench` and prints the lines the agent reads,
in the format of AKO4ALL's built-in evaluator plus kgate's verdict, its
efficiencies and the top causes with their fixes:

    COMPILED: True          CORRECT: True           RUNTIME: 0.512 (ms)
    REF_RUNTIME: 0.731      SPEEDUP: 1.43           VERDICT: SLOW
    E_BEST: 0.52            E_LIB: 1.43             RHO: 0.41
    CAUSE: RC2 0.61 <title> -- FIX: <hint>
    PROTOCOL: <a rule of the loop this iteration breaks>

Each iteration's whole result goes to TRAJECTORY/iter-N/kgate.json (and the
solution's source beside it), which `kgate trajectory TRAJECTORY` reads.

    python3 bench/kgate/bench.py --ref input/reference.py --solution solution/kernel.py \\
        [--trajectory trajectory] [--timeout S] [--server SOCK|auto|none] [-- KGATE CHECK OPTIONS]

Exit codes are kgate's (0 OK, 1 SLOW, 2 INCORRECT/CRASH/TIMEOUT/IMPOSSIBLE,
3 usage, 4 a file that is no candidate, 5 environment)."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# what a solution is written in, from its imports (the protocol: no switch)
LANGUAGES = (("tilelang", re.compile(r"^\s*(?:import|from)\s+tilelang\b", re.M)),
             ("triton", re.compile(r"^\s*(?:import|from)\s+triton\b", re.M)),
             ("cuda", re.compile(r"load_inline|cpp_extension|__global__")))


def find_kgate():
    """$KGATE_BIN, else kgate on PATH."""
    k = os.environ.get("KGATE_BIN") or shutil.which("kgate")
    if not k:
        sys.exit("bench: no kgate: put it on PATH or set KGATE_BIN")
    return k


def language(src):
    for name, pat in LANGUAGES:
        if pat.search(src):
            return name
    return "pytorch"


def judge(kgate, ref, sol, timeout, options, server="auto"):
    """(results document or None, exit code, stderr's last line); through
    the kgate serve at `server` when one answers there."""
    with tempfile.TemporaryDirectory(prefix="kgate-bench-") as d:
        out = os.path.join(d, "r.json")
        cmd = [kgate, "kernelbench", ref, sol, "--json", out]
        if timeout:
            cmd += ["--timeout", str(timeout)]
        if server != "none":
            cmd += ["--server", server]
        cmd += ["--", "--diagnose=auto", *options]
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace")
        doc = None
        if os.path.exists(out):
            with open(out, encoding="utf-8", errors="replace") as f:
                doc = json.load(f)
        # kgate's "no kgate serve answers at ...: checking here" is not the iteration's error
        err = [line for line in p.stderr.splitlines() if line.strip() and "no kgate serve answers" not in line]
        return doc, p.returncode, err[-1] if err else ""


def summary(r, name):
    v = (r.get("summaries") or {}).get(name)
    return v.get("value") if isinstance(v, dict) else None


def lines(doc, code, err):
    """The lines the agent reads, for a results document (or its absence)."""
    res = (doc or {}).get("results") or []
    if not res:
        return [f"COMPILED: {code != 4}", "CORRECT: False", f"VERDICT: none (exit {code})",
                f"ERROR: {err or 'kgate gave no result'}"]
    r = res[0]
    kb = r.get("kernelbench") or {}
    t = summary(r, "time/judged") or summary(r, "time/gpu/median")
    t_ref = None
    for lib in r.get("libraries") or []:
        if lib.get("name") == "torch" and lib.get("status") == "ok":
            t_ref = lib.get("time")
    fmt = lambda v, f="%.3f": (f % v) if isinstance(v, (int, float)) else "-"  # noqa: E731
    out = ["COMPILED: True",  # the solution imported: kgate judged it
           f"CORRECT: {r.get('verdict') not in ('INCORRECT', 'CRASH', 'TIMEOUT')}",
           f"RUNTIME: {fmt(t * 1e3 if t else None)}", f"REF_RUNTIME: {fmt(t_ref * 1e3 if t_ref else None)}",
           f"SPEEDUP: {fmt(kb.get('speedup'), '%.2f')}", f"VERDICT: {r.get('verdict')}",
           f"E_BEST: {fmt(summary(r, 'best/efficiency'), '%.2f')}",
           f"E_LIB: {fmt(summary(r, 'lib/efficiency'), '%.2f')}", f"RHO: {fmt(summary(r, 'roof/fraction'), '%.2f')}",
           f"REASON: {r.get('reason', '')}"]
    for c in ((r.get("diagnosis") or {}).get("causes") or [])[:3]:
        out.append(f"CAUSE: {c.get('id')} {fmt(c.get('score'), '%.2f')} {c.get('title', '')} -- FIX: {c.get('hint', '')}")
    if "library-kernels" in (r.get("flags") or []):
        out.append("PROTOCOL: library-kernels: PyTorch's own kernels do a material share of the work")
    return out


def record(traj, sol, doc, src_lang):
    """Saves the iteration under traj/iter-N; the protocol lines it breaks."""
    os.makedirs(traj, exist_ok=True)
    n = 1 + sum(1 for e in os.listdir(traj) if re.fullmatch(r"iter-\d+", e))
    it = os.path.join(traj, f"iter-{n}")
    os.makedirs(it)
    shutil.copy(sol, os.path.join(it, os.path.basename(sol)))
    if doc is not None:
        with open(os.path.join(it, "kgate.json"), "w") as f:
            json.dump(doc, f)
    out = []
    lang_file = os.path.join(traj, "language")
    if os.path.exists(lang_file):
        with open(lang_file) as f:
            first = f.read().strip()
        if first != src_lang:
            out.append(f"PROTOCOL: language switch: {first} at the first iteration, {src_lang} now")
    else:
        with open(lang_file, "w") as f:
            f.write(src_lang + "\n")
    return out, n


def main(argv):
    ap = argparse.ArgumentParser(prog="bench.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--ref", required=True, help="the reference (KernelBench format: Model, get_inputs)")
    ap.add_argument("--solution", required=True, help="the solution (ModelNew)")
    ap.add_argument("--trajectory", default="trajectory", help="where each iteration is saved (default trajectory)")
    ap.add_argument("--timeout", type=float, default=None, help="each kernel job's budget in seconds")
    ap.add_argument("--server", default="auto",
                    help="a running kgate serve's socket (default auto: kgate serve --socket auto's on GPU 0, "
                         "used when one answers there); none: judge here")
    a, rest = ap.parse_known_args(argv)
    if rest and rest[0] == "--":
        rest = rest[1:]
    for p in (a.ref, a.solution):
        if not os.path.isfile(p):
            sys.stderr.write(f"bench: {p}: no such file\n")
            return 3
    with open(a.solution, encoding="utf-8", errors="replace") as f:
        lang = language(f.read())
    doc, code, err = judge(find_kgate(), a.ref, a.solution, a.timeout, rest, a.server)
    protocol, n = record(a.trajectory, a.solution, doc, lang)
    for line in [f"ITERATION: {n}", f"LANGUAGE: {lang}"] + lines(doc, code, err) + protocol:
        print(line)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""kgate against KernelBench's own evaluator on KernelBench level-1 problems
(issue 9's measurement; run on the GPU machine by scripts/gpu.sh kb-compare).

For each problem it judges two kinds of solution: reference-as-solution
(the problem's own Model as ModelNew: correct, and as fast as the library
by construction) and, where tests/kernelbench/slow/ has one, a correct but
slow solution. Each verdict is taken by `kgate kernelbench` and by
KernelBench's eval_kernel_against_ref (scripts/kb_one.py), each in its own
process, `--reps` times, and timed on the wall clock (each process holds the
GPU for all of its life, so its wall time is its GPU-seconds).

With --group N, each problem's solutions (reference-as-solution, the slow
one, copies of the reference up to N, and with --bad a file without
ModelNew) are judged by one `kgate kernelbench DIR DIR` instead, as an LLM
loop judges many candidates of one problem: the problem's library paths are
timed once for the group, and each solution still runs in its own workers.
Per group it records the wall time, every solution's verdict and the GPU
time held per verdict (OUT/kb-group.json).

Writes OUT/kb-compare.json after every verdict (a run cut short keeps what
it measured): per verdict the wall time, kgate's verdict, time, E_lib and
its KernelBench gate, and KernelBench's correct, runtime and speedup.

    python3 scripts/kb_compare.py --kb .cache/kernelbench --kgate build/kgate --out OUT \\
        --problems 1,2,9,40 --reps 2 --kb-problems 1,9 [--budget 500]"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def problem_file(level_dir, num):
    for f in os.listdir(level_dir):
        if f.split("_", 1)[0] == str(num) and f.endswith(".py"):
            return os.path.join(level_dir, f)
    raise SystemExit(f"no level-1 problem {num} in {level_dir}")


def ref_solution(prob, d):
    path = os.path.join(d, "ref_" + os.path.basename(prob))
    with open(prob) as f, open(path, "w") as g:
        g.write(f.read() + "\n\nModelNew = Model  # reference-as-solution\n")
    return path


JOB_KEYS = ("job/wall", "job/startup", "lib/job/wall", "lib/job/startup")
PHASE_KEYS = tuple("time/phase/" + p for p in ("setup", "open", "context", "checks", "timing", "recheck"))


def held(r):
    """A result's kernel worker time on the GPU (wall less start), and its library worker's."""
    s = r.get("summaries", {})
    g = lambda k: s.get(k, {}).get("value")  # noqa: E731
    k = (g("job/wall") or 0) - (g("job/startup") or 0)
    lib = (g("lib/job/wall") or 0) - (g("lib/job/startup") or 0) if g("lib/job/wall") is not None else None
    return k, lib


def run_kgate(kgate, prob, sol, d, timeout, extra=()):
    out = os.path.join(d, "kg.json")
    if os.path.exists(out):
        os.unlink(out)
    t0 = time.time()
    p = subprocess.run([kgate, "kernelbench", prob, sol, "--json", out, *extra], capture_output=True, text=True,
                       timeout=timeout)
    wall = time.time() - t0
    rec = {"wall_s": wall, "exit": p.returncode, "stderr": p.stderr[-400:]}
    if os.path.exists(out):
        doc = json.load(open(out))
        rs = [r for r in doc.get("results", []) if r.get("kernel") == "ModelNew"]
        if rs:
            r = rs[0]
            s = r.get("summaries", {})
            g = lambda k: s.get(k, {}).get("value")  # noqa: E731
            libs = {l["name"]: l.get("time") for l in r.get("libraries", [])}
            rec.update(verdict=r.get("verdict"), reason=r.get("reason"), detail=(r.get("detail") or "")[:300],
                       flags=r.get("flags"), time_s=g("time/gpu/median"), judged_s=g("time/judged"), ci=[g("time/gpu/ci_lo"), g("time/gpu/ci_hi")],
                       e_lib=g("lib/efficiency"), rho=g("roof/fraction"), torch_s=libs.get("torch"),
                       kernelbench=r.get("kernelbench"), commit=doc.get("commit"), device=doc.get("device"),
                       jobs={k: g(k) for k in JOB_KEYS + PHASE_KEYS})
            # the time its workers held the GPU: each worker's wall less its start (interpreter, torch)
            if all(rec["jobs"][k] is not None for k in JOB_KEYS):
                rec["gpu_held_s"] = sum(held(r))
    return rec


def run_kb(kb, prob, sol, d, timeout):
    out = os.path.join(d, "kb.json")
    if os.path.exists(out):
        os.unlink(out)
    t0 = time.time()
    try:
        p = subprocess.run([sys.executable, os.path.join(HERE, "kb_one.py"), os.path.join(kb, "src"), prob, sol, out],
                           capture_output=True, text=True, timeout=timeout)
        err = p.stderr[-400:]
    except subprocess.TimeoutExpired:
        err = f"timed out after {timeout} s"
    wall = time.time() - t0
    rec = json.load(open(out)) if os.path.exists(out) else {"error": err}
    rec["wall_s"] = wall
    if "startup_s" in rec:
        rec["gpu_held_s"] = rec["wall_s"] - rec["startup_s"]  # the same measure as kgate's
    return rec


def run_group(kgate, prob, sols, d, timeout, extra=()):
    """One `kgate kernelbench PDIR SDIR` over a problem's solutions."""
    pd, sd = os.path.join(d, "gp"), os.path.join(d, "gs")
    for x in (pd, sd):
        if os.path.isdir(x):
            for f in os.listdir(x):
                os.unlink(os.path.join(x, f))
        os.makedirs(x, exist_ok=True)
    num = os.path.basename(prob).split("_", 1)[0]
    os.symlink(os.path.abspath(prob), os.path.join(pd, os.path.basename(prob)))
    for kind, sol in sols:
        os.symlink(os.path.abspath(sol), os.path.join(sd, f"{num}_{kind}.py"))
    out = os.path.join(d, "kg-group.json")
    if os.path.exists(out):
        os.unlink(out)
    t0 = time.time()
    p = subprocess.run([kgate, "kernelbench", pd, sd, "--json", out, *extra], capture_output=True, text=True,
                       timeout=timeout * len(sols))
    rec = {"problem": os.path.basename(prob), "n": len(sols), "wall_s": time.time() - t0, "exit": p.returncode,
           "stdout": p.stdout[-1500:], "stderr": p.stderr[-400:], "solutions": []}
    doc = json.load(open(out)) if os.path.exists(out) else {}
    lib_held = None
    for r in doc.get("results", []):
        k, lib = held(r)
        lib_held = lib if lib is not None else lib_held
        rec["solutions"].append({"kernel": r.get("kernel"), "verdict": r.get("verdict"), "kernel_held_s": k,
                                 "e_lib": r.get("summaries", {}).get("lib/efficiency", {}).get("value"),
                                 "kernelbench": r.get("kernelbench")})
    rec["errors"] = doc.get("errors", [])
    rec["lib_held_s"] = lib_held
    # a solution that did not load still held the GPU in its own kernel job
    rec["error_held_s"] = sum(e["jobs"].get("job/wall", 0) - e["jobs"].get("job/startup", 0)
                              for e in rec["errors"] if e.get("jobs"))
    n = len(rec["solutions"])
    if n:
        rec["gpu_held_per_verdict_s"] = (sum(x["kernel_held_s"] for x in rec["solutions"]) + (lib_held or 0) +
                                         rec["error_held_s"]) / n
        rec["wall_per_verdict_s"] = rec["wall_s"] / (n + len(rec["errors"]))
    rec["commit"], rec["device"] = doc.get("commit"), doc.get("device")
    return rec


def save(doc, path):
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(path + ".tmp", path)


def main_group(a, level, doc, start):
    """--group: one `kgate kernelbench DIR DIR` per problem (run_group); OUT/kb-group.json."""
    doc["method"] = ("one kgate kernelbench DIR DIR per problem over its solutions, timed on the wall clock; "
                     "gpu_held_per_verdict_s: the kernel workers' wall less start, summed (those of solutions "
                     "that did not load included), plus the library worker's once, over the solutions judged")
    doc["groups"] = []
    path = os.path.join(a.out, "kb-group.json")
    with tempfile.TemporaryDirectory() as d:
        for num in [int(x) for x in a.problems.split(",") if x]:
            if time.time() - start > a.budget:
                doc["cut_short"] = f"budget of {a.budget} s reached"
                break
            prob = problem_file(level, num)
            ref = ref_solution(prob, d)
            sols = [("ref", ref)]
            slow = os.path.join(a.slow, os.path.basename(prob))
            if os.path.exists(slow):
                sols.append(("slow", slow))
            sols += [(f"ref{i}", ref) for i in range(2, a.group - len(sols) + 2)]
            if a.bad:
                bad = os.path.join(d, f"bad_{num}.py")
                with open(bad, "w") as f:
                    f.write("x = 1  # no ModelNew\n")
                sols.append(("bad", bad))
            g = run_group(a.kgate, prob, sols, d, a.timeout, a.kgate_arg)
            doc["groups"].append(g)
            print(g["problem"], "n", g["n"], "exit", g["exit"], "wall %.1f s" % g["wall_s"],
                  "held/verdict %.2f s" % (g.get("gpu_held_per_verdict_s") or 0),
                  [(x["kernel"], x["verdict"]) for x in g["solutions"]],
                  "errors:", [e.get("message", "")[-160:] for e in g["errors"]], flush=True)
            save(doc, path)
    save(doc, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kb", required=True, help="KernelBench checkout (KernelBench/level1, src/)")
    ap.add_argument("--kgate", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--problems", required=True, help="level-1 problem numbers for kgate")
    ap.add_argument("--kb-problems", default="", help="those also judged by KernelBench's evaluator")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--slow", default=os.path.join(HERE, "..", "tests", "kernelbench", "slow"))
    ap.add_argument("--budget", type=float, default=1e9, help="stop starting verdicts after this many seconds")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--group", type=int, default=0,
                    help="judge each problem's solutions in one kgate kernelbench DIR DIR, padded with copies "
                         "of the reference to this many")
    ap.add_argument("--bad", action="store_true", help="with --group: add a solution without ModelNew to each")
    ap.add_argument("--kgate-arg", action="append", default=[],
                    help="an option for kgate's check, e.g. --kgate-arg=--roof --kgate-arg=datasheet (repeat)")
    a = ap.parse_args()
    level = os.path.join(a.kb, "KernelBench", "level1")
    os.makedirs(a.out, exist_ok=True)
    doc = {"command": "python3 scripts/kb_compare.py " + " ".join(sys.argv[1:]),
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "kernelbench_commit": open(os.path.join(a.kb, "COMMIT")).read().strip()
           if os.path.exists(os.path.join(a.kb, "COMMIT")) else None,
           "method": "each verdict in its own process, timed on the wall clock; KernelBench: "
                     "eval_kernel_against_ref, 5 correctness trials, 100 perf trials, cuda_event, "
                     "reference timed too; gpu_held_s: the time processes held the GPU, each one's wall "
                     "less its start (interpreter and torch imports; kgate: its library and kernel workers, "
                     "job/wall - job/startup; KernelBench: wall less the time to its imports)", "verdicts": []}
    kb_set = {int(x) for x in a.kb_problems.split(",") if x}
    start = time.time()
    if a.group:
        return main_group(a, level, doc, start)
    path = os.path.join(a.out, "kb-compare.json")
    with tempfile.TemporaryDirectory() as d:
        for num in [int(x) for x in a.problems.split(",") if x]:
            prob = problem_file(level, num)
            sols = [("ref", ref_solution(prob, d))]
            slow = os.path.join(a.slow, os.path.basename(prob))
            if os.path.exists(slow):
                sols.append(("slow", slow))
            for kind, sol in sols:
                # repeats only where the spread is measured: reference-as-solution of the problems
                # KernelBench's evaluator also judges
                for rep in range(a.reps if (num in kb_set and kind == "ref") else 1):
                    if time.time() - start > a.budget:
                        doc["cut_short"] = f"budget of {a.budget} s reached"
                        break
                    v = {"problem": os.path.basename(prob), "solution": kind, "rep": rep}
                    v["kgate"] = run_kgate(a.kgate, prob, sol, d, a.timeout, a.kgate_arg)
                    if num in kb_set:
                        v["kernelbench"] = run_kb(a.kb, prob, sol, d, a.timeout)
                    doc["verdicts"].append(v)
                    print(json.dumps({k: v[k] for k in ("problem", "solution", "rep")}),
                          "kgate", v["kgate"].get("verdict"), "%.1fs" % v["kgate"]["wall_s"],
                          "| KB", v.get("kernelbench", {}).get("correct"),
                          "%.1fs" % v.get("kernelbench", {}).get("wall_s", 0), flush=True)
                    save(doc, path)
    save(doc, path)  # with cut_short, when the budget stopped it


if __name__ == "__main__":
    main()

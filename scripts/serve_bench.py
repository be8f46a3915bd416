"""kgate serve's wall time per verdict against plain kgate and KernelBench's
own evaluator, in one run on one GPU (issue 31's benchmark; run on the GPU
machine by scripts/gpu.sh serve-bench).

In order, each step saving OUT/serve-bench.json as it goes (a run cut short
by --budget keeps what it measured):
  1. cold: a plain `kgate check` of the first .so kernel and a plain
     `kgate kernelbench` of the first problem's reference-as-solution;
  2. `kgate serve --socket` starts; its first verdicts are the same two
     (the wall from the service's start is recorded too);
  3. warm, --reps times: each .so kernel (`kgate check --server`) and each
     problem's reference-as-solution and slow solution (`kgate kernelbench
     --server`), each a process of its own, timed on the wall clock, with
     the phase summaries of its result (where the warm wall goes);
  4. plain kgate on each of them, once: the service's verdicts against
     plain kgate's, and its medians;
  5. KernelBench's eval_kernel_against_ref on each problem's solutions,
     once (last: on problem 19 it takes some 80 s a verdict).

    python3 scripts/serve_bench.py --kb .cache/kernelbench --kgate BUILD/kgate --out OUT \\
        --problems 1,9,19,23,40,95 --so BUILD/libkgate_bundled.so:layer_norm_v2_fp16,... [--reps 3] [--budget S]"""
import argparse
import datetime
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from kb_compare import problem_file, ref_solution, run_kb, save  # noqa: E402

PHASES = ("time/wall", "job/startup", "job/wall", "lib/job/startup", "lib/job/wall", "list/wall", "list/warm",
          "time/phase/setup", "time/phase/open", "time/phase/context", "time/phase/checks", "time/phase/timing",
          "time/phase/recheck")


def result_of(path, kernel=None):
    """The first result (of kernel) in a results file: verdict, times, phases."""
    try:
        doc = json.load(open(path))
    except (OSError, ValueError):
        return {}
    rs = [r for r in doc.get("results", []) if kernel is None or r.get("kernel") == kernel]
    if not rs:
        return {"errors": [e.get("message", "")[-200:] for e in doc.get("errors", [])]}
    r = rs[0]
    s = r.get("summaries", {})
    g = lambda k: s.get(k, {}).get("value")  # noqa: E731
    return {"kernel": r.get("kernel"), "shape": r.get("shape"), "verdict": r.get("verdict"),
            "time_s": g("time/gpu/median"), "e_best": g("best/efficiency"), "e_lib": g("lib/efficiency"),
            "rho": g("roof/fraction"), "phases": {k: g(k) for k in PHASES if g(k) is not None},
            "commit": doc.get("commit"), "device": (doc.get("device") or {}).get("name")}


def timed(cmd, out, kernel, timeout):
    if os.path.exists(out):
        os.unlink(out)
    t0 = time.time()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        code, err = p.returncode, p.stderr[-300:]
    except subprocess.TimeoutExpired:
        code, err = None, f"timed out after {timeout} s"
    rec = {"wall_s": round(time.time() - t0, 3), "exit": code, "fell_back": "checking here" in err}
    rec.update(result_of(out, kernel))
    if code not in (0, 1):
        rec["stderr"] = err
    elif code is not None:  # the check's own lines (a served check's notes): why the library was timed again, say
        rec["notes"] = [l[len("kgate: "):][:300] for l in p.stderr.splitlines() if l.startswith("kgate: ")][:16]
    return rec


class Bench:
    def __init__(self, a, d):
        self.a, self.d, self.sock = a, d, None
        self.doc = {"command": "python3 scripts/serve_bench.py " + " ".join(sys.argv[1:]),
                    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "verdicts": []}
        self.path = os.path.join(a.out, "serve-bench.json")
        self.start = time.time()

    def left(self):
        return self.a.budget - (time.time() - self.start)

    def one(self, step, what, cand, server):
        """A verdict: what is ('so', 'KERNEL-PATH') or ('kb', (problem, solution, kind))."""
        kind, x = what
        out = os.path.join(self.d, "r.json")
        srv = ["--server", self.sock] if server else []
        if kind == "so":
            cmd = [self.a.kgate, "check", x, "--shape", "large", "--json", out, "-q", *srv, *self.a.option]
            label, kernel = x.rsplit(":", 1)[1], None
        else:
            prob, sol, sk = x
            cmd = [self.a.kgate, "kernelbench", prob, sol, "--json", out, *srv]
            if self.a.option:
                cmd += ["--", *self.a.option]
            label, kernel = f"{os.path.basename(prob).split('_', 1)[0]}-{sk}", "ModelNew"
        rec = {"step": step, "kind": kind, "label": label, "served": server}
        rec.update(timed(cmd, out, kernel, self.a.timeout))
        self.doc["verdicts"].append(rec)
        print(step, kind, label, "served" if server else "plain", rec.get("verdict"), "exit", rec["exit"],
              "%.2f s" % rec["wall_s"], flush=True)
        save(self.doc, self.path)
        return rec

    def serve(self):
        self.sock = os.path.join(self.d, "s.sock")
        cmd = [self.a.kgate, "serve", "--socket", self.sock, "--idle-timeout", "300"]
        if self.a.option:
            cmd += ["--", *self.a.option]
        t0 = time.time()
        self.proc = subprocess.Popen(cmd, stderr=open(os.path.join(self.a.out, "serve.log"), "w"))
        while not os.path.exists(self.sock) and time.time() - t0 < 30:
            time.sleep(0.02)
        s = socket.socket(socket.AF_UNIX)
        s.connect(self.sock)  # fails loudly when the service did not start
        s.close()
        self.doc["serve_listening_s"] = round(time.time() - t0, 3)
        return t0

    def stop(self):
        if self.sock:
            self.proc.terminate()
            self.proc.wait(timeout=30)


def items(a, d, level):
    so = [("so", k) for k in a.so.split(",") if k]
    kb = []
    for num in [int(x) for x in a.problems.split(",") if x]:
        prob = problem_file(level, num)
        kb.append(("kb", (prob, ref_solution(prob, d), "ref")))
        slow = os.path.join(a.slow, os.path.basename(prob))
        if os.path.exists(slow):
            kb.append(("kb", (prob, slow, "slow")))
    return so, kb


def summarize(doc):
    """Median warm wall per verdict by kind; the service's verdicts against plain ones."""
    warm = [v for v in doc["verdicts"] if v["step"] == "warm" and v["exit"] in (0, 1, 2)]
    out = {}
    for kind in ("so", "kb"):
        w = [v["wall_s"] for v in warm if v["kind"] == kind]
        if w:
            out[f"warm_median_wall_s_{kind}"] = round(statistics.median(w), 3)
    kbw = [v["wall_s"] for v in doc.get("kernelbench", [])]
    if kbw:
        out["kernelbench_median_wall_s"] = round(statistics.median(kbw), 3)
        if "warm_median_wall_s_kb" in out:
            out["kernelbench_over_served_kb"] = round(out["kernelbench_median_wall_s"] / out["warm_median_wall_s_kb"], 2)
    plain = {v["label"]: v for v in doc["verdicts"] if v["step"] == "plain"}
    same, differ, ratios = 0, [], []
    for v in warm:
        p = plain.get(v["label"])
        if not p:
            continue
        if p.get("verdict") == v.get("verdict"):
            same += 1
        else:
            differ.append(f"{v['label']}: served {v.get('verdict')}, plain {p.get('verdict')}")
        if p.get("time_s") and v.get("time_s"):
            ratios.append(v["time_s"] / p["time_s"])
    out.update(verdicts_same=same, verdicts_differ=differ)
    if ratios:
        out["median_time_served_over_plain"] = round(statistics.median(ratios), 4)
        out["max_abs_time_ratio_minus_1"] = round(max(abs(r - 1) for r in ratios), 4)
    return out


def run(a, b, so, kb):
    first = (so[:1] + kb[:1])
    for w in first:  # 1. cold, plain
        b.one("cold", w, None, False)
    t0 = b.serve()  # 2. the service's first verdicts
    for i, w in enumerate(first):
        r = b.one("first", w, None, True)
        if i == 0:
            b.doc["first_verdict_from_serve_start_s"] = round(time.time() - t0, 3)
    for rep in range(a.reps):  # 3. warm
        for w in so + kb:
            if b.left() < 30:
                b.doc["cut_short"] = "budget reached in the warm verdicts"
                return
            b.one("warm", w, None, True)
    b.stop()
    for w in so + kb:  # 4. plain kgate, the verdicts and medians the service's must equal
        if b.left() < 30:
            b.doc["cut_short"] = "budget reached in the plain verdicts"
            return
        b.one("plain", w, None, False)
    b.doc["kernelbench"] = []
    for _, (prob, sol, sk) in kb:  # 5. KernelBench's evaluator (last: 80 s a verdict on problem 19)
        if b.left() < 40:
            b.doc["cut_short"] = "budget reached in KernelBench's evaluator"
            return
        r = run_kb(a.kb, prob, sol, b.d, a.timeout)
        r["label"] = f"{os.path.basename(prob).split('_', 1)[0]}-{sk}"
        b.doc["kernelbench"].append(r)
        print("kernelbench", r["label"], r.get("correct"), "%.2f s" % r["wall_s"], flush=True)
        save(b.doc, b.path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kb", required=True, help="KernelBench checkout (KernelBench/level1, src/)")
    ap.add_argument("--kgate", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--problems", default="1,9,19,23,40,95")
    ap.add_argument("--so", default="", help="CAND.so:KERNEL,... judged as .so candidates")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--slow", default=os.path.join(HERE, "..", "tests", "kernelbench", "slow"))
    ap.add_argument("--budget", type=float, default=540)
    ap.add_argument("--timeout", type=float, default=240)
    ap.add_argument("--option", action="append", default=[], help="a kgate check option for every verdict (repeat)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kgate-sb-") as d:
        b = Bench(a, d)
        so, kb = items(a, d, os.path.join(a.kb, "KernelBench", "level1"))
        try:
            run(a, b, so, kb)
        finally:
            b.stop() if b.sock and b.proc.poll() is None else None
            b.doc["summary"] = summarize(b.doc)
            save(b.doc, b.path)
            print(json.dumps(b.doc["summary"], indent=1), flush=True)


if __name__ == "__main__":
    main()

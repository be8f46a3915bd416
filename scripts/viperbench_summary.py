"""The table and summary.json of a ViperBench run (`scripts/gpu.sh
viperbench`): one row a problem, from its `kgate kernelbench --json` file
and the exit code and seconds the step recorded.

    python3 scripts/viperbench_summary.py DIR [--command TEXT]

DIR holds runs.tsv (a line a problem: name, exit code, seconds), NAME.json
for each problem that wrote one, and MANIFEST.json (scripts/viperbench.py's,
for the artifact's commit). Prints the table and writes DIR/summary.json.
Standard library only."""
import argparse
import datetime
import json
import os
import sys

STEP_TIMEOUT = (124, 137)  # `timeout` ran out (TERM, or KILL after it)


def _value(s, key):
    v = s.get(key)
    return v.get("value") if isinstance(v, dict) else None


def row(name, code, seconds, doc):
    """One problem's row: its kgate verdict, E against PyTorch, rho, the
    KernelBench gate, flags and the vendor-kernel share; or why there is none."""
    r = {"problem": name, "exit": code, "seconds": seconds}
    if doc is None:
        r["verdict"] = "STEP-TIMEOUT" if code in STEP_TIMEOUT else "NO-RESULT"
        return r
    res = doc.get("results") or []
    if not res:
        errs = doc.get("errors") or []
        r["verdict"] = "NOT-JUDGED"
        r["reason"] = (errs[0].get("message", "") if errs else "no result")[:300]
        return r
    x = res[0]
    s = x.get("summaries", {})
    kb = x.get("kernelbench") or {}
    r.update(verdict=x.get("verdict"), reason=(x.get("reason") or "")[:300], flags=x.get("flags", []),
             e_torch=_value(s, "lib/efficiency"), rho=_value(s, "roof/fraction"),
             rho_torch=_value(s, "lib/roof/fraction"), time=_value(s, "time/judged") or _value(s, "time/gpu/median"),
             time_torch=_value(s, "lib/time/median"), vendor_kernels=_value(s, "time/vendor"),
             vendor_share=_value(s, "time/vendor_share"), kb_correct=kb.get("correct"),
             kb_speedup=kb.get("speedup"), max_scaled_err=kb.get("max_scaled_err"))
    if "library-kernels" in r["flags"] and x.get("detail"):
        r["vendor_detail"] = x["detail"][:200]
    return {k: v for k, v in r.items() if v is not None}


def _num(v, fmt="%.3f"):
    return fmt % v if isinstance(v, (int, float)) and not isinstance(v, bool) else "-"


def table(rows):
    w = max([10] + [len(r["problem"]) for r in rows])
    fmt = "%-" + str(w) + "s %-12s %4s %6s %8s %7s %9s %7s %8s %6s  %s"
    out = [fmt % ("problem", "kgate", "exit", "s", "E_torch", "rho", "rho_torch", "KB corr", "KB x", "vendor",
                  "flags / reason")]
    for r in rows:
        corr = {True: "yes", False: "no"}.get(r.get("kb_correct"), "-")
        note = ",".join(r.get("flags", [])) or r.get("reason", "")
        out.append(fmt % (r["problem"], r["verdict"], r["exit"], r["seconds"], _num(r.get("e_torch")),
                          _num(r.get("rho")), _num(r.get("rho_torch")), corr, _num(r.get("kb_speedup")),
                          _num(r.get("vendor_share"), "%.2f"), note[:100]))
    admitted = [r["problem"] for r in rows if r.get("kb_correct") and r.get("verdict") == "SLOW"]
    if admitted:
        out.append(f"passes-but-slow (KernelBench admits, kgate SLOW): {', '.join(admitted)}")
    return "\n".join(out)


def main(argv):
    ap = argparse.ArgumentParser(prog="viperbench_summary.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--command", default="scripts/gpu.sh viperbench", help="the command the summary records")
    a = ap.parse_args(argv)
    runs = os.path.join(a.dir, "runs.tsv")
    if not os.path.isfile(runs):
        sys.stderr.write(f"viperbench_summary: {runs}: no such file\n")
        return 1
    rows, first = [], {}
    with open(runs) as f:
        lines = sorted(line.rstrip("\n").split("\t") for line in f if line.strip())
    for parts in lines:
        if len(parts) != 3 or not parts[1].lstrip("-").isdigit() or not parts[2].isdigit():
            sys.stderr.write(f"viperbench_summary: {runs}: bad line {parts!r}\n")
            return 1
        name, code, seconds = parts[0], int(parts[1]), int(parts[2])
        doc = None
        path = os.path.join(a.dir, name + ".json")
        if os.path.isfile(path):
            try:
                with open(path) as g:
                    doc = json.load(g)
            except ValueError:
                doc = None
        if doc:
            for k in ("commit", "device", "roofs", "gate"):
                first.setdefault(k, doc.get(k))
        rows.append(row(name, code, seconds, doc))
    manifest = {}
    mpath = os.path.join(a.dir, "MANIFEST.json")
    if os.path.isfile(mpath):
        with open(mpath) as g:
            manifest = json.load(g)
    counts = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    out = {"schema": "kgate.viperbench-summary/1", "command": a.command, "commit": first.get("commit"),
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "device": first.get("device"), "roofs": first.get("roofs"), "gate": first.get("gate"),
           "artifact": {k: manifest.get(k) for k in ("repository", "commit", "shapes", "tuning")},
           "skipped": manifest.get("skipped", []), "counts": counts, "problems": rows}
    tmp = os.path.join(a.dir, "summary.json.tmp")
    with open(tmp, "w") as g:
        json.dump(out, g, indent=1)
    os.replace(tmp, os.path.join(a.dir, "summary.json"))
    print(table(rows))
    print("verdicts: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""docs/paper.md, generated: the paper's figures (docs/paper-figures.json,
kept by hand) beside kgate's for the same kernels, from the newest recorded
result of each kernel in results/ledger.jsonl, with a verdict per row
(agree, differ and why, not measured). Nothing in the page is written by hand.

    scripts/paper_md.py [--check] [ROOT]

kgate's result of a kernel is its newest in the tree (ledger order) at the
paper's shape, else its newest of a suite run (`kgate run`), else its newest.
The artifact's own Triton kernels are the results of `kgate kernelbench` runs
of scripts/viperbench.py's pairs (a MANIFEST.json of schema kgate.viperbench/1
beside them names each pair's operator and shape).

--check: exit 1 when docs/paper.md differs from what would be generated
(tests/paper_md.sh runs it in CI). Exit 1 too, naming the row, when
docs/paper-figures.json is malformed."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import ledger  # noqa: E402  (scripts/ledger.py: the ledger's lines)

METRICS = ("E_lib", "rho", "cliff")
KINDS = ("artifact", "Triton", "TileLang", "CUDA C")
CATEGORIES = ("GEMM", "Attention", "Convolution", "Normalization", "Element-wise and reduction")
# E_lib bands: an order of magnitude behind, behind, at parity (kgate's e_ok
# 0.80), far ahead (over kgate's suspect_e 2: a weak baseline, not a fast kernel)
BANDS = ((0.10, "collapsed"), (0.80, "behind"), (2.0, "at parity"), (float("inf"), "far ahead"))
RHO_LINE = 0.50  # the paper's judgment line (kgate's rho_fair)


def band(v):
    return next(i for i, (top, _) in enumerate(BANDS) if v < top)


def validate(doc):
    """Problems with the figures file, each naming its row."""
    bad = []
    for i, r in enumerate(doc.get("rows", [])):
        name = "row %d (%s, %s %s)" % (i + 1, r.get("op"), r.get("dsl"), r.get("variant"))
        for k in ("op", "category", "dsl", "variant", "shape", "dtype", "figures", "kgate", "causes", "notes"):
            if k not in r:
                bad.append("%s: no %s" % (name, k))
        if r.get("category") not in CATEGORIES or r.get("dsl") not in ("Triton", "TileLang") \
                or r.get("variant") not in ("naive", "optimized"):
            bad.append("%s: category, dsl or variant is not one of the known" % name)
        for m in METRICS:
            if sum(1 for f in r.get("figures", []) if f.get("use") and f.get("metric") == m) > 1:
                bad.append("%s: more than one %s figure to use" % (name, m))
        if not any(f.get("use") and f.get("metric") == "E_lib" for f in r.get("figures", [])):
            bad.append("%s: no E_lib figure to use" % name)
        for f in r.get("figures", []):
            if f.get("metric") not in METRICS or not isinstance(f.get("value"), (int, float)) \
                    or not f.get("gpu") or not f.get("source") or f.get("bound") not in (None, ">", "~"):
                bad.append("%s: a figure without a metric, value, gpu or source: %s" % (name, f.get("printed")))
        for k in r.get("kgate", []):
            if k.get("kind") not in KINDS or not (k.get("kernel") or k.get("viperbench")):
                bad.append("%s: a kgate kernel without a kind or a name" % name)
    keys = [(r.get("op"), r.get("dsl"), r.get("variant")) for r in doc.get("rows", [])]
    bad += ["%s %s %s: two rows" % k for k in sorted(set(k for k in keys if keys.count(k) > 1))]
    return bad


def value(r, key):
    v = (r.get("summaries") or {}).get(key)
    return v.get("value") if isinstance(v, dict) else v


def manifest_pairs(root, path, cache):
    """{pair name: pair} of the viperbench MANIFEST.json beside a results file."""
    where = os.path.join(root, os.path.dirname(path), "MANIFEST.json")
    if where not in cache:
        cache[where] = {}
        if os.path.exists(where):
            m = json.load(open(where))
            if m.get("schema") == "kgate.viperbench/1":
                cache[where] = {p["name"]: p for p in m.get("pairs", [])}
    return cache[where]


def recorded(root):
    """{key: [found]}, oldest first: key a kernel's name, or ('viperbench',
    operator) for the artifact's kernels; found: the result, its file's
    ledger entry, its order and, for the artifact's, its shape."""
    entries, _ = ledger.read(root)
    index, manifests = {}, {}
    for n, e in enumerate(entries):
        if not os.path.exists(os.path.join(root, e["path"])):
            continue
        for r in json.load(open(os.path.join(root, e["path"]))).get("results", []):
            found = {"result": r, "entry": e, "order": n, "shape": r.get("shape", "")}
            pair = manifest_pairs(root, e["path"], manifests).get(r.get("op", "")[3:]) \
                if r.get("op", "").startswith("kb.") else None
            if pair:
                found["shape"] = pair.get("description", found["shape"])
                index.setdefault(("viperbench", pair.get("operator")), []).append(found)
            else:
                index.setdefault(r.get("kernel"), []).append(found)
    return index


def pick(index, ref, row):
    """The newest result of a kgate kernel: at the paper's shape, else of a
    suite run, else any; None when there is none."""
    key = ref.get("kernel") or ("viperbench", ref.get("viperbench"))
    found = index.get(key, [])
    if ref.get("kernel"):
        found = ([f for f in found if f["shape"] == row.get("kgate_shape")]
                 or [f for f in found if f["entry"].get("suite")] or found)
    return max(found, key=lambda f: f["order"]) if found else None


def gpu_name(name):
    return name[len("NVIDIA "):] if name.startswith("NVIDIA ") else name


def used(row):
    return {f["metric"]: f for f in row["figures"] if f.get("use")}


def kgate_figures(index, ref, row, found):
    """kgate's E_lib, rho, cliff and top cause of one result."""
    r = found["result"]
    d = {"E_lib": value(r, "lib/efficiency"), "rho": value(r, "roof/fraction"), "cliff": None,
         "cause": ((r.get("diagnosis") or {}).get("causes") or [{}])[0].get("id")}
    naive = index.get(ref.get("naive"), []) if ref.get("naive") else []
    same = [f for f in naive if f["entry"]["path"] == found["entry"]["path"] and f["shape"] == found["shape"]]
    t = value(r, "time/judged") or value(r, "time/gpu/median")
    if same and t:
        tn = value(same[-1]["result"], "time/judged") or value(same[-1]["result"], "time/gpu/median")
        d["cliff"] = tn / t if tn else None
    return d


def other_agrees(row, kb):
    """Another E_lib figure of the paper in kgate's band, as text, or None."""
    for f in row["figures"]:
        if f["metric"] == "E_lib" and not f.get("use") and not f.get("bound") and band(f["value"]) == kb \
                and f.get("shape", row.get("kgate_shape")) == row.get("kgate_shape"):
            return "the paper's %s gives %s (%s), in kgate's band" % (f["source"], fmt(f["value"]), f["gpu"])
    return None


def reasons(row, ref, found, ks):
    """Why kgate's figure differs from the paper's: what is known of the row,
    then what differs in the kernel, baseline, shape, dtype and GPU."""
    r, paper = found["result"], used(row)
    out = [row["differ_note"]] if row.get("differ_note") else []
    if ref["kind"] == "CUDA C":
        out.append("kgate's CUDA C %s variant, not the paper's TileLang kernel"
                   % ("naive" if row["variant"] == "naive" else "fast"))
    weak = [f for f in r.get("flags", []) if f in ("baseline-weak", "baseline-suspect")]
    if weak:
        out.append("kgate's library path %s is weak (%s)" % (r.get("baseline") or "", ", ".join(weak)))
    elif ref["kind"] != "artifact" and r.get("baseline"):
        out.append("baseline %s, the paper's PyTorch" % r["baseline"])
    shape = paper["E_lib"].get("shape", row.get("kgate_shape"))
    if ref["kind"] != "artifact" and shape is None:
        out.append("the paper gives no shape")
    elif ref["kind"] != "artifact" and r.get("shape") != shape:
        out.append("shape %s, the paper's %s" % (r.get("shape"), paper["E_lib"].get("shape") or row["shape"]))
    if r.get("dtype") and r["dtype"] != row["dtype"]:
        out.append("dtype %s, the paper's %s" % (r["dtype"], row["dtype"]))
    out.append("%s, the paper's %s" % (gpu_name(found["entry"].get("gpu", "")), paper["E_lib"]["gpu"]))
    agrees = other_agrees(row, band(ks["E_lib"]))
    return out + ([agrees] if agrees else [])


def verdict(row, ref, found, ks):
    """(verdict, reason) of one kgate result against the row's figures."""
    if found is None:
        return "not measured", "no recorded result in results/" if ref else \
            "kgate has no %s %s %s" % (row["variant"], row["dsl"], row["op"])
    r = found["result"]
    if ks["E_lib"] is None:
        why = "kgate's verdict %s" % r.get("verdict") if r.get("verdict") not in ("OK", "SLOW") else \
            "kgate has no library path for %s (no E_lib)" % row["op"]
        return "not measured", why
    paper = used(row)
    pe = paper["E_lib"]
    same_e = band(ks["E_lib"]) >= band(pe["value"]) if pe.get("bound") == ">" else \
        band(ks["E_lib"]) == band(pe["value"])
    same_rho = "rho" not in paper or ks["rho"] is None or \
        (ks["rho"] >= RHO_LINE) == (paper["rho"]["value"] >= RHO_LINE)
    if same_e and same_rho:
        return "agree", ""
    what = []
    if not same_e:
        what.append("E_lib %s %s, the paper's %s" % (fmt(ks["E_lib"]), BANDS[band(ks["E_lib"])][1],
                                                     BANDS[band(pe["value"])][1]))
    if not same_rho:
        what.append("rho %s and the paper's %s either side of %.2f" % (fmt(ks["rho"]), fmt(paper["rho"]["value"]),
                                                                     RHO_LINE))
    return "differ", "; ".join(what + reasons(row, ref, found, ks))


def fmt(v, bound=None):
    if v is None:
        return "-"
    return (bound or "") + ("%.2f" % v if v >= 0.1 else "%.2g" % v)


def fmt_cliff(v):
    if v is None:
        return "-"
    return "%.0fx" % v if v >= 100 else "%.1fx" % v


def paper_cells(row):
    u = used(row)
    shape = u["E_lib"].get("shape", row["shape"]) or "shape not given"
    sources = []
    for m in METRICS:
        if m in u and u[m]["source"] not in sources:
            sources.append(u[m]["source"])
    setting = "%s, %s%s, %s (%s)" % (u["E_lib"]["gpu"], shape, " (artifact)" if row.get("shape_from") else "",
                                     row["dtype"], "; ".join(sources))
    return [setting, fmt(u["E_lib"]["value"], u["E_lib"].get("bound")),
            fmt(u["rho"]["value"]) if "rho" in u else "-",
            fmt_cliff(u["cliff"]["value"]) if "cliff" in u else "-",
            ", ".join(row["causes"]) or "-"]


def kernel_name(ref):
    if ref.get("kernel"):
        return "`%s` (%s)" % (ref["kernel"], ref["kind"])
    return "the artifact's `%s`" % ref["viperbench"]


def table_rows(row, index, sources):
    """The page's rows of one paper row: one per kgate kernel with a result,
    or one saying why there is none."""
    cells = ["%s" % row["op"], "%s %s" % (row["dsl"], row["variant"])] + paper_cells(row)
    got = [(ref, pick(index, ref, row)) for ref in row["kgate"]]
    got = [(ref, f) for ref, f in got if f] or [(ref, None) for ref in row["kgate"][:1]] or [(None, None)]
    out = []
    for ref, found in got:
        if found is None:
            v, why = verdict(row, ref, None, None)
            name = kernel_name(ref) if ref else "-"
            out.append(cells + [name, "-", "-", "-", "-", "-", "%s: %s" % (v, why)])
            continue
        ks = kgate_figures(index, ref, row, found)
        path = found["entry"]["path"]
        if path not in sources:
            sources.append(path)
        r = found["result"]
        name = "%s [%d]" % (kernel_name(ref), sources.index(path) + 1)
        setting = "%s, %s" % (gpu_name(found["entry"].get("gpu", "")), found["shape"]) if ref["kind"] == "artifact" \
            else "%s, %s, %s" % (gpu_name(found["entry"].get("gpu", "")), found["shape"], r.get("dtype", ""))
        v, why = verdict(row, ref, found, ks)
        out.append(cells + [name, setting, fmt(ks["E_lib"]), fmt(ks["rho"]), fmt_cliff(ks["cliff"]),
                            ks["cause"] or "-", v + (": " + why if why else "")])
    return out


HEAD = ["operator", "paper kernel", "paper: GPU, shape, dtype (source)", "E_lib", "rho", "cliff", "cause",
        "kgate kernel", "kgate: GPU, shape, dtype", "E_lib", "rho", "cliff", "cause", "verdict"]


def intro():
    bands = ", ".join("%s under %.2f" % (name, top) if top != float("inf") else "%s from there on" % name
                      for top, name in BANDS)
    return [
        "# kgate beside the paper", "",
        "Generated by `scripts/paper_md.py` from `docs/paper-figures.json` (the figures of \"Correct but",
        "Slow\", transcribed by hand, each with its table) and the newest recorded kgate result of each kernel",
        "in `results/ledger.jsonl`; do not edit by hand.", "",
        "- The paper: E_lib = t_PyTorch / t_kernel (cuBLAS, cuDNN or PyTorch eager), rho = essential work /",
        "  (t x peak), cliff = t_naive / t_optimized, and the root causes RC0a to RC4, on an A100-SXM4 (sm_80)",
        "  and a GH200 (sm_90). Shown: its GH200 figure where it gives one for the kernel, else its A100 figure.",
        "  Naive is the suite kernel it measured for RQ1, optimized the kernel after its repairs.",
        "- kgate: E_lib = t of the fastest vendor path (cuBLASLt, cuDNN, CUB) / t_kernel, or of the artifact's",
        "  PyTorch code for the artifact's own kernels; rho against the measured roof; cliff = t_naive /",
        "  t_optimized in one run; cause = the top cause of `--diagnose` (`docs/diagnosis.md`). Kernels:",
        "  *artifact*, the paper artifact's own Triton kernel (`scripts/viperbench.py`); *Triton* and",
        "  *TileLang*, kgate's kernels in that DSL written the paper's way (`docs/triton.md`,",
        "  `docs/tilelang.md`); *CUDA C*, kgate's bundled naive or fast variant, for a TileLang kernel kgate",
        "  does not have.",
        "- Verdict: **agree** when both E_lib fall in one band and, where both give rho, on the same side",
        "  of %.2f; **differ** otherwise, with why (the paper measured on an A100 or GH200, kgate on an" % RHO_LINE,
        "  H200 or H100); **not measured** when kgate has no result of the kernel or no E_lib for it.",
        "  The bands: %s." % bands, ""]


def md_row(cells):
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def page(root, doc):
    index = recorded(root)
    sources, body, counts = [], [], {}
    for cat in CATEGORIES:
        rows = [r for r in doc["rows"] if r["category"] == cat]
        if not rows:
            continue
        body += ["## %s" % cat, "", md_row(HEAD), "|" + "---|" * len(HEAD)]
        for r in rows:
            for cells in table_rows(r, index, sources):
                v = cells[-1].split(":")[0]
                counts[v] = counts.get(v, 0) + 1
                body.append(md_row(cells))
        body.append("")
    out = intro()
    out += ["%d comparisons over %d operators: %s." % (
        sum(counts.values()), len({r["op"] for r in doc["rows"]}),
        ", ".join("%d %s" % (counts.get(v, 0), v) for v in ("agree", "differ", "not measured"))), ""]
    out += body
    notes = [(r, n) for r in doc["rows"] for n in r["notes"]]
    if notes:
        out += ["## Where the paper's own figures disagree", "",
                "`docs/paper-figures.json` keeps every figure with its table; these are the ones that conflict.", "",
                md_row(["operator", "paper kernel", "note"]), "|---|---|---|"]
        out += [md_row([r["op"], "%s %s" % (r["dsl"], r["variant"]), n]) for r, n in notes]
        out.append("")
    entries = {e["path"]: e for e in ledger.read(root)[0]}
    out += ["## Sources", ""]
    for i, p in enumerate(sources):
        e = entries[p]
        out.append("%d. `%s`: %s, commit %s, %s, `%s`" % (i + 1, p, e.get("gpu"), e.get("commit"), e.get("date"),
                                                         e.get("command")))
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv):
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    path = os.path.join(root, "docs", "paper.md")
    try:
        doc = json.load(open(os.path.join(root, "docs", "paper-figures.json")))
        entries, _ = ledger.read(root)
    except (OSError, ValueError) as e:
        print("paper: %s" % e)
        return 1
    bad = validate(doc)
    if bad:
        print("\n".join("paper: docs/paper-figures.json: %s" % b for b in bad))
        return 1
    text = page(root, doc)
    return ledger.generated(path, text, check, "paper")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

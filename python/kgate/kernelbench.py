"""KernelBench adapter: judge a KernelBench solution with kgate, and say what
KernelBench's own gate would have said beside it.

A KernelBench problem file defines Model, get_inputs() and
get_init_inputs(); a solution defines ModelNew with the same constructor.
kgate makes the problem a kgate.Problem (the reference is Model in fp64
where it allows, the library path is Model in eager PyTorch) and the
solution's ModelNew.forward its kernel, and runs `kgate check` on them: the
same worker, checks, timing and gate as any candidate. Both models are built
after torch.manual_seed(42), as KernelBench builds them, and the solution is
given the problem's parameters when their names and shapes match.

KernelBench's gate, recomputed from kgate's measurements:
  correct  every check's outputs within allclose(atol=rtol=1e-2) of the
           reference, i.e. kgate's check/max_scaled_err <= 1e-2, and no crash;
  speedup  t(eager PyTorch) / t(solution), both timed by kgate (cold L2;
           the solution's time as the gate judged it, time/judged, so host
           work in its call counts; eager PyTorch's is its GPU time, its
           dispatch not charged, so for a model whose eager call is
           host-bound the speedup is lower than KernelBench's own);
  fast_p   correct and speedup > p (fast_1: p = 1).
A solution that KernelBench admits (correct) and kgate calls SLOW is the
paper's passes-but-slow case; `kgate kernelbench` lists them."""
import collections
import contextlib
import hashlib
import importlib.util
import json
import os
import re
import signal
import sys
import tempfile
import time

from . import _serve, api
from ._guard import Patched, Surface, module_classes, refuse_if_changed
from ._kernel import CandidateError, Kernel, load_module, sha256_of
from .problem import Problem, guess_family

SEED = 42  # KernelBench's
KB_TOL = 1e-2  # KernelBench's atol = rtol


class _OnGPU:
    """A module's forward that moves the module to the current GPU at its
    first call (a candidate is listed without a GPU)."""

    def __init__(self, module):
        self.module, self.moved = module, False
        self.__name__ = "ModelNew"

    def __call__(self, *xs):
        if not self.moved:
            import torch
            self.module = self.module.to(torch.device("cuda", torch.cuda.current_device()))
            self.moved = True
        return self.module(*xs)


def problem_name(path):
    stem = os.path.splitext(os.path.basename(path))[0]
    return ("kb." + re.sub(r"[^A-Za-z0-9_.-]", "_", stem))[:63]


def _problem(problem_path, compile, pins=None):
    """The problem as a kgate.Problem, described on the meta device, and the
    surface of what its reference calls into (_guard.py), taken before any
    solution's code runs; with the model and its init inputs."""
    import torch
    pm = load_module(problem_path, (pins or {}).get(os.path.abspath(problem_path)))
    for attr in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(pm, attr):
            raise AttributeError(f"{problem_path}: no {attr}: not a KernelBench problem file")
    init = pm.get_init_inputs()
    torch.manual_seed(SEED)
    model = pm.Model(*init)
    name = problem_name(problem_path)
    prob = Problem(name, inputs=pm.get_inputs, reference=model, compile=compile, family=guess_family(name),
                   note="KernelBench " + os.path.basename(problem_path))
    prob.describe()  # on the meta device: also records the operators the reference dispatches to
    surface = Surface([("problem " + os.path.basename(problem_path), pm)] + module_classes(model),
                      ops=prob.aten_ops)
    prob.surface = surface  # checked again before every reference computation
    return prob, model, init


def _summary(solution_path):
    return ("KernelBench solution " + os.path.basename(solution_path))[:250]


def _solution(prob, model, init, solution_path, name, sha256=None):
    """Solution's ModelNew, built as KernelBench builds it, as a kgate.Kernel
    named `name`; refused (_guard.Patched) when importing or building it
    changed what the reference calls into."""
    import torch
    sm = load_module(solution_path, sha256)
    refuse_if_changed(prob.surface, "importing " + os.path.basename(solution_path))
    if not hasattr(sm, "ModelNew"):
        raise AttributeError(f"{solution_path}: no ModelNew: not a KernelBench solution file")
    torch.manual_seed(SEED)
    new = sm.ModelNew(*init)
    refuse_if_changed(prob.surface, "ModelNew's constructor")
    ref_state, new_state = model.state_dict(), new.state_dict()
    if ref_state.keys() == new_state.keys() and all(ref_state[k].shape == new_state[k].shape for k in ref_state):
        new.load_state_dict(ref_state)
    return Kernel(_OnGPU(new), op=prob.name, dtype=None, name=name, summary=_summary(solution_path))


def candidate(problem_path, solution_path, compile=False, pins=None):
    """(KGATE_PROBLEM, KGATE_KERNELS) for a KernelBench problem and solution;
    a candidate file written by `kgate kernelbench` calls this. The solution
    is imported only in its kernel job (candidate_group): the workers that
    list the candidate and time the library paths run none of its code."""
    return candidate_group(problem_path, [solution_path], compile, names=["ModelNew"], pins=pins)


def kernel_names(solution_paths):
    """The kernel name of each solution of a group: ModelNew.<file stem>,
    made unique and within Kernel's 95 characters."""
    names, taken = [], set()
    for i, path in enumerate(solution_paths):
        nm = base = "ModelNew." + re.sub(r"[^A-Za-z0-9_.-]", "_", os.path.splitext(os.path.basename(path))[0])[:60]
        k = i
        while nm in taken:  # ".<index>", or the next free number after it
            nm = f"{base}.{k}"
            k += 1
        taken.add(nm)
        names.append(nm)
    return names


class SolutionError(CandidateError):
    """A solution that did not load (an import error, no ModelNew, a patch of
    what the reference calls): the message names its file."""

    def __init__(self, path, e):
        super().__init__(f"{path}: refused: {e}" if isinstance(e, Patched) else f"{path}: {type(e).__name__}: {e}")


# What a group's solution that did not load raises at its first call: its
# kernel job then ends in CRASH with this text, which judge_group turns back
# into the solution's error entry (exit 4), as a single pair reports it.
NOT_LOADED = "kgate-kb-not-loaded"


class _Unloadable:
    def __init__(self, name, err):
        self.msg = f"{NOT_LOADED} {name}: {err}"
        self.__name__ = "ModelNew"

    def __call__(self, *_xs):
        raise RuntimeError(self.msg)


def _not_loaded(*_xs):
    raise RuntimeError("this solution is not loaded in this worker (kgate opened the group for another one)")


def candidate_group(problem_path, solution_paths, compile=False, names=None, pins=None):
    """(KGATE_PROBLEM, KGATE_KERNELS) for one problem and many solutions,
    judged in one `kgate check`: the problem is described and its library
    paths timed once, and every solution still runs in a worker of its own.
    A worker imports only the solution it runs (KGATE_KERNEL, which the
    Python worker host sets while it opens a candidate for a kernel job);
    listing and the library paths import none, so no solution's code runs
    where another is judged or where the library paths are timed. `names`:
    the kernels' names (default kernel_names()). `pins`: {absolute path:
    sha256} of the files as kgate found them when it wrote the candidate; a
    file changed since (by a solution judged earlier, say) is not imported.
    In a group, a solution that does not load gives a kernel that fails its
    first call with NOT_LOADED, so that the run goes on; alone, it raises."""
    prob, model, init = _problem(problem_path, compile, pins)
    want = os.environ.get("KGATE_KERNEL")
    ks = []
    for path, nm in zip(solution_paths, names or kernel_names(solution_paths)):
        if nm == want:
            try:
                ks.append(_solution(prob, model, init, path, nm, (pins or {}).get(os.path.abspath(path))))
            except BaseException as e:  # SystemExit at import included
                err = SolutionError(os.path.abspath(path), e)
                if len(solution_paths) == 1:
                    raise err from e  # a single pair: a bad candidate (exit 4), as before
                # in a group: this kernel's verdict, not a stop of the whole run
                ks.append(Kernel(_Unloadable(nm, err), op=prob.name, dtype=None, name=nm, summary=_summary(path)))
        else:
            ks.append(Kernel(_not_loaded, op=prob.name, dtype=None, name=nm, summary=_summary(path)))
    return prob, ks


def _pins(paths):
    """{absolute path: sha256} of files, read now by kgate itself."""
    return {os.path.abspath(p): sha256_of(p) for p in paths}


def write_candidate(path, problem_path, solution_path, compile=False, pins=None):
    """The candidate file of one solution: a group of one, its kernel ModelNew."""
    write_group_candidate(path, problem_path, [solution_path], compile, pins, ["ModelNew"])


def write_group_candidate(path, problem_path, solution_paths, compile=False, pins=None, names=None):
    """The candidate file of a problem's solutions; `pins` (default: read
    now) and `names` as candidate_group takes them."""
    sols = [os.path.abspath(s) for s in solution_paths]
    pins = pins or _pins([problem_path, *solution_paths])
    names = names or kernel_names(solution_paths)
    with open(path, "w") as f:
        f.write('"""Written by kgate kernelbench: a KernelBench problem and its solutions as a kgate '
                'candidate."""\n'
                "from kgate.kernelbench import candidate_group\n\n"
                f"KGATE_PROBLEM, KGATE_KERNELS = candidate_group({os.path.abspath(problem_path)!r}, "
                f"{sols!r}, compile={bool(compile)!r},\n"
                f"    names={list(names)!r},\n    pins={pins!r})\n")


def kb_gate(result, p=1.0):
    """KernelBench's gate for one kgate result: {correct, speedup, fast_p}."""
    s = result.get("summaries", {})
    err = s.get("check/max_scaled_err", {}).get("value")
    crashed = result.get("verdict") in ("CRASH", "TIMEOUT")
    correct = (not crashed) and err is not None and err <= KB_TOL
    # the time the gate judged: host work in ModelNew's call counts (eager
    # PyTorch's time is its GPU time alone: docs/python.md)
    t = api.Result(result).time
    t_torch = None
    for lib in result.get("libraries", []):
        if lib.get("name") == "torch" and lib.get("status") == "ok":
            t_torch = lib.get("time")
    speedup = (t_torch / t) if (t and t_torch) else None
    return {"correct": correct, "max_scaled_err": err, "speedup": speedup,
            "fast_p": bool(correct and speedup is not None and speedup > p), "p": p}


def _cand_path(d, path, tag=""):
    """Where a candidate file for the problem or solution `path` goes in d."""
    return os.path.join(d, "kb_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0]) + tag + ".py")


def _check(cand, json_path, options, timeout, n):
    """`kgate check` of a candidate file kgate wrote: the workers import it
    only with the SHA-256 it has now (--pin-sha256), and each kernel job has
    `timeout` s (kgate's --timeout); the whole run n + 2 times that and a
    minute, a backstop that keeps what was measured."""
    args = ["check", cand, "--shape", "large", "--pin-sha256", sha256_of(cand), *options]
    if timeout:
        args += ["--timeout", str(timeout)]
    try:
        return api.run_cli(args, json_path, timeout=timeout * (n + 2) + 60 if timeout else None)
    except api.KgateError as e:
        if e.code == 4 and "No module named 'torch'" in str(e) and importlib.util.find_spec("torch") is None:
            # the workers' interpreter (this one) lacks PyTorch: the machine's fault, not the files'
            # (the message alone, which a candidate can write, does not say so)
            raise api.KgateError(5, "kgate kernelbench: PyTorch is not installed for the workers' Python "
                                    "(KGATE_PYTHON, else python3 on PATH): KernelBench problems need it",
                                 e.report) from None
        raise


def judge(problem_path, solution_path, compile=False, options=(), timeout=None, p=1.0, pins=None):
    """Judges one solution; returns (Report, [kb_gate per result]). `pins`:
    the files' SHA-256 as the batch found them (default: read now)."""
    api.refuse_in_worker("kgate.kernelbench.judge")
    for f in (problem_path, solution_path):
        if not os.path.isfile(f):
            raise api.KgateError(4, f"kgate: {f}: no such file")
    with tempfile.TemporaryDirectory(prefix="kgate-kb-") as d:
        cand = _cand_path(d, problem_path)
        write_candidate(cand, problem_path, solution_path, compile, pins)
        rep = _check(cand, os.path.join(d, "r.json"), options, timeout, 1)
    for r in rep.results:
        r["source"] = os.path.relpath(solution_path)
        r["kernelbench"] = kb_gate(r, p)
    return rep, [r["kernelbench"] for r in rep.results]


def pairs(problems, solutions):
    """(problem, solution) file pairs: a file each, or two directories paired
    by file name, else by the leading problem number ("12_...")."""
    if os.path.isfile(problems) and os.path.isfile(solutions):
        return [(problems, solutions)]
    if not (os.path.isdir(problems) and os.path.isdir(solutions)):
        raise api.KgateError(3, "kgate kernelbench: give PROBLEM.py SOLUTION.py, or two directories")
    probs = {f: os.path.join(problems, f) for f in os.listdir(problems) if f.endswith(".py")}
    by_num = {f.split("_", 1)[0]: path for f, path in probs.items() if f.split("_", 1)[0].isdigit()}
    out = []
    for f in sorted(os.listdir(solutions), key=lambda x: (len(x.split("_", 1)[0]), x)):
        if not f.endswith(".py"):
            continue
        prob = probs.get(f) or by_num.get(f.split("_", 1)[0])
        out.append((prob, os.path.join(solutions, f)))
    return out


_VERDICT_EXIT = {"OK": 0, "SKIPPED": 1, "SLOW": 1}  # kgate check's exit for a verdict; the others 2


def _not_loaded_error(x):
    """A group result that is a solution which did not load (NOT_LOADED in
    its reason or detail): that message, else None."""
    text = f"{x.get('reason') or ''} {x.get('detail') or ''}"
    at = text.find(NOT_LOADED)
    return None if at < 0 else text[at + len(NOT_LOADED):].strip()[:900]


def _take(listed, stopped, options, by_name, problem_path, sols, p, results, errors):
    """The results of a group's run, each to its solution (by_name: kernel
    name -> index in sols; for a single solution, every result is its own):
    a solution that did not load becomes an error entry (exit 4, with its
    worker's job times: the GPU it held), the others results with their
    KernelBench gate. When the run stopped, its last result, a SKIPPED one
    outside --verify-only, is the job that stopped it, measured only in part:
    left untaken. Returns the set of indices taken."""
    if stopped and listed and listed[-1].get("verdict") == "SKIPPED" and "--verify-only" not in options:
        listed = listed[:-1]
    got = set()
    for x in listed:
        i = 0 if len(sols) == 1 else by_name.get(x.get("kernel"))
        if i is None:
            continue
        got.add(i)
        why = _not_loaded_error(x)
        if why is not None:
            errors.append({"problem": problem_path, "solution": sols[i], "exit": 4, "message": f"kgate: {why}",
                           "jobs": {k: x["summaries"][k]["value"] for k in ("job/wall", "job/startup")
                                    if isinstance(x.get("summaries", {}).get(k), dict)}})
            continue
        x["source"] = os.path.relpath(sols[i])
        x.get("summaries", {}).pop("cliff", None)  # against another solution of the group: meaningless
        x["kernelbench"] = kb_gate(x, p)
        results.append(x)
    return got


def judge_group(problem_path, solution_paths, compile=False, options=(), timeout=None, p=1.0, pins=None):
    """Judges many solutions of one problem in one `kgate check`
    (candidate_group). Returns (Report or None, errors).

    A solution that does not load is an error entry (exit 4) and the run goes
    on. A run that stops (exit 3 to 7: no GPU, a file error, an error event
    a worker wrote, a stop) keeps what it measured; when it stopped in a
    kernel job (some solution was judged in it) the first solution left
    without a result gets the error and a new run takes the rest, else every
    solution left gets it. Solutions are tracked by position, so a file named
    twice is judged twice."""
    api.refuse_in_worker("kgate.kernelbench.judge_group")
    for f in [problem_path, *solution_paths]:
        if not os.path.isfile(f):
            raise api.KgateError(4, f"kgate: {f}: no such file")
    sols = list(solution_paths)
    names = kernel_names(sols)  # the same in every run
    pins = pins or _pins([problem_path, *sols])
    todo, results, errors, rep, code, run = list(range(len(sols))), [], [], None, 0, 0

    def error(i, c, msg):
        errors.append({"problem": problem_path, "solution": sols[i], "exit": c, "message": msg})

    with tempfile.TemporaryDirectory(prefix="kgate-kb-") as d:
        while todo:
            cand = _cand_path(d, problem_path, f"_{run}")
            write_group_candidate(cand, problem_path, [sols[i] for i in todo], compile, pins,
                                  [names[i] for i in todo])
            try:
                r, failed = _check(cand, os.path.join(d, f"r{run}.json"), options, timeout, len(todo)), None
            except api.KgateError as e:
                r, failed = e.report, e
            run += 1
            listed = r.results if r is not None and r.doc else []
            got = _take(listed, failed is not None, options, {names[i]: i for i in todo}, problem_path, sols, p,
                        results, errors)
            code = max([code] + [_VERDICT_EXIT.get(x.get("verdict"), 2) for x in results])
            rep = r if (r is not None and r.doc) else rep
            rest = [i for i in todo if i not in got]
            if failed is None:
                why = (r.doc.get("incomplete") if r is not None and r.doc else "") or "the run ended before it"
                for i in rest:  # --time-budget, say
                    error(i, 5, f"kgate: not judged: {why}")
                break
            code = max(code, failed.code)
            if not rest or api.stop_requested():  # stopped: the rest is not judged (the document says so)
                break
            if not got or failed.code == 3:  # listing, the library paths or usage: the same for all
                for i in rest:
                    error(i, failed.code, str(failed))
                break
            error(rest[0], failed.code, str(failed))
            todo = rest[1:]
    if rep is not None:
        rep.results[:] = results
        rep.code = max([code] + [e["exit"] for e in errors])
    return rep, errors


def _plan(problems, solutions):
    """(pairs, pins, {problem: [solution, ...]}, errors): every file pinned
    before anything runs, so that a solution cannot change what a later one is
    judged by; a solution without a problem is an error entry."""
    todo, by_prob, errors = pairs(problems, solutions), {}, []
    pins = _pins({f for pair in todo for f in pair if f is not None and os.path.isfile(f)})
    for prob, sol in todo:
        if prob is None:
            errors.append({"problem": None, "solution": sol, "exit": 4,
                           "message": "kgate: no problem file of the same name or number"})
        else:
            by_prob.setdefault(prob, []).append(sol)
    return todo, pins, by_prob, errors


def _unit(group):
    """What a directory run counts: problems (their solutions judged
    together) or solutions (--separate)."""
    return "problems" if group else "solutions"


def _write_json(path, doc):
    """The results document at path, atomically."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)


class Progress:
    """What `kgate kernelbench DIR DIR` says as it goes: a line on stderr as
    each problem (or solution, with --separate) starts and as it ends, with
    its verdicts and seconds; with --json, the results so far written after
    each, marked `incomplete` until the command's last write."""

    def __init__(self, json_path, group, out=None):
        self.json_path, self.unit, self.out = json_path, _unit(group), out

    def _say(self, line):
        out = self.out or sys.stderr
        out.write(f"kgate kernelbench: {line}\n")
        out.flush()

    def note(self, line):
        self._say(line)

    def start(self, k, n, what):
        self._say(f"[{k + 1}/{n}] {what}: started")

    def end(self, k, n, what, judged, errors, seconds, doc):
        seen = collections.Counter(r.get("verdict") for r in judged)
        said = [f"{v} {seen[v]}" for v in api.VERDICTS if seen[v]] + ([f"not judged {len(errors)}"] if errors else [])
        stop = api.stop_requested()
        if self.json_path and not stop:  # stopped: the command's last write follows
            try:
                _write_json(self.json_path, dict(doc, incomplete=f"in progress: {k + 1} of {n} {self.unit} done "
                                                                "(the finished command rewrites this file)"))
            except OSError:
                pass  # the command's last write says why
        self._say(f"[{k + 1}/{n}] {what}: {', '.join(said) or 'nothing judged'} in {seconds:.1f} s" +
                  (f" (stopped by {api.signal_name(stop)})" if stop else ""))


def _what(prob, sols):
    """A group as progress lines name it."""
    if len(sols) == 1:
        return f"{os.path.basename(prob)} ({os.path.basename(sols[0])})"
    return f"{os.path.basename(prob)} ({len(sols)} solutions)"


def _document(doc, results, errors):
    """The results document of a directory run: the first check's (device,
    roofs, gate) with every result and error so far."""
    out = dict(doc or {"schema": "kgate.results/2"})
    out["results"] = list(results)
    if errors:
        out["errors"] = list(errors)
    return out


def _judge_into(acc, prob, sols, compile, options, timeout, p, pins):
    """Judges one group into acc (doc, code, results, errors). A group that
    a stop cut short keeps what it judged and names no solution in error."""
    try:
        if len(sols) == 1:
            rep, errs = judge(prob, sols[0], compile, options, timeout, p, pins)[0], []
        else:
            rep, errs = judge_group(prob, sols, compile, options, timeout, p, pins)
        if rep is not None:
            acc["doc"] = acc["doc"] or rep.doc
            acc["results"].extend(rep.results)
            acc["code"] = max(acc["code"], rep.code)
        acc["errors"].extend(errs)
        acc["code"] = max([acc["code"]] + [e["exit"] for e in errs])
    except api.KgateError as e:
        if api.stop_requested():
            return  # its one solution's job, measured in part
        if e.report is not None and e.report.results:
            acc["results"].extend(e.report.results)
        acc["errors"].extend({"problem": prob, "solution": s, "exit": e.code, "message": str(e)} for s in sols)
        acc["code"] = max(acc["code"], e.code)


def batch(problems, solutions, compile=False, options=(), timeout=None, p=1.0, progress=None, group=True,
          serve=True):
    """Judges every pair; one that cannot be judged becomes an entry with its
    error and the others go on. With group (the default), the solutions of
    one problem share one `kgate check` (judge_group): one description and
    one library measurement of the problem, each solution in its own worker.
    With serve (the default) and more than one check to run, the checks go
    to a private `kgate serve` (_served): each is the same `kgate check`,
    and the fork server (torch imported) of the next is started while one
    runs. `progress` (a Progress, or None) hears of each group as it starts
    and ends. A stop (api.request_stop: kgate kernelbench's SIGINT and
    SIGTERM) stops the running check and starts no other: the document keeps
    what was judged, `incomplete` says how far it got, and the exit code is
    7. Returns (results document, exit code)."""
    api.refuse_in_worker("kgate.kernelbench.batch")
    _, pins, by_prob, errors = _plan(problems, solutions)
    acc = {"doc": None, "code": 4 if errors else 0, "results": [], "errors": errors}
    groups = list(by_prob.items()) if group else [(prob, [s]) for prob, sols in by_prob.items() for s in sols]
    done = 0
    with _served(serve and len(groups) > 1, options, timeout, max((len(g[1]) for g in groups), default=1),
                 progress) as opts:
        for k, (prob, sols) in enumerate(groups):
            if api.stop_requested():
                break
            what, t0, n_res, n_err = _what(prob, sols), time.monotonic(), len(acc["results"]), len(acc["errors"])
            if progress:
                progress.start(k, len(groups), what)
            _judge_into(acc, prob, sols, compile, opts, timeout, p, pins)
            done = k + (0 if api.stop_requested() else 1)
            if progress:
                progress.end(k, len(groups), what, acc["results"][n_res:], acc["errors"][n_err:],
                             time.monotonic() - t0, _document(acc["doc"], acc["results"], acc["errors"]))
    out = _document(acc["doc"], acc["results"], acc["errors"])
    if api.stop_requested():
        out["incomplete"] = (f"stopped by {api.signal_name(api.stop_requested())} after {done} of {len(groups)} "
                             f"{_unit(group)}; the rest did not run")
        return out, api.STOPPED
    return out, acc["code"]


def _option_given(options, names):
    """Whether options name one of names (as `--x V` or `--x=V`)."""
    return any(o == n or o.startswith(n + "=") for o in options for n in names)


def _take_device(options):
    """(GPU index, the options without --device): 0 and the options as given
    where there is none; None where its value is not a GPU index (the check
    says why)."""
    out, gpu, i = [], 0, 0
    while i < len(options):
        o = options[i]
        if o == "--device" or o.startswith("--device="):
            v = o[len("--device="):] if o.startswith("--device=") else (options[i + 1] if i + 1 < len(options) else "")
            i += 1 if o.startswith("--device=") else 2
            if not v.isdigit():
                return None, list(options)
            gpu = int(v)
            continue
        out.append(o)
        i += 1
    return gpu, out


@contextlib.contextmanager
def _served(wanted, options, timeout, most, progress):
    """The options of a directory run's checks: with a private `kgate serve`
    listening on the GPU of --device (wanted, and the options name no
    --server of their own), options less --device plus `--server` its
    socket, so that each check is the service's (the same `kgate check`,
    its fork server warmed while the one before runs; a check the service
    cannot take runs here, said by it); else the options as given, and why
    said on progress. `most`: the largest group, for the service's
    per-check limit (as run_cli's)."""
    gpu, rest = _take_device(options)
    if not wanted or gpu is None or _option_given(options, ("--server",)) or api.stop_requested():
        yield list(options)
        return
    limit = timeout * (most + 2) + 60 if timeout else 1e6
    with _serve.private_service(gpu=gpu, job_timeout=limit) as (sock, why):
        if progress:
            progress.note(f"each check through a private kgate serve (its fork server kept warm; --no-serve: "
                          f"a kgate check of its own each)" if sock else
                          f"no private kgate serve ({why}): each check starts its own fork server")
        yield rest + ["--server", sock] if sock else list(options)


def batch_gpus(problems, solutions, workdir, gpus="all", compile=False, options=(), timeout=None, p=1.0,
               group=8, jobs_per_gpu=1):
    """Every pair through `kgate batch` (docs/scale.md): one supervisor per GPU
    (jobs_per_gpu: that many, their GPU work taking turns), resumable. With `group` > 1 a problem's solutions go in jobs of up to
    `group` (candidate_group: one library measurement a job, each solution in
    its own workers), so that a problem with many solutions still spreads
    over the GPUs; `group` 1 is a job per solution. The candidates and the
    batch's results file live in `workdir`, so the same call again skips the
    jobs already judged (a job is its solutions: adding a solution re-judges
    its problem's jobs from it on). Returns (results document, exit code)
    like batch()."""
    api.refuse_in_worker("kgate.kernelbench.batch_gpus")
    os.makedirs(workdir, exist_ok=True)
    _, pins, by_prob, errors = _plan(problems, solutions)
    jobs, parts = [], {}
    step = max(1, int(group))
    for prob, sols in by_prob.items():
        for c in range(0, len(sols), step):
            part = sols[c:c + step]
            if len(part) == 1:  # as a single pair: the id is the solution (and stays so across versions)
                cand, jid, names = _cand_path(workdir, part[0]), os.path.abspath(part[0]), ["ModelNew"]
            else:
                key = hashlib.sha1("\n".join(os.path.abspath(s) for s in part).encode()).hexdigest()[:12]
                cand, jid, names = _cand_path(workdir, prob, f"_{key}"), f"{os.path.abspath(prob)}#{key}", \
                    kernel_names(part)
            write_group_candidate(cand, prob, part, compile, pins, names)
            parts[jid] = (prob, part, names)
            jobs.append({"id": jid, "candidate": cand, "shape": "large", "options": ["--pin-sha256", sha256_of(cand)]})
    results_path = os.path.join(workdir, "results.jsonl")
    rc, _summary = api.batch(jobs, results_path, gpus=gpus, timeout=timeout, options=options,
                             jobs_per_gpu=jobs_per_gpu)
    doc, results, code = None, [], 4 if errors else 0
    for line in api.read_batch(results_path) if os.path.exists(results_path) else ():
        if line.get("id") not in parts:
            continue  # a job of another manifest that used this workdir
        prob, part, names = parts.pop(line["id"])
        chk = line.get("check") or {}
        doc = doc or chk
        stopped = line.get("exit", 0) >= 3
        got = _take(chk.get("results", []), stopped, options, dict(zip(names, range(len(part)))), prob, part, p,
                    results, errors)
        for i in range(len(part)):
            if i not in got:
                errors.append({"problem": prob, "solution": part[i], "exit": line.get("exit", 5) if stopped else 5,
                               "message": line.get("error") or chk.get("incomplete") or "kgate: not judged"})
        code = max(code, min(line.get("exit", 0), 6))
    if api.stop_requested():  # the jobs with no line are the same command's to resume
        out = _document(doc, results, errors)
        out["incomplete"] = (f"stopped by {api.signal_name(api.stop_requested())} with {len(jobs) - len(parts)} of "
                             f"{len(jobs)} jobs recorded in {results_path}; the same command resumes")
        return out, api.STOPPED
    for prob, part, _ in parts.values():  # jobs with no line: the batch stopped before them
        errors.extend({"problem": prob, "solution": s, "exit": 5, "message": "kgate batch: not run"} for s in part)
    code = max([code] + [e["exit"] for e in errors])
    out = dict(doc or {"schema": "kgate.results/2"})
    out["results"] = results
    if errors:
        out["errors"] = errors
    return out, max(code, rc if rc in (5, 6) else 0)


def table(doc):
    """The side-by-side table: kgate's verdict against KernelBench's gate.
    Its first column is as wide as the longest name (problem, and the
    solution's file stem for a problem's many solutions), 44 at least."""
    rows, admitted = [], []
    for r in doc.get("results", []):
        kb = r.get("kernelbench") or {}
        s = r.get("summaries", {})
        e = s.get("lib/efficiency", {}).get("value")
        rho = s.get("roof/fraction", {}).get("value")
        sp = kb.get("speedup")
        what = r.get("op") or r.get("source", "?")
        if r.get("kernel", "ModelNew").startswith("ModelNew."):  # one of a problem's many solutions
            what += " " + r["kernel"][len("ModelNew."):]
        rows.append((what, r.get("verdict"), f"{e:.3f}" if e else "-", f"{rho:.3f}" if rho else "-",
                     {True: "yes", False: "no"}.get(kb.get("correct"), "-"), f"{sp:.3f}" if sp else "-",
                     {True: "yes", False: "no"}.get(kb.get("fast_p"), "-")))
        if kb.get("correct") and r.get("verdict") == "SLOW":
            admitted.append(what)
    w = max([44] + [len(x[0]) for x in rows])
    fmt = "%-" + str(w) + "s %-10s %8s %9s  %-8s %8s %6s"
    out = [fmt % ("problem", "kgate", "E_lib", "rho", "KB corr", "KB x", "fast1")] + [fmt % x for x in rows]
    for e in doc.get("errors", []):
        out.append(f"{os.path.basename(e['solution'])}: not judged (exit {e['exit']}): {e['message']}")
    if admitted:
        out.append("")
        out.append(f"passes-but-slow: KernelBench admits {len(admitted)} solution(s) that kgate calls SLOW: "
                   + ", ".join(admitted))
    return "\n".join(out)


def _output_refused(path, inputs):
    """Why `path` cannot take the --json output (kgate's rule, docs/cli.md:
    not empty, not a directory nor a special file, none of the command's
    input files), or None."""
    if not path:
        return "an empty path"
    if path.endswith("/") or os.path.isdir(path):
        return "a directory, not a file"
    if os.path.exists(path) and not os.path.isfile(path):
        return "not a regular file"
    files = []
    for p in inputs:
        if os.path.isdir(p):
            files += [os.path.join(p, f) for f in os.listdir(p) if f.endswith(".py")]
        elif p:
            files.append(p)
    for f in files:
        try:
            same = os.path.exists(path) and os.path.samefile(path, f)
        except OSError:
            same = False
        if same or os.path.realpath(path) == os.path.realpath(f):
            return f"the same file as the input {f}, which it would overwrite"
    return None


def _parser():
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message):  # kgate's usage code, 3 (argparse's own is 2: kgate's INCORRECT)
            self.exit(3, f"kgate kernelbench: {message} (kgate kernelbench --help)\n")

    ap = Parser(prog="kgate kernelbench", description=__doc__.split("\n\n")[0])
    ap.add_argument("problems", help="a KernelBench problem file, or a directory of them (a level)")
    ap.add_argument("solutions", help="a solution file (ModelNew), or a directory of them")
    ap.add_argument("--json", help="write the results, each with its 'kernelbench' gate, to this file (and, "
                                   "without --gpus, the results so far after each problem)")
    ap.add_argument("--compile", action="store_true", help="also time torch.compile of the reference")
    ap.add_argument("--p", type=float, default=1.0, help="fast_p's speedup threshold (default 1)")
    ap.add_argument("--timeout", type=float, default=None,
                    help="each kernel job's budget in seconds (kgate check's --timeout; default kgate's)")
    ap.add_argument("--verify-only", action="store_true", help="checks only, no timing")
    ap.add_argument("--server", metavar="SOCK",
                    help="a running kgate serve judges each check (kgate check --server; docs/serve.md): its "
                         "fork server and library times stay warm; none there: judged here, said")
    ap.add_argument("--no-serve", action="store_true",
                    help="directories: a kgate check of its own for each problem (default: each through a "
                         "private kgate serve, which starts the next check's fork server while one runs)")
    ap.add_argument("--separate", action="store_true",
                    help="directories: one kgate check per solution (default: one per problem, its solutions "
                         "each in their own workers, the problem's library paths timed once; with --gpus, "
                         "jobs of up to 8 solutions)")
    ap.add_argument("--gpus", default=None,
                    help="directories: judge through kgate batch on these GPUs ('all' or 0,1,..), "
                         "resumable (candidates and results kept in --workdir)")
    ap.add_argument("--workdir", default=None, help="with --gpus: where the candidates and the batch's results "
                                                    "live (default: the --json path + '.d')")
    ap.add_argument("--jobs-per-gpu", type=int, default=1,
                    help="with --gpus: jobs on each GPU at once, 1 to 4 (kgate batch --jobs-per-gpu; their GPU "
                         "work takes turns, the rest of each job, the Python imports included, overlaps)")
    return ap


@contextlib.contextmanager
def _stoppable():
    """SIGINT and SIGTERM stop the run (api.request_stop: the running kgate is
    given the signal, killed if it has not ended after its grace, and no
    other starts) instead of ending this process; the handlers before are
    put back after."""
    api.request_stop(0)
    old = {s: signal.signal(s, lambda sig, _frame: api.request_stop(sig)) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        api.request_stop(0)


def _run(a, opts):
    """(results document, exit code) of the parsed command; KgateError for a
    usage, environment or file error before anything was judged."""
    if a.gpus:
        workdir = a.workdir or ((a.json + ".d") if a.json else None)
        if not workdir:
            raise api.KgateError(3, "kgate kernelbench: --gpus needs --workdir or --json (where the batch lives)")
        gpus = "all" if a.gpus == "all" else [int(g) for g in a.gpus.split(",")]
        return batch_gpus(a.problems, a.solutions, workdir, gpus, a.compile, opts, a.timeout, a.p,
                          1 if a.separate else 8, a.jobs_per_gpu)
    return batch(a.problems, a.solutions, a.compile, opts, a.timeout, a.p,
                 Progress(a.json, not a.separate), not a.separate, not a.no_serve)


def main(args):
    """`kgate kernelbench ...`: the table on stdout, progress on stderr, the
    results in --json; exit kgate's codes, 7 when stopped by SIGINT or
    SIGTERM (what was judged is printed and written)."""
    a, rest = _parser().parse_known_args(args)
    if a.server and a.gpus:
        sys.stderr.write("kgate kernelbench: --server and --gpus: a service judges on its own GPU, a batch on its "
                         "GPUs; give one\n")
        return 3
    if not 1 <= a.jobs_per_gpu <= 4:
        sys.stderr.write("kgate kernelbench: --jobs-per-gpu: a whole number from 1 to 4\n")
        return 3
    if a.json is not None:
        why = _output_refused(a.json, [a.problems, a.solutions])
        if why:
            sys.stderr.write(f"kgate: kernelbench: --json {a.json}: {why}\n")
            return 6
    if rest and rest[0] == "--":
        rest = rest[1:]
    opts = (["--verify-only"] if a.verify_only else []) + (["--server", a.server] if a.server else []) + rest
    with _stoppable():
        try:
            doc, code = _run(a, opts)
        except api.KgateError as e:
            sys.stderr.write(f"{e}\n")
            return e.code
    print(table(doc), flush=True)
    if a.json:
        try:
            _write_json(a.json, doc)
        except OSError as e:
            sys.stderr.write(f"kgate: kernelbench: --json {a.json}: {e.strerror or e}\n")
            return 6
    if doc.get("incomplete", "").startswith("stopped by"):
        sys.stderr.write(f"kgate: kernelbench: {doc['incomplete']}" + (f"; what was judged is in {a.json}\n"
                                                                       if a.json else "\n"))
    return code

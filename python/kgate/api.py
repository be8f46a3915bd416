"""kgate.check: judge a Python callable from Python.

This side is thin on purpose. It validates the arguments, writes a small
candidate file that names the callable (the callable runs in a worker
process, never in the caller's), and runs the `kgate` executable on it: the
supervisor, the worker protocol, the checks, timing, verdicts and the
results JSON are libkgate's. The caller's interpreter gets no child-reaper,
signal handlers or CUDA context of kgate's.

Why the executable and not an in-process binding of the supervisor: the
supervisor is process-level machinery (it becomes a sub-reaper, kills
process groups, keeps watchdogs), which does not belong inside a user's
interpreter; its contract, the CLI and the results JSON (docs/results.md),
is already documented and versioned. The worker side, which must call into
Python, binds libkgate.so with ctypes (kgate._worker): no compiled extension,
so one package serves every CPython 3 version."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from ._kernel import DTYPES, Kernel
from ._zygote import die_with_parent

RESULTS_SCHEMAS = ("kgate.results/1", "kgate.results/2")
VERDICTS = ("OK", "SLOW", "INCORRECT", "IMPOSSIBLE", "CRASH", "TIMEOUT", "SKIPPED")
EXIT = {0: "every kernel judged, and judged OK", 1: "the worst verdict is SLOW, or a kernel was not judged (SKIPPED)",
        2: "some verdict is INCORRECT, CRASH, TIMEOUT or IMPOSSIBLE", 3: "usage", 4: "bad candidate",
        5: "environment (no GPU, driver or library failure)", 6: "a file kgate owns",
        7: "stopped by SIGINT or SIGTERM (what was measured is kept, marked incomplete)"}
STOPPED = 7
# a kgate asked to stop ends its job and writes what it measured first; one
# still there this long after is killed (kgate batch stops its supervisors
# within 34 s)
CHECK_GRACE_S, BATCH_GRACE_S = 10.0, 60.0


class KgateError(Exception):
    """kgate could not judge: a usage error (exit 3), a bad candidate (4), the
    environment (5), a file (6) or a stop (7: SIGINT, SIGTERM). `code` is the
    exit code, `report` what was measured before the error (a Report,
    possibly empty)."""

    def __init__(self, code, message, report=None):
        super().__init__(message)
        self.code, self.report = code, report


# A kgate worker process says so here before any candidate code runs
# (kgate._worker.main: exec'd, or forked by the fork server); the variable
# reaches the processes a candidate starts, which are inside the worker too.
WORKER_ENV = "KGATE_IN_WORKER"
_in_worker = False


def mark_worker():
    """Marks this process as a kgate worker: every entry point that starts a
    check refuses to run in it from now on (refuse_in_worker)."""
    global _in_worker
    _in_worker = True
    os.environ[WORKER_ENV] = "1"


def refuse_in_worker(entry):
    """Raises KgateError (exit 3) when called inside a kgate worker. A file
    that starts a check when imported (kgate.check at its top level) would
    start another in every worker that imports it, each importing it again."""
    if _in_worker or os.environ.get(WORKER_ENV):
        raise KgateError(3, f"{entry}: called inside a kgate worker, which imports the file that calls it: "
                            'put the call under `if __name__ == "__main__":`')


# The signal a command that handles SIGINT and SIGTERM itself (kgate
# kernelbench) was stopped by: the kgate it waits for is given it, and no
# other is started.
_stop = {"sig": 0}


def request_stop(sig):
    """Stops the kgate run_cli or batch waits for (signal `sig`, once: it then
    ends its job and writes what it measured, exit 7) and every later call
    before it starts one (KgateError, exit 7). Safe in a signal handler."""
    _stop["sig"] = sig


def stop_requested():
    """The signal request_stop was given, 0 before."""
    return _stop["sig"]


def signal_name(sig):
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def _refuse_if_stopped(what):
    if _stop["sig"]:
        raise KgateError(STOPPED, f"kgate: stopped by {signal_name(_stop['sig'])}: {what} not started",
                         Report(None, STOPPED))


def _wait(p, timeout, grace, poll=None):
    """(stdout, stderr) of kgate process p (in a session of its own), once
    it ends. Past `timeout` s (None: no limit) it is killed and
    TimeoutExpired raised. Once a stop is requested, or this wait is
    interrupted (Ctrl-C: KeyboardInterrupt, re-raised after), it is given
    that signal once and killed `grace` s later if still there. poll, when
    given, is called every 0.2 s while it runs; whatever poll raises ends
    the process first."""
    end = None if timeout is None else time.monotonic() + timeout
    told = None
    try:
        while True:
            try:
                return p.communicate(timeout=0.2)
            except subprocess.TimeoutExpired:
                pass
            if poll:
                try:
                    poll()
                except BaseException:
                    p.kill()
                    p.communicate()
                    raise
            now = time.monotonic()
            if told is None and _stop["sig"]:
                p.send_signal(_stop["sig"])
                told = now
            if told is not None and now > told + grace:
                p.kill()
            elif told is None and end is not None and now > end:
                p.kill()
                p.communicate()
                raise subprocess.TimeoutExpired(p.args, timeout)
    except (KeyboardInterrupt, SystemExit):
        if told is None and p.poll() is None:
            p.send_signal(signal.SIGINT)
        try:
            p.communicate(timeout=grace)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
        raise


class Result(dict):
    """One judged kernel: the result object of docs/results.md, with
    attribute access to its fields (r.verdict, r.reason, r.time).
    `time` is the time the gate judged (time/judged: the GPU time, or more
    for host work in the launch call, `host-work`), `gpu_time` the GPU
    median alone; compare kernels by `time`, as the verdict does."""

    def __getattr__(self, k):
        try:
            return self[k]
        except KeyError:
            raise AttributeError(k) from None

    def _summary(self, name):
        s = self.get("summaries", {}).get(name)
        return s["value"] if s else None

    @property
    def time(self):
        """Seconds the gate judged; the GPU median in results from a kgate
        before time/judged. None when not timed."""
        t = self._summary("time/judged")
        return t if t is not None else self.gpu_time

    @property
    def gpu_time(self):
        """The GPU time's median (time/gpu/median), None when not timed."""
        return self._summary("time/gpu/median")

    def __repr__(self):
        t = self.time
        return (f"<kgate {self.get('verdict')} {self.get('kernel')} {self.get('op')} {self.get('dtype')} "
                f"{self.get('shape')}" + (f" {t * 1e6:.2f} us" if t else "") + f": {self.get('reason', '')}>")


class Report:
    """What one kgate run gave: the results, the document they came in
    (device, roofs, gate, commit) and the exit code."""

    def __init__(self, doc, code, stderr=""):
        self.doc = doc or {}
        self.code = code
        self.stderr = stderr
        self.results = [Result(r) for r in self.doc.get("results", [])]

    @property
    def verdict(self):
        """The worst verdict, or None without results: OK, then SKIPPED (not
        judged), SLOW, then INCORRECT, IMPOSSIBLE, CRASH and TIMEOUT alike."""
        vs = [r.get("verdict") for r in self.results]
        order = {"OK": 0, "SKIPPED": 1, "SLOW": 2, "INCORRECT": 3, "IMPOSSIBLE": 3, "CRASH": 3, "TIMEOUT": 3}
        return max(vs, key=lambda v: order.get(v, 4)) if vs else None

    def __iter__(self):
        return iter(self.results)

    def __len__(self):
        return len(self.results)

    def __repr__(self):
        return f"<kgate.Report {len(self.results)} result(s), exit {self.code}: {self.verdict}>"


def _is_kgate(path):
    """Whether path is a kgate executable, not a `kgate` command that pip
    made for this package (kgate._cli), which would only look again."""
    try:
        with open(path, "rb") as f:
            return os.access(path, os.X_OK) and b"kgate._cli" not in f.read(1024)
    except OSError:
        return False


def find_kgate():
    """The kgate executable: $KGATE_BIN, the one beside this package (the
    repository's ../build/kgate, or an installed tree's PREFIX/bin/kgate for
    the package in PREFIX/share/kgate/python), or kgate on PATH."""
    env = os.environ.get("KGATE_BIN")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    beside = [os.path.join(here, "..", "..", "build"), os.path.join(here, "..", "..", "..", "..", "bin")]
    for d in beside + os.environ.get("PATH", os.defpath).split(os.pathsep):
        cand = os.path.join(d or ".", "kgate")
        if os.path.isfile(cand) and _is_kgate(cand):
            return os.path.abspath(cand)
    raise KgateError(5, "kgate: no kgate executable: build and install it (`make install PREFIX=DIR`, "
                        "then DIR/bin on PATH), or set KGATE_BIN")


def _cli_env():
    """The environment of a kgate the package runs: its Python workers use
    this interpreter (and so this torch)."""
    e = dict(os.environ)
    e.setdefault("KGATE_PYTHON", sys.executable)
    return e


def _shape_arg(s):
    if isinstance(s, str):
        if not s or any(c.isspace() for c in s):
            raise ValueError(f"kgate.check: shape {s!r} is not a preset or AxBxC")
        return s
    if isinstance(s, int) and not isinstance(s, bool):
        if s < 1:
            raise ValueError(f"kgate.check: shape {s} must be positive")
        return str(s)
    if isinstance(s, (tuple, list)) and s and all(isinstance(x, int) and not isinstance(x, bool) and x > 0 for x in s):
        return "x".join(str(x) for x in s)
    raise ValueError(f"kgate.check: shape {s!r} must be a preset name, a positive int, or a tuple of them")


def _callable_source(fn):
    """(file, qualname) of a callable defined at a module's top level."""
    mod = sys.modules.get(getattr(fn, "__module__", None) or "")
    path = getattr(mod, "__file__", None)
    qual = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if not path and getattr(fn, "__module__", None) == "__main__" and (hasattr(sys, "ps1") or sys.flags.interactive):
        raise ValueError(f"kgate.check: {qual or repr(fn)} was defined at the interactive prompt; kgate runs it "
                         "in a worker process, which imports it from its file: put it in a .py file (say "
                         f"kernels.py), then `from kernels import {qual or 'fn'}` and check that")
    if not path or not qual or not os.path.isfile(path):  # python3 - (<stdin>), exec'd text
        raise ValueError(f"kgate.check: {qual or repr(fn)} was not defined in a Python file"
                         f"{f' ({path})' if path else ''}: it runs in a worker process, which imports that "
                         "file; define it in a .py file")
    if "<locals>" in qual or "<lambda>" in qual:
        raise ValueError(f"kgate.check: {qual} is a lambda or is defined inside a function; the worker "
                         "imports it by name, so define it at the top level of its file")
    return os.path.abspath(path), qual


def write_candidate(path, kernels, problem=None):
    """Writes a candidate file at `path` whose KGATE_KERNELS imports each
    (file, qualname, Kernel options) by name; with `problem`, a dict of the
    problem's name, (file, qualname) of its inputs and reference and its
    options, the file also defines KGATE_PROBLEM."""
    lines = ['"""Written by kgate.check: the candidate the kgate worker imports."""',
             "from kgate import Kernel, Problem", "from kgate._kernel import load_attr", ""]
    if problem:
        lines.append(f"KGATE_PROBLEM = Problem({problem['name']!r}, inputs=load_attr(*{problem['inputs']!r}), "
                     f"reference=load_attr(*{problem['reference']!r}), compile={problem['compile']!r}, "
                     f"family={problem['family']!r})")
    lines.append("KGATE_KERNELS = [")
    for (file, qual, k) in kernels:
        lines.append(f"    Kernel(load_attr({file!r}, {qual!r}), op={k.op!r}, dtype={k.dtype!r}, name={k.name!r}, "
                     f"index_dtype={k.index_dtype!r}, reads={tuple(k.reads)!r}, summary={k.summary!r}, "
                     f"out={k.out!r}),")
    lines.append("]")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def _read_results(json_path):
    """The results document kgate wrote, or None; another schema is exit 6."""
    if not os.path.exists(json_path):
        return None
    with open(json_path, encoding="utf-8", errors="replace") as f:
        doc = json.load(f)
    if doc.get("schema") not in RESULTS_SCHEMAS:
        raise KgateError(6, f"{json_path}: schema {doc.get('schema')!r}; this package reads "
                            f"{', '.join(RESULTS_SCHEMAS)}")
    return doc


def _dies_with_parent():
    """In the child before kgate starts: kgate is told to stop (SIGTERM)
    when this process dies, since in a session of its own no terminal's
    signal reaches it and it would run on, holding the GPU."""
    die_with_parent(signal.SIGTERM)


class _Progress:
    """Calls progress(Result) once for each result kgate adds to its --json
    file, which it rewrites (atomically) after every job."""

    def __init__(self, json_path, progress):
        self.path, self.progress, self.seen, self.stamp = json_path, progress, 0, None

    def __call__(self):
        try:
            st = os.stat(self.path)
        except OSError:
            return
        if (st.st_mtime_ns, st.st_size) == self.stamp:
            return
        self.stamp = (st.st_mtime_ns, st.st_size)
        try:
            doc = _read_results(self.path)
        except (ValueError, KgateError):
            return  # judged once kgate has ended
        results = (doc or {}).get("results", [])
        for r in results[self.seen:]:
            self.progress(Result(r))
        self.seen = max(self.seen, len(results))


def run_cli(args, json_path, timeout=None, env=None, progress=None):
    """Runs `kgate ARGS --json json_path`; returns the Report. A usage,
    candidate, environment or file error raises KgateError, carrying what was
    measured before it. progress, when given, is called with each Result as
    kgate writes it, while kgate runs."""
    refuse_in_worker("kgate.run_cli")
    _refuse_if_stopped(f"kgate {args[0] if args else ''}")
    exe = find_kgate()
    e = _cli_env()
    if env:
        e.update(env)
    cmd = [exe] + list(args) + ["--json", json_path]
    # kgate prints UTF-8; a byte that is not (an older kgate's) must not raise here. Its own
    # session: a terminal's Ctrl-C reaches it once, from _wait
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8",
                         errors="replace", env=e, start_new_session=True, preexec_fn=_dies_with_parent)
    poll = _Progress(json_path, progress) if progress else None
    try:
        err = _wait(p, timeout, CHECK_GRACE_S, poll)[1]
        if poll:
            poll()
    except subprocess.TimeoutExpired:
        # kgate rewrites --json after every job: what it measured is kept
        raise KgateError(5, f"kgate: no answer within {timeout} s", Report(_read_results(json_path), 5)) from None
    code = p.returncode if p.returncode >= 0 else STOPPED if _stop["sig"] else 5
    rep = Report(_read_results(json_path), code, err)
    if p.returncode < 0:
        raise KgateError(code, f"kgate: ended by {signal_name(-p.returncode)}" +
                         (f" (stopped by {signal_name(_stop['sig'])}; it did not end within {CHECK_GRACE_S:g} s)"
                          if _stop["sig"] else ""), rep)
    if code >= 3:
        lines = [l for l in err.splitlines() if l.startswith("kgate: ")]
        msg = lines[-1] if lines else (err.strip().splitlines() or [f"kgate exited {code}"])[-1]
        raise KgateError(code, msg, rep)
    return rep


def batch(manifest, out, gpus="all", shard=None, timeout=None, options=(), jobs_per_gpu=1):
    """Runs `kgate batch` (docs/scale.md) over `manifest`: a JSON Lines file,
    a directory of candidates, or a list of job dicts ({"candidate": ...,
    "op": ..., ...}). Results go to `out` (resumable: a rerun skips finished
    jobs); jobs_per_gpu (1 to 4) jobs run on each GPU at once, their GPU work
    one at a time; returns (exit code, the summary kgate printed). Read the
    results with kgate.read_batch(out)."""
    refuse_in_worker("kgate.batch")
    if isinstance(manifest, (list, tuple)):
        for i, j in enumerate(manifest):
            if not isinstance(j, dict) or not isinstance(j.get("candidate"), str):
                raise ValueError(f"kgate.batch: job {i} must be a dict with a 'candidate' path")
    elif not isinstance(manifest, str):
        raise TypeError("kgate.batch: manifest must be a path or a list of job dicts")
    if not isinstance(out, str) or not out:
        raise ValueError("kgate.batch: out must be a results file path")
    if not (gpus == "all" or (isinstance(gpus, (list, tuple)) and gpus and
                              all(isinstance(g, int) and g >= 0 for g in gpus))):
        raise ValueError("kgate.batch: gpus must be 'all' or a list of GPU indices")
    if not (isinstance(jobs_per_gpu, int) and 1 <= jobs_per_gpu <= 4):
        raise ValueError("kgate.batch: jobs_per_gpu must be a whole number from 1 to 4")
    with tempfile.TemporaryDirectory(prefix="kgate-batch-") as d:
        if isinstance(manifest, (list, tuple)):
            path = os.path.join(d, "manifest.jsonl")
            with open(path, "w") as f:
                for j in manifest:
                    f.write(json.dumps(j) + "\n")
            manifest = path
        cmd = [find_kgate(), "batch", manifest, "-o", out,
               "--gpus", gpus if gpus == "all" else ",".join(str(g) for g in gpus)]
        if shard:
            cmd += ["--shard", shard]
        if timeout:
            cmd += ["--job-timeout", str(timeout)]
        if jobs_per_gpu != 1:
            cmd += ["--jobs-per-gpu", str(jobs_per_gpu)]
        if options:
            cmd += ["--"] + list(options)
        _refuse_if_stopped("kgate batch")
        p = subprocess.Popen(cmd, text=True, encoding="utf-8", errors="replace", stdout=subprocess.PIPE,
                             env=_cli_env(), start_new_session=True,
                             preexec_fn=_dies_with_parent)  # stderr: the progress bar
        out = _wait(p, None, BATCH_GRACE_S)[0]
    return p.returncode, out


def read_batch(path):
    """The lines of a batch results file (or of kgate serve's answers), one
    dict a job, streamed (a torn last line, and a service's progress lines,
    skipped)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                o = json.loads(line)
            except ValueError:
                continue
            if o.get("schema") != "kgate.batch/1":
                raise KgateError(6, f"{path}: schema {o.get('schema')!r}; this package reads kgate.batch/1")
            if "event" not in o:
                yield o


def _check_problem(fn, reference, inputs, op, problem_name, compile, family, *, name, out, summary,
                   verify_only, diagnose, timeout, options, json_path, progress):
    """kgate.check of fn against a problem made of reference and inputs."""
    if op is not None:
        raise ValueError("kgate.check: give op= (a catalog operator) or reference= and inputs=, not both")
    if not callable(reference) or not callable(inputs):
        raise TypeError("kgate.check: reference= and inputs= must both be given, as callables")
    if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0):
        raise ValueError("kgate.check: timeout must be a positive number of seconds")
    pname = problem_name or (getattr(fn, "__name__", "kernel") + "_problem")
    # the same rules as kgate.Problem's, checked here before anything runs
    from .problem import Problem
    Problem(pname, inputs=inputs, reference=reference, compile=compile, family=family)
    spec = {"name": pname, "inputs": _callable_source(inputs), "reference": _callable_source(reference),
            "compile": bool(compile), "family": family}
    k = Kernel(fn, pname, None, name=name or getattr(fn, "__name__", "kernel"), summary=summary, out=out)
    file, qual = _callable_source(fn)
    args = ["check"]
    if verify_only:
        args.append("--verify-only")
    if diagnose:
        args.append("--diagnose" if diagnose is True else f"--diagnose={diagnose}")
    args += list(options)
    with tempfile.TemporaryDirectory(prefix="kgate-py-") as d:
        cand = os.path.join(d, "candidate.py")
        write_candidate(cand, [(file, qual, k)], problem=spec)
        out_json = json_path or os.path.join(d, "results.json")
        return run_cli(args + [cand], out_json, timeout=timeout, progress=progress)  # a problem has one shape


def check(fn, op=None, dtype="fp16", shapes=("large",), *, name=None, index_dtype=None, reads=(),
          out=False, summary="", params=None, verify_only=False, diagnose=False, timeout=None,
          options=(), json_path=None, reference=None, inputs=None, problem_name=None, compile=False,
          family=None, progress=None):
    """Judges callable `fn` against catalog operator `op` at each shape, as
    `kgate check` judges a shared library's kernel: the same worker, checks,
    timing and gate. Returns a Report (its .results are Result dicts, its
    .verdict the worst one); raises KgateError for a usage, candidate,
    environment or file error, and ValueError/TypeError for bad arguments,
    before anything runs.

    fn       a callable defined at the top level of a Python file; it gets the
             operator's inputs as torch tensors and returns the output(s),
             or with out=True writes into the outputs passed after them
    op       a catalog operator (kgate ops)
    dtype    fp16, bf16 or fp32
    shapes   presets ("small", "large") or extents ((4096, 4096), "4096x4096")
    reads    the scalars fn takes as keyword arguments (eps, dim, ...)
    params   {scalar: value}: scalar values other than the operator's defaults
    options  further kgate check options, e.g. ("--hot",)
    progress a callable given each Result as soon as it is judged (kgate
             runs on meanwhile), e.g. lambda r: print(r)

    An operator outside the catalog: instead of op=, give reference= (a
    function of the inputs, the fp64 reference's source) and inputs= (a
    function returning the input tensors), both top-level functions like fn;
    kgate makes them a kgate.Problem named problem_name (default: fn's name
    with "_problem"), with compile= and family= as kgate.Problem takes them
    (docs/python.md). Its dtype and its one shape are the inputs'.
    """
    refuse_in_worker("kgate.check")
    if not callable(fn):
        raise TypeError(f"kgate.check: fn must be callable, not {type(fn).__name__}")
    if reference is not None or inputs is not None:
        return _check_problem(fn, reference, inputs, op, problem_name, compile, family, name=name, out=out,
                              summary=summary, verify_only=verify_only, diagnose=diagnose, timeout=timeout,
                              options=options, json_path=json_path, progress=progress)
    if not isinstance(op, str) or not op:
        raise ValueError("kgate.check: give op=, a catalog operator (kgate ops lists them), or reference= "
                         "and inputs= for an operator outside the catalog")
    if dtype not in DTYPES:
        raise ValueError(f"kgate.check: dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    if isinstance(shapes, (str, int)) or (isinstance(shapes, tuple) and shapes and isinstance(shapes[0], int)):
        shapes = [shapes]
    shape_args = [_shape_arg(s) for s in shapes]
    if not shape_args:
        raise ValueError("kgate.check: shapes is empty")
    if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0):
        raise ValueError("kgate.check: timeout must be a positive number of seconds")
    k = Kernel(fn, op, dtype, name=name or getattr(fn, "__name__", "kernel"), index_dtype=index_dtype,
               reads=reads, summary=summary, out=out)
    file, qual = _callable_source(fn)
    base = ["check"]
    for nm, v in (params or {}).items():
        base += ["--param", f"{nm}={v}"]
    if verify_only:
        base.append("--verify-only")
    if diagnose:
        base.append("--diagnose" if diagnose is True else f"--diagnose={diagnose}")
    base += list(options)
    results, docs, code = [], None, 0
    with tempfile.TemporaryDirectory(prefix="kgate-py-") as d:
        cand = os.path.join(d, "candidate.py")
        write_candidate(cand, [(file, qual, k)])
        for sh in shape_args:
            out_json = os.path.join(d, "results.json")
            if os.path.exists(out_json):
                os.unlink(out_json)
            rep = run_cli(base + [cand, "--op", op, "--dtype", dtype, "--shape", sh], out_json, timeout=timeout,
                          progress=progress)
            docs = docs or rep.doc
            results.extend(rep.doc.get("results", []))
            code = max(code, rep.code)
    doc = dict(docs or {})
    doc["results"] = results
    if json_path:
        tmp = json_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, json_path)
    return Report(doc, code)

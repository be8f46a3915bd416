"""The client of `kgate serve` (docs/serve.md): verdicts for an optimizer
loop from one long-lived service, each request a kgate batch manifest line
and each answer a batch results line, each kernel's result streamed before
it (on_kernel).

    with kgate.serve(options=["--sandbox"]) as s:      # starts `kgate serve --stdio`
        report = s.check("kernel.so", op="softmax", shape="large",
                         on_kernel=lambda r: print(r.kernel, r.verdict))
        print(report.verdict, report.code)

    s = kgate.Client(socket="/run/user/1000/kgate/serve-gpu0.sock")   # a running service's
"""
import contextlib
import json
import os
import shutil
import socket as _socket
import subprocess
import tempfile
import time

from . import api

REQUEST_MAX = 64 << 10  # the service refuses longer request lines
ANSWER_MAX = 4 << 20    # one answer: a batch results line at most
LISTEN_WAIT_S = 20.0    # a private service that does not listen by then is not used


class Client:
    """Requests to one `kgate serve`, one at a time, over its standard
    input and output (kgate.serve()) or its Unix socket."""

    def __init__(self, socket=None, *, _proc=None):
        self._proc, self._sock, self._n = _proc, None, 0
        if _proc is None:
            if not isinstance(socket, str) or not socket:
                raise ValueError("kgate.Client: socket must be the path of a running kgate serve's socket")
            s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
            try:
                s.connect(socket)
            except OSError as e:
                s.close()
                raise api.KgateError(5, f"kgate serve at {socket}: {e.strerror or e}") from None
            self._sock = s
            self._r, self._w = s.makefile("rb"), s.makefile("wb")
        else:
            self._r, self._w = _proc.stdout, _proc.stdin

    def check(self, candidate, kernel=None, *, op=None, dtype=None, shape=None, options=(), id=None,
              on_kernel=None):
        """Judges candidate (a .so, .py or .cu path; kernel: one of its
        kernels) as `kgate check` would, with the service's options and
        `options`; returns a kgate.Report of the answer (its code the
        check's exit code; `stderr` the service's error, if any).
        on_kernel(result) is called with each kernel's kgate.Result as the
        check judges it; an exception it raises cancels the request (its
        answer is read) and is raised from check."""
        if not isinstance(candidate, str) or not candidate:
            raise ValueError("kgate.Client.check: candidate must be a path")
        if isinstance(shape, (int, tuple, list)):
            shape = api._shape_arg(shape)
        self._n += 1
        job = {"id": id or f"request-{self._n}", "candidate": os.path.abspath(candidate)}
        for k, v in (("kernel", kernel), ("op", op), ("dtype", dtype), ("shape", shape)):
            if v is not None:
                if not isinstance(v, str):
                    raise ValueError(f"kgate.Client.check: {k} must be a string")
                job[k] = v
        if options:
            job["options"] = [str(o) for o in options]
        if on_kernel is not None and not callable(on_kernel):
            raise ValueError("kgate.Client.check: on_kernel must be callable")
        line = json.dumps(job).encode() + b"\n"
        if len(line) > REQUEST_MAX:
            raise ValueError("kgate.Client.check: the request is over 64 KiB")
        self._send(line)
        raised = None
        while True:
            a = self._line()
            if "event" not in a:
                break
            if a.get("id") != job["id"] or a.get("event") != "kernel" or not isinstance(a.get("result"), dict):
                continue
            if on_kernel is not None and raised is None:
                try:
                    on_kernel(api.Result(a["result"]))
                except BaseException as e:  # the request is cancelled; its answer read, then e raised
                    raised = e
                    self._send(json.dumps({"cancel": job["id"]}).encode() + b"\n")
        if a.get("schema") != "kgate.batch/1" or a.get("id") not in (job["id"], None):
            raise api.KgateError(5, f"kgate serve: an answer of schema {a.get('schema')!r} for "
                                    f"{a.get('id')!r}, not kgate.batch/1 for {job['id']!r}")
        if raised is not None:
            raise raised
        # stderr as a check here would have said it: its notes, then its error
        notes = [n for n in a.get("notes") or [] if isinstance(n, str)]
        said = "".join(f"kgate: {n}\n" for n in notes) + (a.get("error") or "")
        return api.Report(a.get("check"), a.get("exit"), said)

    def _send(self, line):
        try:
            self._w.write(line)
            self._w.flush()
        except OSError as e:
            raise api.KgateError(5, f"kgate serve: the service is gone ({e})") from None

    def _line(self):
        """The service's next line, parsed: an answer or a progress line."""
        try:
            text = self._r.readline(ANSWER_MAX + 1)
        except OSError as e:
            raise api.KgateError(5, f"kgate serve: the service is gone ({e})") from None
        if not text.endswith(b"\n"):
            raise api.KgateError(5, "kgate serve: the service ended without an answer"
                                    if not text else "kgate serve: an answer over 4 MiB")
        try:
            a = json.loads(text)
        except ValueError:
            raise api.KgateError(5, "kgate serve: an answer that is not JSON") from None
        if not isinstance(a, dict):
            raise api.KgateError(5, "kgate serve: an answer that is not a JSON object")
        return a

    def close(self):
        """Ends the requests: a service started by kgate.serve() is waited for."""
        for f in (self._w, self._r):
            try:
                f.close()
            except OSError:
                pass
        if self._sock:
            self._sock.close()
        if self._proc:
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _command(where, gpu, idle_timeout=None, job_timeout=None, options=()):
    """`kgate serve` with its transport (where: ["--stdio"] or ["--socket",
    PATH]) on GPU gpu, its limits and the checks' options."""
    cmd = [api.find_kgate(), "serve", *where, "--gpu", str(gpu)]
    if idle_timeout:
        cmd += ["--idle-timeout", str(idle_timeout)]
    if job_timeout:
        cmd += ["--job-timeout", str(job_timeout)]
    if options:
        cmd += ["--"] + [str(o) for o in options]
    return cmd


def serve(gpu=0, options=(), idle_timeout=None, job_timeout=None):
    """Starts `kgate serve --stdio` on GPU gpu (options: for every request's
    check, e.g. ["--sandbox"]) and returns its Client; use it in a `with`."""
    api.refuse_in_worker("kgate.serve")
    if not (isinstance(gpu, int) and not isinstance(gpu, bool) and gpu >= 0):
        raise ValueError("kgate.serve: gpu must be a GPU index")
    cmd = _command(["--stdio"], gpu, idle_timeout, job_timeout, options)
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=api._cli_env(),
                         start_new_session=True, preexec_fn=api._dies_with_parent)
    return Client(_proc=p)


@contextlib.contextmanager
def private_service(gpu=0, job_timeout=None):
    """`kgate serve --socket` in a folder of its own, for one caller's run of
    many checks (`kgate kernelbench DIR DIR` gives each `kgate check
    --server` it): yields (socket path, None) once it listens, or (None,
    why) when it did not start. Leaving stops it (SIGTERM, killed 30 s
    later) and removes the folder; it also dies with this process."""
    api.refuse_in_worker("kgate.private_service")
    d = tempfile.mkdtemp(prefix="kgate-serve-")
    sock, log = os.path.join(d, "serve.sock"), os.path.join(d, "serve.log")
    cmd = _command(["--socket", sock], gpu, job_timeout=job_timeout and f"{min(job_timeout, 1e6):g}")
    p = None
    try:
        try:
            with open(log, "wb") as f:
                p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=f, stderr=f, env=api._cli_env(),
                                     start_new_session=True, preexec_fn=api._dies_with_parent)
            got = _listening(p, log)
        except OSError as e:  # no kgate to start
            got = None, str(e.strerror or e)
        yield got
    finally:
        if p is not None and p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(d, ignore_errors=True)


def _listening(p, log):
    """(socket, None) once the service p says it listens (its log's line),
    else (None, why): it ended, or LISTEN_WAIT_S passed."""
    end = time.monotonic() + LISTEN_WAIT_S
    while True:
        with open(log, "rb") as f:
            said = f.read(1 << 16).decode("utf-8", "replace")
        for line in said.splitlines():
            if line.startswith("kgate: serve: listening on "):
                return line[len("kgate: serve: listening on "):].rsplit(" (GPU", 1)[0], None
        if p.poll() is not None:
            last = [x for x in said.splitlines() if x.strip()]
            return None, (last[-1] if last else f"kgate serve exited {p.returncode}")[:300]
        if api.stop_requested():
            return None, "stopped before it listened"
        if time.monotonic() > end:
            return None, f"kgate serve did not listen within {LISTEN_WAIT_S:g} s"
        time.sleep(0.05)

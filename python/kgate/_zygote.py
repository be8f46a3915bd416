"""The Python workers' fork server: `python3 -m kgate._zygote --fd N`.

A Python worker spends about 3 s importing torch before it can do anything
(measured on the H200 machine: docs/python.md), and a verdict takes
three of them (list, library paths, kernel). The supervisor (src/supervise/
zygote.c) starts this process once; it imports torch and the worker host
without touching CUDA, and then forks a fresh worker for each job, so each
job still runs in a process of its own and initializes CUDA itself.

Protocol on descriptor N (a SOCK_SEQPACKET socket to the supervisor):
  - this process says b"ready PID" once its imports are done;
  - a request is one message: the fields b"kgz1", the supervisor's pid,
    the working directory, the argument count, the arguments (python, "-m",
    "kgate._worker", ...), the environment count and the environment, all
    NUL-separated, with three descriptors attached (the worker's stdin,
    stderr and event pipe);
  - the answer is b"pid PID" (the worker) or b"err WHY".
The worker is forked twice, so that it is orphaned at once and becomes the
supervisor's child (the supervisor is a child subreaper): the supervisor
waits for it, kills its process group and reaps what it leaves exactly as
for a worker it started itself. The worker waits until it is the
supervisor's child before it asks to die with it (PR_SET_PDEATHSIG), takes
descriptors 0, 1, 2 and 3, closes every other one (this socket included),
takes the request's environment and directory, and runs the module the
arguments name as `python3 -m` would."""
import ctypes
import os
import signal
import socket
import sys
import time

MAGIC = b"kgz1"
MAX_MSG = 1 << 18
PR_SET_PDEATHSIG = 1


def die_with_parent(sig=signal.SIGKILL):
    """The calling process is sent sig when its parent dies (Linux's
    PR_SET_PDEATHSIG; elsewhere nothing)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _warm():
    """What each worker would otherwise import and register at its first use,
    done once here, on the meta device only (no CUDA): a problem's
    description (Problem.describe: the reference under FlopCounterMode and
    the operator recorder), about 4 s a worker on the H200 machine before
    this, run on a tiny problem of the layers problems use."""
    try:
        import torch
        from .problem import Problem
        nn = torch.nn
        ref = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.LayerNorm(8), nn.Linear(8, 8), nn.ReLU(),
                            nn.Softmax(-1))
        Problem("kgate_warm_up", inputs=lambda: [torch.empty(2, 8, 8, 8)], reference=ref).describe()
    except Exception:  # noqa: BLE001 - a warm-up only (or no torch): the workers do it themselves
        pass


def _parse(msg):
    f = msg.split(b"\0")
    if len(f) < 5 or f[0] != MAGIC:
        raise ValueError("not a kgz1 request")
    parent, cwd, argc = int(f[1]), f[2], int(f[3])
    if not 3 <= argc <= 64 or len(f) < 5 + argc:
        raise ValueError("bad argument count")
    argv = [a.decode() for a in f[4:4 + argc]]
    envc = int(f[4 + argc])
    env = f[5 + argc:5 + argc + envc]
    if envc < 0 or len(env) != envc:
        raise ValueError("bad environment count")
    if argv[1:3] != ["-m", "kgate._worker"]:
        raise ValueError("only kgate._worker runs here")
    return parent, cwd.decode(), argv, env


def _worker(parent, cwd, argv, env, fds):
    """In the forked worker: never returns."""
    code = 127
    try:
        os.setsid()  # its own session and group: no controlling terminal, killed as a group
        deadline = time.monotonic() + 5
        while os.getppid() != parent:  # the middle process exits at once
            if time.monotonic() > deadline:
                os._exit(127)
            time.sleep(0.0002)
        die_with_parent()
        if os.getppid() != parent:  # the supervisor died in between
            os._exit(127)
        for i, fd in enumerate((fds[0], fds[1], fds[1], fds[2])):
            os.dup2(fd, i)
        hi = os.sysconf("SC_OPEN_MAX")
        os.closerange(4, hi if hi > 0 else 65536)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.environ.clear()
        for kv in env:
            k, sep, v = kv.partition(b"=")
            if sep and k:
                os.environb[k] = v
        os.chdir(cwd)
        sys.argv = [argv[2]] + argv[3:]
        from . import _worker
        _worker.main(argv[3:])  # exits
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:  # noqa: BLE001 - the worker's stderr says what
        import traceback
        traceback.print_exc()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _spawn(sock, msg, fds):
    try:
        parent, cwd, argv, env = _parse(msg)
        if len(fds) != 3:
            raise ValueError("a request needs three descriptors")
    except (ValueError, UnicodeDecodeError) as e:
        sock.send(b"err " + str(e).encode()[:200])
        return
    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    mid = os.fork()
    if mid == 0:
        try:
            os.close(r)
            sock.close()
            pid = os.fork()
            if pid == 0:
                os.close(w)
                _worker(parent, cwd, argv, env, fds)
            os.write(w, str(pid).encode())
        finally:
            os._exit(0)
    os.close(w)
    pid = os.read(r, 32)
    os.close(r)
    os.waitpid(mid, 0)
    sock.send(b"pid " + pid if pid.isdigit() else b"err fork failed")


def main(argv):
    fd = int(argv[argv.index("--fd") + 1])
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET, fileno=fd)
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's ^C is the supervisor's to handle
    try:
        import torch  # noqa: F401 - the import every worker would pay; no CUDA is touched
    except ImportError:
        pass
    from . import _worker, kernelbench  # noqa: F401
    _warm()
    sock.send(b"ready %d" % os.getpid())
    while True:
        try:
            msg, fds, flags, _addr = socket.recv_fds(sock, MAX_MSG, 3)
        except OSError:
            break
        if not msg:
            break  # the supervisor closed its end
        try:
            if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC):
                raise OSError("a request longer than %d bytes or with too many descriptors" % MAX_MSG)
            _spawn(sock, msg, fds)
        except OSError as e:
            try:
                sock.send(b"err " + str(e).encode()[:200])
            except OSError:
                break
        finally:
            for f in fds:
                os.close(f)
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])

"""A Python candidate whose import tries to get out of kgate's sandbox, for
tests/sandbox.sh --python: it opens an IPv4 socket, writes a file outside its
scratch directory, probes kgate with signal 0 (by kill and by a pidfd) and
makes kgate a descriptor's owner (kgate by the pid the test gives in
KG_ESCAPE_KGATE, else its parent's), and refuses to load (SystemExit, naming
what got out) if any worked. It must still be able to write in its scratch directory
(tempfile's directory, which the worker points there) and to import. Its one
kernel returns its input: INCORRECT for relu where it runs."""
import fcntl
import os
import signal
import socket
import tempfile

import kgate

got = []
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.close()
    got.append("socket")
except OSError:
    pass
outside = "/tmp/kgate-pyescape-" + os.environ.get("KG_ESCAPE_TAG", "x")
try:
    with open(outside, "w") as f:
        f.write("out")
    got.append("file")
except OSError:
    pass
kgate_pid = int(os.environ.get("KG_ESCAPE_KGATE", os.getppid()))  # 0 in a PID namespace of its own
try:
    if kgate_pid > 0:
        os.kill(kgate_pid, 0)  # a probe: signal 0 delivers nothing
        got.append("signal")
except OSError:
    pass
try:  # the same through a pidfd made by opening /proc/PID
    pfd = os.open(f"/proc/{kgate_pid}", os.O_RDONLY)
    try:
        signal.pidfd_send_signal(pfd, 0)
        got.append("pidfd")
    finally:
        os.close(pfd)
except OSError:
    pass
try:  # kgate as the owner of a descriptor's I/O signals (no O_ASYNC: nothing is sent)
    a, b = socket.socketpair()
    try:
        fcntl.fcntl(a, fcntl.F_SETOWN, kgate_pid)
        got.append("owner")
    finally:
        a.close()
        b.close()
except OSError:
    pass
if got:
    raise SystemExit("escaped: " + ",".join(got))
with tempfile.NamedTemporaryFile(dir=tempfile.gettempdir()) as f:  # the scratch directory works
    f.write(b"in")


def relu_escape(x):
    return x


KGATE_KERNELS = [kgate.Kernel(relu_escape, op="relu", dtype="fp16", name="relu_escape",
                              summary="INCORRECT: the input back; its import tries to get out")]

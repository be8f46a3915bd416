"""kgate from Python: judge a kernel -- a Triton or TileLang JIT kernel, a
PyTorch extension, any callable on torch tensors -- with the same worker,
checks, timing and gate as `kgate check` (docs/python.md).

    import kgate
    report = kgate.check(my_softmax, op="softmax", dtype="fp16", shapes=["large"])
    print(report.verdict, report.results[0].reason)

Importing this package needs neither torch nor a GPU."""
import os

from ._kernel import DTYPES, Kernel, load_attr
from .problem import Problem
from .api import EXIT, VERDICTS, KgateError, Report, Result, batch, check, find_kgate, read_batch
from ._serve import Client, serve

__all__ = ["Kernel", "Problem", "check", "batch", "read_batch", "serve", "Client", "Report", "Result", "KgateError", "find_kgate", "load_attr", "DTYPES",
           "VERDICTS", "EXIT"]


def _version():
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "VERSION")) as f:
        return f.read().strip()


__version__ = _version()  # the one version of kgate (VERSION, which CMake reads too)

"""kgate.Kernel: one Python callable as a kgate candidate kernel.

A Python candidate file lists its kernels in a module-level KGATE_KERNELS;
the worker host (kgate._worker) turns each into a row of the same table a
shared library exports (include/kgate/plugin.h), and libkgate validates it
as it validates a library's. Nothing here imports torch."""
import hashlib
import importlib.util
import os
import re
import sys

DTYPES = ("fp16", "bf16", "fp32")
INDEX_DTYPES = ("int32", "int64")
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,95}$")


class CandidateError(Exception):
    """A part of a candidate that did not load, such as a KernelBench
    solution that the adapter's candidate file imports for its kernel job:
    the message names that part's file, and the worker host reports it in
    one line as a bad candidate (exit 4)."""


class Kernel:
    """A callable judged against catalog operator `op` at data dtype `dtype`.

    The callable gets the operator's inputs as torch tensors (in the order
    `kgate ops` lists them) and, as keyword arguments, the scalars named in
    `reads` (the operator's required scalars must be among them). It returns
    the output tensor, or a tuple of them; with out=True it is given the
    output tensors after the inputs instead and writes into them. Its work
    must go on torch's current stream, which kgate sets to its timing stream.
    `supports(extents)`, when given, says whether it handles a shape (the
    operator's extents, `kgate ops` order), as a C kernel's supports() does.
    """

    def __init__(self, fn, op, dtype, name=None, index_dtype=None, reads=(), summary="", out=False,
                 supports=None):
        if not callable(fn):
            raise TypeError(f"kgate.Kernel: fn must be callable, not {type(fn).__name__}")
        if not isinstance(op, str) or not op:
            raise TypeError("kgate.Kernel: op must be a catalog operator name (kgate ops)")
        if dtype is not None and dtype not in DTYPES:  # None: a problem's own dtype
            raise ValueError(f"kgate.Kernel: dtype {dtype!r} is not one of {', '.join(DTYPES)}")
        if index_dtype is not None and index_dtype not in INDEX_DTYPES:
            raise ValueError(f"kgate.Kernel: index_dtype {index_dtype!r} is not int32 or int64")
        if isinstance(reads, str):
            reads = tuple(r for r in reads.split(",") if r)
        reads = tuple(reads)
        for r in reads:
            if not isinstance(r, str) or not re.match(r"^[a-z_]{1,31}$", r):
                raise ValueError(f"kgate.Kernel: scalar name {r!r} is not a scalar name")
        name = name or (f"{getattr(fn, '__name__', 'kernel')}_{dtype}" if dtype else getattr(fn, "__name__", "kernel"))
        if not _NAME.match(name):
            raise ValueError(f"kgate.Kernel: name {name!r} must be 1-95 of [A-Za-z0-9_.-]")
        if not isinstance(summary, str) or len(summary.encode()) > 255:
            raise ValueError("kgate.Kernel: summary must be a string of at most 255 bytes")
        self.fn, self.op, self.dtype, self.name = fn, op, dtype, name
        if supports is not None and not callable(supports):
            raise TypeError("kgate.Kernel: supports must be callable (extents tuple -> bool) or None")
        self.index_dtype, self.reads, self.summary, self.out = index_dtype, reads, summary, bool(out)
        self.supports = supports

    def __repr__(self):
        return f"kgate.Kernel({self.name!r}, op={self.op!r}, dtype={self.dtype!r})"


def sha256_of(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def load_module(path, sha256=None):
    """The Python file `path`, imported as a module (not as __main__: a
    script's `if __name__ == "__main__":` block does not run), once. Its
    directory goes on sys.path so that its own imports resolve. With
    sha256, the bytes read must hash to it (else CandidateError) and are
    what runs: a file changed since kgate pinned it is not imported."""
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such file")
    # the path's hash in the name: a KernelBench problem and its solution share a file name
    mod_name = ("kgate_user_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0]) + "_" +
                hashlib.sha1(path.encode()).hexdigest()[:10])
    mod = sys.modules.get(mod_name)
    if mod is None or getattr(mod, "__file__", None) != path or \
            (sha256 is not None and mod.__dict__.get("__kgate_sha256__") != sha256):
        d = os.path.dirname(path)
        if d not in sys.path:
            sys.path.insert(0, d)
        spec = importlib.util.spec_from_file_location(mod_name, path)
        mod = importlib.util.module_from_spec(spec)
        src = None
        if sha256 is not None:
            with open(path, "rb") as f:
                src = f.read()
            got = hashlib.sha256(src).hexdigest()
            if got != sha256:
                raise CandidateError(f"{path}: changed since kgate started judging it (sha256 {got[:16]}..., "
                                     f"pinned {sha256[:16]}...): not imported")
            mod.__kgate_sha256__ = sha256
        sys.modules[mod_name] = mod
        try:
            if src is None:
                spec.loader.exec_module(mod)
            else:
                exec(compile(src, path, "exec"), mod.__dict__)
        except BaseException:
            sys.modules.pop(mod_name, None)  # as importlib does: no half-run module is found later
            raise
    return mod


def load_attr(path, qualname):
    """The object `qualname` of the Python file `path` (load_module)."""
    obj = load_module(path)
    for part in qualname.split("."):
        if part == "<locals>":
            raise ValueError(f"{path}: {qualname} is defined inside a function; kgate runs the "
                             "callable in a worker process, so it must be reachable from the "
                             "module's top level")
        obj = getattr(obj, part)
    return obj

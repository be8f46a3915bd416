"""The Python worker host: `python3 -m kgate._worker --fd N`.

The supervisor (`kgate check` on a .py candidate) starts this instead of
`kgate __worker`. It loads libkgate.so (KGATE_LIB) with ctypes and runs
libkgate's own worker in this process, handing it a provider for Python
candidates (src/gpu/provider.h). Everything else -- the job, the checks, the
timing engine, CUPTI, the events on descriptor N -- is the C worker's, so a
Python kernel is judged by exactly the code that judges a shared library.

What is here: importing the candidate file and turning its KGATE_KERNELS
into a C kernel table; a launch that wraps kgate's DLPack tensors as torch
tensors (cached, zero-copy) and calls the callable on kgate's stream; and
collect(), which copies a callable's returned tensors into kgate's output
buffers outside any timed call, through torch's C entry points (_Raw),
refusing with one line a wrong type, layout, shape, dtype or device and a
view whose copy would do work; and the refusal of what a candidate leaves
behind to run its code later (_left_behind)."""
import contextlib
import ctypes
import gc
import json
import os
import signal
import sys
import traceback
from time import perf_counter as _clock

from . import _abi
from ._guard import Patched, refuse_if_changed
from ._kernel import CandidateError, Kernel, load_module
from .api import mark_worker
from .problem import Problem, rms
from .problem import _as_list as as_list

_DT_TORCH = {(2, 16): "float16", (4, 16): "bfloat16", (2, 32): "float32", (2, 64): "float64",
             (0, 32): "int32", (0, 64): "int64", (0, 8): "int8", (1, 8): "uint8", (6, 8): "bool"}


class Host:
    def __init__(self, lib):
        self.lib = lib
        self.kernels = []  # kgate.Kernel, by table index
        self.table = None
        self.table_ptr = None
        self.keep = []  # ctypes objects the C side points to
        self.views = {}  # (ptr, dtype, shape) -> (tensor, managed struct)
        self.streams = {}
        self.last = {}  # (kernel name, first output's address) -> what the call returned
        self.torch = None
        self.raw = None  # torch's C entry points, taken before the candidate is imported (_Raw)
        self.spoiled = ""  # what a supports() left behind (_left_behind): every later call is refused
        self.device_set = False
        self.last_host = -1.0  # seconds the last launch spent in the callable itself
        self.problem = None  # the candidate's KGATE_PROBLEM
        self.problem_json = b""
        self.lib_kernels = []  # the problem's library paths, as kernels
        self.lib_table = None

    # ------------------------------------------------------------ open
    def open(self, _self, source, table_out, msg, msg_size):
        try:
            _jit_caches()
            path = source.decode()
            want = self.lib.kg_worker_opening()  # the kernel this job runs, or None (a list or library job)
            if want:
                os.environ["KGATE_KERNEL"] = want.decode()
            else:
                os.environ.pop("KGATE_KERNEL", None)
            try:
                self._torch()  # before any candidate code runs: _Raw
            except ImportError:
                pass  # no torch in this interpreter: the candidate cannot patch it either
            except Exception as e:  # a torch whose C entry points are not 2.x's: kgate's problem, not the file's
                _abi.write_msg(msg, msg_size, f"kgate's worker host cannot use this torch "
                                              f"({getattr(self.torch, '__version__', '?')}): {_one_line(e)}")
                return 5
            # a candidate file kgate wrote (kgate kernelbench) is imported only as it wrote it
            mod = load_module(path, os.environ.get("KGATE_CANDIDATE_SHA256") or None)
            left = _left_behind(self.raw)
            if left:
                _abi.write_msg(msg, msg_size, f"{path}: importing it left {left}: candidate code would run "
                                              "outside the timed calls")
                return 4
            ks = getattr(mod, "KGATE_KERNELS", None)
            if ks is None:
                _abi.write_msg(msg, msg_size, f"{path}: no KGATE_KERNELS list: not a kgate Python candidate")
                return 4
            if isinstance(ks, Kernel):
                ks = [ks]
            if not isinstance(ks, (list, tuple)) or not ks or not all(isinstance(k, Kernel) for k in ks):
                _abi.write_msg(msg, msg_size, f"{path}: KGATE_KERNELS must be a non-empty list of kgate.Kernel")
                return 4
            if len(ks) > 1024:
                _abi.write_msg(msg, msg_size, f"{path}: {len(ks)} kernels (at most 1024)")
                return 4
            pb = getattr(mod, "KGATE_PROBLEM", None)
            if pb is not None:
                if not isinstance(pb, Problem):
                    _abi.write_msg(msg, msg_size, f"{path}: KGATE_PROBLEM must be a kgate.Problem")
                    return 4
                self.problem = pb
                d = pb.describe()
                self.problem_json = json.dumps(d).encode()
                for k in ks:
                    if k.op == pb.name and k.dtype is None:
                        k.dtype = pb.dtype
                    if k.op == pb.name and k.index_dtype is None:
                        k.index_dtype = pb.index_dtype  # an int32 input is an index tensor (catalog/problem.c)
            self.kernels = list(ks)
            self.table = self._table(ks, path)
            table_out[0] = ctypes.pointer(self.table)
            return 0
        except (_Refused, Patched) as e:
            _abi.write_msg(msg, msg_size, str(e))
            return 4
        except CandidateError as e:  # a part of the candidate (or itself), named in the message
            src, text = source.decode(errors="replace"), _one_line(e)
            _abi.write_msg(msg, msg_size, text if text.startswith(src + ": ") else f"{src}: {text}")
            return 4
        except BaseException as e:  # an import error of the candidate is a bad candidate
            _abi.write_msg(msg, msg_size, f"{source.decode(errors='replace')}: cannot import: "
                                          f"{type(e).__name__}: {_one_line(e)}")
            return 4

    def _arity(self, k, path):
        if self.problem is not None and k.op == self.problem.name:
            return len(self.problem.desc["inputs"]), len(self.problem.desc["outputs"])
        n_in, n_out = ctypes.c_int(0), ctypes.c_int(0)
        if self.lib.kg_pyhost_op_arity(k.op.encode(), ctypes.byref(n_in), ctypes.byref(n_out)):
            raise _Refused(f"{path}: kernel '{k.name}' names unknown operator '{k.op}' (kgate ops)")
        return n_in.value, n_out.value

    def _table(self, ks, path=None):
        """A C kernel table over kgate.Kernel objects (kept alive here). With
        no path, a table of PyTorch's library paths, whose tensor counts the
        worker does not read."""
        arr = (_abi.Kernel * len(ks))()
        for i, k in enumerate(ks):
            n_in, n_out = self._arity(k, path) if path else (0, 0)
            if k.dtype is None:
                raise _Refused(f"{path}: kernel '{k.name}' gives no dtype (only a problem's kernels may omit it)")
            strs = [s.encode() if s is not None else None for s in
                    (k.name, k.op, k.dtype, k.index_dtype, k.summary, ",".join(k.reads))]
            self.keep.extend(strs)
            launch = _abi.LAUNCH(self._launcher(k))
            sup = _abi.SUPPORTS(self._supporter(k)) if k.supports else _abi.SUPPORTS()
            self.keep.extend((launch, sup))
            arr[i] = _abi.Kernel(strs[0], strs[1], strs[2], strs[3], n_in, n_out, launch, strs[4], strs[5], sup)
        self.keep.append(arr)
        return _abi.Plugin(_abi.ABI_VERSION, ctypes.sizeof(_abi.Kernel), len(ks), arr)

    # ------------------------------------------------------------ problem
    def describe(self, _self, buf, size, msg, msg_size):
        if self.problem_json and len(self.problem_json) >= size:
            _abi.write_msg(msg, msg_size, f"the problem's description is over {size} bytes")
            return 1
        _abi.write_msg(buf, size, self.problem_json.decode())
        return 0

    def _ready(self, device):
        self._torch().cuda.set_device(device)
        self.device_set = True
        self.problem.ready(device)

    def inputs(self, _self, seed, ins, n_in, stream, msg, msg_size):
        try:
            torch = self._torch()
            dev = ins[0].device.device_id
            self._ready(dev)
            torch.manual_seed(seed & 0x7FFFFFFFFFFFFFFF)
            with torch.no_grad(), torch.device(torch.device("cuda", dev)), torch.cuda.stream(self.stream(stream, dev)):
                xs = self.problem.tensors(self.problem.make_inputs())
                if len(xs) != n_in:
                    raise _Refused(f"the input factory gave {len(xs)} tensors, then {n_in}: it must give the same "
                                   "inputs every time")
                for i, x in enumerate(xs):
                    dst = self.tensor(ins[i])
                    if tuple(x.shape) != tuple(dst.shape) or x.dtype != dst.dtype:
                        raise _Refused(f"the input factory's input {i} is {x.dtype} {tuple(x.shape)}, then "
                                       f"{dst.dtype} {tuple(dst.shape)}: it must give the same inputs every time")
                    dst.copy_(x)
            return 0
        except BaseException as e:
            _abi.write_msg(msg, msg_size, f"{type(e).__name__}: {_one_line(e)}")
            return 1

    def reference(self, _self, ins, n_in, refs, n_out, stream, scale, msg, msg_size):
        try:
            if self.problem.surface is not None:
                refuse_if_changed(self.problem.surface, "the solution")
            torch = self._torch()
            dev = ins[0].device.device_id
            self._ready(dev)
            with torch.no_grad(), torch.cuda.stream(self.stream(stream, dev)):
                xs = [self.tensor(ins[i]) for i in range(n_in)]
                xs = [x.double() if x.is_floating_point() and self.problem.ref_dtype == "fp64" else x.clone()
                      for x in xs]
                outs = as_list(self.problem.ref64(*self.problem.args(xs)), "the reference")
                if len(outs) != n_out:
                    raise _Refused(f"the reference gave {len(outs)} outputs; the problem has {n_out}")
                worst = 0.0
                for o, y in enumerate(outs):
                    numel = 1
                    for e in self.problem.desc["outputs"][o]["shape"]:
                        numel *= e
                    if y.numel() != numel:
                        raise _Refused(f"the reference's output {o} has {y.numel()} elements, not {numel}")
                    dst = self.tensor(_flat_f64(refs[o], numel, dev))
                    dst.copy_(y.reshape(-1).double())
                    if y.is_floating_point():
                        worst = max(worst, rms(y))
                scale[0] = worst
                torch.cuda.current_stream().synchronize()
            return 0
        except BaseException as e:
            _abi.write_msg(msg, msg_size, f"{type(e).__name__}: {_one_line(e)}")
            return 1

    def library(self, _self, table_out, msg, msg_size):
        try:
            if self.problem is None:
                _abi.write_msg(msg, msg_size, "the candidate has no KGATE_PROBLEM")
                return 1
            self._ready(self._torch().cuda.current_device())
            if self.lib_table is None:
                self.lib_kernels = [Kernel(_dense(fn), op=self.problem.name, dtype=self.problem.dtype, name=nm,
                                           summary=sm) for nm, fn, sm in self.problem.library_paths()]
                self.lib_table = self._table(self.lib_kernels, "library")
            table_out[0] = ctypes.pointer(self.lib_table)
            return 0
        except BaseException as e:
            _abi.write_msg(msg, msg_size, f"{type(e).__name__}: {_one_line(e)}")
            return 1

    # ---------------------------------------------------------- tensors
    def _torch(self):
        if self.torch is None:
            import torch  # the fork server's import usually came first
            self.torch = torch
            self.raw = _Raw(torch)
        return self.torch

    def tensor(self, dl):
        """A torch tensor over kgate's buffer (no copy), cached by address,
        dtype and shape: repeated calls on one input set build nothing."""
        shape = tuple(dl.shape[i] for i in range(dl.ndim))
        key = (dl.data, dl.dtype.code, dl.dtype.bits, shape, dl.device.device_id)
        hit = self.views.get(key)
        if hit is not None:
            return hit[0]
        torch = self._torch()
        m = _abi.DLManagedTensor()
        m.dl_tensor = dl  # a copy of the struct; its shape array is copied too
        shp = (ctypes.c_int64 * max(1, len(shape)))(*shape)
        m.dl_tensor.shape = ctypes.cast(shp, ctypes.POINTER(ctypes.c_int64))
        m.dl_tensor.strides = None
        m.deleter = _NO_DELETE
        pyapi = ctypes.pythonapi
        pyapi.PyCapsule_New.restype = ctypes.py_object
        pyapi.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        cap = pyapi.PyCapsule_New(ctypes.addressof(m), b"dltensor", None)
        t = self.raw.from_dlpack(cap)
        if len(self.views) > 4096:  # bounded: extra shapes allocate new buffers
            self.views.clear()
        self.views[key] = (t, m, shp)
        return t

    def stream(self, ptr, device):
        s = self.streams.get(ptr)
        if s is None:
            torch = self._torch()
            if not self.device_set:
                torch.cuda.set_device(device)
                self.device_set = True
            s = torch.cuda.ExternalStream(ptr, device=torch.device("cuda", device))
            self.streams[ptr] = s
        return s

    def _supporter(self, k):
        def supports(ext, n):
            try:
                ok = 1 if k.supports(tuple(ext[i] for i in range(n))) else 0
            except BaseException:
                ok = 0  # a supports() that raises handles nothing
            left = _left_behind(self.raw)
            if left and not self.spoiled:
                self.spoiled = f"supports() left {left}: its code would run outside the timed calls"
            return ok
        return supports

    # ----------------------------------------------------------- launch
    def _launcher(self, k):
        def launch(ins, n_in, outs, n_out, params, stream):
            try:
                if self.spoiled:
                    raise _Refused(self.spoiled)
                self._torch()
                dev = ins[0].device.device_id if n_in else outs[0].device.device_id
                self.stream(stream, dev)  # the device set once
                xs = [self.tensor(ins[i]) for i in range(n_in)]
                if self.problem is not None and k.op == self.problem.name:
                    xs = self.problem.args(xs)  # a problem's constant arguments back in place
                kw = {}
                p = params.contents if params else None
                for j in range(p.n_scalars if p else 0):
                    nm = p.scalars[j].name.decode()
                    if nm in k.reads:
                        v = p.scalars[j].value
                        kw[nm] = int(v) if float(v).is_integer() and nm in ("dim", "ignore_index") else v
                ys = [self.tensor(outs[i]) for i in range(n_out)] if k.out else None
                # kgate's stream made current through torch's C entry points: torch.cuda.stream()'s
                # Python context costs tens of us a call, which would be charged as glue
                with self.raw.current(stream, dev):
                    t0 = _clock()
                    if k.out:
                        k.fn(*xs, *ys, **kw)
                    else:
                        self.last[(k.name, outs[0].data)] = k.fn(*xs, **kw)
                    self.last_host = _clock() - t0
                left = _left_behind(self.raw)
                if left:
                    raise _Refused(f"the call left {left}: its code would run outside the timed calls")
                return 0
            except BaseException as e:
                if params:
                    # kgate's own refusal is its one line; the candidate's exception is named
                    text = _one_line(e) if isinstance(e, _Refused) else f"{type(e).__name__}: {_one_line(e)}"
                    _abi.write_msg(params.contents.error, params.contents.error_size, text)
                if os.environ.get("KGATE_PY_TRACEBACK"):
                    traceback.print_exc()
                return 1
        return launch

    def host_seconds(self, _self):
        return self.last_host

    def torch_library(self, _self, op, dtype, index_dtype, compile, table_out, msg, msg_size):
        """PyTorch's paths of catalog operator `op` (kgate check --torch)."""
        try:
            from . import torch_ops
            op = op.decode()
            self._torch()
            ps = torch_ops.paths(op, bool(compile))
            if not ps:
                _abi.write_msg(msg, msg_size, f"PyTorch has no call for {op} here")
                return 1
            ks = [Kernel(_dense(fn), op=op, dtype=dtype.decode(), name=nm, summary=sm, reads=reads)
                  for nm, fn, sm, reads in ps]
            self.lib_kernels.extend(ks)
            self.lib_table = self._table(ks)
            table_out[0] = ctypes.pointer(self.lib_table)
            return 0
        except BaseException as e:
            _abi.write_msg(msg, msg_size, f"{type(e).__name__}: {_one_line(e)}")
            return 1

    # ---------------------------------------------------------- collect
    def collect(self, _self, kptr, outs, n_out, stream, msg, msg_size):
        try:
            name = kptr.contents.name.decode()
            k = next((k for k in self.kernels + self.lib_kernels if k.name == name), None)
            if k is None or k.out:
                return 0
            raw = self.raw
            changed = raw.tables_changed()
            if changed or self.spoiled:  # results that cannot be read without running the candidate's code
                _abi.write_msg(msg, msg_size, self.spoiled or f"a kernel was registered over {changed[0]}, which "
                                                              "kgate's copy of the results would run")
                return 1
            key = (name, outs[0].data)
            if key not in self.last:
                _abi.write_msg(msg, msg_size, "no call's results to collect")
                return 2
            got = self.last.pop(key)
            # exact types only: a subclass's methods (__len__, __iter__,
            # __torch_function__) would run the candidate's code here, outside
            # the timed call (src/gpu/worker.c collect_outputs)
            kind = type(got)  # `in` would compare with ==, which a metaclass may define
            res = got if kind is tuple or kind is list else (got,)
            if len(res) != n_out:
                _abi.write_msg(msg, msg_size, f"the callable returned {len(res)} value(s); "
                                              f"{k.op} has {n_out} output(s)")
                return 1
            with raw.no_torch_function():  # torch.set_default_device's mode, the one allowed, sees nothing here
                for i, r in enumerate(res):
                    why = raw.refuse_result(i, r, self.tensor(outs[i]))
                    if why:
                        _abi.write_msg(msg, msg_size, why)
                        return 1
                raw.copy_on(stream, outs[0].device.device_id,
                            [(self.tensor(outs[i]), r) for i, r in enumerate(res)])
            return 0
        except BaseException as e:
            _abi.write_msg(msg, msg_size, f"collecting the results: {type(e).__name__}: {_one_line(e)}")
            return 2


class _Raw:
    """torch's C entry points, taken once, before any candidate is imported
    (Host.open): collect() reads a callable's results only through these.
    torch.Tensor and torch's modules are Python objects a candidate may
    change (torch.Tensor.copy_, torch.cuda.stream, from_dlpack); through
    them, reading the results would run its code, untimed -- a callable
    could return its input and compute its output in a replaced copy_.
    torch._C.TensorBase is a C type, which cannot be changed, and the
    functions of torch._C are kept here as the objects they were.
    What is not covered: kgate's own Python code edited in place in the
    interpreter (docs/security.md)."""

    def __init__(self, torch):
        from torch.utils import _device  # torch.set_default_device's mode
        C = self.C = torch._C
        tb, sb = C.TensorBase, C._CudaStreamBase
        self.Tensor = torch.Tensor
        self.DeviceContext = _device.DeviceContext
        # the mode is allowed only as torch wrote it: what it runs, kept as it was
        self._device_mod = _device
        self._device_parts = (_device.DeviceContext.__dict__.get("__torch_function__"),
                              getattr(_device, "_device_constructors", None))
        self.no_torch_function = C.DisableTorchFunction
        self.shape, self.dtype, self.device = tb.shape.__get__, tb.dtype.__get__, tb.device.__get__
        self.layout, self.is_nested = tb.layout.__get__, tb.is_nested.__get__
        self.strided = torch.strided
        self.is_contiguous, self.is_neg, self.is_conj = tb.is_contiguous, tb.is_neg, tb.is_conj
        self._copy = tb.copy_
        self._grad, self._set_grad = C.is_grad_enabled, C._set_grad_enabled
        # the dispatcher's kernels of the copy (a kernel registered over aten::copy_ with
        # torch.library would run in it): the tables as they were before the import
        self._dump = C._dispatch_dump_table
        self._tables = {op: self._dump(op) for op in ("aten::copy_", "aten::_copy_from")}
        ef = getattr(getattr(C, "_dynamo", None), "eval_frame", None)
        self.eval_frame = getattr(ef, "get_eval_frame_callback", None)
        self.eval_frame_base = self.eval_frame() if self.eval_frame else None
        self.from_dlpack = C._from_dlpack
        self._get_stream, self._set_stream = C._cuda_getCurrentStream, C._cuda_setStream
        self._get_device, self._set_device = C._cuda_getDevice, C._cuda_setDevice
        self._sb = sb
        self._sid = (sb.stream_id.__get__, sb.device_index.__get__, sb.device_type.__get__)
        self._streams = {}  # (cudaStream_t, device) -> (stream id, device index, device type)

    def _stream(self, ptr, device):
        key = (ptr, device)
        ids = self._streams.get(key)
        if ids is None:
            was = self._get_device()
            self._set_device(device)
            try:
                s = self._sb.__new__(self._sb, stream_ptr=ptr)
            finally:
                self._set_device(was)
            ids = self._streams[key] = tuple(f(s) for f in self._sid)
            if len(self._streams) > 64:  # bounded: kgate uses one stream a device
                self._streams.clear()
        return ids

    @contextlib.contextmanager
    def current(self, ptr, device):
        """kgate's stream `ptr` as the device's current stream, by torch's C
        entry points only; the stream and device before are put back
        (setting a stream also sets its device)."""
        sid, dev, dtype = self._stream(ptr, device)
        was_dev = self._get_device()
        was = self._get_stream(dev)
        self._set_stream(stream_id=sid, device_index=dev, device_type=dtype)
        try:
            yield
        finally:
            self._set_stream(stream_id=was[0], device_index=was[1], device_type=was[2])
            if self._get_device() != was_dev:
                self._set_device(was_dev)

    def copy_on(self, ptr, device, pairs):
        """dst.copy_(src) for each pair, on kgate's stream `ptr`, autograd
        off (a result that requires grad would give kgate's buffer a
        grad_fn)."""
        grad = self._grad()
        self._set_grad(False)
        try:
            with self.current(ptr, device):
                for dst, src in pairs:
                    self._copy(dst, src)
        finally:
            self._set_grad(grad)

    def device_mode_intact(self):
        """Whether torch.set_default_device's mode still runs torch's own code."""
        d, (tf, ctors) = self._device_mod, self._device_parts
        return d.DeviceContext.__dict__.get("__torch_function__") is tf and \
            getattr(d, "_device_constructors", None) is ctors

    def tables_changed(self):
        """The copy's operators whose dispatcher kernels changed since the
        snapshot (a kernel registered over them), or []."""
        return [op for op, t in self._tables.items() if self._dump(op) != t]

    def refuse_result(self, i, r, want):
        """Why returned value i cannot be read as output `want` by a plain
        copy, or None: a type, layout, shape, dtype or device not the
        output's, or a view whose copy would do work (strides, negation,
        conjugation) -- kgate's copy must not compute the result."""
        if type(r) is not self.Tensor:
            what = "a subclass of torch.Tensor" if isinstance(r, self.Tensor) else "not a torch.Tensor"
            return f"output {i} is a {type(r).__name__}, {what}"
        if self.layout(r) is not self.strided or self.is_nested(r):
            return f"output {i} is a {'nested' if self.is_nested(r) else self.layout(r)} tensor; a dense one is expected"
        if tuple(self.shape(r)) != tuple(self.shape(want)):
            return f"output {i} has shape {tuple(self.shape(r))}; {tuple(self.shape(want))} is expected"
        if self.dtype(r) != self.dtype(want):
            return f"output {i} is {self.dtype(r)}; {self.dtype(want)} is expected"
        if self.device(r) != self.device(want):
            return f"output {i} is on {self.device(r)}; {self.device(want)} is expected"
        if not self.is_contiguous(r) or self.is_neg(r) or self.is_conj(r):
            return (f"output {i} is a view (not contiguous, or a lazy negation or conjugation): copying it "
                    "would do the kernel's work outside the timed call; return a contiguous tensor")
        return None


_TIMERS = (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)


def _monitoring():
    """sys.monitoring's tools and the events each has on (Python 3.12 on; a
    freed tool id may keep its events)."""
    if not hasattr(sys, "monitoring"):
        return ()
    m = sys.monitoring
    return tuple(m.get_tool(i) for i in range(6)) + tuple(m.get_events(i) for i in range(6))


# The interpreter's hooks through which code runs later, as they were before
# any candidate (a debugger's or a coverage tool's), compared by identity:
# the trace and profile functions, the garbage collector's callbacks,
# sys.monitoring's tools (Python 3.12 on), and the interval timers (one left
# pending fires a signal handler after the call).
_TRACE, _PROFILE, _GC_CALLBACKS, _TOOLS = sys.gettrace(), sys.getprofile(), list(gc.callbacks), _monitoring()
_TIMERS_BASE = tuple(signal.getitimer(t) for t in _TIMERS)


def _no_audit_hooks(event, _args):
    """The worker host's audit hook, added before any candidate: a later
    sys.addaudithook is refused (CPython drops a hook whose addition an
    existing hook refuses), since an audit hook runs on events kgate's own
    code raises (ctypes, open) outside the timed calls."""
    if event == "sys.addaudithook":
        raise RuntimeError("kgate's worker host takes no audit hooks")


sys.addaudithook(_no_audit_hooks)


def _hook_left():
    if sys.gettrace() is not _TRACE or sys.getprofile() is not _PROFILE:
        return "a Python trace or profile hook set (sys.settrace, sys.setprofile)"
    cbs = gc.callbacks
    if len(cbs) != len(_GC_CALLBACKS) or any(a is not b for a, b in zip(cbs, _GC_CALLBACKS)):
        return "a garbage collector callback added (gc.callbacks)"
    # tool names by identity (a name is the candidate's object), events as the ints they are
    if _TOOLS and any(a is not b if i < 6 else a != b for i, (a, b) in enumerate(zip(_monitoring(), _TOOLS))):
        return "a sys.monitoring tool registered or its events set"
    for t, base in zip(_TIMERS, _TIMERS_BASE):
        if signal.getitimer(t) != base:
            return "an interval timer pending (signal.setitimer)"
    return None


def _left_behind(raw):
    """What a candidate left active that runs its code later, outside any
    timed call -- while kgate collects results, computes a Python
    reference or times the library -- or None: a Python hook (_hook_left), a
    torch function or dispatch mode (it sees every later torch call, the
    reference's too; torch.set_default_device's own mode is not one), or
    TorchDynamo's frame callback. Checked after the import, after every
    call and every supports(); the candidate is refused, since undoing it
    would hide the rest. `raw` is None where torch is not imported. About
    3 us a call, in the glue."""
    left = _hook_left()
    if left or raw is None:
        return left
    C = raw.C
    for i in range(C._len_torch_function_stack()):
        if type(C._get_function_stack_at(i)) is not raw.DeviceContext or not raw.device_mode_intact():
            return "a torch function mode active (torch.overrides.TorchFunctionMode)"
    if C._len_torch_dispatch_stack():
        return "a torch dispatch mode active (torch.utils._python_dispatch.TorchDispatchMode)"
    if raw.eval_frame is not None and raw.eval_frame() is not raw.eval_frame_base:
        return "TorchDynamo's frame callback set (torch._C._dynamo.eval_frame)"
    return None


def _jit_caches():
    """Under kgate's sandbox only the scratch directory (TMPDIR, the working
    directory) is writable: JIT compilers' caches in $HOME would fail, so
    they move there. Outside the sandbox nothing changes."""
    import tempfile
    for var, default in (("TRITON_CACHE_DIR", "~/.triton/cache"), ("TORCHINDUCTOR_CACHE_DIR", None)):
        if os.environ.get(var):
            continue
        home = os.path.expanduser(default or "~/.cache")
        try:
            os.makedirs(home, exist_ok=True)
            fd, probe = tempfile.mkstemp(dir=home)
            os.close(fd)
            os.unlink(probe)
        except OSError:
            os.environ[var] = os.path.join(tempfile.gettempdir(), var.lower())


def _dense(fn):
    """A library path whose results are made dense and contiguous inside its
    timed call (SDPA's transposed view, a permute at a reference's end):
    kgate copies only such results, and the library pays for its layout, as
    a candidate does. A tuple-like result (a torch.return_types) becomes a
    tuple."""
    def call(*a, **kw):
        y = fn(*a, **kw)
        if isinstance(y, (tuple, list)):
            return tuple(t.contiguous() if hasattr(t, "contiguous") else t for t in y)
        return y.contiguous() if hasattr(y, "contiguous") else y
    call.__name__ = getattr(fn, "__name__", "library")
    return call


class _Refused(Exception):
    """A candidate or problem that breaks a rule: one line, exit 4."""


def _flat_f64(ptr, numel, device):
    """A DLTensor over `numel` doubles at device address ptr (a reference buffer)."""
    t = _abi.DLTensor()
    t.data = ptr
    t.device = _abi.DLDevice(2, device)  # kDLCUDA
    t.ndim = 1
    t.dtype = _abi.DLDataType(2, 64, 1)
    shp = (ctypes.c_int64 * 1)(numel)
    t.shape = ctypes.cast(shp, ctypes.POINTER(ctypes.c_int64))
    t._keep = shp  # Host.tensor() reads the shape before this goes
    return t


def _one_line(e):
    s = " ".join(str(e).split())
    return s[:600] if s else type(e).__name__


@_abi.DELETER
def _NO_DELETE(_m):  # kgate owns the buffers; the struct is kept by the cache
    return None


def _load_lib():
    path = os.environ.get("KGATE_LIB")
    if not path:
        raise SystemExit("kgate._worker: KGATE_LIB is not set (the kgate supervisor sets it)")
    lib = ctypes.CDLL(path)
    lib.kg_pyhost_sizeof.restype = ctypes.c_size_t
    lib.kg_pyhost_sizeof.argtypes = [ctypes.c_char_p]
    lib.kg_pyhost_op_arity.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]
    for what, mirror in _abi.MIRRORS.items():
        c = lib.kg_pyhost_sizeof(what.encode())
        if c != ctypes.sizeof(mirror):
            raise SystemExit(f"kgate._worker: {path}: struct {what} is {c} bytes there and "
                             f"{ctypes.sizeof(mirror)} in this package: use the package of the same kgate build")
    if not hasattr(lib, "kg_worker_opening"):
        raise SystemExit(f"kgate._worker: {path} has no kg_worker_opening: use the package of the same kgate build")
    lib.kg_worker_opening.restype = ctypes.c_char_p
    lib.kg_worker_opening.argtypes = []
    return lib


def main(argv):
    mark_worker()  # before any candidate code: a check it starts at import is refused
    try:
        # imported before the worker says hello, so that a result's job/startup
        # (spawn to hello) is the interpreter, torch and the driver, and the rest
        # of job/wall the candidate's own load and the GPU work
        import torch  # noqa: F401
    except ImportError:
        pass  # the candidate's import says what is missing
    lib = _load_lib()
    host = Host(lib)
    prov = _abi.Provider(ctypes.sizeof(_abi.Provider), b"python", None, _abi.OPEN(host.open),
                         _abi.COLLECT(host.collect), _abi.DESCRIBE(host.describe), _abi.INPUTS(host.inputs),
                         _abi.REFERENCE(host.reference), _abi.LIBRARY(host.library),
                         _abi.HOST_SECONDS(host.host_seconds), _abi.TORCH_LIBRARY(host.torch_library))
    args = [a.encode() for a in argv]
    c_argv = (ctypes.c_char_p * (len(args) + 1))(*args, None)
    lib.kg_worker_main_with.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(_abi.Provider)]
    rc = lib.kg_worker_main_with(len(args), c_argv, ctypes.byref(prov))
    sys.stdout.flush()
    sys.stderr.flush()
    if "--under-tool" in argv or os.environ.get("CUDA_INJECTION64_PATH"):
        sys.exit(rc)  # under a tool (compute-sanitizer for --memcheck, ncu): its exit hooks run
    os._exit(rc)  # no interpreter teardown: the CUDA context goes with the process


if __name__ == "__main__":
    main(sys.argv[1:])

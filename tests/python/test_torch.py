"""The Python side's parts that need torch, on the CPU: every PyTorch library
path (kgate/torch_ops.py) against kgate's own CPU fp64 reference of its
catalog operator (through libkgate.so), and the automatic work model of
kgate.Problem (FlopCounterMode on the meta device) on small modules.

Needs torch in the interpreter that runs it (KGATE_TORCH_PYTHON for CTest);
without it, it says so and skips (exit 77). Needs KGATE_LIB (libkgate.so)."""
import ctypes
import os
import sys
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

try:
    import torch
except ImportError:
    print("SKIP: this interpreter has no torch (set KGATE_TORCH_PYTHON to one that has)")
    sys.exit(77)

import kgate  # noqa: E402
from kgate import torch_ops  # noqa: E402
from kgate.problem import Problem  # noqa: E402

LIB = os.environ.get("KGATE_LIB")
SHAPES = {1: (40,), 2: (6, 24), 3: (5, 7, 3), 4: (2, 3, 5, 8)}  # per number of extents; index ops below


def small_dims(op, n):
    """Small extents of op: by its number of extents, unless it names its own
    here (an operator with a check_shape rule must: tests/test_op_parts.c)."""
    if op in ("embedding", "index_select"):
        return (11, 8, 9)  # table/src rows, columns, lookups
    if op in ("conv2d", "conv2d_nhwc"):
        return (2, 4, 7, 6, 6, 3, 2, 2, 1, 2)  # N C H W K R S STRIDE PAD GROUPS: P = Q = 4
    return SHAPES[n]


@unittest.skipUnless(LIB, "KGATE_LIB is not set")
class TorchPathsAgainstReferences(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.lib = ctypes.CDLL(LIB)
        i64p = ctypes.POINTER(ctypes.c_int64)
        cls.lib.kg_pyhost_op_tensor.argtypes = [ctypes.c_char_p, i64p, ctypes.c_int, ctypes.c_int,
                                                ctypes.POINTER(ctypes.c_int), i64p, ctypes.POINTER(ctypes.c_int),
                                                ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double), i64p]
        cls.lib.kg_pyhost_op_dims.argtypes = [ctypes.c_char_p]
        cls.lib.kg_pyhost_cpu_reference.argtypes = [ctypes.c_char_p, i64p, ctypes.c_int,
                                                    ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p)]
        cls.lib.kg_pyhost_op_scalar.argtypes = [ctypes.c_char_p, i64p, ctypes.c_int, ctypes.c_char_p,
                                                ctypes.POINTER(ctypes.c_double)]

    def scalar(self, op, dims, name):
        v = ctypes.c_double()
        cd = (ctypes.c_int64 * len(dims))(*dims)
        self.assertEqual(self.lib.kg_pyhost_op_scalar(op.encode(), cd, len(dims), name.encode(), ctypes.byref(v)), 0,
                         f"{op} has no scalar {name}")
        return v.value

    def tensors(self, op, dims):
        lib, out = self.lib, []
        cd = (ctypes.c_int64 * len(dims))(*dims)
        t = 0
        while True:
            rank, cls, lo, hi, rng = ctypes.c_int(), ctypes.c_int(), ctypes.c_double(), ctypes.c_double(), ctypes.c_int64()
            ext = (ctypes.c_int64 * 8)()
            if lib.kg_pyhost_op_tensor(op.encode(), cd, len(dims), t, ctypes.byref(rank), ext, ctypes.byref(cls),
                                       ctypes.byref(lo), ctypes.byref(hi), ctypes.byref(rng)):
                return out
            out.append((tuple(ext[i] for i in range(rank.value)), cls.value, lo.value, hi.value, rng.value))
            t += 1

    def test_every_operator(self):
        g = torch.Generator().manual_seed(3)
        for op in sorted(torch_ops.calls()):
            n_dims = self.lib.kg_pyhost_op_dims(op.encode())
            self.assertGreater(n_dims, 0, op)
            dims = small_dims(op, n_dims)
            specs = self.tensors(op, dims)
            with self.subTest(op=op):
                (path, fn, _, reads), = torch_ops.paths(op)
                self.assertEqual(path, "torch")
                # inputs: as many as the call's positional arguments (its scalars are
                # keyword-only), the rest are outputs
                nargs = fn.__code__.co_argcount
                ins, outs = specs[:nargs], specs[nargs:]
                xs = []
                for shape, cls, lo, hi, rng in ins:
                    if rng:
                        xs.append(torch.randint(0, rng, shape, generator=g, dtype=torch.int64))
                    else:
                        xs.append(lo + (hi - lo) * torch.rand(shape, generator=g, dtype=torch.float64))
                # the scalars kgate's reference runs with: the defaults, and a
                # convolution's stride, pad and groups from the shape
                got = fn(*xs, **{k: self.scalar(op, dims, k) for k in reads})
                got = got if isinstance(got, tuple) else (got,)
                # kgate's reference, in doubles
                c_in = [x.to(torch.float64).contiguous() for x in xs]
                c_out = [torch.empty(s[0], dtype=torch.float64) for s in outs]
                pin = (ctypes.c_void_p * len(c_in))(*[x.data_ptr() for x in c_in])
                pout = (ctypes.c_void_p * len(c_out))(*[y.data_ptr() for y in c_out])
                self.assertEqual(self.lib.kg_pyhost_cpu_reference(op.encode(), (ctypes.c_int64 * len(dims))(*dims),
                                                                  len(dims), pin, pout), 0)
                self.assertEqual(len(got), len(c_out))
                for y, ref in zip(got, c_out):
                    self.assertEqual(tuple(y.shape), tuple(ref.shape))
                    if op == "argmax":  # the reference holds each row's maximum value
                        picked = xs[0].gather(1, y[:, None])[:, 0]
                        torch.testing.assert_close(picked, ref, rtol=0, atol=0)
                    else:
                        torch.testing.assert_close(y.to(torch.float64), ref, rtol=1e-9, atol=1e-9)


class _Scale(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(n))

    def forward(self, x):
        return x * self.w


class _Masked(torch.nn.Module):
    """minGPT's causal mask: a 1024 x 1024 buffer cut to the sequence, and a layer never called."""
    def __init__(self):
        super().__init__()
        self.unused = torch.nn.Linear(1024, 1024)
        self.register_buffer("mask", torch.tril(torch.ones(1024, 1024)))

    def forward(self, x):
        t = x.shape[-1]
        return x.masked_fill(self.mask[:t, :t] == 0, 0.0)


class WorkModel(unittest.TestCase):
    def test_linear_counts_its_matmul(self):
        lin = torch.nn.Linear(64, 32)
        p = Problem("t_linear", inputs=lambda: [torch.randn(16, 64)], reference=lin)
        d = p.describe()
        self.assertEqual(d["flops"], 2 * 16 * 64 * 32)
        self.assertEqual(d["bytes_read"], 4 * (16 * 64 + 64 * 32 + 32))  # input, weight, bias
        self.assertEqual(d["bytes_written"], 4 * 16 * 32)
        self.assertEqual(d["roof"], "fp32")
        self.assertEqual(d["family"], "gemm")  # guessed from the name
        self.assertEqual(d["outputs"], [{"shape": [16, 32], "dtype": "fp32"}])

    def test_conv_and_elementwise(self):
        conv = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False).half()
        p = Problem("t_conv", inputs=lambda: [torch.randn(2, 3, 16, 16, dtype=torch.float16)], reference=conv)
        d = p.describe()
        # output 8x8 per image: 2 * (N*K*P*Q) * (C*R*S) FLOPs
        self.assertEqual(d["flops"], 2 * (2 * 8 * 8 * 8) * (3 * 3 * 3))
        self.assertEqual(d["roof"], "tensor")
        self.assertEqual(d["family"], "convolution")
        relu = Problem("t_act", inputs=lambda: [torch.randn(4, 100)], reference=torch.relu)
        d = relu.describe()
        self.assertEqual(d["flops"], 0)  # FlopCounterMode counts no element-wise work: bytes decide
        self.assertEqual(d["bytes_read"] + d["bytes_written"], 2 * 4 * 100 * 4)

    # the essential bytes are a lower bound (python/kgate/_reads.py): each byte
    # read once, whatever aliases it, broadcasts it or leaves it unread
    def read(self, inputs, reference):
        return Problem("t_reads", inputs=inputs, reference=reference).describe()["bytes_read"]

    def test_a_tensor_read_twice_counts_once(self):
        self.assertEqual(self.read(lambda: [torch.randn(64, 32)], lambda x: x * x + x.sum()), 4 * 64 * 32)
        x = torch.randn(64, 32, device="meta")
        self.assertEqual(self.read(lambda: [x, x], lambda a, b: a + b), 4 * 64 * 32)  # one tensor given twice
        self.assertEqual(self.read(lambda: [x, x.t()], lambda a, b: a + b.t()), 4 * 64 * 32)  # two views of it
        halves = torch.randn(64, 32, device="meta")
        self.assertEqual(self.read(lambda: [halves[:32], halves[32:]], lambda a, b: a + b), 4 * 64 * 32)
        self.assertEqual(self.read(lambda: [halves[:, ::2]], lambda a: a * 2), 4 * 64 * 16)  # strided: its elements

    def test_broadcasts_count_what_they_hold(self):
        w = torch.randn(32, device="meta")
        self.assertEqual(self.read(lambda: [torch.randn(64, 32), w.expand(64, 32)], lambda a, b: a * b),
                         4 * (64 * 32 + 32))
        # a weight over every row: 32 elements, not 64 x 32
        self.assertEqual(self.read(lambda: [torch.randn(64, 32)], _Scale(32)), 4 * (64 * 32 + 32))
        ln = torch.nn.LayerNorm(32)
        self.assertEqual(self.read(lambda: [torch.randn(64, 32)], ln), 4 * (64 * 32 + 2 * 32))

    def test_an_output_that_is_an_input(self):
        d = Problem("t_id", inputs=lambda: [torch.randn(64, 32)], reference=lambda x: x).describe()
        self.assertEqual((d["bytes_read"], d["bytes_written"]), (4 * 64 * 32, 4 * 64 * 32))  # copied once
        d = Problem("t_inplace", inputs=lambda: [torch.randn(64, 32)], reference=lambda x: x.relu_()).describe()
        self.assertEqual((d["bytes_read"], d["bytes_written"]), (4 * 64 * 32, 4 * 64 * 32))
        d = Problem("t_two", inputs=lambda: [torch.randn(64, 32)], reference=lambda x: (x.relu(), x.relu())).describe()
        self.assertEqual((d["bytes_read"], d["bytes_written"]), (4 * 64 * 32, 2 * 4 * 64 * 32))  # two buffers

    def test_unread_sliced_and_gathered_leaves(self):
        self.assertEqual(self.read(lambda: [torch.randn(8, 64, 64)], _Masked()), 4 * (8 * 64 * 64 + 64 * 64))
        emb = torch.nn.Embedding(100000, 64)
        idx = lambda: [torch.randint(0, 100000, (32,))]
        self.assertEqual(self.read(idx, emb), 8 * 32 + 4 * 32 * 64)  # the rows gathered, not the table
        self.assertEqual(self.read(lambda: [torch.randn(1000, 64), torch.randint(0, 1000, (10,))],
                                   lambda t, i: t.index_select(0, i)), 4 * 10 * 64 + 8 * 10)
        self.assertEqual(self.read(lambda: [torch.randn(64, 32)], lambda x: torch.zeros_like(x) + 1), 0 + 0)

    def test_constant_arguments(self):
        p = Problem("t_scale", inputs=lambda: [torch.randn(8, 4), 2.5], reference=lambda a, s: a * s)
        d = p.describe()
        self.assertEqual(len(d["inputs"]), 1)  # the number is a constant, not a tensor
        x = torch.ones(8, 4)
        self.assertEqual(p.args([x])[1], 2.5)
        torch.testing.assert_close(p.reference(*p.args([x])), x * 2.5)

    def test_int32_inputs_are_the_index_dtype(self):
        """An int32 input is an index tensor of the kernel's index dtype
        (catalog/problem.c), so the problem's kernels take int32: an embedding
        with int32 ids (ViperBench's) is allocated as its factory makes it."""
        emb = lambda: [torch.randint(0, 64, (32,), dtype=torch.int32), torch.randn(64, 8, dtype=torch.float16)]
        p = Problem("t_emb32", inputs=emb, reference=lambda i, w: torch.nn.functional.embedding(i, w))
        self.assertEqual([x["dtype"] for x in p.describe()["inputs"]], ["int32", "fp16"])
        self.assertEqual(p.index_dtype, "int32")
        q = Problem("t_emb64", inputs=lambda: [torch.randint(0, 64, (32,)), torch.randn(64, 8)],
                    reference=lambda i, w: torch.nn.functional.embedding(i, w))
        q.describe()
        self.assertIsNone(q.index_dtype)  # int64 inputs are fixed int64: no index dtype to give
        m = Problem("t_mm", inputs=lambda: [torch.randn(8, 8), torch.randn(8, 8)], reference=torch.mm)
        m.describe()
        self.assertIsNone(m.index_dtype)  # a kernel may give one only where an input is an index

    @unittest.skipUnless(os.path.isdir(os.path.join(HERE, "..", "..", ".cache", "kernelbench", "KernelBench", "level1")),
                         "no KernelBench problems (scripts/kernelbench.sh fetch)")
    def test_kernelbench_level1_describes(self):
        """Every level-1 problem but one (a bool input) becomes a kgate problem on
        the meta device, with its reference as the solution."""
        import glob
        import tempfile
        from kgate.kernelbench import candidate
        level = os.path.join(HERE, "..", "..", ".cache", "kernelbench", "KernelBench", "level1")
        bad = []
        with tempfile.TemporaryDirectory() as d:
            for f in sorted(glob.glob(os.path.join(level, "*.py"))):
                sol = os.path.join(d, "ref_" + os.path.basename(f))
                with open(f) as src, open(sol, "w") as out:
                    out.write(src.read() + "\nModelNew = Model\n")
                try:
                    with mock.patch.dict(os.environ, {"KGATE_KERNEL": "ModelNew"}):  # a kernel job's open
                        prob, (k,) = candidate(f, sol)
                    self.assertEqual(type(k.fn).__name__, "_OnGPU")  # the solution, not a placeholder
                    prob.describe()
                except Exception as e:  # noqa: BLE001 - counted and named below
                    bad.append(f"{os.path.basename(f)}: {type(e).__name__}: {e}")
        self.assertEqual(len(bad), 1, bad)
        self.assertIn("93_masked_cumsum", bad[0])

    def test_bad_problems(self):
        with self.assertRaisesRegex(TypeError, "not a torch.Tensor"):
            Problem("t_bad1", inputs=lambda: [torch.randn(2), "x"], reference=torch.relu).describe()
        with self.assertRaisesRegex(ValueError, "0 tensors"):
            Problem("t_bad0", inputs=lambda: [3], reference=torch.relu).describe()
        with self.assertRaisesRegex(ValueError, "share one dtype"):
            Problem("t_bad2", inputs=lambda: [torch.randn(4), torch.randn(4, dtype=torch.float16)],
                    reference=lambda a, b: a).describe()
        with self.assertRaisesRegex(ValueError, "name"):
            Problem("has space", inputs=lambda: [torch.randn(4)], reference=torch.relu)


SOLUTION_HEAD = """
import torch
import torch.nn as nn
import torch.nn.functional as F
"""


class WorkerHostRunsNoCandidateCodeLater(unittest.TestCase):
    """What a Python candidate may leave behind to run its code outside the
    timed calls -- while kgate reads its results or computes a reference --
    is refused (_worker._left_behind), and reading results goes through
    torch's C entry points taken before the import (_worker._Raw), by a
    plain copy of a dense, contiguous tensor."""

    @classmethod
    def setUpClass(cls):
        from kgate import _worker
        cls.w = _worker
        cls.raw = _worker._Raw(torch)

    def left(self):
        return self.w._left_behind(self.raw)

    def test_modes_and_hooks_left_active_are_named(self):
        import gc
        import signal

        from torch.overrides import TorchFunctionMode
        from torch.utils._python_dispatch import TorchDispatchMode
        self.assertIsNone(self.left())
        self.assertIsNone(self.w._left_behind(None))
        for mode, want in ((TorchFunctionMode(), "torch function mode"), (TorchDispatchMode(), "dispatch mode")):
            with self.subTest(want=want):
                mode.__enter__()
                try:
                    self.assertIn(want, self.left())
                finally:
                    mode.__exit__(None, None, None)
                self.assertIsNone(self.left())

        class Equal:  # a hook that says it is the one before: compared by identity, not ==
            def __eq__(self, other):
                return True

            __hash__ = object.__hash__

            def __call__(self, *a):
                return None

        for setter, getter in ((sys.setprofile, sys.getprofile), (sys.settrace, sys.gettrace)):
            for hook in (lambda *a: None, Equal()):
                was = getter()
                setter(hook)
                try:
                    got = self.w._left_behind(None)
                finally:
                    setter(was)
                self.assertIn("trace or profile hook", got)
        gc.callbacks.append(Equal())
        try:
            self.assertIn("garbage collector callback", self.left())
        finally:
            gc.callbacks.pop()
        signal.setitimer(signal.ITIMER_PROF, 30)  # pending: fires a handler after the call
        try:
            self.assertIn("interval timer", self.left())
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
        with mock.patch.object(self.raw, "eval_frame", lambda: Equal()):
            self.assertIn("TorchDynamo's frame callback", self.left())
        self.assertIsNone(self.left())

    def test_set_default_device_is_not_a_mode_left_behind(self):
        # torch.set_default_device pushes torch's own DeviceContext mode: an honest import may do it
        torch.set_default_device("cpu")
        try:
            self.assertEqual(torch._C._len_torch_function_stack(), 1)
            self.assertIsNone(self.left())
        finally:
            torch.set_default_device(None)
        self.assertEqual(torch._C._len_torch_function_stack(), 0)

    def test_an_import_that_leaves_a_mode_is_refused(self):
        import ctypes
        import tempfile

        class Lib:
            def kg_worker_opening(self):
                return None

        for body, want in (("from torch.overrides import TorchFunctionMode\nTorchFunctionMode().__enter__()\n",
                            "importing it left a torch function mode active"),
                           ("import sys\nsys.setprofile(lambda *a: None)\n", "importing it left a Python trace")):
            with self.subTest(want=want), tempfile.TemporaryDirectory() as d:
                path = os.path.join(d, "leaves.py")
                with open(path, "w") as f:
                    f.write(body)
                msg = ctypes.create_string_buffer(400)
                was = sys.getprofile()
                try:
                    rc = self.w.Host(Lib()).open(None, path.encode(), [None], msg, 400)
                finally:
                    sys.setprofile(was)
                    while torch._C._len_torch_function_stack():
                        torch._C._pop_torch_function_stack()
                self.assertEqual(rc, 4)
                self.assertIn(f"{path}: {want}", msg.value.decode())

    def test_a_supports_that_leaves_a_mode_spoils_the_kernel(self):
        from torch.overrides import TorchFunctionMode

        import kgate
        host = self.w.Host(None)
        host.raw = self.raw
        k = kgate.Kernel(abs, op="relu", dtype="fp16", supports=lambda ext: TorchFunctionMode().__enter__() or True)
        try:
            self.assertEqual(host._supporter(k)([4, 4], 2), 1)
        finally:
            torch._C._pop_torch_function_stack()
        self.assertIn("supports() left a torch function mode active", host.spoiled)

    def test_results_are_read_past_a_patched_torch_tensor(self):
        # a callable that returns its input and computes in a replaced copy_ (or
        # shape) gets no code run: the host reads through torch._C.TensorBase
        raw = self.raw
        x, y = torch.tensor([-1.0, 2.0]), torch.zeros(2)
        ran = []
        with mock.patch.object(torch.Tensor, "copy_", lambda *a: ran.append("copy_"), create=True), \
                mock.patch.object(torch.Tensor, "shape", property(lambda t: ran.append("shape")), create=True):
            self.assertEqual(tuple(raw.shape(x)), (2,))
            self.assertEqual((raw.dtype(x), raw.device(x)), (torch.float32, torch.device("cpu")))
            self.assertIsNone(raw.refuse_result(0, x, y))
            raw._copy(y, x)
        self.assertEqual(ran, [])
        self.assertEqual(y.tolist(), [-1.0, 2.0])  # the input, not its relu
        self.assertIs(raw.Tensor, torch.Tensor)
        self.assertIs(raw._copy, torch._C.TensorBase.copy_)  # the C type's, not torch.Tensor's
        with self.assertRaises((TypeError, AttributeError)):
            torch._C.TensorBase.copy_ = None  # a C type: what _Raw keeps cannot be replaced

    def test_a_kernel_registered_over_the_copy_is_seen(self):
        # torch.library over aten::copy_ would run in kgate's copy of the results
        self.assertEqual(self.raw.tables_changed(), [])
        lib = torch.library.Library("aten", "IMPL")
        lib.impl("copy_", lambda dst, src, non_blocking=False: dst, "CUDA")
        try:
            self.assertEqual(self.raw.tables_changed(), ["aten::copy_"])
        finally:
            lib._destroy()
        self.assertEqual(self.raw.tables_changed(), [])

    def collect(self, got):
        """Host.collect of one returned value into a CPU output buffer of
        four floats; (rc, message). A refusal returns before any copy, so
        it runs here without a GPU."""
        import ctypes

        import kgate
        from kgate import _abi
        host = self.w.Host(None)
        host.raw = self.raw
        host.torch = torch
        k = kgate.Kernel(abs, op="relu", dtype="fp32", name="k")
        host.kernels = [k]
        buf = torch.zeros(4)
        shp = (ctypes.c_int64 * 1)(4)
        out = (_abi.DLTensor * 1)()
        out[0].data, out[0].device, out[0].ndim = buf.data_ptr(), _abi.DLDevice(1, 0), 1
        out[0].dtype, out[0].shape = _abi.DLDataType(2, 32, 1), ctypes.cast(shp, ctypes.POINTER(ctypes.c_int64))
        host.last[("k", out[0].data)] = got
        kern = _abi.Kernel(b"k")
        msg = ctypes.create_string_buffer(400)
        rc = host.collect(None, ctypes.pointer(kern), out, 1, None, msg, 400)
        return rc, msg.value.decode()

    def test_collect_compares_the_returned_type_by_identity(self):
        # `type(got) in (tuple, list)` compared with ==: a metaclass's __eq__ ran, and the
        # object's __len__ and __iter__ after it, at read time
        ran = []

        class Meta(type):
            def __eq__(cls, other):
                ran.append("__eq__")
                return True

            __hash__ = type.__hash__

        class Lazy(metaclass=Meta):
            def __len__(self):
                ran.append("__len__")
                return 1

            def __iter__(self):
                ran.append("__iter__")
                return iter([torch.ones(4)])

        rc, msg = self.collect(Lazy())
        self.assertEqual((rc, ran), (1, []))
        self.assertIn("output 0 is a Lazy, not a torch.Tensor", msg)
        rc, msg = self.collect(torch.ones(4).as_strided((4,), (0,)))  # a broadcast view
        self.assertEqual(rc, 1)
        self.assertIn("is a view", msg)

    def test_the_default_device_mode_is_allowed_only_as_torch_wrote_it(self):
        from torch.utils import _device
        torch.set_default_device("cpu")
        try:
            self.assertIsNone(self.left())
            with mock.patch.object(_device.DeviceContext, "__torch_function__", lambda *a, **kw: None):
                self.assertIn("torch function mode", self.left())
            with mock.patch.object(_device, "_device_constructors", lambda: set()):
                self.assertIn("torch function mode", self.left())
            self.assertIsNone(self.left())
        finally:
            torch.set_default_device(None)

    def test_no_audit_hook_can_be_added(self):
        ran = []
        sys.addaudithook(lambda event, args: ran.append(event))  # refused, silently, by CPython
        open(os.devnull).close()  # an audited event
        self.assertEqual(ran, [])

    def test_library_paths_return_dense_results(self):
        # a library path's transposed view is made contiguous inside its call, where it is timed
        f = self.w._dense(lambda x: x.t())
        y = f(torch.randn(3, 5))
        self.assertTrue(y.is_contiguous())
        self.assertIsNone(self.raw.refuse_result(0, y, torch.zeros(5, 3)))
        ys = self.w._dense(lambda x: torch.max(x, 0))(torch.randn(3, 5).t())
        self.assertIs(type(ys), tuple)
        self.assertTrue(all(t.is_contiguous() for t in ys))

    def test_results_whose_copy_would_compute_are_refused(self):
        raw = self.raw
        want = torch.zeros(4, 6)
        x = torch.randn(6, 4)
        cases = [
            (x.t(), "is a view (not contiguous"),  # a transpose done by kgate's copy
            (torch._neg_view(torch.randn(4, 6)), "lazy negation"),
            (torch.randn(4, 6).to_sparse(), "torch.sparse_coo tensor; a dense one is expected"),
            (torch.nested.nested_tensor([torch.randn(6), torch.randn(6)]), "nested tensor"),
            (torch.randn(4, 6).as_subclass(type("Sub", (torch.Tensor,), {})), "a subclass of torch.Tensor"),
            ([1.0], "not a torch.Tensor"),
            (torch.randn(4, 5), "has shape (4, 5)"),
            (torch.randn(4, 6, dtype=torch.float64), "torch.float64"),
        ]
        for r, want_msg in cases:
            with self.subTest(want=want_msg):
                self.assertIn(want_msg, raw.refuse_result(0, r, want) or "accepted")
        self.assertIsNone(raw.refuse_result(0, x.t().contiguous(), want))


class SolutionsThatPatchTheReference(unittest.TestCase):
    """A KernelBench solution that replaces what the reference calls into is
    refused (kgate/_guard.py): at its import, in ModelNew's constructor, or
    later (checked before each reference); torch's own first-use patches
    (TorchDynamo's) and ordinary eager work are not mistaken for it."""

    PROBLEM = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(16)
    def forward(self, x):
        return torch.relu(self.ln(x)) @ x.transpose(0, 1)

def get_inputs():
    return [torch.randn(8, 16)]

def get_init_inputs():
    return []
"""

    def judge(self, solution_body):
        """(problem, None), or (None, the refusal) as the kernel job's open gives it."""
        import tempfile
        from kgate.kernelbench import SolutionError, candidate
        with tempfile.TemporaryDirectory() as d:
            prob, sol = os.path.join(d, "p.py"), os.path.join(d, "s.py")
            with open(prob, "w") as f:
                f.write(self.PROBLEM)
            with open(sol, "w") as f:
                f.write(SOLUTION_HEAD + solution_body)
            try:
                with mock.patch.dict(os.environ, {"KGATE_KERNEL": "ModelNew"}):
                    problem, _ = candidate(prob, sol)
                return problem, None
            except SolutionError as e:
                self.assertIn(f"{sol}: refused: ", str(e))
                return None, str(e)

    def test_only_the_kernel_job_imports_the_solution(self):
        # listing and the library paths' worker (no KGATE_KERNEL) run none of the solution's
        # code: a solution that would patch at import is not even imported there
        import tempfile
        from kgate.kernelbench import candidate
        saved = torch.relu
        try:
            with tempfile.TemporaryDirectory() as d:
                prob, sol = os.path.join(d, "p.py"), os.path.join(d, "s.py")
                with open(prob, "w") as f:
                    f.write(self.PROBLEM)
                with open(sol, "w") as f:
                    f.write(SOLUTION_HEAD + "torch.relu = lambda x: x\n")
                with mock.patch.dict(os.environ, {}):
                    os.environ.pop("KGATE_KERNEL", None)
                    problem, (k,) = candidate(prob, sol)
                self.assertIs(torch.relu, saved)
                self.assertEqual(k.name, "ModelNew")
                self.assertEqual(problem.surface.changed(), [])
        finally:
            torch.relu = saved

    def test_reference_as_solution_passes(self):
        problem, err = self.judge("from p import Model as ModelNew\n")
        self.assertIsNone(err)
        self.assertEqual(problem.surface.changed(), [])

    def test_patch_at_import(self):
        cases = [
            ("F.layer_norm = lambda *a, **k: a[0]\n", "torch.nn.functional.layer_norm"),
            ("torch.relu = lambda x: x\n", "torch.relu"),
            ("torch.Tensor.__matmul__ = lambda a, b: a\n", "torch.Tensor.__matmul__ (added)"),
            ("nn.LayerNorm.forward = lambda self, x: x\n", "torch.nn.LayerNorm.forward"),
            ("import sys\nsys.modules[[m for m in sys.modules if m.startswith('kgate_user_p_')][-1]]"
             ".Model.forward = lambda self, x: x\n", "Model.forward"),
        ]
        saved = {"ln": torch.nn.functional.layer_norm, "relu": torch.relu,
                 "fwd": torch.nn.LayerNorm.forward}
        try:
            for body, want in cases:
                with self.subTest(want=want):
                    _, err = self.judge(body + "class ModelNew(torch.nn.Module):\n    pass\n")
                    self.assertIsNotNone(err)
                    self.assertIn("importing s.py replaced " + want, err)
                    self.assertEqual(len(err.splitlines()), 1)
                # undo, so that the next case starts clean
                torch.nn.functional.layer_norm, torch.relu = saved["ln"], saved["relu"]
                torch.nn.LayerNorm.forward = saved["fwd"]
                if "__matmul__" in torch.Tensor.__dict__:
                    del torch.Tensor.__matmul__
        finally:
            torch.nn.functional.layer_norm, torch.relu = saved["ln"], saved["relu"]
            torch.nn.LayerNorm.forward = saved["fwd"]

    def test_patch_in_constructor_and_later(self):
        saved = torch.sigmoid
        try:
            _, err = self.judge("class ModelNew(nn.Module):\n"
                                "    def __init__(self):\n"
                                "        super().__init__()\n"
                                "        torch.sigmoid = lambda x: x\n")
            self.assertIn("ModelNew's constructor replaced torch.sigmoid", err)
        finally:
            torch.sigmoid = saved
        problem, err = self.judge("class ModelNew(nn.Module):\n    pass\n")
        self.assertIsNone(err)
        try:
            torch.sigmoid = lambda x: x  # as a forward() would, before kgate's next reference
            self.assertEqual(problem.surface.changed(), ["torch.sigmoid"])
        finally:
            torch.sigmoid = saved

    def test_a_kernel_registered_over_an_aten_operator(self):
        # the problem's reference calls relu: a solution registering its own CPU kernel
        # for aten::relu (as torch.library allows) would change what the reference computes
        _, err = self.judge("_lib = torch.library.Library('aten', 'IMPL')\n"
                            "_lib.impl('relu', lambda x: x * 0, 'CPU')\n"
                            "class ModelNew(nn.Module):\n    pass\n")
        self.assertIn("aten::relu (a kernel registered over it)", err or "")
        import gc
        import sys as _sys
        for name in [m for m in _sys.modules if m.startswith("kgate_user_s_")]:
            mod = _sys.modules.pop(name)
            if hasattr(mod, "_lib"):
                mod._lib._destroy()  # the registration goes with its Library
        gc.collect()
        self.assertTrue(torch.equal(torch.relu(torch.tensor([-1.0, 2.0])), torch.tensor([0.0, 2.0])))

    def test_switches_that_slow_the_library(self):
        old = torch.backends.cudnn.deterministic
        try:
            _, err = self.judge("torch.backends.cudnn.deterministic = not torch.backends.cudnn.deterministic\n"
                                "class ModelNew(nn.Module):\n    pass\n")
            self.assertIn(f"torch.backends.cudnn.deterministic ({old!r} -> {not old!r})", err)
        finally:
            torch.backends.cudnn.deterministic = old
        problem, err = self.judge("class ModelNew(nn.Module):\n    pass\n")
        self.assertIsNone(err)
        try:
            torch.set_float32_matmul_precision("medium")
            self.assertIn("torch.get_float32_matmul_precision() ('highest' -> 'medium')",
                          problem.surface.changed(10))
            problem.surface.rebase_settings()  # as Problem.ready() does after its own switches
            self.assertEqual(problem.surface.changed(), [])
        finally:
            torch.set_float32_matmul_precision("highest")

    def test_torch_compile_and_eager_work_are_not_patches(self):
        problem, err = self.judge("class ModelNew(nn.Module):\n"
                                  "    def __init__(self):\n"
                                  "        super().__init__()\n"
                                  "        self.f = torch.compile(lambda x: x * 2)\n")
        self.assertIsNone(err)
        self.assertEqual(problem.surface.changed(), [])
        try:  # TorchDynamo's first compile (inductor on the CPU needs a C++ compiler)
            torch.compile(lambda x: x * 2)(torch.randn(4))
        except Exception as e:  # noqa: BLE001
            print(f"(no CPU compile here: {type(e).__name__})")
        seed = torch.manual_seed
        try:  # torch's own wrapper around something else is still a patch
            torch.manual_seed = torch._disable_dynamo(lambda s: None)
            self.assertEqual(problem.surface.changed(), ["torch.manual_seed"])
        finally:
            torch.manual_seed = seed
        import copy
        m = copy.deepcopy(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU())).double()
        m(torch.randn(2, 4, dtype=torch.float64))
        torch.nn.functional.conv2d(torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3)).softmax(-1)
        self.assertEqual(problem.surface.changed(), [])


class SolutionsOfOneProblemGrouped(unittest.TestCase):
    """kgate kernelbench DIR DIR judges a problem's solutions in one run
    (kernelbench.candidate_group): listing and the library paths import no
    solution, a kernel job imports only its own (KGATE_KERNEL), and one that
    does not load names its file."""

    PROBLEM = SolutionsThatPatchTheReference.PROBLEM

    def group(self, bodies, want=None):
        import tempfile
        from kgate.kernelbench import candidate_group, kernel_names
        d = tempfile.mkdtemp()
        prob = os.path.join(d, "p.py")
        with open(prob, "w") as f:
            f.write(self.PROBLEM)
        sols = []
        for i, body in enumerate(bodies):
            sols.append(os.path.join(d, f"s{i}.py"))
            with open(sols[-1], "w") as f:
                f.write(SOLUTION_HEAD + f"open({os.path.join(d, f'imported{i}')!r}, 'w').close()\n" + body)
        names = kernel_names(sols)
        env = {"KGATE_KERNEL": names[want]} if want is not None else {}
        with mock.patch.dict(os.environ, env, clear=False):
            if want is None:
                os.environ.pop("KGATE_KERNEL", None)
            problem, ks = candidate_group(prob, sols)
        imported = sorted(i for i in range(len(bodies)) if os.path.exists(os.path.join(d, f"imported{i}")))
        return problem, ks, imported, sols

    def test_listing_imports_no_solution(self):
        problem, ks, imported, _ = self.group(["from p import Model as ModelNew\n"] * 3)
        self.assertEqual(imported, [])
        self.assertEqual([k.name for k in ks], ["ModelNew.s0", "ModelNew.s1", "ModelNew.s2"])
        with self.assertRaisesRegex(RuntimeError, "not loaded in this worker"):
            ks[0].fn(torch.zeros(8, 16))

    def test_a_kernel_job_imports_only_its_solution(self):
        _, ks, imported, _ = self.group(["from p import Model as ModelNew\n"] * 3, want=1)
        self.assertEqual(imported, [1])
        x = torch.randn(8, 16)
        self.assertEqual(ks[1].fn.module(x).shape, (8, 8))  # ModelNew, not a placeholder
        with self.assertRaises(RuntimeError):
            ks[2].fn(x)

    def test_a_solution_that_does_not_load_names_its_file(self):
        # in a group: a kernel that fails its first call with the reason (NOT_LOADED), so
        # that the run goes on; alone: SolutionError, a bad candidate (exit 4)
        from kgate.kernelbench import NOT_LOADED, SolutionError, candidate
        saved = torch.relu
        try:
            for body, want in [("x = 1\n", "no ModelNew"),
                               ("torch.relu = lambda x: x\nclass ModelNew(nn.Module):\n    pass\n",
                                "importing s1.py replaced torch.relu"),
                               ("raise SystemExit('bye')\n", "SystemExit: bye")]:
                with self.subTest(want=want):
                    _, ks, imported, sols = self.group(["from p import Model as ModelNew\n", body], want=1)
                    self.assertEqual(imported, [1])
                    with self.assertRaises(RuntimeError) as cm:
                        ks[1].fn(torch.zeros(8, 16))
                    msg = str(cm.exception)
                    self.assertTrue(msg.startswith(f"{NOT_LOADED} ModelNew.s1: {sols[1]}: "), msg)
                    self.assertIn(want, msg)
                    torch.relu = saved
                    for name in [m for m in sys.modules if m.startswith("kgate_user_s1_")]:
                        del sys.modules[name]  # as in a fresh worker
                    prob = os.path.join(os.path.dirname(sols[1]), "p.py")
                    with mock.patch.dict(os.environ, {"KGATE_KERNEL": "ModelNew"}):
                        with self.assertRaises(SolutionError) as cm:
                            candidate(prob, sols[1])
                    self.assertIn(want, str(cm.exception))
                    torch.relu = saved
        finally:
            torch.relu = saved

    def test_a_file_changed_since_it_was_pinned_is_not_imported(self):
        # kgate pins the problem and solutions when it writes the candidate; one changed
        # later (by a solution judged earlier, say) is refused where it would be imported
        from kgate._kernel import CandidateError, sha256_of
        from kgate import kernelbench
        from kgate.kernelbench import SolutionError, candidate_group, kernel_names
        _, _, _, sols = self.group(["from p import Model as ModelNew\n"] * 2)
        prob = os.path.join(os.path.dirname(sols[0]), "p.py")
        pins = {os.path.abspath(f): sha256_of(f) for f in [prob, *sols]}
        with open(sols[1], "a") as f:
            f.write("# changed\n")
        for name in [m for m in sys.modules if m.startswith("kgate_user_s1_")]:
            del sys.modules[name]  # as in a fresh worker
        with mock.patch.dict(os.environ, {"KGATE_KERNEL": kernel_names(sols)[1]}):
            _, ks = candidate_group(prob, sols, pins=pins)
        with self.assertRaisesRegex(RuntimeError, "s1.py: CandidateError: .*s1.py: changed since kgate started"):
            ks[1].fn(torch.zeros(8, 16))
        with mock.patch.dict(os.environ, {"KGATE_KERNEL": "ModelNew"}):
            with self.assertRaisesRegex(SolutionError, "s1.py: changed since kgate started judging it"):
                kernelbench.candidate(prob, sols[1], pins=pins)
        with open(prob, "a") as f:
            f.write("# changed\n")
        for name in [m for m in sys.modules if m.startswith("kgate_user_p_")]:
            del sys.modules[name]  # as in a fresh worker (one already holding the pinned bytes runs those)
        with mock.patch.dict(os.environ, {"KGATE_KERNEL": kernel_names(sols)[0]}):
            with self.assertRaisesRegex(CandidateError, "p.py: changed since kgate started judging it"):
                candidate_group(prob, sols, pins=pins)

    def test_the_worker_host_opens_the_group_for_its_job(self):
        # _worker.Host.open, as a kernel job and a list job call it (kg_worker_opening() from a
        # stand-in for libkgate): KGATE_KERNEL set to the job's kernel or unset, only that
        # solution imported, and the candidate file refused when it is not the one kgate wrote
        import ctypes
        from kgate import _worker
        from kgate._kernel import sha256_of
        from kgate.kernelbench import write_group_candidate

        class Lib:
            def __init__(self, want):
                self.want = want

            def kg_worker_opening(self):
                return self.want

        _, _, _, sols = self.group(["from p import Model as ModelNew\n"] * 3)
        d = os.path.dirname(sols[0])  # self.group listed them: no solution imported yet
        cand = os.path.join(d, "cand.py")
        write_group_candidate(cand, os.path.join(d, "p.py"), sols)

        def open_as(want, sha=None):
            for name in [m for m in sys.modules if m.startswith(("kgate_user_s", "kgate_user_cand_"))]:
                del sys.modules[name]  # a fresh worker
            msg = ctypes.create_string_buffer(400)
            env = {"KGATE_KERNEL": "stale", "KGATE_CANDIDATE_SHA256": sha or sha256_of(cand)}
            with mock.patch.dict(os.environ, env):
                rc = _worker.Host(Lib(want)).open(None, cand.encode(), [None], msg, 400)
                seen = os.environ.get("KGATE_KERNEL")
            done = sorted(i for i in range(3) if os.path.exists(os.path.join(d, f"imported{i}")))
            for i in done:
                os.unlink(os.path.join(d, f"imported{i}"))
            return rc, msg.value.decode(), seen, done

        self.assertEqual(open_as(b"ModelNew.s2")[::2], (0, "ModelNew.s2"))
        self.assertEqual(open_as(b"ModelNew.s2")[3], [2])
        self.assertEqual(open_as(None)[2:], (None, []))  # a list or library job
        rc, msg, _, done = open_as(b"ModelNew.s0", sha="0" * 64)
        self.assertEqual((rc, done), (4, []))
        self.assertIn("cand.py: changed since kgate started judging it", msg)

    def test_names_are_unique(self):
        from kgate.kernelbench import kernel_names
        self.assertEqual(kernel_names(["a/1_x.py", "b/1_x.py", "c/1 y!.py"]),
                         ["ModelNew.1_x", "ModelNew.1_x.1", "ModelNew.1_y_"])
        # a suffix that another file's name already is: the next free one
        self.assertEqual(kernel_names(["5_x y.py", "5_x_y.2.py", "5_x_y.py"]),
                         ["ModelNew.5_x_y", "ModelNew.5_x_y.2", "ModelNew.5_x_y.3"])
        names = kernel_names([f"d{i}/" + "n" * 200 + ".py" for i in range(12)])
        self.assertEqual(len(set(names)), 12)
        self.assertTrue(all(len(n) <= 95 for n in names))


if __name__ == "__main__":
    unittest.main(verbosity=2)

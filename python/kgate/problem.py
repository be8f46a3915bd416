"""kgate.Problem: an operator outside the catalog, judged with the same
engine (src/catalog/problem.h has the rule).

A candidate file that defines KGATE_PROBLEM may name it as the operator of
its kernels. The worker host asks the problem for:
  - its description: the tensors (from the input factory run on the meta
    device, so no GPU is needed to list it), the essential work (the bytes
    of the inputs, parameters and buffers the reference reads, each once,
    traced by _reads.py, and of every output; FLOPs counted on the reference
    with torch.utils.flop_counter.FlopCounterMode), and the roof;
  - inputs for a seed (the factory run on the GPU under torch.manual_seed);
  - the fp64 reference (the reference module converted with .double(), or
    the function given float64 inputs; fp32 when fp64 fails, and said);
  - its library paths: PyTorch eager (the reference in the problem's own
    dtype), and torch.compile when asked for.

Limits of the work model: FlopCounterMode counts matrix products,
convolutions and attention, not element-wise or reduction arithmetic, so a
problem made of those gets 0 FLOPs and is judged on its bytes alone; bytes
are what the problem must touch once, not what a library moves. The FLOPs
are the reference's: a reference that computes what it then discards
(torch.triu of a product) or ignores what its inputs are (triangular,
symmetric, diagonal) counts more than a kernel that uses it must do.
Documented in docs/python.md."""
import copy
import math
import re

FAMILIES = ("gemm", "attention", "convolution", "normalization", "element-wise/reduction")
_DT = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "int32": "int32", "int64": "int64"}


def guess_family(name):
    """The paper's family of a problem from its name (KernelBench's file names)."""
    n = name.lower()
    if "attention" in n or "sdpa" in n:
        return "attention"
    if "conv" in n:
        return "convolution"
    if "matmul" in n or "gemm" in n or "matrix" in n or "linear" in n or "bmm" in n:
        return "gemm"
    if "norm" in n:
        return "normalization"
    return "element-wise/reduction"


class Problem:
    """An operator outside the catalog.

    name       1-63 of [A-Za-z0-9_.-] (not a catalog operator's name)
    inputs     a callable returning the inputs (torch tensors), drawn from
               torch's generator: kgate calls it under torch.manual_seed(seed)
               with the GPU as the default device
    reference  the reference: an nn.Module or a function of the inputs,
               returning a tensor or a tuple of them
    library    {path name: callable} timed as the library paths; default
               {"torch": reference} (eager PyTorch in the problem's dtype)
    compile    also time torch.compile(reference) as "torch.compile"
    family     one of FAMILIES; guessed from the name when None
    """

    def __init__(self, name, inputs, reference, library=None, compile=False, family=None, note=""):
        if not isinstance(name, str) or not re.match(r"^[A-Za-z0-9_.-]{1,63}$", name):
            raise ValueError(f"kgate.Problem: name {name!r} must be 1-63 of [A-Za-z0-9_.-]")
        if not callable(inputs):
            raise TypeError("kgate.Problem: inputs must be a callable returning the input tensors")
        if not callable(reference):
            raise TypeError("kgate.Problem: reference must be callable (an nn.Module or a function)")
        if library is not None and (not isinstance(library, dict) or not all(
                isinstance(k, str) and re.match(r"^[A-Za-z0-9_.-]{1,39}$", k) and callable(v)
                for k, v in library.items())):
            raise TypeError("kgate.Problem: library must map path names (1-39 of [A-Za-z0-9_.-]) to callables")
        family = family or guess_family(name)
        if family not in FAMILIES:
            raise ValueError(f"kgate.Problem: family {family!r} is not one of {', '.join(FAMILIES)}")
        self.name, self.make_inputs, self.reference = name, inputs, reference
        self.library = dict(library) if library else None
        self.compile, self.family, self.note = bool(compile), family, note
        self.desc = None  # the description, once made
        self.consts = {}  # position -> a Python number the factory gives among its tensors
        self.dtype = None
        self.index_dtype = None  # "int32" where an input is: such inputs take the kernel's index dtype
        self.ref64 = None
        self.ref_dtype = "fp64"
        self.on_gpu = None
        self.surface = None  # a _guard.Surface checked before each reference (KernelBench's route)
        self.aten_ops = set()  # the operators the reference dispatches to, from describe()

    # ------------------------------------------------------ description
    def describe(self):
        """The problem's description (catalog/problem.h's JSON), made once on the
        meta device."""
        if self.desc is not None:
            return self.desc
        import torch
        from torch.utils.flop_counter import FlopCounterMode
        with torch.device("meta"):
            xs = self.tensors(self.make_inputs(), first=True)
        ref = _to(self.reference, "meta")
        from ._guard import op_recorder
        from ._reads import reads_mode
        reads = reads_mode(xs + _params(ref))
        with torch.no_grad(), FlopCounterMode(display=False) as fc, op_recorder() as rec, reads:
            outs = _as_list(ref(*self.args(xs)), "the reference")
        reads.returned(outs)
        self.aten_ops = rec.ops  # what the reference dispatches to (_guard.Surface watches them)
        flops = float(fc.get_total_flops())
        dts = {_dtype_name(t, "an input or output") for t in xs + outs if t.is_floating_point()}
        if len(dts) != 1:
            raise ValueError(f"problem {self.name}: its float tensors are {sorted(dts) or 'none'}; "
                             "they must share one dtype (fp16, bf16 or fp32)")
        self.dtype = dts.pop()
        if any(t.dtype == torch.int32 for t in xs):
            self.index_dtype = "int32"
        desc = {
            "name": self.name, "family": self.family,
            "inputs": [{"shape": list(t.shape), "dtype": _dtype_name(t, "an input")} for t in xs],
            "outputs": [{"shape": list(t.shape), "dtype": _dtype_name(t, "an output")} for t in outs],
            "flops": flops,
            "bytes_read": float(reads.bytes()),
            "bytes_written": float(sum(t.numel() * t.element_size() for t in outs)),
            "roof": "tensor" if self.dtype in ("fp16", "bf16") and flops > 0 else "fp32",
        }
        note = (f"FLOPs from FlopCounterMode ({flops:.3g}; matmul/conv/attention only); bytes the reference "
                "reads of its inputs and parameters, each once, and of its outputs")
        desc["note"] = (self.note + "; " + note if self.note else note)[:250]
        self.desc = desc
        return desc

    # --------------------------------------------------------- on the GPU
    def ready(self, device):
        """Moves the reference to the GPU and makes its fp64 twin (once). In
        fp32 problems TF32 is turned off: fp32 means fp32 (docs/python.md)."""
        if self.on_gpu is not None:
            return
        import torch
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        if self.surface is not None:
            self.surface.rebase_settings()  # kgate's own switches, not the solution's
        dev = torch.device("cuda", device)
        self.on_gpu = _to(self.reference, dev)
        try:
            self.ref64 = _to(self.reference, dev, torch.float64)
            with torch.no_grad(), torch.device(dev):
                xs = [x.double() if x.is_floating_point() else x for x in self.tensors(self.make_inputs())]
                self.ref64(*self.args(xs))
        except Exception as e:  # an op without fp64 kernels: the reference stays in fp32, and says so
            self.ref64 = self.on_gpu
            self.ref_dtype = f"fp32 (fp64 failed: {type(e).__name__})"

    def tensors(self, made, first=False):
        """The tensors of what the input factory gave; Python numbers among them
        (KernelBench's scalar arguments) are kept as constants, the same every
        call, and put back by args()."""
        import torch
        made = list(made) if isinstance(made, (list, tuple)) else [made]
        consts = {i: v for i, v in enumerate(made) if isinstance(v, (int, float, bool)) and not isinstance(v, torch.Tensor)}
        if first:
            self.consts = consts
        elif consts != self.consts:
            raise ValueError("the input factory's numbers changed between calls: they must be constants")
        return _as_list([v for i, v in enumerate(made) if i not in consts], "the input factory")

    def args(self, tensors):
        """The arguments of a call: the tensors with the constants back in place."""
        if not self.consts:
            return list(tensors)
        it = iter(tensors)
        return [self.consts[i] if i in self.consts else next(it) for i in range(len(tensors) + len(self.consts))]

    def library_paths(self):
        """[(name, callable, summary)] of the library paths."""
        if self.library:
            return [(k, v, f"{k}: the problem's library path") for k, v in self.library.items()]
        paths = [("torch", self.on_gpu, "PyTorch eager: the reference in %s" % self.dtype)]
        if self.compile:
            import torch
            paths.append(("torch.compile", torch.compile(self.on_gpu),
                          "torch.compile of the reference (default mode)"))
        return paths


def _as_list(x, what):
    import torch
    xs = list(x) if isinstance(x, (list, tuple)) else [x]
    for i, t in enumerate(xs):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{what} gave a {type(t).__name__} at position {i}, not a torch.Tensor")
    if not 1 <= len(xs) <= 4:
        raise ValueError(f"{what} gave {len(xs)} tensors (1 to 4)")
    return xs


def _dtype_name(t, what):
    name = str(t.dtype).replace("torch.", "")
    if name not in _DT:
        raise TypeError(f"{what} is {t.dtype}; kgate takes float16, bfloat16, float32, int32 and int64")
    return _DT[name]


def _params(ref):
    """The parameters and buffers of the reference's module (none for a function)."""
    import torch
    mod = ref if isinstance(ref, torch.nn.Module) else getattr(ref, "__self__", None)
    if not isinstance(mod, torch.nn.Module):
        return []
    return list(mod.parameters()) + list(mod.buffers())


def _to(ref, device, dtype=None):
    """The reference on `device` (in `dtype`): a copy of a module, or a
    function whose inputs are moved there."""
    import torch
    mod = ref if isinstance(ref, torch.nn.Module) else None
    if mod is not None:
        m = copy.deepcopy(mod).to(device)
        if dtype is not None:
            m = m.to(dtype)
        return m
    if dtype is None:
        return ref
    return lambda *xs: ref(*[x.to(dtype) if x.is_floating_point() else x for x in xs])


def rms(t):
    return math.sqrt(float((t.double() ** 2).mean())) if t.numel() else 0.0

"""What a problem's reference calls into, and whether a solution changed it.

For a problem outside the catalog (a KernelBench problem, a kgate.Problem)
the fp64 reference is Python code in the same interpreter as the solution
(docs/security.md). A solution that replaces torch.nn.functional.layer_norm,
torch.Tensor.__matmul__ or the problem's Model.forward makes the reference
compute whatever the solution computes, and then passes every check.

Surface takes an identity snapshot of the namespaces a reference reaches
(torch, torch.nn.functional, torch.Tensor, torch.nn.Module, torch.linalg,
torch.fft, torch.special and the nn module classes, the problem's module
and the classes of the reference's submodules); changed() names what is no
longer the same object. kgate takes the snapshot before a KernelBench
solution is imported, checks it after the import and before every
reference computation, and refuses the solution with one line naming the
attribute.

It also keeps the dispatcher's table of every operator the reference
dispatches to (recorded on the meta device by Problem.describe): a kernel
registered over aten::layer_norm (torch.library, or the dispatcher's own
binding) changes that table and is refused the same way.

The limits: a function's __code__ edited in place, C-level patches, and
operators the reference reaches on the GPU but not on the meta device are
not seen; docs/security.md lists them.

It also records the global switches that change what the library path
(eager PyTorch) runs (cuDNN's benchmark and deterministic modes, TF32 and
reduced-precision reductions, the fp32 matmul precision, deterministic
algorithms): a solution that turns them to slow the library down, and so
inflate its own E_lib, is refused the same way."""
import sys


class Patched(Exception):
    """A solution changed what the reference calls into: refused, exit 4."""


_NAMESPACES = ("torch", "torch.nn.functional", "torch.linalg", "torch.fft", "torch.special", "torch.nn.init")


def _spaces(extra):
    import importlib

    import torch
    spaces = []
    for name in _NAMESPACES:
        try:
            spaces.append((name, importlib.import_module(name)))
        except ImportError:
            pass
    spaces.append(("torch.Tensor", torch.Tensor))
    spaces.append(("torch.nn.Module", torch.nn.Module))
    for name in dir(torch.nn):  # the layer classes a problem builds (nn.Conv2d, nn.LayerNorm, ...)
        obj = getattr(torch.nn, name, None)
        if isinstance(obj, type) and issubclass(obj, torch.nn.Module):
            spaces.append(("torch.nn." + name, obj))
    spaces.extend(extra)
    seen, out = set(), []
    for label, obj in spaces:  # torch.nn.Module is also among dir(torch.nn)
        if id(obj) not in seen:
            seen.add(id(obj))
            out.append((label, obj))
    return out


def _members(obj):
    """name -> object of a module's or class's own namespace (its __dict__:
    reading attributes through getattr would run descriptors)."""
    d = getattr(obj, "__dict__", None)
    return dict(d) if d is not None else {}


def op_recorder():
    """A dispatch mode that records, in .ops, the names of the operators
    called under it (torch is imported only here)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class _Rec(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = set()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.add(func._schema.name)
            return func(*args, **(kwargs or {}))

    return _Rec()


def _tables(ops):
    import torch
    out = {}
    for op in ops:
        try:
            out[op] = torch._C._dispatch_dump_table(op)
        except Exception:  # noqa: BLE001 - an operator this build cannot dump: not watched
            pass
    return out


def _code_consts(fn):
    import types
    return [c for c in getattr(getattr(fn, "__code__", None), "co_consts", ()) if isinstance(c, types.CodeType)]


def _torch_own(label, name, old, new):
    """Wrappers torch puts on itself when TorchDynamo is first imported or
    first compiles, recognized by their code objects (not by names a
    solution could copy) around the very object of the snapshot:
      - torch._disable_dynamo's `inner` (TorchDynamo's import wraps
        torch.manual_seed with it), harmless around any original;
      - install_generation_tagging_init's wrappers of nn.Module.__init__ and
        __setstate__, and its marker attribute
        (torch/_dynamo/mutation_guard.py)."""
    if old is None:  # an added attribute: only the tagging's marker
        return (label == "torch.nn.Module" and name == "___needs_generation_tag_patch" and new is False
                and "torch._dynamo.mutation_guard" in sys.modules)
    code = getattr(new, "__code__", None)
    if code is None or not any(cell.cell_contents is old for cell in (getattr(new, "__closure__", None) or ())):
        return False
    makers = []
    comp = sys.modules.get("torch._compile")
    if comp is not None:
        makers.append(getattr(comp, "_disable_dynamo", None))
    mg = sys.modules.get("torch._dynamo.mutation_guard")
    if mg is not None and label == "torch.nn.Module" and name in ("__init__", "__setstate__"):
        makers.append(getattr(mg, "install_generation_tagging_init", None))
    return any(code is c for m in makers for c in _code_consts(m))


def _settings():
    import torch
    b = torch.backends
    out = {}
    for name, get in (
            ("torch.backends.cudnn.enabled", lambda: b.cudnn.enabled),
            ("torch.backends.cudnn.benchmark", lambda: b.cudnn.benchmark),
            ("torch.backends.cudnn.deterministic", lambda: b.cudnn.deterministic),
            ("torch.backends.cudnn.allow_tf32", lambda: b.cudnn.allow_tf32),
            ("torch.backends.cuda.matmul.allow_tf32", lambda: b.cuda.matmul.allow_tf32),
            ("torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
             lambda: b.cuda.matmul.allow_fp16_reduced_precision_reduction),
            ("torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction",
             lambda: b.cuda.matmul.allow_bf16_reduced_precision_reduction),
            ("torch.get_float32_matmul_precision()", torch.get_float32_matmul_precision),
            ("torch.are_deterministic_algorithms_enabled()", torch.are_deterministic_algorithms_enabled)):
        try:
            out[name] = get()
        except Exception:  # noqa: BLE001 - a switch this torch lacks
            pass
    return out


class Surface:
    """An identity snapshot; extra: [(label, module or class)] beyond torch's;
    ops: operator names whose dispatch tables are watched."""

    def __init__(self, extra=(), ops=()):
        self.tables = _tables(ops)
        self.spaces = _spaces(list(extra))
        self.objs = {(label, k): v for label, obj in self.spaces for k, v in _members(obj).items()}
        self.settings = _settings()

    def rebase_settings(self):
        """After kgate itself sets a switch (Problem.ready turns TF32 off)."""
        self.settings = _settings()

    def changed(self, limit=3):
        """Up to `limit` 'label.name' entries replaced or removed since the
        snapshot, or public non-module entries added."""
        import types
        now_set = _settings()
        out = [f"{k} ({v!r} -> {now_set.get(k, v)!r})" for k, v in self.settings.items() if now_set.get(k, v) != v]
        out += [f"{op} (a kernel registered over it)" for op, t in _tables(self.tables).items()
                if t != self.tables[op]]
        for label, obj in self.spaces:
            now = _members(obj)
            for k, v in now.items():
                if (label, k) not in self.objs:
                    # a module gains private names and submodules by itself; a class
                    # gains nothing, and an added dunder overrides its base's
                    if (isinstance(obj, type) or not k.startswith("_") and not isinstance(v, types.ModuleType)) \
                            and not _torch_own(label, k, None, v):
                        out.append(f"{label}.{k} (added)")
                elif self.objs[(label, k)] is not v and not _torch_own(label, k, self.objs[(label, k)], v):
                    out.append(f"{label}.{k}")
            out.extend(f"{label}.{k} (removed)" for (lb, k) in self.objs if lb == label and k not in now)
            if len(out) >= limit:
                break
        return out[:limit]


def refuse_if_changed(surface, who):
    """Raises Patched naming what `who` replaced, if anything."""
    bad = surface.changed()
    if bad:
        raise Patched(f"{who} replaced {', '.join(bad)}, which the reference calls into: a solution may not "
                      "patch torch or the problem (docs/security.md)")


def module_classes(model):
    """[(label, class)] of the classes of a module and its submodules that are
    not torch's own (the problem's Model, its blocks)."""
    import torch
    out = []
    if isinstance(model, torch.nn.Module):
        for m in model.modules():
            t = type(m)
            if not t.__module__.startswith("torch.") and all(t is not c for _, c in out):
                out.append((t.__qualname__, t))
    return out

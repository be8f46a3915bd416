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

The limits: only attribute replacement is seen. A solution that registers
a new kernel for an aten operator (torch.library), edits a function's
__code__ in place, or patches C memory is not; those are documented in
docs/security.md."""

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


def prepare():
    """What torch patches into itself on first use, done before a snapshot:
    TorchDynamo replaces nn.Module.__init__ and __setstate__ at its first
    torch.compile (torch/_dynamo/mutation_guard.py), which would otherwise
    read as the solution's doing. Costs TorchDynamo's import (the fork
    server does it once)."""
    try:
        from torch._dynamo import mutation_guard
        mutation_guard.install_generation_tagging_init()
    except Exception:  # noqa: BLE001 - another torch: then a compile may be refused, and says so
        pass


def _members(obj):
    """name -> object of a module's or class's own namespace (its __dict__:
    reading attributes through getattr would run descriptors)."""
    d = getattr(obj, "__dict__", None)
    return dict(d) if d is not None else {}


class Surface:
    """An identity snapshot; extra: [(label, module or class)] beyond torch's."""

    def __init__(self, extra=()):
        prepare()
        self.spaces = _spaces(list(extra))
        self.ids = {(label, k): id(v) for label, obj in self.spaces for k, v in _members(obj).items()}
        self.keep = [v for _, obj in self.spaces for v in _members(obj).values()]  # ids stay unique

    def changed(self, limit=3):
        """Up to `limit` 'label.name' entries replaced or removed since the
        snapshot, or public non-module entries added."""
        import types
        out = []
        for label, obj in self.spaces:
            now = _members(obj)
            for k, v in now.items():
                old = self.ids.get((label, k))
                if old is None:
                    # a module gains private names and submodules by itself; a class
                    # gains nothing, and an added dunder overrides its base's
                    if isinstance(obj, type) or not k.startswith("_") and not isinstance(v, types.ModuleType):
                        out.append(f"{label}.{k} (added)")
                elif old != id(v):
                    out.append(f"{label}.{k}")
            out.extend(f"{label}.{k} (removed)" for (lb, k) in self.ids if lb == label and k not in now)
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

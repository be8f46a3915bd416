"""The bytes a problem's reference must read (kgate.Problem's work model):
of its leaf tensors (the inputs, the module's parameters and buffers), the
bytes the reference's operators read, each byte once, traced on the meta
device. A lower bound, so that rho never credits a kernel with work it did
not have to do:
  - a tensor read twice, an input given twice, and views of one storage
    (x and x.t(), x.expand(...)) count the storage's bytes they cover once;
    a broadcast (stride 0) counts the elements it has, not those it repeats;
  - a gather (embedding, index_select, gather, index, take) counts at most
    what it gathers from its source, not the whole table;
  - a parameter or buffer no operator reads counts nothing, a slice of one
    (a causal mask cut to the sequence) only the slice;
  - an output that is a leaf or a view of one (the reference returns an
    input) counts that leaf's bytes read, since the kernel must copy them;
  - a view, a *_like or new_* factory and an overwrite (copy_, fill_,
    zero_, an out= argument) read nothing of the tensor they are given.
Bytes written are not traced: every output is a buffer of its own that the
kernel writes once (catalog/problem.h)."""

_GATHERS = ("aten::embedding", "aten::index_select", "aten::gather", "aten::index", "aten::take",
            "aten::_embedding_bag", "aten::embedding_bag")
_OVERWRITES = ("aten::copy_", "aten::fill_", "aten::zero_")


def _key(t):
    return t.untyped_storage()._cdata


def _view(t):
    """(storage, first byte, end byte, bytes it holds, identity) of a tensor's view."""
    es, n = t.element_size(), t.numel()
    span = 0 if n == 0 else 1 + sum((s - 1) * abs(st) for s, st in zip(t.shape, t.stride()))
    start = t.storage_offset() * es
    return _key(t), start, start + span * es, min(n, span) * es, (start, tuple(t.shape), tuple(t.stride()))


def _not_read(func):
    name = func._schema.name
    if name.endswith("_like") or name.startswith(("aten::new_", "aten::empty")):
        return True
    # a view reads nothing; its readers do
    return any(r.alias_info is not None and not r.alias_info.is_write for r in func._schema.returns)


def _tensors(x, torch):
    if isinstance(x, torch.Tensor):
        yield x
    elif isinstance(x, (list, tuple)):
        for y in x:
            yield from _tensors(y, torch)
    elif isinstance(x, dict):
        for y in x.values():
            yield from _tensors(y, torch)


def reads_mode(leaves):
    """A dispatch mode that records the reads of `leaves` (tensors); .bytes()
    gives the total once the reference ran under it."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class _Reads(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.leaf = {_key(t) for t in leaves}
            self.views = {}   # storage -> {identity: (start, end, held)}
            self.gather = {}  # storage -> largest bytes a gather took from it

        def read(self, t):
            try:
                k, a, b, held, ident = _view(t)
            except (RuntimeError, NotImplementedError):  # no storage (sparse, nested): no leaf's
                return
            if k in self.leaf and held > 0:
                self.views.setdefault(k, {})[ident] = (a, b, held)

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            if _not_read(func):
                return out
            name = func._schema.name
            schema = func._schema.arguments
            written = {i for i, arg in enumerate(schema) if arg.alias_info is not None and arg.alias_info.is_write
                       and (name in _OVERWRITES or arg.name == "out")}
            for i, a in enumerate(args):
                if i in written:
                    continue
                for t in _tensors(a, torch):
                    if i == 0 and name in _GATHERS:
                        self.gathered(t, sum(o.numel() for o in _tensors(out, torch)) * t.element_size())
                    else:
                        self.read(t)
            for n, a in kwargs.items():
                if n != "out":
                    for t in _tensors(a, torch):
                        self.read(t)
            return out

        def gathered(self, t, got):
            """A gather took `got` bytes at most from t's view."""
            try:
                k, _, _, held, _ = _view(t)
            except (RuntimeError, NotImplementedError):
                return
            if k in self.leaf:
                self.gather[k] = max(self.gather.get(k, 0), min(got, held))

        def returned(self, outs):
            """An output that is a leaf or a view of one: the kernel reads it to copy it."""
            for t in outs:
                self.read(t)

        def bytes(self):
            total = 0
            for k in self.leaf:
                vs = sorted(self.views.get(k, {}).values())
                union, end = 0, 0
                for a, b, _ in vs:
                    if b > end:
                        union += b - max(a, end)
                        end = b
                total += max(min(union, sum(h for _, _, h in vs)), self.gather.get(k, 0))
            return total

    return _Reads()

"""The paper artifact's ViperBench operators (tingxi-li/DSLPerfGap) as
KernelBench problem/solution pairs for `kgate kernelbench`, written from the
artifact at run time (nothing of it is kept in this repository):

    python3 scripts/viperbench.py CHECKOUT_OR_GITDIR OUT_DIR [--shapes large]

CHECKOUT_OR_GITDIR is a checkout of the artifact (or its ViperBench folder)
or a bare git directory (its HEAD is read). For each operator folder
ViperBench/NAME/ with a pytorch_impl.py, a triton_impl.py and a case of that
size in ViperBench/benchmark.py's get_test_cases(), it writes
  OUT_DIR/problems/NN_NAME.py   Model: forward calls pytorch_impl's function
                                (its source copied in, unchanged);
                                get_inputs(), get_init_inputs()
  OUT_DIR/solutions/NN_NAME.py  ModelNew: the same call of triton_impl's
                                function (its source copied in; its tuning
                                cache lookup replaced by `_TUNED = {}`, the
                                artifact's untuned defaults)
and OUT_DIR/MANIFEST.json: the artifact commit, each pair's arguments (shapes,
dtypes, constants) and every operator skipped, with why. NN numbers the
operators in name order, skipped ones included, so a name keeps its number.

How the artifact's arguments become KernelBench's (kgate's Problem takes 1 to
4 tensors and checks that a kernel leaves its inputs alone):
  - torch.randn/rand/randint/ones calls are get_inputs()' tensors, made on
    torch's default device (kgate makes it the GPU, and the meta device when
    it lists a problem; KernelBench's evaluator moves them to the GPU): the
    artifact's device="cuda" is dropped, its dtype kept;
  - constants (dims, shapes, strings, flags) are get_init_inputs(), kept by
    the constructor;
  - torch.empty/zeros calls are the artifact's destination buffers (an
    output its function writes into and returns): made in forward, each call,
    as the artifact made them, on the device of the first input.
An argument of any other form skips the operator, saying so. Exit 0 when at
least one pair was written, 1 when none or the tree is not ViperBench's,
2 for bad arguments. Standard library only."""
import argparse
import ast
import json
import math
import os
import re
import subprocess
import sys

REPOSITORY = "tingxi-li/DSLPerfGap"
INPUT_MAKERS = ("randn", "rand", "randint", "ones")  # a get_inputs() tensor
BUFFER_MAKERS = ("empty", "zeros")  # a destination buffer, made in forward
DTYPES = {"float16": 2, "half": 2, "bfloat16": 2, "float32": 4, "float": 4, "float64": 8, "double": 8,
          "int32": 4, "int": 4, "int64": 8, "long": 8, "int16": 2, "int8": 1, "uint8": 1, "bool": 1}
OURS = ("Model", "ModelNew", "get_inputs", "get_init_inputs", "nn")  # names the generated code defines


class Skip(Exception):
    """An operator that cannot be converted; the message says why."""


class Tree:
    """The artifact's files: a directory, or a git directory's HEAD."""

    def __init__(self, path):
        self.path = os.path.abspath(path)
        self.git = os.path.isfile(os.path.join(path, "HEAD")) and os.path.isdir(os.path.join(path, "objects"))
        self.commit, self.dirty = self._commit()
        self.files = self._files()
        if "ViperBench/benchmark.py" in self.files:
            self.root = "ViperBench/"
        elif "benchmark.py" in self.files:
            self.root = ""
        else:
            raise SystemExit(f"viperbench: {path}: no ViperBench/benchmark.py (not the artifact)")

    def _git(self, *args):
        where = ["--git-dir", self.path] if self.git else ["-C", self.path]
        p = subprocess.run(["git", *where, *args], capture_output=True)
        return p.stdout.decode("utf-8", "replace") if p.returncode == 0 else None

    def _commit(self):
        """HEAD and, for a checkout, whether it has changes; (None, None)
        where the directory is not the top of a checkout (or its ViperBench
        folder): a tree inside another repository is not that commit."""
        if not self.git:
            top = (self._git("rev-parse", "--show-toplevel") or "").strip()
            here = os.path.realpath(self.path)
            if not top or os.path.realpath(top) not in (here, os.path.dirname(here)):
                return None, None
        head = self._git("rev-parse", "HEAD")
        if head is None:
            return None, None
        dirty = None if self.git else bool((self._git("status", "--porcelain", "--", ".") or "").strip())
        return head.strip(), dirty

    def _files(self):
        if self.git:
            listing = self._git("ls-tree", "-r", "--name-only", "HEAD")
            if listing is None:
                raise SystemExit(f"viperbench: {self.path}: git cannot read HEAD")
            return set(listing.splitlines())
        out = set()
        for d, _, fs in os.walk(self.path):
            rel = os.path.relpath(d, self.path)
            out.update(f if rel == "." else f"{rel}/{f}".replace(os.sep, "/") for f in fs)
        return out

    def read(self, rel):
        rel = self.root + rel
        if rel not in self.files:
            return None
        if self.git:
            p = subprocess.run(["git", "--git-dir", self.path, "show", "HEAD:" + rel], capture_output=True)
            return p.stdout.decode("utf-8") if p.returncode == 0 else None
        with open(os.path.join(self.path, rel), encoding="utf-8") as f:
            return f.read()

    def operators(self):
        """The folders with a pytorch_impl.py, in name order."""
        n = len(self.root)
        return sorted({f[n:].split("/")[0] for f in self.files
                       if f.startswith(self.root) and f[n:].count("/") == 1 and f.endswith("/pytorch_impl.py")})


# ------------------------------------------------------------ benchmark.py
def _const(node, names):
    """The value of a constant expression (numbers, strings, None, tuples and
    lists of them, + - * // / ** and unary minus, names of earlier
    constants), or raise ValueError. Nothing is evaluated by Python."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool, type(None))):
        if isinstance(node.value, float) and not math.isfinite(node.value):
            raise ValueError("not finite")
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_const(e, names) for e in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _const(node.operand, names)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        a, b = _const(node.left, names), _const(node.right, names)
        ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
               ast.FloorDiv: lambda: a // b, ast.Div: lambda: a / b, ast.Pow: lambda: a ** b}
        if type(node.op) in ops and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b)):
            if isinstance(node.op, ast.Pow) and abs(b) > 64:
                raise ValueError("exponent too large")
            return ops[type(node.op)]()
    raise ValueError(f"not a constant: {ast.unparse(node)[:80]}")


def _names(body, names):
    """Adds the simple `NAME = constant` assignments of `body` to names."""
    for st in body:
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
            try:
                names[st.targets[0].id] = _const(st.value, names)
            except (ValueError, ZeroDivisionError, OverflowError):
                pass
    return names


def cases(text):
    """{operator: {size label: (function name, [arg nodes], {kw: node},
    description, slow)}} from benchmark.py's get_test_cases(), and the
    constants its expressions may name."""
    mod = ast.parse(text)
    names = _names(mod.body, {})
    fn = next((st for st in mod.body if isinstance(st, ast.FunctionDef) and st.name == "get_test_cases"), None)
    if fn is None:
        raise SystemExit("viperbench: benchmark.py has no get_test_cases()")
    _names(fn.body, names)
    out = {}
    for st in ast.walk(fn):
        if not (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Subscript)
                and isinstance(st.targets[0].slice, ast.Constant) and isinstance(st.value, ast.List)):
            continue
        op = st.targets[0].slice.value
        for case in st.value.elts:
            if not (isinstance(case, ast.Tuple) and len(case.elts) >= 4):
                continue
            label, fname, args, kwargs = case.elts[:4]
            try:
                label, fname = _const(label, {}), _const(fname, {})
            except ValueError:
                continue
            kws = {}
            if isinstance(kwargs, ast.Dict):
                kws = {_const(k, {}): v for k, v in zip(kwargs.keys, kwargs.values)}
            elts = args.elts if isinstance(args, ast.Tuple) else [args]
            desc = case.elts[4].value if len(case.elts) > 4 and isinstance(case.elts[4], ast.Constant) else ""
            slow = bool(case.elts[5].value) if len(case.elts) > 5 and isinstance(case.elts[5], ast.Constant) else False
            out.setdefault(op, {})[label] = (fname, list(elts), kws, desc, slow)
    return out, names


# ------------------------------------------------------------ arguments
def _dtype(node):
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "torch" \
            and node.attr in DTYPES:
        return node.attr
    raise ValueError(f"dtype {ast.unparse(node)[:40]} is not a torch dtype")


def argument(i, node, names):
    """One of the artifact's arguments: {"kind": "tensor"|"buffer"|
    "constant", ...}; raises Skip for any other form."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            isinstance(node.func.value, ast.Name) and node.func.value.id == "torch" and \
            node.func.attr in INPUT_MAKERS + BUFFER_MAKERS:
        make = node.func.attr
        try:
            pos = [_const(a, names) for a in node.args]
            dtype, device = ("int64" if make == "randint" else "float32"), None
            for kw in node.keywords:
                if kw.arg == "dtype":
                    dtype = _dtype(kw.value)
                elif kw.arg == "device":
                    device = _const(kw.value, names)
                else:
                    raise ValueError(f"keyword {kw.arg}= is not supported")
        except (ValueError, ZeroDivisionError, OverflowError) as e:
            raise Skip(f"argument {i} ({ast.unparse(node)[:80]}): {e}") from None
        low = high = None
        if make == "randint":
            if len(pos) == 2:
                pos = [0] + pos
            if len(pos) != 3 or not isinstance(pos[2], tuple):
                raise Skip(f"argument {i}: torch.randint needs (low, high, size): {ast.unparse(node)[:80]}")
            low, high, shape = pos
        else:
            shape = pos[0] if len(pos) == 1 and isinstance(pos[0], tuple) else tuple(pos)
        if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            raise Skip(f"argument {i}: shape {shape!r} is not whole numbers")
        a = {"kind": "buffer" if make in BUFFER_MAKERS else "tensor", "make": make, "shape": list(shape),
             "dtype": dtype, "device": device}
        if make == "randint":
            a.update(low=low, high=high)
        return a
    try:
        return {"kind": "constant", "value": _const(node, names)}
    except (ValueError, ZeroDivisionError, OverflowError):
        raise Skip(f"argument {i} ({ast.unparse(node)[:80]}) is neither a torch.{'/'.join(INPUT_MAKERS)} "
                   f"tensor, a torch.{'/'.join(BUFFER_MAKERS)} buffer nor a constant") from None


def _tensor_code(a, device=None):
    shape = ", ".join(str(d) for d in a["shape"])
    if a["make"] == "randint":
        code = f"torch.randint({a['low']}, {a['high']}, ({shape}{',' if len(a['shape']) == 1 else ''})"
    else:
        code = f"torch.{a['make']}({shape}"
    return code + f", dtype=torch.{a['dtype']}" + (f", device={device}" if device else "") + ")"


def nbytes(a):
    return math.prod(a["shape"]) * DTYPES[a["dtype"]]


# ------------------------------------------------------------ the impls
def _function(src, fname, what):
    """The top-level function `fname` of an impl's source (a FunctionDef)."""
    try:
        mod = ast.parse(src)
    except SyntaxError as e:
        raise Skip(f"{what} does not parse: {e.msg} (line {e.lineno})") from None
    taken = sorted({t.id for st in mod.body if isinstance(st, (ast.Assign, ast.AnnAssign))
                    for t in (st.targets if isinstance(st, ast.Assign) else [st.target]) if isinstance(t, ast.Name)}
                   | {st.name for st in mod.body if isinstance(st, (ast.FunctionDef, ast.ClassDef))})
    clash = [n for n in OURS if n in taken]
    if clash:
        raise Skip(f"{what} defines {', '.join(clash)}, which the generated file defines")
    for st in mod.body:
        if isinstance(st, ast.FunctionDef) and st.name == fname:
            return mod, st
    raise Skip(f"{what} defines no function {fname}()")


def untuned(src, mod):
    """The Triton source with its tuning-cache lookup (a top-level try that
    imports tuning.cache) replaced by `_TUNED = {}`: the artifact's
    hard-coded defaults, and no sys.path change at import."""
    lines = src.splitlines(keepends=True)
    for st in mod.body:
        if isinstance(st, ast.Try) and any(isinstance(n, ast.ImportFrom) and (n.module or "").startswith("tuning")
                                           for n in ast.walk(st)):
            indent = lines[st.lineno - 1][:len(lines[st.lineno - 1]) - len(lines[st.lineno - 1].lstrip())]
            new = f"{indent}_TUNED = {{}}  # kgate viperbench: the tuning-cache lookup, untuned (hard-coded defaults)\n"
            return "".join(lines[:st.lineno - 1] + [new] + lines[st.end_lineno:]), True
    return src, False


def _params(fn, n):
    """Names for the call's n positional arguments: the function's own when
    it has that many plain parameters, else a0.."""
    names = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    bad = set(OURS) | {"self", "torch", "super", fn.name}
    if len(names) >= n and not any(x in bad for x in names[:n]):
        return names[:n]
    return [f"a{i}" for i in range(n)]


def _call(fname, params, args, kwargs):
    """The call of the artifact's function from forward."""
    parts, first = [], None
    for p, a in zip(params, args):
        if a["kind"] == "tensor":
            first = first or p
    for p, a in zip(params, args):
        if a["kind"] == "tensor":
            parts.append(p)
        elif a["kind"] == "constant":
            parts.append(f"self.arg_{p}")
        else:
            parts.append(_tensor_code(a, f"{first}.device"))
    parts += [f"{k}={v!r}" for k, v in kwargs.items()]
    return f"{fname}({', '.join(parts)})"


def _class(cls, fname, params, args, kwargs):
    consts = [p for p, a in zip(params, args) if a["kind"] == "constant"]
    tensors = [p for p, a in zip(params, args) if a["kind"] == "tensor"]
    init = "".join(f"        self.arg_{p} = {p}\n" for p in consts)
    return (f"class {cls}(nn.Module):\n"
            f"    def __init__(self{''.join(', ' + p for p in consts)}):\n"
            f"        super().__init__()\n{init}\n"
            f"    def forward(self, {', '.join(tensors)}):\n"
            f"        return {_call(fname, params, args, kwargs)}\n")


def _compiles(text, path):
    try:
        compile(text, path, "exec")
    except SyntaxError as e:
        raise Skip(f"the generated {os.path.basename(os.path.dirname(path))} file does not compile: "
                   f"{e.msg} (line {e.lineno})") from None


def convert(tree, op, case, names, stem, label):
    """(problem text, solution text, manifest entry) of one operator's case
    `label` (benchmark.py's size label)."""
    fname, nodes, kwnodes, desc, slow = case
    args = [argument(i, n, names) for i, n in enumerate(nodes)]
    try:
        kwargs = {k: _const(v, names) for k, v in kwnodes.items()}
    except (ValueError, ZeroDivisionError, OverflowError) as e:
        raise Skip(f"a keyword argument is not a constant: {e}") from None
    tensors = [a for a in args if a["kind"] == "tensor"]
    if not 1 <= len(tensors) <= 4:
        raise Skip(f"{len(tensors)} input tensors (kgate's problems take 1 to 4)")
    py, tri = tree.read(f"{op}/pytorch_impl.py"), tree.read(f"{op}/triton_impl.py")
    if tri is None:
        raise Skip("no triton_impl.py")
    pmod, pfn = _function(py, fname, "pytorch_impl.py")
    tmod, _ = _function(tri, fname, "triton_impl.py")
    tri, replaced = untuned(tri, tmod)
    params = _params(pfn, len(args))
    consts = [repr(a["value"]) for a in args if a["kind"] == "constant"]
    inputs = ",\n            ".join(_tensor_code(a) for a in tensors)
    where = f"{REPOSITORY}@{(tree.commit or 'unknown')[:12]}, ViperBench/{_doc(op)}"
    problem = _file(f"ViperBench {_doc(op)} ({_doc(desc) or _doc(label)}) as a KernelBench problem, written by "
                    f"kgate's\nscripts/viperbench.py from {where}:\nModel calls pytorch_impl.py's {fname}() (copied "
                    "below, unchanged); get_inputs() are the\nartifact's inputs (ViperBench/benchmark.py), made on "
                    "torch's default device: kgate makes it the GPU.",
                    where, "pytorch_impl.py", "unchanged", py,
                    _class("Model", fname, params, args, kwargs) + "\n\n"
                    f"def get_inputs():\n    return [{inputs}]\n\n\n"
                    f"def get_init_inputs():\n    return [{', '.join(consts)}]\n")
    solution = _file(f"ViperBench {_doc(op)} as a KernelBench solution, written by kgate's scripts/viperbench.py\n"
                     f"from {where}:\nModelNew calls triton_impl.py's {fname}() (copied below"
                     + (", its tuning-cache lookup replaced by\nthe hard-coded defaults" if replaced else ", unchanged")
                     + ") with the problem's arguments.",
                     where, "triton_impl.py", "untuned" if replaced else "unchanged", tri,
                     _class("ModelNew", fname, params, args, kwargs))
    _compiles(problem, f"problems/{stem}.py")
    _compiles(solution, f"solutions/{stem}.py")
    entry = {"name": stem, "operator": op, "function": fname, "description": desc, "artifact_slow": slow,
             "problem": f"problems/{stem}.py", "solution": f"solutions/{stem}.py",
             "triton_untuned": replaced,
             "args": [dict(name=p, **a) for p, a in zip(params, args)], "kwargs": kwargs,
             "input_bytes": sum(nbytes(a) for a in tensors),
             "from": f"ViperBench/benchmark.py get_test_cases()[{op!r}] {label!r}"}
    return problem, solution, entry


def _file(doc, where, impl, how, source, code):
    """A generated file: its docstring, the artifact's impl source between
    marks, then the generated code."""
    return (f'"""{doc}"""\n# ---- {where}/{impl}, {how} ----\n{source.rstrip(chr(10))}\n'
            f"# ---- end of {impl} ----\n\nimport torch  # noqa: E402\nimport torch.nn as nn  # noqa: E402\n\n\n"
            + code)


def _doc(s):
    """Text safe inside the generated files' docstrings."""
    return re.sub(r"[^A-Za-z0-9_.,:;()=+*/ -]", "", str(s))[:120]


def write(path, text):
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def main(argv):
    ap = argparse.ArgumentParser(prog="viperbench.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("artifact", help="a checkout of tingxi-li/DSLPerfGap (or its ViperBench folder), or its git dir")
    ap.add_argument("out", help="where problems/, solutions/ and MANIFEST.json go")
    ap.add_argument("--shapes", default="large", help="the artifact's size label (default large)")
    a = ap.parse_args(argv)
    if not os.path.isdir(a.artifact):
        ap.error(f"{a.artifact}: not a directory")
    tree = Tree(a.artifact)
    table, names = cases(tree.read("benchmark.py"))
    folders = set(tree.operators())
    ops = sorted(folders | set(table))
    width = max(2, len(str(len(ops))))
    dirs = {k: os.path.join(a.out, k) for k in ("problems", "solutions")}
    for d in dirs.values():
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(d):  # an earlier run's pairs: kgate pairs every file here
            if re.match(r"^\d+_[A-Za-z0-9_]+\.py$", f):
                os.remove(os.path.join(d, f))
    pairs, skipped = [], []
    for num, op in enumerate(ops, 1):
        stem = f"{num:0{width}d}_{re.sub(r'[^A-Za-z0-9_]', '_', op)}"
        try:
            if op not in folders:
                raise Skip("benchmark.py has cases for it but there is no folder with a pytorch_impl.py")
            case = table.get(op, {}).get(a.shapes)
            if case is None:
                raise Skip(f"benchmark.py has no '{a.shapes}' case for it")
            problem, solution, entry = convert(tree, op, case, names, stem, a.shapes)
        except Skip as e:
            skipped.append({"name": stem, "operator": op, "reason": str(e)})
            continue
        write(os.path.join(dirs["problems"], stem + ".py"), problem)
        write(os.path.join(dirs["solutions"], stem + ".py"), solution)
        pairs.append(entry)
    manifest = {"schema": "kgate.viperbench/1", "repository": REPOSITORY, "commit": tree.commit,
                "dirty": tree.dirty, "shapes": a.shapes,
                "cases": "ViperBench/benchmark.py get_test_cases()",
                "tuning": "untuned: each triton_impl.py's tuning-cache lookup replaced by its hard-coded defaults",
                "device": "inputs made on torch's default device (the artifact's device='cuda' dropped): "
                          "kgate makes it the GPU",
                "kinds": {"tensor": "made by get_inputs()", "constant": "given by get_init_inputs()",
                          "buffer": "the artifact's destination buffer, made in forward each call"},
                "pairs": pairs, "skipped": skipped}
    write(os.path.join(a.out, "MANIFEST.json"), json.dumps(manifest, indent=1) + "\n")
    print(f"viperbench: {len(pairs)} pair(s) in {a.out} from {REPOSITORY}@{(tree.commit or 'unknown')[:12]} "
          f"({a.shapes}), {len(skipped)} skipped")
    for s in skipped:
        print(f"  skipped {s['name']}: {s['reason']}")
    return 0 if pairs else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

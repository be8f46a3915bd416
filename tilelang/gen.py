"""TileLang kernels for kgate, lowered to CUDA C++ ahead of time.

    python3 tilelang/gen.py      (any python with tilelang==0.1.15)

lowers every kernel of the family modules (gen_rows.py: one block a row;
gen_ew.py: element-wise, one block a tile of the flattened tensor; gen_mm.py:
matmul, one block a tile of C) for sm_90a (no GPU needed) and writes

    tilelang/gen/<name>.cu   the CUDA source TileLang generated, one kernel a file
    tilelang/gen/kernels.cu  includes them all: the one translation unit the build
                             compiles (tl_templates/cuda/debug.h defines functions
                             that are not inline, so two translation units that
                             include it do not link into one library)
    tilelang/gen/kernels.h   what a launcher needs, all of it read off TileLang's
                             IR: each kernel's host symbol, grid, block, dynamic
                             shared memory, parameter order, the shape and type
                             of each tensor, and the TMA descriptors TileLang's
                             host code would make; and each operator's pair
                             (TL_OPS: scalar, summaries with planted causes)
    tilelang/gen/headers.txt the tl_templates and CUTLASS headers those sources
                             include, as paths inside the tilelang wheel
                             (scripts/deps.sh extracts exactly these into .deps/)

All of them are committed; the build compiles them with nvcc and never runs Python.
tilelang/kgate_tilelang.c wraps them as a kgate candidate (docs/tilelang.md).

Each family module gives KERNELS, entries (op, variant, dtype, builder,
{key: threads}) where builder(key, dtype, threads) is a @T.prim_func and key
is what is compiled in (a row length, or a whole shape), and OPS, per
operator: its tensors' names in kgate's signature order, the kgate extents of
a key, the scalar it reads, and the summaries of its two variants. A naive
summary ends with its planted causes in parentheses (kgate's diagnosis is
scored against them).
"""

import os
import re
import shutil
import subprocess
import sys

import tilelang
import tilelang.language as T  # noqa: F401  (the family modules' kernels)
from tilelang import tvm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_ew  # noqa: E402
import gen_mm  # noqa: E402
import gen_rows  # noqa: E402

TILELANG_VERSION = "0.1.15"
TARGET = {"kind": "cuda", "arch": "sm_90a"}
HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, "gen")
DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
FAMILIES = (gen_rows, gen_ew, gen_mm)
KERNELS = [k for fam in FAMILIES for k in fam.KERNELS]
OPS = {op: spec for fam in FAMILIES for op, spec in fam.OPS.items()}

# TileLang buffer dtype -> DLPack (type code, bits)
DLPACK = {"float16": ("kDLFloat", 16), "bfloat16": ("kDLBfloat", 16), "float32": ("kDLFloat", 32),
          "int64": ("kDLInt", 64), "int32": ("kDLInt", 32)}
SLOTS = ("TL_IN0", "TL_IN1", "TL_IN2", "TL_OUT0")  # tensor roles, kgate's order
SCALAR_ROLE = {"float32": "TL_F32", "int64": "TL_I64"}


def key_name(key):
    return "x".join(str(k) for k in key) if isinstance(key, tuple) else str(key)


def tensor_slots(spec):
    """Buffer name -> slot index (inputs 0..2, the output 3)."""
    slots = {n: i for i, n in enumerate(spec["ins"])}
    slots[spec["out"]] = 3
    return slots


def is_rows(x):
    """The dynamic row count: TileLang names it R (R_1, ... where it renames)."""
    return hasattr(x, "name") and x.name.split("_")[0] == "R"


def grid_of(name, ext):
    """Grid (x, y, z) from the device function's thread_extent: a constant, or
    0 for the row count R. The block must be (threads, 1, 1)."""
    grid = []
    for axis in ("blockIdx.x", "blockIdx.y", "blockIdx.z"):
        g = ext.get(axis, 1)
        if is_rows(g):
            grid.append(0)
        elif isinstance(g, int) or hasattr(g, "value"):
            grid.append(int(g))
        else:
            sys.exit("%s: %s = %s: neither a constant nor the row count R" % (name, axis, g))
    for axis in ("threadIdx.y", "threadIdx.z"):
        if axis in ext and int(ext[axis]) != 1:
            sys.exit("%s: %s = %s, expected 1" % (name, axis, ext[axis]))
    return grid


def tensors_of(name, func, spec):
    """Each tensor's slot, DLPack type and shape (-1: R), from the prim func."""
    slots = tensor_slots(spec)
    out = {}
    for buf in func.buffer_map.values():
        if buf.name not in slots:
            sys.exit("%s: buffer %s is none of %s" % (name, buf.name, sorted(slots)))
        dims = [-1 if is_rows(d) else int(d) for d in buf.shape]
        out[buf.name] = dict(slot=slots[buf.name], type=DLPACK[str(buf.dtype)], dims=dims)
    if len(out) != len(slots):
        sys.exit("%s: buffers %s, expected %s" % (name, sorted(out), sorted(slots)))
    return out


def tma_of(name, func, tensors):
    """The TMA descriptors TileLang's host code makes, from the host IR's
    tma_descriptor_args (cuTensorMapEncodeTiled's arguments, as TileLang's own
    wrappers read them): descriptor name -> facts."""
    with tvm.target.Target(TARGET):
        art = tilelang.lower(func, target=TARGET)
    found = {}
    for _, fn in art.host_mod.functions.items():
        if fn.attrs is None or "tma_descriptor_args" not in fn.attrs:
            continue
        for var, args in fn.attrs["tma_descriptor_args"].items():
            what, _, dtype, rank, addr = args[:5]
            rank = int(rank)
            rest = [int(a) for a in args[5:]]
            if getattr(what, "value", None) != "__tvm_tensormap_create_tiled" or len(rest) != 4 * rank + 4:
                sys.exit("%s: %s: not a tiled TMA descriptor: %s" % (name, var.name, args))
            buf = str(addr.name)
            if buf not in tensors or var.name != buf + "_desc":
                sys.exit("%s: descriptor %s of %s: no such tensor" % (name, var.name, buf))
            found[var.name] = dict(tensor=buf, dtype=int(dtype), rank=rank, dim=rest[:rank],
                                   stride=rest[rank:2 * rank], box=rest[2 * rank:3 * rank],
                                   estride=rest[3 * rank:4 * rank], tail=rest[4 * rank:])
    return found


def params_of(name, fn, spec, tensors, tma):
    """The device function's parameters as launcher roles, in order."""
    slots = tensor_slots(spec)
    scalar = spec.get("scalar")
    roles = []
    for p in fn.params:
        n = p.name
        if n in tensors:
            roles.append(SLOTS[slots[n]])
        elif n in tma:
            roles.append("TL_TMA_" + SLOTS[slots[tma[n]["tensor"]]][3:])
        elif is_rows(p):
            roles.append("TL_ROWS")
        elif scalar and n == scalar[0] and str(p.dtype) in SCALAR_ROLE:
            roles.append(SCALAR_ROLE[str(p.dtype)])
        else:
            sys.exit("%s: unexpected kernel parameter %s (%s)" % (name, n, p.dtype))
    if len(tma) != sum(r.startswith("TL_TMA_") for r in roles):
        sys.exit("%s: descriptors %s are not all parameters" % (name, sorted(tma)))
    return roles


def lower(op, variant, dtype, builder, key, threads):
    spec = OPS[op]
    name = "tl_%s_%s_%s_%s" % (op, variant, dtype, key_name(key))
    func = builder(key, DTYPES[dtype], threads).with_attr("global_symbol", name)
    kernel = tilelang.compile(func, target=TARGET)
    fns = list(kernel.artifact.device_mod.functions.items())
    if len(fns) != 1:
        sys.exit("%s: TileLang made %d device functions, expected 1" % (name, len(fns)))
    gv, fn = fns[0]
    symbol = gv.name_hint
    ext = {str(k): v for k, v in fn.attrs["thread_extent"].items()}
    grid = grid_of(name, ext)
    block = int(ext["threadIdx.x"])  # TileLang adds a producer warpgroup where it specializes warps
    smem = int(fn.attrs["dyn_shared_memory_buf"]) if "dyn_shared_memory_buf" in fn.attrs else 0
    tensors = tensors_of(name, func, spec)
    handles = [p.name for p in fn.params if p.name not in tensors and str(p.dtype) == "handle"]
    tma = tma_of(name, func, tensors) if handles else {}
    roles = params_of(name, fn, spec, tensors, tma)
    source = kernel.get_kernel_source()
    # The parameter list as TileLang wrote it, checked against the IR's order.
    m = re.search(r'extern "C" __global__ void (?:__launch_bounds__\([^)]*\) )?%s\(([^)]*)\)\s*\{' % symbol, source)
    if not m:
        sys.exit("%s: kernel %s not found in the generated source" % (name, symbol))
    decl = [a.strip() for a in m.group(1).split(",")]
    if [d.split()[-1] for d in decl] != [p.name for p in fn.params]:
        sys.exit("%s: source parameters %s differ from the IR's %s" % (name, decl, fn.params))
    return dict(name=name, symbol=symbol, op=op, variant=variant, dtype=dtype, key=key,
                extents=spec["extents"](key), grid=grid, threads=block, smem=smem,
                tensors=tensors, tma=tma, roles=roles, decl=decl, source=source,
                builder=builder.__name__, module=builder.__module__)


def c_param(decl):
    """A generated parameter as plain C: pointers become void pointers."""
    name = decl.split()[-1]
    if "*" in decl:
        return ("const void *" if decl.startswith("const") else "void *") + name
    if "CUtensorMap" in decl:
        return "CUtensorMap " + name
    return decl.replace("__restrict__ ", "")


def include_closure(paths, tl_root):
    """Headers under the tilelang package the generated sources include."""
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    cmd = [nvcc, "-std=c++17", "-arch=sm_90a", "-I" + os.path.join(tl_root, "src"),
           "-I" + os.path.join(tl_root, "3rdparty", "cutlass", "include"), "-M"] + paths
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    found = set()
    for tok in out.replace("\\\n", " ").split():
        full = os.path.realpath(tok)
        if full.startswith(tl_root + os.sep):
            found.add("tilelang/" + os.path.relpath(full, tl_root).replace(os.sep, "/"))
    return sorted(found)


def c_str(s):
    return '"%s"' % s.replace("\\", "\\\\").replace('"', '\\"')


def c_list(xs, n, fill="0"):
    xs = [str(x) for x in xs]
    return "{%s}" % ", ".join(xs + [fill] * (n - len(xs)))


def c_kernel(k):
    """One tl_kernels[] record."""
    tens = ["{0, 0, 0, {0, 0, 0}}"] * 4
    for t in k["tensors"].values():
        tens[t["slot"]] = "{%s, %d, %d, %s}" % (t["type"][0], t["type"][1], len(t["dims"]),
                                                c_list(t["dims"], 3))
    tma = ["{0}"] * 4
    for d in k["tma"].values():
        slot = k["tensors"][d["tensor"]]["slot"]
        tma[slot] = "{%d, %d, %s, %s, %s, %s, %s}" % (
            d["rank"], d["dtype"], c_list(d["dim"], 3), c_list(d["stride"], 3), c_list(d["box"], 3),
            c_list(d["estride"], 3), ", ".join(str(x) for x in d["tail"]))
    return ('    {"%s", "%s", "%s", %d, %s, (const void *)%s,\n'
            "     %s, %d, %d,\n     {%s},\n     {%s},\n     %d, %s},\n" % (
                k["op"], k["variant"], k["dtype"], len(k["extents"]), c_list(k["extents"], 3),
                k["symbol"], c_list(k["grid"], 3), k["threads"], k["smem"], ", ".join(tens),
                ", ".join(tma), len(k["roles"]), c_list(k["roles"], 8, "TL_IN0")))


KERNELS_H_HEAD = """\
/* The kernels of tilelang/gen/<name>.cu and how to launch them, read off
 * TileLang's IR: grid (grid[d] blocks, 0: the row count R), block (threads,
 * 1, 1), `smem` bytes of dynamic shared memory, the arguments in the order
 * `args` lists them; each tensor's DLPack type and shape (-1: R) by slot
 * (inputs in kgate's order, then the output at TL_OUT0); the TMA descriptors
 * (cuTensorMapEncodeTiled's arguments, as TileLang's host code passes them:
 * stride[0] is the element size, the call takes stride + 1). `extents` are
 * kgate's extents of the shape compiled in (-1: any row count). The
 * declarations give each kernel's host symbol for cudaLaunchKernel. TL_OPS
 * lists each operator's pair: name, dtype, inputs, the scalar it reads and
 * its default, the naive and the fixed summary. */
#ifndef KGATE_TILELANG_KERNELS_H
#define KGATE_TILELANG_KERNELS_H

#include <cuda.h>

enum tl_arg { TL_IN0, TL_IN1, TL_IN2, TL_OUT0, TL_ROWS, TL_F32, TL_I64,
              TL_TMA_IN0, TL_TMA_IN1, TL_TMA_IN2, TL_TMA_OUT0 };

typedef struct tl_tensor {
    int code, bits, rank;   /* DLPack type; rank 0: no such tensor */
    long long dims[3];      /* -1: the row count R */
} tl_tensor;

typedef struct tl_tma {
    unsigned rank;          /* 0: none */
    unsigned dtype;         /* CUtensorMapDataType */
    unsigned long long dim[3], stride[3];
    unsigned box[3], estride[3];
    unsigned interleave, swizzle, l2, oob;
} tl_tma;

typedef struct tl_kernel_info {
    const char *op, *variant, *dtype;
    int n_extents;
    long long extents[3];   /* kgate's extents compiled for; -1: any row count */
    const void *fn;         /* the kernel's host symbol */
    unsigned grid[3];       /* blocks; 0: the row count R */
    unsigned threads;       /* block size */
    unsigned smem;          /* dynamic shared memory, bytes */
    tl_tensor tensors[4];   /* by slot: TL_IN0..TL_IN2, TL_OUT0 */
    tl_tma tma[4];          /* by slot */
    int n_args;
    enum tl_arg args[8];    /* parameter order */
} tl_kernel_info;

"""


def file_scope_includes(sources):
    """The #include lines outside any #if of the generated sources, in order."""
    seen = []
    for src in sources:
        depth = 0
        for line in src.split("\n"):
            t = line.strip()
            if t.startswith(("#if", "#ifdef", "#ifndef")):
                depth += 1
            elif t.startswith("#endif"):
                depth -= 1
            elif depth == 0 and t.startswith("#include") and t not in seen:
                seen.append(t)
    return seen


def write_kernels_cu(path, command, done):
    """Every kernel in one translation unit: tl_templates/cuda/debug.h defines
    functions that are not inline, which two translation units cannot share.
    The headers come first; then each kernel, its dynamic shared memory arrays
    renamed by a macro around its #include: an `extern __shared__` array in
    an extern "C" kernel has C linkage, and two kernels may name theirs alike
    (`workspace`) with different types. The kernels' own #includes add
    nothing by then (the headers are guarded)."""
    with open(path, "w") as f:
        f.write("// Generated by %s; do not edit.\n" % command)
        f.write("// Every kernel in one translation unit, its dynamic shared memory arrays\n"
                "// renamed (tilelang/gen.py, write_kernels_cu, says why); the headers first.\n")
        f.write("".join(i + "\n" for i in file_scope_includes([k["source"] for k in done])))
        for i, k in enumerate(done):
            names = re.findall(r"extern __shared__ (?:__align__\(\d+\) )?[\w:]+ (\w+)\[\];", k["source"])
            f.write("".join("#define %s %s_k%d\n" % (n, n, i) for n in names))
            f.write('#include "%s.cu"\n' % k["name"])
            f.write("".join("#undef %s\n" % n for n in names))


def write_kernels_h(path, command, done):
    with open(path, "w") as f:
        f.write("/* Generated by %s; do not edit. */\n" % command)
        f.write(KERNELS_H_HEAD)
        for k in done:
            f.write("void %s(%s);\n" % (k["symbol"], ", ".join(c_param(d) for d in k["decl"])))
        f.write("\nstatic const tl_kernel_info tl_kernels[] = {\n")
        f.write("".join(c_kernel(k) for k in done))
        f.write("};\n\n/* X(op, dtype, inputs, scalar or NULL, its default, naive summary, fixed summary) */\n")
        f.write("#define TL_OPS(X) \\\n")
        seen = []
        for k in done:
            if (k["op"], k["dtype"]) not in seen:
                seen.append((k["op"], k["dtype"]))
        for op, dtype in seen:
            s = OPS[op]
            sc = s.get("scalar")
            f.write("    X(%s, %s, %d, %s, %r, \\\n      %s, \\\n      %s) \\\n" % (
                op, c_str(dtype), len(s["ins"]), c_str(sc[0]) if sc else "NULL", sc[1] if sc else 0.0,
                c_str(s["naive"]), c_str(s["fast"])))
        f.write("\n\n#endif\n")


def main():
    if tilelang.__version__.split("+")[0] != TILELANG_VERSION:
        sys.exit("gen.py wants tilelang==%s (scripts/deps.sh fetches its headers); this is %s" %
                 (TILELANG_VERSION, tilelang.__version__))
    tilelang.disable_cache()  # the artifact (device IR) comes only from a fresh compile
    os.makedirs(GEN, exist_ok=True)
    for f in os.listdir(GEN):
        os.remove(os.path.join(GEN, f))
    command = "python tilelang/gen.py (TileLang %s)" % TILELANG_VERSION
    done = []
    for op, variant, dtype, builder, by_key in KERNELS:
        for key, threads in sorted(by_key.items()):
            k = lower(op, variant, dtype, builder, key, threads)
            with open(os.path.join(GEN, k["name"] + ".cu"), "w") as f:
                f.write("// Generated by %s from %s in tilelang/%s.py; do not edit.\n" %
                        (command, k["builder"], k["module"]))
                f.write(k["source"])
            done.append(k)
            print("%-44s grid %-18s block %4d  smem %6d  (%s)" % (
                k["symbol"], "x".join(str(g or "R") for g in k["grid"]), k["threads"], k["smem"],
                ", ".join(p.split()[-1] for p in k["decl"])))
    tl_root = os.path.dirname(os.path.abspath(tilelang.__file__))
    headers = include_closure([os.path.join(GEN, k["name"] + ".cu") for k in done], tl_root)
    with open(os.path.join(GEN, "headers.txt"), "w") as f:
        f.write("# Generated by %s: the wheel's headers that tilelang/gen/*.cu include.\n" % command)
        f.write("".join(h + "\n" for h in headers))
    write_kernels_cu(os.path.join(GEN, "kernels.cu"), command, done)
    write_kernels_h(os.path.join(GEN, "kernels.h"), command, done)
    print("wrote %d kernels, kernels.cu, kernels.h and headers.txt (%d headers) to %s" %
          (len(done), len(headers), os.path.relpath(GEN)))


if __name__ == "__main__":
    main()

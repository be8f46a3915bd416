"""TileLang kernels of tilelang/gen.py compiled by TileLang's JIT from Python
(tilelang.compile at the first call for a column count, cached): the same
kernels, with the same block sizes, as build/tilelang/libkgate_tilelang.so
(which holds gen.py's ahead-of-time lowering), through the Python route.
tests/gpu/gpu_python.sh checks that both routes give the same verdicts and
scripts/python_route.py records their times.

Needs tilelang==0.1.15 (and its apache-tvm-ffi and z3-solver) importable:
on the GPU machine they travel as wheels (scripts/tilelang_wheels.sh)."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tilelang"))
import gen as G  # noqa: E402  (tilelang/gen.py: the kernels and their launch shapes)

import kgate  # noqa: E402

_compiled = {}


def _kernel(op, variant, dtype, cols):
    """gen.py's kernel for (op, variant, dtype) at `cols` columns, compiled once."""
    key = (op, variant, dtype, cols)
    if key not in _compiled:
        for o, v, d, builder, by_cols in G.KERNELS:
            if (o, v, d) == (op, variant, dtype) and cols in by_cols:
                func = builder(cols, G.DTYPES[dtype], by_cols[cols])
                # the stream is the caller's: kgate's, made current by the worker
                _compiled[key] = G.tilelang.compile(func, target=G.TARGET)
                break
        else:
            raise ValueError(f"no TileLang {op} {variant} kernel for {cols} columns (tilelang/gen.py)")
    return _compiled[key]


def _cols(op, variant, dtype):
    for o, v, d, _, by_cols in G.KERNELS:
        if (o, v, d) == (op, variant, dtype):
            return set(by_cols)
    return set()


def _supports(op, dtype):
    """the shapes the .so handles: (ROWS, COLS) with both variants compiled for COLS"""
    both = _cols(op, "naive", dtype) & _cols(op, "fast", dtype)
    return lambda e: len(e) == 2 and 1 <= e[0] <= 2**31 - 1 and e[1] in both


def _layer_norm(variant):
    def run(x, w, b, y, eps):
        _kernel("layer_norm", variant, "bf16", x.shape[1])(x, w, b, y, eps)
    return run


def _rms_norm(variant):
    def run(x, w, y, eps):
        _kernel("rms_norm", variant, "fp16", x.shape[1])(x, w, y, eps)
    return run


def _softmax(variant):
    def run(x, y):
        _kernel("softmax", variant, "fp16", x.shape[1])(x, y)
    return run


KGATE_KERNELS = []
for _variant, _suffix in (("naive", "_naive"), ("fast", "")):
    KGATE_KERNELS += [
        kgate.Kernel(_layer_norm(_variant), op="layer_norm", dtype="bf16", reads=("eps",), out=True,
                     name=f"jit_tilelang_layer_norm{_suffix}_bf16", supports=_supports("layer_norm", "bf16"),
                     summary=f"tilelang_layer_norm{_suffix}_bf16's kernel by TileLang's JIT"),
        kgate.Kernel(_rms_norm(_variant), op="rms_norm", dtype="fp16", reads=("eps",), out=True,
                     name=f"jit_tilelang_rms_norm{_suffix}_fp16", supports=_supports("rms_norm", "fp16"),
                     summary=f"tilelang_rms_norm{_suffix}_fp16's kernel by TileLang's JIT"),
        kgate.Kernel(_softmax(_variant), op="softmax", dtype="fp16", out=True,
                     name=f"jit_tilelang_softmax{_suffix}_fp16", supports=_supports("softmax", "fp16"),
                     summary=f"tilelang_softmax{_suffix}_fp16's kernel by TileLang's JIT"),
    ]
assert torch  # imported for the tensors the kernels get

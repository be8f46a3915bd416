"""Triton kernels of triton/kernels.py launched by Triton's JIT from Python,
with the tiles, warps and stages that triton/build.sh compiles ahead of time:
the same kernels as build/triton/libkgate_triton.so, through the Python
route. tests/gpu/gpu_python.sh checks that both routes give the same
verdicts, and scripts/gpu.sh python-route records their times."""
import os
import struct
import sys

import torch
import triton

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "triton"))
import kernels as K  # noqa: E402

import kgate  # noqa: E402


def _bits(x):
    return struct.unpack("<i", struct.pack("<f", x))[0]


def _block(cols):
    for bn in (1024, 4096, 8192, 16384):
        if cols <= bn:
            return bn
    raise ValueError(f"{cols} columns: more than one block holds")


def _warps(bn):
    return 4 if bn <= 1024 else 16 if bn >= 16384 else 8


def layer_norm(x, w, b, y, eps):
    """destination passing: writes y"""
    m, n = x.shape
    bn = _block(n)
    K.layer_norm_fwd[(m,)](x, w, b, y, m, n, _bits(eps), BLOCK_N=bn, num_warps=_warps(bn), num_stages=1)


def rms_norm(x, w, eps):
    """returns a new tensor"""
    m, n = x.shape
    y = torch.empty_like(x)
    bn = _block(n)
    K.rms_norm_fwd[(m,)](x, w, y, m, n, _bits(eps), BLOCK_N=bn, num_warps=_warps(bn), num_stages=1)
    return y


def matmul(a, b, c):
    m, k = a.shape
    n = b.shape[1]
    grid = (triton.cdiv(m, 128) * triton.cdiv(n, 256),)
    K.matmul_kernel[grid](a, b, c, m, n, k, BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=8, num_warps=8,
                          num_stages=3)


# The AOT build compiles argmax_tiles with no hints ("*fp16, *i64, i32, i32,
# i32"): the element stride K = 1 a runtime value, no alignment or
# divisibility known. Triton's JIT would specialize K == 1 into a constant
# (and load contiguously) and note the 16-byte alignments, so it is told not
# to: the same kernel the .so holds.
_argmax_tiles = triton.jit(K.argmax_tiles.fn, do_not_specialize=["M", "N", "K"],
                           do_not_specialize_on_alignment=["X", "I"])


def argmax_tiles(x):
    """the paper's slow argmax: 128 rows a program, a runtime stride"""
    m, n = x.shape
    out = torch.empty(m, dtype=torch.int64, device=x.device)
    _argmax_tiles[(triton.cdiv(m, 128),)](x, out, m, n, 1, BLOCK_M=128, BLOCK_N=128, num_warps=4, num_stages=1)
    return out


def rows_supported(e):  # triton/kgate_triton.c's
    return len(e) == 2 and e[1] % 16 == 0 and e[1] <= 16384


def mm_supported(e):
    return len(e) == 3 and all(x % 16 == 0 and x <= 2**30 for x in e)


KGATE_KERNELS = [
    kgate.Kernel(layer_norm, op="layer_norm", dtype="bf16", reads=("eps",), out=True, name="jit_layer_norm_bf16",
                 supports=rows_supported,
                 summary="triton_layer_norm_bf16's kernel by Triton's JIT"),
    kgate.Kernel(rms_norm, op="rms_norm", dtype="fp16", reads=("eps",), name="jit_rms_norm_fp16",
                 supports=rows_supported,
                 summary="triton_rms_norm_fp16's kernel by Triton's JIT (returns its output)"),
    kgate.Kernel(matmul, op="matmul", dtype="fp16", out=True, name="jit_matmul_fp16", supports=mm_supported,
                 summary="triton_matmul_fp16's kernel by Triton's JIT"),
    kgate.Kernel(argmax_tiles, op="argmax", dtype="fp16", name="jit_argmax_fp16",
                 summary="triton_argmax_fp16's kernel (the paper's, RC2a RC1) by Triton's JIT"),
]

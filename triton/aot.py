"""Triton's ahead-of-time compiler (python -m triton.tools.compile) without a GPU.

triton.tools.compile asks the active runtime driver for two things only: the
compilation target (JITFunction.create_binder() and, without --target, the
compile tool itself call driver.active.get_current_target()) and the C type
of each kernel argument (driver.active.map_python_to_cpp_type). Triton picks
its driver at the first use of triton.runtime.driver.active, and the CUDA
driver counts as active only when `import torch` succeeds and
torch.cuda.is_available(): on a machine without a GPU (or without PyTorch)
the tool dies with "0 active drivers ([]). There should only be one."

Compiling itself needs no GPU: Triton lowers to PTX with its own LLVM and
assembles the cubin with the ptxas it ships (triton/backends/nvidia/bin).
So this script installs, before the compile tool runs, a driver that answers
those two questions from a fixed target (cuda, sm_90 by default, warp 32)
and Triton's own CUDA type table, and then runs the tool unchanged with the
same command line. The target: TRITON_AOT_ARCH (default 90, i.e. sm_90a,
H100/H200); a --target on the command line still wins for the compile step.

    python triton/aot.py kernels.py -n KERNEL -s SIGNATURE -g GRID -w 8 -ns 3 -on NAME -o OUT
"""
import os
import sys

from triton.backends.compiler import GPUTarget
from triton.backends.nvidia.driver import ty_to_cpp
from triton.runtime.driver import driver
from triton.tools import compile as aot_compile


class OfflineCudaDriver:
    """The part of Triton's CudaDriver that compiling uses; it launches nothing."""

    def __init__(self, arch: int):
        self.target = GPUTarget("cuda", arch, 32)

    @staticmethod
    def is_active():
        return False

    def get_current_target(self):
        return self.target

    def map_python_to_cpp_type(self, ty: str) -> str:
        return ty_to_cpp(ty)

    def __getattr__(self, name):
        # Anything else (devices, streams, launchers, benchmarking) needs a GPU.
        raise RuntimeError(f"triton/aot.py: the offline CUDA driver has no '{name}': "
                           "compiling ahead of time should not need it")


def main():
    arch = int(os.environ.get("TRITON_AOT_ARCH", "90"))
    driver.set_active(OfflineCudaDriver(arch))
    sys.argv[0] = "triton.tools.compile"
    aot_compile.main()


if __name__ == "__main__":
    main()

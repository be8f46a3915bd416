"""Python callables for relu fp16 that behave well and badly: what
tests/gpu/gpu_python.sh expects of each is in its name and summary."""
import time

import torch

import kgate


def relu_ok(x):
    return torch.relu(x)


def relu_out(x, y):
    torch.clamp_min(x, 0, out=y)


def relu_slow(x):  # correct, 8 passes where one does
    y = x
    for _ in range(8):
        y = torch.relu(y)
    return y


def relu_wrong(x):
    return x.clone()


def relu_raises(x):
    raise RuntimeError("the kernel gave up")


def relu_none(x):
    torch.relu(x)


def relu_shape(x):
    return torch.relu(x)[:1]


def relu_dtype(x):
    return torch.relu(x).float()


def relu_cpu(x):
    return torch.relu(x).cpu()


def relu_hang(x):
    while True:
        time.sleep(1)


def relu_host(x):  # correct, after 2 ms of work on the host in every call
    t = time.perf_counter() + 2e-3
    while time.perf_counter() < t:
        pass
    return torch.relu(x)


def relu_host_hidden(x):  # the same, and it tells the worker host that its call took no time
    # rebinding the clock the host times the callable with (python/kgate/_worker.py)
    # to the time the call started: its own time then reads 0, and only the worker's bound on the glue
    # (src/gpu/provider.h) keeps the 2 ms charged
    import sys
    frame = sys._getframe(1)
    t0 = frame.f_locals["t0"]
    frame.f_globals["_clock"] = lambda: t0
    t = time.perf_counter() + 2e-3
    while time.perf_counter() < t:
        pass
    return torch.relu(x)


class _Deferred(torch.Tensor):
    # a subclass's methods run whenever kgate reads its results (.shape,
    # copy_): a candidate could do its work there, outside the timed call
    pass


def relu_subclass(x):  # right values, returned as a torch.Tensor subclass
    return torch.relu(x).as_subclass(_Deferred)


class _Watch(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


def relu_mode_left(x):  # pushes a torch function mode and leaves it active: it would see every later torch call
    _Watch().__enter__()
    return torch.relu(x)


def relu_profile_left(x):  # leaves a profile hook set: its code would run on every later Python call
    import sys
    sys.setprofile(lambda *a: None)
    return torch.relu(x)


def _relu_copy(dst, src):  # copy_'s stand-in: the relu, in the copy
    return torch.clamp_min(src, 0, out=dst)


def relu_in_copy(x):  # returns its input at no cost and does the relu in a replaced torch.Tensor.copy_,
    # which kgate's reading of the results would call, untimed (python/kgate/_worker.py _Raw)
    torch.Tensor.copy_ = _relu_copy
    return x


def relu_strided(x):  # right values, returned as a transposed view: kgate's copy would do the transpose
    return torch.relu(x.t().contiguous()).t()


_copy_lib = None


def relu_copy_kernel(x):  # returns its input and registers the relu as CUDA's kernel of aten::copy_,
    # which kgate's copy of the results would run, untimed
    global _copy_lib
    if _copy_lib is None:
        _copy_lib = torch.library.Library("aten", "IMPL")
        _copy_lib.impl("copy_", lambda dst, src, non_blocking=False: torch.clamp_min(src, 0, out=dst), "CUDA")
    return x


_side = None


def relu_other_stream(x):  # its work escapes kgate's timing stream
    global _side
    _side = _side or torch.cuda.Stream()
    with torch.cuda.stream(_side):
        y = torch.relu(x)
    _side.synchronize()
    return y


def _k(fn, summary, **kw):
    return kgate.Kernel(fn, op="relu", dtype="fp16", name=fn.__name__, summary=summary, **kw)


KGATE_KERNELS = [
    _k(relu_ok, "OK: torch.relu"),
    _k(relu_out, "OK: torch.clamp_min into the output", out=True),
    _k(relu_slow, "SLOW: eight relus"),
    _k(relu_wrong, "INCORRECT: the input back"),
    _k(relu_raises, "CRASH: raises"),
    _k(relu_none, "INCORRECT: returns None"),
    _k(relu_shape, "INCORRECT: a wrong shape"),
    _k(relu_dtype, "INCORRECT: fp32 out"),
    _k(relu_cpu, "INCORRECT: on the CPU"),
    _k(relu_hang, "TIMEOUT: never returns"),
    _k(relu_host, "SLOW: 2 ms on the host in every call (host-work)"),
    _k(relu_host_hidden, "SLOW: 2 ms on the host, its own host time faked to 0 (host-work)"),
    _k(relu_other_stream, "escaped: another stream"),
    _k(relu_subclass, "INCORRECT: a torch.Tensor subclass, whose methods would run outside the timed call"),
    _k(relu_mode_left, "CRASH: leaves a torch function mode active"),
    _k(relu_profile_left, "CRASH: leaves a profile hook set"),
    _k(relu_in_copy, "INCORRECT: its input back, the relu in a replaced torch.Tensor.copy_"),
    _k(relu_strided, "INCORRECT: a transposed view, whose copy would do the work"),
    _k(relu_copy_kernel, "INCORRECT: its input back, the relu registered over aten::copy_"),
]

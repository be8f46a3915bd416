"""A problem outside the catalog (kgate.Problem): y = gelu(x @ w + b), fp16,
with two candidates: a correct one (the same thing in torch, written
differently) and a wrong one (tanh-approximate GELU)."""
import torch

import kgate


class Ref(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(1024, 2048).half()

    def forward(self, x):
        return torch.nn.functional.gelu(self.lin(x))


REF = Ref()


def make_inputs():
    return [torch.randn(4096, 1024, dtype=torch.float16)]


_ON_GPU = {}


def _params(device):  # the reference's parameters, copied to the GPU once
    if device not in _ON_GPU:
        _ON_GPU[device] = (REF.lin.weight.to(device).t().contiguous(), REF.lin.bias.to(device))
    return _ON_GPU[device]


def fused(x):
    wt, b = _params(x.device)
    return torch.nn.functional.gelu(torch.addmm(b, x, wt))


def approx(x):
    wt, b = _params(x.device)
    return torch.nn.functional.gelu(torch.addmm(b, x, wt), approximate="tanh") * 1.01


def ref_fn(x):
    """The reference as a function (kgate.check(fused, reference=ref_fn, inputs=make_inputs)):
    it gets fp64 inputs for the fp64 reference, so the parameters follow x's dtype."""
    return torch.nn.functional.gelu(torch.nn.functional.linear(x, REF.lin.weight.to(x), REF.lin.bias.to(x)))


KGATE_PROBLEM = kgate.Problem("linear_gelu", inputs=make_inputs, reference=REF, family="gemm")
KGATE_KERNELS = [
    kgate.Kernel(fused, op="linear_gelu", dtype=None, name="addmm_gelu", summary="OK: addmm then gelu"),
    kgate.Kernel(approx, op="linear_gelu", dtype=None, name="approx_gelu", summary="INCORRECT: 1% off"),
]

"""PyTorch as a library path of the catalog operators (`kgate check --torch`):
each operator as the PyTorch call its catalog entry names (`kgate ops`,
src/ops/<op>.c: "as torch.X"), so that E_lib can be the paper's exact one,
t(PyTorch) / t(kernel), beside the vendor paths. torch.compile of the same
call is a second reference (`--torch-compile`).

Each function takes the operator's inputs in signature order, then, after
`*`, the scalars it reads as keyword-only arguments (those are the scalars
the path declares it reads: every required scalar of the operator), and
returns its output. tests/test_op_parts.c checks that every registered
operator has its entry here. Nothing here runs at import; torch is imported
when a path is built."""
import inspect


def calls():
    import torch
    import torch.nn.functional as F

    return {
        "add": lambda x, y: torch.add(x, y),
        # the paper's attention baseline; PyTorch picks the backend (flash,
        # cuDNN or memory-efficient on the GPU, the math one for fp64)
        "attention": lambda q, k, v, *, causal: F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal)),
        "argmax": lambda x: torch.argmax(x, dim=-1),
        "batched_matmul": lambda a, b: torch.bmm(a, b),
        # a convolution's stride, pad and groups are extents of its shape, bound to these scalars
        "conv2d": lambda x, w, *, stride, pad, groups: F.conv2d(x, w, stride=int(stride), padding=int(pad),
                                                                groups=int(groups)),
        # NHWC (w KRSC): the same call on channels-last views, as PyTorch runs channels_last
        "conv2d_nhwc": lambda x, w, *, stride, pad, groups: F.conv2d(
            x.permute(0, 3, 1, 2), w.permute(0, 3, 1, 2), stride=int(stride), padding=int(pad),
            groups=int(groups)).permute(0, 2, 3, 1).contiguous(),
        "cross_entropy": lambda logits, target, *, ignore_index: F.cross_entropy(
            logits, target, reduction="none", ignore_index=int(ignore_index)),
        "embedding": lambda table, idx: F.embedding(idx, table),
        "index_select": lambda src, idx: torch.index_select(src, 0, idx),
        "layer_norm": lambda x, w, b, *, eps: F.layer_norm(x, (x.shape[-1],), w, b, eps),
        "leaky_relu": lambda x, *, negative_slope: F.leaky_relu(x, negative_slope),
        "linear_activation": lambda x, w1, w3: F.silu(F.linear(x, w1)) * F.linear(x, w3),
        "log_softmax": lambda x: torch.log_softmax(x, dim=-1),
        "logsumexp": lambda x: torch.logsumexp(x, dim=-1),
        "matmul": lambda a, b: torch.matmul(a, b),
        "matrix_transpose": lambda x: x.t().contiguous(),
        "max_reduction": lambda x: torch.amax(x, dim=-1),
        "mean_reduction": lambda x: torch.mean(x, dim=-1),
        "mul": lambda x, y: torch.mul(x, y),
        "relu": lambda x: torch.relu(x),
        "rms_norm": lambda x, w, *, eps: F.rms_norm(x, (x.shape[-1],), w, eps),
        "softmax": lambda x: torch.softmax(x, dim=-1),
        "swiglu": lambda a, b: F.silu(a) * b,
    }


def paths(op, compile=False):
    """[(name, callable, summary, scalars read)] of the PyTorch paths of a
    catalog operator; [] when PyTorch has no call for it here."""
    fn = calls().get(op)
    if fn is None:
        return []
    reads = tuple(p.name for p in inspect.signature(fn).parameters.values() if p.kind is p.KEYWORD_ONLY)
    out = [("torch", fn, f"PyTorch eager: the call {op} names in the catalog", reads)]
    if compile:
        import torch
        out.append(("torch.compile", torch.compile(fn, dynamic=False),
                    "torch.compile of the same call (default mode)", reads))
    return out
